"""A decode step's verdict and the lesson's sentences, each chosen from the measured values.

The decisions are `verdicts.decide`'s (its named thresholds, applied to a group's median
step); the words here are for a decode step: "kernels" become "ops" on a CPU (whose ops
stand in for kernels, and Python's overhead for launch gaps), a step replayed from a
graph is never told to capture a graph, a step whose bytes fit in the cache is never
called "far from the floor", and advice names options of the command that was run
(`profile decode` has `--modes graphs`; `analyze` has no such option).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from nsightlab import units
from nsightlab.analysis.decode_models import Bandwidth, BatchPoint, DecodeMode, DecodeSteps
from nsightlab.analysis.explain.step_words import (
    RULE,
    graph_words,
    host_next_step,
    host_wait_words,
    host_words,
    idle_parts,
    launch_next_step,
)
from nsightlab.analysis.stepmodels import MsStats, StepGroup
from nsightlab.analysis.verdicts import (
    ALONE_BOUND_PCT,
    Floor,
    Verdict,
    decide,
    median_step,
    memory_floor,
    thresholds,
)

if TYPE_CHECKING:  # decode.py's record (and the bounds its loader checks): not loaded for a trace's steps
    from nsightlab.parse.records.decode_record import DecodeRecord, RecordEntry

Command = Literal["profile decode", "analyze"]
# tokens/s within this factor of the smaller batch's is "about the same".
FLAT_RATIO = 1.05


def _ms_text(ms: float) -> str:
    return units.duration(ms / 1e3)


def idle_pct(group: StepGroup) -> float:
    """The median step's idle share."""
    m = median_step(group)
    return 100.0 * m.idle_ns / m.window_ns if m.window_ns else 0.0


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    h = (len(ordered) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def _graph_advice(command: Command, script: bool, compiled: bool = False, amd: bool = False) -> str:
    """A graph for an eager step, named as the command that was run can do it; for a model
    torch.compile compiled already (Inductor's `triton_` kernels), its graph mode; on an
    AMD GPU a HIP graph (what torch.cuda.graph makes under ROCm)."""
    graph = "a HIP graph" if amd else "a CUDA graph"
    if compiled and command == "analyze":
        return (
            f"capture the step in {graph}: the model is compiled already (its triton_ kernels are "
            'torch.compile\'s), and torch.compile(mode="reduce-overhead") also replays it as a graph (or use '
            "the engine's graph mode)"
        )
    if command == "profile decode":
        return "capture the step in a CUDA graph (`--modes graphs`), or launch fewer, fused kernels (torch.compile)"
    if script:
        return (
            "capture the step in a CUDA graph (decode.py's graphs mode: rerun `profile decode` with "
            "`--modes graphs`), or launch fewer, fused kernels (torch.compile)"
        )
    return (
        f"capture the step in {graph} (torch.cuda.graph, or the engine's graph mode), or launch fewer, "
        "fused kernels (torch.compile)"
    )


def verdict(
    steps_ms: MsStats,
    group: StepGroup | None,
    *,
    floor: Floor | None,
    flop_per_step: float | None = None,
    bandwidth: Bandwidth | None = None,
    cpu: bool = False,
    mode: str | None = None,
    batch: int | None = None,
    cache_bytes: int | None = None,
    command: Command = "profile decode",
    script: bool = True,
    amd: bool = False,
    kineto: bool = False,
) -> Verdict:
    """The verdict in words with the next thing to try, printed with its thresholds.
    `command` is the command that was run, `script` whether the steps are decode.py's,
    `amd` whether the GPU is AMD's (whose kernels ROCm's profiler looks into, not ncu),
    `kineto` whether the trace is torch.profiler's (whose ranges are `record_function`'s).

    Without a trace (`group` None) only the floor ratio is known: kind `no-trace`.
    """
    ridge = bandwidth.ridge if bandwidth is not None else None
    median = steps_ms.median
    unit = "CPU" if cpu else "GPU"
    ops = "ops" if cpu else "kernels"
    what = "step"
    if group is not None and group.phase in ("prefill", "mixed"):
        what = f"{group.phase} step"
    head = f"the {what} takes {_ms_text(median)}"
    if floor is not None:
        head += (
            f", the memory floor is {_ms_text(floor.floor_ms)} ({floor.basis} "
            f"{units.tbps_value(floor.bandwidth_tbps)} TB/s)"
        )
    ratio = median / floor.floor_ms if floor is not None and floor.floor_ms > 0 else None
    if group is None:
        where = f"; {units.ratio(ratio)} the floor" if ratio is not None else ""
        return Verdict(
            kind="no-trace",
            text=f"{head}{where}; without a trace the {ops}, and how long the {unit} idles between them, are unknown "
            f"{RULE}",
            next_step="profile it (nsys, or --profiler torch) to see the kernels and the gaps between them",
            thresholds=thresholds(),
        )
    d = decide(group, floor=floor, flop_per_step=flop_per_step, ridge_flop_per_byte=ridge, cache_bytes=cache_bytes)
    m = d.step
    graph = graph_words(m)
    if graph:
        head += f"; it is {graph}"
    anatomy = group.anatomy
    if d.kind == "host-bound":
        blocked = host_words(m)
        # its GPU span, less the host's waits inside it (blocking calls, long gaps)
        own_ns = (m.gpu_end_ns or 0) - (m.gpu_start_ns or 0) - m.span_wait_ns
        return Verdict(
            kind="host-bound",
            text=(
                f"{head}; the {unit} waited {host_wait_words(m, units.percent(d.wait_pct))}"
                f"{'; ' + blocked if blocked else ''}; its own work took {_ms_text(own_ns / 1e6)}: host-bound {RULE}"
            ),
            next_step=host_next_step(m, kineto=kineto),
            thresholds=thresholds(),
        )
    if d.kind == "launch-bound":
        split = idle_parts(m, ops)
        if cpu:
            text = (
                f"{head}; the CPU runs no op {units.percent(d.idle_pct)} of the step ({split}): bound by "
                f"Python and dispatch overhead, as a GPU step is by its launches {RULE}"
            )
            nxt = "fewer, larger ops (torch.compile fuses them); on a GPU, capture the step in a CUDA graph"
        else:
            text = f"{head}; the GPU sits idle {units.percent(d.idle_pct)} of the step ({split}): launch-bound {RULE}"
            compiled = any(k.name.startswith("triton_") for k in anatomy.top_kernels)
            nxt = launch_next_step(m, _graph_advice(command, script, compiled, amd))
        return Verdict(kind="launch-bound", text=text, next_step=nxt, thresholds=thresholds())
    if d.kind == "copy-bound":
        return Verdict(
            kind="copy-bound",
            text=(
                f"{head}; only its memory copies and sets ({m.memops} a step) run {units.percent(d.copies_pct)} of "
                f"the step, its kernels {units.percent(100.0 * m.kernel_busy_ns / m.window_ns)}: bound by its "
                f"memory copies (>= {ALONE_BOUND_PCT:g}% alone) {RULE}"
            ),
            next_step=(
                "keep the data on the GPU across steps, or overlap the copies with the kernels: pinned host memory "
                "(pin_memory=True) and non_blocking copies on a side stream; a host-device copy runs at the link's "
                "speed (PCIe, NVLink-C2C), far below the GPU's memory bandwidth"
            ),
            thresholds=thresholds(),
        )
    if d.kind == "communication-bound":
        top_comm = next((k.short_name for k in anatomy.top_kernels if k.kind == "communication"), "")
        return Verdict(
            kind="communication-bound",
            text=(
                f"{head}; communication kernels ({top_comm or 'collectives'}, "
                f"{_ms_text(d.comm_ms)} a step) run with no other kernel at least "
                f"{units.percent(d.comm_pct)} of the step: communication-bound (>= {ALONE_BOUND_PCT:g}% alone) {RULE}"
            ),
            next_step=(
                "overlap the collectives with compute (DDP's gradient buckets, FSDP's prefetch), or make fewer, "
                "larger ones; one rank's trace cannot tell a slow collective from waiting for a slower rank: "
                "compare the ranks' traces of the same step"
            ),
            thresholds=thresholds(),
        )
    if d.kind == "compute-bound" and d.intensity is not None and ridge is not None:
        at = f" at batch {batch}" if batch is not None else ""
        return Verdict(
            kind="compute-bound",
            text=(
                f"{head}; {units.sig(d.intensity)} FLOP per byte is above the GPU's ridge point of "
                f"{units.sig(ridge)} FLOP per byte: compute-bound{at} {RULE}"
            ),
            next_step="lower-precision matrix math (FP8), or a smaller batch per GPU for lower latency",
            thresholds=thresholds(),
        )
    largest = ", ".join(f"{k.short_name} ({_ms_text(k.ms_per_step)})" for k in anatomy.top_kernels[:3])
    busy = units.percent(anatomy.gpu_busy_pct)
    if d.kind == "near-memory-floor" and ratio is not None:
        return Verdict(
            kind="near-memory-floor",
            text=f"{head}; the step is {units.ratio(ratio)} the floor: the {unit}'s memory bandwidth is the limit "
            f"{RULE}",
            next_step=(
                "fewer bytes per token (a smaller or quantized model, a shorter KV cache), faster "
                "memory, or a larger batch, which reads the weights once for more tokens"
            ),
            thresholds=thresholds(),
        )
    if d.kind == "memory-bound" and ratio is not None:
        if cpu:
            why = (
                "its ops read memory slowly, or arithmetic on too few threads limits them (a CPU has no compute peak "
                "here to tell)"
            )
            nxt = (
                "more threads (OMP_NUM_THREADS), a CPU-tuned matmul library, or a GPU; on a GPU, ncu gives each "
                "kernel's DRAM throughput"
            )
        else:
            why = f"its {ops} move their bytes slowly"
            nxt = (
                "look at the largest kernels with rocprof-compute, ROCm's kernel profiler (memory throughput, "
                "occupancy)"
                if amd
                else "look at the largest kernels with ncu (DRAM throughput, achieved occupancy)"
            )
        return Verdict(
            kind="memory-bound",
            text=(
                f"{head}; the {unit} is busy {busy} of the step but the step is {units.ratio(ratio)} the floor: "
                f"memory-bound, far from the floor: {why} {RULE}; largest {ops}: {largest}"
            ),
            next_step=nxt,
            thresholds=thresholds(),
        )
    if d.cached and floor is not None:
        where = "last-level cache" if cpu else "L2 cache"
        return Verdict(
            kind="busy",
            text=(
                f"{head}; the bytes a step reads ({units.size(floor.bytes_per_step)}) fit in the {where}, so they "
                f"can come from the cache, faster than the DRAM floor allows: the floor does not bound this step; "
                f"the {unit} is busy {busy} of it {RULE}; largest {ops}: {largest}"
            ),
            next_step=(
                "compare with a model too large for the cache (a larger --preset) to see the DRAM-bound step"
                if command == "profile decode"
                else "compare with a model too large for the cache to see the DRAM-bound step"
            ),
            thresholds=thresholds(),
        )
    sweep = "`nsightlab sweep --local --device cpu`" if cpu else "`nsightlab sweep`"
    if script:  # decode.py knows the bytes a step reads: the bandwidth is what is missing
        nxt = f"measure this device's memory bandwidth ({sweep}) to compare the step with its memory floor"
    else:
        nxt = (
            f"give the bytes a step reads (--weights-gb, --kv-gb) to compare the step with its memory floor on "
            f"the device's bandwidth (its spec, or {sweep})"
        )
    return Verdict(
        kind="busy",
        text=(
            f"{head}; the {unit} is busy {busy} of the step: not waiting for the host or its launches; no memory "
            f"floor to compare with {RULE}; largest {ops}: {largest}"
        ),
        next_step=nxt,
        thresholds=thresholds(),
    )


# ------------------------------------------------------------------ step objects


def steps_from_group(
    group: StepGroup,
    *,
    floor_bytes: int | None,
    flop_per_step: float | None,
    bandwidth: Bandwidth | None,
    cpu: bool,
    mode: str | None = None,
    batch: int | None = None,
    cache_bytes: int | None = None,
    command: Command = "profile decode",
    script: bool = True,
    amd: bool = False,
    kineto: bool = False,
) -> DecodeSteps:
    """A decode step object from a group of steps. A prefill or mixed step is not
    compared with the decode floor (its matrix work covers many tokens per weight read)."""
    a = group.anatomy
    floor = None
    if floor_bytes is not None and bandwidth is not None and a.phase not in ("prefill", "mixed"):
        floor = memory_floor(floor_bytes, bandwidth.tbps, bandwidth.basis, a.step_ms.median)
    return DecodeSteps(
        source=a.source,
        step_range=a.step_range,
        count=a.count,
        step_ms=a.step_ms,
        kernels_per_step=a.kernels_per_step,
        gpu_busy_pct=a.gpu_busy_pct,
        idle_ms_per_step=a.idle_ms_per_step,
        top_kernels=a.top_kernels,
        floor=floor,
        verdict=verdict(
            a.step_ms,
            group,
            floor=floor,
            flop_per_step=flop_per_step,
            bandwidth=bandwidth,
            cpu=cpu,
            mode=mode,
            batch=batch,
            cache_bytes=cache_bytes,
            command=command,
            script=script,
            amd=amd,
            kineto=kineto,
        ),
        phase=a.phase,
        host_ms=a.host_ms,
        gpu_span_ms=a.gpu_span_ms,
        gpu_busy_ms=a.gpu_busy_ms,
        kernel_busy_pct=a.kernel_busy_pct,
        memops_per_step=a.memops_per_step,
        memops_ms_per_step=a.memops_ms_per_step,
        graph_replays_per_step=a.graph_replays_per_step,
        syncs_per_step=a.syncs_per_step,
        syncs_ms_per_step=a.syncs_ms_per_step,
        other_busy_ms_per_step=a.other_busy_ms_per_step,
        layer_period=a.layer_period,
        step_period=a.step_period,
    )


def steps_from_script(
    entry: RecordEntry, *, bandwidth: Bandwidth | None, cpu: bool, cache_bytes: int | None = None
) -> DecodeSteps:
    ms = [s * 1e3 for s in entry.step_seconds]
    stats = MsStats(
        median=round(statistics.median(ms), 6),
        p90=round(_quantile(ms, 0.9), 6),
        min=round(min(ms), 6),
        max=round(max(ms), 6),
    )
    floor = None
    if bandwidth is not None:
        floor = memory_floor(entry.bytes_per_step_floor, bandwidth.tbps, bandwidth.basis, stats.median)
    return DecodeSteps(
        source="script",
        step_range=entry.ranges.get("step") or "decode_step",
        count=len(ms),
        step_ms=stats,
        kernels_per_step=None,
        gpu_busy_pct=None,
        idle_ms_per_step=None,
        top_kernels=[],
        floor=floor,
        verdict=verdict(stats, None, floor=floor, cpu=cpu, cache_bytes=cache_bytes),
        phase="decode",
    )


# ------------------------------------------------------------------------ lessons

_KIND_WORDS = {
    "host-bound": "host-bound: the GPU waits for the host",
    "copy-bound": "bound by its memory copies",
    "communication-bound": "communication-bound",
    "near-memory-floor": "at the memory floor",
    "memory-bound": "memory-bound, far from the floor",
    "compute-bound": "compute-bound",
    "busy": "busy, with no floor that bounds it",
    "no-trace": "a step whose cause needs a trace",
}


def story(mode: DecodeMode, group: StepGroup | None, cpu: bool) -> str:
    """The sentence a person wants: step, floor, idle share, verdict, what to try."""
    s = mode.steps
    parts = [f"{mode.mode}, batch {mode.batch}: the decode step takes {_ms_text(s.step_ms.median)}"]
    if s.floor is not None:
        parts.append(
            f"the memory floor on this {'CPU' if cpu else 'GPU'} is {_ms_text(s.floor.floor_ms)} ({s.floor.basis})"
        )
    if group is not None:
        m = median_step(group)
        idle = idle_pct(group)
        if cpu:
            parts.append(f"the CPU runs no op {units.percent(idle)} of the step")
        elif m.idle_ns:
            parts.append(f"the GPU sits idle {units.percent(idle)} of the step ({idle_parts(m)})")
        else:
            parts.append("the GPU never sits idle in it")
    kind = s.verdict.kind
    words = ("bound by per-op overhead" if cpu else "launch-bound") if kind == "launch-bound" else _KIND_WORDS[kind]
    return f"{', '.join(parts)}: this is {words}; next: {s.verdict.next_step}."


def compare_modes(modes: list[DecodeMode], groups: list[StepGroup | None]) -> list[str]:
    """Graphs against eager at each batch, in words that follow which one was faster."""
    out = []
    by_key = {(m.mode, m.batch): (m, g) for m, g in zip(modes, groups, strict=True)}
    for (name, batch), (graphs, _g) in by_key.items():
        if name != "graphs" or ("eager", batch) not in by_key:
            continue
        eager, eg = by_key[("eager", batch)]
        e_ms, g_ms = eager.steps.step_ms.median, graphs.steps.step_ms.median
        if e_ms <= 0 or g_ms <= 0:
            continue
        if e_ms / g_ms >= FLAT_RATIO:
            text = (
                f"batch {batch}: graphs {_ms_text(g_ms)} against eager {_ms_text(e_ms)} per step "
                f"({units.ratio(e_ms / g_ms)} faster); the same kernels, launched by one graph replay"
            )
            if eager.steps.idle_ms_per_step is not None and eg is not None:
                text += (
                    f": eager idles {_ms_text(eager.steps.idle_ms_per_step.between_kernels)} between kernels "
                    "in each step, the cost of launching them one by one from Python"
                )
        else:
            text = (
                f"batch {batch}: graphs {_ms_text(g_ms)} against eager {_ms_text(e_ms)} per step: the graph "
                "does not make this step faster, so launching its kernels is not what bounds it"
            )
        out.append(text + ".")
    return out


def sweep_lesson(sweep: list[BatchPoint], mode: str) -> list[str]:
    """What the batch sweep shows, in words that follow whether tokens/s rose or fell."""
    first, last = sweep[0], sweep[-1]
    if first.tokens_per_s <= 0 or first.step_ms <= 0 or last.batch == first.batch:
        return []
    gain = last.tokens_per_s / first.tokens_per_s
    growth = last.step_ms / first.step_ms
    batches = last.batch / first.batch
    head = (
        f"{mode}, batch {first.batch} -> {last.batch}: {units.sig(first.tokens_per_s)} -> "
        f"{units.sig(last.tokens_per_s)} tokens/s ({units.ratio(gain)}) while the step grows {units.ratio(growth)}"
    )
    if gain >= FLAT_RATIO:
        why = "one step reads the weights once for every sequence in the batch"
    elif gain > 1 / FLAT_RATIO:
        why = (
            f"the step grew about as fast as the batch ({units.ratio(batches)}): each sequence costs as much as a "
            "batch of one, so reading the weights is not what bounds the step"
        )
    else:
        why = (
            f"tokens/s fell: the step grew more than the batch did ({units.ratio(batches)}), so larger batches cost "
            "more than they give here (compute, or too few threads, bounds the step, not reading the weights)"
        )
    return [f"{head}: {why}."]


def crossover_lesson(record: DecodeRecord, bandwidth: Bandwidth | None, cross: float | None, ridge: float) -> str:
    context = f"a mean context of {units.sig(record.prompt_len + (record.tokens + 1) / 2)} positions"
    assert bandwidth is not None
    if cross is None:
        return (
            f"At {context} decode never leaves the memory roof on this GPU: the KV cache grows with the "
            f"batch as fast as the FLOPs, and FLOP per byte stays below the ridge point of {units.sig(ridge)} "
            f"({bandwidth.peak_label})."
        )
    return (
        f"Decode stops being memory-bound at batch {math.ceil(cross)} on this GPU (at {context}): there "
        f"FLOP per byte reaches the ridge point, {units.sig(bandwidth.peak_tflops or 0)} TFLOP/s / "
        f"{units.tbps_value(bandwidth.tbps)} TB/s = {units.sig(ridge)} FLOP per byte ({bandwidth.peak_label})."
    )


def floor_lesson(record: DecodeRecord, bandwidth: Bandwidth, cpu: bool) -> str:
    entry = record.modes[0] if record.modes else None
    if entry is None:
        return ""
    kv = entry.kv_cache_bytes_per_step
    return (
        f"The floor: a step must read every weight once and the live KV cache ("
        f"{units.gigabytes(entry.weight_bytes_per_step)} + {units.gigabytes(kv)} at batch {entry.batch}); "
        f"divided by {units.tbps_value(bandwidth.tbps)} TB/s, the {bandwidth.label}"
        + (" (the CPU's memory, measured by a sweep)" if cpu and bandwidth.basis == "measured" else "")
        + "."
    )
