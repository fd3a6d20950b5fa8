"""Where a token's time goes: a decode run's result, per mode and batch.

`build_decode(record, anatomy, bandwidth=...)` puts together what `lab_scripts/decode.py`
says about its work (the model, the bytes one step must read, its FLOPs, its own step
times) and what a trace says about its steps (`nsightlab.analysis.steps`): the step time,
how busy the GPU is in a step and where it idles, the top kernels, the memory floor
(bytes per step / DRAM bandwidth), the verdict and the batch sweep against the roofline.
`steps_report(anatomy, ...)` is the same step objects for a trace alone (`analyze`).

Which steps belong to which run of the script: decode.py nests its ranges
`mode:<name>` > `batch:<B>` > `decode_step`, so each group of steps the anatomy finds is
labelled `mode:eager > batch:8` (or `mode:eager` with one batch) and matched to the
script's entry for that mode and batch. An entry with no steps in the trace (no trace at
all: `--profiler none`, or nsys that saw no GPU work) takes its steps from the script's
own timing (`source: script`): step times only, no kernels and no idle split.

The roofline: a step must at least read every weight once and the live KV cache
(`bytes_per_step_floor` of the script), so it cannot take less than those bytes / DRAM
bandwidth (a sweep's measured plateau on the same device, else the spec). Its matrix
work is `flops_per_step`; where FLOP per byte passes the GPU's ridge point (peak FLOP/s /
bandwidth), the step is bound by compute instead. Both grow linearly with the batch
(the weights do not), so the batch where decode stops being memory-bound is where
flops(B) / bytes(B) = ridge, solved exactly from the script's own figures.

Pure: no I/O but reading the script's JSON it is handed.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from nsightlab.analysis import bounds, units
from nsightlab.analysis.gpus import GpuSpec, lookup
from nsightlab.analysis.steps import (
    IdleMs,
    MsStats,
    StepGroup,
    StepSource,
    StepTimeline,
    TopKernel,
    TraceAnatomy,
    TraceSummary,
)
from nsightlab.analysis.verdicts import (
    LAUNCH_BOUND_IDLE_PCT,
    NEAR_FLOOR_RATIO,
    Floor,
    Verdict,
    memory_floor,
    step_verdict,
)
from nsightlab.errors import ParseError
from nsightlab.models import Model, NonFiniteError, loads

Bound = Literal["memory", "compute"]

# A note when the trace's step time and the script's own differ by more than this factor.
TIMING_DISAGREES_RATIO = 1.2


# ----------------------------------------------------------------- the script's JSON


class _Lenient(Model):
    model_config = ConfigDict(extra="ignore")


class RecordModel(_Lenient):
    preset: str | None = None
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    tied: bool
    params: int
    matmul_params: int
    weight_bytes: int
    dtype: str
    element_size: int


class RecordEntry(_Lenient):
    """One mode at one batch size, as decode.py writes it."""

    mode: str
    batch: int
    step_seconds: list[float]
    median_step_s: float
    p90_step_s: float
    tokens_per_s: float
    kv_cache_bytes_per_step: int
    weight_bytes_per_step: int
    bytes_per_step_floor: int
    flops_per_step: float
    ranges: dict[str, str | None] = Field(default_factory=dict)


class DecodeRecord(_Lenient):
    """What nsightlab reads of decode.py's JSON (`kind: decode`)."""

    kind: Literal["decode"]
    device: dict[str, Any] = Field(default_factory=dict)
    model: RecordModel
    prompt_len: int
    tokens: int
    warmup: int
    batches: list[int]
    modes: list[RecordEntry]
    notes: list[str] = Field(default_factory=list)

    @property
    def device_type(self) -> str:
        return str(self.device.get("type") or "cuda")

    @property
    def device_name(self) -> str | None:
        name = self.device.get("name")
        return str(name) if name else None


def load_decode_record(path: Path) -> DecodeRecord | None:
    """decode.py's JSON, or None when `path` is no such file (another script's JSON)."""
    if not path.is_file():
        return None
    try:
        data = loads(path.read_text(encoding="utf-8"))
    except NonFiniteError as e:
        raise ParseError(e.msg, source=path, line=e.lineno) from None
    except json.JSONDecodeError as e:
        raise ParseError(f"not valid JSON ({e.msg})", source=path, line=e.lineno) from None
    except OSError as e:
        raise ParseError(f"cannot read the file: {e.strerror or e}", source=path) from None
    if not isinstance(data, dict) or data.get("kind") != "decode":
        return None
    try:
        record = DecodeRecord.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ParseError(
            f"bad decode JSON at {'.'.join(str(p) for p in err['loc'])}: {err['msg']}", source=path
        ) from None
    bounds.refuse(
        (
            bounds.check_call(
                f"{m.mode} at batch {m.batch}",
                seconds=min([m.median_step_s, *m.step_seconds]),
                bytes_moved=m.bytes_per_step_floor,
                flops=m.flops_per_step,
            )
            for m in record.modes
        ),
        source=path,
    )
    return record


