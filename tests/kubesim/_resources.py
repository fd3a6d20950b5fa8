"""The resource types the emulated API server serves, and lookups by any of their names."""

from __future__ import annotations

from dataclasses import dataclass, field

import kmock

CRUD_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


@dataclass(frozen=True)
class Subresource:
    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = "v1"


@dataclass(frozen=True)
class ResourceType:
    """One served resource: where it lives in the API and how discovery describes it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = CRUD_VERBS
    subresources: tuple[Subresource, ...] = ()
    categories: tuple[str, ...] = ()
    # Field selectors the real API server accepts for this resource (besides metadata.*).
    field_labels: tuple[str, ...] = ()
    storage_version_hash: str = field(default="", compare=False)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """The key used in kmock's object store, e.g. ``v1/pods`` or ``apps/v1/deployments``."""
        return f"{self.api_version}/{self.plural}"

    @property
    def group_resource(self) -> str:
        """The name used in error messages: ``pods``, ``deployments.apps``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def kmock_resource(self) -> kmock.resource:
        res = _KMOCK_RESOURCES.get(self.key)
        if res is None:  # building one is slow (runtime protocol checks): keep them
            res = _KMOCK_RESOURCES[self.key] = kmock.resource(self.group, self.version, self.plural)
        return res

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def base_path(self, namespace: str | None) -> str:
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            return f"{root}/namespaces/{namespace}/{self.plural}"
        return f"{root}/{self.plural}"

    def subresource(self, name: str) -> Subresource | None:
        for sub in self.subresources:
            if sub.name == name:
                return sub
        return None


_KMOCK_RESOURCES: dict[str, kmock.resource] = {}


def _sub(name: str, kind: str, *verbs: str, group: str = "", version: str = "v1") -> Subresource:
    return Subresource(name, kind, verbs, group, version)


_STATUS_VERBS = ("get", "patch", "update")
_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
)
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)

RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    ResourceType("", "v1", "endpoints", "Endpoints", True, ("ep",)),
    ResourceType("", "v1", "events", "Event", True, ("ev",), field_labels=_EVENT_FIELDS),
    ResourceType("", "v1", "limitranges", "LimitRange", True, ("limits",)),
    ResourceType(
        "",
        "v1",
        "namespaces",
        "Namespace",
        False,
        ("ns",),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        subresources=(
            _sub("finalize", "Namespace", "update"),
            _sub("status", "Namespace", *_STATUS_VERBS),
        ),
        field_labels=("status.phase",),
    ),
    ResourceType(
        "",
        "v1",
        "nodes",
        "Node",
        False,
        ("no",),
        subresources=(
            _sub("proxy", "NodeProxyOptions", "create", "delete", "get", "patch", "update"),
            _sub("status", "Node", *_STATUS_VERBS),
        ),
        field_labels=("spec.unschedulable",),
    ),
    ResourceType(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        True,
        ("pvc",),
        subresources=(_sub("status", "PersistentVolumeClaim", *_STATUS_VERBS),),
    ),
    ResourceType(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        False,
        ("pv",),
        subresources=(_sub("status", "PersistentVolume", *_STATUS_VERBS),),
    ),
    ResourceType(
        "",
        "v1",
        "pods",
        "Pod",
        True,
        ("po",),
        categories=("all",),
        subresources=(
            _sub("attach", "PodAttachOptions", "create", "get"),
            _sub("binding", "Binding", "create"),
            _sub("ephemeralcontainers", "Pod", *_STATUS_VERBS),
            _sub("eviction", "Eviction", "create", group="policy"),
            _sub("exec", "PodExecOptions", "create", "get"),
            _sub("log", "Pod", "get"),
            _sub("portforward", "PodPortForwardOptions", "create", "get"),
            _sub("proxy", "PodProxyOptions", "create", "delete", "get", "patch", "update"),
            _sub("status", "Pod", *_STATUS_VERBS),
        ),
        field_labels=_POD_FIELDS,
    ),
    ResourceType(
        "",
        "v1",
        "resourcequotas",
        "ResourceQuota",
        True,
        ("quota",),
        subresources=(_sub("status", "ResourceQuota", *_STATUS_VERBS),),
    ),
    ResourceType("", "v1", "secrets", "Secret", True, field_labels=("type",)),
    ResourceType("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",)),
    ResourceType(
        "",
        "v1",
        "services",
        "Service",
        True,
        ("svc",),
        categories=("all",),
        subresources=(_sub("status", "Service", *_STATUS_VERBS),),
    ),
    ResourceType(
        "apps",
        "v1",
        "daemonsets",
        "DaemonSet",
        True,
        ("ds",),
        categories=("all",),
        subresources=(_sub("status", "DaemonSet", *_STATUS_VERBS, group="apps"),),
    ),
    ResourceType(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        True,
        ("deploy",),
        categories=("all",),
        subresources=(
            _sub("scale", "Scale", *_STATUS_VERBS, group="autoscaling"),
            _sub("status", "Deployment", *_STATUS_VERBS, group="apps"),
        ),
    ),
    ResourceType(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        True,
        ("rs",),
        categories=("all",),
        subresources=(
            _sub("scale", "Scale", *_STATUS_VERBS, group="autoscaling"),
            _sub("status", "ReplicaSet", *_STATUS_VERBS, group="apps"),
        ),
    ),
    ResourceType(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        True,
        ("sts",),
        categories=("all",),
        subresources=(
            _sub("scale", "Scale", *_STATUS_VERBS, group="autoscaling"),
            _sub("status", "StatefulSet", *_STATUS_VERBS, group="apps"),
        ),
    ),
    # RBAC objects are stored like any other; _rbac.py evaluates them when RBAC is on.
    ResourceType("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    ResourceType(
        "authentication.k8s.io",
        "v1",
        "selfsubjectreviews",
        "SelfSubjectReview",
        False,
        verbs=("create",),
    ),
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        False,
        verbs=("create",),
    ),
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        False,
        verbs=("create",),
    ),
    # batch/v1 Jobs have no short name (the API server gives none) and one selectable
    # field besides metadata: status.successful (the count of succeeded pods).
    ResourceType(
        "batch",
        "v1",
        "jobs",
        "Job",
        True,
        categories=("all",),
        subresources=(_sub("status", "Job", *_STATUS_VERBS, group="batch"),),
        field_labels=("status.successful",),
    ),
)

# Resources that are answered on POST but never stored (reviews).
VIRTUAL_PLURALS = frozenset({"selfsubjectreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews"})

_BY_PATH: dict[tuple[str, str, str], ResourceType] = {(rt.group, rt.version, rt.plural): rt for rt in RESOURCES}
_BY_NAME: dict[str, ResourceType] = {}
for _rt in RESOURCES:
    for _name in (_rt.plural, _rt.singular, _rt.kind, _rt.key, *_rt.short_names):
        _BY_NAME.setdefault(_name, _rt)
        _BY_NAME.setdefault(_name.lower(), _rt)
    if _rt.group:
        _BY_NAME.setdefault(f"{_rt.plural}.{_rt.group}", _rt)


def by_path(group: str, version: str, plural: str) -> ResourceType | None:
    """The resource served at ``/api[s]/{group}/{version}/{plural}``, if any."""
    return _BY_PATH.get((group, version, plural))


def lookup(name: str) -> ResourceType:
    """Find a resource by plural, singular, kind, short name or ``group/version/plural`` key."""
    rt = _BY_NAME.get(name) or _BY_NAME.get(name.lower())
    if rt is None:
        raise KeyError(f"unknown resource type: {name!r}")
    return rt


def for_object(obj: dict[str, object]) -> ResourceType:
    """The resource type of an object, from its ``apiVersion`` and ``kind``."""
    kind = obj.get("kind")
    api_version = obj.get("apiVersion", "v1")
    if not isinstance(kind, str):
        raise ValueError("object has no kind")
    for rt in RESOURCES:
        if rt.kind == kind and rt.api_version == api_version:
            return rt
    raise KeyError(f"unknown kind {api_version}/{kind}")


def groups() -> list[tuple[str, str]]:
    """The non-core (group, version) pairs served, in discovery order."""
    seen: list[tuple[str, str]] = []
    for rt in RESOURCES:
        if rt.group and (rt.group, rt.version) not in seen:
            seen.append((rt.group, rt.version))
    return seen
