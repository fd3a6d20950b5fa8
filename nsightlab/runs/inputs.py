"""What a path given to `analyze` holds, decided in one place.

`detect(path)` looks at a path once (its name, what a folder holds, the first bytes of a
file, a script's JSON) and returns a typed input; `nsightlab.runs.analyze` has one
analysis for each kind:

| input | what it is |
|---|---|
| `StoredRun` | a run folder of the store: by id, unambiguous prefix, `latest`, or its path |
| `GpuRunFolder` | the folder `bench/gpu_run.sh` wrote |
| `NsysRep` | an Nsight Systems report (`.nsys-rep`) |
| `NsysSqlite` | a report's SQLite export (the file, or the one in a folder) |
| `DecodeCapture` | decode.py's JSON with its capture's timeline beside it, if any |
| `TraceFiles` | a GPU timeline alone: a Kineto trace, or nsys trace exports (a CSV, or a folder of them) |
| `NsysCsvs` | a folder of `nsys stats` CSV exports (the lesson1 JSON and the trace beside them, if any) |
| `NsysText` | one `nsys stats` CSV export, or saved console output of `nsys stats` / `nsys profile --stats=true` |
| `NcuExport` | ncu CSVs (`--section SpeedOfLight` or `--page details`): a file, or a folder of them |
| `ScriptJson` | a lab script's JSON (lesson1, torchprof, sweep, decode) or a stored result's |

A script's JSON beside an export is found by its `kind` (a small file: one over
`SCRIPT_JSON_MAX` is no script's, and a trace is never read to find out). Every file that
is opened is a regular file (a FIFO would block the open, a device never end), and a file
read whole is capped: exit 2 naming the file otherwise.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nsightlab import userfiles
from nsightlab.errors import ParseError, UsageError
from nsightlab.models import NonFiniteError, loads
from nsightlab.parse import gputrace
from nsightlab.runs.timeline import Timeline

#: The trace reports a step anatomy reads from `nsys stats`, and older names for them.
TRACE_REPORTS: dict[str, tuple[str, ...]] = {
    "cuda_gpu_trace": ("cuda_gpu_trace", "gputrace"),
    "nvtx_pushpop_trace": ("nvtx_pushpop_trace", "nvtxpptrace"),
    "nvtx_gpu_proj_trace": ("nvtx_gpu_proj_trace",),
    "cuda_api_trace": ("cuda_api_trace", "cudaapitrace"),
}
SCRIPT_JSON_MAX = 16 << 20  # bytes: the largest JSON beside an export taken for the script's own
STEPS_LOG = "steps.log"  # bench/gpu_run.sh's log: the folder's mark
_KINETO_SUFFIXES = (".json.gz", ".pt.trace.json", ".pt.trace.json.gz")
_SNIFF_BYTES = 1 << 16  # how much of a .json file is read to tell a Chrome trace from nsightlab's own JSON
_NCU_HEADER = '"ID","Process ID"'
_NCU_HEAD_CHARS = 20000  # where the header of an ncu CSV is looked for
_INPUT_SUFFIXES = (".csv", ".json", ".gz", ".nsys-rep")  # what analyze may open in a folder


# ---------------------------------------------------------------------------- the inputs


@dataclass(frozen=True)
class Beside:
    """The scripts' JSON records in a folder, by kind: decode.py's and lesson1's."""

    decode: Path | None = None
    lesson1: tuple[Path, ...] = ()


@dataclass(frozen=True)
class StoredRun:
    folder: Path
    timeline: Timeline | None  # the capture's, in raw/ (an SQLite export first, then CSVs, then Kineto)


@dataclass(frozen=True)
class GpuRunFolder:
    folder: Path


@dataclass(frozen=True)
class NsysRep:
    path: Path
    beside: Beside


@dataclass(frozen=True)
class NsysSqlite:
    path: Path
    beside: Beside


@dataclass(frozen=True)
class DecodeCapture:
    record: Path
    timeline: Timeline | None


@dataclass(frozen=True)
class TraceFiles:
    source: Path  # what the result names: the file, or the folder of exports
    timeline: Timeline


