"""Command-line interface. Thin: parse, resolve the context, call one function, render."""

from __future__ import annotations

import typer

from nsightlab import __version__

app = typer.Typer(
    name="nsightlab",
    help="A lab driver for GPU profiling on Kubernetes.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    no_args_is_help=True,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"nsightlab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    """A lab driver for GPU profiling on Kubernetes."""


def main() -> None:
    app(prog_name="nsightlab")
