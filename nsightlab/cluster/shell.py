"""`shell`: an interactive terminal in the lab pod, or one command with its output streamed.

Interactive mode puts the local terminal in raw mode (so Ctrl-C travels to the remote
process as a byte), sends the window size at start and on every SIGWINCH over the
resize channel, and returns the remote exit code.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

from nsightlab.errors import ClusterError, OnInterrupt, RemoteCommandError

if TYPE_CHECKING:
    from nsightlab.cluster.execstream import ExecSession
    from nsightlab.cluster.kube import Kube

# bash if the image has it, else sh.
SHELL_ARGV = ["sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi"]


def _exit_code(session: ExecSession, kube: Kube) -> int:
    code = session.returncode()
    if code is not None:
        return code
    failure = session.failure_message()
    if failure:
        raise RemoteCommandError(f"the command could not run: {failure}", returncode=127)
    raise ClusterError(
        f"the connection dropped ({session.what})", hint=f"Check the pod with `nsightlab status {kube.ctx.cli_args}`."
    )


def run_command(
    kube: Kube,
    namespace: str,
    pod: str,
    argv: list[str],
    *,
    forward_stdin: bool = False,
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
) -> int:
    """Run one command, streaming its output as it comes; returns its exit code."""
    out = stdout or sys.stdout.buffer
    err = stderr or sys.stderr.buffer

    def write(channel: int, data: bytes) -> None:
        stream = out if channel == 1 else err
        stream.write(data)
        stream.flush()

    session = kube.exec(namespace, pod, argv, stdin=forward_stdin)
    with OnInterrupt(f"the connection to pod {pod} was closed; the command may still be running there"):
        try:
            _pump(session, sys.stdin.fileno() if forward_stdin else None, write)
        finally:
            session.close()
    return _exit_code(session, kube)


def _pump(
    session: ExecSession,
    fd_in: int | None,
    write: Callable[[int, bytes], None],
    *,
    before_wait: Callable[[], None] | None = None,
) -> None:
    """Move bytes until the remote side ends: local input -> stdin frames, frames -> write().

    `fd_in` None: nothing to send. At local end of input, stdin is closed (v5).
    """
    stdin_open = fd_in is not None
    sock = session.fileno()
    while True:
        if before_wait is not None:
            before_wait()
        watch = [sock] + ([fd_in] if stdin_open and fd_in is not None else [])
        try:
            ready = [sock] if session.pending() else select.select(watch, [], [], 0.5)[0]
        except InterruptedError:  # a signal (SIGWINCH): go round again
            continue
        if stdin_open and fd_in is not None and fd_in in ready:
            data = os.read(fd_in, 65536)
            if data:
                session.write_stdin(data)
            else:
                stdin_open = False
                session.close_stdin()
        if sock in ready:
            frame = session.read()
            if frame is None:
                return
            write(*frame)


def interactive(kube: Kube, namespace: str, pod: str, argv: list[str] | None = None) -> int:
    """A TTY session in the pod; returns the remote shell's exit code."""
    # POSIX terminals only, and only for an interactive shell
    import termios
    import tty

    if not sys.stdin.isatty():
        raise RemoteCommandError(
            "an interactive shell needs a terminal",
            hint="Run one command instead, e.g. `nsightlab shell -- nvidia-smi`.",
        )
    session = kube.exec(namespace, pod, argv or SHELL_ARGV, stdin=True, tty=True)
    fd_in = sys.stdin.fileno()
    fd_out = sys.stdout.fileno()
    saved = termios.tcgetattr(fd_in)
    resized = [True]

    def on_winch(signum: int, frame: object) -> None:
        resized[0] = True

    def send_size() -> None:
        if resized[0]:
            resized[0] = False
            with contextlib.suppress(OSError):
                size = os.get_terminal_size(fd_out if os.isatty(fd_out) else fd_in)
                session.resize(size.columns, size.lines)

    def write(channel: int, data: bytes) -> None:
        os.write(fd_out, data)  # a TTY has one output stream

    previous = signal.signal(signal.SIGWINCH, on_winch)
    with OnInterrupt(
        f"the shell in pod {pod} was closed"
    ):  # (in raw mode Ctrl-C goes to the pod: only a signal gets here)
        try:
            tty.setraw(fd_in)
            _pump(session, fd_in, write, before_wait=send_size)
        finally:
            termios.tcsetattr(fd_in, termios.TCSADRAIN, saved)
            signal.signal(signal.SIGWINCH, previous)
            session.close()
    return _exit_code(session, kube)
