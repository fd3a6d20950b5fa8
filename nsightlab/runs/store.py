"""The run store: every run is a folder under `$NSIGHTLAB_HOME/runs/`.

    runs/<UTC timestamp>-<kind>-<name>-<id>/
        raw/          what came back from the target (CSV exports, .nsys-rep, the script's JSON)
        meta.json     context, node, GPU, versions, command
        result.json   the parsed, analysed result

Results are written to disk (atomically) before anything is printed. A run's id is six
hex digits; any unambiguous prefix of the id finds it, and so does a longer prefix of the
folder name (the date and time first).

A run folder is in one of three states (`inspect`):
- complete: meta.json and result.json both read, each of the shape its kind has;
- incomplete ("did not finish"): no result.json, and meta.json readable or (for a
  folder that changed in the last `RUNNING_GRACE`) not written yet: the run is still
  being written, or stopped before the end;
- damaged: a meta.json or result.json that cannot be read (not JSON, truncated, not UTF-8,
  the wrong shape), a result.json without a meta.json, or a folder of raw outputs whose
  meta.json never came and that has not changed for `RUNNING_GRACE`. Every command that
  needs the run says so in one line naming the file (exit 2); `runs` lists it as damaged.
Both files are written atomically (a temporary file, then a rename), so a file cut short
is damage, never a run in progress.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import stat
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError
from pydantic_core import from_json

from nsightlab import userfiles
from nsightlab.errors import ParseError, UsageError
from nsightlab.models import Model, NonFiniteError, loads
from nsightlab.userconfig import atomic_write_json, home
from nsightlab.userfiles import USER_TEXT_MAX_BYTES

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
# <UTC time>-<kind>-<name>-<id>, as new_run names a folder
_FOLDER = re.compile(r"(\d{8}T\d{6}Z)-([A-Za-z0-9_.]+)-(.*)-([0-9a-f]{6})")
ID_DIGITS = 6  # a run's id: secrets.token_hex(3)
# How long a folder of raw outputs without meta.json may still be a run being written:
# the lab pod's default lifetime (lab.deadline_seconds), the longest a run in it can take.
RUNNING_GRACE = timedelta(hours=4)


def result_models() -> dict[str, type[BaseModel]]:
    """The model of each kind of result.json (imported when a result is read)."""
    # the result models load only when a stored result is read, not for every store access
    from nsightlab.analysis.colocate_models import ColocateResult
    from nsightlab.analysis.decode_models import DecodeResult
    from nsightlab.analysis.fleet_models import FleetResult
    from nsightlab.analysis.ncu_result import NcuResult
    from nsightlab.analysis.profile_models import ProfileResult
    from nsightlab.analysis.sweep_result import SweepResult
    from nsightlab.analysis.tokenizer_result import TokenizerResult

    return {
        "profile": ProfileResult,
        "sweep": SweepResult,
        "ncu": NcuResult,
        "decode": DecodeResult,
        "fleet": FleetResult,
        "pack": ColocateResult,
        "tokenizer": TokenizerResult,
    }


class DamagedRunError(ParseError):
    """A run's meta.json or result.json cannot be read: names the file (exit 2).

    `problem` is the same without the path, for the list of runs: "result.json: not
    valid JSON, cut short".
    """

    def __init__(self, folder: Path, file: str | None, problem: str, *, line: int | None = None) -> None:
        run_id = Run(folder).id
        source = folder / file if file else folder
        super().__init__(
            f"damaged run {run_id}: {problem}",
            source=source,
            line=line,
            hint=f"Remove it with `nsightlab runs rm {run_id}` (what came back from the target is in its raw/ folder, "
            "which `nsightlab analyze` reads).",
        )
        self.problem = f"{file}: {problem}" if file else problem


def validation_summary(e: ValidationError) -> str:
    """A pydantic error in a few words on one line: how many problems, and the first."""
    first = e.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    count = e.error_count()
    return f"{count} problem{'s' if count != 1 else ''}, first '{where}': {first['msg']}"


def _read_json(path: Path) -> Any:
    """A run file's JSON, or DamagedRunError naming the file (FileNotFoundError passes)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read, a device never end it
            raise DamagedRunError(path.parent, path.name, f"{userfiles.kind_words(st.st_mode)}, not a regular file")
        if st.st_size > USER_TEXT_MAX_BYTES:
            raise DamagedRunError(path.parent, path.name, f"larger than {userfiles.size_words(USER_TEXT_MAX_BYTES)}")
        with userfiles.open_regular(path, what="run file", error=UsageError) as fh:
            raw = fh.read(USER_TEXT_MAX_BYTES + 1)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise DamagedRunError(path.parent, path.name, f"cannot be read ({e.strerror or e})") from None
    except UsageError as e:  # swapped for something else since the stat
        raise DamagedRunError(path.parent, path.name, e.message) from None
    try:
        return loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise DamagedRunError(
            path.parent, path.name, f"not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})"
        ) from None
    except NonFiniteError as e:
        raise DamagedRunError(path.parent, path.name, e.msg, line=e.lineno) from None
    except json.JSONDecodeError as e:
        cut = ", cut short" if _valid_prefix(raw) else ""
        raise DamagedRunError(path.parent, path.name, f"not valid JSON{cut} ({e.msg})", line=e.lineno) from None
    except RecursionError:
        raise DamagedRunError(path.parent, path.name, "nested too deeply to be JSON nsightlab wrote") from None


