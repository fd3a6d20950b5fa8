"""A step's GPU projection: which GPU operations are a step's, its window, and why the GPU
sat idle in it.

Which operations a step owns (`attribute`):
- `launch`: the operation's launch call (same correlation id, from any thread of the
  process) lies inside the step's host range; every kernel a graph launch replays
  shares its correlation id, and so its step. An operation whose launch is not in the
  trace belongs to no step.
- `projection` (nsys without cuda_api_trace): the operations inside the range's GPU
  projection (nvtx_gpu_proj_trace).
- `window` (nsys with NVTX ranges alone): the operations that start between the step's
  host start and the next step's (approximate).

A step's figures (`timing`), with its host range [h0, h1] and its own operations from
the first's start g0 to the last's end g1 (its GPU span):
- its window: from h0 (or, tiled, from where the previous step's window ended, if its
  work was queued behind it) to the later of h1 and g1. A host range that ended before
  g0 means the host ran ahead: the time before g0 is not the step's (unless it was
  queued behind the previous step), and the window starts at g0.
- idle (no GPU work of any step) inside the window, by cause: `waiting_for_host` while
  the host range was open before g0, and inside the span while the host was blocked in
  one of the step's synchronisations or the GPU ran nothing for `verdicts.HOST_GAP_MS`
  or more (`host_gaps`: no launch takes that long; both together `span_wait`);
  `between_kernels` the rest inside the span (launch gaps); `before_first` the rest
  before g0; `after_last` after g1.
- busy: the union of its own operations (kernels and memory operations), and of its
  kernels alone; `other_busy` the time only other work ran. So busy + other_busy + the
  four idle parts = the window, per step, in integer nanoseconds.
- its synchronisations (host calls that block, begun inside its host range on its
  process) and graph replays (graph launches whose operations are its own).
"""

from __future__ import annotations

import bisect
import operator
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress, islice, pairwise, repeat
from typing import Any, Literal

from nsightlab.analysis.engine_ranges import HostRange
from nsightlab.analysis.optable import KERNEL, OpTable
from nsightlab.analysis.stepmodels import Phase, StepTiming
from nsightlab.analysis.verdicts import HOST_GAP_MS
from nsightlab.parse.apicalls import is_graph_launch, is_sync_call
from nsightlab.parse.names import puts_work_on_gpu

Attribution = Literal["launch", "projection", "window", "cpu-range"]

_LAUNCHES, _GRAPH, _SYNC = (operator.itemgetter(i) for i in range(3))
# Step ranges tried, backwards from the latest one begun, for a launch inside overlapping
# step ranges.
_OVERLAP_LOOKBACK = 4
# Before any time (below int64 ns): where a step's union begins, so its first interval opens it.
_NONE = -(2**64)
# Runs of launch times in order shorter than this are attributed one operation at a time.
_SHORT_RUN = 8
_HOST_GAP_NS = round(HOST_GAP_MS * 1e6)


@dataclass(frozen=True, slots=True)
class HostCall:
    """A host API call that blocks the host (a synchronisation or a blocking copy). ns."""

    name: str
    start: int
    end: int
    pid: object = None


