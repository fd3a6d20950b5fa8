"""A step's anatomy from a GPU timeline: how long a step takes, how busy the GPU is in it,
why it sits idle, which kernels take the time.

Entry points (one per input kind, and one for any reader):

    analyze_gpu_trace(["run_cuda_gpu_trace.csv", "run_nvtx_pushpop_trace.csv", ...],
                      step_range=None) -> TraceAnatomy        # nsys stats --format csv
    analyze_kineto("trace.json.gz", step_range=None) -> TraceAnatomy   # torch.profiler, vLLM, SGLang
    analyze_timeline(ops, ranges, calls, input=..., attribution=...) -> TraceAnatomy

`analyze_timeline` is what the readers share: an `OpTable` of GPU operations (kernels,
memory copies and sets), the host ranges (`HostRange`: NVTX or record_function) and the
host's API calls (`HostCalls`: launches by correlation id, graph launches, blocking
calls). `TraceAnatomy` (models in `stepmodels`) holds `trace` (the whole timeline:
`span_ms` from the first GPU operation's start to the last one's end, `gpu_busy_pct` the
union of kernels and memory operations over all streams, `kernel_busy_pct` of kernels
alone), `kernels` (the trace's top kernels), `ranges` (its named ranges) and `groups`:
one `StepGroup` per enclosing range and phase.

Which ranges are steps (`engine_ranges.choose_steps`): with `step_range`, the ranges so
named; else an engine's step ranges (vLLM, SGLang, TensorRT-LLM, ATOM) and `decode_step`,
the innermost where they nest, else torch's `ProfilerStep`; with none, steps are inferred
from the sequence of GPU operations (`period.find_steps`: the step, not the layer; or one
step; or none, said in the notes). Which operations are a step's, its window and the
split of its idle time: `projection`. A group's figures: `stepgroups`.

Memory: whole-trace figures are computed while the file streams by; steps need the
operations in compact arrays (about 60 bytes per GPU operation) and Kineto traces are
sorted by start in memory (their events are not in time order). An nsys file that is not
in start order is sorted the same way, with a note.
"""

from __future__ import annotations

import itertools
import operator
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from nsightlab.analysis.engine_ranges import (
    DEFAULT_STEP_RANGES,
    HostRange,
    choose_steps,
    group_labels,
    range_counts,
    range_matches,
)
from nsightlab.analysis.optable import OpTable, pct
from nsightlab.analysis.period import find_steps
from nsightlab.analysis.projection import Attribution, HostCalls, StepAcc, SyncIndex, attribute
from nsightlab.analysis.stepgroups import TIMELINE_MAX_OPS, TOP_KERNELS, Inferred, build_groups
from nsightlab.analysis.stepmodels import (
    IdleMs,
    KindShare,
    MsStats,
    Phase,
    RangeCount,
    StepAnatomy,
    StepGroup,
    StepSource,
    StepTimeline,
    StepTiming,
    TimelineOp,
    TopKernel,
    TraceAnatomy,
    TraceKernel,
    TraceSummary,
)
from nsightlab.errors import UsageError
from nsightlab.parse import gputrace, kineto
from nsightlab.parse.names import short_kernel_name, step_kernel_kind
from nsightlab.parse.nsys_trace import CsvTrace, NsysTrace

__all__ = [
    "DEFAULT_STEP_RANGES",
    "TIMELINE_MAX_OPS",
    "TOP_KERNELS",
    "HostCalls",
    "HostRange",
    "IdleMs",
    "KindShare",
    "MsStats",
    "OpTable",
    "Phase",
    "RangeCount",
    "StepAnatomy",
    "StepGroup",
    "StepSource",
    "StepTimeline",
    "StepTiming",
    "TimelineOp",
    "TopKernel",
    "TraceAnatomy",
    "TraceKernel",
    "TraceSummary",
    "analyze_gpu_trace",
    "analyze_kineto",
    "analyze_timeline",
    "range_matches",
]

# How many kernels the whole trace's top list keeps.
TRACE_TOP_KERNELS = 20


# --------------------------------------------------------------- the whole trace


# A trace where at least this many launch calls (and half of them) ran nothing on the GPU
# is a capture of graphs, not steps.
CAPTURE_LAUNCHES = 100


