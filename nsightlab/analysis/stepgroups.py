"""Steps into groups, and a group's anatomy: one group per enclosing range and phase
(`mode:eager > batch:8`, decode; a prefill among decodes is a group of its own), its
distributions over steps, and everything "per step" taken from its median step, so that
a row's parts add up to its time.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from nsightlab.analysis.optable import OpTable, ms, pct
from nsightlab.analysis.projection import StepAcc, SyncIndex, accumulate, timing
from nsightlab.analysis.stepmodels import (
    IdleMs,
    KindShare,
    MsStats,
    Phase,
    StepAnatomy,
    StepGroup,
    StepSource,
    StepTimeline,
    StepTiming,
    TimelineOp,
    TopKernel,
)
from nsightlab.parse.names import short_kernel_name, step_kernel_kind

# How many kernels the top-kernel table lists.
TOP_KERNELS = 10
# The most operations a step's timeline keeps (a picture needs no more).
TIMELINE_MAX_OPS = 4000


@dataclass
class Inferred:
    """What the kernel sequence said about inferred steps (periods in GPU operations)."""

    step_period: int | None
    layer_period: int | None


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    h = (len(sorted_values) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


def ms_stats(values_ns: Sequence[int]) -> MsStats | None:
    """median (the lower middle value: a measured one), interpolated p90, min, max; ms."""
    if not values_ns:
        return None
    ordered = sorted(values_ns)
    return MsStats(
        median=ms(ordered[(len(ordered) - 1) // 2]),
        p90=ms(_quantile(ordered, 0.9)),
        min=ms(ordered[0]),
        max=ms(ordered[-1]),
    )


def median_index(timings: Sequence[StepTiming]) -> int:
    """The position of the median step (by window; the lower middle one, earlier first)."""
    order = sorted(range(len(timings)), key=lambda k: (timings[k].window_ns, k))
    return order[(len(order) - 1) // 2]


def _anatomy(
    by_name: Counter[int],
    timings: Sequence[StepTiming],
    pick: int,
    ops: OpTable,
    source: StepSource,
    step_range: str | None,
    phase: Phase,
    inferred: Inferred | None,
    notes: list[str],
) -> tuple[StepAnatomy, list[KindShare]]:
    """A group's anatomy: distributions over `timings`, the rest from `timings[pick]`
    (the median step) and its kernels' time by name (`by_name`)."""
    m = timings[pick]
    window = m.window_ns
    kinds: Counter[str] = Counter()
    for nid, ns in by_name.items():
        kinds[step_kernel_kind(ops.names[nid])] += ns
    top = [
        TopKernel(
            name=ops.names[nid],
            short_name=short_kernel_name(ops.names[nid]),
            kind=step_kernel_kind(ops.names[nid]),
            ms_per_step=ms(ns),
            pct=pct(ns, window),
        )
        for nid, ns in sorted(by_name.items(), key=lambda kv: (-kv[1], ops.names[kv[0]]))[:TOP_KERNELS]
    ]
    hosts = [t.cpu_end_ns - t.cpu_start_ns for t in timings if t.cpu_start_ns is not None and t.cpu_end_ns is not None]
    spans = [t.gpu_end_ns - t.gpu_start_ns for t in timings if t.gpu_start_ns is not None and t.gpu_end_ns is not None]
    step_ms = ms_stats([t.window_ns for t in timings])
    assert step_ms is not None
    anatomy = StepAnatomy(
        source=source,
        step_range=step_range,
        count=len(timings),
        step_ms=step_ms,
        kernels_per_step=m.kernels,
        gpu_busy_pct=pct(m.busy_ns, window),
        idle_ms_per_step=IdleMs(
            between_kernels=ms(m.idle_between_kernels_ns),
            before_first=ms(m.idle_before_first_ns),
            after_last=ms(m.idle_after_last_ns),
            waiting_for_host=ms(m.idle_waiting_for_host_ns),
        ),
        top_kernels=top,
        notes=notes,
        phase=phase,
        host_ms=ms_stats(hosts),
        gpu_span_ms=ms_stats(spans),
        gpu_busy_ms=ms_stats([t.kernel_busy_ns for t in timings]),
        kernel_busy_pct=pct(m.kernel_busy_ns, window),
        memops_per_step=m.memops,
        memops_ms_per_step=ms(m.memops_ns),
        graph_replays_per_step=m.graph_replays,
        syncs_per_step=m.syncs,
        syncs_ms_per_step=ms(m.sync_ns),
        other_busy_ms_per_step=ms(m.other_busy_ns),
        layer_period=inferred.layer_period if inferred else None,
        step_period=inferred.step_period if inferred else None,
    )
    shares = [
        KindShare(kind=k, ms_per_step=ms(ns), pct=pct(ns, window))  # type: ignore[arg-type]
        for k, ns in sorted(kinds.items(), key=lambda kv: -kv[1])
    ]
    return anatomy, shares


