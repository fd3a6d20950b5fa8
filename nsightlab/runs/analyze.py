"""`analyze`: the live commands' tables from files, offline.

PATH may be: a stored run (its id, an unambiguous prefix, `latest`, or its folder: the
stored result), a folder of `nsys stats` CSV exports
(with the script's JSON beside them, if any), a saved console output of `nsys stats` or
`nsys profile --stats=true`, an ncu CSV (`--section SpeedOfLight` or `--page details`), a
lesson1 / torchprof / sweep / decode JSON. A file that cannot be parsed is exit 2 naming
the file and the line.

Whenever the input holds a GPU timeline (a `cuda_gpu_trace` export, alone or in a folder
with the other trace exports of its capture; a Kineto trace; a `.nsys-rep`, exported
with the local nsys, with the script's JSON beside it if any; a run folder that has one)
the step anatomy is added: `steps` (a decode step object per group of steps) and `trace`
(`nsightlab.runs.decode`); a profile's tables gain `steps`, `trace_summary` and
`trace_notes` (its `trace` names its trace file). The keys the other inputs give keep
their values.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from nsightlab.analysis.decode import DecodeResult, load_decode_record
from nsightlab.analysis.steps import TraceAnatomy
from nsightlab.errors import ParseError, UsageError
from nsightlab.runs import store
from nsightlab.runs.decode import (
    TraceOptions,
    decode_build,
    exported,
    gpu_anatomy,
    group_steps,
    is_kineto_file,
    kineto_anatomy,
    split_csvs,
    trace_report,
    trace_result,
)

if TYPE_CHECKING:
    from nsightlab.analysis.profile import ProfileResult
    from nsightlab.parse import nsys

# The readers and result models of the other inputs (nsys and ncu tables, profiles,
# sweeps) are imported by the functions that read them: a trace's analysis, the common
# case, need not wait for them (bench/RESULTS.md, Kineto traces).

_NCU_HEADER = '"ID","Process ID"'


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None


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
    if path.suffix == ".nsys-rep" and path.is_file():
        with exported(path) as folder:
            for j in sorted(path.parent.glob("*.json")):  # the script's JSON beside the report
                if _json_kind(j) in ("decode", "lesson1"):
                    shutil.copyfile(j, folder / j.name)
            result = _folder(folder, opts)
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
        return _folder(path, opts)
    if is_kineto_file(path):
        return trace_result(path, kineto_anatomy(path, opts.step_range), opts)
    if path.suffix == ".json":
        return _json_file(path)
    if path.suffix == ".csv" and trace_report(path) is not None:
        return trace_result(path, gpu_anatomy([path], opts.step_range), opts)
    from nsightlab.analysis.ncu import from_report
    from nsightlab.parse import ncu as ncu_parse
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
    from nsightlab.analysis.profile import build_profile, load_record

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
    return result


def _folder(path: Path, opts: TraceOptions | None = None) -> BaseModel:
    from nsightlab.analysis.ncu import from_report
    from nsightlab.analysis.profile import ProfileResult
    from nsightlab.parse import ncu as ncu_parse
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
            if any(trace_report(t) == "cuda_gpu_trace" for t in traces):
                _attach_steps(stored, gpu_anatomy(traces, opts.step_range), opts, path)
            elif kineto_files:
                _attach_steps(stored, kineto_anatomy(kineto_files[0], opts.step_range), opts, path)
        return stored
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


def _decode_folder(record_file: Path, traces: list[Path], kineto_files: list[Path], opts: TraceOptions) -> DecodeResult:
    """decode.py's JSON with its capture's exports or trace: the decode result, offline."""
    if opts.weights_gb is not None:
        raise UsageError(
            "decode.py's JSON gives the bytes each step reads: --weights-gb and --kv-gb are for traces without it"
        )
    record = load_decode_record(record_file)
    assert record is not None
    anatomy = None
    reason = f"no trace beside {record_file.name}: steps come from the script's own timing"
    if traces:
        anatomy = gpu_anatomy(traces, opts.step_range)
    elif kineto_files:
        anatomy = kineto_anatomy(kineto_files[0], opts.step_range)
    elif opts.step_range is not None:
        raise UsageError(f"--step-range needs a trace, and {record_file.parent} holds only the script's JSON")
    return decode_build(record, anatomy, no_trace_reason=reason, command="analyze").result


def _json_kind(path: Path) -> str | None:
    try:
        data = json.loads(_read(path))
    except ValueError:
        return None
    if isinstance(data, dict):
        return str(data.get("kind") or ("torchprof" if data.get("profiler") == "torch" else "")) or None
    return None


def _json_file(path: Path) -> BaseModel:
    from nsightlab.analysis.profile import build_profile, load_record, report_from_torch, torch_info
    from nsightlab.parse import nsys
    from nsightlab.runs.sweeps import analyze_record_file

    try:
        data: Any = json.loads(_read(path))
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
        return build_profile(nsys.NsysReport(), load_record(path), script=path.stem, profiler="nsys", target=str(path))
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