def trace_kernels(ops: OpTable, top: int = TRACE_TOP_KERNELS) -> list[TraceKernel]:
    """The trace's kernels by their total time (memory operations are not kernels)."""
    mask = ops.kind.tobytes().translate(bytes([1] + [0] * 255))
    count = Counter(itertools.compress(ops.name, mask))
    by_id = [0] * len(ops.names)
    for nid, d in itertools.compress(zip(ops.name, map(operator.sub, ops.end, ops.start), strict=True), mask):
        by_id[nid] += d
    total = {nid: by_id[nid] for nid in count}
    all_ns = sum(total.values())
    out = []
    for nid, ns in sorted(total.items(), key=lambda kv: (-kv[1], ops.names[kv[0]]))[:top]:
        name = ops.names[nid]
        out.append(
            TraceKernel(
                name=name,
                short_name=short_kernel_name(name),
                kind=step_kernel_kind(name),
                instances=count[nid],
                total_ns=float(ns),
                avg_ns=round(ns / count[nid], 3),
                time_pct=pct(ns, all_ns),
            )
        )
    return out


# ------------------------------------------------------------------ inferred steps


def _gaps(ops: OpTable) -> array[int]:
    """The GPU's idle time before each operation (0 when something still ran)."""
    gaps = array("q")
    add = gaps.append
    running = ops.start[0] if len(ops) else 0
    for a, b in zip(ops.start, ops.end, strict=True):
        add(a - running if a > running else 0)
        if b > running:
            running = b
    return gaps


def _steps_from_sequence(ops: OpTable, notes: list[str], graph_corrs: set[int]) -> list[StepGroup]:
    n = len(ops)
    found = find_steps(ops.name, _gaps(ops), ops.corr)
    kernels = ops.kernels
    if found.one_step and found.layer is not None and found.layer_repeats is not None:
        rest = n - found.layer * found.layer_repeats
        notes.append(
            f"one step: {found.layer_repeats} repeats of a {found.layer}-operation layer, plus {rest} "
            f"operations ({kernels} kernels and {n - kernels} memory operations in all): {found.why}, so "
            "the trace holds one step, not steps of a layer; its window is its GPU span (no host range times it)"
        )
        single = [StepAcc(name="step 0", cpu_start=None, cpu_end=None, group=None)]
        inferred = Inferred(step_period=n, layer_period=found.layer)
        everything = array("l", [0]) * n
        return build_groups(
            ops,
            single,
            everything,
            "repeating-sequence",
            None,
            notes,
            graph_corrs=graph_corrs,
            inferred=inferred,
        )
    period = found.period
    if period is None:
        notes.append(f"no steps: the trace has no step ranges, and {found.why}")
        return []
    step_of = array("l", [-1]) * n
    accs: list[StepAcc] = []
    bounds = [*period.boundaries, period.end]
    for k in range(period.count):
        for i in range(bounds[k], bounds[k + 1]):
            step_of[i] = k
        next_start = ops.start[bounds[k + 1]] if bounds[k + 1] < n else None
        accs.append(StepAcc(name=f"step {k}", cpu_start=None, cpu_end=None, group=None, next_start=next_start))
    layer = ""
    if found.layer is not None and found.layer_repeats is not None:
        layer = (
            f" ({found.layer_repeats} repeats of a {found.layer}-operation layer, plus "
            f"{period.period - found.layer * found.layer_repeats} operations)"
        )
    step_notes = [
        f"steps inferred from the operation sequence: a step is {period.period} GPU operations{layer}, "
        f"repeated ({period.score:.1%} of them equal the one a step later); a step begins after the "
        "longest typical GPU wait, and there are no host ranges to time it",
    ]
    before, after = period.boundaries[0], n - period.end
    if before or after:
        step_notes.append(
            f"{before} GPU operation(s) before the first step (e.g. prefill) and {after} after the last "
            "belong to no step"
        )
    notes.extend(step_notes)
    inferred = Inferred(step_period=period.period, layer_period=found.layer)
    return build_groups(
        ops, accs, step_of, "repeating-sequence", None, notes, graph_corrs=graph_corrs, inferred=inferred
    )


# ------------------------------------------------------------------ the timeline