@dataclass
class HostCalls:
    """The host's runtime and driver API calls, as a step analysis needs them: the launch
    time of each correlation id, which correlation ids are graph launches, and the calls
    that block the host. Feed `add` every call (any order)."""

    launch_of: dict[int, int] = field(default_factory=dict)
    launches: int = 0  # how many launch calls `launch_of` held when it was let go after the join
    graph_launches: dict[int, int] = field(default_factory=dict)
    syncs: list[HostCall] = field(default_factory=list)
    _kinds: dict[str, tuple[bool, bool, bool]] = field(default_factory=dict, repr=False)

    def add(self, name: str, start: int, end: int, corr: int | None, pid: object = None) -> None:
        kinds = self._kinds.get(name)
        if kinds is None:  # what a call does is decided once per name
            kinds = self._kinds[name] = (puts_work_on_gpu(name), is_graph_launch(name), is_sync_call(name))
        launches, graph, sync = kinds
        if corr is not None and launches:
            self.launch_of[corr] = start
            if graph:
                self.graph_launches[corr] = start
        if sync:
            self.syncs.append(HostCall(name, start, end, pid))

    def extend(
        self,
        names: Sequence[str],
        starts: Sequence[int],
        ends: Sequence[int],
        corrs: Sequence[int | None],
        pids: Sequence[object],
    ) -> None:
        """`add` for many calls at once (columns of equal length), in loops that run in C."""
        kinds = self._kinds
        for name in [n for n in dict.fromkeys(names) if n not in kinds]:
            kinds[name] = (puts_work_on_gpu(name), is_graph_launch(name), is_sync_call(name))
        per_call = list(map(kinds.__getitem__, names))
        launches = list(map(_LAUNCHES, per_call))
        if None in corrs:
            launches = list(map(operator.and_, launches, map(operator.is_not, corrs, repeat(None))))
        self.launch_of.update(zip(compress(corrs, launches), compress(starts, launches), strict=True))  # type: ignore[arg-type]
        graphs = list(map(operator.and_, launches, map(_GRAPH, per_call)))
        if any(graphs):
            self.graph_launches.update(zip(compress(corrs, graphs), compress(starts, graphs), strict=True))  # type: ignore[arg-type]
        syncs = list(map(_SYNC, per_call))
        if any(syncs):
            for name, start, end, pid in compress(zip(names, starts, ends, pids, strict=True), syncs):
                self.syncs.append(HostCall(name, start, end, pid))


# ------------------------------------------------------------------ attribution


def attribute(ops: OpTable, steps: Sequence[HostRange], how: Attribution) -> array[int]:
    """The step index of every operation (-1: none), `steps` sorted by start."""
    step_of = array("l", [-1]) * len(ops)
    starts = [r.start for r in steps]
    if how in ("launch", "cpu-range"):
        _by_launch(ops.launch, starts, [r.end for r in steps], step_of)
    elif how == "projection":
        projected = sorted((r.proj_start, r.proj_end, k) for k, r in enumerate(steps) if r.proj_start is not None)
        pstarts = [p[0] for p in projected]
        for i in range(len(ops)):
            a, b = ops.start[i], ops.end[i]
            j = bisect.bisect_right(pstarts, a) - 1
            for k in range(j, max(j - _OVERLAP_LOOKBACK, -1), -1):
                _ps, pe, step = projected[k]
                if pe is not None and b <= pe:
                    step_of[i] = step
                    break
    else:
        for i in range(len(ops)):
            a = ops.start[i]
            s = bisect.bisect_right(starts, a) - 1
            if s < 0:
                continue
            limit = starts[s + 1] if s + 1 < len(starts) else steps[s].end
            if a < limit:
                step_of[i] = s
    return step_of


def _by_launch(launch: Sequence[int], starts: list[int], ends: list[int], step_of: array[int]) -> None:
    """`step_of` by launch time: an operation is the latest step's begun at or before its
    launch, unless that step ended before it; a few earlier ones are tried for overlapping
    step ranges (a launch time below 0: no launch, no step).

    Operations come in GPU start order, and their launches (almost) in the same order: in
    each run of non-decreasing launch times, the operations launched between two steps'
    starts are one slice, and those a step (or an earlier one) holds a prefix of it, each
    found by a bisect, so the work is per slice, not per operation."""
    n = len(launch)
    descents = compress(range(1, n), map(operator.gt, launch, islice(launch, 1, None)))
    for lo, hi in pairwise([0, *descents, n]):
        if hi - lo < _SHORT_RUN:  # one by one
            for i in range(lo, hi):
                t = launch[i]
                if t >= 0:
                    s = bisect.bisect_right(starts, t) - 1
                    for k in range(s, max(s - _OVERLAP_LOOKBACK, -1), -1):
                        if ends[k] >= t:
                            step_of[i] = k
                            break
            continue
        p = bisect.bisect_left(launch, 0, lo, hi)
        while p < hi:
            s = bisect.bisect_right(starts, launch[p]) - 1
            q = bisect.bisect_left(launch, starts[s + 1], p, hi) if s + 1 < len(starts) else hi
            for k in range(s, max(s - _OVERLAP_LOOKBACK, -1), -1):
                r = bisect.bisect_right(launch, ends[k], p, q)  # launched by the step's end
                if r > p:
                    step_of[p:r] = array("l", [k]) * (r - p)
                    p = r
            p = q


