"""Fleets: the bandwidth sweep on every GPU type (or node) of a cluster at once, as Jobs."""

from enum import Enum
from typing import Annotated

import typer

from nsightlab.analysis.fleet_models import FleetResult
from nsightlab.cli.common import (
    STATE,
    ContextOpt,
    JsonOpt,
    KubeconfigOpt,
    NamespaceOpt,
    YesOpt,
    make_env,
    number,
    show,
)
from nsightlab.cluster import fleetjobs as fj
from nsightlab.cluster.connect import connect, note_session
from nsightlab.cluster.safety import Intent
from nsightlab.measure import fleet_runner as fl
from nsightlab.measure import fleetcommands
from nsightlab.measure.fleetcommands import FleetPlace
from nsightlab.present import fleetview
from nsightlab.present.console import Env

commands = typer.Typer(rich_markup_mode=None)
fleet_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True)
commands.add_typer(
    fleet_app,
    name="fleet",
    help="Measure every GPU type (or node) of a cluster at once, as Kubernetes Jobs: sweep, status, collect.",
)


class _Device(str, Enum):
    auto = "auto"
    cuda = "cuda"
    cpu = "cpu"


MaxParallelOpt = Annotated[
    int | None,
    typer.Option(
        "--max-parallel", help="Jobs (GPUs) at once (default 4).", parser=number(int, minimum=1), show_default=False
    ),
]
ScheduleTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--schedule-timeout",
        help="seconds a Job may wait for a GPU before it is reported not-scheduled and deleted (default 120).",
        parser=number(minimum=0.1),
        show_default=False,
    ),
]
KeepOpt = Annotated[bool, typer.Option("--keep", help="Leave the Jobs and the ConfigMap in place when done.")]


