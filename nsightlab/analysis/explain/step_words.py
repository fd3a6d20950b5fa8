"""A step's verdict in words, for any trace: the sentence around `verdicts.decide`'s
decision, built from the measured values (the idle time by cause, a graph replay, the
host's synchronisations), so that no sentence says what the numbers do not; what to try
next; and how a trace's operations were given to steps."""

from __future__ import annotations

from collections.abc import Mapping

from nsightlab import units
from nsightlab.analysis.stepmodels import StepGroup, StepTiming, TraceAnatomy
from nsightlab.analysis.verdicts import (
    HOST_BOUND_WAIT_PCT,
    LAUNCH_BOUND_IDLE_PCT,
    NEAR_FLOOR_RATIO,
    Floor,
    Verdict,
    decide,
    host_wait_ns,
    thresholds,
)

RULE = (
    f"(thresholds: host-bound at >= {HOST_BOUND_WAIT_PCT:g}% waiting for the host; launch-bound at >= "
    f"{LAUNCH_BOUND_IDLE_PCT:g}% idle; at the floor within {NEAR_FLOOR_RATIO:g}x of it)"
)


def _ms(ns: int) -> str:
    return units.duration(ns / 1e9)


def counted(n: int, word: str, plural: str | None = None) -> str:
    """`1 synchronisation`, `3 synchronisations`; `2 launches` with its plural given."""
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


def idle_parts(m: StepTiming, kernels: str = "kernels") -> str:
    """The step's idle time by cause, largest first, the empty parts left out."""
    parts = [
        (m.idle_waiting_for_host_ns, "waiting for the host"),
        (m.idle_between_kernels_ns, f"between {kernels}"),
        (m.idle_before_first_ns, "before the first (queued behind the previous step)"),
        (m.idle_after_last_ns, "after the last"),
    ]
    shown = [f"{_ms(ns)} {what}" for ns, what in sorted(parts, key=lambda p: -p[0]) if ns > 0]
    return ", ".join(shown) or "none"


def graph_words(m: StepTiming) -> str:
    """'a graph replay (1 launch, 544 GPU operations)' when the step replays graphs."""
    if not m.graph_replays:
        return ""
    return f"a graph replay ({counted(m.graph_replays, 'launch', 'launches')}, {m.graph_kernels} GPU operations)"


def host_words(m: StepTiming) -> str:
    """How long the host blocked in the step's synchronisations, when it did."""
    if not m.syncs or m.longest_sync is None:
        return ""
    return (
        f"the host blocked {_ms(m.sync_ns)} in {counted(m.syncs, 'synchronisation')} "
        f"(longest: {m.longest_sync}, {_ms(m.longest_sync_ns)})"
    )


def host_next_step(m: StepTiming) -> str:
    """Where to look when the GPU waits for the host."""
    first = f"start with the {m.longest_sync} that blocked the host {_ms(m.longest_sync_ns)}; then " if m.syncs else ""
    if m.cpu_end_ns is None:  # steps inferred from the operations: the trace shows no host
        return (
            f"{first}look at what the host does between steps (the trace has no host ranges: mark the step with an "
            'NVTX range, `with torch.cuda.nvtx.range("step"):`, and profile again, or give a range the trace has '
            "with --step-range), or py-spy on the process; a faster GPU step will not help until the host keeps "
            "the GPU fed"
        )
    where = (
        "after its GPU work ends (sampling, output processing, compiling, Python)"
        if m.idle_after_last_ns > m.idle_waiting_for_host_ns
        else "before its GPU work begins (scheduling, input preparation, sampling, Python)"
    )
    return (
        f"{first}look at what the host does in the step {where}: the step's CPU ops in the trace (Perfetto), "
        "or py-spy on the process; a faster GPU step will not help until the host keeps the GPU fed"
    )


def host_wait_words(m: StepTiming, pct: str) -> str:
    """'5 ms for the host (40% of the step)' and, when some of it came after the step's GPU
    work, how much."""
    after = m.idle_after_last_ns
    if not after:
        tail = ""
    elif m.cpu_end_ns is None:
        tail = f"; {_ms(after)} of it after its last operation, nothing queued until the next step's first"
    else:
        tail = f"; {_ms(after)} of it after its last operation, the host still in the step"
    return f"{_ms(host_wait_ns(m))} for the host ({pct} of the step{tail})"


def launch_next_step(m: StepTiming, graph_advice: str) -> str:
    """What to try for a launch-bound step: a graph, unless it already is one."""
    if m.graph_replays:
        outside = m.kernels + m.memops - m.graph_kernels
        around = f"the {outside} GPU operations launched one by one around the replay, " if outside > 0 else ""
        return (
            "the step is a graph replay already: a graph removes the launches inside it, not "
            f"{around}the host's work between replays, or gaps between the graph's own kernels; "
            "capture more of the step in the graph, overlap the host's work with the replay, or fuse kernels"
        )
    return graph_advice


