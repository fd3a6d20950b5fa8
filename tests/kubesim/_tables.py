"""Server-side Table output (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``).

The columns and cells follow the API server's own printers for pods, nodes, events,
namespaces, deployments, replica sets and jobs; every other resource gets Name and Age.
The server always fills the wide (priority 1) cells; kubectl hides them without ``-o wide``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

Obj = Mapping[str, Any]


def parse_time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """The API server's short duration format (``5s``, ``3m20s``, ``4h5m``, ``3d4h``, ``2y3d``)."""
    secs = int(seconds)
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    minutes = secs // 60
    if minutes < 10:
        rem = secs % 60
        return f"{minutes}m" if rem == 0 else f"{minutes}m{rem}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = secs // 3600
    if hours < 8:
        rem = minutes % 60
        return f"{hours}h" if rem == 0 else f"{hours}h{rem}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rem = hours % 24
        return f"{hours // 24}d" if rem == 0 else f"{hours // 24}d{rem}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def since(value: str | None, now: dt.datetime) -> str:
    when = parse_time(value)
    if when is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


def _col(name: str, description: str, priority: int = 0, fmt: str = "", type_: str = "string") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


_NAME = _col("Name", "Name must be unique within a namespace.", fmt="name")
_AGE = _col("Age", "CreationTimestamp is a timestamp representing the server time when this object was created.")

