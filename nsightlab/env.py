"""What commands below the CLI may do with the terminal: the `Env` protocol.

Cluster and measure code takes an `Env` to report progress and notes (on stderr, never
mixed into the data on stdout) and to ask before a change; it never makes a console of
its own. The concrete one, on Rich consoles, is `nsightlab.present.console.Env`; tests
use it with a fixed width and no colour.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol


class Env(Protocol):
    """The terminal as seen by the layers under the CLI."""

    @property
    def json(self) -> bool:
        """True when stdout carries one JSON document (--json)."""
        ...

    @property
    def stdin_tty(self) -> bool:
        """True when a person can answer a question on stdin."""
        ...

    @property
    def err_tty(self) -> bool:
        """True when stderr is a terminal (progress may redraw itself)."""
        ...

    def note(self, message: str, *, style: str | None = None) -> None:
        """A line for the person on stderr. It may quote names and messages from outside:
        it is shown with control characters escaped (`present.safe.terminal_safe`)."""
        ...

    def warn(self, message: str) -> None:
        """A warning line on stderr, shown as `note` shows its line."""
        ...

    def status(self, message: str) -> AbstractContextManager[Any]:
        """A spinner on stderr while something slow runs (nothing when stderr is no TTY)."""
        ...

    def confirm(self, question: str) -> bool:
        """Ask a yes/no question on the terminal; False when nobody can answer."""
        ...
