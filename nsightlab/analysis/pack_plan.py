"""`nsightlab pack`: per GPU-holding workload, what it holds, what it needs, how many
copies fit per GPU under each way of sharing it, which resource binds, and the plan.

Pure: the workloads (`k8s/workloads.py`), each engine's start-up accounting
(`parse/vllm_log.py`), `models:` from config.yaml, the bandwidth (a stored plateau or
the spec) and the prices come in; `PackReport` (the JSON of `pack --json`) comes out.

Needed, per GPU: weights + activation peak + CUDA graphs + memory outside torch + the
KV cache at the target concurrency and length, the KV bytes of one token being the log's
KV cache memory over its KV tokens (else from the model's shape in `models:`). A part the
log does not give comes from `models:`; one given by neither is left out with a note
(`needed.origins` says where each came from); without weights or KV bytes per token there
is no need (`source: missing`) and the workload counts as needing what it holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from nsightlab.analysis.sharing import (
    USABLE_FRACTION,
    ModeCopies,
    best_mode,
    copies_by_cpu,
    gpus_needed,
    modes_for,
)
from nsightlab.k8s.workloads import WorkloadFacts
from nsightlab.models import Model
from nsightlab.parse.vllm_log import VllmStartup
from nsightlab.specs.mig import MigGpu

GiB = 1 << 30
#: vLLM's documented minimum: an API server, an engine core and a worker per GPU, each a
#: physical core ("CPU Resources for GPU Deployments", docs/configuration/optimization.md).
ENGINE_BASE_CORES = 2
START_ONE_AT_A_TIME = (
    "start the copies one at a time: vLLM instances started together on one GPU mis-size each other's KV cache "
    "(vLLM issue #55827)"
)


class Bandwidth(Model):
    tbps: float
    basis: Literal["measured", "spec"]
    label: str


class Needed(Model):
    """What one copy needs on each GPU (GiB; None: not known)."""

    weights_gib: float | None = None
    activation_gib: float | None = None
    graphs_gib: float | None = None
    other_gib: float | None = None  # memory outside torch: CUDA context, NCCL
    kv_gib: float | None = None
    kv_bytes_per_token: float | None = None
    concurrency: int | None = None
    max_len: int | None = None
    total_gib: float | None = None
    source: Literal["log", "config", "missing"] = "missing"
    origins: dict[str, str] = Field(default_factory=dict)  # where each figure came from


class CpuFacts(Model):
    requested: float | None  # one pod's CPU request (cores)
    engine_minimum: int | None  # vLLM's minimum in physical cores: 2 + GPUs
    engine_minimum_vcpus: int | None  # the same in vCPUs where a core runs two threads
    node_allocatable: float | None
    copies_per_gpu: int | None  # copies per GPU the node's CPU allows at this request
    tokenizer_tokens_per_s: float | None = None  # what one pod's CPU tokenizes (a stored measurement)
    tokenizer_run: str | None = None


class PackWorkload(Model):
    name: str
    owner_kind: str
    pods: int
    pod_names: list[str]
    gpus: int
    gpus_per_pod: int
    instance_type: str | None
    gpu_type: str | None
    gpu_memory_gib: float | None
    gpu_source: str | None
    engine: str
    container: str | None
    engine_flags: dict[str, object]
    held_gib: float | None  # each GPU's memory: the pod holds the whole card
    reserved_gib: float | None  # what the engine reserves of it (its log, else its flags)
    needed: Needed
    needed_pct_of_held: float | None
    bandwidth: Bandwidth | None
    floor_ms: float | None  # a decode step's floor at the target on the whole card
    step_ms: float | None  # the measured (or given) step time
    target_step_ms: float | None  # what each copy must keep: 1000 / target tokens/s, else step_ms
    cpu: CpuFacts
    modes: list[ModeCopies]
    best: ModeCopies | None
    gpus_needed: int
    settings: list[str]
    notes: list[str]


class PlanLine(Model):
    workload: str
    gpus_now: int
    gpus_needed: int
    mode: str | None
    profile: str | None
    usd_per_gpu_hour: float | None
    usd_per_hour_saved: float | None


class Plan(Model):
    gpus_now: int
    gpus_needed: int
    usd_per_hour_saved: float | None
    workloads: list[PlanLine]


class WhatIf(Model):
    workload: str
    instance_type: str
    gpu_type: str | None
    gpu_memory_gib: float | None
    bandwidth: Bandwidth | None
    floor_ms: float | None
    modes: list[ModeCopies]
    best: ModeCopies | None
    gpus_needed: int | None
    usd_per_gpu_hour: float | None
    usd_per_hour: float | None  # the workload's GPUs on this type with the best mode


class PackReport(Model):
    """`nsightlab pack --json`."""

    kind: Literal["pack"] = "pack"
    context: str
    namespace: str
    match: str | None = None
    workloads: list[PackWorkload]
    plan: Plan
    what_if: list[WhatIf] | None = None
    notes: list[str] = Field(default_factory=list)


@dataclass
class PackOptions:
    """What the person asked for (None: the engine's own limits, or not given)."""

    target_concurrency: int | None = None
    max_len: int | None = None
    step_ms: float | None = None
    target_tokens_per_s: float | None = None


KV_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "fp8": 1, "float8": 1, "int8": 1}


