"""What nsightlab may ask of an API server, in one place: the permissions the lab needs in
its namespace (`LAB_PERMISSIONS`) and those a fleet needs (`FLEET_PERMISSIONS`). doctor
reviews them, docs/permissions.md holds them as a Role (a test keeps the two
equal), and everything else a command reads is optional context.

Cluster-wide reads (nodes, Namespace objects, pods of every namespace) are in no list:
a 403 on one of them becomes one note (`optional`) unless the command exists to show
that data (`explore nodes`, `explore node`: `cluster_read_refused`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from nsightlab.cluster.answers import Forbidden
from nsightlab.errors import ClusterError

if TYPE_CHECKING:
    from nsightlab.cluster.safety import ResolvedContext

T = TypeVar("T")


class Permission(NamedTuple):
    """One RBAC permission in the lab's namespace: verb on group/resource[/subresource]."""

    verb: str
    group: str
    resource: str
    subresource: str | None = None

    @property
    def label(self) -> str:
        """`pods/exec`, as RBAC rules name a subresource."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


# The lab pod's whole life: create, status, shell, copy, profile, sweep, ncu, logs,
# events, cleanup. A websocket exec (what nsightlab and kubectl 1.30+ open) is a GET,
# authorised as `get` on pods/exec, and from Kubernetes 1.35 also as `create`
# (AuthorizePodWebsocketUpgradeCreatePermission); SPDY's POST is `create`: both, then.
LAB_PERMISSIONS: tuple[Permission, ...] = (
    Permission("create", "", "pods"),
    Permission("get", "", "pods"),
    Permission("list", "", "pods"),
    Permission("watch", "", "pods"),
    Permission("delete", "", "pods"),
    Permission("create", "", "pods", "exec"),
    Permission("get", "", "pods", "exec"),
    Permission("get", "", "pods", "log"),
    Permission("list", "", "events"),
)

# `nsightlab fleet`: Jobs, their ConfigMap, and their pods' state and logs; no exec, no
# copy, no nodes.
FLEET_PERMISSIONS: tuple[Permission, ...] = (
    Permission("create", "batch", "jobs"),
    Permission("get", "batch", "jobs"),
    Permission("list", "batch", "jobs"),
    Permission("watch", "batch", "jobs"),
    Permission("delete", "batch", "jobs"),
    Permission("create", "", "configmaps"),
    Permission("get", "", "configmaps"),
    Permission("delete", "", "configmaps"),
    Permission("get", "", "pods"),
    Permission("list", "", "pods"),
    Permission("watch", "", "pods"),
    Permission("get", "", "pods", "log"),
)


class Rule(NamedTuple):
    """Permissions on one resource, as one RBAC rule holds them."""

    group: str
    resource: str  # with its subresource: pods/exec
    verbs: tuple[str, ...]

    @property
    def name(self) -> str:
        """The resource as kubectl names it: pods/exec, jobs.batch."""
        head, _, sub = self.resource.partition("/")
        name = f"{head}.{self.group}" if self.group else head
        return f"{name}/{sub}" if sub else name


def rules(permissions: Iterable[Permission]) -> list[Rule]:
    """The permissions grouped per resource, in the order they first appear: the rules of
    a Role that grants exactly them."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for p in permissions:
        verbs = grouped.setdefault((p.group, p.label), [])
        if p.verb not in verbs:
            verbs.append(p.verb)
    return [Rule(group, resource, tuple(verbs)) for (group, resource), verbs in grouped.items()]


def skipped_note(what: str, consequence: str) -> str:
    """The one note for a cluster-wide read this account may not do."""
    return f"cannot {what} here (forbidden): {consequence}"


def optional(read: Callable[[], T], *, consequence: str, note: Callable[[str], None] | None) -> T | None:
    """`read()`, or None with one note when the API server forbids it (403 only: a
    server that is down or a bad token still fails the command)."""
    try:
        return read()
    except Forbidden as e:
        if note is not None:
            note(skipped_note(e.what or "read this", consequence))
        return None


def cluster_read_refused(e: Forbidden, ctx: ResolvedContext) -> ClusterError:
    """The one line for a command that exists to show cluster-wide data (explore nodes,
    explore node) when the account may not read it: the permission, and what works."""
    instead = f"`nsightlab explore pods {ctx.cli_args}`"
    if "node" in e.what:
        return ClusterError(
            f"cannot {e.what}: your account may not read nodes on context {ctx.alias or ctx.name}",
            hint=f"Ask for a ClusterRole with get/list on nodes, or run {instead}.",
        )
    if "all namespaces" in e.what:
        return ClusterError(
            f"cannot {e.what}: your account may read pods only in its own namespace on context {ctx.alias or ctx.name}",
            hint=f"Ask for a ClusterRole with list on pods, or run {instead}.",
        )
    return e