POD_COLUMNS = [
    _NAME,
    _col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", "The aggregate status of the containers in this pod."),
    _col(
        "Restarts",
        "The number of times the containers in this pod have been restarted and when the last container in this "
        "pod has restarted.",
    ),
    _AGE,
    _col("IP", "podIP address allocated to the pod. Routable at least within the cluster.", 1),
    _col("Node", "NodeName indicates in which node this pod is scheduled.", 1),
    _col("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node.", 1),
    _col("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness.", 1),
]
NODE_COLUMNS = [
    _NAME,
    _col("Status", "The status of the node"),
    _col("Roles", "The roles of the node"),
    _AGE,
    _col("Version", "Kubelet Version reported by the node."),
    _col("Internal-IP", "List of addresses reachable to the node. Queried from cloud provider, if available.", 1),
    _col("External-IP", "List of addresses reachable to the node. Queried from cloud provider, if available.", 1),
    _col("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", 1),
    _col("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1),
    _col(
        "Container-Runtime",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
        1,
    ),
]
EVENT_COLUMNS = [
    _col("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    _col("Type", "Type of this event (Normal, Warning), new types could be added in the future."),
    _col(
        "Reason",
        "This should be a short, machine understandable string that gives the reason for the transition into the "
        "object's current status.",
    ),
    _col("Object", "The object that this event is about."),
    _col("Subobject", "The subobject this event is about.", 1),
    _col("Source", "The component reporting this event. Should be a short machine understandable string.", 1),
    _col("Message", "A human-readable description of the status of this operation."),
    _col("First Seen", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)", 1),
    _col("Count", "The number of times this event has occurred.", 1),
    _col("Name", "Name must be unique within a namespace.", 1, "name"),
]
NAMESPACE_COLUMNS = [
    _NAME,
    _col("Status", "The status of the namespace"),
    _AGE,
]
DEPLOYMENT_COLUMNS = [
    _NAME,
    _col("Ready", "Number of the pod with ready state"),
    _col(
        "Up-to-date",
        "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
    ),
    _col(
        "Available", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."
    ),
    _AGE,
    _col("Containers", "Names of each container in the template.", 1),
    _col("Images", "Images referenced by each container in the template.", 1),
    _col(
        "Selector",
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected "
        "by this deployment.",
        1,
    ),
]
REPLICASET_COLUMNS = [
    _NAME,
    _col("Desired", "Replicas is the number of desired replicas."),
    _col("Current", "Replicas is the most recently observed number of replicas."),
    _col("Ready", "The number of ready replicas for this replica set."),
    _AGE,
    _col("Containers", "Names of each container in the template.", 1),
    _col("Images", "Images referenced by each container in the template.", 1),
    _col("Selector", "Selector is a label query over pods that should match the replica count.", 1),
]
JOB_COLUMNS = [
    _NAME,
    _col("Status", "Status of the job."),
    _col(
        "Completions",
        "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. "
        "However, it may decrease in reaction to scale down of elastic indexed jobs.",
    ),
    _col("Duration", "Time required to complete the job."),
    _AGE,
    _col("Containers", "Names of each container in the template.", 1),
    _col("Images", "Images referenced by each container in the template.", 1),
    _col(
        "Selector",
        "A label query over pods that should match the pod count. Normally, the system sets this field for you. "
        "More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        1,
    ),
]
GENERIC_COLUMNS = [_NAME, _AGE]


def _is_sidecar(container: Obj | None) -> bool:
    return bool(container) and container.get("restartPolicy") == "Always"  # type: ignore[union-attr]


def pod_cells(pod: Obj, now: dt.datetime) -> tuple[list[Any], list[dict[str, str]]]:
    """The pod row, with the same READY/STATUS/RESTARTS logic as the API server's printer."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    total = len(spec.get("containers") or []) + sum(1 for c in init_specs.values() if _is_sidecar(c))
    ready = 0
    restarts = 0
    sidecar_restarts = 0
    last_restart: dt.datetime | None = None
    last_sidecar_restart: dt.datetime | None = None
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    conditions: list[dict[str, str]] = []
    if phase == "Succeeded":
        conditions = [
            {
                "type": "Completed",
                "status": "True",
                "reason": "Succeeded",
                "message": "The pod has completed successfully.",
            }
        ]
    elif phase == "Failed":
        conditions = [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]

    def later(a: dt.datetime | None, cs: Obj) -> dt.datetime | None:
        term = ((cs.get("lastState") or {}).get("terminated")) or {}
        when = parse_time(term.get("finishedAt"))
        if when is not None and (a is None or when > a):
            return when
        return a

    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for i, cs in enumerate(init_statuses):
        restarts += int(cs.get("restartCount") or 0)
        last_restart = later(last_restart, cs)
        sidecar = _is_sidecar(init_specs.get(cs.get("name")))
        if sidecar:
            sidecar_restarts += int(cs.get("restartCount") or 0)
            last_sidecar_restart = later(last_sidecar_restart, cs)
        state = cs.get("state") or {}
        term = state.get("terminated")
        waiting = state.get("waiting")
        if term is not None and int(term.get("exitCode") or 0) == 0:
            continue
        if sidecar and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if term is not None:
            if not term.get("reason"):
                if term.get("signal"):
                    reason = f"Init:Signal:{term['signal']}"
                else:
                    reason = f"Init:ExitCode:{term.get('exitCode', 0)}"
            else:
                reason = "Init:" + term["reason"]
        elif waiting is not None and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers') or [])}"
        initializing = True
        break

    initialized = any(
        c.get("type") == "Initialized" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    if not initializing or initialized:
        restarts = sidecar_restarts
        last_restart = last_sidecar_restart
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
            last_restart = later(last_restart, cs)
            state = cs.get("state") or {}
            waiting = state.get("waiting")
            term = state.get("terminated")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif term is not None and term.get("reason"):
                reason = term["reason"]
            elif term is not None:
                reason = f"Signal:{term['signal']}" if term.get("signal") else f"ExitCode:{term.get('exitCode', 0)}"
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            has_ready = any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
            )
            reason = "Running" if has_ready else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_str = str(restarts)
    if restarts and last_restart is not None:
        restarts_str = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"
    pod_ips = status.get("podIPs") or []
    pod_ip = pod_ips[0].get("ip") if pod_ips else ""
    gates = spec.get("readinessGates") or []
    gates_str = "<none>"
    if gates:
        true_types = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
        gates_str = f"{sum(1 for g in gates if g.get('conditionType') in true_types)}/{len(gates)}"
    cells = [
        meta.get("name", ""),
        f"{ready}/{total}",
        reason,
        restarts_str,
        since(meta.get("creationTimestamp"), now),
        pod_ip or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_str,
    ]
    return cells, conditions


def node_cells(node: Obj, now: dt.datetime) -> list[Any]:
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    states: list[str] = []
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            states.append("Ready" if cond.get("status") == "True" else "NotReady")
    if not states:
        states.append("Unknown")
    if (node.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    roles: set[str] = set()
    for key, value in (meta.get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/"):
            roles.add(key.split("/", 1)[1])
        elif key == "kubernetes.io/role":
            roles.add(value)
    info = status.get("nodeInfo") or {}

    def address(kind: str) -> str:
        for addr in status.get("addresses") or []:
            if addr.get("type") == kind:
                return str(addr.get("address"))
        return "<none>"

    return [
        meta.get("name", ""),
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        since(meta.get("creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def event_cells(event: Obj, now: dt.datetime) -> list[Any]:
    first = (
        since(event.get("firstTimestamp"), now) if event.get("firstTimestamp") else since(event.get("eventTime"), now)
    )
    last = since(event.get("lastTimestamp"), now) if event.get("lastTimestamp") else first
    count = event.get("count") or 1
    series = event.get("series")
    if series:
        last = since(series.get("lastObservedTime"), now)
        count = series.get("count") or count
    inv = event.get("involvedObject") or {}
    kind = str(inv.get("kind") or "").lower()
    target = f"{kind}/{inv['name']}" if inv.get("name") else kind
    source = event.get("source") or {}
    if source.get("component"):
        src = source["component"] + (f", {source['host']}" if source.get("host") else "")
    else:
        src = event.get("reportingComponent") or ""
    return [
        last,
        event.get("type", ""),
        event.get("reason", ""),
        target,
        inv.get("fieldPath", ""),
        src,
        str(event.get("message") or "").strip(),
        first,
        int(count),
        (event.get("metadata") or {}).get("name", ""),
    ]


def namespace_cells(ns: Obj, now: dt.datetime) -> list[Any]:
    meta = ns.get("metadata") or {}
    return [meta.get("name", ""), (ns.get("status") or {}).get("phase", ""), since(meta.get("creationTimestamp"), now)]


def _selector_str(sel: Obj | None) -> str:
    if not sel:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for expr in sel.get("matchExpressions") or []:
        op = expr.get("operator", "").lower()
        parts.append(f"{expr.get('key')} {op} ({','.join(expr.get('values') or [])})")
    return ",".join(parts) or "<none>"


def _template_containers(obj: Obj) -> tuple[str, str]:
    containers = ((((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    return ",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)


def deployment_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec, status, meta = obj.get("spec") or {}, obj.get("status") or {}, obj.get("metadata") or {}
    names, images = _template_containers(obj)
    return [
        meta.get("name", ""),
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        int(status.get("updatedReplicas", 0)),
        int(status.get("availableReplicas", 0)),
        since(meta.get("creationTimestamp"), now),
        names,
        images,
        _selector_str(spec.get("selector")),
    ]


def replicaset_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec, status, meta = obj.get("spec") or {}, obj.get("status") or {}, obj.get("metadata") or {}
    names, images = _template_containers(obj)
    return [
        meta.get("name", ""),
        int(spec.get("replicas", 1)),
        int(status.get("replicas", 0)),
        int(status.get("readyReplicas", 0)),
        since(meta.get("creationTimestamp"), now),
        names,
        images,
        _selector_str(spec.get("selector")),
    ]


def _has_condition(obj: Obj, type_: str) -> bool:
    return any(
        c.get("type") == type_ and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or []
    )


def job_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    """The Job row: STATUS from its conditions, COMPLETIONS, DURATION (running or final)."""
    spec, status, meta = obj.get("spec") or {}, obj.get("status") or {}, obj.get("metadata") or {}
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif int(spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    start = parse_time(status.get("startTime"))
    end = parse_time(status.get("completionTime"))
    duration = "" if start is None else human_duration(((end or now) - start).total_seconds())
    if _has_condition(obj, "Complete"):
        state = "Complete"
    elif _has_condition(obj, "Failed"):
        state = "Failed"
    elif meta.get("deletionTimestamp"):
        state = "Terminating"
    elif _has_condition(obj, "Suspended"):
        state = "Suspended"
    elif _has_condition(obj, "FailureTarget"):
        state = "FailureTarget"
    else:
        state = "Running"
    names, images = _template_containers(obj)
    return [
        meta.get("name", ""),
        state,
        completions,
        duration,
        since(meta.get("creationTimestamp"), now),
        names,
        images,
        _selector_str(spec.get("selector")),
    ]


def generic_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    meta = obj.get("metadata") or {}
    return [meta.get("name", ""), since(meta.get("creationTimestamp"), now)]


_PRINTERS: dict[str, tuple[list[dict[str, Any]], Callable[[Obj, dt.datetime], list[Any]]]] = {
    "nodes": (NODE_COLUMNS, node_cells),
    "events": (EVENT_COLUMNS, event_cells),
    "namespaces": (NAMESPACE_COLUMNS, namespace_cells),
    "deployments": (DEPLOYMENT_COLUMNS, deployment_cells),
    "replicasets": (REPLICASET_COLUMNS, replicaset_cells),
    "jobs": (JOB_COLUMNS, job_cells),
}


def columns_for(plural: str) -> list[dict[str, Any]]:
    if plural == "pods":
        return POD_COLUMNS
    return _PRINTERS.get(plural, (GENERIC_COLUMNS, generic_cells))[0]


def partial_metadata(obj: Obj) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def table_row(plural: str, obj: Obj, include: str, now: dt.datetime) -> dict[str, Any]:
    """One Table row; ``include`` is the request's includeObject (Object, Metadata, None)."""
    conditions: list[dict[str, str]] = []
    if plural == "pods":
        cells, conditions = pod_cells(obj, now)
    else:
        cells = _PRINTERS.get(plural, (GENERIC_COLUMNS, generic_cells))[1](obj, now)
    row: dict[str, Any] = {"cells": cells}
    if conditions:
        row["conditions"] = conditions
    if include == "Object":
        row["object"] = obj
    elif include != "None":
        row["object"] = partial_metadata(obj)
    return row


def table(plural: str, objs: list[Obj], include: str, metadata: dict[str, Any], headers: bool = True) -> dict[str, Any]:
    now = dt.datetime.now(dt.timezone.utc)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns_for(plural) if headers else [],
        "rows": [table_row(plural, obj, include, now) for obj in objs],
    }
