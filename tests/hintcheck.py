"""The commands a message tells the user to run, found in what nsightlab printed (in
backticks, or after "run" / "with"), and checked against the CLI as Click parses it:
the command exists, its options exist and take what they were given, its required
arguments are there, and no placeholder (DIR, ID, NAME, `...`, `<id>`) is left."""

from __future__ import annotations

import re
import shlex
from typing import Any

from cliwalk import program

_TICKED = re.compile(r"`(nsightlab(?:\s[^`]*)?)`")
# a command not in backticks: after "run" or "with", to the end of its clause
_BARE = re.compile(r"\b(?:run|with)\s+(nsightlab\s[^`;]*?)(?=[.,;)]\s|[.,;)]?$|\s\(|\s(?:or|and|then)\s)")
_PLACEHOLDER = re.compile(r"\.\.\.|<[^>]*>|\{[^}]*\}")
_CAPS = re.compile(r"[A-Z][A-Z0-9_]+")  # DIR, ID, NAME, REGISTRY in REGISTRY/image:tag


def commands_in(text: str) -> list[str]:
    """Every `nsightlab ...` command printed in `text`, as printed."""
    found: list[str] = []
    for line in text.splitlines():
        ticked = _TICKED.findall(line)
        found += ticked
        bare_line = _TICKED.sub("``", line)
        found += [m.rstrip(".") for m in _BARE.findall(bare_line)]
    return found


def _parse(argv: list[str]) -> None:
    """Parse `argv` (after `nsightlab`) as the program would, down to the last command,
    without running it; raises Click's usage error if it does not parse."""
    import typer

    root = program()
    ctx: Any = root.make_context("nsightlab", list(argv))
    command = root
    while getattr(command, "commands", None):
        args = [*ctx._protected_args, *ctx.args]
        if not args:
            if getattr(command, "invoke_without_command", False):
                return
            raise ValueError(f"{ctx.command_path} needs a command")
        name, command, rest = command.resolve_command(ctx, args)
        ctx = command.make_context(name, rest, parent=ctx)
    del typer


def _held(word: str) -> bool:
    """A word that holds a placeholder rather than a value."""
    if _PLACEHOLDER.search(word) or word.endswith("..."):
        return True
    return any(_CAPS.fullmatch(piece) for piece in re.split(r"[/:=,@]", word.lstrip("-")))


def problem(command: str) -> str | None:
    """What keeps `command` from running as printed, or None."""
    try:
        words = shlex.split(command)
    except ValueError as e:
        return f"not a shell command line: {e}"
    held = [w for w in words[1:] if _held(w)]
    if held:
        return f"placeholder {held[0]!r} left"
    return parse_problem(words[1:])


def parse_problem(argv: list[str]) -> str | None:
    """Why `argv` (the words after `nsightlab`) does not parse as the program parses it,
    or None when it does."""
    import typer

    try:
        _parse(argv)
    except typer.Exit as e:  # --help, --version: it runs, and exits
        return None if not e.exit_code else f"exit {e.exit_code}"
    except Exception as e:  # Click's usage errors, and ours
        message = getattr(e, "format_message", None)
        return f"{type(e).__name__}: {message() if message else e}"
    return None