@dataclass(frozen=True)
class NsysCsvs:
    folder: Path
    files: tuple[Path, ...]  # the summaries, and the GPU trace (its Device column names the GPU)
    record: Path | None  # lesson1's JSON
    timeline: Timeline | None


@dataclass(frozen=True)
class NsysText:
    path: Path
    form: Literal["csv", "console"]


@dataclass(frozen=True)
class NcuExport:
    source: Path
    files: tuple[Path, ...]


@dataclass(frozen=True)
class ScriptJson:
    path: Path
    record: Literal["decode", "sweep", "lesson1", "torchprof", "result"]
    data: dict[str, Any] = field(repr=False)
    lesson1_beside: tuple[Path, ...] = ()  # torchprof's: the lesson1 JSON of the same run


Input = (
    StoredRun
    | GpuRunFolder
    | NsysRep
    | NsysSqlite
    | DecodeCapture
    | TraceFiles
    | NsysCsvs
    | NsysText
    | NcuExport
    | ScriptJson
)


# ---------------------------------------------------------------------------- deciding


def detect(path: Path) -> Input:
    """What `path` holds (see the module docstring). A path that exists is read as a file
    or folder; anything else is looked up as a stored run. Exit 2 for a path that is none
    of these, naming it."""
    if not path.exists():
        path = _stored_run_path(str(path))
    if path.is_dir():
        check_folder(path)
        if (path / "raw").is_dir():
            check_folder(path / "raw")
        return GpuRunFolder(path) if is_gpu_run(path) else detect_folder(path)
    userfiles.check_regular(path, what="file", error=UsageError)
    return _file(path)


def _stored_run_path(ref: str) -> Path:
    # the run store (the config, PyYAML: 15 ms) loads only for a run id or a folder, not for a file
    from nsightlab.runs import store

    if "/" in ref or "\\" in ref or "." in ref:
        raise UsageError(f"{ref} does not exist")
    try:
        return store.resolve(ref).path
    except UsageError as e:
        raise UsageError(
            f"{ref} is neither a file nor a stored run ({e.message})",
            hint=e.hint or "List the runs with `nsightlab runs`.",
        ) from None


# What Git keeps in place of a file stored with Git LFS, until `git lfs pull` fetches it.
_LFS_POINTER = b"version https://git-lfs.github.com/spec/"


