"""Decode runs and GPU timelines on disk: the floor's bandwidth from the stored sweeps,
traces found in files and folders, their step anatomy, the names nsys gives its trace
reports, and a decode run's timeline for the report.

The floor's bandwidth (`floor_bandwidth`): the DRAM plateau of the latest stored sweep
on the same device (same name, or the same spec-table GPU), else the GPU's spec; a CPU
has no spec here, so only a sweep of that CPU gives it a floor.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nsightlab.analysis.decode_models import (
    Bandwidth,
    DecodeTimelines,
    GroupSteps,
    TraceResult,
    device_name_of,
    peak_tflops,
    spec_bandwidth,
)
from nsightlab.analysis.decode_result import DecodeBuild, build_decode, steps_report, trace_device
from nsightlab.analysis.engine_ranges import RANGES_LISTED
from nsightlab.analysis.explain.decode_words import Command
from nsightlab.analysis.explain.step_words import attribution_lines
from nsightlab.analysis.steps import TraceAnatomy, analyze_gpu_trace, analyze_kineto
from nsightlab.errors import ParseError, UsageError
from nsightlab.parse import gputrace
from nsightlab.parse.records.decode_record import DecodeRecord
from nsightlab.runs import store
from nsightlab.runs.store import Run
from nsightlab.runs.sweeps import load_sweep_run
from nsightlab.specs.gpus import lookup

#: The trace reports a step anatomy reads from `nsys stats`, and older names for them.
TRACE_REPORTS: dict[str, tuple[str, ...]] = {
    "cuda_gpu_trace": ("cuda_gpu_trace", "gputrace"),
    "nvtx_pushpop_trace": ("nvtx_pushpop_trace", "nvtxpptrace"),
    "nvtx_gpu_proj_trace": ("nvtx_gpu_proj_trace",),
    "cuda_api_trace": ("cuda_api_trace", "cudaapitrace"),
}
TIMELINE_FILE = "timeline.json"
_KINETO_SUFFIXES = (".json.gz", ".pt.trace.json", ".pt.trace.json.gz")
# How much of a .json file is read to tell a Chrome trace from nsightlab's own JSON.
_SNIFF_BYTES = 1 << 16


# ------------------------------------------------------------------------ the floor


def _same_device(a_name: str | None, a_type: str, b_name: str | None, b_type: str) -> bool:
    if a_type != b_type or not a_name or not b_name:
        return False
    a, b = device_name_of(a_name), device_name_of(b_name)
    if a == b:
        return True
    spec_a, spec_b = lookup(a), lookup(b)
    return spec_a is not None and spec_a == spec_b


def floor_bandwidth(device_name: str | None, device_type: str, dtype: str | None) -> tuple[Bandwidth | None, list[str]]:
    """The bandwidth a decode step's floor divides by, and notes saying where it came from."""
    spec = lookup(device_name_of(device_name)) if device_type != "cpu" else None
    peak, peak_label = peak_tflops(spec, dtype)
    what = device_name or device_type
    for run in reversed(store.all_runs()):
        try:
            if not run.has_result() or run.meta().kind != "sweep":
                continue
            sweep = load_sweep_run(str(run.path))
        except (UsageError, ValueError):
            continue
        s = sweep.summary
        if s.dram_tbps is None or not _same_device(s.device_name, s.device_type, device_name, device_type):
            continue
        label = f"measured DRAM plateau of sweep run {sweep.run_id} ({sweep.dtype}) on {what}"
        measured = Bandwidth(tbps=s.dram_tbps, basis="measured", label=label, peak_tflops=peak, peak_label=peak_label)
        return measured, [f"the floor's bandwidth: the {label}"]
    if device_type == "cpu":
        return None, [
            f"no floor: no stored sweep of this CPU ({what}) reached a DRAM plateau, and a CPU has no "
            "spec here; `nsightlab sweep --local --device cpu` measures its memory bandwidth"
        ]
    spec_bw = spec_bandwidth(device_name, dtype)
    if spec_bw is None:
        return None, [f"no floor: {what} is not in the spec table and no stored sweep of it reached a DRAM plateau"]
    return spec_bw, [
        f"the floor's bandwidth: the {spec_bw.label} (no stored sweep of {what} reached a DRAM plateau; "
        "`nsightlab sweep` measures what the GPU really delivers, typically 70-90% of the spec)"
    ]


def decode_build(
    record: DecodeRecord,
    anatomy: TraceAnatomy | None,
    *,
    no_trace_reason: str | None = None,
    command: Command = "profile decode",
) -> DecodeBuild:
    """`build_decode` with the floor's bandwidth looked up in the store."""
    cpu = anatomy.ops_are == "cpu" if anatomy is not None else record.device_type == "cpu"
    device = None
    if anatomy is not None and not cpu:
        device = trace_device(anatomy)
    name = device or record.device_name
    bandwidth, notes = floor_bandwidth(name, "cpu" if cpu else "cuda", record.model.dtype)
    return build_decode(
        record,
        anatomy,
        bandwidth=bandwidth,
        bandwidth_notes=notes,
        trace_device=device,
        no_trace_reason=no_trace_reason,
        command=command,
    )