class RunMeta(Model):
    id: str
    kind: str  # "profile", "sweep", "ncu", "fleet"
    name: str  # the script, or the dtype of a sweep
    created: datetime
    target: str  # "pod NS/NAME" or "this machine"
    context: str | None = None
    namespace: str | None = None
    pod: str | None = None
    node: str | None = None
    instance_type: str | None = None
    gpu: str | None = None  # the GPU the work ran on (None when it ran on a CPU)
    image: str | None = None
    versions: dict[str, str | None] = Field(default_factory=dict)
    command: list[str] = Field(default_factory=list)
    dtype: str | None = None
    headline: str | None = None
    session_uid: str | None = None  # the lab pod's uid, to group a session's runs
    node_gpu: str | None = None  # the GPU the node's labels name: where the work could have run
    device: str | None = None  # what the work ran on: the GPU's or the CPU's name
    device_type: str | None = None  # "cuda" or "cpu", from the run itself
    device_requested: str | None = None  # --device as asked: auto, cuda or cpu
    fleet_id: str | None = None  # the fleet a run belongs to (its sweeps, and the fleet run itself)


class Run:
    """One run folder."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def raw(self) -> Path:
        return self.path / "raw"

    @property
    def folder(self) -> str:
        return self.path.name

    @property
    def id(self) -> str:
        """The id in the folder's name (meta.json holds the same)."""
        m = _FOLDER.fullmatch(self.folder)
        return m.group(4) if m else self.folder.rsplit("-", 1)[-1]

    def meta(self) -> RunMeta:
        """meta.json, or DamagedRunError naming it (missing, unreadable, not JSON, wrong shape)."""
        path = self.path / "meta.json"
        try:
            data = _read_json(path)
        except FileNotFoundError:
            raise DamagedRunError(self.path, None, "no meta.json") from None
        try:
            return RunMeta.model_validate(data)
        except ValidationError as e:
            raise DamagedRunError(self.path, "meta.json", f"not a run's meta.json ({validation_summary(e)})") from None

    def write_meta(self, meta: RunMeta) -> None:
        atomic_write_json(self.path / "meta.json", meta.model_dump(mode="json"))

    def write_result(self, result: BaseModel | dict[str, Any]) -> Path:
        data = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
        path = self.path / "result.json"
        atomic_write_json(path, data)
        return path

    def result(self) -> dict[str, Any]:
        """result.json as JSON: UsageError when there is none (the run did not finish),
        DamagedRunError when it cannot be read or is not a JSON object."""
        path = self.path / "result.json"
        try:
            data = _read_json(path)
        except FileNotFoundError:
            raise UsageError(f"run {self.folder} has no result (it did not finish)") from None
        if not isinstance(data, dict):
            raise DamagedRunError(self.path, "result.json", f"a JSON {type(data).__name__}, not an object")
        return data

    def parsed_result(self, kind: str | None = None, data: dict[str, Any] | None = None) -> BaseModel:
        """result.json (or its `data`, already read) validated as the result of its kind
        (meta.json's, when given), or DamagedRunError naming it."""
        if data is None:
            data = self.result()
        stored = data.get("kind")
        if kind is not None and stored != kind:
            raise DamagedRunError(self.path, "result.json", f"it holds a {stored!r} result, meta.json says {kind!r}")
        model = result_models().get(stored) if isinstance(stored, str) else None
        if model is None:
            raise DamagedRunError(self.path, "result.json", f"unknown result kind {stored!r}")
        try:
            return model.model_validate(data)
        except ValidationError as e:
            raise DamagedRunError(
                self.path, "result.json", f"not a {stored} result this nsightlab can read ({validation_summary(e)})"
            ) from None
        except RecursionError:
            raise DamagedRunError(self.path, "result.json", "nested too deeply to be JSON nsightlab wrote") from None

    def has_result(self) -> bool:
        return (self.path / "result.json").is_file()


