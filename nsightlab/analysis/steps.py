"""A decode step's anatomy from a GPU timeline: how long a step takes, how busy the GPU is
in it, where it sits idle, which kernels take the time, and what to try next.

Entry points (one per input kind):

    analyze_gpu_trace(["run_cuda_gpu_trace.csv", "run_nvtx_pushpop_trace.csv", ...],
                      step_range=None) -> TraceAnatomy        # nsys stats --format csv
    analyze_kineto("trace.json.gz", step_range=None) -> TraceAnatomy   # torch.profiler, vLLM
    verdicts.step_verdict(group, floor=verdicts.memory_floor(...)) -> Verdict

`TraceAnatomy` holds `trace` (the whole timeline: `span_ms` from the first GPU operation's
start to the last one's end, `gpu_busy_pct` the union of kernels AND memory copies/sets
over all streams, not their sum, `kernels`, `streams`) and `groups`: one `StepGroup` per
enclosing range (`mode:eager`, `mode:graphs`, `batch:8`; `group` None when steps have no
enclosing range). Each group's `anatomy` is the product's contract (`StepAnatomy`, keep
its keys): `{"source", "step_range", "count", "step_ms": {"median","p90","min","max"},
"kernels_per_step", "gpu_busy_pct", "idle_ms_per_step": {"between_kernels",
"before_first","after_last"}, "top_kernels": [{"name","short_name","kind","ms_per_step",
"pct"}], "notes"}`.

Which ranges are steps (`step_range`): ranges named NAME, or torch's numbered ranges
(`ProfilerStep#12` matches `ProfilerStep`); NVTX names match with or without their domain
(`:decode_step`). By default `decode_step`, else `ProfilerStep`; with neither, steps are
inferred from the kernel sequence (`source: repeating-sequence`, see `find_period`).

Which kernels belong to a step:
- Kineto: those whose launch (the `cuda_runtime`/`cuda_driver` call with the same
  correlation id, from ANY thread: autograd's backward thread included) lies inside the
  step's CPU range; every kernel a `cudaGraphLaunch` replays shares its correlation id and
  so its step. A GPU operation whose launch is not in the file (launched before the
  profile began) belongs to no step.
- nsys with `cuda_api_trace`: the same, the launch found through `CorrId`.
- nsys with `nvtx_gpu_proj_trace` but no `cuda_api_trace`: the operations inside the
  range's projected GPU interval (nsys projects a range over the work launched inside it
  on the same thread); work of another step running at the same time would be counted.
- nsys with only `nvtx_pushpop_trace`: no launch times at all; the operations that start
  between the step's CPU start and the next step's (an approximation, said in the notes).

A step's window runs from the earlier of its CPU start and its first kernel's start to the
later of its CPU end and its last kernel's end; with `tile=True` it begins no earlier than
the previous step's window ended (unless its own first kernel did), so that a step queued
behind the previous one on a GPU that runs behind the CPU is timed as CUDA events around
it time it. GPU work is attributed by launch, so when
the GPU lags the CPU a window can overlap the next step's; the notes say when it does.
Within a window: `busy` is the union of the step's own operations; idle is time when the
GPU ran nothing at all (other steps' work is not idle; it is `other_busy`), split into
`before_first` (window start to its first kernel), `between_kernels` and `after_last`.
So busy + other_busy + idle = window, per step, exactly (integer nanoseconds).

Memory: whole-trace figures are computed while the file streams by; steps need the
operations in compact arrays (about 60 bytes per GPU operation) and Kineto traces are
sorted by start in memory (their events are not in time order). An nsys file that is not
in start order is sorted the same way, with a note.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from array import array
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field

from nsightlab.analysis.intervals import IntervalUnion
from nsightlab.analysis.period import find_period
from nsightlab.errors import UsageError
from nsightlab.models import Model
from nsightlab.parse import gputrace, kineto
from nsightlab.parse.names import (
    StepKernelKind,
    puts_work_on_gpu,
    short_kernel_name,
    step_kernel_kind,
)
from nsightlab.parse.nsys_trace import CsvTrace, NsysTrace

# ---------------------------------------------------------------- named thresholds

# How many kernels the top-kernel table lists.
TOP_KERNELS = 10
# The most operations a step's timeline keeps (a picture needs no more).
TIMELINE_MAX_OPS = 4000

DEFAULT_STEP_RANGES = ("decode_step", "ProfilerStep")

StepSource = Literal["nvtx", "record_function", "repeating-sequence", "script"]

_KIND_CODES: dict[str, int] = {"kernel": 0, "memcpy": 1, "memset": 2}


# ------------------------------------------------------------------------- models


class _Model(Model):
    model_config = ConfigDict(extra="forbid")


class TraceSummary(_Model):
    """The whole timeline: first GPU op start to last GPU op end, all streams."""

    span_ms: float
    gpu_busy_pct: float
    kernels: int
    streams: int


class MsStats(_Model):
    median: float
    p90: float
    min: float
    max: float


class IdleMs(_Model):
    between_kernels: float
    before_first: float
    after_last: float


class TopKernel(_Model):
    """One kernel (all its calls in a step): time per step and share of the step time."""

    name: str
    short_name: str
    kind: StepKernelKind
    ms_per_step: float
    pct: float


class StepAnatomy(_Model):
    """The anatomy of one group of steps. This shape is a contract: keep its keys."""

    source: StepSource
    step_range: str | None
    count: int
    step_ms: MsStats
    kernels_per_step: float
    gpu_busy_pct: float
    idle_ms_per_step: IdleMs
    top_kernels: list[TopKernel]
    notes: list[str] = Field(default_factory=list)


class KindShare(_Model):
    kind: StepKernelKind
    ms_per_step: float
    pct: float


class StepTiming(_Model):
    """One step, in integer nanoseconds: busy_ns + other_busy_ns + the idle = window."""

    index: int
    name: str
    window_start_ns: int
    window_end_ns: int
    cpu_start_ns: int | None
    cpu_end_ns: int | None
    gpu_start_ns: int | None
    gpu_end_ns: int | None
    kernels: int
    busy_ns: int
    other_busy_ns: int
    idle_before_first_ns: int
    idle_between_kernels_ns: int
    idle_after_last_ns: int

    @property
    def window_ns(self) -> int:
        return self.window_end_ns - self.window_start_ns

    @property
    def idle_ns(self) -> int:
        return self.idle_before_first_ns + self.idle_between_kernels_ns + self.idle_after_last_ns


class TimelineOp(_Model):
    """One operation in a step's timeline: times in ns from the window's start; `own`
    when the step launched it (else another step's work, running at the same time)."""

    start_ns: int
    end_ns: int
    name: str
    short_name: str
    kind: StepKernelKind
    stream: int
    own: bool


class StepTimeline(_Model):
    """The operations of one step (the group's median step) on the time axis, for a
    picture of where its time goes: every operation that overlaps its window."""

    step: int  # index into the group's `steps`
    name: str
    window_ns: int
    cpu_start_ns: int | None  # the step's range, from the window's start
    cpu_end_ns: int | None
    streams: int
    ops: list[TimelineOp]
    truncated: bool = False  # more than TIMELINE_MAX_OPS overlapped the window


class StepGroup(_Model):
    """The steps under one enclosing range (or none): their anatomy, and each step."""

    group: str | None
    anatomy: StepAnatomy
    period: int | None = None
    kinds: list[KindShare]
    steps: list[StepTiming]
    timeline: StepTimeline | None = None


class TraceAnatomy(_Model):
    """What a trace says: the whole timeline, and the anatomy of its steps per group."""

    input: Literal["nsys", "kineto"]
    trace: TraceSummary
    groups: list[StepGroup]
    device_names: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    # "cpu": the trace holds no GPU work and the profiler's top-level CPU ops stand in
    # for kernels (threads for streams); every field keeps its name
    ops_are: Literal["gpu", "cpu"] = "gpu"
    # how operations were given to step ranges: by their launch call's correlation id,
    # inside the range's GPU projection (nvtx_gpu_proj_trace), by start time alone, or
    # where they ran (CPU ops); None when there were no ranges (steps inferred)
    attribution: Literal["launch", "projection", "window", "cpu-range"] | None = None


# ------------------------------------------------------------------ interval union


# ------------------------------------------------------------------- the op table


class _Ops:
    """GPU operations in compact parallel arrays, sorted by start once `seal()`ed."""

    def __init__(self) -> None:
        self.start = array("q")
        self.end = array("q")
        self.name = array("l")
        self.kind = array("b")
        self.stream = array("l")
        self.corr = array("q")
        self.launch = array("q")
        self.names: list[str] = []
        self.name_ids: dict[str, int] = {}
        self.stream_ids: dict[object, int] = {}
        self.union = IntervalUnion()
        self.kernels = 0

    def __len__(self) -> int:
        return len(self.start)

    @classmethod
    def from_columns(cls, cols: gputrace.GpuTraceColumns) -> _Ops:
        ops = cls()
        ops.start, ops.end, ops.name, ops.kind = cols.start, cols.end, cols.name, cols.kind
        ops.stream, ops.corr, ops.names = cols.stream, cols.corr, cols.names
        ops.stream_ids = {key: i for i, key in enumerate(cols.streams)}
        ops.kernels = cols.kernels
        if cols.launch is not None:
            ops.launch = cols.launch
        if cols.in_start_order:
            ops.union.extend(cols.start, cols.end)
        else:
            for a, b in zip(cols.start, cols.end, strict=True):
                ops.union.add(a, b)
        return ops

    def add(self, start: int, end: int, name: str, kind: str, stream: object, corr: int | None) -> None:
        nid = self.name_ids.get(name)
        if nid is None:
            nid = self.name_ids[name] = len(self.names)
            self.names.append(name)
        sid = self.stream_ids.get(stream)
        if sid is None:
            sid = self.stream_ids[stream] = len(self.stream_ids)
        self.start.append(start)
        self.end.append(end)
        self.name.append(nid)
        code = _KIND_CODES[kind]
        self.kind.append(code)
        if code == 0:
            self.kernels += 1
        self.stream.append(sid)
        self.corr.append(-1 if corr is None else corr)
        self.union.add(start, end)

    def seal(self) -> bool:
        """Finish the union and sort by start if needed; True when a sort was needed."""
        self.union.finish()
        if self.union.in_order:
            return False
        order = sorted(range(len(self.start)), key=self.start.__getitem__)
        attrs = ("start", "end", "name", "kind", "stream", "corr") + (("launch",) if len(self.launch) else ())
        for attr in attrs:
            old = getattr(self, attr)
            setattr(self, attr, array(old.typecode, [old[i] for i in order]))
        return True

    def set_launches(self, launch_of: Mapping[int, int]) -> int:
        """Launch time of every op from its correlation id; returns how many have none."""
        get = launch_of.get
        self.launch = array("q", [get(c, -1) if c >= 0 else -1 for c in self.corr])
        return self.launch.count(-1)

    def summary(self) -> TraceSummary:
        union = self.union
        span = union.span
        return TraceSummary(
            span_ms=_ms(span),
            gpu_busy_pct=_pct(union.busy, span),
            kernels=self.kernels,
            streams=len(self.stream_ids),
        )


def ops_streams(ops: _Ops) -> list[tuple[object, object]]:
    """The (device, stream) keys of the operations' streams, in order of appearance."""
    return [key for key in ops.stream_ids if isinstance(key, tuple)]


def _ms(ns: float) -> float:
    return round(ns / 1e6, 6)


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 3) if whole > 0 else 0.0