def step_verdict(
    group: StepGroup,
    *,
    floor: Floor | None = None,
    flop_per_step: float | None = None,
    ridge_flop_per_byte: float | None = None,
    kernel_bytes: Mapping[str, int] | None = None,
    cache_bytes: int | None = None,
) -> Verdict:
    """The verdict on one group of steps (decided by `decide`), in words for any trace.

    Memory-bound far from the floor names the kernels with the lowest achieved bandwidth
    when `kernel_bytes` (bytes per step, by full kernel name) is given, else the largest.
    """
    d = decide(
        group,
        floor=floor,
        flop_per_step=flop_per_step,
        ridge_flop_per_byte=ridge_flop_per_byte,
        cache_bytes=cache_bytes,
    )
    m = d.step
    step_ms = group.anatomy.step_ms.median
    floor_text = ""
    if floor is not None:
        floor_text = (
            f", the memory floor is {units.duration(floor.floor_ms / 1e3)} ({floor.basis} "
            f"{units.tbps_value(floor.bandwidth_tbps)} TB/s)"
        )
    head = f"the step takes {units.duration(step_ms / 1e3)}{floor_text}"
    graph = graph_words(m)
    if graph:
        head += f"; it is {graph}"
    advice = "capture the step in a CUDA graph, or launch fewer, fused kernels (torch.compile)"
    if d.kind == "host-bound":
        blocked = host_words(m)
        return Verdict(
            kind="host-bound",
            text=f"{head}; the GPU waited {host_wait_words(m, units.percent(d.wait_pct))}"
            f"{'; ' + blocked if blocked else ''}: host-bound {RULE}",
            next_step=host_next_step(m),
            thresholds=thresholds(),
        )
    if d.kind == "launch-bound":
        return Verdict(
            kind="launch-bound",
            text=f"{head}; the GPU sits idle {units.percent(d.idle_pct)} of the step ({idle_parts(m)}): "
            f"launch-bound {RULE}",
            next_step=launch_next_step(m, advice),
            thresholds=thresholds(),
        )
    if d.kind == "compute-bound" and d.intensity is not None and ridge_flop_per_byte is not None:
        return Verdict(
            kind="compute-bound",
            text=f"{head}; {units.sig(d.intensity)} FLOP per byte is above the GPU's ridge point of "
            f"{units.sig(ridge_flop_per_byte)}: compute-bound at this batch {RULE}",
            next_step="lower precision matrix math (FP8), or a smaller batch per GPU",
            thresholds=thresholds(),
        )
    busy = units.percent(100.0 * m.busy_ns / m.window_ns) if m.window_ns else "0%"
    if d.kind == "busy":
        why = (
            "the bytes a step reads fit in the cache, so the DRAM floor does not bound it"
            if d.cached
            else "no floor to compare with"
        )
        return Verdict(
            kind="busy",
            text=f"{head}; the GPU is busy {busy} of the step; {why} {RULE}",
            next_step="give the bytes moved per step (weights + KV cache) to compare with the memory floor"
            if not d.cached
            else "measure the step against a model too large for the cache, or look at its kernels with ncu",
            thresholds=thresholds(),
        )
    assert d.ratio is not None
    if d.kind == "near-memory-floor":
        return Verdict(
            kind="near-memory-floor",
            text=f"{head}; the step is {units.ratio(d.ratio)} the floor: the GPU's memory is the limit {RULE}",
            next_step="faster memory (another GPU), or a smaller / quantized model",
            thresholds=thresholds(),
        )
    if kernel_bytes:
        rates = []
        for k in group.anatomy.top_kernels:
            moved = kernel_bytes.get(k.name)
            if moved and k.ms_per_step > 0:
                rates.append((moved / (k.ms_per_step * 1e-3) / 1e12, k.short_name))
        rates.sort()
        named = ", ".join(f"{name} ({tbps:.2g} TB/s)" for tbps, name in rates[:3])
        which = f"lowest achieved bandwidth: {named}"
    else:
        named = ", ".join(
            f"{k.short_name} ({units.duration(k.ms_per_step / 1e3)})" for k in group.anatomy.top_kernels[:3]
        )
        which = f"largest kernels: {named}"
    return Verdict(
        kind="memory-bound",
        text=f"{head}; the GPU is busy {busy} of the step but the step is {units.ratio(d.ratio)} the floor: "
        f"memory-bound, far from the floor {RULE}; {which}",
        next_step="look at those kernels with ncu (memory throughput, achieved occupancy)",
        thresholds=thresholds(),
    )


def attribution_lines(anatomy: TraceAnatomy) -> list[str]:
    """How operations were attributed to steps, in words (for the notes)."""
    how = {
        "launch": (
            "kernels were attributed to steps by their launch"
            + (" (cuda_api_trace)" if anatomy.input == "nsys" else "")
            + ": each belongs to the step whose range holds the runtime call (CUDA or HIP) that launched it "
            "(matched by correlation id; a graph replay's kernels share the replay's)"
        ),
        "projection": (
            "kernels were attributed to steps by the GPU projection of each step's CPU range "
            "(nvtx_gpu_proj_trace: nsys projects a range onto the GPU work launched inside it, by "
            "launch correlation)"
        ),
        "window": "",  # said by the anatomy's own note ("approximate: ...")
        "cpu-range": "",  # said by the anatomy's own note on CPU ops
    }
    if anatomy.attribution is not None:
        if not how[anatomy.attribution]:
            return []
        return [how[anatomy.attribution]]
    if any(g.anatomy.source == "repeating-sequence" for g in anatomy.groups):
        return ["steps were inferred from a repeating kernel sequence: the trace has no step ranges nsightlab knows"]
    return []