@dataclass
class RunStatus:
    """What `inspect` found in a run folder."""

    run: Run
    state: Literal["complete", "incomplete", "damaged"]
    meta: RunMeta | None  # None when meta.json is missing or damaged
    result: BaseModel | None  # the validated result of a complete run
    data: dict[str, Any] | None = None  # its result.json as read
    problem: str | None = None  # one line: why it is damaged or incomplete
    error: UsageError | None = None  # what a command that needs the run raises

    @property
    def complete(self) -> bool:
        return self.state == "complete"


def inspect(run: Run, *, now: float | None = None) -> RunStatus:
    """The state of a run folder (see the module docstring); never raises for its files."""
    has_meta = (run.path / "meta.json").exists()
    has_result = (run.path / "result.json").exists()
    error: UsageError
    if not has_meta:
        if has_result:
            damaged = DamagedRunError(run.path, None, "no meta.json beside its result.json")
            return RunStatus(run, "damaged", None, None, problem=damaged.problem, error=damaged)
        if _changed_within(run.path, RUNNING_GRACE, now):
            error = UsageError(
                f"run {run.folder} is still being written, or stopped before it was recorded (no meta.json yet)"
            )
            return RunStatus(
                run, "incomplete", None, None, problem="no meta.json yet: still being written?", error=error
            )
        damaged = DamagedRunError(
            run.path,
            None,
            "no meta.json: the run stopped before it was recorded (raw outputs only, unchanged for over "
            f"{_hours(RUNNING_GRACE)})",
        )
        return RunStatus(run, "damaged", None, None, problem=damaged.problem, error=damaged)
    try:
        meta = run.meta()
    except DamagedRunError as e:
        return RunStatus(run, "damaged", None, None, problem=e.problem, error=e)
    if not has_result:
        error = UsageError(
            f"run {run.folder} did not finish (no result.json)",
            hint=f"Run it again; `nsightlab runs rm {run.id}` removes what is left.",
        )
        return RunStatus(run, "incomplete", meta, None, problem="did not finish", error=error)
    try:
        data = run.result()
        result = run.parsed_result(meta.kind if meta.kind in result_models() else None, data)
    except DamagedRunError as e:
        return RunStatus(run, "damaged", meta, None, problem=e.problem, error=e)
    except UsageError as e:  # result.json went away meanwhile (`runs rm`)
        return RunStatus(run, "incomplete", meta, None, problem="did not finish", error=e)
    return RunStatus(run, "complete", meta, result, data)


def stored_result(folder: Path) -> BaseModel:
    """A run folder's result, validated; exit 2 naming the file when the run is damaged
    or did not finish."""
    status = inspect(Run(folder))
    if status.result is None:
        assert status.error is not None
        raise status.error
    return status.result


def _hours(delta: timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours:g} hour{'s' if hours != 1 else ''}"


def _changed_within(folder: Path, grace: timedelta, now: float | None) -> bool:
    """Did anything in `folder` (it, raw/, or a file in raw/) change in the last `grace`?"""
    newest = 0.0
    for p in (folder, folder / "raw"):
        try:
            newest = max(newest, p.stat().st_mtime)
            if p.name == "raw":
                for child in p.iterdir():
                    newest = max(newest, child.stat().st_mtime)
        except OSError:
            continue
    return (now if now is not None else time.time()) - newest < grace.total_seconds()