@dataclass
class Given:
    """A model's needs as `models:` in config.yaml gives them (None: not given)."""

    weights_gib: float | None = None
    activation_gib: float | None = None
    graphs_gib: float | None = None
    other_gib: float | None = None
    layers: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    kv_dtype: str = "bfloat16"
    kv_bytes_per_token: float | None = None
    target_concurrency: int | None = None
    max_len: int | None = None
    step_ms: float | None = None

    def shape_bytes_per_token(self) -> float | None:
        """K and V of one token: 2 x layers x kv_heads x head_dim x the KV dtype's bytes."""
        if self.layers is None or self.kv_heads is None or self.head_dim is None:
            return None
        return 2.0 * self.layers * self.kv_heads * self.head_dim * KV_DTYPE_BYTES.get(self.kv_dtype, 2)


@dataclass
class TokenizerRate:
    """A stored tokenizer measurement: tokens per second one vCPU tokenizes."""

    tokens_per_s_per_vcpu: float
    run_id: str


def _gib(n: float | None) -> str:
    return "?" if n is None else f"{n:.3g} GiB"


# ---------------------------------------------------------------------------- needed


def _pick(*options: tuple[str, float | int | None]) -> tuple[float | int | None, str | None]:
    for origin, value in options:
        if value is not None:
            return value, origin
    return None, None


