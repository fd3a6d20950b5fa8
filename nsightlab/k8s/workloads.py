"""GPU-holding workloads of a namespace, from the API objects `pack` read. Pure.

Pods are grouped by their owner: the Deployment where the ReplicaSet named in a pod's
owner references could be read (its own controller reference names the Deployment), else
that ReplicaSet; a StatefulSet, DaemonSet or Job as named; a pod of its own otherwise. The
container holding the GPU is found as `explore pod` finds it: requests (else limits) of
`nvidia.com/gpu`, native sidecars (init containers with `restartPolicy: Always`)
included; a one-shot init container that held one has finished and is not the engine.
The GPU type comes from the node's labels where the node could be read, else from the
pod's nodeSelector and the spec table (the notes say which).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nsightlab.k8s import pods as r
from nsightlab.k8s.inventory import gpu_product
from nsightlab.parse.engine_args import EngineFlags, read_flags
from nsightlab.specs import gpus

GiB = 1 << 30
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"  # MiB, from GPU feature discovery


@dataclass
class WorkloadFacts:
    """One GPU-holding workload as the API objects show it."""

    name: str
    owner_kind: str  # Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, Pod
    pods: list[str]  # pods bound to a node (they hold their GPUs)
    pending: list[str]  # pods not bound yet (they hold none)
    gpus_per_pod: int
    container: str | None  # the container holding the GPU
    flags: EngineFlags
    cpu_request: float | None  # one pod's effective CPU request (cores)
    memory_request_gib: float | None
    log_pod: str | None  # the pod whose GPU container's log is read (Ready first)
    nodes: list[str] = field(default_factory=list)
    instance_type: str | None = None
    gpu_name: str | None = None
    gpu_key: str | None = None  # the spec table's key
    gpu_memory_gib: float | None = None
    gpu_source: str | None = None  # "node labels", "nodeSelector and the spec table"
    node_cpu: float | None = None  # a node's allocatable CPU (the least of the workload's nodes)
    gpus_per_node: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def gpus(self) -> int:
        return len(self.pods) * self.gpus_per_pod


def _controller(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((dict(x) for x in refs if x.get("controller")), dict(refs[0]) if refs else None)


def owner_of(pod: Mapping[str, Any], replicasets: Mapping[str, Mapping[str, Any] | None]) -> tuple[str, str]:
    """(kind, name) of the workload a pod belongs to. `replicasets` holds the ReplicaSets
    that were read (None: could not be read)."""
    ref = _controller(pod)
    if ref is None:
        return "Pod", str((pod.get("metadata") or {}).get("name"))
    kind, name = str(ref.get("kind")), str(ref.get("name"))
    if kind == "ReplicaSet":
        rs = replicasets.get(name)
        up = _controller(rs) if rs else None
        if up is not None and up.get("kind") == "Deployment":
            return "Deployment", str(up.get("name"))
    return kind, name


def gpu_container(pod: Mapping[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """The container that holds the pod's GPU (sidecars and app containers first), and
    notes when there is more than one."""
    spec = pod.get("spec") or {}
    holders = [
        c for c in (spec.get("initContainers") or []) if r.is_sidecar(c) and r.container_request(c, r.GPU) > 0
    ] + [c for c in (spec.get("containers") or []) if r.container_request(c, r.GPU) > 0]
    notes = []
    if len(holders) > 1:
        notes.append(
            f"containers {', '.join(str(c.get('name')) for c in holders)} each hold GPUs: the engine is read from "
            f"{holders[0].get('name')}"
        )
    return (dict(holders[0]) if holders else None), notes


def _cpu(pod: Mapping[str, Any]) -> float | None:
    value = r.pod_request(dict(pod), "cpu")
    return float(value) if value > 0 else None


def _memory_gib(pod: Mapping[str, Any]) -> float | None:
    value = r.pod_request(dict(pod), "memory")
    return float(value) / GiB if value > 0 else None


def _from_selector(pod: Mapping[str, Any]) -> tuple[str | None, gpus.GpuSpec | None]:
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    itype = selector.get(INSTANCE_TYPE) or selector.get("beta.kubernetes.io/instance-type")
    spec = gpus.for_instance_type(itype) if itype else None
    if spec is None and selector.get(GPU_PRODUCT_LABEL):
        spec = gpus.lookup(str(selector[GPU_PRODUCT_LABEL]))
    return (str(itype) if itype else None), spec


def _gpu_facts(w: WorkloadFacts, pod: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any] | None]) -> None:
    """The GPU type, its memory, a node's CPU and GPUs: from the nodes where they were read."""
    seen = [nodes.get(n) for n in w.nodes]
    read = [dict(n) for n in seen if n]
    if read:
        node = read[0]
        w.instance_type = r.instance_type(node)
        w.gpu_name = gpu_product(node)
        spec = gpus.lookup(w.gpu_name) if w.gpu_name else None
        w.gpu_key = spec.key if spec else None
        label = r.labels(node).get(GPU_MEMORY_LABEL)
        mib = r.parse_quantity(label) if label else 0
        if mib > 0:
            w.gpu_memory_gib = float(mib) / 1024
            w.gpu_source = "node labels"
        elif spec is not None and spec.memory_bytes:
            w.gpu_memory_gib = spec.memory_bytes / GiB
            w.gpu_source = "node labels and the spec table"
        cpus = [r.parse_quantity(((n.get("status") or {}).get("allocatable") or {}).get("cpu")) for n in read]
        w.node_cpu = float(min(cpus)) if cpus and min(cpus) > 0 else None
        gpu_counts = [r.node_gpu_allocatable(n) for n in read]
        w.gpus_per_node = min(gpu_counts) if gpu_counts and min(gpu_counts) > 0 else None
        if len({r.instance_type(n) for n in read}) > 1:
            w.notes.append(f"{w.name} runs on nodes of several instance types; the first one's GPU is used")
        if w.gpu_memory_gib is not None:
            return
    itype, spec = _from_selector(pod)
    w.instance_type = w.instance_type or itype
    if spec is not None:
        w.gpu_name = w.gpu_name or spec.name
        w.gpu_key = w.gpu_key or spec.key
        if spec.memory_bytes:
            w.gpu_memory_gib = spec.memory_bytes / GiB
            w.gpu_source = "nodeSelector and the spec table"
    if w.gpu_memory_gib is None:
        w.notes.append(
            f"{w.name}: its GPU type is not known (no node could be read and its nodeSelector names no GPU instance "
            "type): no copies per GPU"
        )


