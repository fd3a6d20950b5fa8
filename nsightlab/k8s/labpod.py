"""The lab pod as the commands report it: its state (phase, node, GPU, time left before
it deletes itself), free GPUs per instance type, and what a cleanup or a copy did. Pure:
API objects in, models out."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from pydantic import Field

from nsightlab.k8s import pods as r
from nsightlab.k8s.inventory import gpu_product
from nsightlab.models import Model


class GpuFree(Model):
    instance_type: str
    nodes: int
    gpu_allocatable: int
    gpu_free: int
    gpu_most: int = 0  # the most allocatable GPUs on one node of the type


class LabPod(Model):
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
    seconds_left: int | None  # within [0, activeDeadlineSeconds]
    # how far the pod's start time is ahead of this machine's clock, when it is more than
    # CLOCK_TOLERANCE_S: then the time left cannot be told from here
    clock_ahead_s: int | None = None
    reused: bool = False
    next_steps: list[str] = Field(default_factory=list)
    # while Pending without a node: why, in the scheduler's words (its PodScheduled
    # condition, else its last FailedScheduling Event)
    scheduler: str | None = None


class StatusReport(Model):
    context: str
    namespace: str
    pod: str
    gone: bool
    lab: LabPod | None
    next_steps: list[str] = Field(default_factory=list)
    note: str | None = None  # why the session's pod counts as gone (e.g. replaced under its name)


class FleetCleanup(Model):
    """What `cleanup --fleet ID` / `--all-mine` removed of fleets."""

    fleets: list[str] = Field(default_factory=list)
    jobs: list[str] = Field(default_factory=list)
    configmaps: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)  # not ours: left alone


class CleanupReport(Model):
    context: str | None  # None (and `note` says so): no lab session and no --context, nothing to delete
    namespace: str | None
    deleted: list[str]
    already_gone: list[str]
    skipped: list[str]  # pods that are not ours (never touched)
    owner: str | None = None
    all_mine: bool = False  # --all-mine: every lab pod of `owner` in the namespace
    fleets: FleetCleanup | None = None  # with --fleet ID or --all-mine: the fleets' Jobs and ConfigMaps
    note: str | None = None


# Clocks of a laptop and a cluster's nodes differ by a few seconds; beyond this, the
# pod's start time is in this machine's future and the time left is not to be believed.
CLOCK_TOLERANCE_S = 30


def _time_left(pod: dict[str, Any], now: datetime) -> tuple[datetime | None, int | None, int | None]:
    """(deadline, seconds left, how far the start is ahead of `now` beyond the tolerance).

    The pod deletes itself activeDeadlineSeconds after its start, counted on its node's
    clock: the time left is clamped to [0, activeDeadlineSeconds], and when the start is
    ahead of this machine's clock the difference is said instead of promised as time.
    """
    ads = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    start = r.parse_time((pod.get("status") or {}).get("startTime")) or r.parse_time(
        (pod.get("metadata") or {}).get("creationTimestamp")
    )
    if ads is None or start is None:
        return None, None, None
    try:
        limit = max(0, int(ads))
        deadline = start + timedelta(seconds=limit)
    except (TypeError, ValueError, OverflowError):
        return None, None, None
    ahead = (start - now).total_seconds()
    left = min(limit, max(0, int((deadline - now).total_seconds())))
    return deadline, left, int(ahead) if ahead > CLOCK_TOLERANCE_S else None


def selected_instance_type(pod: dict[str, Any]) -> str | None:
    """The instance type a bound pod's node has: its node selector names it (the
    scheduler binds only to a node with that label), when the node itself cannot be read."""
    spec = pod.get("spec") or {}
    if not spec.get("nodeName"):
        return None
    selector = spec.get("nodeSelector") or {}
    value = next((selector[key] for key in r.INSTANCE_TYPE_LABELS if selector.get(key)), None)
    return str(value) if value else None


def lab_pod(
    pod: dict[str, Any],
    node: dict[str, Any] | None,
    *,
    context: str,
    server: str | None,
    namespace: str,
    reused: bool = False,
) -> LabPod:
    """The lab pod's state from its object (and its node's, for the instance type and GPU)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    deadline, left, ahead = _time_left(pod, datetime.now(timezone.utc))
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
        instance_type=r.instance_type(node) if node else selected_instance_type(pod),
        gpu_product=gpu_product(node) if node else None,
        created=r.parse_time(meta.get("creationTimestamp")),
        started=r.parse_time(status.get("startTime")),
        deadline=deadline,
        seconds_left=left,
        clock_ahead_s=ahead,
        reused=reused,
        scheduler=unscheduled_reason(pod),
    )