# ------------------------------------------------------------------------- ranges


@dataclass
class _Range:
    """A CPU range (NVTX push/pop or record_function), optionally with its projection."""

    name: str
    start: int
    end: int
    pid: object = None
    tid: object = None
    proj_start: int | None = None
    proj_end: int | None = None


_NUMBERED = re.compile(r"#\d+$")


def range_matches(name: str, wanted: str) -> bool:
    """Whether a range named `name` is a `wanted` step: equal, torch's numbered form
    (`ProfilerStep#12` for `ProfilerStep`), or with an NVTX domain (`dom:decode_step`)."""
    if name == wanted or name.endswith(":" + wanted):
        return True
    return name.startswith(wanted + "#") and name[len(wanted) + 1 :].isdigit()


def _is_profiler_step(name: str) -> bool:
    return range_matches(name, "ProfilerStep")


def _choose_steps(ranges: Sequence[_Range], step_range: str | None) -> tuple[str | None, list[_Range]]:
    """The step ranges and the name that chose them (None: no ranges; infer)."""
    if step_range is not None:
        steps = [r for r in ranges if range_matches(r.name, step_range)]
        if not steps:
            common = Counter(_NUMBERED.sub("#N", r.name) for r in ranges).most_common(8)
            listed = ", ".join(f"{n} ({c})" for n, c in common) or "none"
            raise UsageError(
                f"no range named {step_range!r} in this trace",
                hint=f"ranges in it: {listed}; or leave out --step-range to infer steps",
            )
        return step_range, steps
    for wanted in DEFAULT_STEP_RANGES:
        steps = [r for r in ranges if range_matches(r.name, wanted)]
        if steps:
            return wanted, steps
    return None, []