def build_workloads(
    pods: Sequence[Mapping[str, Any]],
    *,
    replicasets: Mapping[str, Mapping[str, Any] | None],
    nodes: Mapping[str, Mapping[str, Any] | None],
    match: str | None = None,
) -> list[WorkloadFacts]:
    """The namespace's GPU-holding workloads (those whose name contains `match`), by name."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for pod in pods:
        if r.is_terminal(dict(pod)) or r.pod_gpus(dict(pod)) <= 0:
            continue
        kind, name = owner_of(pod, replicasets)
        if match and match.lower() not in name.lower():
            continue
        groups.setdefault((kind, name), []).append(pod)
    out = []
    for (kind, name), members in sorted(groups.items(), key=lambda kv: kv[0][1]):
        members = sorted(members, key=lambda p: str((p.get("metadata") or {}).get("name")))
        bound = [p for p in members if (p.get("spec") or {}).get("nodeName")]
        first = bound[0] if bound else members[0]
        container, notes = gpu_container(first)
        ready = [p for p in bound if r.pod_is_ready(dict(p))]
        flags = read_flags(
            [str(x) for x in (container or {}).get("command") or []],
            [str(x) for x in (container or {}).get("args") or []],
        )
        w = WorkloadFacts(
            name=name,
            owner_kind=kind,
            pods=[str(p["metadata"]["name"]) for p in bound],
            pending=[str(p["metadata"]["name"]) for p in members if p not in bound],
            gpus_per_pod=max(r.pod_gpus(dict(p)) for p in members),
            container=str(container.get("name")) if container else None,
            flags=flags,
            cpu_request=_cpu(first),
            memory_request_gib=_memory_gib(first),
            log_pod=str((ready or bound or [first])[0]["metadata"]["name"]) if bound else None,
            nodes=list(dict.fromkeys(str(p["spec"]["nodeName"]) for p in bound)),
            notes=[f"{name}: {n}" for n in notes],
        )
        if w.pending:
            w.notes.append(
                f"{name}: {len(w.pending)} pod{'s' if len(w.pending) != 1 else ''} not on a node yet "
                f"({', '.join(w.pending)}): {'they hold' if len(w.pending) != 1 else 'it holds'} no GPU"
            )
        _gpu_facts(w, first, nodes)
        out.append(w)
    return out
