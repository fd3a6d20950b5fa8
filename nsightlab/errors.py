"""The error hierarchy. Every error nsightlab raises on purpose carries its exit code.

The CLI catches `NsightlabError` once, prints `line()` on stderr and exits with
`exit_code`. Anything else is a bug (exit 1).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import IntEnum
from pathlib import Path
from typing import Any, TypeVar


class ExitCode(IntEnum):
    OK = 0
    BUG = 1
    USAGE = 2
    SAFETY = 3
    CLUSTER = 4
    NOT_READY = 5
    REMOTE = 6
    COUNTERS = 7
    INTERRUPTED = 130


class NsightlabError(Exception):
    """Base class: a message saying what failed and a hint saying what to do."""

    exit_code: ExitCode = ExitCode.BUG

    def __init__(self, message: str, *, hint: str | None = None, ends_with_command: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        # a line that ends with a command gets no full stop: pasted, it must run as printed
        self.ends_with_command = ends_with_command

    def line(self) -> str:
        """The line printed on stderr, as text: messages quote names, keys and paths the
        user gave (and servers' answers), so whatever writes it to a terminal shows it
        through `nsightlab.present.safe.terminal_safe` (the CLI's handler does), which
        escapes control characters, line breaks included, and keeps it one line."""
        text = self.message.rstrip(".")
        if self.hint:
            return f"error: {text}. {self.hint}"
        return f"error: {text}" if self.ends_with_command else f"error: {text}."


class UsageError(NsightlabError):
    """Bad input on the command line or in a file the user gave us."""

    exit_code = ExitCode.USAGE


class ConfigError(UsageError):
    """config.yaml (or another user file) is malformed."""


class ParseError(UsageError):
    """A parser could not read a file; names the file and the line."""

    def __init__(
        self,
        message: str,
        *,
        source: str | Path | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = ""
        if source is not None:
            where = f"{source}"
            if line is not None:
                where += f":{line}"
            where += ": "
        super().__init__(f"{where}{message}", hint=hint)
        self.source = str(source) if source is not None else None
        self.lineno = line


class SafetyError(NsightlabError):
    """Refused by the safety guard: no explicit context, or a protected one."""

    exit_code = ExitCode.SAFETY


class ClusterError(NsightlabError):
    """The cluster or its API: unreachable, unauthorised, not found, bad kubeconfig."""

    exit_code = ExitCode.CLUSTER


class PodNotReadyError(NsightlabError):
    """The lab pod did not become Ready (unschedulable, image pull, timeout...)."""

    exit_code = ExitCode.NOT_READY


class RemoteCommandError(NsightlabError):
    """A command on the target failed (script, nsys, missing tool)."""

    exit_code = ExitCode.REMOTE

    def __init__(self, message: str, *, returncode: int | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.returncode = returncode


class CountersNotPermittedError(NsightlabError):
    """ncu could not read GPU performance counters (ERR_NVGPUCTRPERM)."""

    exit_code = ExitCode.COUNTERS


class Interrupted(NsightlabError):
    """Ctrl-C; the message says what state things were left in."""

    exit_code = ExitCode.INTERRUPTED


# pydantic's words for a value that did not convert, and ours. The first match wins.
_PYDANTIC: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^Value error, "), ""),
    (re.compile(r"^Input should be a valid integer.*"), "is not a whole number"),
    (re.compile(r"^Input should be a finite number.*"), "is not a finite number"),
    (re.compile(r"^Input should be a valid number.*"), "is not a number"),
    (re.compile(r"^Input should be a valid boolean.*"), "is not true or false"),
    (re.compile(r"^Input should be greater than or equal to (\S+)"), r"must be at least \1"),
    (re.compile(r"^Input should be greater than (\S+)"), r"must be more than \1"),
    (re.compile(r"^Input should be less than or equal to (\S+)"), r"must be at most \1"),
    (re.compile(r"^Input should be less than (\S+)"), r"must be less than \1"),
    (re.compile(r"^Input should be "), "should be "),
)


def plain_value_message(message: str) -> str:
    """A value's problem without pydantic's phrasing ("Value error, ...", "Input should be ...")."""
    text = message.strip()
    for pattern, ours in _PYDANTIC:
        if pattern.search(text):
            return pattern.sub(ours, text, count=1).rstrip(".")
    return text.rstrip(".")


def validation_message(error: Mapping[str, Any]) -> str:
    """One pydantic error (an item of `ValidationError.errors()`) in our words, with the
    value that was given when the words need it: "'lots' is not a whole number"."""
    text = plain_value_message(str(error.get("msg", "")))
    if (
        text.startswith(("is not", "must be", "should be"))
        and "input" in error
        and not isinstance(error["input"], (dict, list))
    ):
        return f"{error['input']!r} {text}"
    return text


_Scope = TypeVar("_Scope", bound="OnInterrupt")


class OnInterrupt:
    """While inside, Ctrl-C ends the command (exit 130) with one line saying what was done
    and what was not: `interrupted: <state>`. Work that changes something keeps `state`
    true as it goes::

        with OnInterrupt("no run was stored") as progress:
            ...
            progress.state = f"the run is stored in {path}"

    The innermost one speaks: an `Interrupted` raised inside (by a nested OnInterrupt, or
    by code that knows better, e.g. a copy naming the files it left) passes through.
    Without one, the CLI says `interrupted: nothing was changed`.
    """

    def __init__(self, state: str) -> None:
        self.state = state

    def __enter__(self: _Scope) -> _Scope:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            raise Interrupted(f"interrupted: {self.state}") from None
