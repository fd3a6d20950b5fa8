"""`analyze`: the live commands' tables from files, offline.

What a path holds is decided once (`nsightlab.runs.inputs.detect`: a stored run, a
report's SQLite export or `.nsys-rep`, `nsys stats` CSV exports or console output, an ncu
CSV, a Kineto trace, a lab script's JSON, the folder `bench/gpu_run.sh` wrote); each kind
of input has one analysis here (`ANALYSES`). A file that cannot be parsed is exit 2
naming the file and the line.

Whenever the input holds a GPU timeline (a `cuda_gpu_trace` export, alone or in a folder
with the other trace exports of its capture; a report's SQLite export; a Kineto trace; a
`.nsys-rep`, exported to SQLite with the local nsys, with the script's JSON beside it if
any; a run folder that has one) it is loaded once and the step anatomy is added: `steps`
(a decode step object per group of steps) and `trace` (`nsightlab.runs.timeline`); a
profile's tables gain `steps`, `trace_summary` and `trace_notes` (its `trace` names its
trace file). The keys the other inputs give keep their values.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from nsightlab.errors import ParseError, UsageError
from nsightlab.runs.inputs import (
    DecodeCapture,
    GpuRunFolder,
    Input,
    NcuExport,
    NsysCsvs,
    NsysRep,
    NsysSqlite,
    NsysText,
    ScriptJson,
    StoredRun,
    TraceFiles,
    detect,
    detect_folder,
    read_whole,
    refuse_lfs_pointer,
)
from nsightlab.runs.timeline import TraceOptions, attach_steps, trace_result

if TYPE_CHECKING:
    from nsightlab.analysis.decode_models import DecodeResult
    from nsightlab.analysis.profile_models import ProfileResult
    from nsightlab.parse import nsys

# The readers and result models of the inputs other than a trace (nsys and ncu tables,
# profiles, sweeps, decode.py's record and its result, the run store with the config and
# PyYAML, a device run's folder) are imported by the analyses that read them: a trace's
# analysis, the common case, need not wait for them (bench/RESULTS.md, "analyze's fixed
# cost"; tests/test_analyze_imports.py checks what a Kineto trace's analysis loads).


def analyze_path(
    path: Path, *, step_range: str | None = None, weights_gb: float | None = None, kv_gb: float | None = None
) -> BaseModel:
    """Parse and analyse whatever PATH is; see the module docstring. A path that exists
    is read as a file or folder; anything else is looked up as a stored run. `step_range`,
    `weights_gb` and `kv_gb` apply to a GPU timeline (exit 2 for an input without one)."""
    opts = TraceOptions(step_range, weights_gb, kv_gb)
    try:
        result = analyze_input(detect(path), opts)
    except ParseError as e:
        if e.source is not None and os.path.isfile(e.source):
            refuse_lfs_pointer(Path(e.source))  # a clone without the file: say that instead
        raise
    if opts.used and getattr(result, "steps", None) is None and getattr(result, "modes", None) is None:
        raise UsageError(
            f"--step-range and --weights-gb need a GPU timeline, and {path} holds none",
            hint="Give a cuda_gpu_trace export (or a folder of them), a Kineto trace or a .nsys-rep.",
        )
    return result


def analyze_input(found: Input, opts: TraceOptions) -> BaseModel:
    """The analysis of one input, by its kind."""
    analysis: Callable[[Any, TraceOptions], BaseModel] = ANALYSES[type(found)]
    return analysis(found, opts)


# ---------------------------------------------------------------------------- one per kind


def _stored_run(found: StoredRun, opts: TraceOptions) -> BaseModel:
    """The stored result (whatever state the run is in), with the steps of its capture's
    timeline for a profile."""
    from nsightlab.analysis.decode_models import DecodeResult
    from nsightlab.analysis.profile_models import ProfileResult
    from nsightlab.runs import store

    stored = store.stored_result(found.folder)
    if isinstance(stored, DecodeResult) and opts.used:
        return analyze_input(detect_folder(found.folder / "raw"), opts)  # the stored result's own options otherwise
    if isinstance(stored, ProfileResult) and found.timeline is not None:
        anatomy = found.timeline.anatomy(opts.step_range)
        if anatomy is not None:
            attach_steps(stored, anatomy, opts, found.folder)
    return stored


def _gpu_run(found: GpuRunFolder, opts: TraceOptions) -> BaseModel:
    """Each record read as a file of its own (`nsightlab.runs.gpurun`)."""
    from nsightlab.runs.gpurun import analyze_gpu_run

    if opts.used:
        raise UsageError(f"--step-range and --weights-gb need a GPU timeline; {found.folder} is a gpu_run.sh folder")
    return analyze_gpu_run(found.folder, lambda p: analyze_input(detect(p), TraceOptions()))


def _nsys_rep(found: NsysRep, opts: TraceOptions) -> BaseModel:
    """The report exported to SQLite with this machine's nsys, then read as the export."""
    from nsightlab.runs.sqlite_input import exported_sqlite

    with exported_sqlite(found.path) as db:
        result = _sqlite(NsysSqlite(db, found.beside), opts)
    notes = getattr(result, "notes", None)
    if isinstance(notes, list):
        notes.insert(0, f"exported from {found.path} with this machine's nsys")
    return result


