"""GPUs for the lab pod: free GPUs per instance type, and, before a lab pod is created,
whether it could ever be scheduled (`k8s.labmatch.gpu_fit_error`) and how many GPUs
of its type are free right now."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsightlab.cluster.permissions import optional
from nsightlab.k8s import pods as r
from nsightlab.k8s.inventory import requested_by_node
from nsightlab.k8s.labmatch import gpu_fit_error
from nsightlab.k8s.labpod import GpuFree

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube
    from nsightlab.env import Env
    from nsightlab.userconfig import Config


def free_gpus(kube: Kube, instance_type: str | None = None) -> list[GpuFree]:
    """Free GPUs per instance type (one type, or all), counting native sidecars."""

    if instance_type:
        nodes = kube.list_nodes(label_selector=f"node.kubernetes.io/instance-type={instance_type}")
    else:
        nodes = [n for n in kube.list_nodes() if r.node_is_gpu(n)]
    pods: list[dict[str, Any]] = []
    if 0 < len(nodes) <= 10:
        for n in nodes:
            name = n["metadata"]["name"]
            pods += kube.list_pods(
                None, field_selector=f"spec.nodeName={name},status.phase!=Succeeded,status.phase!=Failed"
            )[0]
    elif nodes:
        pods = kube.list_pods(None, field_selector="status.phase!=Succeeded,status.phase!=Failed")[0]
    used = requested_by_node(pods)
    out: dict[str, GpuFree] = {}
    for n in nodes:
        itype = r.instance_type(n) or "<none>"
        g = out.setdefault(itype, GpuFree(instance_type=itype, nodes=0, gpu_allocatable=0, gpu_free=0))
        alloc = r.node_gpu_allocatable(n)
        g.nodes += 1
        g.gpu_allocatable += alloc
        g.gpu_most = max(g.gpu_most, alloc)
        if r.node_ready(n) and not (n.get("spec") or {}).get("unschedulable"):
            g.gpu_free += max(0, alloc - used.get(n["metadata"]["name"], 0))
    return sorted(out.values(), key=lambda g: g.instance_type)


def check_gpus(env: Env, kube: Kube, config: Config, *, say_free: bool = True) -> None:
    """Before a lab pod is created: refuse (exit 2) one that could never be scheduled, then
    (with `say_free`) say how many GPUs of its type are free (a warning at fewer than it
    asks for). Nodes are context, not a need: an account limited to its namespace gets one
    note instead, and the spec table's GPU count of the type, where it has one, for the
    refusal."""
    itype, gpus = config.lab.instance_type, config.lab.gpus
    free = optional(lambda: free_gpus(kube, itype), consequence="free-GPU check skipped", note=env.note)
    first = free[0] if free else None
    misfit = gpu_fit_error(gpus, itype, nodes=first.nodes if first else 0, most=first.gpu_most if first else 0)
    if misfit is not None:
        raise misfit
    total_free = sum(g.gpu_free for g in free or [])
    if free is None or not say_free:
        pass  # said so in the note
    elif first is None:
        env.warn(
            f"no node of instance type {itype} exists right now; the pod will wait for one (an autoscaler may add it)."
        )
    elif total_free == 0 < gpus:
        env.warn(
            f"0 GPUs of {itype} are free right now ({first.nodes} nodes, {first.gpu_allocatable} GPUs, all in use); "
            "the pod may stay Pending."
        )
    elif total_free < gpus:
        env.warn(f"only {total_free} GPU(s) of {itype} are free right now, for {gpus}; the pod may stay Pending.")
    else:
        env.note(f"{total_free} GPU{'s' if total_free != 1 else ''} of {itype} free right now")
