"""Decode runs on disk: a decode result built with the floor's bandwidth from the store,
the names this machine's nsys gives the trace reports a decode capture exports, and a
decode run's timeline for the report.
"""

from __future__ import annotations

from nsightlab.analysis.decode_models import DecodeTimelines
from nsightlab.analysis.decode_result import DecodeBuild, build_decode, trace_device
from nsightlab.analysis.explain.decode_words import Command
from nsightlab.analysis.steps import TraceAnatomy
from nsightlab.parse.records.decode_record import DecodeRecord
from nsightlab.runs.floor import floor_bandwidth
from nsightlab.runs.inputs import TRACE_REPORTS
from nsightlab.runs.store import Run

TIMELINE_FILE = "timeline.json"


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
