"""The parts of a step's verdict in words that `decode_words.verdict` builds it from, for
any trace: the idle time by cause, a graph replay, the host's wait and synchronisations,
each from the measured values so that no sentence says what the numbers do not; what to
try next; and how a trace's operations were given to steps."""

from __future__ import annotations

from nsightlab import units
from nsightlab.analysis.stepmodels import StepTiming, TraceAnatomy
from nsightlab.analysis.verdicts import (
    HOST_BOUND_WAIT_PCT,
    HOST_GAP_MS,
    LAUNCH_BOUND_IDLE_PCT,
    NEAR_FLOOR_RATIO,
    host_wait_ns,
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


# A blocking call leads the advice when the GPU sat idle in the step's blocking calls at
# least this share of the host's wait: a call that waited for the GPU's own queued work
# blocked the host, but removing it would not shorten the step.
SYNC_LEADS = 0.1


def host_next_step(m: StepTiming, *, kineto: bool = False) -> str:
    """Where to look when the GPU waits for the host: the longest blocking call first
    when the GPU sat idle in the calls a good part of the wait (not 16 us of a 218 ms
    wait, nor a copy that waited 94 ms for the GPU's kernels); then the part of the step
    where the host kept it waiting longest. `kineto`: the trace is torch.profiler's, whose
    step ranges are `record_function` ranges (it records no NVTX)."""
    leads = m.syncs and m.sync_idle_ns >= SYNC_LEADS * host_wait_ns(m)
    first = f"start with the {m.longest_sync} that blocked the host {_ms(m.longest_sync_ns)}; then " if leads else ""
    gaps_lead = m.host_gaps_ns > max(m.idle_after_last_ns, m.idle_waiting_for_host_ns - m.host_gaps_ns)
    between = f"between its GPU operations (gaps of {HOST_GAP_MS:g} ms or more: input loading, CPU work, Python)"
    if m.cpu_end_ns is None:  # steps inferred from the operations: the trace shows no host
        mark = (
            '`with torch.profiler.record_function("step"):`'
            if kineto
            else 'an NVTX range, `with torch.cuda.nvtx.range("step"):` (from C or C++, `nvtxRangePushA("step")` ... '
            "`nvtxRangePop()`)"
        )
        where = f"in the step {between}" if gaps_lead else "between steps"
        return (
            f"{first}look at what the host does {where} (the trace has no host ranges: mark the step with "
            f"{mark}, and profile again, or give a range the trace has with --step-range), or py-spy on the "
            "process; a faster GPU step will not help until the host keeps the GPU fed"
        )
    if gaps_lead:
        where = between
    elif m.idle_after_last_ns > m.idle_waiting_for_host_ns:
        where = "after its GPU work ends (sampling, output processing, compiling, Python)"
    else:
        where = "before its GPU work begins (scheduling, input preparation, sampling, Python)"
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
