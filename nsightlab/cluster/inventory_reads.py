"""`explore`: the tutorial's read-only tour of a cluster, as typed results.

`explore_*` functions fetch through a `Kube` and hand the objects to the pure builders
of `nsightlab.k8s.inventory`. Works on protected contexts: nothing here changes
anything.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from nsightlab.cluster import apipaths
from nsightlab.cluster.answers import Forbidden
from nsightlab.cluster.client import background, loads
from nsightlab.cluster.permissions import cluster_read_refused, optional
from nsightlab.errors import ClusterError
from nsightlab.k8s import pods as r
from nsightlab.k8s.inventory import (
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

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube

NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"

P = ParamSpec("P")
R = TypeVar("R")


def _cluster_wide(fn: Callable[Concatenate[Kube, P], R]) -> Callable[Concatenate[Kube, P], R]:
    """For a view that exists to show cluster-wide data: a 403 on it is the one line that
    names the permission and what this account can run instead."""

    @functools.wraps(fn)
    def wrapper(kube: Kube, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(kube, *args, **kwargs)
        except Forbidden as e:
            raise cluster_read_refused(e, kube.ctx) from None

    return wrapper


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
    for raw, decoded in kube.raw_pages(
        apipaths.all_pods(), what="list pods in all namespaces", query={"fieldSelector": NON_TERMINAL}
    ):
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


@_cluster_wide
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
        node_pages = pool.submit(lambda: list(kube.raw_pages(apipaths.nodes(), what="list nodes")))
        try:
            used = gpu_use(kube)
        except Forbidden:
            node_pages.result()  # nodes refused too: that is the one to name
            raise
        facts = node_facts_of(node_pages.result(), now)
    report = nodes_report(facts, used, context=kube.ctx.name, server=kube.server, lab_instance_type=lab_instance_type)
    if gpu_only:
        report.nodes = [n for n in report.nodes if n.gpu]
    return report


# ---------------------------------------------------------------------------- pods


def _namespace_is_there(kube: Kube, namespace: str) -> None:
    """An empty list of a namespace that does not exist is an error; an account that may
    not read Namespace objects (most may not) gets the empty list."""
    try:
        exists = kube.namespace_exists(namespace)
    except Forbidden:
        return
    if not exists:
        raise kube.missing_namespace(namespace)


@_cluster_wide
def explore_pods(kube: Kube, *, namespace: str | None, match: str | None = None) -> PodsReport:
    pods, _ = kube.list_pods(namespace)
    if namespace is not None and not pods:
        _namespace_is_there(kube, namespace)
    return build_pods(pods, context=kube.ctx.name, namespace=namespace, match=match)


def explore_pod(kube: Kube, text: str, *, namespace: str, note: Callable[[str], None] | None = None) -> PodDetail:
    pod = kube.get_pod(namespace, text)
    if pod is None:
        pods, _ = kube.list_pods(namespace)
        if not pods:
            _namespace_is_there(kube, namespace)
        pod = find_pod(pods, text)
    if pod is None:
        raise ClusterError(
            f"no pod matching '{text}' in namespace {namespace}",
            hint=f"List them with `nsightlab explore pods --context {shlex.quote(kube.ctx.alias or kube.ctx.name)} -n "
            f"{shlex.quote(namespace)}`.",
        )
    node_name = (pod.get("spec") or {}).get("nodeName")
    node = (
        optional(
            lambda: kube.get_node(node_name),
            consequence="the node's instance type and GPU model are not shown",
            note=note,
        )
        if node_name
        else None
    )
    return build_pod_detail(pod, node, context=kube.ctx.name)


# ---------------------------------------------------------------------------- node


@_cluster_wide
def explore_node(kube: Kube, name: str) -> NodeDetail:
    node = kube.get_node(name)
    if node is None:
        raise ClusterError(
            f"no node named '{name}' on context '{kube.ctx.name}'",
            hint=f"List them with `nsightlab explore nodes --context {shlex.quote(kube.ctx.alias or kube.ctx.name)}`.",
        )
    pods, _ = kube.list_pods(None, field_selector=f"spec.nodeName={name},{NON_TERMINAL}")
    return build_node_detail(node, pods, context=kube.ctx.name)
