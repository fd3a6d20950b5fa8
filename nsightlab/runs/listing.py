"""`runs`: list, show and remove stored runs.

A run is found by its six-hex-digit id, any unambiguous prefix of it or of its folder
name, a path to its folder, or `latest` (`store.resolve`). An ambiguous prefix is exit 2
naming the candidates. Removing resolves every reference first, so a typo removes nothing.
A damaged run (`store.inspect`) is listed, marked, and can be removed; showing it is exit
2 naming the file that cannot be read.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from nsightlab.errors import UsageError
from nsightlab.models import Model
from nsightlab.runs import store
from nsightlab.runs.store import Run, RunMeta


class RunLine(Model):
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
    complete: bool  # meta.json and result.json are there and read
    session_uid: str | None
    impl: str | None = None  # a sweep's implementation: torch or triton
    damaged: bool = False  # meta.json or result.json cannot be read (see `problem`)
    problem: str | None = None  # why it is damaged, or why it is not complete


class RunsList(Model):
    """`nsightlab runs --json`."""

    runs_dir: str
    runs: list[RunLine]


class RunFile(Model):
    path: str  # relative to the run folder
    bytes: int


class RunDetail(Model):
    """`nsightlab runs show ID --json`."""

    run: RunLine
    path: str
    meta: RunMeta
    files: list[RunFile]
    result: dict[str, Any] | None


class RemovedRuns(Model):
    """`nsightlab runs rm ... --json`."""

    removed: list[RunLine]


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
        elif result.get("kind") in ("decode", "pack", "tokenizer") and isinstance(result.get("device"), str):
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


def line(run: Run | store.RunStatus) -> RunLine:
    """One run as `runs` lists it, whatever state its folder is in."""
    status = run if isinstance(run, store.RunStatus) else store.inspect(run)
    meta = status.meta
    if meta is None:  # missing or damaged: what the folder's name says
        kind, name, created = store.folder_facts(status.run)
        return RunLine(
            id=status.run.id, folder=status.run.folder, kind=kind, name=name, created=created, where="?", target="?",
            context=None, node=None, instance_type=None, gpu=None, device=None, device_type=None, dtype=None,
            headline=None, complete=False, session_uid=None, damaged=status.state == "damaged", problem=status.problem,
        )  # fmt: skip
    device, device_type = _device(meta, status.data)
    return RunLine(
        id=meta.id,
        folder=status.run.folder,
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
        complete=status.complete,
        session_uid=meta.session_uid,
        impl=_impl(status.data),
        damaged=status.state == "damaged",
        problem=status.problem,
    )


def list_runs(kind: str | None = None) -> RunsList:
    """Every stored run (oldest first), optionally of one kind; damaged ones marked."""
    out = []
    for run in store.all_runs():
        entry = line(run)
        if kind is None or entry.kind == kind:
            out.append(entry)
    return RunsList(runs_dir=str(store.runs_dir()), runs=out)


def show_run(ref: str) -> RunDetail:
    """One run in full; a damaged run (or one not recorded yet) is the error naming why."""
    run = store.resolve(ref)
    status = store.inspect(run)
    if status.meta is None or status.state == "damaged":
        assert status.error is not None
        raise status.error
    files = [
        RunFile(path=p.relative_to(run.path).as_posix(), bytes=p.stat().st_size)
        for p in sorted(run.path.rglob("*"))
        if p.is_file()
    ]
    return RunDetail(run=line(status), path=str(run.path), meta=status.meta, files=files, result=status.data)


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