def needed(
    w: WorkloadFacts, startup: VllmStartup | None, config: Given | None, options: PackOptions
) -> tuple[Needed, list[str]]:
    """The need per GPU and the notes that say what it rests on."""
    log = startup or VllmStartup()
    cfg = config or Given()
    notes: list[str] = []
    left_out: list[tuple[str, str]] = []
    n = Needed()
    memory = w.gpu_memory_gib
    log_weights = log.weights_gib
    if log_weights is not None and memory is not None and log_weights > memory:
        notes.append(
            f"{w.name}: its log says the weights take {_gib(log_weights)} per GPU, more than the {_gib(memory)} its "
            "GPU has: the log's figures are not used"
        )
        log = VllmStartup()
    weights, o = _pick(("log", log.weights_gib), ("config", cfg.weights_gib))
    n.weights_gib = None if weights is None else float(weights)
    if o:
        n.origins["weights_gib"] = o
    bpt, o = _pick(
        ("log", log.kv_bytes_per_token),
        ("config", cfg.kv_bytes_per_token),
        ("config", cfg.shape_bytes_per_token()),
    )
    n.kv_bytes_per_token = None if bpt is None else float(bpt)
    if o:
        n.origins["kv_bytes_per_token"] = o
    conc, o = _pick(
        ("--target-concurrency", options.target_concurrency),
        ("config", cfg.target_concurrency),
        ("--max-num-seqs", w.flags.max_num_seqs),
    )
    n.concurrency = None if conc is None else int(conc)
    if o:
        n.origins["concurrency"] = o
    length, o = _pick(
        ("--max-len", options.max_len),
        ("config", cfg.max_len),
        ("--max-model-len", w.flags.max_model_len),
        ("log", log.max_model_len),
    )
    n.max_len = None if length is None else int(length)
    if o:
        n.origins["max_len"] = o
    if n.weights_gib is None or n.kv_bytes_per_token is None:
        n.source = "missing"
        missing = [
            x for x, v in (("weights", n.weights_gib), ("KV bytes per token", n.kv_bytes_per_token)) if v is None
        ]
        notes.append(
            f"{w.name}: its needs are not known ({' and '.join(missing)} in neither its engine's log nor config.yaml): "
            f"it counts as needing what it holds; give them under `models: {{{w.name}: {{weights_gib: ..., layers: "
            "..., kv_heads: ..., head_dim: ...}}` in config.yaml"
        )
        return n, notes
    for attr, log_value, cfg_value, what in (
        ("activation_gib", log.activation_gib, cfg.activation_gib, "the activation peak"),
        ("other_gib", log.non_torch_gib, cfg.other_gib, "memory outside torch"),
        ("graphs_gib", 0.0 if w.flags.enforce_eager else log.graphs_gib, cfg.graphs_gib, "CUDA graphs"),
    ):
        value, o = _pick(("flags" if attr == "graphs_gib" and w.flags.enforce_eager else "log", log_value))
        if value is None:
            value, o = _pick(("config", cfg_value))
        if value is None:
            value, o = 0.0, "left out"
            left_out.append((what, attr))
        setattr(n, attr, float(value))
        n.origins[attr] = str(o)
    n.source = "log" if all(n.origins.get(k) == "log" for k in ("weights_gib", "kv_bytes_per_token")) else "config"
    if left_out:
        notes.append(
            f"{w.name}: {', '.join(what for what, _ in left_out)} {'is' if len(left_out) == 1 else 'are'} in neither "
            f"its log nor models: in config.yaml; the need leaves {'it' if len(left_out) == 1 else 'them'} out (set "
            f"{', '.join(attr for _, attr in left_out)} under models.{w.name})"
        )
    if n.concurrency is None or n.max_len is None:
        notes.append(
            f"{w.name}: no target concurrency or length (the engine's --max-num-seqs and --max-model-len are not "
            "set): give --target-concurrency and --max-len"
        )
        return n, notes
    n.kv_gib = n.kv_bytes_per_token * n.concurrency * n.max_len / GiB
    n.total_gib = sum(
        x for x in (n.weights_gib, n.activation_gib, n.graphs_gib, n.other_gib, n.kv_gib) if x is not None
    )
    return n, notes


def reserved(w: WorkloadFacts, startup: VllmStartup | None, need: Needed) -> float | None:
    """What the engine reserves of each GPU: its log's budget, else its parts, else its flags."""
    log = startup or VllmStartup()
    if log.budget_gib is not None:
        return log.budget_gib
    parts = (log.weights_gib, log.kv_gib)
    if all(x is not None for x in parts):
        return sum(x for x in (*parts, log.activation_gib, log.non_torch_gib, log.graphs_gib) if x is not None)
    if w.flags.kv_cache_memory_bytes and need.weights_gib is not None:
        extra = sum(x or 0.0 for x in (need.weights_gib, need.activation_gib, need.graphs_gib, need.other_gib))
        return w.flags.kv_cache_memory_bytes / GiB + extra
    if w.flags.gpu_memory_utilization and w.gpu_memory_gib:
        return w.flags.gpu_memory_utilization * w.gpu_memory_gib
    return None


# ---------------------------------------------------------------------------- one workload