def _sqlite(found: NsysSqlite, opts: TraceOptions) -> BaseModel:
    """An nsys SQLite export: a decode result with decode.py's JSON beside it, else a
    profile's tables (lesson1's JSON beside it gives the ranges their rates)."""
    from nsightlab.runs.sqlite_input import sqlite_result
    from nsightlab.runs.timeline import Timeline

    if found.beside.decode is not None:
        return _decode_capture(DecodeCapture(found.beside.decode, Timeline("sqlite", (found.path,))), opts)
    record = found.beside.lesson1[0] if found.beside.lesson1 else None
    return sqlite_result(found.path, opts, record_path=record)


def _decode_capture(found: DecodeCapture, opts: TraceOptions) -> DecodeResult:
    """decode.py's JSON with its capture's timeline: the decode result, offline."""
    from nsightlab.parse.records.decode_record import load_decode_record
    from nsightlab.runs.trace_files import decode_build

    if opts.weights_gb is not None:
        raise UsageError(
            "decode.py's JSON gives the bytes each step reads: --weights-gb and --kv-gb are for traces without it"
        )
    record = load_decode_record(found.record)
    assert record is not None
    reason = f"no trace beside {found.record.name}: steps come from the script's own timing"
    if found.timeline is None and opts.step_range is not None:
        raise UsageError(f"--step-range needs a trace, and {found.record.parent} holds only the script's JSON")
    anatomy = found.timeline.anatomy(opts.step_range) if found.timeline is not None else None
    return decode_build(record, anatomy, no_trace_reason=reason, command="analyze").result


def _trace(found: TraceFiles, opts: TraceOptions) -> BaseModel:
    """A GPU timeline alone: its steps, the whole timeline, its top kernels and ranges."""
    anatomy = found.timeline.anatomy(opts.step_range)
    assert anatomy is not None  # (only an SQLite export may hold none, and it is no TraceFiles)
    return trace_result(found.source, anatomy, opts)


def _nsys_csvs(found: NsysCsvs, opts: TraceOptions) -> BaseModel:
    """A folder of `nsys stats` exports: their tables, and the steps of the trace among them."""
    from nsightlab.parse import nsys

    report = nsys.merge_reports(nsys.parse_stats_csv(read_whole(p), source=str(p)) for p in found.files)
    result = _nsys_result(report, found.record, found.folder)
    if found.timeline is not None:
        anatomy = found.timeline.anatomy(opts.step_range)
        assert anatomy is not None
        attach_steps(result, anatomy, opts, found.folder)
    return result


def _nsys_text(found: NsysText, opts: TraceOptions) -> BaseModel:
    """One `nsys stats` CSV export, or its console output."""
    from nsightlab.parse import nsys

    text, path = read_whole(found.path), found.path
    if found.form == "csv":
        report = nsys.parse_stats_csv(text, source=str(path))
    else:
        nsys.check_stats_output(text, source=str(path))
        report = nsys.parse_stats_console(text, source=str(path))
    return _nsys_result(report, None, path)


