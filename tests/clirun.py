"""Running the nsightlab CLI in-process for tests: exit code, stdout and stderr."""

from __future__ import annotations

import signal
from dataclasses import dataclass

import pytest

from nsightlab.cli import main


@dataclass
class Result:
    code: int
    out: str
    err: str

    def __repr__(self) -> str:  # shown by pytest when an assertion fails
        return f"Result(code={self.code}, out={self.out[-2000:]!r}, err={self.err[-2000:]!r})"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    capsys.readouterr()
    code = 0
    try:
        main(list(args))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    captured = capsys.readouterr()
    return Result(code=code, out=captured.out, err=captured.err)


def sigint_default() -> None:
    """`preexec_fn` of a child that a test will Ctrl-C: SIGINT's default disposition back.

    A shell that ignores SIGINT (a background job without job control, as a CI runner may
    start the suite) hands SIG_IGN down through fork and exec, and neither `restore_signals`
    nor Python's start-up undoes it: Python then installs no KeyboardInterrupt handler and
    the child never hears the test's SIGINT."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
