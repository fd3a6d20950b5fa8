"""`pack`: how much of what each model deployment reserves it needs, how many copies fit
per GPU under each way of sharing it, and two measurements behind it (copies at once,
a tokenizer's CPU)."""

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from nsightlab.analysis.pack_plan import PackOptions
from nsightlab.cli.common import (
    STATE,
    ContextOpt,
    JsonOpt,
    KubeconfigOpt,
    LocalOpt,
    NamespaceOpt,
    make_env,
    number,
    show,
)
from nsightlab.cluster.connect import connect
from nsightlab.cluster.safety import Intent
from nsightlab.measure import commands as run
from nsightlab.measure.commands import TargetChoice, TokenizerRequest
from nsightlab.measure.pack_scripts import ColocateOptions
from nsightlab.measure.packing import analyze_namespace, parse_types
from nsightlab.present.packview import draw_colocate, draw_pack, draw_tokenizer

commands = typer.Typer(rich_markup_mode=None)
pack_app = typer.Typer(rich_markup_mode=None, no_args_is_help=False, invoke_without_command=True)
commands.add_typer(pack_app, name="pack")


class _Device(str, Enum):
    auto = "auto"
    cuda = "cuda"
    cpu = "cpu"


@pack_app.callback()
def pack(
    ctx: typer.Context,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    match: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--match", "-m", help="Only workloads whose name contains TEXT.", show_default=False),
    ] = None,
    target_concurrency: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--target-concurrency",
            help="sequences each copy must serve at once (default: models: in config.yaml, else --max-num-seqs).",
            parser=number(int, minimum=1),
            show_default=False,
        ),
    ] = None,
    max_len: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--max-len",
            help="tokens per sequence to hold (default: models:, else --max-model-len, else the log's length).",
            parser=number(int, minimum=1),
            show_default=False,
        ),
    ] = None,
    step_ms: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--step-ms", help="a decode step's time to keep per copy (ms).", parser=number(above=0), show_default=False
        ),
    ] = None,
    decode_run: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--decode-run",
            metavar="RUN",
            help="take the step time from a stored `profile decode` run.",
            show_default=False,
        ),
    ] = None,
    target_tokens_per_s: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--target-tokens-per-s",
            help="tokens/s each sequence must keep (sets the step to keep).",
            parser=number(above=0),
            show_default=False,
        ),
    ] = None,
    what_if: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--what-if",
            metavar="TYPES",
            help="the same needs on other instance types (g6.2xlarge,...).",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Per GPU workload: held vs needed, copies per GPU per sharing mode, what binds, a plan.

    Reads (GET only; no access reviews; protected contexts too) the namespace's pods, the
    ReplicaSets and nodes of those holding GPUs, and each workload's engine log (vLLM's
    start-up accounting), else `models:` in config.yaml. Then per workload: what each GPU
    holds and what one copy needs, the decode floor against the step time to keep, the
    CPU, copies per GPU under whole / time-slicing / MPS / each MIG profile, the binding
    constraint, and GPUs now vs needed (with `prices:`, dollars). It changes nothing.

    \b
    Example:
      nsightlab pack --context stg
      nsightlab pack --context stg --match llmqu --target-concurrency 32 --max-len 4096
      nsightlab pack --context stg --match llmqu --what-if g6.2xlarge,g6e.xlarge
      nsightlab pack colocate --local --device cpu --preset tiny --copies 1,2 --tokens 8
    """
    if ctx.invoked_subcommand is not None:
        return
    env = make_env(json_out)
    options = PackOptions(target_concurrency, max_len, step_ms, target_tokens_per_s)
    types = parse_types(what_if)
    with (
        connect(context, kubeconfig, config_path=STATE.config_path, intent=Intent.READ, namespace=namespace) as c,
        env.status(f"reading the GPU workloads of {c.ctx.namespace} on {c.ctx.name}"),
    ):
        report = analyze_namespace(
            c, match=match, options=options, what_if_types=types, decode_run=decode_run, note=env.note
        )
    show(env, report, draw_pack)


@pack_app.command("colocate")
def colocate(
    preset: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--preset", help="the model's shape, as `profile decode` (tiny, llama-1b, ...).", show_default=False
        ),
    ] = None,
    copies: Annotated[str, typer.Option("--copies", metavar="K,K,...", help="copies at once, e.g. 1,2,4,8.")] = (
        "1,2,4,8"
    ),
    batch: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--batch", help="sequences per copy (default 1).", parser=number(int, minimum=1), show_default=False
        ),
    ] = None,
    tokens: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--tokens",
            help="timed decode steps per copy (default 64).",
            parser=number(int, minimum=1),
            show_default=False,
        ),
    ] = None,
    prompt_len: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--prompt-len", help="prompt positions (default 128).", parser=number(int, minimum=1), show_default=False
        ),
    ] = None,
    device: Annotated[
        _Device, typer.Option("--device", help="auto (the pod's GPU), cuda, or cpu (the CPU on purpose).")
    ] = _Device.auto,
    local: LocalOpt = False,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """K copies of the decode loop at once on one GPU: per-copy step time, aggregate tokens/s.

    Runs lab_scripts/colocate.py in the lab pod (or here with --local): for each K, K
    processes each running decode.py's loop, each capped to 1/K of the GPU's memory,
    released together (time-slicing; again under MPS where a daemon can start). Shows
    where aggregate tokens/s flattens as the copies saturate memory bandwidth, and what
    each copy's step pays there. Stored as a run (kind pack); `report` draws it.

    \b
    Example:
      nsightlab pack colocate --preset llama-1b --copies 1,2,4,8 --batch 1
      nsightlab pack colocate --local --device cpu --preset tiny --copies 1,2 --tokens 8
    """
    env = make_env(json_out)
    options = ColocateOptions(preset=preset, copies=copies, batch=batch, tokens=tokens, prompt_len=prompt_len)
    where = TargetChoice(local, context, kubeconfig, namespace, STATE.config_path)
    show(env, run.colocate(env, where, options, device=device.value), draw_colocate)


@pack_app.command("tokenizer")
def tokenizer(
    path: Annotated[str, typer.Option("--tokenizer", help="a tokenizer.json (or a folder holding one) on the target.")],
    prompts: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--prompts", help="prompts here (JSON lines with prompt/text, or text): copied over.", show_default=False
        ),
    ] = None,
    prompt_len: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--prompt-len",
            help="tokens per generated prompt (default 512).",
            parser=number(int, minimum=1),
            show_default=False,
        ),
    ] = None,
    requests: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--requests", help="generated prompts (default 200).", parser=number(int, minimum=1), show_default=False
        ),
    ] = None,
    pod_cpu: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--pod-cpu", help="a serving pod's CPU request (default: lab.cpu in config.yaml).", show_default=False
        ),
    ] = None,
    local: LocalOpt = False,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """A tokenizer's CPU: ms per request per core, requests and tokens/s per vCPU.

    Runs lab_scripts/tokenizer_cpu.py in the lab pod (or here with --local) on a
    tokenizer the target already has (nothing is downloaded; it needs the `tokenizers`
    package there, `pip install 'nsightlab[pack]'` here), one request at a time on one
    thread, and says what one pod's CPU request can feed. `pack` uses the latest run.

    \b
    Example:
      nsightlab pack tokenizer --tokenizer /models/llama/tokenizer.json --prompt-len 512
      nsightlab pack tokenizer --local --tokenizer ./tokenizer.json --prompts prompts.jsonl
    """
    env = make_env(json_out)
    request = TokenizerRequest(path, prompts=prompts, prompt_len=prompt_len, requests=requests, pod_cpu=pod_cpu)
    result = run.tokenizer(env, TargetChoice(local, context, kubeconfig, namespace, STATE.config_path), request)
    show(env, result, draw_tokenizer)
