"""A small scheduler and kubelet for the emulated cluster.

Scheduler: a pod without a node is bound to a node that passes, in the real scheduler's
order, NodeUnschedulable, TaintToleration (NoSchedule/NoExecute), NodeAffinity
(nodeSelector and required node affinity) and NodeResourcesFit (cpu, memory, pods and
extended resources such as ``nvidia.com/gpu``). A pod's request follows the rule for
native sidecars: max(largest one-shot init container plus the sidecars started before it,
app containers plus all sidecars). When no node fits, the pod keeps
PodScheduled=False/Unschedulable and gets a ``FailedScheduling`` event worded like the
real scheduler's (reason counts sorted, then the preemption line). Pending pods are
tried again whenever a pod goes away or finishes, or a node changes.

Kubelet: a bound pod goes Pending (ContainerCreating) -> Running, with the events
Scheduled, Pulling, Pulled, Created, Started, container statuses, conditions, pod IP and
start time, each step ``delay`` seconds apart. What a container "does" comes from its
command: ``false`` exits 1, ``true`` exits 0, ``sh -c "exit N"`` exits N, ``sleep N`` runs N
seconds, anything else runs until deleted; the pod annotations ``kubesim/exit-code`` and
``kubesim/run-seconds`` override that. Pods for which ``_containers.runs_for_real`` holds
(those of a Job) run their commands for real instead, as local processes whose output is
the pod log (see :mod:`._containers`); a program that cannot start ends its container with
StartError (exit code 128). Before containers start, the pod's volumes are written into its
sandbox; a missing ConfigMap or Secret keeps the pod in ContainerCreating with FailedMount
events until it appears. Non-zero exits give CrashLoopBackOff with restarts
(restartPolicy Always/OnFailure) or a Failed pod (Never). Images whose name contains
``does-not-exist`` give ErrImagePull then ImagePullBackOff. ``activeDeadlineSeconds`` fails
the pod with reason DeadlineExceeded. Deleting a pod stops its containers, then removes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import itertools
import random
import re
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ._containers import (
    ConfigError,
    ContainerRuntime,
    MountError,
    Process,
    StartError,
    container_argv,
    runs_for_real,
)
from ._defaults import rfc3339
from ._quantity import parse_quantity
from ._resources import lookup
from ._store import Event

if TYPE_CHECKING:
    from ._api import SimEmulator

Obj = dict[str, Any]

PODS = lookup("pods")
NODES = lookup("nodes")
SCHEDULER = "default-scheduler"
EXIT_CODE_ANNOTATION = "kubesim/exit-code"
RUN_SECONDS_ANNOTATION = "kubesim/run-seconds"
_UNRESOLVABLE = (
    "node(s) were unschedulable",
    "node(s) didn't match Pod's node affinity/selector",
    "node(s) had untolerated taint",
)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _ts() -> str:
    return rfc3339(_now())


# ---- requests and fit ---------------------------------------------------------------------------


def _container_requests(c: Obj) -> dict[str, Decimal]:
    res = c.get("resources") or {}
    merged = dict(res.get("limits") or {})
    merged.update(res.get("requests") or {})
    out: dict[str, Decimal] = {}
    for name, qty in merged.items():
        with contextlib.suppress(ValueError):
            out[name] = parse_quantity(qty)
    return out


def _add(a: dict[str, Decimal], b: dict[str, Decimal]) -> dict[str, Decimal]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, Decimal(0)) + v
    return out


def _max(a: dict[str, Decimal], b: dict[str, Decimal]) -> dict[str, Decimal]:
    out = dict(a)
    for k, v in b.items():
        out[k] = max(out.get(k, Decimal(0)), v)
    return out


def pod_requests(pod: Obj) -> dict[str, Decimal]:
    """Effective requests of a pod, with the scheduler's rule for native sidecars."""
    spec = pod.get("spec") or {}
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for c in spec.get("initContainers") or []:
        req = _container_requests(c)
        if c.get("restartPolicy") == "Always":
            sidecars = _add(sidecars, req)
        else:
            init_peak = _max(init_peak, _add(sidecars, req))
    apps: dict[str, Decimal] = {}
    for c in spec.get("containers") or []:
        apps = _add(apps, _container_requests(c))
    total = _max(init_peak, _add(apps, sidecars))
    total["pods"] = Decimal(1)
    return total


