"""What `nsightlab pack` reads from a cluster: GET requests only, no access reviews.

The namespace's pods (one list), the ReplicaSets named in the GPU pods' owner references
(to find their Deployments), the nodes the GPU pods run on (GPU type and memory,
allocatable CPU), and one log per workload: the GPU container's, read streamed and
bounded (`limitBytes`, and a byte cap here), stopping at the end of the engine's
start-up; only its figures are kept (`nsightlab.parse.vllm_log`). A read the account may
not do (403) is one note and the work goes on without it: a namespace-scoped account
with `get`/`list` on pods and `get` on pods/log (the lab's Role) can run `pack`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nsightlab.cluster import apipaths
from nsightlab.cluster.answers import Forbidden, NotFound
from nsightlab.cluster.permissions import skipped_note
from nsightlab.errors import ClusterError
from nsightlab.k8s import pods as r
from nsightlab.parse.vllm_log import VllmStartup, read_startup

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube

NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"
#: Bytes of a container's log read at most for its start-up (the lines come first).
LOG_CAP = 64 << 20
_CHUNK = 64 * 1024


@dataclass
class NamespaceObjects:
    """The objects a namespace's GPU workloads are built from (None: could not be read)."""

    pods: list[dict[str, Any]]
    replicasets: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any] | None] = field(default_factory=dict)


def _optional_gets(
    names: list[str], get: Callable[[str], dict[str, Any] | None], *, consequence: str, note: Callable[[str], None]
) -> dict[str, dict[str, Any] | None]:
    """Each object by name; after the first 403 the rest are not asked for (one note)."""
    out: dict[str, dict[str, Any] | None] = {}
    refused = False
    for name in names:
        if refused:
            out[name] = None
            continue
        try:
            out[name] = get(name)
        except Forbidden as e:
            note(skipped_note(e.what or "read this", consequence))
            refused = True
            out[name] = None
    return out


def read_objects(kube: Kube, namespace: str, *, note: Callable[[str], None]) -> NamespaceObjects:
    """The namespace's non-terminated pods, and the ReplicaSets and nodes of those holding GPUs."""
    pods, _ = kube.list_pods(namespace, field_selector=NON_TERMINAL)
    if not pods:
        try:
            exists = kube.namespace_exists(namespace)
        except Forbidden:
            exists = True  # most accounts may not read Namespace objects: an empty list it is
        if not exists:
            raise kube.missing_namespace(namespace)
    gpu_pods = [p for p in pods if r.pod_gpus(p) > 0]
    rs_names = sorted(
        {
            str(ref.get("name"))
            for p in gpu_pods
            for ref in (p.get("metadata") or {}).get("ownerReferences") or []
            if ref.get("kind") == "ReplicaSet"
        }
    )
    node_names = sorted({str(p["spec"]["nodeName"]) for p in gpu_pods if (p.get("spec") or {}).get("nodeName")})

    def get_rs(name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = kube.get_json(
                apipaths.replicaset(namespace, name),
                what=f"get replicaset {name} in namespace {namespace}",
            )
        except NotFound:
            return None
        return found

    replicasets = _optional_gets(
        rs_names,
        get_rs,
        consequence="workloads are named by their ReplicaSet (the pods' owner), not their Deployment",
        note=note,
    )
    nodes = _optional_gets(
        node_names,
        kube.get_node,
        consequence="the GPU type comes from the pods' nodeSelector and the spec table; no node CPU",
        note=note,
    )
    return NamespaceObjects(pods=pods, replicasets=replicasets, nodes=nodes)


def _not_started(pod: dict[str, Any], container: str) -> str | None:
    """Why the container has no log to read, or None."""
    status = pod.get("status") or {}
    for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if cs.get("name") == container:
            state = cs.get("state") or {}
            if "waiting" in state and not cs.get("lastState"):
                return str((state.get("waiting") or {}).get("reason") or "waiting")
            return None
    return "not started"


def _chunks(resp: Any, what: str) -> Generator[bytes, None, None]:
    """The body in pieces; closing the iterator early drops the connection."""
    # loaded by the commands that connect; --help and offline commands never pay for it
    import urllib3

    done = False
    try:
        for chunk in resp.stream(_CHUNK, decode_content=True):
            if chunk:
                yield chunk
        done = True
    except (urllib3.exceptions.ProtocolError, urllib3.exceptions.ReadTimeoutError, OSError) as e:
        raise ClusterError(f"the connection broke while trying to {what} ({type(e).__name__})") from None
    finally:
        if not done:
            resp.close()
        resp.release_conn()


def startup_figures(
    kube: Kube, namespace: str, pod: dict[str, Any], container: str, *, cap: int | None = None
) -> tuple[VllmStartup | None, str | None]:
    """The engine's start-up figures from the container's log (None and why, when the log
    cannot be read). At most `cap` bytes are read (LOG_CAP by default)."""
    limit = LOG_CAP if cap is None else cap
    name = str(pod["metadata"]["name"])
    waiting = _not_started(pod, container)
    if waiting is not None:
        return None, f"container {container} of pod {name} has not started ({waiting}): no log to read"
    what = f"read the log of pod {name} in namespace {namespace}"
    try:
        resp = kube.request(
            "GET",
            apipaths.pod_log(namespace, name),
            what=what,
            query={"container": container, "limitBytes": limit + 1},
            text=True,
        )
    except Forbidden as e:
        return None, skipped_note(e.what or what, "needs come from config.yaml's models: only")
    except NotFound:
        return None, f"pod {name} went away before its log was read"
    chunks = _chunks(resp, what)
    try:
        return read_startup(chunks, cap=limit), None
    finally:
        chunks.close()


def gpus_per_node(kube: Kube, types: list[str], *, note: Callable[[str], None]) -> dict[str, int | None]:
    """GPUs of one node of each instance type, from the nodes of that type (list nodes,
    cluster-wide: a 403 is one note)."""
    out: dict[str, int | None] = {}
    for itype in types:
        try:
            nodes = kube.list_nodes(label_selector=f"node.kubernetes.io/instance-type={itype}")
        except Forbidden as e:
            note(skipped_note(e.what or "list nodes", "GPUs per instance type of --what-if are not known"))
            return {**out, **{t: None for t in types if t not in out}}
        counts = [r.node_gpu_allocatable(n) for n in nodes if r.node_gpu_allocatable(n) > 0]
        out[itype] = min(counts) if counts else None
    return out
