"""Stored runs and what is made from them: runs, report, roofline."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from nsightlab.cli.common import JsonOpt, YesOpt, make_env, number, show
from nsightlab.errors import Interrupted, OnInterrupt
from nsightlab.present import runsview
from nsightlab.present.render import blank
from nsightlab.runs.listing import line, list_runs, remove_runs, resolve_all, show_run

commands = typer.Typer(rich_markup_mode=None)
runs_app = typer.Typer(rich_markup_mode=None)  # help: the docstring of runs_main
commands.add_typer(runs_app, name="runs")


KindOpt = Annotated[
    str | None,
    typer.Option(
        "--kind",
        help="only runs of this kind: profile, decode, sweep, ncu, fleet, pack or tokenizer.",
        show_default=False,
    ),
]


def _runs_list(kind: str | None, json_out: bool) -> None:
    env = make_env(json_out)
    listing = list_runs(kind)
    show(env, listing, runsview.runs_list)


@runs_app.callback(invoke_without_command=True)
def runs_main(ctx: typer.Context, kind: KindOpt = None, json_out: JsonOpt = False) -> None:
    """Stored runs: list them (the default), show one, remove some.

    The list is oldest first: id, kind, when, where (context or local), node, device,
    dtype and the headline figure. Any unambiguous prefix of an id finds a run.

    \b
    Example:
      nsightlab runs
      nsightlab runs --kind sweep --json
      nsightlab runs show 3fa2
      nsightlab runs rm 3fa2c1 9b07
    """
    if ctx.invoked_subcommand is None:
        _runs_list(kind, json_out)


@runs_app.command("list")
def runs_list(kind: KindOpt = None, json_out: JsonOpt = False) -> None:
    """List stored runs (the same as `nsightlab runs`).

    \b
    Example:
      nsightlab runs list --kind profile
    """
    _runs_list(kind, json_out)


@runs_app.command("show")
def runsshow(
    run: Annotated[str, typer.Argument(help="run id, an unambiguous prefix, a run folder, or 'latest'.")],
    json_out: JsonOpt = False,
) -> None:
    """One run: where and how it ran, its files, and its result as the live command shows it.

    \b
    Example:
      nsightlab runs show 3fa2
      nsightlab runs show latest --json
    """
    env = make_env(json_out)
    detail = show_run(run)
    show(env, detail, runsview.run_detail)


@runs_app.command("rm")
def runs_rm(
    runs: Annotated[list[str], typer.Argument(help="run ids or unambiguous prefixes.")],
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Remove stored runs. Every id is checked first: one that matches nothing, or more
    than one run, removes nothing (exit 2). Asks on a terminal unless --yes.

    \b
    Example:
      nsightlab runs rm 3fa2c1 9b07
    """
    env = make_env(json_out)
    chosen = resolve_all(list(runs), in_store=True)
    if not yes and env.stdin_tty:
        for r in chosen:
            x = line(r)
            env.note(f"  {x.id}  {x.kind} {x.name}  {x.folder}")
        try:
            ok = typer.confirm(f"Remove {len(chosen)} run{'s' if len(chosen) != 1 else ''}?", default=False, err=True)
        except (EOFError, KeyboardInterrupt, typer.Abort):
            ok = False
        if not ok:
            raise Interrupted("cancelled; nothing was removed")
    with OnInterrupt("some of the runs may have been removed; `nsightlab runs` lists those left"):
        removed = remove_runs(chosen)
    show(env, removed, runsview.runs_removed)


WeightsOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option(
        "--weights-gb",
        help="model weights in GB (10^9 bytes), e.g. 16 for 8B parameters in fp16: the per-token decode floor.",
        parser=number(above=0),
        show_default=False,
    ),
]


@commands.command()
def report(
    runs: Annotated[
        list[str] | None,
        typer.Argument(
            help="runs to report (ids, prefixes, 'latest'); default: the lab session's runs, else the latest of each "
            "kind.",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="folder for report.html, report.md and the figures (default: $NSIGHTLAB_HOME/reports/<time>).",
            show_default=False,
        ),
    ] = None,
    weights_gb: WeightsOpt = None,
    terminal: Annotated[
        bool,
        typer.Option(
            "--terminal",
            help="Show the report here (Rich, bars for sweeps) instead of writing files; with --out, both.",
        ),
    ] = False,
    open_html: Annotated[bool, typer.Option("--open", help="Open report.html in the browser once written.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Plots and a report of your runs: a self-contained report.html (images inside, no
    network needed), report.md, and the figures as PNG and SVG.

    Figures: the sweep (TB/s by size, regimes shaded, DRAM spec and L2 marked, runs
    overlaid, the tutorial's curve on its GPU), the roofline (each profiled range under
    its GPU's roofs) and the top kernels. Text: environment, tables, lessons, ncu
    verdicts. Prints the paths; nothing opens unless --open.

    \b
    Example:
      nsightlab report
      nsightlab report 3fa2 9b07 --out ./lab-report --weights-gb 16
      nsightlab report --terminal
    """
    env = make_env(json_out)
    writes = not (terminal and out is None and not open_html)
    # the report's builder, writers and figures load for `report` alone (`runs` lists without them)
    from nsightlab.present import report as rep

    out_dir = (out if out is not None else rep.default_out_dir()) if writes else None  # checked before any work
    selection = rep.select_runs(list(runs or []))
    bundle = rep.build_report(selection, weights_gb=weights_gb)
    if out_dir is None:
        if env.json:
            env.print_json(bundle.doc)
        else:
            runsview.report_doc(env, bundle.doc)
        return
    files = rep.write_report(bundle, out_dir)
    if terminal and not env.json:
        runsview.report_doc(env, bundle.doc)
        blank(env)
    show(env, files, runsview.report_files)
    if open_html and not rep.open_in_browser(files.html):
        env.warn(f"could not open a browser; open {files.html} yourself")


@commands.command()
def roofline(
    weights_gb: Annotated[
        float,
        typer.Option(
            "--weights-gb",
            help="model weights in GB (10^9 bytes), e.g. 16 for 8B parameters in fp16.",
            parser=number(above=0),
        ),
    ],
    run: Annotated[
        str | None,
        typer.Option(
            "--run",
            help="a stored sweep (its measured DRAM plateau and its GPU's spec); default: the latest sweep.",
            show_default=False,
        ),
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu",
            help="a GPU's spec only: product name, table key or instance type (g7e.8xlarge).",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Roofline math for your model: the floor on one decode step, weight bytes /
    bandwidth, from the DRAM plateau a sweep measured and from the spec, side by side.

    \b
    Example:
      nsightlab roofline --weights-gb 16
      nsightlab roofline --weights-gb 16 --run 3fa2
      nsightlab roofline --weights-gb 70 --gpu "NVIDIA H200"
    """
    # the floor's sweep look-up and the spec table load for `roofline` alone
    from nsightlab.runs.floor import decode_floor_for

    env = make_env(json_out)
    floor = decode_floor_for(weights_gb, run=run, gpu=gpu)
    show(env, floor, runsview.decode_floor)