def analyze_timeline(
    ops: OpTable,
    ranges: Sequence[HostRange],
    calls: HostCalls,
    *,
    input: Literal["nsys", "kineto"],
    attribution: Attribution,
    default_source: StepSource,
    step_range: str | None = None,
    tile: bool = False,
    device_names: Sequence[str] = (),
    notes: Sequence[str] = (),
    ops_are: Literal["gpu", "cpu"] = "gpu",
) -> TraceAnatomy:
    """The step anatomy of one GPU timeline, whatever wrote it.

    `ops` sealed (`OpTable.seal()`); `ranges` the host ranges; `calls` the API calls
    (launch times by correlation id when `attribution` is `launch`; for `cpu-range` the
    ops' own starts must be set as `ops.launch`). `default_source` names how the
    `decode_step` / `ProfilerStep` ranges were recorded (`nvtx`, `record_function`). See
    the module docstring; `tile` as for `analyze_gpu_trace`. Raises UsageError for a
    `step_range` that names no range.
    """
    notes = list(notes)
    unlaunched = 0
    if attribution == "launch":
        # launch times joined by the reader (an SQLite export, per process: CUPTI numbers
        # correlation ids per process) are kept; else from the calls, by correlation id
        unlaunched = ops.launch.count(-1) if len(ops.launch) else ops.set_launches(calls.launch_of)
    graph_corrs = set(calls.graph_launches)
    choice = choose_steps(ranges, step_range, default_source)
    common = {
        "input": input,
        "trace": ops.summary(),
        "device_names": list(device_names),
        "ops_are": ops_are,
        "ranges": range_counts(ranges),
    }
    # launch calls that ran nothing: at least as many as the calls beyond the operations
    # that ran (several operations can share one call, a graph's; none runs two calls)
    launches = max(calls.launches, len(calls.launch_of))
    idle = launches - (len(ops) - unlaunched) if attribution == "launch" else 0
    if idle >= CAPTURE_LAUNCHES and idle >= launches / 2:
        notes.append(
            f"at least {idle} of the trace's {launches} launch calls put no work on the GPU: a "
            "trace of CUDA/HIP graphs being captured (a launch during a capture records its kernel into the "
            f"graph, which runs when replayed), so no steps: the {len(ops)} operation(s) that ran are not a "
            "step's work; profile the graphs' replays (the engine serving requests) instead"
        )
        kernels = trace_kernels(ops)
        return TraceAnatomy(groups=[], notes=notes, attribution=None, kernels=kernels, captured=True, **common)  # type: ignore[arg-type]
    if choice.wanted is None or choice.source is None:
        groups = _steps_from_sequence(ops, notes, graph_corrs) if len(ops) else []
        kernels = trace_kernels(ops)
        return TraceAnatomy(groups=groups, notes=notes, attribution=None, kernels=kernels, **common)  # type: ignore[arg-type]
    steps = sorted(choice.steps, key=lambda r: (r.start, r.end))
    labels = group_labels(steps, ranges, choice.wanted if step_range is not None else None)
    accs = [
        StepAcc(name=r.name, cpu_start=r.start, cpu_end=r.end, group=labels[i], phase=r.phase, pid=r.pid)
        for i, r in enumerate(steps)
    ]
    step_of = attribute(ops, steps, attribution)
    notes.extend(choice.notes)
    if unlaunched:
        notes.append(
            f"{unlaunched} GPU operation(s) have no launch call in the trace (launched before the profile "
            "began, or by an unrecorded API): they belong to no step"
        )
    if attribution == "projection":
        notes.append(
            "no cuda_api_trace: a step's kernels are those inside its range's GPU projection "
            "(nvtx_gpu_proj_trace); add cuda_api_trace to attribute each kernel by its launch"
        )
    elif attribution == "window":
        notes.append(
            "approximate: without launch times (cuda_api_trace) or GPU projections (nvtx_gpu_proj_trace) a "
            "step's kernels are those starting between its host range's start and the next step's"
        )
    graphs = calls.graph_launches
    outside = (
        {c for i, c in enumerate(ops.corr) if c in graphs and step_of[i] < 0 and ops.launch[i] >= 0}
        if graphs
        else set()
    )
    if outside:
        replayed = sum(1 for i, c in enumerate(ops.corr) if c in outside)
        notes.append(
            f"{len(outside)} graph replay(s) were launched outside every step range: their {replayed} GPU "
            "operation(s) belong to no step"
        )
    groups = build_groups(
        ops,
        accs,
        step_of,
        choice.source,
        choice.wanted,
        notes,
        tile=tile,
        syncs=SyncIndex(calls.syncs),
        graph_corrs=graph_corrs,
    )
    kernels = trace_kernels(ops)
    return TraceAnatomy(groups=groups, notes=notes, attribution=attribution, kernels=kernels, **common)  # type: ignore[arg-type]


# --------------------------------------------------------------------- entry points


