"""RBAC as the API server does it: request attributes, the authorizer, reviews, bootstrap policy.

Off unless a test turns it on (``KubeSim(rbac=True)`` or ``sim.enable_rbac(...)``); then
every request that reaches the emulated API is authorised from the stored
``rbac.authorization.k8s.io/v1`` objects, as kube-apiserver's ``RBAC`` mode does:

- :func:`request_info` maps a request to (verb, API group, resource, subresource,
  namespace, name) with the rules of the API server's ``RequestInfoFactory``: GET on a
  collection is ``list`` (``watch`` with ``?watch=``), a ``metadata.name`` field selector
  names the object, DELETE on a collection is ``deletecollection``, a request for
  ``/api/v1/namespaces/NAME`` is in the namespace NAME, exec over a websocket (a GET) is
  ``get`` on ``pods/exec`` (also ``create`` from Kubernetes 1.35, as the
  ``AuthorizePodWebsocketUpgradeCreatePermission`` gate does) and over SPDY (a POST)
  ``create``; paths outside ``/api`` and ``/apis`` are non-resource requests.
- :class:`Authorizer` lets the ``system:masters`` group do anything (the API server's
  privileged group), then walks ClusterRoleBindings and, for a namespaced request, the
  RoleBindings of that namespace; a binding whose role is missing adds
  ``RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`` to the denial.
- Denials are the API server's 403 ``Status`` (:func:`forbidden`).
- :func:`bootstrap_policy` is the part of the default policy a client meets: ``cluster-admin``
  (bound to ``system:masters``), ``admin``/``edit``/``view`` (their aggregated rules,
  flattened), ``system:discovery``, ``system:basic-user`` (access reviews) and
  ``system:public-info-viewer``.

Not emulated: aggregated ClusterRoles (``aggregationRule`` is not evaluated), the escalation
check on writes of roles and bindings, impersonation, and groups from client certificates.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _tables
from ._errors import ApiError
from ._resources import ResourceType, lookup

if TYPE_CHECKING:
    from ._api import SimEmulator

Obj = dict[str, Any]

RBAC_GROUP = "rbac.authorization.k8s.io"
SYSTEM_MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"

_API_PREFIXES = ("api", "apis")
_SPECIAL_VERBS = ("proxy", "watch")
_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_CONNECT_SUBRESOURCES = ("exec", "attach", "portforward")
_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@dataclass(frozen=True)
class RequestInfo:
    """What the authorizer sees of a request (the API server's ``authorizer.Attributes``)."""

    verb: str
    resource_request: bool
    path: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def rbac_resource(self) -> str:
        """``pods`` or ``pods/exec``: the resource as RBAC rules name it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def _query_bool(value: str | None) -> bool:
    # The API server's query decoding: absent is false, "0" and "false" are false, else true.
    return value is not None and value != "0" and value.lower() != "false"


def _valid_path_segment(name: str) -> bool:
    return name not in (".", "..") and "/" not in name and "%" not in name


def _name_from_field_selector(selector: str | None) -> str:
    """The name a ``metadata.name=X`` (or ``==``) field selector requires, else ``""``."""
    for term in (selector or "").split(","):
        term = term.strip()
        for op in ("==", "="):
            field, sep, value = term.partition(op)
            if sep and field.strip() == "metadata.name" and not field.endswith("!"):
                name = value.strip()
                return name if _valid_path_segment(name) else ""
    return ""


def request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """Map an HTTP request to authorizer attributes, as the API server's RequestInfoFactory."""
    method = method.upper()
    non_resource = RequestInfo(verb=method.lower(), resource_request=False, path=path)
    parts = path.strip("/").split("/") if path.strip("/") else []
    if len(parts) < 3 or parts[0] not in _API_PREFIXES:
        return non_resource
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix == "apis":
        if len(parts) < 3:
            return non_resource
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]
    if parts[0] in _SPECIAL_VERBS:
        if len(parts) < 2:  # the API server fails such a request; no authorisation applies
            return non_resource
        verb, parts = parts[0], parts[1:]
    else:
        verb = _METHOD_VERBS.get(method, "")
    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    resource = parts[0]
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 and verb != "proxy" else ""
    if not name and verb == "get":
        verb = "watch" if _query_bool(query.get("watch")) else "list"
        name = _name_from_field_selector(query.get("fieldSelector"))
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestInfo(
        verb=verb,
        resource_request=True,
        path=path,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
    )