def floor_ms(need: Needed, bandwidth: Bandwidth | None) -> float | None:
    """A decode step at the target reads the weights and the whole KV cache once."""
    if bandwidth is None or need.weights_gib is None or need.kv_gib is None or bandwidth.tbps <= 0:
        return None
    return (need.weights_gib + need.kv_gib) * GiB / (bandwidth.tbps * 1e12) * 1e3


def cpu_facts(w: WorkloadFacts, tokenizer: TokenizerRate | None) -> tuple[CpuFacts, list[str]]:
    gpus = w.gpus_per_pod
    minimum = ENGINE_BASE_CORES + gpus if w.flags.engine == "vllm" or w.flags.engine == "triton" else None
    facts = CpuFacts(
        requested=w.cpu_request,
        engine_minimum=minimum,
        engine_minimum_vcpus=2 * minimum if minimum else None,
        node_allocatable=w.node_cpu,
        copies_per_gpu=copies_by_cpu(w.node_cpu, w.cpu_request, w.gpus_per_node),
    )
    notes = []
    if minimum and w.cpu_request is not None and w.cpu_request < minimum:
        notes.append(
            f"{w.name}: each pod asks for {w.cpu_request:g} CPU, below vLLM's minimum of {minimum} physical cores "
            f"(an API server, an engine core and a worker per GPU; {2 * minimum} vCPUs where a core runs two threads)"
        )
    if tokenizer is not None and w.cpu_request:
        facts.tokenizer_tokens_per_s = tokenizer.tokens_per_s_per_vcpu * w.cpu_request
        facts.tokenizer_run = tokenizer.run_id
    return facts, notes


def settings(w: WorkloadFacts, need: Needed, best: ModeCopies | None) -> list[str]:
    """What to ask the platform team for, per copy."""
    if best is None or need.kv_gib is None or need.concurrency is None or need.max_len is None:
        return []
    kv_bytes = math.ceil(need.kv_gib * GiB)
    out = [
        f"each copy: --kv-cache-memory-bytes={kv_bytes} (its KV cache at {need.concurrency} sequences of "
        f"{need.max_len} tokens) instead of --gpu-memory-utilization, with --max-num-seqs={need.concurrency} "
        f"--max-model-len={need.max_len}"
    ]
    if best.mode == "mig":
        out.append(
            f"MIG: label the nodes nvidia.com/mig.config={best.layout} (the GPU operator's mig-manager drains and "
            f"reconfigures the node); each pod asks for nvidia.com/mig-{best.profile}: 1 (mixed strategy) instead of "
            "nvidia.com/gpu: 1"
        )
    elif best.mode == "mps":
        out.append(
            f"MPS: the device plugin's sharing config `sharing: {{mps: {{resources: [{{name: nvidia.com/gpu, "
            f"replicas: {best.copies}}}]}}}}` on the nodes (each copy gets an equal share of memory and compute)"
        )
    elif best.mode == "time-slicing":
        out.append(
            f"time-slicing: the device plugin's `sharing: {{timeSlicing: {{resources: [{{name: nvidia.com/gpu, "
            f"replicas: {best.copies}}}]}}}}` (no memory or fault isolation: one copy's out-of-memory or crash "
            "reaches the others, so each copy's --kv-cache-memory-bytes is what keeps them apart)"
        )
    if best.mode != "whole":
        out.append(START_ONE_AT_A_TIME)
    return out


