"""A fleet's objects on the cluster: one ConfigMap (the lab scripts and the plan) and one
batch/v1 Job per target, their manifests, watches, status and cleanup.

Every object carries `app.kubernetes.io/managed-by: nsightlab`, `nsightlab/owner: <owner>`
and `nsightlab/fleet: <fleet id>`; nothing without the first two (and the right owner) is
ever deleted. What a fleet may do is FLEET_PERMISSIONS (cluster/permissions.py): Jobs, one
ConfigMap, reading pods and their logs; no exec, no copy, no nodes unless the types are
to be found.
"""

from __future__ import annotations

import contextlib
import copy
import queue
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ConfigDict, Field, ValidationError

from nsightlab.analysis.fleet_models import FleetJobs, FleetPlan, FleetStatusLine, FleetStatusReport, FleetTarget
from nsightlab.cluster.answers import Forbidden, Gone
from nsightlab.cluster.labmanifest import (
    MANAGED_BY,
    OWNER,
    check_lab_values,
    load_manifest,
    owner_label,
)
from nsightlab.errors import ClusterError
from nsightlab.k8s import pods as r
from nsightlab.k8s.inventory import gpu_product
from nsightlab.k8s.labmatch import too_small
from nsightlab.k8s.labpod import FleetCleanup
from nsightlab.models import Model
from nsightlab.specs.gpus import for_instance_type

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube
    from nsightlab.env import Env
    from nsightlab.userconfig import Config

FLEET = "nsightlab/fleet"
TARGET = "nsightlab/fleet-target"
APP = "nsight-fleet"
HOSTNAME = "kubernetes.io/hostname"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
SCRIPTS_VOLUME = "lab-scripts"
MOUNT = "/opt/nsightlab"
PLAN_KEY = "plan.json"
DEFAULT_TTL = 86400
# What a Job's pod runs: the wrapper, then the script it runs (both from the ConfigMap).
WRAPPER = "fleetrun.py"
SCRIPT = "sweep.py"
# A container waiting for one of these will not start by itself: the Job is failed at once.
FATAL_WAITING = {
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
}


# ---------------------------------------------------------------------------- names and labels


def configmap_name(fleet_id: str) -> str:
    return f"nsightlab-fleet-{fleet_id}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def job_names(fleet_id: str, keys: Sequence[str]) -> list[str]:
    """One Job name per key: `nsl-fleet-<id>-<key as a DNS label>`, at most 63 characters
    (the controller copies it into a label), unique."""
    out: list[str] = []
    for i, key in enumerate(keys):
        base = f"nsl-fleet-{fleet_id}-"
        name = (base + _slug(key))[:63].rstrip("-")
        if name in out or name == base.rstrip("-"):
            suffix = f"-{i}"
            name = (base + _slug(key))[: 63 - len(suffix)].rstrip("-") + suffix
        out.append(name)
    return out


def selector(owner: str, fleet_id: str | None = None) -> str:
    """This owner's fleet objects (all fleets, or one)."""
    return f"{MANAGED_BY}=nsightlab,{OWNER}={owner_label(owner)}," + (f"{FLEET}={fleet_id}" if fleet_id else FLEET)


def is_ours(obj: dict[str, Any], owner: str, fleet_id: str | None = None) -> bool:
    """Both nsightlab labels (and the fleet's, when given) are on it."""
    labels = r.labels(obj)
    return (
        labels.get(MANAGED_BY) == "nsightlab"
        and labels.get(OWNER) == owner_label(owner)
        and bool(labels.get(FLEET))
        and (fleet_id is None or labels.get(FLEET) == fleet_id)
    )


def _labels(plan: FleetPlan) -> dict[str, str]:
    return {
        MANAGED_BY: "nsightlab",
        OWNER: owner_label(plan.owner),
        FLEET: plan.fleet_id,
        "app.kubernetes.io/name": APP,
    }


# ---------------------------------------------------------------------------- targets


