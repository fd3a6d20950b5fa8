"""What every command module shares: the Typer app, the common options, the console
and the drawing helpers.

This package alone does not use `from __future__ import annotations`: Typer reads every
command's annotations at run time, and string annotations would make it compile and
evaluate each one on every start. A command module imports what its commands need at its
top and is loaded only when one of them is reached (`cli.index`), so `nsightlab --help`
loads Typer and nothing heavy (bench/startup.py).
"""

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from nsightlab.cli.index import LazyRoot
from nsightlab.present.console import Env

app = typer.Typer(
    name="nsightlab",
    help="A lab driver for GPU profiling on Kubernetes: explore GPU nodes, run a lab pod, "
    "profile with Nsight Systems, sweep memory bandwidth, report, clean up.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,  # locals can hold kubeconfig tokens
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    cls=LazyRoot,
)


@dataclass
class _State:
    config_path: Path | None = None
    # what followed the first `--` on the command line, exactly as typed (None: no `--`):
    # Click drops the `--` itself, and `profile --serving` must know where it was
    after_dashes: list[str] | None = None


STATE = _State()

# Options shared by many commands.
ContextOpt = Annotated[
    Optional[str],  # noqa: UP045 - Typer needs Optional at runtime on 3.10
    typer.Option(
        "--context",  # no short form, as in kubectl: -c is a container there (and in `logs`)
        help="kubeconfig context or alias from config.yaml (the current-context is never used).",
        show_default=False,
    ),
]

KubeconfigOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, merged, else ~/.kube/config).", show_default=False
    ),
]

NamespaceOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--namespace",
        "-n",
        help="namespace (default: the alias's, else the context's, else 'default').",
        show_default=False,
    ),
]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout instead of tables.")]

YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]

LocalOpt = Annotated[
    bool, typer.Option("--local", help="Run on this machine (its GPU, or the CPU) instead of the lab pod.")
]


def number(
    kind: type[float] | type[int] = float, *, minimum: float | None = None, above: float | None = None
) -> Callable[[Any], Any]:
    """The parser of a numeric option: a finite number (NaN and the infinities are not),
    a whole one for `kind=int`, at least `minimum` / more than `above`. Anything else is a
    usage error, said in one line by `cli.usage` ("--iters 'nan' is not a whole number;
    see `nsightlab sweep --help`"), exit 2."""
    whole = kind is int

    def parse(value: Any) -> Any:
        text = str(value).strip()
        try:
            if whole:
                if isinstance(value, float) or not text.lstrip("+-").isdigit() or not text.isascii():
                    raise ValueError(text)
                parsed: float = int(text)
            else:
                parsed = float(text)
        except ValueError:
            raise ValueError("is not a whole number" if whole else "is not a number") from None
        if not math.isfinite(parsed):
            raise ValueError("must be a finite number")
        if minimum is not None and parsed < minimum:
            raise ValueError(f"must be at least {minimum:g}")
        if above is not None and parsed <= above:
            raise ValueError("must be positive" if above == 0 else f"must be more than {above:g}")
        return parsed

    return parse


def make_env(json_out: bool = False) -> Env:
    return Env.create(json=json_out)


def show(env: Env, result: Any, draw: Callable[[Env, Any], None]) -> None:
    """One JSON document on stdout with --json, else the human rendering."""
    if env.json:
        env.print_json(result)
    else:
        draw(env, result)
