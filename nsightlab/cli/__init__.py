"""Command-line interface. Thin: each command parses options, resolves the context,
calls one function and draws the typed result it returns. One module per command group;
`main` is the one place errors become a line on stderr and an exit code.
"""

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

# Each command module adds its commands to `app` when imported.
import nsightlab.cli.config
import nsightlab.cli.explore
import nsightlab.cli.lab
import nsightlab.cli.measure
import nsightlab.cli.runs  # noqa: F401
from nsightlab import __version__
from nsightlab.cli.common import STATE, app

__all__ = ["app", "entry", "main"]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"nsightlab {__version__}")
        raise typer.Exit()

@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")] = False,
    config: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--config", help="config file (default: $NSIGHTLAB_HOME/config.yaml).", envvar="NSIGHTLAB_CONFIG", show_default=False),
    ] = None,
    traceback: Annotated[bool, typer.Option("--traceback", help="Show the full traceback of an unexpected error.")] = False,
) -> None:
    """A lab driver for GPU profiling on Kubernetes.

    \b
    Example, the tutorial in five commands:
      nsightlab explore nodes --context stg
      nsightlab create --context stg
      nsightlab profile lesson1
      nsightlab sweep --dtype float32
      nsightlab cleanup
    """
    STATE.config_path = config

def main(argv: list[str] | None = None) -> None:
    """Run the CLI: one handler turns nsightlab errors into one line and an exit code."""
    from nsightlab.errors import ExitCode, NsightlabError

    args = list(sys.argv[1:] if argv is None else argv)
    own_args = args[: args.index("--")] if "--" in args else args
    show_traceback = "--traceback" in own_args or bool(os.environ.get("NSIGHTLAB_TRACEBACK"))
    try:
        app(args=args, prog_name="nsightlab")
    except NsightlabError as e:
        if show_traceback:
            import traceback

            traceback.print_exc()
        sys.stderr.write(e.line() + "\n")
        sys.exit(int(e.exit_code))
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted.\n")
        sys.exit(int(ExitCode.INTERRUPTED))
    except SystemExit:
        raise
    except Exception as e:
        if show_traceback:
            import traceback

            traceback.print_exc()
            sys.exit(int(ExitCode.BUG))
        sys.stderr.write(
            f"error: unexpected {type(e).__name__}: {e}. This is a bug in nsightlab; rerun with --traceback and report it.\n"
        )
        sys.exit(int(ExitCode.BUG))

def entry() -> None:
    """The console script (and `python -m nsightlab`): `main()`, then a quick exit.

    An interpreter's normal shutdown frees every object and module one by one; after a
    command that read a large cluster that alone takes tens of milliseconds. When the
    command is done and no other thread is left, do what shutdown would do that matters
    (flush the output streams, run the `atexit` handlers: logging, the kubernetes
    client's temporary certificate files) and leave without the teardown. Tests call
    `main()` and keep the normal path.
    """
    import atexit
    import contextlib
    import threading

    try:
        main()
        code = 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            sys.stderr.write(f"{e.code}\n")
            code = 1
    if threading.active_count() > 1:
        sys.exit(code)
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `nsightlab explore nodes | head`: the reader is gone
        code = code or 1
    with contextlib.suppress(OSError):
        sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)