def folder_facts(run: Run) -> tuple[str, str, datetime]:
    """(kind, name, created) from a run folder's name, for a run whose meta.json is missing."""
    m = _FOLDER.fullmatch(run.folder)
    if m is None:
        return "?", run.folder, datetime.fromtimestamp(run.path.stat().st_mtime, timezone.utc)
    created = datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    return m.group(2), m.group(3), created


def runs_dir() -> Path:
    return home() / "runs"


def new_run(kind: str, name: str, *, now: datetime | None = None, run_id: str | None = None) -> tuple[Run, str]:
    """A fresh run folder (with raw/) and its id (a new one unless `run_id` is given: a
    fleet's run takes the fleet's id)."""
    now = now or datetime.now(timezone.utc)
    run_id = run_id or secrets.token_hex(ID_DIGITS // 2)
    folder = f"{now:%Y%m%dT%H%M%SZ}-{_SAFE.sub('-', kind)}-{_SAFE.sub('-', name).strip('-')[:40] or 'run'}-{run_id}"
    path = runs_dir() / folder
    (path / "raw").mkdir(parents=True)
    return Run(path), run_id


def all_runs() -> list[Run]:
    """Every run folder, oldest first. A folder's name holds the second its run began; runs
    begun in the same second are put in the order of their meta.json's `created` (which has
    the microseconds), so "latest" is the last one made, whatever its kind or name."""
    base = runs_dir()
    if not base.is_dir():
        return []
    runs = [Run(p) for p in sorted(base.iterdir()) if is_run_folder(p)]
    by_second: dict[str, list[Run]] = {}
    for run in runs:
        m = _FOLDER.fullmatch(run.folder)
        by_second.setdefault(m.group(1) if m else run.folder, []).append(run)
    ordered: list[Run] = []
    for second in sorted(by_second):
        same = by_second[second]
        ordered.extend(same if len(same) == 1 else sorted(same, key=_created_or_never))
    return ordered


def _created_or_never(run: Run) -> tuple[float, str]:
    """A run's `created` for ordering (before every other for a damaged one), then its folder."""
    try:
        return run.meta().created.timestamp(), run.folder
    except DamagedRunError:
        return float("-inf"), run.folder


def is_run_folder(path: Path) -> bool:
    """A folder with a meta.json or a result.json, or named as `new_run` names them."""
    return path.is_dir() and (
        (path / "meta.json").exists() or (path / "result.json").exists() or _FOLDER.fullmatch(path.name) is not None
    )


def resolve(ref: str) -> Run:
    """A run by id prefix, folder-name prefix, a path to a run folder, or 'latest'."""
    candidate = Path(ref).expanduser()
    if candidate.is_dir() and ((candidate / "meta.json").exists() or (candidate / "result.json").exists()):
        return Run(candidate)
    runs = all_runs()
    if ref in ("latest", "last"):
        if not runs:
            raise UsageError(
                "there are no runs yet", hint="Make one with `nsightlab profile lesson1` or `nsightlab sweep`."
            )
        return runs[-1]
    # A run id is six hex digits: a reference that short is an id's prefix, and only that
    # (every folder name starts with the year: `2` must not match them all); a longer
    # one is a folder name's prefix.
    if len(ref) <= ID_DIGITS:
        matches = [r for r in runs if r.id.startswith(ref)]
    else:
        matches = [r for r in runs if r.folder.startswith(ref)]
    if not matches:
        raise UsageError(f"no run matches '{ref}'", hint="List them with `nsightlab runs`.")
    if len(matches) > 1:
        ids = ", ".join(r.id for r in matches[:6])
        raise UsageError(f"'{ref}' matches {len(matches)} runs ({ids})", hint="Give more characters of the id.")
    return matches[0]


def remove(run: Run) -> None:
    shutil.rmtree(run.path)


def _valid_prefix(raw: bytes) -> bool:
    """Whether `raw` is the start of some JSON document: a file that ends too soon, not one
    with a wrong byte in it (a literal, number or string cut anywhere counts)."""
    try:
        from_json(raw, allow_partial=True)
    except ValueError:
        return False
    return True
