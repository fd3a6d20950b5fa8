"""What a cluster holds, as typed reports: nodes and their GPUs (allocatable, requested by
the scheduler's rule for native sidecars, free), counts per instance type, pods and who
holds a GPU. Pure: raw API objects in, models out (`nsightlab.cluster.inventory_reads` fetches
them)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from nsightlab.k8s import pods as r
from nsightlab.models import Model
from nsightlab.specs import gpus


@dataclass(slots=True)
class NodeRow:
    """One node of the report. A plain dataclass: a big cluster has thousands of rows,
    built from facts that are already typed (pydantic still serialises them)."""

    name: str
    instance_type: str | None
    gpu: bool
    gpu_product: str | None
    gpu_allocatable: int
    gpu_requested: int
    gpu_free: int
    status: str
    zone: str | None
    age: str


class InstanceTypeRow(Model):
    instance_type: str
    nodes: int
    gpu_product: str | None
    gpu_allocatable: int
    gpu_requested: int
    gpu_free: int


class NodesReport(Model):
    context: str
    server: str | None
    nodes: list[NodeRow]
    instance_types: list[InstanceTypeRow]
    gpu_nodes: int
    lab_instance_type: str
    lab_nodes: int
    lab_gpus_free: int


class PodRow(Model):
    namespace: str
    name: str
    ready: str
    status: str
    restarts: int
    age: str
    node: str | None
    gpus: int


class PodsReport(Model):
    context: str
    namespace: str | None
    match: str | None
    pods: list[PodRow]


class ContainerInfo(Model):
    name: str
    kind: str  # "init", "sidecar" or "app"
    image: str | None
    restart_policy: str | None
    requests: dict[str, str]
    limits: dict[str, str]
    gpus: int
    holds_gpu: bool


class PodDetail(Model):
    context: str
    namespace: str
    name: str
    status: str
    ready: str
    node: str | None
    instance_type: str | None
    gpu_product: str | None
    gpus: int
    init_containers: list[ContainerInfo]
    containers: list[ContainerInfo]
    tolerations: list[str]
    node_selector: dict[str, str]
    notes: list[str]


class NodeDetail(Model):
    context: str
    name: str
    instance_type: str | None
    status: str
    gpu_product: str | None
    gpu_labels: dict[str, str]
    capacity: dict[str, str]
    allocatable: dict[str, str]
    taints: list[str]
    gpu_allocatable: int
    gpu_requested: int
    gpu_free: int
    pods: list[PodRow]
    notes: list[str]


def gpu_product(node: dict[str, Any]) -> str | None:
    """The GPU's product name: from the spec table by instance type, else the labels."""
    itype = r.instance_type(node)
    if itype:
        spec = gpus.for_instance_type(itype)
        if spec is not None:
            return spec.name
    label = r.node_gpu_label(node)
    if label:
        spec = gpus.lookup(label)
        return spec.name if spec is not None else label
    return None


def requested_by_node(pods: list[dict[str, Any]]) -> dict[str, int]:
    used: dict[str, int] = {}
    add_gpu_use(used, pods)
    return used


@dataclass(slots=True)
class NodeFacts:
    """What explore needs of one node (the rest of the object is dropped at once)."""

    name: str
    instance_type: str | None
    gpu: bool
    gpu_product: str | None
    gpu_allocatable: int
    schedulable: bool
    status: str
    zone: str | None
    age: str


def node_facts(node: dict[str, Any], now: datetime) -> NodeFacts:
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    status = node.get("status") or {}
    alloc_raw = (status.get("allocatable") or {}).get(r.GPU)
    alloc = int(r.parse_quantity(alloc_raw)) if alloc_raw is not None else 0
    cap_raw = (status.get("capacity") or {}).get(r.GPU)
    is_gpu = (
        alloc > 0
        or (cap_raw is not None and int(r.parse_quantity(cap_raw)) > 0)
        or labels.get("nvidia.com/gpu.present") == "true"
    )
    ready = r.node_ready(node)
    unschedulable = bool((node.get("spec") or {}).get("unschedulable"))
    return NodeFacts(
        name=str(meta.get("name")),
        instance_type=r.instance_type(node),
        gpu=is_gpu,
        gpu_product=gpu_product(node) if is_gpu else None,
        gpu_allocatable=alloc,
        schedulable=ready and not unschedulable,
        status=("Ready" if ready else "NotReady") + (",SchedulingDisabled" if unschedulable else ""),
        zone=labels.get("topology.kubernetes.io/zone"),
        age=r.age(node, now),
    )


def add_gpu_use(used: dict[str, int], pods: Iterable[dict[str, Any]]) -> None:
    """Add each running pod's effective GPU request to its node's total."""
    for pod in pods:
        spec = pod.get("spec") or {}
        node = spec.get("nodeName")
        if not node or not r.asks_for(spec, r.GPU) or r.is_terminal(pod):
            continue
        gpus = r.pod_gpus(pod)
        if gpus:
            used[node] = used.get(node, 0) + gpus