def groups_of(user: str, extra: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """The groups an authenticated user is in: those given, service account groups, and
    ``system:authenticated`` (``system:unauthenticated`` for the anonymous user)."""
    if user == ANONYMOUS:
        return (UNAUTHENTICATED,)
    groups = list(extra.get(user, ()))
    if user.startswith(SERVICE_ACCOUNT_PREFIX):
        ns = user[len(SERVICE_ACCOUNT_PREFIX) :].split(":", 1)[0]
        groups += ["system:serviceaccounts", f"system:serviceaccounts:{ns}"]
    groups.append(AUTHENTICATED)
    return tuple(dict.fromkeys(groups))


# ---- rules -------------------------------------------------------------------------------------


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def rule_allows(info: RequestInfo, rule: Mapping[str, Any]) -> bool:
    """Whether one PolicyRule covers the request (RBAC's ``RuleAllows``)."""
    verbs = _strings(rule.get("verbs"))
    if "*" not in verbs and info.verb not in verbs:
        return False
    if not info.resource_request:
        for url in _strings(rule.get("nonResourceURLs")):
            if url in ("*", info.path):
                return True
            if url.endswith("*") and info.path.startswith(url.rstrip("*")):
                return True
        return False
    groups = _strings(rule.get("apiGroups"))
    if "*" not in groups and info.api_group not in groups:
        return False
    combined = info.rbac_resource
    resource_ok = False
    for res in _strings(rule.get("resources")):
        if res in ("*", combined) or (info.subresource and res == f"*/{info.subresource}"):
            resource_ok = True
            break
    if not resource_ok:
        return False
    names = _strings(rule.get("resourceNames"))
    return not names or info.name in names


def _applies(subject: Mapping[str, Any], user: str, groups: Sequence[str], binding_ns: str) -> bool:
    kind = subject.get("kind")
    name = str(subject.get("name") or "")
    if kind == "User":
        return user == name
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        ns = str(subject.get("namespace") or binding_ns)
        return bool(ns) and user == f"{SERVICE_ACCOUNT_PREFIX}{ns}:{name}"
    return False


def _describe_subject(subject: Mapping[str, Any], binding_ns: str) -> str:
    kind = str(subject.get("kind"))
    name = str(subject.get("name"))
    if kind == "ServiceAccount":
        return f"{kind} {_q(name + '/' + str(subject.get('namespace') or binding_ns))}"
    return f"{kind} {_q(name)}"


def _q(text: str) -> str:
    """Go's ``%q`` for the names that appear in messages."""
    return json.dumps(text, ensure_ascii=False)


def _aggregate(errors: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(...).Error()``: one message, or ``[a, b]`` without repeats."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


_CLUSTER_ROLE_BINDINGS = lookup("clusterrolebindings")
_CLUSTER_ROLES = lookup("clusterroles")
_ROLE_BINDINGS = lookup("rolebindings")
_ROLES = lookup("roles")


@dataclass(frozen=True)
class Source:
    """The binding (and its subject) a rule came from."""

    binding: Obj
    subject: Obj
    namespace: str  # "" for a ClusterRoleBinding

    def describe(self) -> str:
        """``RoleBinding "name/ns" of Role "r" to User "u"``, as the RBAC authorizer says it."""
        ref = self.binding.get("roleRef") or {}
        name = str(self.binding["metadata"]["name"])
        what = f"RoleBinding {_q(name + '/' + self.namespace)}" if self.namespace else f"ClusterRoleBinding {_q(name)}"
        return (
            f"{what} of {ref.get('kind')} {_q(str(ref.get('name')))} to "
            f"{_describe_subject(self.subject, self.namespace)}"
        )


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


class Authorizer:
    """The RBAC authorizer over the emulator's store (used on the server loop)."""

    def __init__(self, emulator: SimEmulator) -> None:
        self.emulator = emulator

    # ---- evaluation ---------------------------------------------------------------------------
    def groups_of(self, user: str) -> tuple[str, ...]:
        return groups_of(user, self.emulator.user_groups)

    def _role_rules(self, ref: Mapping[str, Any], binding_ns: str) -> tuple[list[Obj], str | None]:
        kind = ref.get("kind")
        name = str(ref.get("name") or "")
        store = self.emulator.store
        if kind == "ClusterRole":
            entry = store.get(_CLUSTER_ROLES, None, name)
            if entry is None:
                return [], f"clusterrole.{RBAC_GROUP} {_q(name)} not found"
        elif kind == "Role":
            entry = store.get(_ROLES, binding_ns, name) if binding_ns else None
            if entry is None:
                return [], f"role.{RBAC_GROUP} {_q(name)} not found"
        else:
            return [], f"unsupported role reference kind: {_q(str(kind))}"
        rules = entry.obj.get("rules") or []
        return [r for r in rules if isinstance(r, dict)], None

    def visit(
        self, user: str, groups: Sequence[str], namespace: str
    ) -> Iterator[tuple[Source | None, Obj | None, str | None]]:
        """(where the rule comes from, rule, error) for every rule that applies to the user in
        ``namespace`` (cluster role bindings first), as RBAC's ``VisitRulesFor``."""
        store = self.emulator.store
        sources: list[tuple[Obj, str]] = [(e.obj, "") for e in store.select(_CLUSTER_ROLE_BINDINGS, None, None)]
        if namespace:
            sources += [(e.obj, namespace) for e in store.select(_ROLE_BINDINGS, namespace, None)]
        for binding, ns in sources:
            for subject in binding.get("subjects") or ():
                if isinstance(subject, dict) and _applies(subject, user, groups, ns):
                    break
            else:
                continue
            rules, error = self._role_rules(binding.get("roleRef") or {}, ns)
            if error is not None:
                yield None, None, error
                continue
            source = Source(binding, subject, ns)
            for rule in rules:
                yield source, rule, None

    def authorize(self, user: str, info: RequestInfo) -> Decision:
        """Allow or not, with the reason the API server gives (``RBAC: allowed by ...``)."""
        groups = self.groups_of(user)
        if SYSTEM_MASTERS in groups:
            return Decision(True)
        errors: list[str] = []
        for source, rule, error in self.visit(user, groups, info.namespace):
            if error is not None:
                errors.append(error)
            elif source is not None and rule is not None and rule_allows(info, rule):
                return Decision(True, f"RBAC: allowed by {source.describe()}")
        return Decision(False, f"RBAC: {_aggregate(errors)}" if errors else "")

    def check(self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str], user: str) -> None:
        """Raise the API server's 403 when ``user`` may not make this request."""
        info = request_info(method, path, query)
        decision = self.authorize(user, info)
        if not decision.allowed:
            raise forbidden(user, info, decision.reason)
        if (
            info.resource_request
            and info.verb == "get"
            and info.resource == "pods"
            and info.subresource in _CONNECT_SUBRESOURCES
            and headers.get("Upgrade", "").lower() == "websocket"
            and self._minor_version() >= 35
        ):
            # From 1.35 a websocket upgrade (a GET) also needs what SPDY's POST needs.
            create = dataclasses.replace(info, verb="create")
            decision = self.authorize(user, create)
            if not decision.allowed:
                raise forbidden(user, create, decision.reason)

    def _minor_version(self) -> int:
        parts = self.emulator.git_version.lstrip("v").split(".")
        try:
            return int(parts[1]) if len(parts) > 1 else 0
        except ValueError:
            return 0

    # ---- reviews ------------------------------------------------------------------------------
    def access_review(self, user: str, spec: Mapping[str, Any]) -> Obj:
        """The status of a SelfSubjectAccessReview."""
        attrs = spec.get("resourceAttributes")
        if isinstance(attrs, dict):
            info = RequestInfo(
                verb=str(attrs.get("verb") or ""),
                resource_request=True,
                api_group=str(attrs.get("group") or ""),
                api_version=str(attrs.get("version") or ""),
                resource=str(attrs.get("resource") or ""),
                subresource=str(attrs.get("subresource") or ""),
                namespace=str(attrs.get("namespace") or ""),
                name=str(attrs.get("name") or ""),
            )
        else:
            non = spec.get("nonResourceAttributes") or {}
            info = RequestInfo(verb=str(non.get("verb") or ""), resource_request=False, path=str(non.get("path") or ""))
        decision = self.authorize(user, info)
        status: Obj = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return status

    def rules_review(self, user: str, namespace: str) -> Obj:
        """The status of a SelfSubjectRulesReview in ``namespace``."""
        resource_rules: list[Obj] = []
        non_resource_rules: list[Obj] = []
        errors: list[str] = []
        groups = self.groups_of(user)
        for _, rule, error in self.visit(user, groups, namespace):
            if error is not None:
                errors.append(error)
                continue
            assert rule is not None
            if rule.get("resources"):
                out: Obj = {"verbs": _strings(rule.get("verbs"))}
                for key in ("apiGroups", "resources", "resourceNames"):
                    if rule.get(key):
                        out[key] = _strings(rule.get(key))
                resource_rules.append(out)
            if rule.get("nonResourceURLs"):
                non_resource_rules.append(
                    {"verbs": _strings(rule.get("verbs")), "nonResourceURLs": _strings(rule.get("nonResourceURLs"))}
                )
        status: Obj = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": False}
        if errors:
            status["evaluationError"] = _aggregate(errors)
        return status


# ---- tables (kubectl get roles, rolebindings) -------------------------------------------------------

_CREATED = "CreationTimestamp is a timestamp representing the server time when this object was created."
_ROLE_COLUMNS = [
    _tables._col("Name", "Name must be unique within a namespace.", fmt="name"),
    _tables._col("Created At", _CREATED, type_="date"),
]


def _binding_columns(role_doc: str) -> list[Obj]:
    return [
        _tables._col("Name", "Name must be unique within a namespace.", fmt="name"),
        _tables._col("Role", role_doc),
        _tables._col("Age", _CREATED),
        _tables._col("Users", "Users in the roleBinding", 1),
        _tables._col("Groups", "Groups in the roleBinding", 1),
        _tables._col("ServiceAccounts", "ServiceAccounts in the roleBinding", 1),
    ]


def _role_cells(obj: Mapping[str, Any], now: Any) -> list[Any]:
    meta = obj.get("metadata") or {}
    return [meta.get("name", ""), meta.get("creationTimestamp", "")]


def _binding_cells(obj: Mapping[str, Any], now: Any) -> list[Any]:
    meta = obj.get("metadata") or {}
    ref = obj.get("roleRef") or {}
    kinds: dict[str, list[str]] = {"User": [], "Group": [], "ServiceAccount": []}
    for s in obj.get("subjects") or []:
        if isinstance(s, dict) and s.get("kind") in kinds:
            name = str(s.get("name", ""))
            if s.get("kind") == "ServiceAccount":
                name = f"{s.get('namespace', '')}/{name}"
            kinds[str(s["kind"])].append(name)
    return [
        meta.get("name", ""),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _tables.since(meta.get("creationTimestamp"), now),
        ", ".join(kinds["User"]),
        ", ".join(kinds["Group"]),
        ", ".join(kinds["ServiceAccount"]),
    ]


_tables._PRINTERS.update(
    {
        "roles": (_ROLE_COLUMNS, _role_cells),
        "clusterroles": (_ROLE_COLUMNS, _role_cells),
        "rolebindings": (
            _binding_columns(
                "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. "
                "If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable."
            ),
            _binding_cells,
        ),
        "clusterrolebindings": (
            _binding_columns(
                "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be "
                "resolved, the Authorizer must return an error. This field is immutable."
            ),
            _binding_cells,
        ),
    }
)


# ---- errors --------------------------------------------------------------------------------------

_SANITIZE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def forbidden(user: str, info: RequestInfo, reason: str = "") -> ApiError:
    """The API server's 403 for a request the authorizer refused."""
    if not info.resource_request:
        message = f"User {_q(user)} cannot {info.verb} path {_q(info.path)}"
    elif info.namespace:
        message = (
            f"User {_q(user)} cannot {info.verb} resource {_q(info.rbac_resource)} in API group "
            f"{_q(info.api_group)} in the namespace {_q(info.namespace)}"
        )
    else:
        message = (
            f"User {_q(user)} cannot {info.verb} resource {_q(info.rbac_resource)} in API group "
            f"{_q(info.api_group)} at the cluster scope"
        )
    message = message.translate(_SANITIZE)
    if reason:
        message = f"{message}: {reason}"
    details: Obj = {}
    if not info.resource_request or not info.resource:
        return ApiError(403, "Forbidden", f"forbidden: {message}", details)
    group_resource = f"{info.resource}.{info.api_group}" if info.api_group else info.resource
    if info.name:
        details["name"] = info.name
        subject = f"{group_resource} {_q(info.name)}"
    else:
        subject = group_resource
    if info.api_group:
        details["group"] = info.api_group
    details["kind"] = info.resource
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {message}", details)


# ---- validation ----------------------------------------------------------------------------------


def name_problems(name: str) -> list[tuple[str, str, str]]:
    """RBAC names are path segments (``system:discovery`` is a valid name)."""
    for bad in (".", ".."):
        if name == bad:
            return [("metadata.name", "FieldValueInvalid", f"Invalid value: {_q(name)}: may not be '{bad}'")]
    return [
        ("metadata.name", "FieldValueInvalid", f"Invalid value: {_q(name)}: may not contain '{c}'")
        for c in ("/", "%")
        if c in name
    ]


def _not_supported(field: str, value: Any, allowed: Sequence[str]) -> tuple[str, str, str]:
    values = ", ".join(_q(v) for v in allowed)
    return (field, "FieldValueNotSupported", f"Unsupported value: {_q(str(value or ''))}: supported values: {values}")


def validate(rt: ResourceType, obj: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The API server's checks of a Role, ClusterRole or binding on create."""
    problems: list[tuple[str, str, str]] = []
    if rt.plural in ("roles", "clusterroles"):
        for i, rule in enumerate(obj.get("rules") or []):
            path = f"rules[{i}]"
            if not isinstance(rule, dict):
                continue
            if not rule.get("verbs"):
                problems.append(
                    (f"{path}.verbs", "FieldValueRequired", "Required value: verbs must contain at least one value")
                )
            if rule.get("nonResourceURLs"):
                continue
            if not rule.get("apiGroups"):
                problems.append(
                    (
                        f"{path}.apiGroups",
                        "FieldValueRequired",
                        "Required value: resource rules must supply at least one api group",
                    )
                )
            if not rule.get("resources"):
                problems.append(
                    (
                        f"{path}.resources",
                        "FieldValueRequired",
                        "Required value: resource rules must supply at least one resource",
                    )
                )
        return problems
    if rt.plural not in ("rolebindings", "clusterrolebindings"):
        return problems
    ref = obj.get("roleRef") or {}
    if ref.get("apiGroup") != RBAC_GROUP:
        problems.append(_not_supported("roleRef.apiGroup", ref.get("apiGroup"), [RBAC_GROUP]))
    kinds = ["Role", "ClusterRole"] if rt.plural == "rolebindings" else ["ClusterRole"]
    if ref.get("kind") not in kinds:
        problems.append(_not_supported("roleRef.kind", ref.get("kind"), kinds))
    if not ref.get("name"):
        problems.append(("roleRef.name", "FieldValueRequired", "Required value"))
    for i, subject in enumerate(obj.get("subjects") or []):
        path = f"subjects[{i}]"
        if not isinstance(subject, dict):
            continue
        if not subject.get("name"):
            problems.append((f"{path}.name", "FieldValueRequired", "Required value"))
        kind = subject.get("kind")
        if kind == "ServiceAccount":
            if subject.get("apiGroup"):
                problems.append(_not_supported(f"{path}.apiGroup", subject.get("apiGroup"), [""]))
            if not subject.get("namespace") and rt.plural == "clusterrolebindings":
                problems.append((f"{path}.namespace", "FieldValueRequired", "Required value"))
        elif kind in ("User", "Group"):
            if subject.get("apiGroup") != RBAC_GROUP:
                problems.append(_not_supported(f"{path}.apiGroup", subject.get("apiGroup"), [RBAC_GROUP]))
        else:
            problems.append(_not_supported(f"{path}.kind", kind, ["ServiceAccount", "User", "Group"]))
    return problems


# ---- bootstrap policy ----------------------------------------------------------------------------

_READ = ["get", "list", "watch"]
_WRITE = ["create", "delete", "deletecollection", "patch", "update"]


def _rule(groups: Sequence[str], resources: Sequence[str], verbs: Sequence[str]) -> Obj:
    return {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}


def _urls(urls: Sequence[str], verbs: Sequence[str] = ("get",)) -> Obj:
    return {"nonResourceURLs": list(urls), "verbs": list(verbs)}


_VIEW = [
    _rule(
        [""],
        [
            "configmaps",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
        ],
        _READ,
    ),
    _rule(
        [""],
        [
            "bindings",
            "events",
            "limitranges",
            "namespaces/status",
            "pods/log",
            "pods/status",
            "replicationcontrollers/status",
            "resourcequotas",
            "resourcequotas/status",
        ],
        _READ,
    ),
    _rule([""], ["namespaces"], _READ),
    _rule(["discovery.k8s.io"], ["endpointslices"], _READ),
    _rule(
        ["apps"],
        [
            "controllerrevisions",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status",
        ],
        _READ,
    ),
    _rule(["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"], _READ),
    _rule(["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"], _READ),
    _rule(["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"], _READ),
    _rule(["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"], _READ),
]
_EDIT = [
    _rule([""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"], _READ),
    _rule([""], ["serviceaccounts"], ["impersonate"]),
    _rule([""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], _WRITE),
    _rule([""], ["pods/eviction"], ["create"]),
    _rule(
        [""],
        [
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "secrets",
            "serviceaccounts",
            "services",
            "services/proxy",
        ],
        _WRITE,
    ),
    _rule([""], ["serviceaccounts/token"], ["create"]),
    _rule(
        ["apps"],
        [
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ],
        _WRITE,
    ),
    _rule(["autoscaling"], ["horizontalpodautoscalers"], _WRITE),
    _rule(["batch"], ["cronjobs", "jobs"], _WRITE),
    _rule(["policy"], ["poddisruptionbudgets"], _WRITE),
    _rule(["networking.k8s.io"], ["ingresses", "networkpolicies"], _WRITE),
    _rule(["coordination.k8s.io"], ["leases"], _READ + _WRITE),
    *_VIEW,
]
_ADMIN = [
    _rule(["authorization.k8s.io"], ["localsubjectaccessreviews"], ["create"]),
    _rule([RBAC_GROUP], ["rolebindings", "roles"], _READ + _WRITE),
    *_EDIT,
]
_DISCOVERY_URLS = [
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi",
    "/openapi/*",
    "/readyz",
    "/version",
    "/version/",
]
_PUBLIC_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]


def _bootstrap_meta(name: str) -> Obj:
    return {
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    }


def _cluster_role(name: str, rules: list[Obj]) -> Obj:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole", "metadata": _bootstrap_meta(name), "rules": rules}


def _cluster_binding(name: str, role: str, groups: Sequence[str]) -> Obj:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _bootstrap_meta(name),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": g} for g in groups],
    }


def bootstrap_policy() -> list[Obj]:
    """The default ClusterRoles and ClusterRoleBindings a client meets on a real cluster."""
    return [
        _cluster_role("cluster-admin", [_rule(["*"], ["*"], ["*"]), _urls(["*"], ["*"])]),
        _cluster_role("admin", _ADMIN),
        _cluster_role("edit", _EDIT),
        _cluster_role("view", _VIEW),
        _cluster_role("system:discovery", [_urls(_DISCOVERY_URLS)]),
        _cluster_role("system:public-info-viewer", [_urls(_PUBLIC_URLS)]),
        _cluster_role(
            "system:basic-user",
            [
                _rule(["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], ["create"]),
                _rule(["authentication.k8s.io"], ["selfsubjectreviews"], ["create"]),
            ],
        ),
        _cluster_binding("cluster-admin", "cluster-admin", [SYSTEM_MASTERS]),
        _cluster_binding("system:discovery", "system:discovery", [AUTHENTICATED]),
        _cluster_binding("system:basic-user", "system:basic-user", [AUTHENTICATED]),
        _cluster_binding("system:public-info-viewer", "system:public-info-viewer", [AUTHENTICATED, UNAUTHENTICATED]),
    ]


def seed_bootstrap_policy(emulator: SimEmulator) -> int:
    """Store the bootstrap objects that are missing (on the server loop); how many were added."""
    missing = []
    for obj in bootstrap_policy():
        rt = _CLUSTER_ROLES if obj["kind"] == "ClusterRole" else _CLUSTER_ROLE_BINDINGS
        if emulator.store.get(rt, None, obj["metadata"]["name"]) is None:
            missing.append(obj)
    for obj in missing:
        emulator.put_object(obj)
    return len(missing)


__all__ = [
    "Authorizer",
    "Decision",
    "RequestInfo",
    "Source",
    "bootstrap_policy",
    "forbidden",
    "groups_of",
    "request_info",
    "rule_allows",
    "seed_bootstrap_policy",
    "validate",
]
