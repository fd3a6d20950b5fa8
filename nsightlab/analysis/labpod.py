"""The lab pod as the commands report it: its state (phase, node, GPU, time left before
it deletes itself), free GPUs per instance type, and what a cleanup or a copy did. Pure:
API objects in, models out."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from pydantic import BaseModel, Field

from nsightlab.analysis import pods as r
from nsightlab.analysis.inventory import gpu_product


class GpuFree(BaseModel):
    instance_type: str
    nodes: int
    gpu_allocatable: int
    gpu_free: int


class LabPod(BaseModel):
    context: str
    server: str | None
    namespace: str
    pod: str
    uid: str | None
    phase: str
    status: str
    ready: bool
    node: str | None
    instance_type: str | None
    gpu_product: str | None
    created: datetime | None
    started: datetime | None
    deadline: datetime | None
    seconds_left: int | None
    reused: bool = False
    next_steps: list[str] = Field(default_factory=list)


class StatusReport(BaseModel):
    context: str
    namespace: str
    pod: str
    gone: bool
    lab: LabPod | None
    note: str | None = None  # why the session's pod counts as gone (e.g. replaced under its name)


class CleanupReport(BaseModel):
    context: str
    namespace: str
    deleted: list[str]
    already_gone: list[str]
    skipped: list[str]  # pods that are not ours (never touched)


def _deadline(pod: dict[str, Any]) -> datetime | None:
    ads = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    start = r.parse_time((pod.get("status") or {}).get("startTime")) or r.parse_time((pod.get("metadata") or {}).get("creationTimestamp"))
    if ads is None or start is None:
        return None
    return start + timedelta(seconds=int(ads))


def lab_pod(pod: dict[str, Any], node: dict[str, Any] | None, *, context: str, server: str | None, namespace: str, reused: bool = False) -> LabPod:
    """The lab pod's state from its object (and its node's, for the instance type and GPU)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    deadline = _deadline(pod)
    left = int((deadline - datetime.now(timezone.utc)).total_seconds()) if deadline else None
    return LabPod(
        context=context,
        server=server,
        namespace=str(meta.get("namespace") or namespace),
        pod=str(meta.get("name")),
        uid=meta.get("uid"),
        phase=str(status.get("phase") or "Unknown"),
        status=r.pod_status(pod),
        ready=r.pod_is_ready(pod),
        node=(pod.get("spec") or {}).get("nodeName"),
        instance_type=r.instance_type(node) if node else None,
        gpu_product=gpu_product(node) if node else None,
        created=r.parse_time(meta.get("creationTimestamp")),
        started=r.parse_time(status.get("startTime")),
        deadline=deadline,
        seconds_left=max(0, left) if left is not None else None,
        reused=reused,
    )


class CopyResult(BaseModel):
    direction: str  # "in" (to the pod) or "out"
    source: str
    destination: str
    files: int
    bytes: int
    seconds: float
    verified: bool
    digests: dict[str, str]  # relative path -> sha256