def nodes_report(
    facts: list[NodeFacts],
    used: dict[str, int],
    *,
    context: str,
    server: str | None,
    lab_instance_type: str,
) -> NodesReport:
    rows = [
        NodeRow(
            name=f.name,
            instance_type=f.instance_type,
            gpu=f.gpu,
            gpu_product=f.gpu_product,
            gpu_allocatable=f.gpu_allocatable,
            gpu_requested=used.get(f.name, 0),
            gpu_free=max(0, f.gpu_allocatable - used.get(f.name, 0)) if f.schedulable else 0,
            status=f.status,
            zone=f.zone,
            age=f.age,
        )
        for f in facts
    ]
    rows.sort(key=lambda n: (not n.gpu, n.instance_type or "", n.name))
    by_type: dict[str, InstanceTypeRow] = {}
    for n in rows:
        key = n.instance_type or "<none>"
        t = by_type.get(key)
        if t is None:
            t = by_type[key] = InstanceTypeRow(
                instance_type=key, nodes=0, gpu_product=n.gpu_product, gpu_allocatable=0, gpu_requested=0, gpu_free=0
            )
        t.nodes += 1
        t.gpu_allocatable += n.gpu_allocatable
        t.gpu_requested += n.gpu_requested
        t.gpu_free += n.gpu_free
        t.gpu_product = t.gpu_product or n.gpu_product
    types = sorted(by_type.values(), key=lambda t: (-t.nodes, t.instance_type))
    lab = by_type.get(lab_instance_type)
    return NodesReport.model_construct(  # every part is already typed: skip re-validating thousands of rows
        context=context,
        server=server,
        nodes=rows,
        instance_types=types,
        gpu_nodes=sum(1 for n in rows if n.gpu),
        lab_instance_type=lab_instance_type,
        lab_nodes=lab.nodes if lab else 0,
        lab_gpus_free=lab.gpu_free if lab else 0,
    )


def build_nodes(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    *,
    context: str,
    server: str | None,
    lab_instance_type: str,
    now: datetime | None = None,
) -> NodesReport:
    """The nodes report from whole lists of nodes and pods. Pure."""
    now = now or datetime.now(timezone.utc)
    used: dict[str, int] = {}
    add_gpu_use(used, pods)
    return nodes_report(
        [node_facts(n, now) for n in nodes], used, context=context, server=server, lab_instance_type=lab_instance_type
    )


def pod_row(pod: dict[str, Any], now: datetime | None = None) -> PodRow:
    meta = pod.get("metadata") or {}
    return PodRow(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name")),
        ready=r.pod_ready(pod),
        status=r.pod_status(pod),
        restarts=r.pod_restarts(pod),
        age=r.age(pod, now),
        node=(pod.get("spec") or {}).get("nodeName"),
        gpus=r.pod_gpus(pod),
    )


def build_pods(
    pods: list[dict[str, Any]], *, context: str, namespace: str | None, match: str | None, now: datetime | None = None
) -> PodsReport:
    now = now or datetime.now(timezone.utc)
    needle = (match or "").lower()
    rows = [pod_row(p, now) for p in pods if needle in str((p.get("metadata") or {}).get("name", "")).lower()]
    rows.sort(key=lambda p: (p.namespace, p.name))
    return PodsReport(context=context, namespace=namespace, match=match, pods=rows)


def _container_info(c: dict[str, Any], kind: str) -> ContainerInfo:
    res = c.get("resources") or {}
    gpus = int(r.container_request(c, r.GPU))
    return ContainerInfo(
        name=str(c.get("name")),
        kind=kind,
        image=c.get("image"),
        restart_policy=c.get("restartPolicy"),
        requests={k: str(v) for k, v in (res.get("requests") or {}).items()},
        limits={k: str(v) for k, v in (res.get("limits") or {}).items()},
        gpus=gpus,
        holds_gpu=gpus > 0,
    )


def _tolerations(spec: dict[str, Any]) -> list[str]:
    out = []
    for t in spec.get("tolerations") or []:
        key = t.get("key", "*")
        op = t.get("operator", "Equal")
        text = f"{key} {op}" + (f" {t['value']}" if t.get("value") else "")
        if t.get("effect"):
            text += f" ({t['effect']})"
        out.append(text)
    return out


