"""Pure helpers over raw Kubernetes objects (dicts): GPUs, quantities, pod status, ages.

No I/O here. The GPU accounting follows the scheduler's rule for native sidecars (an
init container with `restartPolicy: Always`): a pod's effective request is
max(the largest one-shot init container plus the sidecars started before it,
the app containers plus all sidecars). Viewers that only sum app containers, or that
take max(init) without adding sidecars, under-count GPUs held by sidecars.
"""

from __future__ import annotations

import functools
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

from nsightlab import kubevalues

GPU = "nvidia.com/gpu"
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
TERMINAL_PHASES = ("Succeeded", "Failed")


def parse_quantity(value: Any) -> Decimal:
    """A Kubernetes quantity from an API object ("1", "500m", "24Gi", 2) as a Decimal; bad
    input -> 0. The grammar is `kubevalues.parse_quantity`, the one config.yaml is checked
    with; a server never sends anything else, so what does not parse counts as nothing."""
    if value is None or isinstance(value, bool):
        return Decimal(0)
    if isinstance(value, (int, float)):
        number = Decimal(str(value))
        return number if number.is_finite() else Decimal(0)
    try:
        return kubevalues.parse_quantity(str(value).strip())
    except ValueError:
        return Decimal(0)


def container_request(container: dict[str, Any], resource: str = GPU) -> Decimal:
    """What the scheduler reserves for one container: requests, else limits."""
    res = container.get("resources") or {}
    requests = res.get("requests") or {}
    if resource in requests:
        return parse_quantity(requests[resource])
    return parse_quantity((res.get("limits") or {}).get(resource))


def asks_for(spec: dict[str, Any], resource: str) -> bool:
    """Does any container of this pod spec name `resource` in its requests or limits?"""
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or ():
            res = c.get("resources")
            if res and (resource in (res.get("limits") or ()) or resource in (res.get("requests") or ())):
                return True
    return resource in (spec.get("overhead") or ())