def _tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        op = t.get("operator", "Equal")
        if op == "Exists":
            if not t.get("key") or t.get("key") == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _expr_matches(expr: Obj, labels: dict[str, str]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
    have = labels.get(key)
    if op == "In":
        return have is not None and have in values
    if op == "NotIn":
        return have is None or have not in values
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    if op in ("Gt", "Lt") and have is not None and values:
        try:
            return int(have) > int(values[0]) if op == "Gt" else int(have) < int(values[0])
        except ValueError:
            return False
    return False


def _affinity_matches(pod: Obj, node: Obj) -> bool:
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    for term in terms:
        fields = {"metadata.name": node["metadata"]["name"]}
        if all(_expr_matches(e, labels) for e in term.get("matchExpressions") or []) and all(
            _expr_matches(e, fields) for e in term.get("matchFields") or []
        ):
            return True
    return False


def _untolerated_taint(pod: Obj, node: Obj) -> Obj | None:
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(tolerations, taint):
            return dict(taint)
    return None


def _holds_resources(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def node_usage(pods: list[Obj]) -> dict[str, dict[str, Decimal]]:
    used: dict[str, dict[str, Decimal]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and _holds_resources(pod):
            used[node] = _add(used.get(node, {}), pod_requests(pod))
    return used


def fit_reasons(pod: Obj, node: Obj, used: dict[str, Decimal], request: dict[str, Decimal]) -> list[str]:
    """Why ``pod`` cannot go to ``node`` (empty: it fits), first failing filter only."""
    if (node.get("spec") or {}).get("unschedulable"):
        return ["node(s) were unschedulable"]
    taint = _untolerated_taint(pod, node)
    if taint is not None:
        return [f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"]
    if not _affinity_matches(pod, node):
        return ["node(s) didn't match Pod's node affinity/selector"]
    allocatable = {k: parse_quantity(v) for k, v in ((node.get("status") or {}).get("allocatable") or {}).items()}
    reasons = []
    for name, want in sorted(request.items()):
        if want <= 0:
            continue
        free = allocatable.get(name, Decimal(0)) - used.get(name, Decimal(0))
        if want > free:
            reasons.append("Too many pods" if name == "pods" else f"Insufficient {name}")
    return reasons


def unschedulable_message(n_nodes: int, per_node: list[list[str]]) -> str:
    """The scheduler's FitError text, preemption line included."""
    if n_nodes == 0:
        return "no nodes available to schedule pods"
    counts: dict[str, int] = {}
    preemption: dict[str, int] = {}
    for reasons in per_node:
        for r in reasons:
            counts[r] = counts.get(r, 0) + 1
        resolvable = not any(r.startswith(_UNRESOLVABLE) for r in reasons)
        key = (
            "No preemption victims found for incoming pod" if resolvable else "Preemption is not helpful for scheduling"
        )
        preemption[key] = preemption.get(key, 0) + 1
    first = ", ".join(sorted(f"{v} {k}" for k, v in counts.items()))
    second = ", ".join(sorted(f"{v} {k}" for k, v in preemption.items()))
    return f"0/{n_nodes} nodes are available: {first}. preemption: 0/{n_nodes} nodes are available: {second}."


# ---- what a container does -------------------------------------------------------------------------


def container_behaviour(pod: Obj, container: Obj) -> tuple[int | None, float | None]:
    """(exit code or None for "runs until stopped", seconds before it exits)."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    name = container.get("name", "")
    code_s = ann.get(f"{EXIT_CODE_ANNOTATION}.{name}", ann.get(EXIT_CODE_ANNOTATION))
    secs_s = ann.get(f"{RUN_SECONDS_ANNOTATION}.{name}", ann.get(RUN_SECONDS_ANNOTATION))
    if code_s is not None:
        return int(code_s), float(secs_s) if secs_s is not None else 0.0
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    if not argv:
        return None, None
    prog = argv[0].rsplit("/", 1)[-1]
    if prog == "false":
        return 1, 0.0
    if prog == "true":
        return 0, 0.0
    if prog in ("sh", "bash") and len(argv) >= 3 and argv[1] == "-c":
        m = re.fullmatch(r"\s*exit\s+(\d+)\s*", argv[2])
        if m:
            return int(m.group(1)), 0.0
    if prog == "sleep" and len(argv) >= 2:
        try:
            return 0, float(argv[1])
        except ValueError:
            return None, None
    return None, None


# ---- the scheduler and kubelet -------------------------------------------------------------------------


class Kubelet:
    """Scheduler and kubelet for one emulator (see the module docstring)."""

    def __init__(
        self,
        em: SimEmulator,
        *,
        delay: float,
        record_event: Callable[..., Obj],
        kill_pod: Callable[[str, str], None],
        runtime: ContainerRuntime | None = None,
    ):
        self.em = em
        self.delay = delay
        self.record_event = record_event
        self.kill_pod = kill_pod
        self.runtime = runtime  # volumes and real container processes; None: scripted only
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._procs: dict[tuple[str, str], Process] = {}  # (pod uid, container): started, not yet awaited
        self._schedule_soon = False
        self._ips = itertools.count(2)
        self._rng = random.Random(11)

    # -- wiring --
    def attach(self) -> None:
        self.em.store.listeners.append(self._on_event)
        self.em.pod_termination_hook = self._on_pod_terminating

    def detach(self) -> None:
        with contextlib.suppress(ValueError):
            self.em.store.listeners.remove(self._on_event)
        self.em.pod_termination_hook = None
        self.cancel_all()

    def cancel_all(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        self._tasks.clear()
        for proc in self._procs.values():
            proc.close()
        self._procs.clear()

    def _loop(self) -> asyncio.AbstractEventLoop:
        loop = self.em.loop
        assert loop is not None
        return loop

    def _on_event(self, event: Event) -> None:
        if self.em.loop is None or not self.em.loop.is_running():
            return
        if event.rt is NODES:
            self._want_schedule()
            return
        if event.rt is not PODS:
            return
        pod = event.new
        spec = pod.get("spec") or {}
        meta = pod["metadata"]
        if event.type == "DELETED":
            self._cancel(meta.get("uid", ""))
            self._want_schedule()
            return
        if meta.get("deletionTimestamp"):
            return
        if not spec.get("nodeName"):
            if event.type == "ADDED" and spec.get("schedulerName", SCHEDULER) == SCHEDULER:
                self._want_schedule()
            return
        was_bound = bool(((event.old or {}).get("spec") or {}).get("nodeName"))
        status = pod.get("status") or {}
        if not was_bound and status.get("phase", "Pending") == "Pending" and not status.get("containerStatuses"):
            uid = meta["uid"]
            if uid not in self._tasks:
                self._tasks[uid] = self._loop().create_task(self._run_pod(meta["namespace"], meta["name"], uid))
        if event.old is not None and _holds_resources(event.old) and not _holds_resources(pod):
            self._want_schedule()

    def _cancel(self, uid: str) -> None:
        task = self._tasks.pop(uid, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        for key in [k for k in self._procs if k[0] == uid]:
            self._procs.pop(key).close()

    # -- scheduler --
    def _want_schedule(self) -> None:
        if not self._schedule_soon:
            self._schedule_soon = True
            self._loop().call_soon(self._schedule_pending)

    def _schedule_pending(self) -> None:
        self._schedule_soon = False
        store = self.em.store
        pods = [e.obj for e in store.select(PODS, None, None)]
        pending = sorted(
            (
                p
                for p in pods
                if not (p.get("spec") or {}).get("nodeName")
                and not p["metadata"].get("deletionTimestamp")
                and (p.get("spec") or {}).get("schedulerName", SCHEDULER) == SCHEDULER
                and (p.get("status") or {}).get("phase", "Pending") == "Pending"
            ),
            key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]),
        )
        if not pending:
            return
        nodes = [e.obj for e in store.select(NODES, None, None)]
        used = node_usage(pods)
        for pod in pending:
            request = pod_requests(pod)
            per_node = []
            feasible = []
            for node in nodes:
                name = node["metadata"]["name"]
                reasons = fit_reasons(pod, node, used.get(name, {}), request)
                per_node.append(reasons)
                if not reasons:
                    feasible.append(node)
            if feasible:
                target = min(feasible, key=lambda n: self._score(n, used, request))
                self._bind(pod, target["metadata"]["name"])
                used[target["metadata"]["name"]] = _add(used.get(target["metadata"]["name"], {}), request)
            else:
                self._unschedulable(pod, unschedulable_message(len(nodes), per_node))

    @staticmethod
    def _score(node: Obj, used: dict[str, dict[str, Decimal]], request: dict[str, Decimal]) -> tuple[Decimal, str]:
        """Lower is better: the fraction of requested resources left in use (least allocated)."""
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        name = node["metadata"]["name"]
        frac = Decimal(0)
        for res, want in request.items():
            if res == "pods" or want <= 0 or res not in allocatable:
                continue
            total = parse_quantity(allocatable[res])
            if total > 0:
                frac += (used.get(name, {}).get(res, Decimal(0)) + want) / total
        return frac, name

    def _bind(self, pod: Obj, node: str) -> None:
        meta = pod["metadata"]
        new = dict(pod)
        new["spec"] = {**pod["spec"], "nodeName": node}
        status = dict(pod.get("status") or {})
        status["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": _ts()}
        ]
        new["status"] = status
        self.em.store.put(PODS, new)
        self.record_event(
            new, "Scheduled", f"Successfully assigned {meta['namespace']}/{meta['name']} to {node}", source=SCHEDULER
        )

    def _unschedulable(self, pod: Obj, message: str) -> None:
        status = dict(pod.get("status") or {})
        cond = {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": _ts(),
            "reason": "Unschedulable",
            "message": message,
        }
        old = [c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"]
        if not old or old[0].get("message") != message:
            status["conditions"] = [cond]
            self.em.store.put(PODS, {**pod, "status": status})
        self.record_event(pod, "FailedScheduling", message, type="Warning", source=SCHEDULER)

    # -- kubelet --
    def _current(self, ns: str, name: str, uid: str) -> Obj | None:
        entry = self.em.store.get(PODS, ns, name)
        if entry is None or entry.obj["metadata"].get("uid") != uid:
            return None
        return entry.obj

    def _update_status(self, pod: Obj, status: Obj) -> Obj:
        return self.em.store.put(PODS, {**pod, "status": status}).obj

    def _event(
        self, pod: Obj, reason: str, message: str, *, type: str = "Normal", field_path: str | None = None
    ) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        self.record_event(pod, reason, message, type=type, source="kubelet", host=node, field_path=field_path)

    def _image_id(self, image: str) -> str:
        digest = hashlib.sha256(image.encode()).hexdigest()
        return f"{image.split(':')[0].split('@')[0]}@sha256:{digest}"

    def _container_id(self) -> str:
        return f"containerd://{self._rng.getrandbits(256):064x}"

    def _status_for(
        self,
        c: Obj,
        state: Obj,
        *,
        ready: bool = False,
        started: bool = False,
        restarts: int = 0,
        last: Obj | None = None,
    ) -> Obj:
        cs: Obj = {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "ready": ready,
            "started": started,
            "restartCount": restarts,
            "state": state,
            "lastState": last or {},
        }
        if "running" in state or "terminated" in state:
            cs["imageID"] = self._image_id(c.get("image", ""))
            cs["containerID"] = self._container_id()
        return cs

    async def _sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def _run_pod(self, ns: str, name: str, uid: str) -> None:
        try:
            await self._pod_lifecycle(ns, name, uid)
        except asyncio.CancelledError:
            pass
        finally:
            if self._tasks.get(uid) is asyncio.current_task():
                self._tasks.pop(uid, None)

    async def _pod_lifecycle(self, ns: str, name: str, uid: str) -> None:
        await self._sleep(self.delay)
        pod = self._current(ns, name, uid)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        spec = pod["spec"]
        if not await self._mount_volumes(ns, name, uid):
            return
        pod = self._current(ns, name, uid)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        node_entry = self.em.store.get(NODES, None, spec["nodeName"])
        host_ip = "10.0.0.1"
        if node_entry is not None:
            for addr in (node_entry.obj.get("status") or {}).get("addresses") or []:
                if addr.get("type") == "InternalIP":
                    host_ip = addr["address"]
        n = next(self._ips)
        pod_ip = f"10.0.{200 + n // 250}.{n % 250 + 2}"
        inits: list[Obj] = spec.get("initContainers") or []
        apps: list[Obj] = spec.get("containers") or []
        start_time = (pod.get("status") or {}).get("startTime") or _ts()
        init_waiting = {"waiting": {"reason": "PodInitializing"}}
        app_waiting = {"waiting": {"reason": "PodInitializing" if inits else "ContainerCreating"}}
        status: Obj = dict(pod.get("status") or {})
        status.update(
            {
                "phase": "Pending",
                "hostIP": host_ip,
                "hostIPs": [{"ip": host_ip}],
                "podIP": pod_ip,
                "podIPs": [{"ip": pod_ip}],
                "startTime": start_time,
                "conditions": self._conditions(
                    initialized=not inits, ready=False, scheduled=True, not_ready=[c["name"] for c in apps]
                ),
                "containerStatuses": [self._status_for(c, app_waiting) for c in apps],
            }
        )
        if inits:
            status["initContainerStatuses"] = [self._status_for(c, init_waiting) for c in inits]
        pod = self._update_status(pod, status)
        deadline = spec.get("activeDeadlineSeconds")
        if deadline:
            self._loop().call_later(float(deadline), lambda: self._deadline(ns, name, uid))

        # Init containers, in order: one-shot ones must finish, sidecars must start.
        for i, c in enumerate(inits):
            ok = await self._start_container(ns, name, uid, c, f"spec.initContainers{{{c['name']}}}", init=i)
            if not ok:
                return
        # App containers.
        for c in apps:
            pod = self._current(ns, name, uid)
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                return
            ok = await self._start_container(ns, name, uid, c, f"spec.containers{{{c['name']}}}", init=None)
            if not ok:
                return
        pod = self._current(ns, name, uid)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        status = dict(pod["status"])
        status["phase"] = "Running"
        status["conditions"] = self._conditions(initialized=True, ready=True, scheduled=True)
        status["containerStatuses"] = [{**cs, "ready": True} for cs in status["containerStatuses"]]
        if inits:
            status["initContainerStatuses"] = [
                {**cs, "ready": "running" in cs["state"]} for cs in status["initContainerStatuses"]
            ]
        pod = self._update_status(pod, status)
        # Containers that end by themselves.
        waits = []
        for c in apps:
            proc = self._procs.pop((uid, c["name"]), None)
            if proc is not None:
                waits.append(self._process_ends(ns, name, uid, c, proc))
                continue
            code, seconds = container_behaviour(pod, c)
            if code is not None:
                waits.append(self._container_ends(ns, name, uid, c, code, seconds or 0.0))
        if waits:
            await asyncio.gather(*waits)

    def _conditions(
        self,
        *,
        initialized: bool,
        ready: bool,
        scheduled: bool,
        not_ready: list[str] | None = None,
        reason: str | None = None,
    ) -> list[Obj]:
        ts = _ts()

        def cond(t: str, ok: bool, why: str | None = None, msg: str | None = None) -> Obj:
            c: Obj = {"type": t, "status": "True" if ok else "False", "lastProbeTime": None, "lastTransitionTime": ts}
            if not ok and why:
                c["reason"] = why
                if msg:
                    c["message"] = msg
            return c

        unready = f"containers with unready status: [{' '.join(not_ready or [])}]"
        return [
            cond("PodReadyToStartContainers", True),
            cond("Initialized", initialized, "ContainersNotInitialized", "containers with incomplete status: []"),
            cond("Ready", ready, reason or "ContainersNotReady", unready if not reason else None),
            cond("ContainersReady", ready, reason or "ContainersNotReady", unready if not reason else None),
            cond("PodScheduled", scheduled),
        ]

    def _set_container(self, pod: Obj, cname: str, init: bool, cs: Obj) -> Obj:
        key = "initContainerStatuses" if init else "containerStatuses"
        status = dict(pod["status"])
        status[key] = [cs if s["name"] == cname else s for s in status.get(key) or []]
        return self._update_status(pod, status)

    async def _start_container(self, ns: str, name: str, uid: str, c: Obj, field_path: str, init: int | None) -> bool:
        """Pull, create and start one container; False when the pod stops progressing."""
        pod = self._current(ns, name, uid)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return False
        image = c.get("image", "")
        is_init = init is not None
        self._event(pod, "Pulling", f'Pulling image "{image}"', field_path=field_path)
        await self._sleep(self.delay / 2)
        pod = self._current(ns, name, uid)
        if pod is None:
            return False
        if "does-not-exist" in image:
            why = (
                f'failed to pull and unpack image "{image}": failed to resolve reference "{image}": {image}: not found'
            )
            self._event(
                pod,
                "Failed",
                f'Failed to pull image "{image}": rpc error: code = NotFound desc = {why}',
                type="Warning",
                field_path=field_path,
            )
            self._event(pod, "Failed", "Error: ErrImagePull", type="Warning", field_path=field_path)
            pod = self._set_container(
                pod,
                c["name"],
                is_init,
                self._status_for(
                    c, {"waiting": {"reason": "ErrImagePull", "message": f"rpc error: code = NotFound desc = {why}"}}
                ),
            )
            await self._sleep(self.delay)
            pod = self._current(ns, name, uid)
            if pod is None:
                return False
            self._event(pod, "BackOff", f'Back-off pulling image "{image}"', field_path=field_path)
            self._event(pod, "Failed", "Error: ImagePullBackOff", type="Warning", field_path=field_path)
            self._set_container(
                pod,
                c["name"],
                is_init,
                self._status_for(
                    c, {"waiting": {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{image}"'}}
                ),
            )
            return False
        size = 100_000_000 + self._rng.randrange(900_000_000)
        self._event(
            pod,
            "Pulled",
            f'Successfully pulled image "{image}" in 1.204s (1.204s including waiting). Image size: {size} bytes.',
            field_path=field_path,
        )
        self._event(pod, "Created", f"Created container {c['name']}", field_path=field_path)
        proc: Process | None = None
        if self._runs_for_real(pod, c):
            started = await self._spawn(ns, name, uid, c, field_path)
            if not isinstance(started, Process):
                if started is not None:
                    await self._container_failed(ns, name, uid, c, 128, init=is_init, term_extra=started, real=True)
                return False
            proc = started
            self._procs[(uid, c["name"])] = proc
        self._event(pod, "Started", f"Started container {c['name']}", field_path=field_path)
        running = {"running": {"startedAt": proc.started_at if proc else _ts()}}
        sidecar = is_init and c.get("restartPolicy") == "Always"
        pod = self._set_container(pod, c["name"], is_init, self._status_for(c, running, started=True, ready=sidecar))
        if is_init and not sidecar:
            if proc is not None:
                self._procs.pop((uid, c["name"]), None)
                code = await self._wait_process(proc)
            else:
                behaviour, seconds = container_behaviour(pod, c)
                code = 0 if behaviour is None else behaviour
                await self._sleep(max(seconds or 0.0, self.delay / 2))
            pod = self._current(ns, name, uid)
            if pod is None:
                return False
            term = {
                "terminated": {
                    "exitCode": code,
                    "reason": "Completed" if code == 0 else "Error",
                    "startedAt": running["running"]["startedAt"],
                    "finishedAt": _ts(),
                }
            }
            pod = self._set_container(pod, c["name"], True, self._status_for(c, term))
            if code != 0:
                final = await self._container_failed(
                    ns,
                    name,
                    uid,
                    c,
                    code,
                    init=True,
                    real=proc is not None,
                    term_extra={"startedAt": term["terminated"]["startedAt"]},
                )
                pod = self._current(ns, name, uid)
                if final != 0 or pod is None:
                    return False
            if init == len(pod["spec"].get("initContainers") or []) - 1 or all(
                s.get("restartPolicy") == "Always" for s in pod["spec"]["initContainers"][(init or 0) + 1 :]
            ):
                status = dict(pod["status"])
                status["conditions"] = self._conditions(
                    initialized=True,
                    ready=False,
                    scheduled=True,
                    not_ready=[x["name"] for x in pod["spec"]["containers"]],
                )
                self._update_status(pod, status)
        else:
            await self._sleep(self.delay / 2)
        return True

    async def _container_ends(self, ns: str, name: str, uid: str, c: Obj, code: int, seconds: float) -> None:
        await self._sleep(max(seconds, self.delay / 4))
        await self._container_failed(ns, name, uid, c, code, init=False)

    async def _container_failed(
        self,
        ns: str,
        name: str,
        uid: str,
        c: Obj,
        code: int,
        *,
        init: bool,
        term_extra: Obj | None = None,
        real: bool = False,
    ) -> int | None:
        """A container exited: restart it with back-off, or finish the pod, per restartPolicy.

        ``term_extra`` adds to the terminated state (a real process's startedAt, StartError);
        ``real`` restarts run the command again as a process. Returns the exit code it ended
        with (a restarted init container may end well), or None when the pod went away.
        """
        restarts = 0
        extra = term_extra or {}
        while True:
            pod = self._current(ns, name, uid)
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                return None
            policy = pod["spec"].get("restartPolicy", "Always")
            started = _ts()
            term = {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": started,
                "finishedAt": _ts(),
                **extra,
            }
            restart = (
                policy == "Always"
                or (policy == "OnFailure" and code != 0)
                or (init and code != 0 and policy != "Never")
            )
            if not restart:
                cs = self._status_for(c, {"terminated": term}, restarts=restarts)
                pod = self._set_container(pod, c["name"], init, cs)
                self._finish_if_done(pod, init_failed=init and code != 0)
                self.em.wake_log_followers()  # a followed log ends with its container
                return code
            restarts += 1
            back_off = min(self.delay * (2 ** (restarts - 1)), self.delay * 10)
            waiting = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {int(10 * 2 ** (restarts - 1))}s restarting failed "
                    f"container={c['name']} pod={name}_{ns}({uid})",
                }
            }
            cs = self._status_for(c, waiting, restarts=restarts, last={"terminated": term})
            pod = self._set_container(pod, c["name"], init, cs)
            status = dict(pod["status"])
            status["conditions"] = self._conditions(
                initialized=not init, ready=False, scheduled=True, not_ready=[c["name"]]
            )
            pod = self._update_status(pod, status)
            field_path = f"spec.{'initContainers' if init else 'containers'}{{{c['name']}}}"
            self._event(
                pod,
                "BackOff",
                f"Back-off restarting failed container {c['name']} in pod {name}_{ns}({uid})",
                type="Warning",
                field_path=field_path,
            )
            await self._sleep(back_off)
            pod = self._current(ns, name, uid)
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                return None
            self._event(
                pod,
                "Pulled",
                f'Container image "{c.get("image", "")}" already present on machine',
                field_path=field_path,
            )
            self._event(pod, "Created", f"Created container {c['name']}", field_path=field_path)
            if real:
                again = await self._rerun(
                    ns, name, uid, c, field_path, init=init, restarts=restarts, last={"terminated": term}
                )
                if again is None:
                    return None
                code, extra = again
                continue
            self._event(pod, "Started", f"Started container {c['name']}", field_path=field_path)
            cs = self._status_for(
                c, {"running": {"startedAt": _ts()}}, started=True, restarts=restarts, last={"terminated": term}
            )
            self._set_container(pod, c["name"], init, cs)
            await self._sleep(max(self.delay / 4, 0.01))

    # -- containers run for real (see _containers) --
    def _runs_for_real(self, pod: Obj, c: Obj) -> bool:
        return self.runtime is not None and runs_for_real(pod) and bool(container_argv(c))

    async def _mount_volumes(self, ns: str, name: str, uid: str) -> bool:
        """Write the pod's volumes; while one cannot be set up, report FailedMount and retry
        (with back-off). False when the pod went away meanwhile."""
        back_off = self.delay
        reported = False
        while True:
            pod = self._current(ns, name, uid)
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                return False
            if self.runtime is None or not (pod.get("spec") or {}).get("volumes"):
                return True
            try:
                self.runtime.mount(pod)
                return True
            except MountError as e:
                message = str(e)
            if not reported:  # no sandbox yet: no pod IP, containers still being created
                reported = True
                apps = [x["name"] for x in pod["spec"].get("containers") or []]
                inits = pod["spec"].get("initContainers") or []
                conditions = self._conditions(initialized=not inits, ready=False, scheduled=True, not_ready=apps)
                conditions[0] = {**conditions[0], "status": "False"}
                status = {
                    **(pod.get("status") or {}),
                    "phase": "Pending",
                    "startTime": _ts(),
                    "conditions": conditions,
                    "containerStatuses": [
                        self._status_for(x, {"waiting": {"reason": "ContainerCreating"}})
                        for x in pod["spec"].get("containers") or []
                    ],
                }
                if inits:
                    status["initContainerStatuses"] = [
                        self._status_for(x, {"waiting": {"reason": "PodInitializing"}}) for x in inits
                    ]
                pod = self._update_status(pod, status)
            self._event(pod, "FailedMount", message, type="Warning")
            await self._sleep(back_off)
            back_off = min(back_off * 2, self.delay * 20)

    async def _spawn(self, ns: str, name: str, uid: str, c: Obj, field_path: str) -> Process | Obj | None:
        """Start a container's command: the process, or the terminated-state fields of a
        container that could not start (StartError), or None when the pod went away. A
        missing ConfigMap or Secret in its environment is CreateContainerConfigError, retried."""
        assert self.runtime is not None
        back_off = self.delay
        while True:
            pod = self._current(ns, name, uid)
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                return None
            try:
                return await self.runtime.start(pod, c)
            except StartError as e:
                self._event(pod, "Failed", f"Error: {e}", type="Warning", field_path=field_path)
                return {"reason": "StartError", "message": str(e), "startedAt": "1970-01-01T00:00:00Z"}
            except ConfigError as e:  # tried again until the ConfigMap or Secret is there
                self._event(pod, "Failed", f"Error: {e}", type="Warning", field_path=field_path)
                init = any(x.get("name") == c["name"] for x in pod["spec"].get("initContainers") or [])
                self._set_container(
                    pod,
                    c["name"],
                    init,
                    self._status_for(c, {"waiting": {"reason": "CreateContainerConfigError", "message": str(e)}}),
                )
            await self._sleep(back_off)
            back_off = min(back_off * 2, self.delay * 20)

    async def _wait_process(self, proc: Process) -> int:
        assert self.runtime is not None
        return await self.runtime.wait(proc)

    async def _process_ends(self, ns: str, name: str, uid: str, c: Obj, proc: Process) -> None:
        code = await self._wait_process(proc)
        await self._container_failed(
            ns, name, uid, c, code, init=False, real=True, term_extra={"startedAt": proc.started_at}
        )

    async def _rerun(
        self, ns: str, name: str, uid: str, c: Obj, field_path: str, *, init: bool, restarts: int, last: Obj
    ) -> tuple[int, Obj] | None:
        """Run a restarted container's command again: (exit code, terminated-state fields),
        or None when the pod went away."""
        started = await self._spawn(ns, name, uid, c, field_path)
        if started is None:
            return None
        if not isinstance(started, Process):
            return 128, started
        pod = self._current(ns, name, uid)
        if pod is not None:
            self._event(pod, "Started", f"Started container {c['name']}", field_path=field_path)
            cs = self._status_for(
                c, {"running": {"startedAt": started.started_at}}, started=True, restarts=restarts, last=last
            )
            self._set_container(pod, c["name"], init, cs)
        return await self._wait_process(started), {"startedAt": started.started_at}

    def _finish_if_done(self, pod: Obj, *, init_failed: bool) -> None:
        status = dict(pod["status"])
        states = [cs.get("state") or {} for cs in status.get("containerStatuses") or []]
        if not init_failed and not all("terminated" in s for s in states):
            return
        failed = init_failed or any(s["terminated"].get("exitCode", 0) != 0 for s in states)
        status["phase"] = "Failed" if failed else "Succeeded"
        status["conditions"] = self._conditions(
            initialized=not init_failed, ready=False, scheduled=True, reason="PodFailed" if failed else "PodCompleted"
        )
        status["containerStatuses"] = [
            {
                **cs,
                "ready": False,
                "started": False,
                "state": cs["state"]
                if "terminated" in (cs.get("state") or {})
                else {"terminated": {"exitCode": 137, "reason": "Error", "finishedAt": _ts()}},
            }
            for cs in status.get("containerStatuses") or []
        ]
        self._update_status(pod, status)

    def _deadline(self, ns: str, name: str, uid: str) -> None:
        pod = self._current(ns, name, uid)
        if pod is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        self._cancel(uid)
        self.kill_pod(ns, name)
        message = "Pod was active on the node longer than the specified deadline"
        status = dict(pod["status"])
        status.update({"phase": "Failed", "reason": "DeadlineExceeded", "message": message})
        status["conditions"] = self._conditions(initialized=True, ready=False, scheduled=True, reason="PodFailed")
        for key in ("containerStatuses", "initContainerStatuses"):
            if key in status:
                status[key] = [
                    {
                        **cs,
                        "ready": False,
                        "started": False,
                        "state": cs["state"]
                        if "terminated" in (cs.get("state") or {})
                        else {"terminated": {"exitCode": 137, "reason": "Error", "finishedAt": _ts()}},
                    }
                    for cs in status[key]
                ]
        pod = self._update_status(pod, status)
        self._event(pod, "DeadlineExceeded", message)

    # -- deletion --
    def _on_pod_terminating(self, pod: Obj) -> None:
        meta = pod["metadata"]
        ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
        self._cancel(uid)
        self.kill_pod(ns, name)
        current = self._current(ns, name, uid)
        if current is None or not current["metadata"].get("deletionTimestamp"):
            return  # already removed
        for key, field in (("containerStatuses", "containers"), ("initContainerStatuses", "initContainers")):
            for cs in (current.get("status") or {}).get(key) or []:
                if "running" in (cs.get("state") or {}):
                    self._event(
                        current,
                        "Killing",
                        f"Stopping container {cs['name']}",
                        field_path=f"spec.{field}{{{cs['name']}}}",
                    )
        self.em.call_later(self.delay, lambda: self.em.finalize_pod(ns, name, uid))
