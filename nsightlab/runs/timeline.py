"""A capture's GPU timeline on disk, loaded once and analysed: its step anatomy, the
steps grouped for `analyze` (with their memory floor where the bytes a step reads are
given), and the result of a trace alone.

A `Timeline` names the files of one capture (`nsightlab.runs.inputs` finds them): nsys's
trace exports (`nsys stats --format csv`, one `cuda_gpu_trace` among them), a Kineto
trace (torch.profiler, vLLM, SGLang), or a report's SQLite export. `anatomy` reads it and
returns its step anatomy (`nsightlab.analysis.steps`): windows tiled, so a step queued
behind the previous one is timed from that one's end.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from nsightlab.analysis.decode_models import GroupSteps, TraceResult
from nsightlab.analysis.decode_result import steps_report, trace_device
from nsightlab.analysis.engine_ranges import RANGES_LISTED
from nsightlab.analysis.explain.step_words import attribution_lines
from nsightlab.analysis.steps import TraceAnatomy, analyze_gpu_trace, analyze_kineto, analyze_nsys_trace
from nsightlab.errors import UsageError

if TYPE_CHECKING:
    from nsightlab.analysis.profile_models import ProfileResult
    from nsightlab.parse.nsys_sqlite_trace import SqliteTrace


@dataclass(frozen=True)
class TraceOptions:
    """`analyze`'s options for a GPU timeline."""

    step_range: str | None = None
    weights_gb: float | None = None
    kv_gb: float | None = None

    def __post_init__(self) -> None:
        if self.weights_gb is not None and self.weights_gb <= 0:
            raise UsageError(f"--weights-gb must be positive, got {self.weights_gb:g}")
        if self.kv_gb is not None and (self.kv_gb < 0 or self.weights_gb is None):
            raise UsageError("--kv-gb adds the KV cache to --weights-gb: give both (--kv-gb 0 or more)")

    @property
    def used(self) -> bool:
        return self.step_range is not None or self.weights_gb is not None

    @property
    def floor_bytes(self) -> int | None:
        if self.weights_gb is None:
            return None
        return round((self.weights_gb + (self.kv_gb or 0.0)) * 1e9)


# ------------------------------------------------------------------ loading a timeline


@dataclass(frozen=True)
class Timeline:
    """The files of one capture's GPU timeline: its nsys trace CSV exports (`nsys-csv`,
    one cuda_gpu_trace among them), a Kineto trace, or an nsys SQLite export."""

    format: Literal["nsys-csv", "kineto", "sqlite"]
    files: tuple[Path, ...]

    def anatomy(self, step_range: str | None = None) -> TraceAnatomy | None:
        """The step anatomy of the timeline, read once; None only for an SQLite export
        that holds no GPU operation."""
        if self.format == "nsys-csv":
            return gpu_anatomy(self.files, step_range)
        if self.format == "kineto":
            return kineto_anatomy(self.files[0], step_range)
        return sqlite_anatomy_of(self.files[0], step_range)


def gpu_anatomy(trace_csvs: Sequence[Path], step_range: str | None = None) -> TraceAnatomy:
    """The step anatomy of one capture's trace exports (one cuda_gpu_trace among them),
    with tiled windows: a step queued behind the previous one is timed from its end."""
    return analyze_gpu_trace(list(trace_csvs), step_range, tile=True)


def kineto_anatomy(path: Path, step_range: str | None = None) -> TraceAnatomy:
    """The step anatomy of a Kineto trace, windows tiled as for `gpu_anatomy`."""
    return analyze_kineto(path, step_range, tile=True)


def sqlite_anatomy(trace: SqliteTrace, step_range: str | None) -> TraceAnatomy | None:
    """The step anatomy of an open SQLite export's timeline (windows tiled, as for the
    CSV exports); None when it holds no GPU operation."""
    if not len(trace.gpu_columns().start):
        return None
    return analyze_nsys_trace(trace, step_range, tile=True)


def sqlite_anatomy_of(path: Path, step_range: str | None = None) -> TraceAnatomy | None:
    """The step anatomy of the SQLite export at `path` (see `sqlite_anatomy`)."""
    # the SQLite reader loads only for an export: 10 ms that a Kineto trace's analysis need not wait for
    from nsightlab.parse.nsys_sqlite_trace import SqliteTrace

    with SqliteTrace.open(path) as trace:
        return sqlite_anatomy(trace, step_range)


# ------------------------------------------------------------------ steps for analyze