# -------------------------------------------------------------------- finding traces


def is_kineto_file(path: Path) -> bool:
    """A Chrome trace (torch.profiler, vLLM): `.json.gz`, `.pt.trace.json[.gz]`, or a
    `.json` whose beginning holds `traceEvents` (nsightlab's own JSON never does)."""
    name = path.name.lower()
    if not path.is_file():
        return False
    if name.endswith(_KINETO_SUFFIXES):
        return True
    if not name.endswith(".json"):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except OSError:
        return False
    if head[:2] == b"\x1f\x8b":
        return True  # gzipped: a trace (nsightlab's own JSON is never compressed)
    return b'"traceEvents"' in head or (head.lstrip()[:1] == b"[" and b'"ph"' in head)


def trace_report(path: Path) -> str | None:
    """The nsys trace report a CSV holds (by its `BASE_<report>.csv` name, else its
    header), or None for any other CSV."""
    name = path.name.lower().removesuffix(".csv")
    for report, aliases in TRACE_REPORTS.items():
        if any(name == a or name.endswith("_" + a) for a in aliases):
            return report
    named = gputrace.report_of_file(path)
    if named is not None:
        return named
    try:
        return gputrace.identify_file(path)
    except ParseError:
        return None


def split_csvs(paths: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """(trace exports, other CSVs) of a folder's CSV files."""
    traces: list[Path] = []
    others: list[Path] = []
    for p in paths:
        (traces if trace_report(p) is not None else others).append(p)
    return traces, others


def gpu_anatomy(trace_csvs: Sequence[Path], step_range: str | None = None) -> TraceAnatomy:
    """The step anatomy of one capture's trace exports (one cuda_gpu_trace among them),
    with tiled windows: a step queued behind the previous one is timed from its end."""
    return analyze_gpu_trace(list(trace_csvs), step_range, tile=True)


def kineto_anatomy(path: Path, step_range: str | None = None) -> TraceAnatomy:
    """The step anatomy of a Kineto trace, windows tiled as for `gpu_anatomy`."""
    return analyze_kineto(path, step_range, tile=True)


# ------------------------------------------------------------------- analyze: steps


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


def group_steps(
    anatomy: TraceAnatomy, opts: TraceOptions, source: Path | None = None
) -> tuple[list[GroupSteps], str | None, list[str]]:
    """The step objects of a trace, its device, and notes (attribution, the floor's source,
    and, for a trace whose named ranges are no steps, the command that times one)."""
    device = trace_device(anatomy)
    notes = [*attribution_lines(anatomy), *anatomy.notes, *range_offer(anatomy, source)]
    bandwidth = None
    if opts.floor_bytes is not None:
        if anatomy.ops_are == "cpu":
            notes.append("no floor: a CPU trace does not name its CPU, so no sweep or spec can be matched to it")
        else:
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
    if not anatomy.ranges or any(g.anatomy.source != "repeating-sequence" for g in anatomy.groups):
        return []
    listed = ", ".join(f"{r.name} ({r.count})" for r in anatomy.ranges[:RANGES_LISTED])
    more = f", and {len(anatomy.ranges) - RANGES_LISTED} more" if len(anatomy.ranges) > RANGES_LISTED else ""
    name = anatomy.ranges[0].name.removesuffix("#N")
    command = shlex.join(["nsightlab", "analyze", str(source) if source is not None else "PATH", "--step-range", name])
    return [
        f"the trace has named ranges, none of them a step range nsightlab knows (an engine's, decode_step, "
        f"ProfilerStep): {listed}{more}; to time one of them as the step: `{command}`"
    ]


def _group_notes(anatomy: TraceAnatomy, g: GroupSteps) -> list[str]:
    for group in anatomy.groups:
        if group.group == g.group:
            return list(group.anatomy.notes)
    return []


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


# ------------------------------------------------------- nsys's report names


def report_names(help_text: str) -> set[str]:
    """The report names `nsys stats --help-reports` lists (`  cuda_gpu_trace[:nvtx-name]...
    -- CUDA GPU Trace` gives `cuda_gpu_trace`)."""
    out = set()
    for line in help_text.splitlines():
        if line.startswith((" ", "\t")) and line.strip():
            word = line.split()[0]
            out.add(word.split("[")[0].split(":")[0])
    return out


def listed_name(report: str, listed: set[str]) -> str | None:
    """The name this nsys gives `report` (an older alias where it has one), None when it
    lacks it; every name when the list could not be read."""
    for alias in TRACE_REPORTS.get(report, (report,)):
        if alias in listed:
            return alias
    return report if not listed else None


# ------------------------------------------------------------------- the report


def load_timelines(run: Run) -> DecodeTimelines | None:
    """A decode run's `timeline.json`, or None (a run stored without one)."""
    path = run.path / TIMELINE_FILE
    if not path.is_file():
        return None
    try:
        return DecodeTimelines.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