def _queued(t: StepTiming) -> bool:
    """Whether a step whose window was moved to where the previous one's ended had its
    work queued behind it: its host range had closed by then (all launched), or the GPU ran
    other work most of the time before the step's first operation. Not when the host was
    still in the step and the GPU idle: then the step waited for its host."""
    assert t.gpu_start_ns is not None
    if t.cpu_end_ns is not None and t.cpu_end_ns <= t.window_start_ns:
        return True
    before = t.gpu_start_ns - t.window_start_ns
    idle = t.idle_before_first_ns + (t.idle_waiting_for_host_ns - t.span_wait_ns)
    return idle * 2 < before


def build_groups(
    ops: OpTable,
    accs: list[StepAcc],
    step_of: Sequence[int],
    source: StepSource,
    step_range: str | None,
    notes: list[str],
    *,
    tile: bool = False,
    syncs: SyncIndex | None = None,
    graph_corrs: set[int] | None = None,
    inferred: Inferred | None = None,
) -> list[StepGroup]:
    """The step groups of steps whose operations `step_of` gives (accs in host order)."""
    accumulate(ops, accs, step_of, graph_corrs or set())
    timings: list[StepTiming] = []
    queued = 0
    last_end: int | None = None
    for i, acc in enumerate(accs):
        after = last_end if tile else None
        mine = (
            syncs.within(acc.cpu_start, acc.cpu_end, acc.pid)
            if syncs is not None and acc.cpu_start is not None and acc.cpu_end is not None
            else []
        )
        t = timing(i, acc, ops, after, mine)
        if (
            acc.cpu_start is not None
            and t.gpu_start_ns is not None
            and acc.cpu_start < t.window_start_ns < t.gpu_start_ns
            and _queued(t)
        ):
            queued += 1
        timings.append(t)
        if acc.count:
            last_end = t.window_end_ns
    step_notes = list(notes)
    if queued:
        step_notes.append(
            f"{queued} step(s) had their GPU work queued behind the previous step's (the host ran ahead of "
            "the GPU): their windows begin where the previous step's ended, the step's own time on the "
            "GPU, as CUDA events recorded around it measure it"
        )
    overlaps = sum(1 for a, b in itertools.pairwise(timings) if a.window_end_ns > b.window_start_ns)
    if overlaps:
        step_notes.append(
            f"{overlaps} step window(s) overlap the next step's: the GPU ran behind the host; kernels count in "
            "the step whose range launched them"
        )
    empty = [t.name for t, acc in zip(timings, accs, strict=True) if acc.count == 0]
    if empty:
        named = ", ".join(dict.fromkeys(empty[:3]))
        step_notes.append(
            f"{len(empty)} step range(s) launched no GPU work (e.g. {named}): left out of the steps "
            "(a range with nothing on the GPU is no step to time)"
        )
    keys: list[tuple[str | None, Phase]] = []
    for acc in accs:
        if acc.count and (acc.group, acc.phase) not in keys:
            keys.append((acc.group, acc.phase))
    groups: list[StepGroup] = []
    for label, phase in keys:
        members = [i for i, acc in enumerate(accs) if acc.count and (acc.group, acc.phase) == (label, phase)]
        rows = [timings[i] for i in members]
        pick = median_index(rows)
        by_name = accs[members[pick]].kernel_time(ops)
        anatomy, kinds = _anatomy(by_name, rows, pick, ops, source, step_range, phase, inferred, step_notes)
        group = StepGroup(
            group=label,
            anatomy=anatomy,
            period=inferred.step_period if inferred else None,
            kinds=kinds,
            steps=rows,
            median_step=pick,
        )
        group.timeline = timeline(ops, step_of, members, timings, pick)
        groups.append(group)
    return groups


def timeline(
    ops: OpTable, step_of: Sequence[int], members: Sequence[int], timings: Sequence[StepTiming], pick: int
) -> StepTimeline | None:
    """The group's median step with every operation overlapping its window, times from
    the window's start."""
    if not members:
        return None
    index = members[pick]
    t = timings[index]
    w0, w1 = t.window_start_ns, t.window_end_ns
    hi = bisect.bisect_left(ops.start, w1)
    lo = bisect.bisect_left(ops.start, w0)
    # an operation that started before the window may still run into it
    first = lo
    for i in range(lo - 1, max(lo - 64, -1), -1):
        if ops.end[i] > w0:
            first = i
    chosen = [i for i in range(first, hi) if ops.end[i] > w0 or ops.start[i] >= w0]
    truncated = len(chosen) > TIMELINE_MAX_OPS
    chosen = chosen[:TIMELINE_MAX_OPS]
    streams: dict[int, int] = {}
    out: list[TimelineOp] = []
    for i in chosen:
        name = ops.names[ops.name[i]]
        out.append(
            TimelineOp(
                start_ns=ops.start[i] - w0,
                end_ns=ops.end[i] - w0,
                name=name,
                short_name=short_kernel_name(name),
                kind=step_kernel_kind(name),
                stream=streams.setdefault(ops.stream[i], len(streams)),
                own=step_of[i] == index,
            )
        )
    return StepTimeline(
        step=pick,
        name=t.name,
        window_ns=w1 - w0,
        cpu_start_ns=None if t.cpu_start_ns is None else t.cpu_start_ns - w0,
        cpu_end_ns=None if t.cpu_end_ns is None else t.cpu_end_ns - w0,
        streams=len(streams),
        ops=out,
        truncated=truncated,
    )