def _nsys_result(report: nsys.NsysReport, record_path: Path | None, source: Path) -> ProfileResult:
    from nsightlab.analysis.profile_result import build_profile
    from nsightlab.parse.records.lesson1_record import load_record

    if not (report.kernels or report.nvtx or report.nvtx_kernels or report.cuda_api or report.mem_time):
        raise ParseError(
            "no nsys tables found (kernel summary or NVTX) in this file",
            source=source,
            hint="Give an `nsys stats` output, its CSV exports, or an ncu CSV.",
        )
    record = load_record(record_path) if record_path else None
    result = build_profile(
        report, record, script=source.stem, profiler="nsys", target=str(source), versions={"nsys": report.nsys_version}
    )
    if report.skipped:
        result.notes.extend(report.skipped)
    result.nsys_input = "stats"
    return result


def _ncu(found: NcuExport, opts: TraceOptions) -> BaseModel:
    """ncu's Speed Of Light per kernel, with verdicts; a folder's files merged."""
    from nsightlab.analysis.ncu_result import from_report
    from nsightlab.parse import ncu_csv as ncu_parse

    reports = [ncu_parse.parse_ncu_csv(read_whole(p), source=str(p)) for p in found.files]
    if found.files == (found.source,):
        return from_report(reports[0], str(found.source))
    return from_report(ncu_parse.NcuReport(kernels=[k for r in reports for k in r.kernels]), str(found.source))


def _script_json(found: ScriptJson, opts: TraceOptions) -> BaseModel:
    """A lab script's JSON, by the script that wrote it, or a stored result's."""
    return _RECORDS[found.record](found)


def _decode_record(found: ScriptJson) -> BaseModel:
    from nsightlab.parse.records.decode_record import load_decode_record
    from nsightlab.runs.trace_files import decode_build

    record = load_decode_record(found.path)
    assert record is not None
    reason = f"{found.path.name} alone: steps come from the script's own timing"
    return decode_build(record, None, no_trace_reason=reason, command="analyze").result


def _sweep_record(found: ScriptJson) -> BaseModel:
    from nsightlab.runs.sweeps import analyze_record_file

    return analyze_record_file(found.path)


def _lesson1_record(found: ScriptJson) -> BaseModel:
    from nsightlab.analysis.profile_result import build_profile
    from nsightlab.parse import nsys
    from nsightlab.parse.records.lesson1_record import load_record

    path = found.path
    return build_profile(nsys.NsysReport(), load_record(path), script=path.stem, profiler="none", target=str(path))


def _torchprof_record(found: ScriptJson) -> BaseModel:
    """torch.profiler's tables, with the lesson1 JSON beside it (a run's raw/) when it
    describes ranges this profile has."""
    from nsightlab.analysis.profile_result import build_profile
    from nsightlab.parse.records.lesson1_record import load_record
    from nsightlab.parse.records.torchprof_record import report_from_torch, torch_info

    path = found.path
    report = report_from_torch(found.data, str(path))
    ranges = {r.name for r in report.nvtx or []}
    records = (load_record(j) for j in found.lesson1_beside)
    record = next((rec for rec in records if rec is not None and ranges & {w.name for w in rec.ranges}), None)
    return build_profile(
        report, record, script=path.stem, profiler="torch", target=str(path), torch=torch_info(found.data)
    )


def _stored_result(found: ScriptJson) -> BaseModel:
    """A result.json given as a file."""
    from nsightlab.runs import store

    kind, path = str(found.data.get("kind")), found.path
    models = store.result_models()
    if kind not in models:
        raise ParseError(f"unknown result kind {kind!r}", source=path)
    try:
        return models[kind].model_validate(found.data)
    except ValidationError as e:
        raise ParseError(
            f"not a {kind} result this nsightlab can read ({store.validation_summary(e)})", source=path
        ) from None


_RECORDS: dict[str, Callable[[ScriptJson], BaseModel]] = {
    "decode": _decode_record,
    "sweep": _sweep_record,
    "lesson1": _lesson1_record,
    "torchprof": _torchprof_record,
    "result": _stored_result,
}

#: The one analysis of each kind of input.
ANALYSES: dict[type, Callable[[Any, TraceOptions], BaseModel]] = {
    StoredRun: _stored_run,
    GpuRunFolder: _gpu_run,
    NsysRep: _nsys_rep,
    NsysSqlite: _sqlite,
    DecodeCapture: _decode_capture,
    TraceFiles: _trace,
    NsysCsvs: _nsys_csvs,
    NsysText: _nsys_text,
    NcuExport: _ncu,
    ScriptJson: _script_json,
}
