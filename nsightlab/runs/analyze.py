"""`analyze`: the live commands' tables from files, offline.

PATH may be: a stored run (its id, an unambiguous prefix, `latest`, or its folder: the
stored result), a report's SQLite export (`NAME.sqlite`, or a folder holding one:
`nsightlab.runs.sqlite_input`), a folder of `nsys stats` CSV exports
(with the script's JSON beside them, if any), a saved console output of `nsys stats` or
`nsys profile --stats=true`, an ncu CSV (`--section SpeedOfLight` or `--page details`), a
lesson1 / torchprof / sweep / decode JSON, or the folder `bench/gpu_run.sh` wrote (its
records analysed one by one, with a sanity table: `nsightlab.runs.gpurun`). A file that
cannot be parsed is exit 2 naming the file and the line.

Whenever the input holds a GPU timeline (a `cuda_gpu_trace` export, alone or in a folder
with the other trace exports of its capture; a report's SQLite export; a Kineto trace; a
`.nsys-rep`, exported to SQLite with the local nsys, with the script's JSON beside it if
any; a run folder that has one)
the step anatomy is added: `steps` (a decode step object per group of steps) and `trace`
(`nsightlab.runs.trace_files`); a profile's tables gain `steps`, `trace_summary` and
`trace_notes` (its `trace` names its trace file). The keys the other inputs give keep
their values.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from nsightlab import userfiles
from nsightlab.analysis.decode_models import DecodeResult
from nsightlab.analysis.steps import TraceAnatomy
from nsightlab.errors import ParseError, UsageError
from nsightlab.models import NonFiniteError, loads
from nsightlab.parse.records.decode_record import load_decode_record
from nsightlab.runs import store
from nsightlab.runs.trace_files import (
    TraceOptions,
    decode_build,
    gpu_anatomy,
    group_steps,
    is_kineto_file,
    kineto_anatomy,
    split_csvs,
    trace_report,
    trace_result,
)

if TYPE_CHECKING:
    from nsightlab.analysis.profile_models import ProfileResult
    from nsightlab.parse import nsys

# The readers and result models of the other inputs (nsys and ncu tables, profiles,
# sweeps) are imported by the functions that read them: a trace's analysis, the common
# case, need not wait for them (bench/RESULTS.md, Kineto traces).

_NCU_HEADER = '"ID","Process ID"'
SCRIPT_JSON_MAX = 16 << 20  # bytes: the largest JSON beside an export taken for the script's own


def _read(path: Path) -> str:
    """A file read whole (nsys console output, an ncu CSV, a JSON): a regular file, capped."""
    data = userfiles.read_bytes(path, what="file", error=UsageError, limit=userfiles.WHOLE_INPUT_MAX_BYTES)
    return data.decode("utf-8", errors="replace")


def _check_inputs(folder: Path) -> None:
    """Every file of `folder` that analyze may open is a regular file (a FIFO would block
    the open, a device never end): exit 2 naming the first that is not."""
    for p in sorted(folder.iterdir()):
        if p.suffix.lower() in (".csv", ".json", ".gz", ".nsys-rep") and not p.is_dir():
            userfiles.check_regular(p, what="file", error=UsageError)


def _is_ncu(text: str) -> bool:
    return _NCU_HEADER in text[:20000]


def analyze_path(
    path: Path, *, step_range: str | None = None, weights_gb: float | None = None, kv_gb: float | None = None
) -> BaseModel:
    """Parse and analyse whatever PATH is; see the module docstring. A path that exists
    is read as a file or folder; anything else is looked up as a stored run. `step_range`,
    `weights_gb` and `kv_gb` apply to a GPU timeline (exit 2 for an input without one)."""
    opts = TraceOptions(step_range, weights_gb, kv_gb)
    if not path.exists():
        ref = str(path)
        if "/" in ref or "\\" in ref or "." in ref:
            raise UsageError(f"{path} does not exist")
        try:
            run = store.resolve(ref)
        except UsageError as e:
            raise UsageError(
                f"{ref} is neither a file nor a stored run ({e.message})",
                hint=e.hint or "List the runs with `nsightlab runs`.",
            ) from None
        path = run.path
    if path.is_dir():
        _check_inputs(path)
        if (path / "raw").is_dir():
            _check_inputs(path / "raw")
    else:
        userfiles.check_regular(path, what="file", error=UsageError)
    if path.suffix == ".nsys-rep" and path.is_file():
        from nsightlab.runs.sqlite_input import exported_sqlite

        with exported_sqlite(path) as db:
            result = _sqlite(db, path.parent, opts)
        notes = getattr(result, "notes", None)
        if isinstance(notes, list):
            notes.insert(0, f"exported from {path} with this machine's nsys")
        return result
    result = _analyze(path, opts)
    if opts.used and getattr(result, "steps", None) is None and getattr(result, "modes", None) is None:
        raise UsageError(
            f"--step-range and --weights-gb need a GPU timeline, and {path} holds none",
            hint="Give a cuda_gpu_trace export (or a folder of them), a Kineto trace or a .nsys-rep.",
        )
    return result


def _analyze(path: Path, opts: TraceOptions) -> BaseModel:
    if path.is_dir():
        from nsightlab.runs import gpurun

        if gpurun.is_gpu_run(path):  # bench/gpu_run.sh's folder: each record read as a file of its own
            if opts.used:
                raise UsageError(f"--step-range and --weights-gb need a GPU timeline; {path} is a gpu_run.sh folder")
            return gpurun.analyze_gpu_run(path, lambda p: _analyze(p, TraceOptions()))
        return _folder(path, opts)
    if path.suffix == ".sqlite":
        return _sqlite(path, path.parent, opts)
    if is_kineto_file(path):
        return trace_result(path, kineto_anatomy(path, opts.step_range), opts)
    if path.suffix == ".json":
        return _json_file(path)
    if path.suffix == ".csv" and trace_report(path) is not None:
        return trace_result(path, gpu_anatomy([path], opts.step_range), opts)
    from nsightlab.analysis.ncu_result import from_report
    from nsightlab.parse import ncu_csv as ncu_parse
    from nsightlab.parse import nsys

    text = _read(path)
    if _is_ncu(text):
        return from_report(ncu_parse.parse_ncu_csv(text, source=str(path)), str(path))
    if path.suffix == ".csv":
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


def _folder(path: Path, opts: TraceOptions | None = None) -> BaseModel:
    from nsightlab.analysis.ncu_result import from_report
    from nsightlab.analysis.profile_models import ProfileResult
    from nsightlab.parse import ncu_csv as ncu_parse
    from nsightlab.parse import nsys

    opts = opts or TraceOptions()
    recorded = (path / "meta.json").exists() or (path / "result.json").exists()
    if recorded or (store.is_run_folder(path) and not any(path.glob("*.csv"))):
        stored = stored_result(path)  # a run folder, whatever state it is in
        if isinstance(stored, DecodeResult) and opts.used:
            return _folder(path / "raw", opts)  # the stored result's own options otherwise
        if isinstance(stored, ProfileResult):
            traces, _ = split_csvs(sorted((path / "raw").glob("*.csv")))
            kineto_files = [p for p in sorted((path / "raw").glob("*")) if is_kineto_file(p)]
            exports = _sqlite_files(path / "raw")
            if exports:
                from nsightlab.runs.sqlite_input import anatomy_of, attach_steps

                anatomy = anatomy_of(exports[0], opts.step_range)
                if anatomy is not None:
                    attach_steps(stored, anatomy, opts, path)
            elif any(trace_report(t) == "cuda_gpu_trace" for t in traces):
                _attach_steps(stored, gpu_anatomy(traces, opts.step_range), opts, path)
            elif kineto_files:
                _attach_steps(stored, kineto_anatomy(kineto_files[0], opts.step_range), opts, path)
        return stored
    exports = _sqlite_files(path)
    if len(exports) > 1:
        raise UsageError(
            f"{path} holds {len(exports)} nsys SQLite exports ({', '.join(p.name for p in exports[:4])})",
            hint=f"Give one of them: `{shlex.join(['nsightlab', 'analyze', str(exports[0])])}`.",
        )
    if exports:
        return _sqlite(exports[0], path, opts)
    traces, csvs = split_csvs(sorted(path.glob("*.csv")))
    kineto_files = [p for p in sorted(path.iterdir()) if is_kineto_file(p)]
    gpu_traces = [t for t in traces if trace_report(t) == "cuda_gpu_trace"]
    has_gpu_trace = bool(gpu_traces)
    record_file = next((j for j in sorted(path.glob("*.json")) if _json_kind(j) == "decode"), None)
    if record_file is not None:
        return _decode_folder(record_file, traces if has_gpu_trace else [], kineto_files, opts)
    if not csvs and has_gpu_trace:
        return trace_result(path, gpu_anatomy(traces, opts.step_range), opts)
    if not csvs and kineto_files:
        return trace_result(kineto_files[0], kineto_anatomy(kineto_files[0], opts.step_range), opts)
    if not csvs:
        raise UsageError(f"{path} holds no CSV exports and is not a run folder")
    # the summaries, and the GPU trace as the nsys tables have always read it (its Device
    # column names the GPU); the other trace exports are for the step anatomy alone
    csvs = sorted([*csvs, *gpu_traces])
    texts = {p: _read(p) for p in csvs}
    ncu_files = [p for p, t in texts.items() if _is_ncu(t)]
    if ncu_files and len(ncu_files) == len(csvs):
        kernels = []
        for p in ncu_files:
            kernels.extend(ncu_parse.parse_ncu_csv(texts[p], source=str(p)).kernels)
        return from_report(ncu_parse.NcuReport(kernels=kernels), str(path))
    report = nsys.merge_reports(nsys.parse_stats_csv(t, source=str(p)) for p, t in texts.items() if p not in ncu_files)
    record = next((j for j in sorted(path.glob("*.json")) if _json_kind(j) == "lesson1"), None)
    result = _nsys_result(report, record, path)
    if has_gpu_trace:
        _attach_steps(result, gpu_anatomy(traces, opts.step_range), opts, path)
    return result


def _attach_steps(result: ProfileResult, anatomy: TraceAnatomy, opts: TraceOptions, source: Path) -> None:
    """The step anatomy of the capture's trace, added to a profile's tables (its own keys
    keep their values)."""
    steps, _device, notes = group_steps(anatomy, opts, source)
    result.steps, result.trace_summary, result.trace_notes = steps, anatomy.trace, notes


def _decode_folder(
    record_file: Path, traces: list[Path], kineto_files: list[Path], opts: TraceOptions, sqlite: Path | None = None
) -> DecodeResult:
    """decode.py's JSON with its capture's exports (CSV or SQLite) or trace: the decode
    result, offline."""
    if opts.weights_gb is not None:
        raise UsageError(
            "decode.py's JSON gives the bytes each step reads: --weights-gb and --kv-gb are for traces without it"
        )
    record = load_decode_record(record_file)
    assert record is not None
    anatomy = None
    reason = f"no trace beside {record_file.name}: steps come from the script's own timing"
    if sqlite is not None:
        from nsightlab.runs.sqlite_input import anatomy_of

        anatomy = anatomy_of(sqlite, opts.step_range)
    elif traces:
        anatomy = gpu_anatomy(traces, opts.step_range)
    elif kineto_files:
        anatomy = kineto_anatomy(kineto_files[0], opts.step_range)
    elif opts.step_range is not None:
        raise UsageError(f"--step-range needs a trace, and {record_file.parent} holds only the script's JSON")
    return decode_build(record, anatomy, no_trace_reason=reason, command="analyze").result


def _sqlite_files(folder: Path) -> list[Path]:
    """The nsys SQLite exports (`*.sqlite`) in a folder."""
    return [p for p in sorted(folder.glob("*.sqlite")) if p.is_file()]


def _sqlite(db: Path, beside: Path, opts: TraceOptions) -> BaseModel:
    """An nsys SQLite export, with the script's JSON in `beside` when there is one: a
    decode run's JSON makes it a decode result, lesson1's gives the ranges their rates."""
    from nsightlab.runs.sqlite_input import sqlite_result

    # a script's JSON is small: a large one (a trace) is not read to find out
    jsons = [j for j in sorted(beside.glob("*.json")) if j.is_file() and j.stat().st_size <= SCRIPT_JSON_MAX]
    decode = next((j for j in jsons if _json_kind(j) == "decode"), None)
    if decode is not None:
        return _decode_folder(decode, [], [], opts, sqlite=db)
    record = next((j for j in jsons if _json_kind(j) == "lesson1"), None)
    return sqlite_result(db, opts, record_path=record)


def _json_kind(path: Path) -> str | None:
    try:
        data = loads(_read(path))
    except ValueError:
        return None
    if isinstance(data, dict):
        return str(data.get("kind") or ("torchprof" if data.get("profiler") == "torch" else "")) or None
    return None


def _json_file(path: Path) -> BaseModel:
    from nsightlab.analysis.profile_result import build_profile
    from nsightlab.parse import nsys
    from nsightlab.parse.records.lesson1_record import load_record
    from nsightlab.parse.records.torchprof_record import report_from_torch, torch_info
    from nsightlab.runs.sweeps import analyze_record_file

    try:
        data: Any = loads(_read(path))
    except NonFiniteError as e:
        raise ParseError(e.msg, source=path, line=e.lineno) from None
    except json.JSONDecodeError as e:
        raise ParseError(f"not valid JSON ({e.msg})", source=path, line=e.lineno) from None
    if not isinstance(data, dict):
        raise ParseError("expected a JSON object", source=path, line=1)
    kind = data.get("kind")
    if kind == "decode" and "schema" in data:  # decode.py's own JSON, not a stored result
        decode_record = load_decode_record(path)
        assert decode_record is not None
        return decode_build(
            decode_record,
            None,
            no_trace_reason=f"{path.name} alone: steps come from the script's own timing",
            command="analyze",
        ).result
    if kind == "sweep":
        return analyze_record_file(path)
    if kind == "lesson1":
        return build_profile(nsys.NsysReport(), load_record(path), script=path.stem, profiler="none", target=str(path))
    if data.get("profiler") == "torch":
        report = report_from_torch(data, str(path))
        # the lesson1 JSON beside it (a run's raw/), when it describes ranges this profile has
        ranges = {r.name for r in report.nvtx or []}
        records = (load_record(j) for j in sorted(path.parent.glob("*.json")) if _json_kind(j) == "lesson1")
        record = next((rec for rec in records if rec is not None and ranges & {w.name for w in rec.ranges}), None)
        return build_profile(
            report, record, script=path.stem, profiler="torch", target=str(path), torch=torch_info(data)
        )
    if kind in ("profile", "ncu", "decode") or (kind == "sweep" and "analysis" in data):
        return _stored(kind, data, path)
    raise ParseError(
        "not a file nsightlab knows (lesson1, sweep, decode or torchprof JSON, or a Kineto trace)", source=path, line=1
    )


def stored_result(folder: Path) -> BaseModel:
    """A run folder's result, validated; exit 2 naming the file when the run is damaged
    or did not finish."""
    status = store.inspect(store.Run(folder))
    if status.result is None:
        assert status.error is not None
        raise status.error
    return status.result


def _stored(kind: str, data: dict[str, Any], path: Path) -> BaseModel:
    models = store.result_models()
    if kind not in models:
        raise ParseError(f"unknown result kind {kind!r}", source=path)
    try:
        return models[kind].model_validate(data)
    except ValidationError as e:
        raise ParseError(
            f"not a {kind} result this nsightlab can read ({store.validation_summary(e)})", source=path
        ) from None
