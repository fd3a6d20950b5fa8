"""The I/O environment handed to every command: consoles, TTY facts, output mode.

The concrete `nsightlab.env.Env`: the layers below take the protocol, the CLI makes this.

Data goes to stdout (`env.out`), progress and notes to stderr (`env.err`). Nothing in
nsightlab creates a console of its own; tests build an `Env` with fixed width and no
colour.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

import typer

from nsightlab.present.safe import json_text, rich_text, terminal_safe

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.console import Console


def _may_be_terminal(stream: IO[str]) -> bool:
    """False when Rich would certainly not treat the stream as a terminal.

    Lets a command that writes plain text to a pipe or file skip importing Rich at all.
    Rich decides the rest (TTY_COMPATIBLE, FORCE_COLOR, then isatty).
    """
    if os.environ.get("TTY_COMPATIBLE") == "1" or os.environ.get("FORCE_COLOR") is not None:
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@dataclass
class Env:
    """Consoles are made on first use: plain output to a pipe never imports Rich."""

    out_file: IO[str]
    err_file: IO[str]
    stdin_tty: bool
    json: bool = False
    width: int | None = None
    no_color: bool = False
    _out: Console | None = field(default=None, repr=False)
    _err: Console | None = field(default=None, repr=False)

    @classmethod
    def create(
        cls,
        *,
        json: bool = False,
        stdout: IO[str] | None = None,
        stderr: IO[str] | None = None,
        stdin_tty: bool | None = None,
        width: int | None = None,
    ) -> Env:
        if stdin_tty is None:
            try:
                stdin_tty = sys.stdin.isatty()
            except (AttributeError, ValueError):
                stdin_tty = False
        return cls(
            out_file=stdout or sys.stdout,
            err_file=stderr or sys.stderr,
            stdin_tty=stdin_tty,
            json=json,
            width=width,
            no_color=bool(os.environ.get("NO_COLOR")),
        )

    @property
    def out(self) -> Console:
        """Rich console on stdout (Rich picks the width from the terminal, else COLUMNS, else 80)."""
        if self._out is None:
            # Rich loads only when something is drawn on a terminal
            from rich.console import Console

            self._out = Console(
                file=self.out_file, no_color=self.no_color, width=self.width, soft_wrap=False, highlight=False
            )
        return self._out

    @property
    def err(self) -> Console:
        """Rich console on stderr: progress, notes, warnings."""
        if self._err is None:
            # Rich loads only when something is drawn on a terminal
            from rich.console import Console

            self._err = Console(file=self.err_file, no_color=self.no_color, width=self.width, highlight=False)
        return self._err

    @property
    def out_tty(self) -> bool:
        return _may_be_terminal(self.out_file) and bool(self.out.is_terminal)

    @property
    def err_tty(self) -> bool:
        return _may_be_terminal(self.err_file) and bool(self.err.is_terminal)

    def note(self, message: str, *, style: str | None = None) -> None:
        """A line for the human on stderr (never mixed into JSON on stdout). Notes quote
        names, messages and log lines from outside: shown through `terminal_safe`, no markup."""
        self.err.print(terminal_safe(message), style=style, markup=False, highlight=False, soft_wrap=True)

    def warn(self, message: str) -> None:
        self.err.print(
            f"warning: {terminal_safe(message)}", style="yellow", markup=False, highlight=False, soft_wrap=True
        )

    def print_json(self, data: BaseModel | dict[str, Any] | list[Any]) -> None:
        """Exactly one JSON document on stdout: the data as it is, with the characters a
        terminal could act on (DEL, C1, bidi and zero-width ones) in JSON's `\\u` escapes."""
        if hasattr(data, "model_dump_json"):
            text = data.model_dump_json(indent=2)  # serialised in one pass, not via dicts
        else:
            text = json.dumps(data, indent=2, default=str)
        self.out_file.write(json_text(text) + "\n")
        self.out_file.flush()

    def write(self, text: str) -> None:
        """Plain text on stdout, as is."""
        self.out_file.write(text)
        self.out_file.flush()

    def confirm(self, question: str) -> bool:
        """Ask on the terminal (stderr), default no; False on EOF or Ctrl-C."""

        try:
            return bool(typer.confirm(question, default=False, err=True))
        except (EOFError, KeyboardInterrupt, typer.Abort):
            return False

    @contextmanager
    def status(self, message: str) -> Iterator[Any]:
        """A spinner on stderr while something slow runs (nothing when stderr is no TTY).
        What it says (and each `update(text)`) is shown through `terminal_safe`, no markup."""
        if self.err_tty:
            with self.err.status(rich_text(message)) as st:
                yield _SafeStatus(st)
        else:
            yield _NullStatus()


class _SafeStatus:
    """Rich's Status, with every new text shown through `terminal_safe`, no markup."""

    def __init__(self, status: Any) -> None:
        self._status = status

    def update(self, status: str | None = None, **kwargs: Any) -> None:
        self._status.update(rich_text(status) if status is not None else None, **kwargs)


class _NullStatus:
    def update(self, *args: Any, **kwargs: Any) -> None:
        pass