def discover_targets(
    kube: Kube, *, types: Sequence[str] | None, every_node: bool, config: Config
) -> tuple[list[tuple[str, str, str | None, str | None]], list[str]]:
    """(key, instance type, node, GPU product) to measure, from the nodes: each GPU
    instance type (as `explore nodes` counts them), or each GPU node. With `types`, only
    those. Also notes on types too small for the Job's requests. Raises Forbidden (exit 4)
    when the nodes may not be listed."""
    nodes = [n for n in kube.list_nodes() if r.node_is_gpu(n)]
    if types:
        wanted = set(types)
        nodes = [n for n in nodes if r.instance_type(n) in wanted]
    nodes.sort(key=lambda n: ((r.instance_type(n) or ""), n["metadata"]["name"]))
    notes = too_small(nodes, cpu=config.lab.cpu, memory=config.lab.memory)
    out: list[tuple[str, str, str | None, str | None]] = []
    if every_node:
        for n in nodes:
            itype = r.instance_type(n) or "<none>"
            out.append((n["metadata"]["name"], itype, n["metadata"]["name"], gpu_product(n)))
        return out, notes
    seen: dict[str, str | None] = {}
    for n in nodes:
        label = r.instance_type(n)
        if label and label not in seen:
            seen[label] = gpu_product(n)
    order = list(types) if types else sorted(seen)
    for itype in order:  # a type named with --types but without nodes still gets its Job (and the scheduler's answer)
        spec = for_instance_type(itype)
        out.append((itype, itype, None, seen.get(itype) or (spec.name if spec else None)))
    return out, notes


def named_targets(types: Sequence[str]) -> list[tuple[str, str, str | None, str | None]]:
    """Targets from `--types` alone (no request): the GPU product from the spec table."""
    out: list[tuple[str, str, str | None, str | None]] = []
    for itype in types:
        spec = for_instance_type(itype)
        out.append((itype, itype, None, spec.name if spec else None))
    return out


def make_targets(fleet_id: str, found: Sequence[tuple[str, str, str | None, str | None]]) -> list[FleetTarget]:
    names = job_names(fleet_id, [key for key, *_ in found])
    return [
        FleetTarget(key=key, instance_type=itype, node=node, job=name, gpu_product=product)
        for (key, itype, node, product), name in zip(found, names, strict=True)
    ]


# ---------------------------------------------------------------------------- manifests


class _K8s(Model):
    model_config = ConfigDict(extra="allow")


class _Container(_K8s):
    name: str


class _PodSpec(_K8s):
    containers: list[_Container] = Field(min_length=1)


class _PodTemplate(_K8s):
    spec: _PodSpec


class _JobSpec(_K8s):
    template: _PodTemplate


class JobTemplate(_K8s):
    """The minimum a Job template must be; everything else is passed through."""

    apiVersion: str
    kind: str
    spec: _JobSpec


def load_job_template(path: Path) -> dict[str, Any]:
    """`manifests/fleet-job.yaml` (or a user's file), checked: a batch/v1 Job with a container."""
    return load_manifest(path, JobTemplate, api_version="batch/v1", kind="Job", what="Job template")