@fleet_app.command("sweep")
def fleet_sweep(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    types: Annotated[
        str | None,
        typer.Option(
            "--types",
            metavar="TYPE,TYPE",
            help="instance types to measure (default: every GPU instance type of the nodes).",
            show_default=False,
        ),
    ] = None,
    every_node: Annotated[
        bool,
        typer.Option(
            "--every-node", help="One Job per GPU node (pinned by kubernetes.io/hostname): find the slow ones."
        ),
    ] = False,
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            metavar="TYPE",
            help="element type: float16 (fp16, half), bfloat16 (bf16), float32 (fp32, float) or float64 (fp64, "
            "double); default float16, float32 with --device cpu.",
            show_default=False,
        ),
    ] = None,
    sizes: Annotated[
        str | None,
        typer.Option(
            "--sizes",
            metavar="N,N,...",
            help="log2 of the element counts, 10..34 (default: the script's, 16..30 on a GPU).",
            show_default=False,
        ),
    ] = None,
    iters: Annotated[
        int | None,
        typer.Option(
            "--iters", help="timed calls per size (default 50).", parser=number(int, minimum=1), show_default=False
        ),
    ] = None,
    warmup: Annotated[
        int | None,
        typer.Option(
            "--warmup", help="warm-up calls per size (default 5).", parser=number(int, minimum=0), show_default=False
        ),
    ] = None,
    device: Annotated[
        _Device,
        typer.Option(
            "--device",
            help="auto and cuda: the Job's GPU, which torch must see (else the Job fails); cpu: the node's CPU on "
            "purpose.",
        ),
    ] = _Device.auto,
    max_parallel: MaxParallelOpt = None,
    schedule_timeout: ScheduleTimeoutOpt = None,
    job_deadline: Annotated[
        int,
        typer.Option(
            "--job-deadline",
            help="seconds a Job may run (its activeDeadlineSeconds, Pending included) before it is a timeout.",
            parser=number(int, minimum=1),
        ),
    ] = 1800,
    weights_gb: Annotated[
        float | None,
        typer.Option(
            "--weights-gb",
            help="a model's weights in GB (10^9 bytes): per type, the decode floor, tokens/s and whether it fits.",
            parser=number(above=0),
            show_default=False,
        ),
    ] = None,
    price: Annotated[
        list[str] | None,
        typer.Option(
            "--price",
            metavar="TYPE=USD",
            help="USD per hour of an instance type (repeatable; adds to config.yaml's prices).",
            show_default=False,
        ),
    ] = None,
    target_tokens_per_s: Annotated[
        float | None,
        typer.Option(
            "--target-tokens-per-s",
            help="with --weights-gb: name the cheapest type that reaches this many tokens/s (batch 1).",
            parser=number(above=0),
            show_default=False,
        ),
    ] = None,
    keep: KeepOpt = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the ConfigMap and the Jobs as YAML and create nothing.")
    ] = False,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Sweep memory bandwidth on every GPU type (or node) at once: one Job each.

    Each Job runs lab_scripts/sweep.py on one GPU of its type (the lab pod's image,
    tolerations and resources), at most --max-parallel at a time; its JSON comes back in
    its log and is stored as a sweep run as it arrives. Then, per type: the GPU, the
    launch floor, the cache peak, the DRAM plateau and its % of spec; with --every-node
    the nodes more than 10% below their type's median plateau are outliers. Ctrl-C leaves
    the Jobs running (`fleet collect ID` finishes). Refused on protected contexts.

    \b
    Example:
      nsightlab fleet sweep --context stg
      nsightlab fleet sweep --context stg --types g7e.8xlarge,g6.2xlarge --dtype float32
      nsightlab fleet sweep --context stg --every-node
      nsightlab fleet sweep --context stg --weights-gb 16 --price g6.xlarge=0.80 --target-tokens-per-s 30
    """
    env = make_env(json_out)
    opts = fleetcommands.options(
        types=types,
        prices=price or [],
        every_node=every_node,
        dtype=dtype,
        sizes=sizes,
        iters=iters,
        warmup=warmup,
        device=device.value,
        max_parallel=max_parallel or 4,
        schedule_timeout=schedule_timeout if schedule_timeout is not None else 120.0,
        job_deadline=job_deadline,
        weights_gb=weights_gb,
        target_tokens_per_s=target_tokens_per_s,
    )
    place = FleetPlace(context, kubeconfig, namespace, STATE.config_path)
    if dry_run:
        show(env, fleetcommands.dry_run(place, opts), lambda e, docs: e.write(fj.manifests_yaml(docs)))
        return
    _finish(env, fleetcommands.start(env, place, opts, keep=keep, yes=yes))


def _finish(env: Env, result: FleetResult) -> None:
    """Show the result, then exit as the rules say (6 failed, 5 nothing scheduled)."""
    show(env, result, fleetview.fleet)
    err = fl.failure(result)
    if err is not None:
        raise err


@fleet_app.command("collect")
def fleet_collect(
    fleet_id: Annotated[
        str, typer.Argument(metavar="ID", help="the fleet's id (as `fleet sweep` and `fleet status` print it).")
    ],
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    max_parallel: MaxParallelOpt = None,
    schedule_timeout: ScheduleTimeoutOpt = None,
    keep: KeepOpt = False,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Finish a fleet left running (after Ctrl-C, or started elsewhere): follow its Jobs,
    create those not created yet, store the results, then delete its Jobs and ConfigMap.

    Without --context, the context and namespace the fleet was started in on this
    machine. Exit codes as for `fleet sweep`.

    \b
    Example:
      nsightlab fleet collect 3fa2c1
      nsightlab fleet collect 3fa2c1 --context stg --namespace ml-lab --keep
    """
    env = make_env(json_out)
    place = FleetPlace(context, kubeconfig, namespace, STATE.config_path)
    result = fleetcommands.collect(
        env, place, fleet_id, max_parallel=max_parallel, schedule_timeout=schedule_timeout, keep=keep, yes=yes
    )
    _finish(env, result)


@fleet_app.command("status")
def fleet_status(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Your fleets in the namespace: id, age, and their Jobs by phase (waiting: in the
    plan, not created yet). Read-only.

    \b
    Example:
      nsightlab fleet status --context stg
      nsightlab fleet status --context stg --json
    """
    env = make_env(json_out)
    with connect(
        context, kubeconfig, config_path=STATE.config_path, intent=Intent.READ, namespace=namespace, use_session=True
    ) as c:
        note_session(env, c)
        report = fj.fleet_status(c.kube, c.ctx.namespace, c.config.owner(), context=c.ctx.name)
    show(env, report, lambda e, r: fleetview.fleet_status(e, r, where=c.ctx.cli_args))