# ------------------------------------------------------------------ accumulation


@dataclass
class StepAcc:
    """Running figures of one step while its operations go by in start order."""

    name: str
    cpu_start: int | None
    cpu_end: int | None
    group: str | None
    phase: Phase = "unknown"
    pid: object = None
    next_start: int | None = None  # inferred steps: where the next step's work begins
    count: int = 0
    kernels: int = 0
    memops: int = 0
    memops_ns: int = 0
    first: int | None = None
    last_end: int | None = None
    busy: int = 0
    kernel_busy: int = 0
    graphs: set[int] = field(default_factory=set)
    graph_ops: int = 0
    ops: array[int] = field(default_factory=lambda: array("l"))  # its operations' rows, in start order

    def kernel_time(self, table: OpTable) -> Counter[int]:
        """Its kernels' time by name id (names in the order its kernels first ran)."""
        by_name: Counter[int] = Counter()
        start, end, kind, name = table.start, table.end, table.kind, table.name
        for i in self.ops:
            if kind[i] == KERNEL:
                by_name[name[i]] += end[i] - start[i]
        return by_name


def accumulate(ops: OpTable, accs: list[StepAcc], step_of: Sequence[int], graph_corrs: set[int]) -> None:
    """Fill each step's figures from its operations (ops in start order): their rows,
    count, first start and last end, the running unions of all its operations and of its
    kernels, its memory operations and graph replays. (Its kernels' time by name is
    counted for the steps that need it, `StepAcc.kernel_time`: per operation here it was
    half the time.)

    A step's operations come in runs of consecutive rows (its launches are together, and
    the GPU runs them in that order): a run's rows, count and last end are taken at once,
    and its unions in a loop whose state is local."""
    start, end, kind, corr = ops.start, ops.end, ops.kind, ops.corr
    rows: list[list[int]] = [[] for _ in accs]
    # each step's open segment of its operations' union, and of its kernels' (none yet:
    # the first interval begins one)
    cur = [(_NONE, _NONE, _NONE, _NONE)] * len(accs)
    n = len(step_of)
    cuts = compress(range(1, n), map(operator.ne, step_of, islice(step_of, 1, None)))
    for lo, hi in pairwise([0, *cuts, n]):
        s = step_of[lo]
        if s < 0:
            continue
        acc = accs[s]
        rows[s].extend(range(lo, hi))
        last = max(end[lo:hi])
        if acc.count == 0:
            acc.first, acc.last_end = start[lo], last
        elif last > acc.last_end:  # type: ignore[operator]
            acc.last_end = last
        c0, c1, k0, k1 = cur[s]
        busy = kernel_busy = memops = memops_ns = 0
        for a, b, k in zip(start[lo:hi], end[lo:hi], kind[lo:hi], strict=True):
            if a <= c1:
                if b > c1:
                    c1 = b
            else:
                busy += c1 - c0
                c0, c1 = a, b
            if k == KERNEL:
                if a <= k1:
                    if b > k1:
                        k1 = b
                else:
                    kernel_busy += k1 - k0
                    k0, k1 = a, b
            else:
                memops += 1
                memops_ns += b - a
        cur[s] = c0, c1, k0, k1
        acc.busy += busy
        acc.kernel_busy += kernel_busy
        acc.count += hi - lo
        acc.kernels += hi - lo - memops
        acc.memops += memops
        acc.memops_ns += memops_ns
        if graph_corrs:
            replays = [c for c in corr[lo:hi] if c in graph_corrs]
            acc.graphs.update(replays)
            acc.graph_ops += len(replays)
    for s, acc in enumerate(accs):
        acc.ops = array("l", rows[s])
        c0, c1, k0, k1 = cur[s]
        acc.busy += c1 - c0
        acc.kernel_busy += k1 - k0


# ------------------------------------------------------------------------ timing