def build_configmap(plan: FleetPlan, scripts: dict[str, str]) -> dict[str, Any]:
    """The fleet's ConfigMap: the scripts its Jobs run, and the plan (for `fleet collect`)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": configmap_name(plan.fleet_id), "namespace": plan.namespace, "labels": _labels(plan)},
        "data": {**scripts, PLAN_KEY: plan.model_dump_json(indent=1)},
    }


def build_job(template: dict[str, Any], config: Config, plan: FleetPlan, target: FleetTarget) -> dict[str, Any]:
    """One target's Job from the template: the lab pod's image, tolerations and
    resources with one GPU, pinned to its instance type (or node), one try. Pure."""
    lab = config.lab
    check_lab_values(config, needs="PyTorch")
    m = copy.deepcopy(template)
    labels = {**_labels(plan)}
    meta = m.setdefault("metadata", {})
    meta["name"] = target.job
    meta["namespace"] = plan.namespace
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    annotations = {TARGET: target.key, INSTANCE_TYPE: target.instance_type}
    if target.node:
        annotations[HOSTNAME] = target.node
    meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    spec = m["spec"]
    spec["backoffLimit"] = 0
    spec["activeDeadlineSeconds"] = plan.job_deadline
    spec.setdefault("ttlSecondsAfterFinished", DEFAULT_TTL)
    pod_meta = spec["template"].setdefault("metadata", {})
    pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **labels}
    pod = spec["template"]["spec"]
    pod["restartPolicy"] = "Never"
    chosen = {k: v for k, v in (pod.get("nodeSelector") or {}).items() if k not in (INSTANCE_TYPE, HOSTNAME)}
    chosen.update({HOSTNAME: target.node} if target.node else {INSTANCE_TYPE: target.instance_type})
    chosen.update(lab.node_selector)
    pod["nodeSelector"] = chosen
    tolerations = list(pod.get("tolerations") or [])
    if not any(t.get("key") == r.GPU for t in tolerations):
        tolerations.append({"key": r.GPU, "operator": "Exists"})
    pod["tolerations"] = tolerations
    main = pod["containers"][0]
    main["image"] = lab.image
    main.setdefault("command", ["python3", "-u", f"{MOUNT}/{WRAPPER}", f"{MOUNT}/{SCRIPT}"])
    main["args"] = plan.script_args()
    amounts = {"cpu": lab.cpu, "memory": lab.memory, r.GPU: "1"}  # one GPU per Job, whatever the lab pod asks
    main["resources"] = {"limits": dict(amounts), "requests": dict(amounts)}
    sc = main.setdefault("securityContext", {})
    sc.setdefault("allowPrivilegeEscalation", False)
    sc.setdefault("capabilities", {}).setdefault("drop", ["ALL"])
    sc.setdefault("seccompProfile", {"type": "RuntimeDefault"})
    volumes = [v for v in pod.get("volumes") or [] if v.get("name") != SCRIPTS_VOLUME]
    volumes.append({"name": SCRIPTS_VOLUME, "configMap": {"name": configmap_name(plan.fleet_id)}})
    pod["volumes"] = volumes
    mounts = [v for v in main.get("volumeMounts") or [] if v.get("name") != SCRIPTS_VOLUME]
    mounts.append({"name": SCRIPTS_VOLUME, "mountPath": MOUNT, "readOnly": True})
    main["volumeMounts"] = mounts
    return m


class _ReadableDumper(yaml.SafeDumper):
    """YAML that shows a file as the file: a string of several lines as a literal block
    scalar (`|`), not one double-quoted line of escapes. (PyYAML still quotes one that a
    block cannot hold exactly, e.g. with trailing spaces on a line.)"""


# A string Go's YAML (kubectl's) would read as a number, where PyYAML would write it plain:
# a fleet id such as 12e456 (an exponent without a point).
_NUMBER_TO_GO = re.compile(r"[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?")


def literal_text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        style: str | None = "|"
    elif any(c.isdigit() for c in value) and _NUMBER_TO_GO.fullmatch(value):
        style = "'"
    else:
        style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ReadableDumper.add_representer(str, literal_text)


def manifests_yaml(docs: Iterable[dict[str, Any]]) -> str:
    """Several manifests as one multi-document YAML stream (what `kubectl create -f -` reads),
    for a person first: the Jobs, then the ConfigMap, whose files read as files."""
    docs = list(docs)
    jobs = [d for d in docs if d.get("kind") == "Job"]
    rest = [d for d in docs if d.get("kind") != "Job"]
    head = (
        f"# {len(jobs)} Job{'s' if len(jobs) != 1 else ''}, then the ConfigMap of the scripts they run\n"
        if jobs
        else ""
    )
    body = yaml.dump_all(
        [*jobs, *rest], Dumper=_ReadableDumper, sort_keys=False, default_flow_style=False, explicit_start=True
    )
    return head + body


def plan_of(configmap: dict[str, Any]) -> FleetPlan | None:
    """The plan a fleet's ConfigMap carries, or None when it has none readable."""
    text = (configmap.get("data") or {}).get(PLAN_KEY)
    if not text:
        return None
    try:
        return FleetPlan.model_validate_json(text)
    except ValidationError:
        return None


# ---------------------------------------------------------------------------- Jobs' state