def build_workload(
    w: WorkloadFacts,
    *,
    startup: VllmStartup | None,
    config: Given | None,
    options: PackOptions,
    bandwidth: Bandwidth | None,
    mig: MigGpu | None,
    tokenizer: TokenizerRate | None = None,
) -> PackWorkload:
    notes = list(w.notes)
    if not w.pods:
        return _unbound(w, notes)
    need, need_notes = needed(w, startup, config, options)
    notes += need_notes
    step = options.step_ms if options.step_ms is not None else (config.step_ms if config else None)
    target = 1000.0 / options.target_tokens_per_s if options.target_tokens_per_s else step
    cpu, cpu_notes = cpu_facts(w, tokenizer)
    notes += cpu_notes
    floor = floor_ms(need, bandwidth)
    modes: list[ModeCopies] = []
    if w.gpus_per_pod > 1:
        tp = w.flags.tensor_parallel_size
        notes.append(
            f"{w.name}: each pod holds {w.gpus_per_pod} GPUs"
            + (f" (tensor parallel {tp})" if tp else "")
            + ": a model split over GPUs is not packed here; it counts as needing what it holds"
        )
    elif need.total_gib is not None and w.gpu_memory_gib is not None:
        modes = modes_for(
            memory_gib=w.gpu_memory_gib,
            need_gib=need.total_gib,
            floor_ms=floor,
            target_step_ms=target,
            cpu_copies=cpu.copies_per_gpu,
            mig=mig.profiles if mig is not None else None,
        )
        if mig is None and w.gpu_key is not None:
            notes.append(f"{w.name}: no MIG profiles known for {w.gpu_name}: MIG is left out")
        if target is None:
            notes.append(
                f"{w.name}: no step time to keep (give --step-ms, a stored `profile decode` run with --decode-run, or "
                "--target-tokens-per-s): bandwidth is not checked"
            )
        if need.total_gib > w.gpu_memory_gib * USABLE_FRACTION:
            notes.append(
                f"{w.name}: one copy needs {_gib(need.total_gib)}, more than {USABLE_FRACTION:.0%} of its GPU's "
                f"{_gib(w.gpu_memory_gib)}: lower --target-concurrency or --max-len"
            )
    best = best_mode(modes)
    if best is not None and best.copies <= 1:
        best = next(m for m in modes if m.mode == "whole")
    if floor is not None and target is not None and floor > target:
        notes.append(
            f"{w.name}: a step at the target reads {_gib((need.weights_gib or 0) + (need.kv_gib or 0))}, "
            f"{floor:.3g} ms at its GPU's bandwidth, more than the {target:.3g} ms to keep: even one copy alone "
            "cannot keep it; lower the target concurrency or length, or use a GPU with more bandwidth"
        )
    fit = best.copies if best is not None and w.gpus_per_pod == 1 else 0
    need_gpus = gpus_needed(len(w.pods), fit) if fit else None
    return PackWorkload(
        name=w.name,
        owner_kind=w.owner_kind,
        pods=len(w.pods),
        pod_names=w.pods,
        gpus=w.gpus,
        gpus_per_pod=w.gpus_per_pod,
        instance_type=w.instance_type,
        gpu_type=w.gpu_name,
        gpu_memory_gib=w.gpu_memory_gib,
        gpu_source=w.gpu_source,
        engine=w.flags.engine,
        container=w.container,
        engine_flags=w.flags.model_dump(exclude={"engine", "problems"}, exclude_none=True, exclude_defaults=True),
        held_gib=w.gpu_memory_gib,
        reserved_gib=reserved(w, startup, need),
        needed=need,
        needed_pct_of_held=(
            100.0 * need.total_gib / w.gpu_memory_gib if need.total_gib is not None and w.gpu_memory_gib else None
        ),
        bandwidth=bandwidth,
        floor_ms=floor,
        step_ms=step,
        target_step_ms=target,
        cpu=cpu,
        modes=modes,
        best=best,
        gpus_needed=need_gpus if need_gpus is not None else w.gpus,
        settings=settings(w, need, best),
        notes=notes + [f"{w.name}: {p}" for p in w.flags.problems],
    )


def _unbound(w: WorkloadFacts, notes: list[str]) -> PackWorkload:
    """A workload none of whose pods is on a node: it holds nothing to pack."""
    return PackWorkload(
        name=w.name,
        owner_kind=w.owner_kind,
        pods=0,
        pod_names=[],
        gpus=0,
        gpus_per_pod=w.gpus_per_pod,
        instance_type=w.instance_type,
        gpu_type=w.gpu_name,
        gpu_memory_gib=w.gpu_memory_gib,
        gpu_source=w.gpu_source,
        engine=w.flags.engine,
        container=w.container,
        engine_flags=w.flags.model_dump(exclude={"engine", "problems"}, exclude_none=True, exclude_defaults=True),
        held_gib=None,
        reserved_gib=None,
        needed=Needed(),
        needed_pct_of_held=None,
        bandwidth=None,
        floor_ms=None,
        step_ms=None,
        target_step_ms=None,
        cpu=CpuFacts(
            requested=w.cpu_request,
            engine_minimum=None,
            engine_minimum_vcpus=None,
            node_allocatable=None,
            copies_per_gpu=None,
        ),
        modes=[],
        best=None,
        gpus_needed=0,
        settings=[],
        notes=notes,
    )


