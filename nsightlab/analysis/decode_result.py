"""Where a token's time goes: a decode run's result, per mode and batch.

`build_decode(record, anatomy, bandwidth=...)` puts together what `lab_scripts/decode.py`
says about its work (the model, the bytes one step must read, its FLOPs, its own step
times) and what a trace says about its steps (`nsightlab.analysis.steps`): the step time,
how busy the GPU is in a step and where it idles, the top kernels, the memory floor
(bytes per step / DRAM bandwidth), the verdict and the batch sweep against the roofline.
`steps_report(anatomy, ...)` is the same step objects for a trace alone (`analyze`).
The sentences are `explain.decode_words`; the script's record is read by
`parse.records.decode_record`.

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

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nsightlab import units
from nsightlab.analysis.decode_models import (
    Bandwidth,
    BatchPoint,
    Bound,
    DecodeMode,
    DecodeModelInfo,
    DecodeResult,
    DecodeTimelines,
    GroupSteps,
    ModeTimeline,
    RooflinePoint,
    device_name_of,
)
from nsightlab.analysis.explain.decode_words import (
    Command,
    compare_modes,
    crossover_lesson,
    floor_lesson,
    idle_pct,
    steps_from_group,
    steps_from_script,
    story,
    sweep_lesson,
)
from nsightlab.analysis.explain.step_words import attribution_lines
from nsightlab.analysis.stepmodels import StepGroup, TraceAnatomy
from nsightlab.models import Model

if TYPE_CHECKING:  # decode.py's record (and the bounds its loader checks): not loaded for a trace's steps
    from nsightlab.parse.records.decode_record import DecodeRecord, RecordEntry, RecordModel

# A note when the trace's step time and the script's own differ by more than this factor.
TIMING_DISAGREES_RATIO = 1.2


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
    command: Command = "profile decode",
) -> DecodeBuild:
    """The decode result from the script's JSON and (if any) its trace's anatomy.

    `bandwidth` is the DRAM bandwidth for the floor (None: no floor, said in the notes);
    `trace_device` the GPU the trace's kernels ran on (it wins over the script's own
    description); `no_trace_reason` says why steps come from the script's timing;
    `command` is the command that was run (its advice names that command's options).
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
    l2 = record.device.get("l2_bytes")
    cache = l2 if isinstance(l2, int) and not mismatch else None
    modes: list[DecodeMode] = []
    timelines: list[ModeTimeline] = []
    headline_parts: list[str] = []
    lesson: list[str] = []
    for entry, group in zip(record.modes, groups, strict=True):
        if group is not None:
            steps = steps_from_group(
                group,
                floor_bytes=entry.bytes_per_step_floor,
                flop_per_step=entry.flops_per_step,
                bandwidth=bandwidth,
                cpu=cpu,
                mode=entry.mode,
                batch=entry.batch,
                cache_bytes=cache,
                command=command,
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
                    f"{entry.mode}, batch {entry.batch}: the trace's median step is "
                    f"{units.duration(trace_ms / 1e3)}, the script's own timing {units.duration(script_ms / 1e3)}{why}"
                )
        else:
            steps = steps_from_script(entry, bandwidth=bandwidth, cpu=cpu, cache_bytes=cache)
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
            parts.append(f"{units.percent(idle_pct(group))} idle")
        if mode.steps.floor is not None and mode.steps.floor.floor_ms > 0:
            parts.append(f"{units.ratio(mode.steps.step_ms.median / mode.steps.floor.floor_ms)} floor")
        headline_parts.append(", ".join(parts))
        lesson.append(story(mode, group, cpu))
    lesson.extend(compare_modes(modes, groups))
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
        lesson.extend(sweep_lesson(sweep, chosen))
    if bandwidth is not None and bandwidth.ridge is not None and record.modes:
        first_ridge = bandwidth.ridge
        lesson.append(
            crossover_lesson(record, bandwidth, crossover_batch(record.modes[0], m, first_ridge), first_ridge)
        )
    if bandwidth is not None:
        lesson.append(floor_lesson(record, bandwidth, cpu))
    notes.extend(bandwidth_notes)
    smallest_entry = min(record.modes, key=lambda e: e.bytes_per_step_floor, default=None)
    if (
        not mismatch
        and bandwidth is not None
        and cache is not None
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


# ---------------------------------------------------------------- analyze: traces


def steps_report(
    anatomy: TraceAnatomy,
    *,
    floor_bytes: int | None = None,
    bandwidth: Bandwidth | None = None,
) -> list[GroupSteps]:
    """A decode step object for each group of steps of a trace (`analyze`)."""
    cpu = anatomy.ops_are == "cpu"
    amd = any(name.startswith("AMD ") for name in anatomy.device_names)
    out = []
    for g in anatomy.groups:
        mode, batch = group_key(g.group)
        steps = steps_from_group(
            g,
            floor_bytes=floor_bytes,
            flop_per_step=None,
            bandwidth=bandwidth,
            cpu=cpu,
            mode=mode,
            batch=batch,
            command="analyze",
            script=False,
            amd=amd,
            kineto=anatomy.input == "kineto",
        )
        out.append(GroupSteps(group=g.group, **steps.model_dump()))
    return out


def trace_device(anatomy: TraceAnatomy, fallback: str | None = None) -> str | None:
    """The device a trace ran on: its GPU (one name, else all of them), or `cpu`."""
    if anatomy.ops_are == "cpu":
        return device_label(fallback, "cpu")
    names = _dedupe([name for n in anatomy.device_names if (name := device_name_of(n))])
    if names:
        return ", ".join(names)
    return fallback
