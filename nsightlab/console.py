"""The I/O environment handed to every command: consoles, TTY facts, output mode.

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
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.console import Console


@dataclass
class Env:
    out: Console
    err: Console
    stdin_tty: bool
    json: bool = False

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
        from rich.console import Console

        out_file = stdout or sys.stdout
        err_file = stderr or sys.stderr
        no_color = bool(os.environ.get("NO_COLOR"))
        # Rich picks the width from the terminal, else COLUMNS, else 80.
        out = Console(file=out_file, no_color=no_color, width=width, soft_wrap=False, highlight=False)
        err = Console(file=err_file, no_color=no_color, width=width, highlight=False)
        if stdin_tty is None:
            try:
                stdin_tty = sys.stdin.isatty()
            except (AttributeError, ValueError):
                stdin_tty = False
        return cls(out=out, err=err, stdin_tty=stdin_tty, json=json)

    @property
    def out_tty(self) -> bool:
        return bool(self.out.is_terminal)

    def note(self, message: str, *, style: str | None = None) -> None:
        """A line for the human on stderr (never mixed into JSON on stdout)."""
        self.err.print(message, style=style, markup=False, highlight=False, soft_wrap=True)

    def warn(self, message: str) -> None:
        self.err.print(f"warning: {message}", style="yellow", markup=False, highlight=False, soft_wrap=True)

    def print_json(self, data: BaseModel | dict[str, Any] | list[Any]) -> None:
        """Exactly one JSON document on stdout."""
        if hasattr(data, "model_dump"):
            payload: Any = data.model_dump(mode="json")
        else:
            payload = data
        self.out.file.write(json.dumps(payload, indent=2, default=str) + "\n")
        self.out.file.flush()

    def write(self, text: str) -> None:
        """Plain text on stdout, as is."""
        self.out.file.write(text)
        self.out.file.flush()

    @contextmanager
    def status(self, message: str) -> Iterator[Any]:
        """A spinner on stderr while something slow runs (nothing when stderr is no TTY)."""
        if self.err.is_terminal:
            with self.err.status(message) as st:
                yield st
        else:
            yield _NullStatus()


class _NullStatus:
    def update(self, *args: Any, **kwargs: Any) -> None:
        pass
