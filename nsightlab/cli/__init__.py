"""Command-line interface. Thin: each command parses options, resolves the context,
calls one function and draws the typed result it returns. One module per command group,
loaded when one of its commands is reached (`cli.index`); `main` is the one place errors
become a line on stderr and an exit code.
"""

import atexit
import contextlib
import errno
import os
import sys
import threading
import traceback
from pathlib import Path
from typing import Annotated, Optional

import typer
import typer.main

from nsightlab import __version__
from nsightlab.cli import completion
from nsightlab.cli.common import STATE, app
from nsightlab.cli.global_options import accept_after_the_command
from nsightlab.cli.index import LazyCommands
from nsightlab.cli.usage import usage_line
from nsightlab.errors import ExitCode, Interrupted, NsightlabError
from nsightlab.present.safe import terminal_safe

try:  # Typer raises its own copy of Click's exceptions (since 0.29)
    from typer._click import exceptions as click_errors
except ImportError:  # an older Typer uses Click itself
    from click import exceptions as click_errors  # type: ignore[no-redef]

__all__ = ["app", "entry", "main"]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"nsightlab {__version__}")
        raise typer.Exit()


def _request_timeout(value: Optional[str]) -> Optional[str]:  # noqa: UP045
    """--request-timeout, set for this command (also when absent: tests run many commands
    in one process)."""
    # the answers module loads pydantic-core: 12 ms that `--help` need not wait for
    from nsightlab.cluster import answers

    seconds: Optional[float] = answers.DEFAULT_REQUEST_TIMEOUT  # noqa: UP045
    if value is not None:
        try:
            seconds = answers.parse_duration(value)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
    answers.set_request_timeout(seconds)
    return value


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
    config: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--config",
            help="config file (default: $NSIGHTLAB_HOME/config.yaml).",
            envvar="NSIGHTLAB_CONFIG",
            show_default=False,
        ),
    ] = None,
    traceback: Annotated[
        bool, typer.Option("--traceback", help="Show the full traceback of an unexpected error.")
    ] = False,
    show_completion: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--show-completion",
            metavar="SHELL",
            callback=completion.show,
            expose_value=False,
            is_eager=True,
            help="Print the completion script for SHELL (bash, zsh, fish, powershell) and exit.",
            show_default=False,
        ),
    ] = None,
    install_completion: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--install-completion",
            metavar="SHELL",
            callback=completion.install,
            expose_value=False,
            is_eager=True,
            help="Install completion for SHELL (bash, zsh, fish, powershell) and exit.",
            show_default=False,
        ),
    ] = None,
    request_timeout: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--request-timeout",
            metavar="DURATION",
            callback=_request_timeout,
            help="how long to wait for each answer of the API server, as kubectl's: seconds or a duration (30s, 2m, "
            "1m30s); 0 waits forever. [default: 60s]",
            show_default=False,
        ),
    ] = None,
) -> None:
    """A lab driver for GPU profiling on Kubernetes.

    \b
    Example, from nothing:
      nsightlab init --context CTX --namespace NS --image IMG
      nsightlab doctor --context stg
      nsightlab create --context stg
    then the tutorial:
      nsightlab profile lesson1
      nsightlab sweep --dtype fp32
      nsightlab cleanup
    """
    STATE.config_path = config


_built: "list[object]" = []


def _command() -> "typer.core.TyperGroup":
    """The Click command Typer builds from the app: built once per process (a Click
    command serves any number of invocations); each command module is loaded, and given
    the program's options (`global_options`), when one of its commands is first reached."""
    if not _built:
        root = typer.main.get_command(app)
        assert isinstance(root, typer.core.TyperGroup) and isinstance(root.commands, LazyCommands)
        root.commands.on_load = lambda command: accept_after_the_command(root, command)
        _built.append(root)
    command = _built[0]
    assert isinstance(command, typer.core.TyperGroup)
    return command


def _invoke(args: "list[str]") -> None:
    """The app, run as Typer's own runner runs it, except that everything that goes wrong
    comes back to main() as an exception: Typer's runner turns Ctrl-C into a silent exit
    130 (standalone or not), a prompt's Ctrl-C into "Aborted!", and prints usage errors
    over several lines."""
    command = _command()
    completion.complete_if_asked(command)
    try:
        with command.make_context("nsightlab", args) as ctx:
            command.invoke(ctx)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except (typer.Abort, EOFError):  # a prompt ended by Ctrl-C or by the end of its input
        raise Interrupted("interrupted: nothing was changed") from None
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
        # the reader of our output is gone (`nsightlab ... | head`): nothing more to say
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stays open until the process ends
        sys.exit(1)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI: one handler turns nsightlab errors, Ctrl-C and bad command lines into
    one line on stderr and an exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    own_args = args[: args.index("--")] if "--" in args else args
    STATE.after_dashes = args[args.index("--") + 1 :] if "--" in args else None
    show_traceback = "--traceback" in own_args or bool(os.environ.get("NSIGHTLAB_TRACEBACK"))
    try:
        try:
            _invoke(list(args))  # Click consumes the list it parses; the error line quotes it
        except KeyboardInterrupt:
            # Ctrl-C where no running work said what it leaves (see errors.OnInterrupt):
            # a command that only reads, or one that had not started to change anything
            raise Interrupted("interrupted: nothing was changed") from None
    except Exception as e:  # (SystemExit, what a command exits with, is none)
        sys.exit(_failed(e, args, show_traceback))


def _failed(e: Exception, args: list[str], show_traceback: bool) -> int:
    """What went wrong, said in one line on stderr (a command group without its command:
    its help), and the exit code; an unexpected error is a bug, its traceback shown with
    --traceback."""
    if isinstance(e, click_errors.NoArgsIsHelpError):
        e.show()  # `nsightlab` alone, or a command group without its command: the help
        return int(ExitCode.USAGE)
    if isinstance(e, click_errors.UsageError):
        line, code = f"error: {usage_line(e, args, _command())}", int(ExitCode.USAGE)
    elif isinstance(e, click_errors.ClickException):
        line, code = f"error: {e.format_message()}", int(e.exit_code)
    elif isinstance(e, NsightlabError):
        if show_traceback:
            traceback.print_exc()
        line, code = e.line(), int(e.exit_code)
    elif show_traceback:
        traceback.print_exc()
        return int(ExitCode.BUG)
    else:
        text = terminal_safe(str(e))  # it may quote user input: still one line
        sys.stderr.write(
            f"error: unexpected {type(e).__name__}: {text}. This is a bug in nsightlab; rerun with --traceback "
            "and report it.\n"
        )
        return int(ExitCode.BUG)
    sys.stderr.write(terminal_safe(line) + "\n")
    return code


def entry() -> None:
    """The console script (and `python -m nsightlab`): `main()`, then a quick exit.

    An interpreter's normal shutdown frees every object and module one by one; after a
    command that read a large cluster that alone takes tens of milliseconds. When the
    command is done and no other thread is left, do what shutdown would do that matters
    (flush the output streams, run the `atexit` handlers: logging, the kubernetes
    client's temporary certificate files) and leave without the teardown. Tests call
    `main()` and keep the normal path.
    """
    try:
        main()
        code = 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            sys.stderr.write(f"{e.code}\n")
            code = 1
    # After Ctrl-C nothing left running matters (a request stalled on a silent server would
    # hold the exit for its whole timeout); otherwise other threads are waited for.
    if threading.active_count() > 1 and code != ExitCode.INTERRUPTED:
        sys.exit(code)
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `nsightlab explore nodes | head`: the reader is gone
        code = code or 1
    with contextlib.suppress(OSError):
        sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)