def _groups_of(steps: Sequence[_Range], ranges: Sequence[_Range], wanted: str) -> list[str | None]:
    """For each step, the names of the ranges on its thread that enclose it (outermost
    first, `ProfilerStep#N` and other steps left out), joined with ' > '; None if none."""
    candidates = [r for r in ranges if not range_matches(r.name, wanted) and not _is_profiler_step(r.name)]
    by_thread: dict[tuple[object, object], list[_Range]] = {}
    for r in candidates:
        by_thread.setdefault((r.pid, r.tid), []).append(r)
    for group in by_thread.values():
        group.sort(key=lambda r: (r.start, -r.end))
    labels: list[str | None] = [None] * len(steps)
    order = sorted(range(len(steps)), key=lambda i: steps[i].start)
    cursor: dict[tuple[object, object], int] = {}
    active: dict[tuple[object, object], list[_Range]] = {}
    for i in order:
        step = steps[i]
        key = (step.pid, step.tid)
        pool = by_thread.get(key)
        if not pool:
            continue
        pos = cursor.get(key, 0)
        live = active.setdefault(key, [])
        while pos < len(pool) and pool[pos].start <= step.start:
            live.append(pool[pos])
            pos += 1
        cursor[key] = pos
        live[:] = [r for r in live if r.end >= step.start]
        enclosing = [r for r in live if r.end >= step.end and (r.start, r.end) != (step.start, step.end)]
        if enclosing:
            enclosing.sort(key=lambda r: (r.start, -r.end))
            labels[i] = " > ".join(r.name for r in enclosing)
    return labels


