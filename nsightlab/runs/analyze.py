"""`analyze`: the live commands' tables from files, offline.

PATH may be: a stored run (its id, an unambiguous prefix, `latest`, or its folder: the
stored result), a folder of `nsys stats` CSV exports
(with the script's JSON beside them, if any), a saved console output of `nsys stats` or
`nsys profile --stats=true`, an ncu CSV (`--section SpeedOfLight` or `--page details`), a
lesson1 / torchprof / sweep JSON. A file that cannot be parsed is exit 2 naming the file
and the line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from nsightlab.analysis.ncu import NcuResult, from_report
from nsightlab.analysis.profile import (
    ProfileResult,
    build_profile,
    load_record,
    report_from_torch,
    torch_info,
)
from nsightlab.analysis.sweep import SweepResult
from nsightlab.errors import ParseError, UsageError
from nsightlab.parse import ncu as ncu_parse
from nsightlab.parse import nsys
from nsightlab.runs import store
from nsightlab.runs.sweeps import analyze_record_file

_NCU_HEADER = '"ID","Process ID"'


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None


def _is_ncu(text: str) -> bool:
    return _NCU_HEADER in text[:20000]


def analyze_path(path: Path) -> BaseModel:
    """Parse and analyse whatever PATH is; see the module docstring. A path that exists
    is read as a file or folder; anything else is looked up as a stored run."""
    if not path.exists():
        ref = str(path)
        if "/" in ref or "\\" in ref or "." in ref:
            raise UsageError(f"{path} does not exist")
        try:
            run = store.resolve(ref)
        except UsageError as e:
            raise UsageError(f"{ref} is neither a file nor a stored run ({e.message})", hint=e.hint or "List the runs with `nsightlab runs`.") from None
        return stored_result(run.path)
    if path.is_dir():
        return _folder(path)
    if path.suffix == ".json":
        return _json_file(path)
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
    if not (report.kernels or report.nvtx or report.nvtx_kernels or report.cuda_api or report.mem_time):
        raise ParseError("no nsys tables found (kernel summary or NVTX) in this file", source=source, hint="Give an `nsys stats` output, its CSV exports, or an ncu CSV.")
    record = load_record(record_path) if record_path else None
    result = build_profile(report, record, script=source.stem, profiler="nsys", target=str(source), versions={"nsys": report.nsys_version})
    if report.skipped:
        result.notes.extend(report.skipped)
    return result


def _folder(path: Path) -> BaseModel:
    recorded = (path / "meta.json").exists() or (path / "result.json").exists()
    if recorded or (store.is_run_folder(path) and not any(path.glob("*.csv"))):
        return stored_result(path)  # a run folder, whatever state it is in
    csvs = sorted(path.glob("*.csv"))
    if not csvs:
        raise UsageError(f"{path} holds no CSV exports and is not a run folder")
    texts = {p: _read(p) for p in csvs}
    ncu_files = [p for p, t in texts.items() if _is_ncu(t)]
    if ncu_files and len(ncu_files) == len(csvs):
        kernels = []
        for p in ncu_files:
            kernels.extend(ncu_parse.parse_ncu_csv(texts[p], source=str(p)).kernels)
        return from_report(ncu_parse.NcuReport(kernels=kernels), str(path))
    report = nsys.merge_reports(nsys.parse_stats_csv(t, source=str(p)) for p, t in texts.items() if p not in ncu_files)
    record = next((j for j in sorted(path.glob("*.json")) if _json_kind(j) == "lesson1"), None)
    return _nsys_result(report, record, path)


def _json_kind(path: Path) -> str | None:
    try:
        data = json.loads(_read(path))
    except ValueError:
        return None
    if isinstance(data, dict):
        return str(data.get("kind") or ("torchprof" if data.get("profiler") == "torch" else "")) or None
    return None


def _json_file(path: Path) -> BaseModel:
    try:
        data: Any = json.loads(_read(path))
    except json.JSONDecodeError as e:
        raise ParseError(f"not valid JSON ({e.msg})", source=path, line=e.lineno) from None
    if not isinstance(data, dict):
        raise ParseError("expected a JSON object", source=path, line=1)
    kind = data.get("kind")
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
        return build_profile(report, record, script=path.stem, profiler="torch", target=str(path), torch=torch_info(data))
    if kind in ("profile", "ncu") or (kind == "sweep" and "analysis" in data):
        return _stored(kind, data, path)
    raise ParseError("not a file nsightlab knows (lesson1, sweep or torchprof JSON)", source=path, line=1)


def stored_result(folder: Path) -> BaseModel:
    """A run folder's result, validated; exit 2 naming the file when the run is damaged
    or did not finish."""
    status = store.inspect(store.Run(folder))
    if status.result is None:
        assert status.error is not None
        raise status.error
    return status.result


def _stored(kind: str, data: dict[str, Any], path: Path) -> BaseModel:
    models: dict[str, type[BaseModel]] = {"profile": ProfileResult, "ncu": NcuResult, "sweep": SweepResult}
    if kind not in models:
        raise ParseError(f"unknown result kind {kind!r}", source=path)
    try:
        return models[kind].model_validate(data)
    except ValidationError as e:
        raise ParseError(f"not a {kind} result this nsightlab can read ({store.validation_summary(e)})", source=path) from None