def build_pod_detail(pod: dict[str, Any], node: dict[str, Any] | None, *, context: str) -> PodDetail:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    inits = [_container_info(c, "sidecar" if r.is_sidecar(c) else "init") for c in spec.get("initContainers") or []]
    apps = [_container_info(c, "app") for c in spec.get("containers") or []]
    itype = r.instance_type(node) if node else None
    product = gpu_product(node) if node else None
    gpus = r.pod_gpus(pod)
    notes: list[str] = []
    sidecars = [c for c in inits if c.kind == "sidecar"]
    for c in sidecars:
        held = (
            f" and holds the pod's GPU ({r.GPU}: {c.limits.get(r.GPU) or c.requests.get(r.GPU)} in its limits)"
            if c.holds_gpu
            else ""
        )
        notes.append(
            f"{c.name} is a native sidecar: an init container with restartPolicy: Always, so it starts before "
            f"the app containers and keeps running beside them{held}."
        )
    for c in inits:
        if c.kind == "init":
            notes.append(f"{c.name} is a one-shot init container: it runs to completion before the app starts.")
    gpu_apps = [c.name for c in apps if c.holds_gpu]
    if gpu_apps:
        notes.append(f"App container(s) {', '.join(gpu_apps)} ask for GPUs directly.")
    if gpus:
        notes.append(
            f"The pod holds {gpus} whole GPU{'s' if gpus != 1 else ''}: GPUs are whole numbers, so it holds the "
            "entire card even if it uses a fraction of it."
        )
    else:
        notes.append("The pod asks for no GPU.")
    for c in inits + apps:
        if c.requests and c.requests == c.limits:
            notes.append(
                f"{c.name}: requests equal limits ({', '.join(f'{k}={v}' for k, v in c.limits.items())}): the "
                "scheduler reserves exactly what it may use."
            )
    if node is not None:
        where = f"{meta.get('name')} runs on node {spec.get('nodeName')}"
        if itype:
            where += f", a {itype}"
        if product:
            where += f" with {r.node_gpu_allocatable(node)} x {product}"
        notes.append(where + ".")
    elif spec.get("nodeName"):
        notes.append(f"It is bound to node {spec.get('nodeName')}, which no longer exists.")
    else:
        notes.append("It is not scheduled on any node yet.")
    tol = _tolerations(spec)
    if any(t.startswith(r.GPU) for t in tol):
        notes.append(f"It tolerates the {r.GPU} taint, which keeps ordinary pods off GPU nodes.")
    sel = {str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()}
    if sel:
        notes.append(
            "Its nodeSelector pins it to nodes labelled " + ", ".join(f"{k}={v}" for k, v in sel.items()) + "."
        )
    return PodDetail(
        context=context,
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name")),
        status=r.pod_status(pod),
        ready=r.pod_ready(pod),
        node=spec.get("nodeName"),
        instance_type=itype,
        gpu_product=product,
        gpus=gpus,
        init_containers=inits,
        containers=apps,
        tolerations=tol,
        node_selector=sel,
        notes=notes,
    )


def find_pod(pods: list[dict[str, Any]], text: str) -> dict[str, Any] | None:
    """The pod named `text`, else the first (by name) whose name contains it."""
    names = sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("name")))
    for p in names:
        if (p.get("metadata") or {}).get("name") == text:
            return p
    for p in names:
        if text in str((p.get("metadata") or {}).get("name")):
            return p
    return None


_GPU_LABEL_PREFIXES = (
    "nvidia.com/",
    "karpenter.k8s.aws/instance-gpu",
    "node.kubernetes.io/instance-type",
    "karpenter.sh/nodepool",
    "eks.amazonaws.com/nodegroup",
)


def build_node_detail(
    node: dict[str, Any], pods: list[dict[str, Any]], *, context: str, now: datetime | None = None
) -> NodeDetail:
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    name = str(meta.get("name"))
    on_node = [p for p in pods if (p.get("spec") or {}).get("nodeName") == name and not r.is_terminal(p)]
    rows = sorted((pod_row(p, now) for p in on_node), key=lambda p: (-p.gpus, p.namespace, p.name))
    alloc = r.node_gpu_allocatable(node)
    req = sum(p.gpus for p in rows)
    gpu_labels = {k: v for k, v in r.labels(node).items() if k.startswith(_GPU_LABEL_PREFIXES)}
    product = gpu_product(node)
    notes: list[str] = []
    if alloc:
        notes.append(
            f"The NVIDIA device plugin advertises {r.GPU}: {alloc} (Allocatable); pods on it request {req}, so "
            f"{max(0, alloc - req)} free."
        )
    else:
        notes.append("This node advertises no nvidia.com/gpu: it is a CPU node (or the device plugin is not running).")
    if any(t.startswith(r.GPU) for t in r.taints(node)):
        notes.append(f"It is tainted {r.GPU}: only pods that tolerate it (GPU pods) are scheduled here.")
    holders = [p for p in on_node if r.pod_gpus(p)]
    for p in holders:
        hs = r.gpu_holders(p)
        if hs:
            notes.append(
                f"{(p.get('metadata') or {}).get('name')} holds {r.pod_gpus(p)} GPU(s) through {', '.join(hs)}."
            )
    return NodeDetail(
        context=context,
        name=name,
        instance_type=r.instance_type(node),
        status=r.node_status(node),
        gpu_product=product,
        gpu_labels=gpu_labels,
        capacity={k: str(v) for k, v in (status.get("capacity") or {}).items()},
        allocatable={k: str(v) for k, v in (status.get("allocatable") or {}).items()},
        taints=r.taints(node),
        gpu_allocatable=alloc,
        gpu_requested=req,
        gpu_free=max(0, alloc - req),
        pods=rows,
        notes=notes,
    )