# ------------------------------------------------------------------------ results


class DecodeModelInfo(Model):
    preset: str | None
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    tied: bool
    params: int  # every weight tensor once (a tied LM head once)
    weight_bytes: int
    dtype: str


class DecodeSteps(Model):
    """One group of steps: the step anatomy, the floor and the verdict. A contract."""

    source: StepSource
    step_range: str | None
    count: int
    step_ms: MsStats
    kernels_per_step: float | None  # None: no trace (`source: script`)
    gpu_busy_pct: float | None
    idle_ms_per_step: IdleMs | None
    top_kernels: list[TopKernel]
    floor: Floor | None
    verdict: Verdict


class GroupSteps(DecodeSteps):
    """`analyze`'s steps: a decode step object for each group of steps in the trace."""

    group: str | None  # the enclosing ranges (`mode:eager > batch:8`), None if none


class DecodeMode(Model):
    mode: str
    batch: int
    tokens_per_s: float  # batch x 1000 / median step ms
    steps: DecodeSteps


class BatchPoint(Model):
    """One batch size: measured, and what the roofline predicts."""

    batch: int
    step_ms: float
    tokens_per_s: float
    predicted_tokens_per_s: float | None
    bound: Bound | None


class DecodeResult(Model):
    """`nsightlab profile decode --json` (and the run's result.json). A contract."""

    kind: Literal["decode"] = "decode"
    run_id: str | None = None
    device: str  # the GPU's name, or "cpu (NAME)" where CPU ops stand in for kernels
    model: DecodeModelInfo
    modes: list[DecodeMode]
    trace: TraceSummary | None
    batch_sweep: list[BatchPoint] | None
    lesson: list[str]
    notes: list[str]


class TraceResult(Model):
    """`nsightlab analyze TRACE --json` for a trace alone (a cuda_gpu_trace export, a
    Kineto file): the whole timeline and a decode step object per group of steps."""

    kind: Literal["trace"] = "trace"
    source: str
    input: Literal["nsys", "kineto"]
    device: str | None
    steps: list[GroupSteps]
    trace: TraceSummary
    notes: list[str]


class ModeTimeline(Model):
    """The median step of one mode and batch on the time axis (the report's picture)."""

    mode: str | None
    batch: int | None
    ops_are: Literal["gpu", "cpu"]
    timeline: StepTimeline


class RooflinePoint(Model):
    batch: float
    tokens_per_s: float
    bound: Bound | None


class DecodeTimelines(Model):
    """`timeline.json` of a decode run, what its figures need beyond the result: one
    step per mode and batch op by op, and the roofline's tokens/s as a curve of batch."""

    run_id: str | None
    device: str
    timelines: list[ModeTimeline]
    roofline: list[RooflinePoint] = Field(default_factory=list)
    roofline_mode: str | None = None
    crossover_batch: float | None = None
    bandwidth_label: str | None = None


# -------------------------------------------------------------------- bandwidth


class Bandwidth(Model):
    """What the floor divides by, where it came from, and the compute peak for the ridge."""

    tbps: float
    basis: Literal["measured", "spec"]
    label: str  # "measured DRAM plateau, run 3fa2c1 (float16 sweep)", "spec: NVIDIA H200 datasheet"
    peak_tflops: float | None = None  # dense matrix peak for the model's dtype, from the spec
    peak_label: str | None = None

    @property
    def ridge(self) -> float | None:
        """FLOP per byte where compute and memory take the same time."""
        if self.peak_tflops is None or self.tbps <= 0:
            return None
        return self.peak_tflops / self.tbps