def analyze_gpu_trace(
    paths: Sequence[str | Path], step_range: str | None = None, *, tile: bool = False
) -> TraceAnatomy:
    """The step anatomy of an nsys capture from its `nsys stats --format csv` exports.

    `paths` must hold one `cuda_gpu_trace` export and may hold `nvtx_pushpop_trace`,
    `nvtx_gpu_proj_trace` and `cuda_api_trace` exports of the same capture (told apart
    by their `BASE_<report>.csv` names, else their headers). Kernels are given to steps
    by their launch call (cuda_api_trace), else by each range's GPU projection, else by
    start time alone (`projection`). With `tile`, a step whose GPU work was queued behind
    the previous step's (the host ran ahead) begins where that one ended, not at its
    range's start: windows then tile the GPU's timeline, each the step's own GPU time.
    Raises ParseError for unreadable files and UsageError for a missing gpu trace, a
    report given twice, or a `step_range` that names no range.
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
    whose operations come with their launch times already joined). The API calls are read
    whenever the source has them: the step's syncs and graph replays come from them."""
    return analyze_nsys_records(
        trace.gpu_columns(),
        trace.pushpop() if trace.has("nvtx_pushpop_trace") else None,
        trace.projections() if trace.has("nvtx_gpu_proj_trace") else None,
        trace.api_calls() if trace.has("cuda_api_trace") else None,
        label=trace.label,
        step_range=step_range,
        tile=tile,
        launch_calls=getattr(trace, "launch_calls", 0),
    )


def analyze_nsys_records(
    cols: gputrace.GpuTraceColumns,
    pushpop: Iterable[gputrace.NvtxRange] | None,
    projections: Iterable[gputrace.NvtxProjection] | None,
    api_calls: Iterable[gputrace.ApiCall] | None,
    *,
    label: str,
    step_range: str | None = None,
    tile: bool = False,
    launch_calls: int = 0,
) -> TraceAnatomy:
    """The step anatomy of one nsys capture from its records, whichever export they came
    from: the GPU operations (with their launch times already joined, as an SQLite export
    gives them, in `cols.launch` when the columns have it), the NVTX push/pop ranges and
    their GPU projections, the CUDA API calls (launches, graph launches, syncs); None for
    a report the capture lacks. `label` names the capture in notes and errors;
    `launch_calls` how many kernel launches the capture made, where the launches were
    joined before (an SQLite export's summary counts them)."""
    notes: list[str] = []
    ops = OpTable.from_columns(cols)
    devices = list(dict.fromkeys(str(device) for device, _ in ops.device_streams() if device is not None))
    if ops.seal():
        notes.append(f"{Path(label).name} was not in start order: sorted in memory")
    if not len(ops):
        raise UsageError(f"{label} holds no GPU operations", hint="was CUDA traced (`nsys profile -t cuda`)?")
    ranges = _nsys_ranges(pushpop, projections)
    calls = HostCalls(launches=launch_calls)
    attribution: Attribution = "window"
    if api_calls is not None:
        for c in api_calls:
            calls.add(c.name, c.start_ns, c.end_ns, c.corr_id, c.pid)
    if len(ops.launch) or api_calls is not None:
        attribution = "launch"
    elif any(r.proj_start is not None for r in ranges):
        attribution = "projection"
    if step_range is not None and not ranges:
        raise UsageError(
            f"--step-range {step_range} needs NVTX ranges",
            hint="add the nvtx_pushpop_trace (or nvtx_gpu_proj_trace) export of the same capture",
        )
    return analyze_timeline(
        ops,
        ranges,
        calls,
        input="nsys",
        attribution=attribution,
        default_source="nvtx",
        step_range=step_range,
        tile=tile,
        device_names=devices,
        notes=notes,
    )


def _nsys_ranges(
    pushpop: Iterable[gputrace.NvtxRange] | None, projections: Iterable[gputrace.NvtxProjection] | None
) -> list[HostRange]:
    """The NVTX ranges of a capture: push/pop ranges with their GPU projections when both
    are there, else the projections' own ranges."""
    ranges: list[HostRange] = []
    if pushpop is not None:
        ranges = [HostRange(r.name, r.start_ns, r.end_ns, r.pid, r.tid) for r in pushpop]
    if projections is None:
        return ranges
    projected = list(projections)
    if ranges:
        by_key: dict[tuple[object, object, int | None, str], gputrace.NvtxProjection] = {
            (p.pid, p.tid, p.orig_start_ns, p.name): p for p in projected
        }
        for r in ranges:
            p = by_key.get((r.pid, r.tid, r.start, r.name))
            if p is not None:
                r.proj_start, r.proj_end = p.proj_start_ns, p.proj_end_ns
        return ranges
    return [
        HostRange(
            p.name,
            p.orig_start_ns if p.orig_start_ns is not None else p.proj_start_ns,
            p.orig_end_ns if p.orig_end_ns is not None else p.proj_end_ns,
            p.pid,
            p.tid,
            p.proj_start_ns,
            p.proj_end_ns,
        )
        for p in projected
    ]