def job_target(job: dict[str, Any]) -> str | None:
    return ((job.get("metadata") or {}).get("annotations") or {}).get(TARGET)


def job_of_pod(pod: dict[str, Any]) -> str | None:
    labels = r.labels(pod)
    return labels.get("batch.kubernetes.io/job-name") or labels.get("job-name")


def job_finished(job: dict[str, Any]) -> tuple[str, str, str] | None:
    """(Complete|Failed, reason, message) once the Job has finished, else None."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"]), str(c.get("reason") or ""), str(c.get("message") or "")
    return None


def pending_reason(pod: dict[str, Any]) -> str | None:
    """The scheduler's message while a pod is unscheduled, else a waiting container's."""
    sched = r.condition(pod, "PodScheduled")
    if sched and sched.get("status") == "False":
        return str(sched.get("message") or sched.get("reason") or "Unschedulable")
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return f"{waiting['reason']}: {waiting.get('message', '')}".rstrip(": ")
    return None


def fatal_waiting(pod: dict[str, Any]) -> str | None:
    """A waiting reason that will not resolve itself (a bad image), with its message."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in FATAL_WAITING:
            return f"{waiting['reason']}: {waiting.get('message', '')}".rstrip(": ")
    return None


# ---------------------------------------------------------------------------- watching