def peak_tflops(spec: GpuSpec | None, dtype: str | None) -> tuple[float | None, str | None]:
    """The spec's dense matrix peak for a dtype: tensor cores for 16-bit types, the CUDA
    cores for float32; None where the table has no figure."""
    if spec is None:
        return None, None
    if dtype in ("bfloat16", "float16") and spec.fp16_tensor_tflops:
        return spec.fp16_tensor_tflops, f"{spec.short} dense FP16/BF16 tensor peak ({spec.source})"
    if dtype == "float32" and spec.fp32_tflops:
        return spec.fp32_tflops, f"{spec.short} FP32 peak ({spec.source})"
    return None, None


def spec_bandwidth(device: str | None, dtype: str | None) -> Bandwidth | None:
    """The spec's DRAM bandwidth for a GPU name, with its compute peak; None if unknown."""
    spec = lookup(device_name_of(device))
    if spec is None or spec.dram_bw_bytes_per_s is None:
        return None
    peak, peak_label = peak_tflops(spec, dtype)
    return Bandwidth(
        tbps=spec.dram_bw_bytes_per_s / 1e12,
        basis="spec",
        label=f"spec: {spec.source}",
        peak_tflops=peak,
        peak_label=peak_label,
    )


_DEVICE_INDEX = re.compile(r"\s*\(\d+\)$")


def device_name_of(name: str | None) -> str | None:
    """A GPU name as the spec table knows it: nsys's Device column adds the device
    index (`NVIDIA H100 80GB HBM3 (0)`)."""
    if not name:
        return None
    return _DEVICE_INDEX.sub("", name.strip()) or None


