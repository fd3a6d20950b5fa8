"""The program's own options (`--config`, `--request-timeout`, `--traceback`) after the
command too: `nsightlab status --request-timeout 5` means `nsightlab --request-timeout 5
status`, as kubectl takes its global flags anywhere.

Click parses an option only in the command it belongs to, so every command gets a copy of
each, hidden from its help (the program's help lists them once) and setting what the
program's option sets. One given in both places: the later one (after the command) wins.
"""

import copy
from collections.abc import Callable, Iterator
from typing import Any

from nsightlab.cli.common import STATE

# The program's options a command accepts too, by their parameter names.
AFTER_THE_COMMAND = ("config", "request_timeout", "traceback")


def _tree(command: Any) -> Iterator[Any]:
    """A command and every command under it."""
    yield command
    for sub in (getattr(command, "commands", None) or {}).values():
        yield from _tree(sub)


def _apply(name: str, program_option: Any) -> Callable[[Any, Any, Any], Any]:
    """The copy's callback: when the option was given after the command, do what the
    program's option does with it; when it was not, leave what the program's set."""

    def callback(ctx: Any, param: Any, value: Any) -> Any:
        if value is None or value is False:
            return value
        if name == "config":
            STATE.config_path = value
        elif program_option.callback is not None:
            program_option.callback(ctx, program_option, value)
        # --traceback: main() reads it from the command line before anything runs
        return value

    return callback


def accept_after_the_command(root: Any, command: Any) -> None:
    """Give `command` of `root` (a Click group built by Typer), and every command under
    it, hidden copies of the program's options in AFTER_THE_COMMAND."""
    program = {p.name: p for p in root.params if p.name in AFTER_THE_COMMAND}
    for each in _tree(command):
        taken = {o for p in each.params for o in (*p.opts, *p.secondary_opts)}
        for name, option in program.items():
            if taken.intersection(option.opts):
                continue  # a command's own option of that name is its own
            mine = copy.copy(option)
            mine.hidden = True
            mine.expose_value = False
            mine.is_eager = False
            mine.envvar = None  # the environment is the program's option's to read
            mine.callback = _apply(name, option)
            each.params.append(mine)