def unscheduled_reason(pod: dict[str, Any], events: list[dict[str, Any]] | None = None) -> str | None:
    """Why a Pending pod has no node, in the scheduler's words: its PodScheduled=False
    condition, else the last FailedScheduling Event among `events`; None once it is bound."""
    if (pod.get("spec") or {}).get("nodeName") or (pod.get("status") or {}).get("phase") not in (None, "Pending"):
        return None
    sched = r.condition(pod, "PodScheduled") or {}
    if sched.get("status") == "False" and (sched.get("message") or sched.get("reason")):
        return str(sched.get("message") or sched.get("reason")).strip()
    failed = [
        e
        for e in pod_events(events or [], uid=(pod.get("metadata") or {}).get("uid"))
        if e.reason == "FailedScheduling"
    ]
    return failed[-1].message if failed else None


class PodEvent(Model):
    """One Event about the pod, as `kubectl describe pod` lists them."""

    type: str  # Normal or Warning
    reason: str
    age: str  # "12s", or "3m (x4 over 10m)" for a repeated event
    seconds_ago: int | None  # since it was last seen
    count: int
    source: str  # the FROM column: default-scheduler, kubelet, ...
    message: str
    first: datetime | None
    last: datetime | None


class EventsReport(Model):
    """`nsightlab events`: the lab pod's Events, oldest first."""

    context: str
    namespace: str
    pod: str
    uid: str | None  # None when the pod is gone (then every event about that name is shown)
    gone: bool
    events: list[PodEvent]


def _event_time(e: dict[str, Any], *keys: str) -> datetime | None:
    for key in keys:
        t = r.parse_time(e.get(key))
        if t is not None:
            return t
    return r.parse_time((e.get("metadata") or {}).get("creationTimestamp"))


def pod_events(events: list[dict[str, Any]], *, uid: str | None, now: datetime | None = None) -> list[PodEvent]:
    """The Events about one pod (of that uid, when known), oldest first, with kubectl's
    AGE: since last seen, and for a repeated event how often over how long."""
    now = now or datetime.now(timezone.utc)
    out: list[tuple[datetime, PodEvent]] = []
    for e in events:
        if uid and (e.get("involvedObject") or {}).get("uid") not in (None, "", uid):
            continue
        first = _event_time(e, "firstTimestamp", "eventTime")
        last = _event_time(e, "lastTimestamp", "eventTime", "firstTimestamp")
        count = int(e.get("count") or (e.get("series") or {}).get("count") or 1)
        ago = int((now - last).total_seconds()) if last else None
        age = r.human_duration(max(0, ago)) if ago is not None else "<unknown>"
        if count > 1 and first is not None:
            age += f" (x{count} over {r.human_duration(max(0, (now - first).total_seconds()))})"
        source = (e.get("source") or {}).get("component") or e.get("reportingComponent") or ""
        out.append(
            (
                last or first or now,
                PodEvent(
                    type=str(e.get("type") or "Normal"),
                    reason=str(e.get("reason") or ""),
                    age=age,
                    seconds_ago=ago,
                    count=count,
                    source=str(source),
                    message=str(e.get("message") or "").strip(),
                    first=first,
                    last=last,
                ),
            )
        )
    return [ev for _, ev in sorted(out, key=lambda pair: pair[0])]


class CopyResult(Model):
    direction: str  # "in" (to the pod) or "out"
    source: str
    destination: str
    files: int
    bytes: int
    seconds: float
    verified: bool
    digests: dict[str, str]  # relative path -> sha256