# ------------------------------------------------------------------ step objects


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (as the trace's step times are)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    h = (len(ordered) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def _idle_pct(group: StepGroup) -> float:
    window = sum(t.window_ns for t in group.steps)
    idle = sum(t.idle_ns for t in group.steps)
    return 100.0 * idle / window if window else 0.0


def _ms_text(ms: float) -> str:
    return units.duration(ms / 1e3)


RULE = (
    f"(thresholds: launch-bound at >= {LAUNCH_BOUND_IDLE_PCT:g}% idle; at the floor within {NEAR_FLOOR_RATIO:g}x of it)"
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
) -> Verdict:
    """The verdict in words with the next thing to try, printed with its thresholds.

    The decision is `verdicts.step_verdict`'s (the named thresholds LAUNCH_BOUND_IDLE_PCT and
    NEAR_FLOOR_RATIO, the ridge point); the words are for a decode step: on a CPU the CPU
    ops stand in for kernels and Python's overhead for launch gaps. Without a trace
    (`group` None) only the floor ratio is known: kind `no-trace`.
    """
    ridge = bandwidth.ridge if bandwidth is not None else None
    median = steps_ms.median
    unit = "CPU" if cpu else "GPU"
    ops = "ops" if cpu else "kernels"
    head = f"the step takes {_ms_text(median)}"
    if floor is not None:
        head += (
            f", the memory floor is {_ms_text(floor.floor_ms)} ({floor.basis} "
            f"{units.tbps_value(floor.bandwidth_tbps)} TB/s)"
        )
    ratio = median / floor.floor_ms if floor is not None and floor.floor_ms > 0 else None
    if group is None:
        base_kind = "no-trace"
        thresholds = {"launch_bound_idle_pct": LAUNCH_BOUND_IDLE_PCT, "near_floor_ratio": NEAR_FLOOR_RATIO}
    else:
        decided = step_verdict(group, floor=floor, flop_per_step=flop_per_step, ridge_flop_per_byte=ridge)
        base_kind, thresholds = decided.kind, decided.thresholds
    if base_kind == "no-trace":
        where = f"; {units.ratio(ratio)} the floor" if ratio is not None else ""
        return Verdict(
            kind="no-trace",
            text=f"{head}{where}; without a trace the {ops}, and how long the {unit} idles between them, are unknown "
            f"{RULE}",
            next_step="profile it (nsys, or --profiler torch) to see the kernels and the gaps between them",
            thresholds=thresholds,
        )
    assert group is not None
    anatomy = group.anatomy
    idle = _idle_pct(group)
    gaps = anatomy.idle_ms_per_step
    if base_kind == "launch-bound":
        split = (
            f"{_ms_text(gaps.between_kernels)} between {ops}, {_ms_text(gaps.before_first)} before the first, "
            f"{_ms_text(gaps.after_last)} after the last"
        )
        if cpu:
            text = (
                f"{head}; the CPU runs no op {units.percent(idle)} of each step ({split}): bound by "
                f"Python and dispatch overhead, as a GPU step is by its launches {RULE}"
            )
            nxt = "fewer, larger ops (torch.compile fuses them); on a GPU, capture the step in a CUDA graph"
        else:
            text = f"{head}; the GPU sits idle {units.percent(idle)} of each step ({split}): launch-bound {RULE}"
            if mode == "graphs":
                nxt = (
                    "the step is one graph replay already: the idle time is the CPU's work between "
                    "replays (sampling, copies to the host); overlap it with the next replay"
                )
            else:
                nxt = (
                    "capture the step in a CUDA graph (--modes graphs), or launch fewer, fused kernels (torch.compile)"
                )
        return Verdict(kind="launch-bound", text=text, next_step=nxt, thresholds=thresholds)
    if base_kind == "compute-bound" and floor is not None and flop_per_step is not None and ridge is not None:
        intensity = flop_per_step / floor.bytes_per_step
        at = f" at batch {batch}" if batch is not None else ""
        return Verdict(
            kind="compute-bound",
            text=(
                f"{head}; {units.sig(intensity)} FLOP per byte is above the GPU's ridge point of "
                f"{units.sig(ridge)} FLOP per byte: compute-bound{at} {RULE}"
            ),
            next_step="lower-precision matrix math (FP8), or a smaller batch per GPU for lower latency",
            thresholds=thresholds,
        )
    if base_kind == "near-memory-floor" and ratio is not None:
        return Verdict(
            kind="near-memory-floor",
            text=f"{head}; the step is {units.ratio(ratio)} the floor: the {unit}'s memory bandwidth is the limit "
            f"{RULE}",
            next_step=(
                "fewer bytes per token (a smaller or quantized model, a shorter KV cache), faster "
                "memory, or a larger batch, which reads the weights once for more tokens"
            ),
            thresholds=thresholds,
        )
    largest = ", ".join(f"{k.short_name} ({_ms_text(k.ms_per_step)})" for k in anatomy.top_kernels[:3])
    if base_kind == "memory-bound" and ratio is not None:
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
            nxt = "look at the largest kernels with ncu (DRAM throughput, achieved occupancy)"
        return Verdict(
            kind="memory-bound",
            text=(
                f"{head}; the {unit} is busy {units.percent(anatomy.gpu_busy_pct)} of the step but the step "
                f"is {units.ratio(ratio)} the floor: {why} {RULE}; largest {ops}: {largest}"
            ),
            next_step=nxt,
            thresholds=thresholds,
        )
    sweep = "`nsightlab sweep --local --device cpu`" if cpu else "`nsightlab sweep`"
    return Verdict(
        kind="busy",
        text=(
            f"{head}; the {unit} is busy {units.percent(anatomy.gpu_busy_pct)} of the step: not "
            f"launch-bound; no memory floor to compare with {RULE}; largest {ops}: {largest}"
        ),
        next_step=(
            f"measure this device's memory bandwidth ({sweep}) or give the bytes a step reads "
            "(--weights-gb, --kv-gb) to compare the step with its memory floor"
        ),
        thresholds=thresholds,
    )


def _steps_from_group(
    group: StepGroup,
    *,
    floor_bytes: int | None,
    flop_per_step: float | None,
    bandwidth: Bandwidth | None,
    cpu: bool,
    mode: str | None = None,
    batch: int | None = None,
) -> DecodeSteps:
    a = group.anatomy
    floor = None
    if floor_bytes is not None and bandwidth is not None:
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
        ),
    )


def _steps_from_script(entry: RecordEntry, *, bandwidth: Bandwidth | None, cpu: bool) -> DecodeSteps:
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
        verdict=verdict(stats, None, floor=floor, cpu=cpu),
    )


# ------------------------------------------------------------- groups and entries

_MODE_PART = re.compile(r"(?:^|:)mode:([A-Za-z0-9_-]+)$")
_BATCH_PART = re.compile(r"(?:^|:)batch:(\d+)$")


def group_key(label: str | None) -> tuple[str | None, int | None]:
    """(mode, batch) from a group label such as `mode:eager > batch:8`."""
    mode: str | None = None
    batch: int | None = None
    for part in (label or "").split(" > "):
        part = part.strip()
        if (m := _MODE_PART.search(part)) is not None:
            mode = m.group(1)
        elif (b := _BATCH_PART.search(part)) is not None:
            batch = int(b.group(1))
    return mode, batch


