"""The CLI as a tree: every command of the Click program nsightlab runs (the one `main`
builds, with the program's options copied onto each command), and every option of each,
found by walking it, so a command added tomorrow is covered by the tests that use this."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Command:
    path: tuple[str, ...]  # () for the program itself, ("fleet", "sweep") for a subcommand
    command: Any  # the Click command
    context: Any  # a Click context for it (its parents' chained), to read its help option

    @property
    def name(self) -> str:
        return " ".join(("nsightlab", *self.path))

    def params(self) -> list[Any]:
        """Its parameters, the help option included."""
        return list(self.command.get_params(self.context))

    def options(self) -> list[Any]:
        return [p for p in self.params() if p.param_type_name == "option"]


def program() -> Any:
    """The Click group nsightlab runs."""
    from nsightlab.cli import _command

    return _command()


def commands() -> list[Command]:
    """The program and every command and group under it, depth first."""
    root = program()
    out: list[Command] = []

    def walk(cmd: Any, path: tuple[str, ...], parent: Any) -> None:
        ctx = cmd.context_class(cmd, info_name=path[-1] if path else "nsightlab", parent=parent)
        out.append(Command(path, cmd, ctx))
        for name, sub in sorted((getattr(cmd, "commands", None) or {}).items()):
            walk(sub, (*path, name), ctx)

    walk(root, (), None)
    return out


def meaning(option: Any) -> str:
    """What an option is, by its long name (`--context`), else its first name."""
    names = [*option.opts, *option.secondary_opts]
    longs = [n for n in names if n.startswith("--")]
    return max(longs, key=len) if longs else names[0]


def short_names(option: Any) -> list[str]:
    return [n for n in (*option.opts, *option.secondary_opts) if len(n) == 2 and n[0] == "-" and n[1] != "-"]
