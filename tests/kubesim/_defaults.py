"""What the API server fills in and checks when an object is created or updated."""

from __future__ import annotations

import base64
import copy
import datetime as dt
import random
import re
import uuid
from typing import Any

from . import _errors, _rbac
from ._resources import ResourceType

Obj = dict[str, Any]

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def now_rfc3339() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339(when: dt.datetime) -> str:
    return when.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def generated_name(prefix: str, rng: random.Random | None = None) -> str:
    r = rng or random
    return prefix + "".join(r.choice(_SUFFIX_ALPHABET) for _ in range(5))


def _name_problems(rt: ResourceType, name: str) -> list[tuple[str, str, str]]:
    if rt.group == _rbac.RBAC_GROUP:
        return _rbac.name_problems(name)
    if rt.plural in ("namespaces",):
        ok = bool(_DNS1123_LABEL.match(name)) and len(name) <= 63
        what = (
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
            "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
            "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        )
    else:
        ok = bool(_DNS1123_SUBDOMAIN.match(name)) and len(name) <= 253
        what = (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    if ok or rt.plural == "events":
        return []
    return [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {what}')]


def _quantity_ok(value: Any) -> bool:
    return isinstance(value, (int, float)) or (
        isinstance(value, str)
        and re.match(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i)?$", value) is not None
    )


def validate_pod(pod: Obj) -> list[tuple[str, str, str]]:
    """Field problems the API server reports as 422 Invalid for a new pod (a useful subset)."""
    problems: list[tuple[str, str, str]] = []
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return [("spec.containers", "FieldValueRequired", "Required value")]
    containers = spec.get("containers")
    if not containers:
        problems.append(("spec.containers", "FieldValueRequired", "Required value"))
    seen: set[str] = set()
    for field, items in (
        ("spec.initContainers", spec.get("initContainers") or []),
        ("spec.containers", containers or []),
    ):
        for i, c in enumerate(items):
            if not isinstance(c, dict):
                problems.append((f"{field}[{i}]", "FieldValueInvalid", "Invalid value: must be an object"))
                continue
            name = c.get("name")
            if not name:
                problems.append((f"{field}[{i}].name", "FieldValueRequired", "Required value"))
            elif name in seen:
                problems.append((f"{field}[{i}].name", "FieldValueDuplicate", f'Duplicate value: "{name}"'))
            elif not _DNS1123_LABEL.match(name):
                problems.append(
                    (
                        f"{field}[{i}].name",
                        "FieldValueInvalid",
                        f'Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower case '
                        "alphanumeric characters or '-', and must start and end with an alphanumeric character",
                    )
                )
            if name:
                seen.add(name)
            if not c.get("image"):
                problems.append((f"{field}[{i}].image", "FieldValueRequired", "Required value"))
            policy = c.get("restartPolicy")
            if policy is not None and (field == "spec.containers" or policy != "Always"):
                problems.append(
                    (
                        f"{field}[{i}].restartPolicy",
                        "FieldValueNotSupported" if field != "spec.containers" else "FieldValueForbidden",
                        f'Unsupported value: "{policy}": supported values: "Always"'
                        if field != "spec.containers"
                        else "Forbidden: may not be set for non-init containers",
                    )
                )
            res = c.get("resources") or {}
            for kind in ("limits", "requests"):
                for rname, qty in (res.get(kind) or {}).items():
                    if not _quantity_ok(qty):
                        problems.append(
                            (
                                f"{field}[{i}].resources.{kind}[{rname}]",
                                "FieldValueInvalid",
                                f'Invalid value: "{qty}": quantities must match the regular expression '
                                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                            )
                        )
            limits = res.get("limits") or {}
            requests = res.get("requests") or {}
            for rname in ("nvidia.com/gpu",):
                if rname in requests and rname in limits and str(requests[rname]) != str(limits[rname]):
                    problems.append(
                        (
                            f"{field}[{i}].resources.requests",
                            "FieldValueInvalid",
                            f'Invalid value: "{requests[rname]}": must be equal to {rname} limit of {limits[rname]}',
                        )
                    )
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in ("Always", "OnFailure", "Never"):
        problems.append(
            (
                "spec.restartPolicy",
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: "Always", "OnFailure", "Never"',
            )
        )
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and (not isinstance(deadline, int) or deadline <= 0):
        problems.append(
            (
                "spec.activeDeadlineSeconds",
                "FieldValueInvalid",
                f"Invalid value: {deadline}: must be between 1 and 2147483647, inclusive",
            )
        )
    return problems


def _default_container(c: Obj) -> Obj:
    c = dict(c)
    image = str(c.get("image", ""))
    tag = image.rsplit("/", 1)[-1]
    if "imagePullPolicy" not in c:
        c["imagePullPolicy"] = (
            "Always" if (":" not in tag or tag.endswith(":latest")) and "@" not in tag else "IfNotPresent"
        )
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    res = dict(c.get("resources") or {})
    limits = res.get("limits") or {}
    if limits:
        requests = dict(res.get("requests") or {})
        for k, v in limits.items():
            requests.setdefault(k, v)
        res["requests"] = requests
    c["resources"] = res
    return c


def qos_class(pod: Obj) -> str:
    containers = list((pod.get("spec") or {}).get("containers") or []) + list(
        (pod.get("spec") or {}).get("initContainers") or []
    )
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        for r in ("cpu", "memory"):
            if r in limits or r in requests:
                any_set = True
            if r not in limits or str(limits.get(r)) != str(requests.get(r, limits.get(r))):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def default_pod(pod: Obj) -> Obj:
    spec = dict(pod.get("spec") or {})
    spec["containers"] = [_default_container(c) for c in spec.get("containers") or []]
    if spec.get("initContainers"):
        spec["initContainers"] = [_default_container(c) for c in spec["initContainers"]]
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    tolerations = list(spec.get("tolerations") or [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == key for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
    spec["tolerations"] = tolerations
    pod = dict(pod)
    pod["spec"] = spec
    status = dict(pod.get("status") or {})
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", qos_class(pod))
    pod["status"] = status
    return pod


MAX_CONFIGMAP_BYTES = 1024 * 1024


def validate_configmap(cm: Obj) -> list[tuple[str, str, str]]:
    """A ConfigMap holds at most 1 MiB of keys and values (data and binaryData)."""
    size = 0
    for key, value in (cm.get("data") or {}).items():
        size += len(str(key).encode()) + len(str(value).encode())
    for key, value in (cm.get("binaryData") or {}).items():
        try:
            size += len(str(key).encode()) + len(base64.b64decode(str(value)))
        except ValueError:
            size += len(str(key).encode()) + len(str(value))
    if size > MAX_CONFIGMAP_BYTES:
        return [("[]", "FieldValueTooLong", f"Too long: must have at most {MAX_CONFIGMAP_BYTES} bytes")]
    return []


# ---- batch/v1 Jobs -------------------------------------------------------------------------------

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"


def _nonnegative(value: Any, field: str) -> list[tuple[str, str, str]]:
    if value is None:
        return []
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return [(field, "FieldValueInvalid", f"Invalid value: {value}: must be greater than or equal to 0")]
    return []


def validate_job(job: Obj) -> list[tuple[str, str, str]]:
    """Field problems the API server reports as 422 Invalid for a new Job (a useful subset)."""
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return [
            (
                "spec.template.spec.restartPolicy",
                "FieldValueRequired",
                'Required value: valid values: "OnFailure", "Never"',
            )
        ]
    problems: list[tuple[str, str, str]] = []
    for key in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        problems += _nonnegative(spec.get(key), f"spec.{key}")
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        problems.append(
            (
                "spec.completionMode",
                "FieldValueNotSupported",
                f'Unsupported value: "{mode}": supported values: "NonIndexed", "Indexed"',
            )
        )
    if mode == "Indexed" and spec.get("completions") is None:
        problems.append(("spec.completions", "FieldValueRequired", "Required value: when completion mode is Indexed"))
    template = spec.get("template")
    tspec = (template or {}).get("spec") if isinstance(template, dict) else None
    if not isinstance(tspec, dict):
        tspec = {}
    # The pod checks, on the template (restartPolicy is the Job's own rule, below).
    for field, reason, message in validate_pod({"spec": {k: v for k, v in tspec.items() if k != "restartPolicy"}}):
        problems.append((f"spec.template.{field}", reason, message))
    policy = tspec.get("restartPolicy")
    if not policy:
        problems.append(
            (
                "spec.template.spec.restartPolicy",
                "FieldValueRequired",
                'Required value: valid values: "OnFailure", "Never"',
            )
        )
    elif policy not in ("OnFailure", "Never"):
        problems.append(
            (
                "spec.template.spec.restartPolicy",
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: "OnFailure", "Never"',
            )
        )
    return problems


def _sorted(d: dict[str, Any]) -> dict[str, Any]:
    return {k: d[k] for k in sorted(d)}


def default_job(job: Obj) -> Obj:
    """What the API server fills in on a new Job: the defaults of batch/v1, the generated
    selector and the labels the template's pods carry (``job-name``, ``controller-uid`` and
    their ``batch.kubernetes.io/`` forms), and the template's pod-spec defaults."""
    job = dict(job)
    meta = dict(job["metadata"])
    uid, name = meta["uid"], meta["name"]
    spec = dict(job.get("spec") or {})
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
    template = dict(spec.get("template") or {})
    tmeta = dict(template.get("metadata") or {})
    tmeta.setdefault("creationTimestamp", None)
    labels = dict(tmeta.get("labels") or {})
    if not spec.get("manualSelector"):
        for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
            labels.setdefault(key, name)
        for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
            labels.setdefault(key, uid)
        selector = dict(spec.get("selector") or {})
        match = dict(selector.get("matchLabels") or {})
        match.setdefault(CONTROLLER_UID_LABEL, uid)
        selector["matchLabels"] = _sorted(match)
        spec["selector"] = selector
    tmeta["labels"] = _sorted(labels)
    template["metadata"] = tmeta
    tspec = dict(template.get("spec") or {})
    tspec["containers"] = [_default_container(c) for c in tspec.get("containers") or []]
    if tspec.get("initContainers"):
        tspec["initContainers"] = [_default_container(c) for c in tspec["initContainers"]]
    tspec.setdefault("terminationGracePeriodSeconds", 30)
    tspec.setdefault("dnsPolicy", "ClusterFirst")
    tspec.setdefault("schedulerName", "default-scheduler")
    tspec.setdefault("securityContext", {})
    template["spec"] = tspec
    spec["template"] = template
    job["spec"] = spec
    # Defaulting runs again when the stored Job is read: a Job without labels of its own
    # then takes its template's, generated ones included.
    if not meta.get("labels"):
        meta["labels"] = dict(tmeta["labels"])
    job["metadata"] = meta
    job["status"] = {}
    return job


def default_namespace(ns: Obj) -> Obj:
    ns = dict(ns)
    meta = dict(ns["metadata"])
    labels = dict(meta.get("labels") or {})
    labels["kubernetes.io/metadata.name"] = meta["name"]
    meta["labels"] = labels
    ns["metadata"] = meta
    ns.setdefault("spec", {"finalizers": ["kubernetes"]})
    ns["status"] = {"phase": "Active"}
    return ns


def prepare_new(rt: ResourceType, body: Obj, namespace: str | None, *, dry_run: bool = False) -> Obj:
    """Fill server-side metadata and defaults for a create; raise ApiError when invalid."""
    obj = copy.deepcopy(body)
    obj["apiVersion"] = rt.api_version
    obj["kind"] = rt.kind
    meta = dict(obj.get("metadata") or {})
    if rt.namespaced:
        body_ns = meta.get("namespace")
        if namespace is None:
            namespace = body_ns or "default"
        elif body_ns and body_ns != namespace:
            raise _errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    name = meta.get("name")
    if not name and meta.get("generateName"):
        name = generated_name(str(meta["generateName"]))
        meta["name"] = name
    if not name:
        raise _errors.invalid(
            rt.kind,
            "",
            [("metadata.name", "FieldValueRequired", "Required value: name or generateName is required")],
            rt.group,
        )
    problems = _name_problems(rt, str(name))
    if rt.group == _rbac.RBAC_GROUP:
        problems += _rbac.validate(rt, obj)
    if rt.plural == "pods":
        problems += validate_pod(obj)
    elif rt.plural == "jobs":
        problems += validate_job(obj)
    elif rt.plural == "configmaps":
        problems += validate_configmap(obj)
    if problems:
        raise _errors.invalid(rt.kind, str(name), problems, rt.group)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now_rfc3339()
    for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
        meta.pop(k, None)
    if "spec" in obj or rt.group == "apps":
        meta["generation"] = 1
    obj["metadata"] = meta
    if rt.plural == "pods":
        obj.pop("status", None)
        obj = default_pod(obj)
    elif rt.plural == "namespaces":
        obj = default_namespace(obj)
    elif rt.plural == "jobs":
        obj = default_job(obj)
    elif rt.plural == "events":
        obj.setdefault("reportingComponent", "")
        obj.setdefault("reportingInstance", "")
    return obj


def fill_seed(rt: ResourceType, obj: Obj, rng: random.Random | None = None) -> Obj:
    """Complete an object given to ``load``/``put``: kind, uid, creationTimestamp if absent."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        raise ValueError(f"object without metadata.name: {obj!r:.200}")
    need_meta = "uid" not in meta or "creationTimestamp" not in meta or (rt.namespaced and not meta.get("namespace"))
    need_type = obj.get("kind") != rt.kind or obj.get("apiVersion") != rt.api_version
    if not need_meta and not need_type:
        return obj
    obj = dict(obj)
    obj["kind"] = rt.kind
    obj["apiVersion"] = rt.api_version
    if need_meta:
        meta = dict(meta)
        if "uid" not in meta:
            meta["uid"] = str(uuid.UUID(int=rng.getrandbits(128), version=4)) if rng else str(uuid.uuid4())
        meta.setdefault("creationTimestamp", now_rfc3339())
        if rt.namespaced and not meta.get("namespace"):
            meta["namespace"] = "default"
        obj["metadata"] = meta
    return obj