def _match(record: DecodeRecord, anatomy: TraceAnatomy | None) -> list[StepGroup | None]:
    """The trace's group of steps for each entry of the script, or None."""
    if anatomy is None or not anatomy.groups:
        return [None] * len(record.modes)
    by_key: dict[tuple[str | None, int | None], StepGroup] = {}
    for g in anatomy.groups:
        by_key.setdefault(group_key(g.group), g)
    out: list[StepGroup | None] = []
    for entry in record.modes:
        batch = entry.batch if entry.ranges.get("batch") else None
        out.append(by_key.get((entry.mode, batch)))
    if all(g is None for g in out) and len(record.modes) == 1 and len(anatomy.groups) == 1:
        out = [anatomy.groups[0]]  # a trace without the script's mode ranges: one run, one group
    return out


def device_label(name: str | None, device_type: str) -> str:
    """The GPU's name, or `cpu (NAME)`."""
    if device_type == "cpu":
        return f"cpu ({name})" if name else "cpu"
    return name or "unknown GPU"


# ------------------------------------------------------------------ the roofline


def _linear_model(entry: RecordEntry, model: RecordModel) -> tuple[float, float, float]:
    """(weight bytes W, bytes per extra sequence s, FLOP per sequence f) such that a step
    at batch B reads W + s*B bytes and does f*B FLOP (the script's own formulas, in which
    the KV cache and the FLOPs grow with the batch and the weights do not; an untied
    embedding table is read only for the batch's rows)."""
    b = entry.batch
    per_row = 0 if model.tied else model.hidden * model.element_size
    s = entry.kv_cache_bytes_per_step / b + per_row
    w = entry.bytes_per_step_floor - s * b
    f = entry.flops_per_step / b
    return w, s, f


def crossover_batch(entry: RecordEntry, model: RecordModel, ridge: float) -> float | None:
    """The batch where FLOP per byte reaches the ridge point: flops(B) / bytes(B) = ridge,
    B = ridge W / (f - ridge s). None when it never does (the KV cache grows as fast)."""
    w, s, f = _linear_model(entry, model)
    denominator = f - ridge * s
    if denominator <= 0 or w <= 0:
        return None
    return ridge * w / denominator


def predict(entry: RecordEntry, bandwidth: Bandwidth) -> tuple[float, Bound | None]:
    """Predicted step seconds (the larger of bytes / bandwidth and FLOP / peak) and what
    bounds it; without a compute peak, the memory floor alone (bound None)."""
    memory = entry.bytes_per_step_floor / (bandwidth.tbps * 1e12)
    if bandwidth.peak_tflops is None:
        return memory, None
    compute = entry.flops_per_step / (bandwidth.peak_tflops * 1e12)
    return (compute, "compute") if compute > memory else (memory, "memory")


def _batch_sweep(entries: list[tuple[RecordEntry, DecodeMode]], bandwidth: Bandwidth | None) -> list[BatchPoint]:
    points = []
    for entry, mode in sorted(entries, key=lambda em: em[0].batch):
        predicted: float | None = None
        bound: Bound | None = None
        if bandwidth is not None:
            seconds, bound = predict(entry, bandwidth)
            predicted = entry.batch / seconds
        points.append(
            BatchPoint(
                batch=entry.batch,
                step_ms=mode.steps.step_ms.median,
                tokens_per_s=mode.tokens_per_s,
                predicted_tokens_per_s=predicted,
                bound=bound,
            )
        )
    return points


# ------------------------------------------------------------------------- build


class DecodeBuild(Model):
    """The result, the runs list's headline, and each mode's median step for the figure."""

    result: DecodeResult
    headline: str | None
    timelines: DecodeTimelines