class FleetWatch:
    """The fleet's Jobs and pods, watched (label selector), into one queue of
    (kind, event type, object). A watch the server ends is resumed from its last
    resourceVersion; one too old (410) lists again and replays the objects as MODIFIED."""

    def __init__(self, kube: Kube, namespace: str, label_selector: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.label_selector = label_selector
        self.events: queue.Queue[tuple[str, str, dict[str, Any]]] = queue.Queue()
        self._stop = threading.Event()
        self._streams: dict[str, Any] = {}
        self._threads: list[threading.Thread] = []

    def start(self, jobs_rv: str, pods_rv: str) -> None:
        for kind, rv in (("job", jobs_rv), ("pod", pods_rv)):
            t = threading.Thread(target=self._run, args=(kind, rv), daemon=True, name=f"nsightlab-fleet-{kind}s")
            t.start()
            self._threads.append(t)

    def _watch(self, kind: str, rv: str | None) -> Iterator[tuple[str, dict[str, Any]]]:
        def opened(resp: Any) -> None:
            self._streams[kind] = resp

        if kind == "job":
            return self.kube.watch_jobs(
                self.namespace,
                label_selector=self.label_selector,
                resource_version=rv,
                timeout_seconds=50,
                on_open=opened,
            )
        return self.kube.watch_pods(
            self.namespace, label_selector=self.label_selector, resource_version=rv, timeout_seconds=50, on_open=opened
        )

    def _relist(self, kind: str) -> str:
        if kind == "job":
            items, rv = self.kube.list_jobs(self.namespace, label_selector=self.label_selector)
        else:
            items, rv = self.kube.list_pods(self.namespace, label_selector=self.label_selector)
        for obj in items:
            self.events.put((kind, "MODIFIED", obj))
        return rv

    def _run(self, kind: str, rv: str) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                for etype, obj in self._watch(kind, rv or None):
                    failures = 0
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if etype != "BOOKMARK":
                        self.events.put((kind, etype, obj))
                    if self._stop.is_set():
                        return
            except Gone:
                with contextlib.suppress(ClusterError):
                    rv = self._relist(kind)
            except ClusterError as e:
                if self._stop.is_set():
                    return
                failures += 1
                if failures > 5:
                    self.events.put(("error", "", {"message": e.message}))
                    return
                self._stop.wait(min(2.0, 0.2 * failures))  # back off, then watch again

    def stop(self) -> None:
        self._stop.set()
        for resp in list(self._streams.values()):
            with contextlib.suppress(Exception):
                resp.shutdown()  # ends a blocked read at once
        for t in self._threads:
            t.join(timeout=2)


# ---------------------------------------------------------------------------- status and cleanup


def _job_phase(job: dict[str, Any], pods: Sequence[dict[str, Any]]) -> str:
    done = job_finished(job)
    if done is not None:
        return "succeeded" if done[0] == "Complete" else "failed"
    mine = [p for p in pods if job_of_pod(p) == job["metadata"]["name"]]
    if any((p.get("status") or {}).get("phase") == "Running" for p in mine):
        return "running"
    return "pending"


def fleet_status(
    kube: Kube, namespace: str, owner: str, *, context: str, now: datetime | None = None
) -> FleetStatusReport:
    """This owner's fleets in the namespace: id, age, Jobs by phase, and how many targets
    of its plan have no Job (not created yet: an interrupted fleet)."""
    now = now or datetime.now(timezone.utc)
    sel = selector(owner)
    jobs, _ = kube.list_jobs(namespace, label_selector=sel)
    pods, _ = kube.list_pods(namespace, label_selector=sel)
    by_fleet: dict[str, list[dict[str, Any]]] = {}
    for j in jobs:
        by_fleet.setdefault(r.labels(j)[FLEET], []).append(j)
    lines = []
    for fleet_id in sorted(by_fleet):
        group = by_fleet[fleet_id]
        counts = FleetJobs()
        for j in group:
            phase = _job_phase(j, pods)
            setattr(counts, phase, getattr(counts, phase) + 1)
        planned: int | None = None
        try:
            cm = kube.get_configmap(namespace, configmap_name(fleet_id))
        except Forbidden:
            cm = None
        plan = plan_of(cm) if cm is not None and is_ours(cm, owner, fleet_id) else None
        if plan is not None:
            planned = len(plan.targets)
            counts.waiting = max(0, planned - len(group))
        created = min(
            (t for t in (r.parse_time((j.get("metadata") or {}).get("creationTimestamp")) for j in group) if t),
            default=None,
        )
        lines.append(
            FleetStatusLine(
                fleet_id=fleet_id,
                created=created,
                age=r.human_duration((now - created).total_seconds()) if created else "?",
                jobs=counts,
                planned=planned,
            )
        )
    return FleetStatusReport(context=context, namespace=namespace, owner=owner, fleets=lines)


def delete_fleets(env: Env, kube: Kube, namespace: str, owner: str, fleet_ids: Sequence[str] | None) -> FleetCleanup:
    """Delete the Jobs (their pods after them) and the ConfigMap of these fleets, or of all
    of this owner's fleets (`None`). Only objects with both nsightlab labels and this
    owner's name are touched; others with the fleet's label or name are reported skipped."""
    report = FleetCleanup()
    ids = list(fleet_ids or [])
    if fleet_ids is None:
        try:
            mine, _ = kube.list_jobs(namespace, label_selector=selector(owner))
        except Forbidden:  # a lab-only role: no fleets to look for
            env.note(f"no permission to list Jobs in {namespace}: fleets not looked for")
            return report
        found = {r.labels(j)[FLEET] for j in mine}
        with contextlib.suppress(Forbidden):  # listing ConfigMaps is not in FLEET_PERMISSIONS
            found |= {r.labels(c)[FLEET] for c in kube.list_configmaps(namespace, label_selector=selector(owner))}
        ids = sorted(found)
    for fleet_id in ids:
        touched = False
        jobs, _ = kube.list_jobs(namespace, label_selector=f"{FLEET}={fleet_id}")
        for j in jobs:
            name = j["metadata"]["name"]
            if not is_ours(j, owner, fleet_id):
                report.skipped.append(f"job/{name}")
                env.warn(f"not deleting job {name}: it is not an nsightlab fleet Job of {owner}")
                continue
            if kube.delete_job(namespace, name, uid=j["metadata"].get("uid")):
                report.jobs.append(name)
                touched = True
        name = configmap_name(fleet_id)
        cm = kube.get_configmap(namespace, name)
        if cm is not None:
            if is_ours(cm, owner, fleet_id):
                if kube.delete_configmap(namespace, name, uid=cm["metadata"].get("uid")):
                    report.configmaps.append(name)
                    touched = True
            else:
                report.skipped.append(f"configmap/{name}")
                env.warn(f"not deleting configmap {name}: it is not an nsightlab fleet ConfigMap of {owner}")
        if touched:
            report.fleets.append(fleet_id)
    return report
