"""`analyze`: the live commands' tables from files you already have, offline."""

import contextlib
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel

from nsightlab import units
from nsightlab.cli.common import JsonOpt, make_env, show
from nsightlab.present.console import Env
from nsightlab.runs.analyze import analyze_path

# An input this large takes seconds to read (a million kernels: about 5 s): a spinner on
# the terminal says what is being read meanwhile.
SLOW_BYTES = 32 << 20

commands = typer.Typer(rich_markup_mode=None)


@commands.command()
def analyze(
    path: Annotated[
        Path,
        typer.Argument(
            help="a stored run (id, prefix, 'latest') or its folder, nsys CSV exports (folder), a cuda_gpu_trace CSV, "
            "a Kineto trace (.json, .json.gz), an nsys SQLite export (.sqlite), a .nsys-rep, nsys console output, an "
            "ncu CSV, a lesson1/torchprof/sweep/decode JSON, or the folder bench/gpu_run.sh wrote."
        ),
    ],
    step_range: Annotated[
        str | None,
        typer.Option(
            "--step-range",
            metavar="NAME",
            help="the ranges that are steps: a name, or the start of one name (default: a serving engine's step "
            "ranges or decode_step, else ProfilerStep, else inferred from a repeating kernel sequence).",
            show_default=False,
        ),
    ] = None,
    weights_gb: Annotated[
        float | None,
        typer.Option(
            "--weights-gb",
            help="bytes one step reads, in GB (10^9): adds each step's memory floor.",
            show_default=False,
        ),
    ] = None,
    kv_gb: Annotated[
        float | None,
        typer.Option("--kv-gb", help="KV cache GB a step reads, added to --weights-gb.", show_default=False),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Offline: the same tables as the live commands, from files you already have.

    From nsys output: the kernels, the NVTX ranges, the CUDA API calls and the memory
    operations, and why there are no rates when nothing says what one call did. With a
    GPU timeline (a cuda_gpu_trace export, a Kineto trace, a .sqlite export, a .nsys-rep)
    it adds the step anatomy: step time, GPU idle between kernels, the top kernels, a
    verdict. The folder bench/gpu_run.sh wrote: every record, and its figures against
    physical bounds.

    \b
    Example:
      nsightlab analyze l1_stats.txt
      nsightlab analyze ./exports/ --json
      nsightlab analyze report.sqlite
      nsightlab analyze ncu_speedoflight.csv
      nsightlab analyze latest
      nsightlab analyze trace.pt.trace.json.gz --step-range ProfilerStep --weights-gb 16
      nsightlab analyze ./gpu-run-h200/
    """
    env = make_env(json_out)
    with _reading(env, path):
        result = analyze_path(path, step_range=step_range, weights_gb=weights_gb, kv_gb=kv_gb)
    show(env, result, _draw)


def _reading(env: Env, path: Path) -> contextlib.AbstractContextManager[Any]:
    """A spinner on stderr (a terminal's only) while a large file or folder is read."""
    try:
        if path.is_dir():
            with os.scandir(path) as entries:
                size = sum(e.stat().st_size for e in entries if e.is_file())
        else:
            size = path.stat().st_size
    except OSError:  # analyze_path says what is wrong with it
        return contextlib.nullcontext()
    if size < SLOW_BYTES or not env.err_tty:
        return contextlib.nullcontext()
    return env.status(f"analysing {path.name or path} ({units.size(size)})")


def _draw(env: Env, result: BaseModel) -> None:
    """The result's view (`present.resultviews`)."""
    # The views and every result type they draw load only for the text: a tenth of a
    # second (bench/RESULTS.md, house-cli) that --json need not wait for.
    from nsightlab.present.resultviews import draw_result

    draw_result(env, result)