def _dedupe(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def build_decode(
    record: DecodeRecord,
    anatomy: TraceAnatomy | None,
    *,
    bandwidth: Bandwidth | None,
    bandwidth_notes: Sequence[str] = (),
    trace_device: str | None = None,
    no_trace_reason: str | None = None,
) -> DecodeBuild:
    """The decode result from the script's JSON and (if any) its trace's anatomy.

    `bandwidth` is the DRAM bandwidth for the floor (None: no floor, said in the notes);
    `trace_device` the GPU the trace's kernels ran on (it wins over the script's own
    description); `no_trace_reason` says why steps come from the script's timing.
    """
    cpu = anatomy.ops_are == "cpu" if anatomy is not None else record.device_type == "cpu"
    name = trace_device or record.device_name
    device = device_label(name if not cpu else record.device_name, "cpu" if cpu else "cuda")
    notes: list[str] = []
    mismatch = bool(trace_device and record.device_name and device_name_of(trace_device) != record.device_name)
    if mismatch:
        notes.append(
            f"the script describes its device as {record.device_name}; the trace's kernels ran on {trace_device}"
        )
    if anatomy is not None:
        notes.extend(attribution_lines(anatomy))
    m = record.model
    groups = _match(record, anatomy)
    modes: list[DecodeMode] = []
    timelines: list[ModeTimeline] = []
    headline_parts: list[str] = []
    lesson: list[str] = []
    for entry, group in zip(record.modes, groups, strict=True):
        if group is not None:
            steps = _steps_from_group(
                group,
                floor_bytes=entry.bytes_per_step_floor,
                flop_per_step=entry.flops_per_step,
                bandwidth=bandwidth,
                cpu=cpu,
                mode=entry.mode,
                batch=entry.batch,
            )
            notes.extend(group.anatomy.notes)
            if group.timeline is not None:
                timelines.append(
                    ModeTimeline(
                        mode=entry.mode, batch=entry.batch, ops_are="cpu" if cpu else "gpu", timeline=group.timeline
                    )
                )
            script_ms = entry.median_step_s * 1e3
            trace_ms = steps.step_ms.median
            if (
                script_ms > 0
                and trace_ms > 0
                and max(trace_ms, script_ms) / min(trace_ms, script_ms) > TIMING_DISAGREES_RATIO
            ):
                why = (
                    "; the profiler records every op, which slows a CPU step"
                    if cpu
                    else "; a step's window in the trace runs from its range's start to its last kernel's end"
                )
                notes.append(
                    f"{entry.mode}, batch {entry.batch}: the trace's median step is {_ms_text(trace_ms)}, "
                    f"the script's own timing {_ms_text(script_ms)}{why}"
                )
        else:
            steps = _steps_from_script(entry, bandwidth=bandwidth, cpu=cpu)
            if anatomy is not None:
                notes.append(
                    f"{entry.mode}, batch {entry.batch}: no steps of it in the trace; its steps come from the "
                    "script's own timing"
                )
        median = steps.step_ms.median
        tokens_per_s = entry.batch * 1000.0 / median if median > 0 else 0.0
        modes.append(DecodeMode(mode=entry.mode, batch=entry.batch, tokens_per_s=tokens_per_s, steps=steps))
    if anatomy is None and no_trace_reason:
        notes.append(no_trace_reason)
    smallest = min((e.batch for e in record.modes), default=1)
    for entry, mode, group in zip(record.modes, modes, groups, strict=True):
        if entry.batch != smallest:
            continue
        parts = [f"{mode.mode} {units.sig(mode.steps.step_ms.median)} ms/step"]
        if group is not None:
            parts.append(f"{units.percent(_idle_pct(group))} idle")
        if mode.steps.floor is not None and mode.steps.floor.floor_ms > 0:
            parts.append(f"{units.ratio(mode.steps.step_ms.median / mode.steps.floor.floor_ms)} floor")
        headline_parts.append(", ".join(parts))
        lesson.append(_story(mode, group, cpu))
    lesson.extend(_compare_modes(modes, groups))
    sweep: list[BatchPoint] | None = None
    batches = sorted({e.batch for e in record.modes})
    if len(batches) > 1:
        chosen = "graphs" if any(e.mode == "graphs" for e in record.modes) else record.modes[0].mode
        pairs = [(e, md) for e, md in zip(record.modes, modes, strict=True) if e.mode == chosen]
        sweep = _batch_sweep(pairs, bandwidth)
        notes.append(
            f"the batch sweep is the {chosen} mode's"
            + (" (launch gaps removed by the graph)" if chosen == "graphs" else "")
        )
        lesson.extend(_sweep_lesson(sweep, chosen))
    lesson.extend(_crossover_lesson(record, bandwidth))
    if bandwidth is not None:
        lesson.append(_floor_lesson(record, bandwidth, cpu))
    notes.extend(bandwidth_notes)
    cache = record.device.get("l2_bytes")
    smallest_entry = min(record.modes, key=lambda e: e.bytes_per_step_floor, default=None)
    if (
        not mismatch
        and bandwidth is not None
        and isinstance(cache, int)
        and smallest_entry is not None
        and smallest_entry.bytes_per_step_floor <= cache
    ):
        where = "last-level cache" if record.device_type == "cpu" else "L2 cache"
        notes.append(
            f"the bytes a step reads ({units.size(smallest_entry.bytes_per_step_floor)} at batch "
            f"{smallest_entry.batch}) fit in "
            f"the {units.size(cache)} {where}: they can come from the cache, faster than the DRAM floor allows"
        )
    if cpu and anatomy is not None:
        notes.append("the JSON keeps its GPU field names for CPU ops (kernels_per_step, gpu_busy_pct, top_kernels)")
    notes.extend(record.notes)
    result = DecodeResult(
        device=device,
        model=DecodeModelInfo(
            preset=m.preset,
            layers=m.layers,
            hidden=m.hidden,
            heads=m.heads,
            kv_heads=m.kv_heads,
            ffn=m.ffn,
            vocab=m.vocab,
            tied=m.tied,
            params=m.params,
            weight_bytes=m.weight_bytes,
            dtype=m.dtype,
        ),
        modes=modes,
        trace=anatomy.trace if anatomy is not None else None,
        batch_sweep=sweep,
        lesson=_dedupe(lesson),
        notes=_dedupe(notes),
    )
    figures = DecodeTimelines(run_id=None, device=device, timelines=timelines)
    if bandwidth is not None and record.modes:
        chosen = "graphs" if any(e.mode == "graphs" for e in record.modes) else record.modes[0].mode
        entry = next(e for e in record.modes if e.mode == chosen)
        ridge = bandwidth.ridge
        cross = crossover_batch(entry, m, ridge) if ridge is not None else None
        top = max(4 * max(e.batch for e in record.modes), 2 * cross if cross else 0, 8)
        figures.roofline = roofline_curve(entry, m, bandwidth, min(top, ROOFLINE_MAX_BATCH))
        figures.roofline_mode = chosen
        figures.crossover_batch = cross
        figures.bandwidth_label = f"{units.tbps_value(bandwidth.tbps)} TB/s ({bandwidth.label})"
    return DecodeBuild(result=result, headline="; ".join(headline_parts) or None, timelines=figures)


# The largest batch the roofline curve of the figure reaches.
ROOFLINE_MAX_BATCH = 8192


def roofline_curve(
    entry: RecordEntry, model: RecordModel, bandwidth: Bandwidth, top: float, points: int = 64
) -> list[RooflinePoint]:
    """The roofline's tokens/s at batches from 1 to `top` (geometric steps), from the
    script's linear model of bytes and FLOPs in the batch."""
    w, s, f = _linear_model(entry, model)
    out = []
    for k in range(points):
        b = top ** (k / (points - 1)) if top > 1 else 1.0
        memory = (w + s * b) / (bandwidth.tbps * 1e12)
        bound: Bound | None = "memory"
        seconds = memory
        if bandwidth.peak_tflops is not None:
            compute = f * b / (bandwidth.peak_tflops * 1e12)
            if compute > memory:
                seconds, bound = compute, "compute"
        else:
            bound = None
        out.append(RooflinePoint(batch=b, tokens_per_s=b / seconds, bound=bound))
    return out


# ------------------------------------------------------------------------ words


def _story(mode: DecodeMode, group: StepGroup | None, cpu: bool) -> str:
    """The sentence a person wants: step, floor, idle share, verdict, what to try."""
    s = mode.steps
    unit = "CPU" if cpu else "GPU"
    parts = [f"{mode.mode}, batch {mode.batch}: the decode step takes {_ms_text(s.step_ms.median)}"]
    if s.floor is not None:
        parts.append(f"the memory floor on this {unit} is {_ms_text(s.floor.floor_ms)} ({s.floor.basis})")
    if group is not None:
        idle = _idle_pct(group)
        if cpu:
            parts.append(f"the CPU runs no op {units.percent(idle)} of each step")
        else:
            parts.append(f"the GPU sits idle {units.percent(idle)} of each step between launches")
    words = {
        "launch-bound": "launch-bound" if not cpu else "bound by per-op overhead",
        "near-memory-floor": "at the memory floor",
        "memory-bound": "memory-bound, far from the floor",
        "compute-bound": "compute-bound",
        "busy": "busy, with no floor to compare",
        "no-trace": "a step whose cause needs a trace",
    }
    return f"{', '.join(parts)}: this is {words[s.verdict.kind]}; next: {s.verdict.next_step}."


def _compare_modes(modes: list[DecodeMode], groups: list[StepGroup | None]) -> list[str]:
    out = []
    by_key = {(m.mode, m.batch): (m, g) for m, g in zip(modes, groups, strict=True)}
    for (name, batch), (graphs, _g) in by_key.items():
        if name != "graphs" or ("eager", batch) not in by_key:
            continue
        eager, eg = by_key[("eager", batch)]
        e_ms, g_ms = eager.steps.step_ms.median, graphs.steps.step_ms.median
        if e_ms <= 0 or g_ms <= 0:
            continue
        text = (
            f"batch {batch}: graphs {_ms_text(g_ms)} against eager {_ms_text(e_ms)} per step "
            f"({units.ratio(e_ms / g_ms)} faster); the same kernels, launched by one graph replay"
        )
        if eager.steps.idle_ms_per_step is not None and eg is not None:
            text += (
                f": eager idles {_ms_text(eager.steps.idle_ms_per_step.between_kernels)} between kernels "
                "in each step, the cost of launching them one by one from Python"
            )
        out.append(text + ".")
    return out


def _sweep_lesson(sweep: list[BatchPoint], mode: str) -> list[str]:
    first, last = sweep[0], sweep[-1]
    if first.tokens_per_s <= 0 or first.step_ms <= 0:
        return []
    return [
        f"{mode}, batch {first.batch} -> {last.batch}: {units.sig(first.tokens_per_s)} -> "
        f"{units.sig(last.tokens_per_s)} tokens/s ({units.ratio(last.tokens_per_s / first.tokens_per_s)}) while the "
        f"step grows {units.ratio(last.step_ms / first.step_ms)}: one step reads the weights once for every "
        "sequence in the batch."
    ]


def _crossover_lesson(record: DecodeRecord, bandwidth: Bandwidth | None) -> list[str]:
    if bandwidth is None or bandwidth.ridge is None or not record.modes:
        return []
    entry = record.modes[0]
    ridge = bandwidth.ridge
    cross = crossover_batch(entry, record.model, ridge)
    context = f"a mean context of {units.sig(record.prompt_len + (record.tokens + 1) / 2)} positions"
    if cross is None:
        return [
            f"At {context} decode never leaves the memory roof on this GPU: the KV cache grows with the "
            f"batch as fast as the FLOPs, and FLOP per byte stays below the ridge point of {units.sig(ridge)} "
            f"({bandwidth.peak_label})."
        ]
    return [
        f"Decode stops being memory-bound at batch {math.ceil(cross)} on this GPU (at {context}): there "
        f"FLOP per byte reaches the ridge point, {units.sig(bandwidth.peak_tflops or 0)} TFLOP/s / "
        f"{units.tbps_value(bandwidth.tbps)} TB/s = {units.sig(ridge)} FLOP per byte ({bandwidth.peak_label})."
    ]


def _floor_lesson(record: DecodeRecord, bandwidth: Bandwidth, cpu: bool) -> str:
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


# ---------------------------------------------------------------- analyze: traces


def steps_report(
    anatomy: TraceAnatomy,
    *,
    floor_bytes: int | None = None,
    bandwidth: Bandwidth | None = None,
) -> list[GroupSteps]:
    """A decode step object for each group of steps of a trace (`analyze`)."""
    cpu = anatomy.ops_are == "cpu"
    out = []
    for g in anatomy.groups:
        mode, batch = group_key(g.group)
        steps = _steps_from_group(
            g, floor_bytes=floor_bytes, flop_per_step=None, bandwidth=bandwidth, cpu=cpu, mode=mode, batch=batch
        )
        out.append(GroupSteps(group=g.group, **steps.model_dump()))
    return out


def trace_device(anatomy: TraceAnatomy, fallback: str | None = None) -> str | None:
    """The device a trace ran on: its GPU (one name, else all of them), or `cpu`."""
    if anatomy.ops_are == "cpu":
        return device_label(fallback, "cpu")
    names = _dedupe([name for name in map(device_name_of, anatomy.device_names) if name])  # "" names none
    if names:
        return ", ".join(names)
    return fallback


def attribution_lines(anatomy: TraceAnatomy) -> list[str]:
    """How operations were attributed to steps, in words (for the notes)."""
    how = {
        "launch": (
            "kernels were attributed to steps by their launch"
            + (" (cuda_api_trace)" if anatomy.input == "nsys" else "")
            + ": each belongs to the step whose range holds the CUDA call that launched it (matched "
            "by correlation id; a graph replay's kernels share the replay's)"
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
        return ["steps were inferred from a repeating kernel sequence: the trace has no step ranges"]
    return []
