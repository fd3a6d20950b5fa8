"""`explore`: the tutorial's read-only tour of a cluster, as typed results.

`explore_*` functions fetch through a `Kube` and hand the objects to the pure builders
of `nsightlab.analysis.inventory`. Works on protected contexts: nothing here changes
anything.
"""

from __future__ import annotations

import shlex
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from nsightlab.analysis import pods as r
from nsightlab.analysis.inventory import (
    NodeDetail,
    NodeFacts,
    NodesReport,
    PodDetail,
    PodsReport,
    add_gpu_use,
    build_node_detail,
    build_pod_detail,
    build_pods,
    find_pod,
    node_facts,
    nodes_report,
)
from nsightlab.cluster.kube import background, loads
from nsightlab.errors import ClusterError

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube

NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"


# ---------------------------------------------------------------------------- nodes


# A pod can only request GPUs if this appears in its JSON: pages without it hold none.
_GPU_MARK = r.GPU.split("/")[0].encode()


def gpu_use(kube: Kube) -> dict[str, int]:
    """GPUs requested per node, from every non-terminated pod (paged; each page reduced
    at once, so memory stays flat).

    A page whose raw JSON never mentions the GPU resource's domain cannot hold a pod that
    asks for one, so it is not decoded at all: on a typical cluster, where GPU workloads
    sit in a few namespaces, most pages are skipped.
    """

    used: dict[str, int] = {}
    for raw, decoded in kube.raw_pages("/api/v1/pods", what="list pods in all namespaces", query={"fieldSelector": NON_TERMINAL}):
        if decoded is None and _GPU_MARK not in raw:
            continue
        page = decoded if decoded is not None else loads(raw)
        add_gpu_use(used, page.get("items") or [])
    return used


def node_facts_of(pages: list[tuple[bytes, dict[str, Any] | None]], now: datetime) -> list[NodeFacts]:
    """Decode node pages (as `Kube.raw_pages` yields them) and reduce each node to its facts."""

    out: list[NodeFacts] = []
    for raw, decoded in pages:
        page = decoded if decoded is not None else loads(raw)
        out.extend(node_facts(n, now) for n in page.get("items") or [])
        del page
    return out


def explore_nodes(kube: Kube, *, lab_instance_type: str, gpu_only: bool = False) -> NodesReport:
    """Nodes and every non-terminated pod, as paged lists fetched side by side.

    The client's CPU is what bounds this (the server streams faster than Python decodes),
    so the work is ordered to keep the two threads from fighting over the interpreter:
    the node pages are only read off the network on a second thread while the pod pages
    are scanned here (most are skipped undecoded, see gpu_use); the node pages are decoded
    after that. Memory stays flat: raw node pages are small next to decoded ones.
    """
    now = datetime.now(timezone.utc)
    with background() as pool:
        node_pages = pool.submit(lambda: list(kube.raw_pages("/api/v1/nodes", what="list nodes")))
        used = gpu_use(kube)
        facts = node_facts_of(node_pages.result(), now)
    report = nodes_report(facts, used, context=kube.ctx.name, server=kube.server, lab_instance_type=lab_instance_type)
    if gpu_only:
        report.nodes = [n for n in report.nodes if n.gpu]
    return report


# ---------------------------------------------------------------------------- pods


def explore_pods(kube: Kube, *, namespace: str | None, match: str | None = None) -> PodsReport:
    if namespace is not None:
        kube.require_namespace(namespace)
    pods, _ = kube.list_pods(namespace)
    return build_pods(pods, context=kube.ctx.name, namespace=namespace, match=match)


def explore_pod(kube: Kube, text: str, *, namespace: str) -> PodDetail:
    pod = kube.get_pod(namespace, text)
    if pod is None:
        kube.require_namespace(namespace)
        pods, _ = kube.list_pods(namespace)
        pod = find_pod(pods, text)
    if pod is None:
        raise ClusterError(f"no pod matching '{text}' in namespace {namespace}", hint=f"List them with `nsightlab explore pods --context {shlex.quote(kube.ctx.alias or kube.ctx.name)} -n {shlex.quote(namespace)}`.")
    node_name = (pod.get("spec") or {}).get("nodeName")
    node = kube.get_node(node_name) if node_name else None
    return build_pod_detail(pod, node, context=kube.ctx.name)


# ---------------------------------------------------------------------------- node


def explore_node(kube: Kube, name: str) -> NodeDetail:
    node = kube.get_node(name)
    if node is None:
        raise ClusterError(f"no node named '{name}' on context '{kube.ctx.name}'", hint=f"List them with `nsightlab explore nodes --context {shlex.quote(kube.ctx.alias or kube.ctx.name)}`.")
    pods, _ = kube.list_pods(None, field_selector=f"spec.nodeName={name},{NON_TERMINAL}")
    return build_node_detail(node, pods, context=kube.ctx.name)
