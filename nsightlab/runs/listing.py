"""`runs`: list, show and remove stored runs.

A run is found by its six-hex-digit id, any unambiguous prefix of it or of its folder
name, a path to its folder, or `latest` (`store.resolve`). An ambiguous prefix is exit 2
naming the candidates. Removing resolves every reference first, so a typo removes nothing.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from nsightlab.errors import UsageError
from nsightlab.runs import store
from nsightlab.runs.store import Run, RunMeta


class RunLine(BaseModel):
    """One run as `runs` lists it."""

    id: str
    folder: str
    kind: str
    name: str
    created: datetime
    where: str  # the context the run used, or "local"
    target: str
    context: str | None
    node: str | None
    instance_type: str | None
    gpu: str | None  # as meta.json records it
    device: str | None  # what ran it: the GPU, or "cpu (NAME)"
    device_type: str | None
    dtype: str | None
    headline: str | None
    complete: bool  # result.json is there
    session_uid: str | None
    impl: str | None = None  # a sweep's implementation: torch or triton


class RunsList(BaseModel):
    """`nsightlab runs --json`."""

    runs_dir: str
    runs: list[RunLine]


class RunFile(BaseModel):
    path: str  # relative to the run folder
    bytes: int


class RunDetail(BaseModel):
    """`nsightlab runs show ID --json`."""

    run: RunLine
    path: str
    meta: RunMeta
    files: list[RunFile]
    result: dict[str, Any] | None


class RemovedRuns(BaseModel):
    """`nsightlab runs rm ... --json`."""

    removed: list[RunLine]


def _result_or_none(run: Run) -> dict[str, Any] | None:
    try:
        data = json.loads((run.path / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _device(meta: RunMeta, result: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """(device, device type) from the result where it says, else meta.json's GPU."""
    name: str | None = None
    dtype: str | None = None
    if result is not None:
        if result.get("kind") == "sweep":
            dev = result.get("device") or {}
            name, dtype = dev.get("name"), dev.get("type")
        elif result.get("kind") == "profile":
            name, dtype = result.get("device_name"), result.get("device_type")
        elif result.get("kind") == "decode" and isinstance(result.get("device"), str):
            device = str(result["device"])  # the GPU's name, or "cpu (NAME)"
            if device.startswith("cpu"):
                name, dtype = device.removeprefix("cpu").strip(" ()") or None, "cpu"
            else:
                name, dtype = device, "cuda"
    name = name or meta.device or meta.gpu
    dtype = dtype or meta.device_type
    if dtype == "cpu":
        return (f"cpu ({name})" if name else "cpu"), dtype
    if dtype is None and name is not None and meta.kind == "ncu":
        dtype = "cuda"  # ncu profiles GPU kernels only
    return name, dtype


def _impl(result: dict[str, Any] | None) -> str | None:
    """A sweep's implementation (older sweeps, stored before there was a choice: torch)."""
    if result is None or result.get("kind") != "sweep":
        return None
    impl = result.get("impl", "torch")
    return impl if isinstance(impl, str) else None


def line(run: Run, meta: RunMeta | None = None, result: dict[str, Any] | None = None) -> RunLine:
    meta = meta or run.meta()
    if result is None:
        result = _result_or_none(run)
    device, device_type = _device(meta, result)
    return RunLine(
        id=meta.id,
        folder=run.folder,
        kind=meta.kind,
        name=meta.name,
        created=meta.created,
        where=meta.context or "local",
        target=meta.target,
        context=meta.context,
        node=meta.node,
        instance_type=meta.instance_type,
        gpu=meta.gpu,
        device=device,
        device_type=device_type,
        dtype=meta.dtype,
        headline=meta.headline,
        complete=result is not None,
        session_uid=meta.session_uid,
        impl=_impl(result),
    )


def list_runs(kind: str | None = None) -> RunsList:
    """Every stored run (oldest first), optionally of one kind."""
    out = []
    for run in store.all_runs():
        try:
            meta = run.meta()
        except UsageError:  # a damaged folder must not hide the others
            continue
        if kind is None or meta.kind == kind:
            out.append(line(run, meta))
    return RunsList(runs_dir=str(store.runs_dir()), runs=out)


def show_run(ref: str) -> RunDetail:
    run = store.resolve(ref)
    meta = run.meta()
    result = _result_or_none(run)
    files = [
        RunFile(path=p.relative_to(run.path).as_posix(), bytes=p.stat().st_size)
        for p in sorted(run.path.rglob("*"))
        if p.is_file()
    ]
    return RunDetail(run=line(run, meta, result), path=str(run.path), meta=meta, files=files, result=result)


def resolve_all(refs: list[str], *, in_store: bool = False) -> list[Run]:
    """Every reference resolved (exit 2 on the first that does not), duplicates dropped.

    With `in_store`, a path to a run folder outside `$NSIGHTLAB_HOME/runs` is refused:
    `runs rm` deletes only what the store holds.
    """
    base = store.runs_dir().resolve()
    seen: dict[Path, Run] = {}
    for ref in refs:
        run = store.resolve(ref)
        where = run.path.resolve()
        if in_store and where.parent != base:
            raise UsageError(f"{run.path} is not in the run store ({base})", hint="`runs rm` removes stored runs only.")
        seen.setdefault(where, run)
    return list(seen.values())


def remove_runs(runs: list[Run]) -> RemovedRuns:
    removed = []
    for run in runs:
        entry = line(run)
        store.remove(run)
        removed.append(entry)
    return RemovedRuns(removed=removed)