# ---------------------------------------------------------------------------- the plan


def per_gpu_price(instance_type: str | None, gpus_per_node: int | None, prices: Mapping[str, float]) -> float | None:
    """USD per GPU-hour: the instance's price over its GPUs."""
    if not instance_type or not gpus_per_node or instance_type not in prices:
        return None
    return prices[instance_type] / gpus_per_node


def build_plan(
    workloads: Sequence[PackWorkload], gpus_per_node: Mapping[str, int | None], prices: Mapping[str, float]
) -> tuple[Plan, list[str]]:
    """GPUs held now against GPUs needed with each workload's best mode, and the dollars."""
    lines: list[PlanLine] = []
    notes: list[str] = []
    saved_total: float | None = None
    for w in workloads:
        price = per_gpu_price(w.instance_type, gpus_per_node.get(w.name), prices)
        saved = None if price is None else (w.gpus - w.gpus_needed) * price
        if saved is not None:
            saved_total = (saved_total or 0.0) + saved
        elif w.gpus > w.gpus_needed:
            notes.append(
                f"{w.name}: no price for {w.instance_type or 'its instance type'}"
                + ("" if gpus_per_node.get(w.name) else " or its GPUs per node")
                + ": set `prices:` in config.yaml (USD per hour of an instance)"
            )
        lines.append(
            PlanLine(
                workload=w.name,
                gpus_now=w.gpus,
                gpus_needed=w.gpus_needed,
                mode=w.best.mode if w.best is not None else None,
                profile=w.best.profile if w.best is not None else None,
                usd_per_gpu_hour=price,
                usd_per_hour_saved=saved,
            )
        )
    now = sum(x.gpus_now for x in lines)
    need = sum(x.gpus_needed for x in lines)
    return Plan(gpus_now=now, gpus_needed=need, usd_per_hour_saved=saved_total, workloads=lines), notes


def what_if(
    w: PackWorkload,
    *,
    instance_type: str,
    gpu_type: str | None,
    memory_gib: float | None,
    bandwidth: Bandwidth | None,
    mig: MigGpu | None,
    usd_per_gpu_hour: float | None,
) -> WhatIf:
    """The same needs on another instance type's GPU: its memory, bandwidth and MIG profiles."""
    modes: list[ModeCopies] = []
    floor = floor_ms(w.needed, bandwidth)
    if w.needed.total_gib is not None and memory_gib is not None and w.gpus_per_pod == 1:
        modes = modes_for(
            memory_gib=memory_gib,
            need_gib=w.needed.total_gib,
            floor_ms=floor,
            target_step_ms=w.target_step_ms,
            cpu_copies=None,
            mig=mig.profiles if mig is not None else None,
        )
    best = best_mode(modes)
    if best is not None and best.copies <= 1:
        best = next(m for m in modes if m.mode == "whole")
    gpus = gpus_needed(w.pods, best.copies) if best is not None else None
    return WhatIf(
        workload=w.name,
        instance_type=instance_type,
        gpu_type=gpu_type,
        gpu_memory_gib=memory_gib,
        bandwidth=bandwidth,
        floor_ms=floor,
        modes=modes,
        best=best,
        gpus_needed=gpus,
        usd_per_gpu_hour=usd_per_gpu_hour,
        usd_per_hour=None if gpus is None or usd_per_gpu_hour is None else gpus * usd_per_gpu_hour,
    )