# -------------------------------------------------------------- period detection


# ------------------------------------------------------------------- step anatomy


@dataclass
class _StepAcc:
    """Running figures of one step while its operations go by in start order."""

    name: str
    cpu_start: int | None
    cpu_end: int | None
    group: str | None
    next_start: int | None = None  # inferred steps: where the next step's work begins
    count: int = 0
    first: int | None = None
    last_end: int | None = None
    cur_start: int = 0
    cur_end: int = 0
    busy: int = 0
    by_name: Counter[int] = field(default_factory=Counter)


def _accumulate(ops: _Ops, steps: list[_StepAcc], step_of: Sequence[int]) -> None:
    for s, a, b, nid in zip(step_of, ops.start, ops.end, ops.name, strict=True):
        if s < 0:
            continue
        acc = steps[s]
        if acc.count == 0:
            acc.first, acc.last_end = a, b
            acc.cur_start, acc.cur_end = a, b
        else:
            if acc.last_end is None or b > acc.last_end:
                acc.last_end = b
            if a <= acc.cur_end:
                if b > acc.cur_end:
                    acc.cur_end = b
            else:
                acc.busy += acc.cur_end - acc.cur_start
                acc.cur_start, acc.cur_end = a, b
        acc.count += 1
        acc.by_name[nid] += b - a
    for acc in steps:
        if acc.count:
            acc.busy += acc.cur_end - acc.cur_start