def group_steps(
    anatomy: TraceAnatomy, opts: TraceOptions, source: Path | None = None
) -> tuple[list[GroupSteps], str | None, list[str]]:
    """The step objects of a trace, its device, and notes (attribution, the floor's source,
    and, for a trace whose named ranges are no steps, the command that times one)."""
    device = trace_device(anatomy)
    if anatomy.captured:  # no steps to time, offer or compare with a floor
        return [], device, list(dict.fromkeys(anatomy.notes))
    notes = [*attribution_lines(anatomy), *anatomy.notes, *range_offer(anatomy, source)]
    bandwidth = None
    if opts.floor_bytes is not None:
        if anatomy.ops_are == "cpu":
            notes.append("no floor: a CPU trace does not name its CPU, so no sweep or spec can be matched to it")
        else:
            # the floor reads the stored sweeps (the run store, PyYAML, the sweep models: 25 ms)
            # only when --weights-gb asks for one
            from nsightlab.runs.floor import floor_bandwidth

            bandwidth, more = floor_bandwidth(device, "cuda", None)
            notes.extend(more)
    elif anatomy.ops_are != "cpu":
        notes.append(
            "no floor: give the bytes one step reads (--weights-gb, and --kv-gb for the KV cache) to compare "
            "each step with its memory floor"
        )
    groups = steps_report(anatomy, floor_bytes=opts.floor_bytes, bandwidth=bandwidth)
    for g in groups:
        notes.extend(_group_notes(anatomy, g))
    return groups, device, list(dict.fromkeys(notes))


def range_offer(anatomy: TraceAnatomy, source: Path | None) -> list[str]:
    """When no range of the trace is a step (none, or steps inferred from the kernel
    sequence) but it has named ranges: a note listing them, with the command that times
    the most frequent one as the step."""
    if not anatomy.ranges:
        return []
    if any(g.anatomy.source != "repeating-sequence" for g in anatomy.groups):
        return _compiled_offer(anatomy, source)
    listed = ", ".join(f"{r.name} ({r.count})" for r in anatomy.ranges[:RANGES_LISTED])
    more = f", and {len(anatomy.ranges) - RANGES_LISTED} more" if len(anatomy.ranges) > RANGES_LISTED else ""
    head = (
        f"the trace has named ranges, none of them a step range nsightlab knows (an engine's, decode_step, "
        f"ProfilerStep): {listed}{more}"
    )
    # torch.compile's own ranges around each call of a compiled graph are no steps to offer
    offered = [r for r in anatomy.ranges if not (r.name.startswith("## ") and r.name.endswith(" ##"))]
    if not offered:
        return [f"{head}; they are torch.compile's calls of its compiled graphs, not steps"]
    command = _step_range_command(source, offered[0].name.removesuffix("#N"))
    return [f"{head}; to time one of them as the step: `{command}`"]


def _step_range_command(source: Path | None, name: str) -> str:
    """The `analyze` command that times the ranges called `name` as the steps."""
    return shlex.join(["nsightlab", "analyze", str(source) if source is not None else "PATH", "--step-range", name])


def _compiled_offer(anatomy: TraceAnatomy, source: Path | None) -> list[str]:
    """A lone step (a ProfilerStep around a whole generation) that calls one compiled graph
    again and again (a diffusion model's denoising steps): the command that times each call."""
    if (
        len(anatomy.groups) != 1
        or anatomy.groups[0].anatomy.count != 1
        or anatomy.groups[0].anatomy.source == "step-range"
    ):
        return []
    calls = [r for r in anatomy.ranges if r.name.startswith("## Call CompiledFxGraph") and r.count >= 2]
    if not calls:
        return []
    top = calls[0]
    command = _step_range_command(source, top.name)
    return [
        f"the one step calls one compiled graph {top.count} times (torch.compile's range {top.name}): to time "
        f"each call as a step (a diffusion model's denoising step, say): `{command}`"
    ]


def _group_notes(anatomy: TraceAnatomy, g: GroupSteps) -> list[str]:
    for group in anatomy.groups:
        if group.group == g.group:
            return list(group.anatomy.notes)
    return []


def attach_steps(result: ProfileResult, anatomy: TraceAnatomy, opts: TraceOptions, source: Path | None = None) -> None:
    """The step anatomy of the capture's trace, added to a profile's tables (its own keys
    keep their values); `source` is the path a command offered in a note names."""
    steps, _device, notes = group_steps(anatomy, opts, source)
    result.steps, result.trace_summary, result.trace_notes = steps, anatomy.trace, notes


def trace_result(source: Path, anatomy: TraceAnatomy, opts: TraceOptions) -> TraceResult:
    """`analyze` on a trace alone: its steps, the whole timeline, its top kernels (kernels
    only, as `analyze` of a kernel summary lists them) and its named ranges."""
    groups, device, notes = group_steps(anatomy, opts, source)
    return TraceResult(
        source=str(source),
        input=anatomy.input,
        device=device,
        steps=groups,
        trace=anatomy.trace,
        notes=notes,
        kernels=anatomy.kernels,
        ranges=anatomy.ranges,
    )
