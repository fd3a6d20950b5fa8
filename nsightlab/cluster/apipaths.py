"""Every request path nsightlab sends to an API server, built in one place.

Each name that goes into a path (a namespace, a pod, a node, a Job...) is quoted as one
segment by `seg`, whatever was checked before: a name can never reach another object or
another endpoint. Nothing else in nsightlab spells `/api/v1` or `/apis/` (a test in
tests/test_cluster_seam.py keeps it so).
"""

from __future__ import annotations

from urllib.parse import quote

from nsightlab.errors import UsageError

_CORE = "/api/v1"
_BATCH = "/apis/batch/v1"
_APPS = "/apis/apps/v1"


def seg(name: str) -> str:
    """A name as one segment of a request path: every reserved character quoted ('/', '?',
    '#', ';', '%', spaces...), so a name can never reach another object or another
    endpoint.

    "." and ".." are quoted too (an HTTP client removes dot segments: DELETE of pod ".."
    would go to the namespace), and an empty name is refused (".../pods/" is the whole
    collection).
    """
    if not name:
        raise UsageError(
            "an empty name cannot be sent to the API server",
            hint="Check the pod, node or namespace name you gave (or the lab session's).",
        )
    quoted = quote(name, safe="")
    return quoted.replace(".", "%2E") if quoted in (".", "..") else quoted


def version() -> str:
    """The server's version (`/version`)."""
    return "/version"


def nodes() -> str:
    return f"{_CORE}/nodes"


def node(name: str) -> str:
    return f"{_CORE}/nodes/{seg(name)}"


def namespace(name: str) -> str:
    return f"{_CORE}/namespaces/{seg(name)}"


def all_pods() -> str:
    """The pods of every namespace (a cluster-wide list)."""
    return f"{_CORE}/pods"


def pods(ns: str) -> str:
    return f"{namespace(ns)}/pods"


def pod(ns: str, name: str) -> str:
    return f"{pods(ns)}/{seg(name)}"


def pod_log(ns: str, name: str) -> str:
    return f"{pod(ns, name)}/log"


def pod_exec(ns: str, name: str) -> str:
    return f"{pod(ns, name)}/exec"


def events(ns: str) -> str:
    """core/v1 Events of one namespace."""
    return f"{namespace(ns)}/events"


def configmaps(ns: str) -> str:
    return f"{namespace(ns)}/configmaps"


def configmap(ns: str, name: str) -> str:
    return f"{configmaps(ns)}/{seg(name)}"


def jobs(ns: str) -> str:
    """batch/v1 Jobs of one namespace."""
    return f"{_BATCH}/namespaces/{seg(ns)}/jobs"


def job(ns: str, name: str) -> str:
    return f"{jobs(ns)}/{seg(name)}"


def replicaset(ns: str, name: str) -> str:
    """apps/v1: a ReplicaSet (a Deployment's pods name it as their owner)."""
    return f"{_APPS}/namespaces/{seg(ns)}/replicasets/{seg(name)}"


def access_reviews() -> str:
    """SelfSubjectAccessReview: what the current user may do."""
    return "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
