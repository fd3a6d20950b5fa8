"""The step anatomy's result models (`nsightlab.analysis.steps` computes them).

`TraceAnatomy` is the whole answer for one trace: `trace` (the timeline), `groups` (one
`StepGroup` per enclosing range and phase), the trace's top kernels and its named ranges.
A group's `anatomy` is the contract the decode and analyze JSON are built from; figures
"per step" in it are those of the group's median step (see `StepAnatomy`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from nsightlab.models import Model
from nsightlab.parse.names import StepKernelKind

# Where a group's steps came from: an engine's own step ranges (vLLM, SGLang,
# TensorRT-LLM, ATOM), the ranges `--step-range` named, our `decode_step` or torch's
# `ProfilerStep` as NVTX or record_function ranges, the kernel sequence, or the script.
StepSource = Literal["engine-range", "step-range", "nvtx", "record_function", "repeating-sequence", "script"]
# What a step did, from what its range says: prefill (context) requests only, decode
# (generation) requests only, both, or the range does not say.
Phase = Literal["prefill", "decode", "mixed", "unknown"]


class _Model(Model):
    model_config = ConfigDict(extra="forbid")


class TraceSummary(_Model):
    """The whole timeline: first GPU op start to last GPU op end, all streams.

    `gpu_busy_pct` counts kernels and memory copies and sets as busy (as HTA does);
    `kernel_busy_pct` kernels alone (as nsys's kernel summary keeps them apart).
    """

    span_ms: float
    gpu_busy_pct: float
    kernels: int
    streams: int
    kernel_busy_pct: float | None = None  # None in results stored before it existed
    memops: int | None = None


class MsStats(_Model):
    """A distribution over steps: `median` the middle step's value (the lower of the two
    middle ones for an even count, so it is always a measured step), `p90` interpolated."""

    median: float
    p90: float
    min: float
    max: float


class IdleMs(_Model):
    """Where the median step's GPU sat idle (no GPU work of any step), in ms:
    `between_kernels` inside its GPU span (launch gaps), `waiting_for_host` while its
    host range was open and its GPU work had not begun, the host was blocked in a
    synchronisation, or the GPU ran nothing for 1 ms or more between the step's
    operations (the host doing other work), `before_first` the rest before its first
    operation (queued behind the previous step), `after_last` after its last operation."""

    between_kernels: float
    before_first: float
    after_last: float
    waiting_for_host: float = 0.0


class TopKernel(_Model):
    """One kernel (all its calls in the median step): its time there and its share of that
    step's time."""

    name: str
    short_name: str
    kind: StepKernelKind
    ms_per_step: float
    pct: float


class TraceKernel(_Model):
    """A kernel of the whole trace, as `analyze` of a kernel summary lists kernels."""

    name: str
    short_name: str
    kind: StepKernelKind
    instances: int
    total_ns: float
    avg_ns: float
    time_pct: float  # of all kernels' time


class RangeCount(_Model):
    """A named range of the trace (`ProfilerStep#12` counted as `ProfilerStep#N`)."""

    name: str
    count: int


class StepAnatomy(_Model):
    """The anatomy of one group of steps. This shape is a contract: keep its keys.

    `step_ms`, `host_ms`, `gpu_span_ms`, `gpu_busy_ms`: distributions over the steps.
    Everything "per step" (kernels, memory operations, idle, busy, top kernels, syncs,
    graph replays) is the median step's own (the step whose time is `step_ms.median`),
    so that its parts add up to its time.
    """

    source: StepSource
    step_range: str | None
    count: int
    step_ms: MsStats
    kernels_per_step: int
    gpu_busy_pct: float
    idle_ms_per_step: IdleMs
    top_kernels: list[TopKernel]
    notes: list[str] = Field(default_factory=list)
    phase: Phase = "unknown"
    host_ms: MsStats | None = None  # None: steps with no host range (inferred)
    gpu_span_ms: MsStats | None = None
    gpu_busy_ms: MsStats | None = None  # the union of the step's kernels
    kernel_busy_pct: float | None = None
    memops_per_step: int = 0
    memops_ms_per_step: float = 0.0
    graph_replays_per_step: int = 0
    syncs_per_step: int = 0
    syncs_ms_per_step: float = 0.0
    # the median step's time in which only other work ran on the GPU (another step's, or
    # work launched before the profile began): with the busy and idle parts, its window
    other_busy_ms_per_step: float = 0.0
    layer_period: int | None = None  # inferred steps: the repeating layer, in GPU operations
    step_period: int | None = None  # inferred steps: the step, in GPU operations


class KindShare(_Model):
    kind: StepKernelKind
    ms_per_step: float
    pct: float


class StepTiming(_Model):
    """One step, in integer nanoseconds: busy_ns + other_busy_ns + the idle = window.

    `busy_ns` is the union of the step's own GPU operations (kernels and memory
    operations), `kernel_busy_ns` of its kernels alone; `other_busy_ns` the time another
    step's work (or work of no step) ran while this one's did not.
    """

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
    idle_waiting_for_host_ns: int = 0
    # the GPU idle while the host was blocked in the step's synchronisations, in its window
    sync_idle_ns: int = 0
    # of idle_waiting_for_host_ns, the part inside the GPU span: in the synchronisations,
    # and in gaps of verdicts.HOST_GAP_MS or more outside them (`host_gaps_ns`)
    span_wait_ns: int = 0
    host_gaps_ns: int = 0
    phase: Phase = "unknown"
    memops: int = 0
    memops_ns: int = 0
    kernel_busy_ns: int = 0
    graph_replays: int = 0
    graph_kernels: int = 0
    syncs: int = 0
    sync_ns: int = 0
    longest_sync: str | None = None  # the name of the step's longest blocking call
    longest_sync_ns: int = 0

    @property
    def window_ns(self) -> int:
        return self.window_end_ns - self.window_start_ns

    @property
    def idle_ns(self) -> int:
        return (
            self.idle_before_first_ns
            + self.idle_between_kernels_ns
            + self.idle_after_last_ns
            + self.idle_waiting_for_host_ns
        )


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
    """The steps under one enclosing range (or none) and of one phase: their anatomy, and
    each step."""

    group: str | None
    anatomy: StepAnatomy
    period: int | None = None
    kinds: list[KindShare]
    steps: list[StepTiming]
    timeline: StepTimeline | None = None
    median_step: int = 0  # index into `steps` of the step whose figures the anatomy gives

    @property
    def phase(self) -> Phase:
        return self.anatomy.phase


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
    kernels: list[TraceKernel] = Field(default_factory=list)  # the trace's top kernels
    ranges: list[RangeCount] = Field(default_factory=list)  # its named ranges, most frequent first
    captured: bool = False  # a trace of graphs being captured: its launches ran nothing, so no steps