def _timing(index: int, acc: _StepAcc, union: IntervalUnion, after: int | None = None) -> StepTiming:
    if acc.count == 0 or acc.first is None or acc.last_end is None:
        assert acc.cpu_start is not None and acc.cpu_end is not None
        w0, w1 = acc.cpu_start, acc.cpu_end
        other = union.busy_within(w0, w1)
        return StepTiming(
            index=index,
            name=acc.name,
            window_start_ns=w0,
            window_end_ns=w1,
            cpu_start_ns=acc.cpu_start,
            cpu_end_ns=acc.cpu_end,
            gpu_start_ns=None,
            gpu_end_ns=None,
            kernels=0,
            busy_ns=0,
            other_busy_ns=other,
            idle_before_first_ns=(w1 - w0) - other,
            idle_between_kernels_ns=0,
            idle_after_last_ns=0,
        )
    first, last = acc.first, acc.last_end
    w0 = first if acc.cpu_start is None else min(acc.cpu_start, first)
    if after is not None and acc.cpu_start is not None:
        # tiled: the step's GPU time begins once the previous step's has ended, if its work
        # was queued behind it (what CUDA events recorded around the step measure)
        w0 = min(first, max(acc.cpu_start, after))
    w1 = last if acc.cpu_end is None else max(acc.cpu_end, last)
    if acc.next_start is not None:
        w1 = max(w1, acc.next_start)
    before = (first - w0) - union.busy_within(w0, first)
    between = (last - first) - union.busy_within(first, last)
    after = (w1 - last) - union.busy_within(last, w1)
    other = (w1 - w0) - before - between - after - acc.busy
    return StepTiming(
        index=index,
        name=acc.name,
        window_start_ns=w0,
        window_end_ns=w1,
        cpu_start_ns=acc.cpu_start,
        cpu_end_ns=acc.cpu_end,
        gpu_start_ns=first,
        gpu_end_ns=last,
        kernels=acc.count,
        busy_ns=acc.busy,
        other_busy_ns=other,
        idle_before_first_ns=before,
        idle_between_kernels_ns=between,
        idle_after_last_ns=after,
    )


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    h = (len(sorted_values) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


def _group_anatomy(
    label: str | None,
    accs: Sequence[_StepAcc],
    timings: Sequence[StepTiming],
    ops: _Ops,
    source: StepSource,
    step_range: str | None,
    period: int | None,
    notes: list[str],
) -> StepGroup:
    count = len(timings)
    windows = sorted(t.window_ns for t in timings)
    total_window = sum(windows)
    total_busy = sum(t.busy_ns for t in timings)
    by_name: Counter[int] = Counter()
    for acc in accs:
        by_name.update(acc.by_name)
    kinds: Counter[str] = Counter()
    for nid, ns in by_name.items():
        kinds[step_kernel_kind(ops.names[nid])] += ns
    top = [
        TopKernel(
            name=ops.names[nid],
            short_name=short_kernel_name(ops.names[nid]),
            kind=step_kernel_kind(ops.names[nid]),
            ms_per_step=_ms(ns / count),
            pct=_pct(ns, total_window),
        )
        for nid, ns in sorted(by_name.items(), key=lambda kv: (-kv[1], ops.names[kv[0]]))[:TOP_KERNELS]
    ]
    anatomy = StepAnatomy(
        source=source,
        step_range=step_range,
        count=count,
        step_ms=MsStats(
            median=_ms(_quantile(windows, 0.5)),
            p90=_ms(_quantile(windows, 0.9)),
            min=_ms(windows[0]),
            max=_ms(windows[-1]),
        ),
        kernels_per_step=round(sum(t.kernels for t in timings) / count, 3),
        gpu_busy_pct=_pct(total_busy, total_window),
        idle_ms_per_step=IdleMs(
            between_kernels=_ms(sum(t.idle_between_kernels_ns for t in timings) / count),
            before_first=_ms(sum(t.idle_before_first_ns for t in timings) / count),
            after_last=_ms(sum(t.idle_after_last_ns for t in timings) / count),
        ),
        top_kernels=top,
        notes=notes,
    )
    shares = [
        KindShare(kind=k, ms_per_step=_ms(ns / count), pct=_pct(ns, total_window))  # type: ignore[arg-type]
        for k, ns in sorted(kinds.items(), key=lambda kv: -kv[1])
    ]
    return StepGroup(group=label, anatomy=anatomy, period=period, kinds=shares, steps=list(timings))


def _build_groups(
    ops: _Ops,
    accs: list[_StepAcc],
    step_of: Sequence[int],
    source: StepSource,
    step_range: str | None,
    period: int | None,
    notes: list[str],
    tile: bool = False,
) -> list[StepGroup]:
    _accumulate(ops, accs, step_of)
    timings: list[StepTiming] = []
    queued = 0
    for i, acc in enumerate(accs):
        after = timings[-1].window_end_ns if tile and timings else None
        timing = _timing(i, acc, ops.union, after)
        if acc.cpu_start is not None and timing.window_start_ns > min(
            acc.cpu_start, timing.gpu_start_ns or acc.cpu_start
        ):
            queued += 1
        timings.append(timing)
    step_notes = list(notes)
    if queued:
        step_notes.append(
            f"{queued} step(s) had their GPU work queued behind the previous step's (the CPU ran "
            "ahead of the GPU): their windows begin where the previous step's ended, the step's "
            "own time on the GPU, as CUDA events recorded around it measure it"
        )
    overlaps = sum(1 for a, b in itertools.pairwise(timings) if a.window_end_ns > b.window_start_ns)
    if overlaps:
        step_notes.append(
            f"{overlaps} step window(s) overlap the next step's: the GPU ran behind the CPU; "
            "kernels count in the step whose range launched them"
        )
    empty = sum(1 for t in timings if t.kernels == 0)
    if empty:
        step_notes.append(f"{empty} step(s) launched no GPU work")
    labels: list[str | None] = []
    for acc in accs:
        if acc.group not in labels:
            labels.append(acc.group)
    groups: list[StepGroup] = []
    for label in labels:
        members = [i for i, acc in enumerate(accs) if acc.group == label]
        group = _group_anatomy(
            label,
            [accs[i] for i in members],
            [timings[i] for i in members],
            ops,
            source,
            step_range,
            period,
            step_notes,
        )
        group.timeline = _timeline(ops, step_of, members, timings)
        groups.append(group)
    return groups


def _timeline(
    ops: _Ops, step_of: Sequence[int], members: Sequence[int], timings: Sequence[StepTiming]
) -> StepTimeline | None:
    """The median step of a group (by window length) with every operation overlapping
    its window, times from the window's start."""
    if not members:
        return None
    order = sorted(range(len(members)), key=lambda k: (timings[members[k]].window_ns, k))
    pick = order[(len(order) - 1) // 2]
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


def _steps_from_ranges(
    ops: _Ops,
    ranges: list[_Range],
    step_range: str | None,
    source: StepSource,
    attribution: Literal["launch", "projection", "window"],
    notes: list[str],
    tile: bool = False,
) -> list[StepGroup] | None:
    wanted, steps = _choose_steps(ranges, step_range)
    if wanted is None:
        return None
    steps.sort(key=lambda r: (r.start, r.end))
    labels = _groups_of(steps, ranges, wanted)
    accs = [_StepAcc(name=r.name, cpu_start=r.start, cpu_end=r.end, group=labels[i]) for i, r in enumerate(steps)]
    step_of = array("l", [-1]) * len(ops)
    starts = [r.start for r in steps]
    if attribution == "launch":
        ends = [r.end for r in steps]
        for i, t in enumerate(ops.launch):
            if t < 0:
                continue
            s = bisect.bisect_right(starts, t) - 1
            # The latest step that started before the launch, unless it ended before it;
            # a few earlier ones are tried for overlapping step ranges.
            for k in range(s, max(s - 4, -1), -1):
                if ends[k] >= t:
                    step_of[i] = k
                    break
        unlaunched = ops.launch.count(-1)
        if unlaunched:
            notes.append(
                f"{unlaunched} GPU operation(s) have no launch call in the trace (launched "
                "before the profile began, or by an unrecorded API): they belong to no step"
            )
    elif attribution == "projection":
        projected = [(r.proj_start, r.proj_end, k) for k, r in enumerate(steps) if r.proj_start is not None]
        projected.sort()
        pstarts = [p[0] for p in projected]
        for i in range(len(ops)):
            a, b = ops.start[i], ops.end[i]
            j = bisect.bisect_right(pstarts, a) - 1
            for k in range(j, max(j - 4, -1), -1):
                _ps, pe, step = projected[k]
                if pe is not None and b <= pe:
                    step_of[i] = step
                    break
        notes.append(
            "no cuda_api_trace: a step's kernels are those inside its range's GPU projection "
            "(nvtx_gpu_proj_trace); add cuda_api_trace to attribute each kernel by its launch"
        )
    else:
        for i in range(len(ops)):
            a = ops.start[i]
            s = bisect.bisect_right(starts, a) - 1
            if s < 0:
                continue
            limit = starts[s + 1] if s + 1 < len(starts) else steps[s].end
            if a < limit:
                step_of[i] = s
        notes.append(
            "approximate: without launch times (cuda_api_trace) or GPU projections "
            "(nvtx_gpu_proj_trace) a step's kernels are those starting between its CPU "
            "start and the next step's"
        )
    return _build_groups(ops, accs, step_of, source, wanted, None, notes, tile)


def _steps_from_sequence(ops: _Ops, notes: list[str]) -> list[StepGroup]:
    n = len(ops)
    gaps = array("q")
    add_gap = gaps.append
    running = ops.start[0] if n else 0
    for a, b in zip(ops.start, ops.end, strict=True):
        add_gap(a - running if a > running else 0)
        if b > running:
            running = b
    found = find_period(ops.name, gaps)
    if found is None:
        notes.append(
            "no steps: the trace has no decode_step or ProfilerStep ranges and its kernel "
            "sequence does not repeat (no period found)"
        )
        return []
    step_of = array("l", [-1]) * n
    accs: list[_StepAcc] = []
    bounds = [*found.boundaries, found.end]
    for k in range(found.count):
        for i in range(bounds[k], bounds[k + 1]):
            step_of[i] = k
        next_start = ops.start[bounds[k + 1]] if bounds[k + 1] < n else None
        accs.append(_StepAcc(name=f"step {k}", cpu_start=None, cpu_end=None, group=None, next_start=next_start))
    step_notes = [
        f"steps inferred from the kernel sequence: it repeats every {found.period} GPU "
        f"operations ({found.score:.1%} of them equal the one a period later); a step "
        "begins after the longest typical GPU wait, and there are no CPU ranges to time it",
    ]
    before, after = found.boundaries[0], n - found.end
    if before or after:
        step_notes.append(
            f"{before} GPU operation(s) before the first step (e.g. prefill) and {after} "
            "after the last belong to no step"
        )
    return _build_groups(ops, accs, step_of, "repeating-sequence", None, found.period, step_notes)


# --------------------------------------------------------------------- entry points


def analyze_gpu_trace(
    paths: Sequence[str | Path], step_range: str | None = None, *, tile: bool = False
) -> TraceAnatomy:
    """The step anatomy of an nsys capture from its `nsys stats --format csv` exports.

    `paths` must hold one `cuda_gpu_trace` export and may hold `nvtx_pushpop_trace`,
    `nvtx_gpu_proj_trace` and `cuda_api_trace` exports of the same capture (told apart
    by their `BASE_<report>.csv` names, else their headers). See the module docstring
    for how steps and their kernels are found. With `tile`, a step whose GPU work was
    queued behind the previous step's (the CPU ran ahead) begins where that one ended,
    not at its range's start: windows then tile the GPU's timeline, each the step's own
    GPU time. Raises ParseError for unreadable files
    and UsageError for a missing gpu trace, a report given twice, or a `step_range`
    that names no range.
    """
    files: dict[str, Path] = {}
    for raw in paths:
        path = Path(raw)
        report = gputrace.identify_file(path)
        if report in files:
            raise UsageError(f"two {report} files: {files[report]} and {path}", hint="give one capture's exports")
        files[report] = path
    if "cuda_gpu_trace" not in files:
        raise UsageError(
            "no cuda_gpu_trace export among the files",
            hint="export it with `nsys stats --format csv --report cuda_gpu_trace --output BASE REPORT.nsys-rep`",
        )
    return analyze_nsys_trace(CsvTrace(files), step_range, tile=tile)


def analyze_nsys_trace(trace: NsysTrace, step_range: str | None = None, *, tile: bool = False) -> TraceAnatomy:
    """`analyze_gpu_trace` over any source of a capture's trace records: its CSV exports
    (`CsvTrace`) or its SQLite export (`nsightlab.parse.nsys_sqlite_trace.SqliteTrace`,
    whose operations come with their launch times: no API call is read to find them)."""
    notes: list[str] = []
    cols = trace.gpu_columns()
    ops = _Ops.from_columns(cols)
    devices = list(dict.fromkeys(str(device) for device, _ in ops_streams(ops) if device is not None))
    if ops.seal():
        notes.append(f"{Path(trace.label).name} was not in start order: sorted in memory")
    if not len(ops):
        raise UsageError(f"{trace.label} holds no GPU operations", hint="was CUDA traced (`nsys profile -t cuda`)?")

    ranges: list[_Range] = []
    if trace.has("nvtx_pushpop_trace"):
        ranges = [_Range(r.name, r.start_ns, r.end_ns, r.pid, r.tid) for r in trace.pushpop()]
    projections: list[gputrace.NvtxProjection] = []
    if trace.has("nvtx_gpu_proj_trace"):
        projections = list(trace.projections())
        if ranges:
            by_key: dict[tuple[object, object, int | None, str], gputrace.NvtxProjection] = {
                (p.pid, p.tid, p.orig_start_ns, p.name): p for p in projections
            }
            for r in ranges:
                p = by_key.get((r.pid, r.tid, r.start, r.name))
                if p is not None:
                    r.proj_start, r.proj_end = p.proj_start_ns, p.proj_end_ns
        else:
            ranges = [
                _Range(
                    p.name,
                    p.orig_start_ns if p.orig_start_ns is not None else p.proj_start_ns,
                    p.orig_end_ns if p.orig_end_ns is not None else p.proj_end_ns,
                    p.pid,
                    p.tid,
                    p.proj_start_ns,
                    p.proj_end_ns,
                )
                for p in projections
            ]
    attribution: Literal["launch", "projection", "window"] = "window"
    if cols.launch is not None:
        attribution = "launch"
    elif trace.has("cuda_api_trace"):
        launch_of = {
            c.corr_id: c.start_ns for c in trace.api_calls() if c.corr_id is not None and puts_work_on_gpu(c.name)
        }
        ops.set_launches(launch_of)
        attribution = "launch"
    elif projections:
        attribution = "projection"
    groups: list[StepGroup] | None = None
    if ranges:
        groups = _steps_from_ranges(ops, ranges, step_range, "nvtx", attribution, notes, tile)
    elif step_range is not None:
        raise UsageError(
            f"--step-range {step_range} needs NVTX ranges",
            hint="add the nvtx_pushpop_trace (or nvtx_gpu_proj_trace) export of the same capture",
        )
    used = attribution if groups is not None else None
    if groups is None:
        groups = _steps_from_sequence(ops, notes)
    return TraceAnatomy(
        input="nsys", trace=ops.summary(), groups=groups, device_names=devices, notes=notes, attribution=used
    )


def analyze_kineto(path: str | Path, step_range: str | None = None, *, tile: bool = False) -> TraceAnatomy:
    """The step anatomy of a torch.profiler / Kineto trace (`.json` or `.json.gz`).

    Steps are `user_annotation` ranges (record_function, `ProfilerStep#N`); a step's
    kernels are those launched inside it from any thread, graph replays included (see
    the module docstring; `tile` as for `analyze_gpu_trace`). A trace with no GPU work
    (a script that ran on the CPU) has its top-level CPU ops stand in for kernels
    (`ops_are: cpu`). Raises ParseError for an unreadable trace and UsageError for a
    `step_range` that names no range.
    """
    reader = kineto.KinetoReader(path, launches_only=True)
    ops = _Ops()
    launch_of: dict[int, int] = {}
    ranges: list[_Range] = []
    for event in reader:
        if type(event) is kineto.GpuEvent:
            ops.add(
                event.start_ns, event.end_ns, event.name, event.kind, (event.device, event.stream), event.correlation
            )
        elif type(event) is kineto.LaunchCall:
            if event.correlation is not None:
                launch_of[event.correlation] = event.start_ns
        elif type(event) is kineto.TraceRange and event.cat == "user_annotation":
            ranges.append(_Range(event.name, event.start_ns, event.end_ns, event.pid, event.tid))
    notes: list[str] = []
    ops.seal()
    if not len(ops):
        cpu = _kineto_cpu_ops(path, step_range)
        if cpu is None:
            raise UsageError(
                f"{path} holds no GPU operations and no CPU ops", hint="profile with ProfilerActivity.CUDA (or CPU)"
            )
        return cpu
    ops.set_launches(launch_of)
    groups = (
        _steps_from_ranges(ops, ranges, step_range, "record_function", "launch", notes, tile)
        if ranges or step_range
        else None
    )
    used: Literal["launch"] | None = "launch" if groups is not None else None
    if groups is None:
        groups = _steps_from_sequence(ops, notes)
    return TraceAnatomy(
        input="kineto",
        trace=ops.summary(),
        groups=groups,
        device_names=sorted(set(reader.metadata.device_names)),
        notes=notes,
        attribution=used,
    )


CPU_OPS_NOTE = (
    "no GPU work in this trace: the profiler's top-level CPU ops (each op called by the "
    "script, not by another op) stand in for kernels, and threads for streams; an op "
    "belongs to the step whose range it ran in, and idle is time in a step when no op "
    "ran (Python, the dispatcher, the profiler itself)"
)


def _kineto_cpu_ops(path: str | Path, step_range: str | None) -> TraceAnatomy | None:
    """A trace with no GPU work (a script that ran on the CPU): its top-level CPU ops as
    the operations, attributed to the range they ran in. None when it has no CPU ops."""
    reader = kineto.KinetoReader(path, cpu_ops=True)
    by_thread: dict[tuple[object, object], list[tuple[int, int, str]]] = {}
    ranges: list[_Range] = []
    for event in reader:
        if type(event) is kineto.CpuOp:
            by_thread.setdefault((event.pid, event.tid), []).append((event.start_ns, -event.end_ns, event.name))
        elif type(event) is kineto.TraceRange and event.cat == "user_annotation":
            ranges.append(_Range(event.name, event.start_ns, event.end_ns, event.pid, event.tid))
    top: list[tuple[int, int, str, tuple[object, object]]] = []
    for key, events in by_thread.items():
        events.sort()  # by start, the outer op first when two start together
        outer_end: int | None = None
        for start, neg_end, name in events:
            if outer_end is None or start >= outer_end:  # not inside the previous top-level op
                top.append((start, -neg_end, name, key))
                outer_end = -neg_end
    if not top:
        return None
    top.sort(key=lambda op: op[0])
    ops = _Ops()
    for start, end, name, key in top:
        ops.add(start, end, name, "kernel", key, None)
    ops.seal()
    ops.launch = array("q", ops.start)  # an op runs where it is called: its own start
    notes = [CPU_OPS_NOTE]
    groups = (
        _steps_from_ranges(ops, ranges, step_range, "record_function", "launch", notes)
        if ranges or step_range
        else None
    )
    used: Literal["cpu-range"] | None = "cpu-range" if groups is not None else None
    if groups is None:
        groups = _steps_from_sequence(ops, notes)
    return TraceAnatomy(
        input="kineto",
        trace=ops.summary(),
        groups=groups,
        device_names=[],
        notes=notes,
        ops_are="cpu",
        attribution=used,
    )


# -------------------------------------------------------------- floor and verdict
