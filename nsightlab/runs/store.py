"""The run store: every run is a folder under `$NSIGHTLAB_HOME/runs/`.

    runs/<UTC timestamp>-<kind>-<name>-<id>/
        raw/          what came back from the target (CSV exports, .nsys-rep, the script's JSON)
        meta.json     context, node, GPU, versions, command
        result.json   the parsed, analysed result

Results are written to disk (atomically) before anything is printed. A run's id is six
hex digits; any unambiguous prefix of the id (or of the folder name) finds it.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from nsightlab.config import atomic_write_json, home
from nsightlab.errors import UsageError

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class RunMeta(BaseModel):
    id: str
    kind: str  # "profile", "sweep", "ncu"
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

    def meta(self) -> RunMeta:
        try:
            return RunMeta.model_validate_json((self.path / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise UsageError(f"run {self.path.name} has no readable meta.json ({e})") from None

    def write_meta(self, meta: RunMeta) -> None:
        atomic_write_json(self.path / "meta.json", meta.model_dump(mode="json"))

    def write_result(self, result: BaseModel | dict[str, Any]) -> Path:
        data = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
        path = self.path / "result.json"
        atomic_write_json(path, data)
        return path

    def result(self) -> dict[str, Any]:
        path = self.path / "result.json"
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UsageError(f"run {self.path.name} has no result (it did not finish)") from None
        except ValueError as e:
            raise UsageError(f"{path} is not valid JSON ({e})") from None
        return data

    def has_result(self) -> bool:
        return (self.path / "result.json").is_file()


def runs_dir() -> Path:
    return home() / "runs"


def new_run(kind: str, name: str, *, now: datetime | None = None) -> tuple[Run, str]:
    """A fresh run folder (with raw/) and its id."""
    now = now or datetime.now(timezone.utc)
    run_id = secrets.token_hex(3)
    folder = f"{now:%Y%m%dT%H%M%SZ}-{_SAFE.sub('-', kind)}-{_SAFE.sub('-', name).strip('-')[:40] or 'run'}-{run_id}"
    path = runs_dir() / folder
    (path / "raw").mkdir(parents=True)
    return Run(path), run_id


def all_runs() -> list[Run]:
    """Every run folder, oldest first."""
    base = runs_dir()
    if not base.is_dir():
        return []
    return [Run(p) for p in sorted(base.iterdir()) if p.is_dir() and (p / "meta.json").is_file()]


def resolve(ref: str) -> Run:
    """A run by id prefix, folder-name prefix, a path to a run folder, or 'latest'."""
    candidate = Path(ref).expanduser()
    if candidate.is_dir() and (candidate / "meta.json").is_file():
        return Run(candidate)
    runs = all_runs()
    if ref in ("latest", "last"):
        if not runs:
            raise UsageError("there are no runs yet", hint="Make one with `nsightlab profile lesson1` or `nsightlab sweep`.")
        return runs[-1]
    matches = [r for r in runs if r.folder.rsplit("-", 1)[-1].startswith(ref) or r.folder.startswith(ref)]
    if not matches:
        raise UsageError(f"no run matches '{ref}'", hint="List them with `nsightlab runs`.")
    if len(matches) > 1:
        ids = ", ".join(r.folder.rsplit("-", 1)[-1] for r in matches[:6])
        raise UsageError(f"'{ref}' matches {len(matches)} runs ({ids})", hint="Give more characters of the id.")
    return matches[0]


def remove(run: Run) -> None:
    shutil.rmtree(run.path)