def refuse_lfs_pointer(path: Path) -> None:
    """Exit 2 for a Git LFS pointer: a clone without the file it stands for. Asked only
    when a reader has failed on the file (what it says then is about the wrong file)."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(_LFS_POINTER))
    except OSError:
        return  # the reader says what is wrong with the file
    if head == _LFS_POINTER:
        raise ParseError(
            "a Git LFS pointer, not the file it stands for (the clone has not fetched it)",
            source=str(path),
            hint="Fetch it with `git lfs pull` (or download the file itself), then give it again.",
        )


def _file(path: Path) -> Input:
    if path.suffix == ".nsys-rep":
        return NsysRep(path, scripts_beside(path.parent))
    if path.suffix == ".sqlite":
        return NsysSqlite(path, scripts_beside(path.parent))
    if is_kineto_file(path):
        return TraceFiles(path, Timeline("kineto", (path,)))
    if path.suffix == ".json":
        return script_json(path)
    if path.suffix == ".csv" and trace_report(path) is not None:
        return TraceFiles(path, Timeline("nsys-csv", (path,)))
    if is_ncu(path):
        return NcuExport(path, (path,))
    return NsysText(path, "csv" if path.suffix == ".csv" else "console")


def detect_folder(path: Path) -> Input:
    """What a folder holds, its files checked regular by the caller."""
    from nsightlab.runs import store  # (as in _stored_run_path)

    recorded = (path / "meta.json").exists() or (path / "result.json").exists()
    if recorded or (store.is_run_folder(path) and not any(path.glob("*.csv"))):
        return StoredRun(path, capture(path / "raw"))  # a run folder, whatever state it is in
    files = scan(path)
    if len(files.sqlite) > 1:
        exports = files.sqlite
        raise UsageError(
            f"{path} holds {len(exports)} nsys SQLite exports ({', '.join(p.name for p in exports[:4])})",
            hint=f"Give one of them: `{shlex.join(['nsightlab', 'analyze', str(exports[0])])}`.",
        )
    if files.sqlite:
        return NsysSqlite(files.sqlite[0], files.beside)
    gpu_traces = [t for t, report in files.traces.items() if report == "cuda_gpu_trace"]
    timeline = Timeline("nsys-csv", tuple(files.traces)) if gpu_traces else None
    kineto = Timeline("kineto", (files.kineto[0],)) if files.kineto else None
    if files.beside.decode is not None:
        return DecodeCapture(files.beside.decode, timeline or kineto)
    if not files.csvs and timeline is not None:
        return TraceFiles(path, timeline)
    if not files.csvs and kineto is not None:
        if len(files.kineto) > 1:  # one rank's trace each, or runs apart: not one timeline
            traces = files.kineto
            raise UsageError(
                f"{path} holds {len(traces)} torch.profiler traces ({', '.join(p.name for p in traces[:4])}"
                f"{', ...' if len(traces) > 4 else ''}): each is its own timeline",
                hint=f"Give one of them: `{shlex.join(['nsightlab', 'analyze', str(traces[0])])}`.",
            )
        return TraceFiles(kineto.files[0], kineto)
    if not files.csvs:
        raise UsageError(f"{path} holds no CSV exports and is not a run folder")
    # the summaries, and the GPU trace as the nsys tables have always read it (its Device
    # column names the GPU); the other trace exports are for the step anatomy alone
    tables = sorted([*files.csvs, *gpu_traces])
    ncu = [p for p in tables if is_ncu(p)]
    if ncu and len(ncu) == len(tables):
        return NcuExport(path, tuple(ncu))
    stats = tuple(p for p in tables if p not in ncu)
    return NsysCsvs(path, stats, files.beside.lesson1[0] if files.beside.lesson1 else None, timeline)


def capture(raw: Path) -> Timeline | None:
    """A run's capture in its raw/ folder: its SQLite export, else its trace CSV exports
    (with a cuda_gpu_trace among them), else its Kineto trace; None without one."""
    files = scan(raw) if raw.is_dir() else Folder()
    if files.sqlite:
        return Timeline("sqlite", (files.sqlite[0],))
    if "cuda_gpu_trace" in files.traces.values():
        return Timeline("nsys-csv", tuple(files.traces))
    return Timeline("kineto", (files.kineto[0],)) if files.kineto else None


@dataclass
class Folder:
    """A folder's files by what each holds, each file looked at once."""

    sqlite: list[Path] = field(default_factory=list)  # nsys SQLite exports
    kineto: list[Path] = field(default_factory=list)  # Kineto traces
    traces: dict[Path, str] = field(default_factory=dict)  # nsys trace CSV exports, by report
    csvs: list[Path] = field(default_factory=list)  # the other CSVs
    beside: Beside = field(default_factory=Beside)  # the scripts' JSON


def scan(folder: Path) -> Folder:
    """Every file of `folder`, by what it holds (by name, then its first bytes, then, for
    a small JSON that is no trace, its `kind`)."""
    found = Folder()
    decode: list[Path] = []
    lesson1: list[Path] = []
    for p in sorted(folder.iterdir()):
        name = p.name
        if not p.is_file():
            continue
        if name.endswith(".sqlite"):
            found.sqlite.append(p)
        elif is_kineto_file(p):
            found.kineto.append(p)
        elif name.endswith(".csv"):
            report = trace_report(p)
            if report is None:
                found.csvs.append(p)
            else:
                found.traces[p] = report
        elif name.endswith(".json"):
            _add_script(p, decode, lesson1)
    found.beside = Beside(decode[0] if decode else None, tuple(lesson1))
    return found