def _merged(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


class SyncIndex:
    """The blocking calls, found by the host range they begin in."""

    def __init__(self, syncs: Sequence[HostCall]) -> None:
        self.calls = sorted(syncs, key=lambda c: c.start)
        self.starts = [c.start for c in self.calls]

    def within(self, start: int, end: int, pid: object) -> list[HostCall]:
        lo = bisect.bisect_left(self.starts, start)
        hi = bisect.bisect_left(self.starts, end)
        return [c for c in self.calls[lo:hi] if pid is None or c.pid is None or c.pid == pid]


def timing(index: int, acc: StepAcc, ops: OpTable, after: int | None, syncs: Sequence[HostCall]) -> StepTiming:
    """One step's window and figures (module docstring); `after`: where the previous
    step's window ended when windows are tiled, else None."""
    union = ops.union
    h0, h1 = acc.cpu_start, acc.cpu_end
    sync_ns = sum(c.end - c.start for c in syncs)
    longest = max(syncs, key=lambda c: c.end - c.start, default=None)
    common: dict[str, Any] = {
        "index": index,
        "name": acc.name,
        "cpu_start_ns": h0,
        "cpu_end_ns": h1,
        "phase": acc.phase,
        "syncs": len(syncs),
        "sync_ns": sync_ns,
    }
    if acc.count == 0 or acc.first is None or acc.last_end is None:
        assert h0 is not None and h1 is not None
        other = union.busy_within(h0, h1)
        return StepTiming(
            **common,
            window_start_ns=h0,
            window_end_ns=h1,
            gpu_start_ns=None,
            gpu_end_ns=None,
            kernels=0,
            busy_ns=0,
            other_busy_ns=other,
            idle_before_first_ns=0,
            idle_between_kernels_ns=0,
            idle_after_last_ns=0,
            idle_waiting_for_host_ns=(h1 - h0) - other,
        )
    first, last = acc.first, acc.last_end
    if h0 is None or h1 is None:
        w0 = first
    elif h1 > first:  # the host range was still open when the step's GPU work began
        w0 = min(first, h0 if after is None else max(h0, after))
    elif after is not None and after >= h0:  # the host ran ahead, the work queued behind the previous step's
        w0 = min(first, after)
    else:  # the host ran ahead: the time before the step's work is not the step's
        w0 = first
    w1 = last if h1 is None else max(h1, last)
    if acc.next_start is not None:
        w1 = max(w1, acc.next_start)
    idle_before = (first - w0) - union.busy_within(w0, first)
    waiting = 0
    if h0 is not None and h1 is not None:
        a, b = max(w0, h0), min(first, h1)
        if b > a:
            waiting = (b - a) - union.busy_within(a, b)
    before = idle_before - waiting
    between = (last - first) - union.busy_within(first, last)
    blocking = _merged([(c.start, c.end) for c in syncs])
    sync_idle = in_span = 0
    for s0, s1 in blocking:
        a, b = max(s0, w0), min(s1, w1)
        if b > a:
            sync_idle += (b - a) - union.busy_within(a, b)
        a, b = max(s0, first), min(s1, last)
        if b > a:
            in_span += (b - a) - union.busy_within(a, b)
    host_gaps = 0
    for g0, g1 in union.gaps_within(first, last, _HOST_GAP_NS):
        host_gaps += (g1 - g0) - sum(max(0, min(g1, s1) - max(g0, s0)) for s0, s1 in blocking)
    in_span += host_gaps
    between -= in_span
    waiting += in_span
    after_last = (w1 - last) - union.busy_within(last, w1)
    other = (w1 - w0) - before - between - after_last - waiting - acc.busy
    return StepTiming(
        **common,
        window_start_ns=w0,
        window_end_ns=w1,
        gpu_start_ns=first,
        gpu_end_ns=last,
        kernels=acc.kernels,
        busy_ns=acc.busy,
        other_busy_ns=other,
        idle_before_first_ns=before,
        idle_between_kernels_ns=between,
        idle_after_last_ns=after_last,
        idle_waiting_for_host_ns=waiting,
        sync_idle_ns=sync_idle,
        span_wait_ns=in_span,
        host_gaps_ns=host_gaps,
        memops=acc.memops,
        memops_ns=acc.memops_ns,
        kernel_busy_ns=acc.kernel_busy,
        graph_replays=len(acc.graphs),
        graph_kernels=acc.graph_ops,
        longest_sync=longest.name if longest is not None else None,
        longest_sync_ns=(longest.end - longest.start) if longest is not None else 0,
    )