def analyze_kineto(path: str | Path, step_range: str | None = None, *, tile: bool = False) -> TraceAnatomy:
    """The step anatomy of a torch.profiler / Kineto trace (`.json` or `.json.gz`).

    Steps are `user_annotation` ranges (see the module docstring); a step's kernels are
    those launched inside it from any thread, graph replays included (`tile` as for
    `analyze_gpu_trace`). A trace with no GPU work (a script that ran on the CPU) has its
    top-level CPU ops stand in for kernels (`ops_are: cpu`). Raises ParseError for an
    unreadable trace and UsageError for a `step_range` that names no range.
    """
    reader = kineto.KinetoReader(path, launches_only=True)
    ops = OpTable()
    calls = HostCalls()
    ranges: list[HostRange] = []
    for batch in reader.batches():
        if batch.gpu_start:
            ops.extend(batch.gpu_start, batch.gpu_end, batch.gpu_name, batch.gpu_kind, batch.gpu_stream, batch.gpu_corr)
        if batch.call_start:
            calls.extend(batch.call_name, batch.call_start, batch.call_end, batch.call_corr, batch.call_pid)
        for name, start, end, cat, pid, tid in batch.ranges:
            if cat == "user_annotation":
                ranges.append(HostRange(name, start, end, pid, tid))
    ops.seal()
    names, notes = kineto_devices(reader.metadata)
    if len(ops):
        ops.set_launches(calls.launch_of)
        calls.launches = len(calls.launch_of)
        calls.launch_of.clear()  # joined: a million launches need not outlive the join
    else:
        cpu = _kineto_cpu_ops(path, step_range)
        if cpu is None:
            raise UsageError(
                f"{path} holds no GPU operations and no CPU ops", hint="profile with ProfilerActivity.CUDA (or CPU)"
            )
        return cpu
    return analyze_timeline(
        ops,
        ranges,
        calls,
        input="kineto",
        attribution="launch",
        default_source="record_function",
        step_range=step_range,
        tile=tile,
        device_names=names,
        notes=notes,
    )


# The LLVM target of an AMD GPU from the compute capability ROCm reports, where one
# target stands for it (9.4: the MI300 series' gfx942; 9.5: gfx950).
_AMD_TARGETS = {(9, 4): "gfx942", (9, 5): "gfx950"}


def kineto_devices(meta: kineto.KinetoMetadata) -> tuple[list[str], list[str]]:
    """The GPU names a trace gives, and notes. A HIP trace whose deviceProperties have no
    name is named from its figures (compute capability, memory, compute units) where they
    single out one AMD product, with a note saying so; else as the trace has them."""
    given = sorted(set(meta.device_names))
    if any(given) or meta.runtime != "hip" or not meta.device_figures:
        return given, []
    from nsightlab.specs.gpus import GiB, lookup_arch

    found: set[tuple[str, int, int | None, int, int]] = set()
    for memory, units_, major, minor in meta.device_figures:
        target = _AMD_TARGETS.get((major, minor)) if major is not None and minor is not None else None
        spec = lookup_arch(target, memory, units_)
        if spec is None or memory is None or major is None or minor is None:
            return given, []  # one GPU not singled out: none is named
        found.add((spec.name, memory, units_, major, minor))
    if len(found) != 1:
        return given, []
    ((name, memory, units_, major, minor),) = found
    return [name], [
        f"the trace names no GPU: from its properties (HIP, compute capability {major}.{minor}, {units_} compute "
        f"units, {memory / GiB:.0f} GiB) it is an {name}"
    ]


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
    ranges: list[HostRange] = []
    for event in reader:
        if type(event) is kineto.CpuOp:
            by_thread.setdefault((event.pid, event.tid), []).append((event.start_ns, -event.end_ns, event.name))
        elif type(event) is kineto.TraceRange and event.cat == "user_annotation":
            ranges.append(HostRange(event.name, event.start_ns, event.end_ns, event.pid, event.tid))
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
    ops = OpTable()
    for start, end, name, key in top:
        ops.add(start, end, name, "kernel", key, None)
    ops.seal()
    ops.launch = array("q", ops.start)  # an op runs where it is called: its own start
    return analyze_timeline(
        ops,
        ranges,
        HostCalls(),
        input="kineto",
        attribution="cpu-range",
        default_source="record_function",
        step_range=step_range,
        notes=[CPU_OPS_NOTE],
        ops_are="cpu",
    )