def scripts_beside(folder: Path) -> Beside:
    """decode.py's JSON (the first, by name) and lesson1's (every one) in `folder`: small
    JSON files that no trace is (a trace is never read to find out)."""
    decode: list[Path] = []
    lesson1: list[Path] = []
    for p in sorted(folder.glob("*.json")):
        if p.is_file() and not is_kineto_file(p):
            _add_script(p, decode, lesson1)
    return Beside(decode[0] if decode else None, tuple(lesson1))


def _add_script(path: Path, decode: list[Path], lesson1: list[Path]) -> None:
    if path.stat().st_size > SCRIPT_JSON_MAX:
        return
    kind = _json_kind(path)
    if kind == "decode":
        decode.append(path)
    elif kind == "lesson1":
        lesson1.append(path)


def script_json(path: Path) -> ScriptJson:
    """A JSON file named on the command line: which script (or stored result) wrote it.
    ParseError (exit 2) naming the file and line for one that is no such JSON."""
    try:
        data: Any = loads(read_whole(path))
    except NonFiniteError as e:
        raise ParseError(e.msg, source=path, line=e.lineno) from None
    except json.JSONDecodeError as e:
        raise ParseError(f"not valid JSON ({e.msg})", source=path, line=e.lineno) from None
    if not isinstance(data, dict):
        raise ParseError("expected a JSON object", source=path, line=1)
    kind = data.get("kind")
    if kind == "decode" and "schema" in data:  # decode.py's own JSON, not a stored result
        return ScriptJson(path, "decode", data)
    if kind in ("sweep", "lesson1"):
        return ScriptJson(path, kind, data)
    if data.get("profiler") == "torch":
        return ScriptJson(path, "torchprof", data, scripts_beside(path.parent).lesson1)
    if kind in ("profile", "ncu", "decode"):
        return ScriptJson(path, "result", data)
    raise ParseError(
        "not a file nsightlab knows (lesson1, sweep, decode or torchprof JSON, or a Kineto trace)", source=path, line=1
    )


def _json_kind(path: Path) -> str | None:
    try:
        data = loads(read_whole(path))
    except ValueError:
        return None
    if isinstance(data, dict):
        return str(data.get("kind") or ("torchprof" if data.get("profiler") == "torch" else "")) or None
    return None


# ---------------------------------------------------------------------------- what a file is


def is_gpu_run(path: Path) -> bool:
    """A folder whose steps log begins with bench/gpu_run.sh's header."""
    # its module loads every result model (60-80 ms here) that a trace's analysis need not wait for
    from nsightlab.parse.records.gpurun_steps import STEPS_HEADER

    log = path / STEPS_LOG
    if not log.is_file():
        return False
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            return f.readline().startswith(STEPS_HEADER)
    except OSError:
        return False


def is_kineto_file(path: Path) -> bool:
    """A Chrome trace (torch.profiler, vLLM): `.json.gz`, `.pt.trace.json[.gz]`, or a
    `.json` whose beginning holds `traceEvents` (nsightlab's own JSON never does); or
    another profiler's trace JSON (rocprofv3's), which the trace reader names in its error."""
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
    if b'"rocprofiler-sdk-tool"' in head:
        return True
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


def is_ncu(path: Path) -> bool:
    """An ncu CSV: its header near the top (after ncu's own `==PROF==` lines)."""
    with userfiles.open_regular(path, what="file", error=UsageError) as f:
        head = f.read(4 * _NCU_HEAD_CHARS)  # a character is at most 4 bytes
    return _NCU_HEADER in head.decode("utf-8", errors="replace")[:_NCU_HEAD_CHARS]


def check_folder(folder: Path) -> None:
    """Every file of `folder` that analyze may open is a regular file: exit 2 naming the
    first that is not."""
    for p in sorted(folder.iterdir()):
        if p.suffix.lower() in _INPUT_SUFFIXES and not p.is_dir():
            userfiles.check_regular(p, what="file", error=UsageError)


def read_whole(path: Path) -> str:
    """A file read whole (nsys console output, an ncu CSV, a JSON): a regular file, capped."""
    data = userfiles.read_bytes(path, what="file", error=UsageError, limit=userfiles.WHOLE_INPUT_MAX_BYTES)
    return data.decode("utf-8", errors="replace")