def is_sidecar(container: dict[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def pod_request(pod: dict[str, Any], resource: str = GPU) -> Decimal:
    """The pod's effective request of `resource`, native sidecars included."""
    spec = pod.get("spec") or {}
    sidecars = Decimal(0)
    init_peak = Decimal(0)
    for c in spec.get("initContainers") or []:
        req = container_request(c, resource)
        if is_sidecar(c):
            sidecars += req
            init_peak = max(init_peak, sidecars)
        else:
            init_peak = max(init_peak, sidecars + req)
    app = sum((container_request(c, resource) for c in spec.get("containers") or []), Decimal(0)) + sidecars
    total = max(init_peak, app)
    overhead = (spec.get("overhead") or {}).get(resource)
    if overhead is not None:
        total += parse_quantity(overhead)
    return total


def pod_gpus(pod: dict[str, Any]) -> int:
    return int(pod_request(pod, GPU))


def gpu_holders(pod: dict[str, Any]) -> list[str]:
    """Names of the containers (init, sidecar or app) that ask for a GPU."""
    spec = pod.get("spec") or {}
    out = []
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        if container_request(c, GPU) > 0:
            out.append(str(c.get("name")))
    return out


def is_terminal(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def labels(obj: dict[str, Any]) -> dict[str, str]:
    """The object's labels (the object's own dict: do not modify)."""
    found: dict[str, str] = (obj.get("metadata") or {}).get("labels") or {}
    return found


def instance_type(node: dict[str, Any]) -> str | None:
    lab = labels(node)
    for key in INSTANCE_TYPE_LABELS:
        if lab.get(key):
            return lab[key]
    return None


def node_gpu_allocatable(node: dict[str, Any]) -> int:
    status = node.get("status") or {}
    return int(parse_quantity((status.get("allocatable") or {}).get(GPU)))


def node_gpu_capacity(node: dict[str, Any]) -> int:
    status = node.get("status") or {}
    return int(parse_quantity((status.get("capacity") or {}).get(GPU)))


def node_is_gpu(node: dict[str, Any]) -> bool:
    lab = labels(node)
    return node_gpu_capacity(node) > 0 or node_gpu_allocatable(node) > 0 or lab.get("nvidia.com/gpu.present") == "true"


def node_gpu_label(node: dict[str, Any]) -> str | None:
    """The GPU product as the node's labels name it (device plugin, then Karpenter)."""
    lab = labels(node)
    product = lab.get("nvidia.com/gpu.product")
    if product:
        return product.replace("-", " ")
    name = lab.get("karpenter.k8s.aws/instance-gpu-name")
    return name or None


def node_ready(node: dict[str, Any]) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def node_status(node: dict[str, Any]) -> str:
    text = "Ready" if node_ready(node) else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def taints(node: dict[str, Any]) -> list[str]:
    out = []
    for t in (node.get("spec") or {}).get("taints") or []:
        key = t.get("key", "")
        value = t.get("value")
        effect = t.get("effect", "")
        out.append(f"{key}={value}:{effect}" if value else f"{key}:{effect}")
    return out


@functools.lru_cache(maxsize=4096)
def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime (cached: objects share timestamps)."""
    if not value:
        return None
    text = str(value)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def age(obj: dict[str, Any], now: datetime | None = None) -> str:
    created = parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
    if created is None:
        return "<unknown>"
    return human_duration(((now or datetime.now(timezone.utc)) - created).total_seconds())


def human_duration(seconds: float) -> str:
    """kubectl's short durations: 45s, 12m, 3h20m, 5d3h, 400d."""
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if d < 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    return f"{d}d"


def pod_ready(pod: dict[str, Any]) -> str:
    """READY as kubectl shows it: ready/total over app containers and sidecars."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    sidecars = {c.get("name") for c in spec.get("initContainers") or [] if is_sidecar(c)}
    total = len(spec.get("containers") or []) + len(sidecars)
    ready = sum(1 for cs in status.get("containerStatuses") or [] if cs.get("ready"))
    ready += sum(
        1 for cs in status.get("initContainerStatuses") or [] if cs.get("name") in sidecars and cs.get("ready")
    )
    return f"{ready}/{total}"


def pod_restarts(pod: dict[str, Any]) -> int:
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    sidecars = {c.get("name") for c in spec.get("initContainers") or [] if is_sidecar(c)}
    n = sum(int(cs.get("restartCount") or 0) for cs in status.get("containerStatuses") or [])
    n += sum(
        int(cs.get("restartCount") or 0)
        for cs in status.get("initContainerStatuses") or []
        if cs.get("name") in sidecars
    )
    return n


def pod_status(pod: dict[str, Any]) -> str:
    """STATUS as kubectl prints it (Running, Pending, Init:0/1, CrashLoopBackOff, Terminating...)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    reason = status.get("reason") or status.get("phase") or "Unknown"
    init_specs = spec.get("initContainers") or []
    sidecars = {c.get("name") for c in init_specs if is_sidecar(c)}
    init_statuses = status.get("initContainerStatuses") or []
    initializing = False
    for i, cs in enumerate(init_statuses):
        state = cs.get("state") or {}
        term = state.get("terminated")
        waiting = state.get("waiting")
        if term and term.get("exitCode") == 0:
            continue
        if cs.get("name") in sidecars and state.get("running") and cs.get("started"):
            continue
        if term:
            reason = "Init:" + (term.get("reason") or f"ExitCode:{term.get('exitCode')}")
        elif waiting and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    if not initializing:
        running = False
        for cs in reversed(status.get("containerStatuses") or []):
            state = cs.get("state") or {}
            if state.get("waiting", {}).get("reason"):
                reason = state["waiting"]["reason"]
            elif state.get("terminated"):
                term = state["terminated"]
                reason = term.get("reason") or (
                    f"Signal:{term['signal']}" if term.get("signal") else f"ExitCode:{term.get('exitCode')}"
                )
            elif state.get("running") and cs.get("ready"):
                running = True
        if reason == "Completed" and running:
            reason = "Running"
    if meta.get("deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def pod_is_ready(pod: dict[str, Any]) -> bool:
    cond = condition(pod, "Ready")
    return bool(cond and cond.get("status") == "True")
