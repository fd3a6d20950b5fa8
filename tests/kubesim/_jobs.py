"""The Job controller: batch/v1 Jobs run as kube-controller-manager 1.31 runs them.

For each Job it has seen created or changed (seeded Jobs are left alone, as seeded pods
are), the controller keeps the wanted number of pods: ``min(parallelism, completions -
succeeded)``. Pods are made from the template with ``generateName: <job>-`` (``<job>-<i>-``
and the completion-index annotation, label, hostname and ``JOB_COMPLETION_INDEX`` for
Indexed Jobs), the template's labels and an ``ownerReference`` to the Job (controller,
blockOwnerDeletion); the scheduler and kubelet then take them like any pod, and the
kubelet runs their commands for real (see :mod:`._containers`). Events come from
``job-controller``: SuccessfulCreate, SuccessfulDelete, Completed, BackoffLimitExceeded,
DeadlineExceeded.

Status follows the real controller: ``startTime`` on the first sync, ``active``,
``ready``, ``terminating``, ``succeeded`` and ``failed`` (a pod deleted before it ended
counts as failed), ``uncountedTerminatedPods: {}``, ``completedIndexes``. The end comes
in two steps, as from 1.31 on: first ``SuccessCriteriaMet`` (reason CompletionsReached) or
``FailureTarget`` (BackoffLimitExceeded: more failed pods than ``backoffLimit``, or, with
restartPolicy OnFailure, as many container restarts; DeadlineExceeded: running longer
than ``activeDeadlineSeconds``), when the remaining active pods are deleted; then, once no
pod is left running or terminating, ``Complete`` (with ``completionTime``) or ``Failed``
with the same reason and message. A failed pod (restartPolicy Never) is replaced after a
back-off of ``backoff_base * 2**(failures-1)``, at most ten times the base (the real one
starts at 10 s; here it scales with the kubelet's step). ``suspend: true`` deletes the
active pods and sets ``Suspended``. ``ttlSecondsAfterFinished`` deletes the finished Job
that long after it ended, with Foreground propagation (its pods go first), as the TTL
controller does.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._defaults import prepare_new
from ._errors import ApiError
from ._resources import lookup
from ._store import Event

if TYPE_CHECKING:
    from ._api import SimEmulator

Obj = dict[str, Any]

JOBS = lookup("jobs")
PODS = lookup("pods")
CONTROLLER = "job-controller"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Job was active longer than specified deadline")


def _ts() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _wall(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def find_condition(job: Obj | None, type_: str) -> Obj | None:
    """The Job's condition of this type when its status is True."""
    for c in ((job or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == type_ and c.get("status") == "True":
            return dict(c)
    return None


def has_condition(type_: str) -> Callable[[Obj | None], bool]:
    """A predicate for ``sim.wait_for("jobs", ns, name, has_condition("Complete"))``."""
    return lambda job: find_condition(job, type_) is not None


def job_finished(job: Obj | None) -> bool:
    """Whether a Job has its terminal condition (Complete or Failed)."""
    return find_condition(job, "Complete") is not None or find_condition(job, "Failed") is not None


def controller_of(obj: Obj) -> Obj | None:
    """The ownerReference marked controller, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _restarts(pod: Obj) -> int:
    status = pod.get("status") or {}
    return sum(
        int(cs.get("restartCount") or 0)
        for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or [])
    )


def _index(pod: Obj) -> int | None:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(INDEX_KEY)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def format_indexes(indexes: set[int]) -> str:
    """``completedIndexes`` as the API writes it: ``1,3-5,7``."""
    runs: list[list[int]] = []
    for i in sorted(indexes):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _condition(type_: str, reason: str, message: str, ts: str) -> Obj:
    return {
        "type": type_,
        "status": "True",
        "lastProbeTime": ts,
        "lastTransitionTime": ts,
        "reason": reason,
        "message": message,
    }


@dataclass
class _State:
    """What the controller remembers of one Job (by uid) between syncs."""

    counted: dict[str, str] = field(default_factory=dict)  # pod uid -> phase it was counted as
    gone: dict[str, Obj] = field(default_factory=dict)  # pods removed before they were counted
    succeeded_indexes: set[int] = field(default_factory=set)
    started: float | None = None  # monotonic, for activeDeadlineSeconds
    last_failure: float | None = None  # monotonic, for the back-off
    finished: float | None = None  # monotonic, for ttlSecondsAfterFinished
    wake_at: float | None = None  # a sync already planned for then
    ttl_planned: bool = False


class JobController:
    """Runs the Jobs of one emulator (see the module docstring)."""

    def __init__(
        self, em: SimEmulator, *, delay: float, record_event: Callable[..., Obj], backoff_base: float | None = None
    ):
        self.em = em
        self.delay = delay
        self.backoff_base = delay if backoff_base is None else backoff_base
        self.record_event = record_event
        self._states: dict[str, _State] = {}
        self._pending: set[tuple[str, str]] = set()

    # -- wiring --
    def attach(self) -> None:
        self.em.store.listeners.append(self._on_event)

    def detach(self) -> None:
        with contextlib.suppress(ValueError):
            self.em.store.listeners.remove(self._on_event)

    def reset(self) -> None:
        """Forget every Job (the store was emptied)."""
        self._states.clear()
        self._pending.clear()

    def resync(self) -> None:
        """Sync every Job this controller runs (after a restart: its timers were dropped)."""
        uids = set(self._states)
        for entry in self.em.store.select(JOBS, None, None):
            meta = entry.obj["metadata"]
            if meta.get("uid") in uids:
                self._states[meta["uid"]].wake_at = None
                self._states[meta["uid"]].ttl_planned = False
                self._want_sync(meta["namespace"], meta["name"])

    def _on_event(self, event: Event) -> None:
        if self.em.loop is None or not self.em.loop.is_running():
            return
        meta = event.new.get("metadata") or {}
        if event.rt is JOBS:
            if event.type == "DELETED":
                self._states.pop(str(meta.get("uid")), None)
            else:
                self._want_sync(meta.get("namespace", ""), meta["name"])
            return
        if event.rt is not PODS:
            return
        ref = controller_of(event.new)
        if ref is None or ref.get("kind") != "Job" or ref.get("uid") not in self._states:
            return
        if event.type == "DELETED":
            state = self._states[str(ref["uid"])]
            if meta.get("uid") not in state.counted:
                state.gone[str(meta.get("uid"))] = event.new
        self._want_sync(meta.get("namespace", ""), str(ref.get("name")))

    def _want_sync(self, ns: str, name: str) -> None:
        key = (ns, name)
        loop = self.em.loop
        if key in self._pending or loop is None:
            return
        self._pending.add(key)
        loop.call_soon(self._sync_now, key)

    def _sync_now(self, key: tuple[str, str]) -> None:
        self._pending.discard(key)
        try:
            self._sync(*key)
        except Exception as e:  # a bug here must show in sim.server_errors, not vanish in the loop
            if self.em._errors:
                self.em._errors[-1].append(e)

    def _wake(self, state: _State, ns: str, name: str, at: float) -> None:
        """Plan a sync at monotonic time ``at`` (unless one is planned sooner)."""
        if state.wake_at is not None and state.wake_at <= at and state.wake_at > time.monotonic():
            return
        state.wake_at = at
        self.em.call_later(max(0.0, at - time.monotonic()), lambda: self._want_sync(ns, name))

    # -- pods --
    def _event(self, job: Obj, reason: str, message: str, type_: str = "Normal") -> None:
        self.record_event(job, reason, message, type=type_, source=CONTROLLER)

    def _create_pod(self, job: Obj, index: int | None) -> Obj | None:
        meta, spec = job["metadata"], job.get("spec") or {}
        ns, name = meta["namespace"], meta["name"]
        template = copy.deepcopy(spec.get("template") or {})
        tmeta = template.get("metadata") or {}
        pod_meta: Obj = {
            "generateName": f"{name}-" if index is None else f"{name}-{index}-",
            "namespace": ns,
            "labels": dict(tmeta.get("labels") or {}),
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": name,
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        if tmeta.get("annotations"):
            pod_meta["annotations"] = dict(tmeta["annotations"])
        pod_spec = dict(template.get("spec") or {})
        if index is not None:
            pod_meta["labels"][INDEX_KEY] = str(index)
            pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), INDEX_KEY: str(index)}
            pod_spec.setdefault("hostname", f"{name}-{index}")
            env_var = {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": f"metadata.annotations['{INDEX_KEY}']"}},
            }
            for key in ("initContainers", "containers"):
                if pod_spec.get(key):
                    pod_spec[key] = [{**c, "env": [*(c.get("env") or []), env_var]} for c in pod_spec[key]]
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec}
        try:
            for _ in range(10):
                pod = prepare_new(PODS, body, ns)
                if self.em.store.get(PODS, ns, pod["metadata"]["name"]) is None:
                    break
        except ApiError as e:
            self._event(job, "FailedCreate", f"Error creating: {e.message}", "Warning")
            return None
        stored = self.em.store.put(PODS, pod).obj
        self._event(job, "SuccessfulCreate", f"Created pod: {stored['metadata']['name']}")
        return stored

    def _delete_pod(self, job: Obj, pod: Obj) -> None:
        meta = pod["metadata"]
        with contextlib.suppress(ApiError):
            self.em.delete_object(PODS, meta["namespace"], meta["name"], {}, False)
            self._event(job, "SuccessfulDelete", f"Deleted pod: {meta['name']}")

    # -- the sync --
    def _pods(self, ns: str, uid: str) -> list[Obj]:
        return [e.obj for e in self.em.store.select(PODS, ns, None) if (controller_of(e.obj) or {}).get("uid") == uid]

    def _count(self, state: _State, pods: list[Obj], indexed: bool, tally: list[int], now: float) -> None:
        """Add pods that ended (or went away before they ended) to [succeeded, failed], once each."""

        def count(pod: Obj, phase: str) -> None:
            state.counted[str(pod["metadata"].get("uid"))] = phase
            if phase == "Succeeded":
                tally[0] += 1
                index = _index(pod)
                if indexed and index is not None:
                    state.succeeded_indexes.add(index)
            else:
                tally[1] += 1
                state.last_failure = now

        for pod in pods:
            if _terminal(pod) and pod["metadata"].get("uid") not in state.counted:
                count(pod, str(pod["status"]["phase"]))
        for pod_uid, pod in list(state.gone.items()):
            if pod_uid not in state.counted:  # deleted before it ended: a failure
                count(pod, "Succeeded" if (pod.get("status") or {}).get("phase") == "Succeeded" else "Failed")
        state.gone.clear()

    def _sync(self, ns: str, name: str) -> None:
        entry = self.em.store.get(JOBS, ns, name)
        if entry is None:
            return
        job = entry.obj
        meta = job["metadata"]
        if meta.get("deletionTimestamp"):
            return
        uid = str(meta["uid"])
        state = self._states.setdefault(uid, _State())
        spec = job.get("spec") or {}
        old = job.get("status") or {}
        if job_finished(job):
            self._plan_ttl(job, state)
            return
        now, ts = time.monotonic(), _ts()
        indexed = spec.get("completionMode") == "Indexed"
        tally = [int(old.get("succeeded") or 0), int(old.get("failed") or 0)]
        self._count(state, self._pods(ns, uid), indexed, tally, now)
        conditions = [dict(c) for c in old.get("conditions") or []]
        start = old.get("startTime")
        suspended = next((c for c in conditions if c.get("type") == "Suspended"), None)
        if spec.get("suspend"):
            for pod in self._pods(ns, uid):
                if not _terminal(pod) and not pod["metadata"].get("deletionTimestamp"):
                    self._delete_pod(job, pod)
            if suspended is None or suspended.get("status") != "True":
                conditions = [c for c in conditions if c.get("type") != "Suspended"]
                conditions.append(_condition("Suspended", "JobSuspended", "Job suspended", ts))
            start = None
            state.started = None
        else:
            if suspended is not None and suspended.get("status") == "True":
                suspended.update(
                    {
                        "status": "False",
                        "reason": "JobResumed",
                        "message": "Job resumed",
                        "lastProbeTime": ts,
                        "lastTransitionTime": ts,
                    }
                )
                start = None
            if not start:
                start = ts
                state.started = now
            elif state.started is None:
                wall = _wall(start)
                state.started = now - (time.time() - wall) if wall is not None else now
            self._manage(job, state, spec, conditions, tally, now, ts)
        pods = self._pods(ns, uid)
        self._count(state, pods, indexed, tally, now)  # pods that our deletes removed at once
        active = [p for p in pods if not _terminal(p) and not p["metadata"].get("deletionTimestamp")]
        terminating = [p for p in pods if not _terminal(p) and p["metadata"].get("deletionTimestamp")]
        target = next(
            (
                c
                for c in conditions
                if c.get("type") in ("SuccessCriteriaMet", "FailureTarget") and c.get("status") == "True"
            ),
            None,
        )
        if target is not None and not active and not terminating:
            kind = "Complete" if target["type"] == "SuccessCriteriaMet" else "Failed"
            conditions.append(_condition(kind, target["reason"], target["message"], ts))
            state.finished = now
            if kind == "Complete":
                self._event(job, "Completed", "Job completed")
            else:
                self._event(job, target["reason"], target["message"], "Warning")
        # In the order the API server writes a JobStatus.
        status: Obj = {}
        if conditions:
            status["conditions"] = conditions
        if start:
            status["startTime"] = start
        complete = next((c for c in conditions if c.get("type") == "Complete"), None)
        if complete is not None:
            status["completionTime"] = complete["lastTransitionTime"]
        if active:
            status["active"] = len(active)
        if tally[0]:
            status["succeeded"] = tally[0]
        if tally[1]:
            status["failed"] = tally[1]
        status["terminating"] = len(terminating)
        if indexed:
            status["completedIndexes"] = format_indexes(state.succeeded_indexes)
        status["uncountedTerminatedPods"] = {}
        status["ready"] = sum(1 for p in active if _ready(p))
        if status != old:
            job = self.em.store.put(JOBS, {**job, "status": status}).obj
        if job_finished(job):
            self._plan_ttl(job, state)

    def _manage(
        self, job: Obj, state: _State, spec: Obj, conditions: list[Obj], tally: list[int], now: float, ts: str
    ) -> None:
        """Decide the Job's course for this sync: start its end, or create or delete pods."""
        meta = job["metadata"]
        ns, name = meta["namespace"], meta["name"]
        active = [
            p
            for p in self._pods(ns, str(meta["uid"]))
            if not _terminal(p) and not p["metadata"].get("deletionTimestamp")
        ]
        succeeded, failed = tally
        completions = spec.get("completions")
        parallelism = int(spec["parallelism"]) if spec.get("parallelism") is not None else 1
        indexed = spec.get("completionMode") == "Indexed"
        target = next(
            (
                c
                for c in conditions
                if c.get("type") in ("SuccessCriteriaMet", "FailureTarget") and c.get("status") == "True"
            ),
            None,
        )
        if target is None:
            if indexed:
                done = completions is not None and len(state.succeeded_indexes) >= int(completions)
            elif completions is not None:
                done = succeeded >= int(completions)
            else:
                done = succeeded > 0 and not active
            limit = int(spec["backoffLimit"]) if spec.get("backoffLimit") is not None else 6
            restarts = 0
            if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") == "OnFailure":
                restarts = sum(_restarts(p) for p in active)
            deadline = spec.get("activeDeadlineSeconds")
            started = state.started if state.started is not None else now
            if done:
                target = _condition("SuccessCriteriaMet", *COMPLETIONS_REACHED, ts)
            elif failed > limit or (restarts > 0 and restarts >= max(limit, 1)):
                target = _condition("FailureTarget", *BACKOFF_EXCEEDED, ts)
            elif deadline is not None and now - started >= float(deadline):
                target = _condition("FailureTarget", *DEADLINE_EXCEEDED, ts)
            elif deadline is not None:
                self._wake(state, ns, name, started + float(deadline))
            if target is not None:
                conditions.append(target)
        if target is not None:
            for pod in active:  # what still runs is stopped
                self._delete_pod(job, pod)
            return
        # Keep the wanted number of pods.
        missing: list[int] = []
        if indexed:
            running = {_index(p) for p in active}
            missing = [i for i in range(int(completions or 0)) if i not in state.succeeded_indexes and i not in running]
            want_new = min(parallelism - len(active), len(missing))
        else:
            want = (
                (parallelism if succeeded == 0 else 0)
                if completions is None
                else max(0, min(parallelism, int(completions) - succeeded))
            )
            want_new = want - len(active)
            if want_new < 0:  # parallelism lowered: the newest go first
                newest = sorted(active, key=lambda p: p["metadata"].get("creationTimestamp", ""))[want_new:]
                for pod in newest:
                    self._delete_pod(job, pod)
                return
        if want_new <= 0:
            return
        if failed and state.last_failure is not None:
            back_off = min(self.backoff_base * 2 ** min(failed - 1, 10), self.backoff_base * 10)
            if now < state.last_failure + back_off:
                self._wake(state, ns, name, state.last_failure + back_off)
                return
        for i in range(want_new):
            self._create_pod(job, missing[i] if indexed else None)

    def _plan_ttl(self, job: Obj, state: _State) -> None:
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None or state.ttl_planned:
            return
        meta = job["metadata"]
        if state.finished is not None:
            remaining = state.finished + float(ttl) - time.monotonic()
        else:  # finished before this controller knew it: go by the condition's time
            cond = find_condition(job, "Complete") or find_condition(job, "Failed") or {}
            wall = _wall(cond.get("lastTransitionTime"))
            remaining = (wall + float(ttl) - time.time()) if wall is not None else float(ttl)
        state.ttl_planned = True
        ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
        self.em.call_later(max(0.0, remaining), lambda: self._expire(ns, name, uid))

    def _expire(self, ns: str, name: str, uid: str) -> None:
        entry = self.em.store.get(JOBS, ns, name)
        if entry is None or entry.obj["metadata"].get("uid") != uid or entry.obj["metadata"].get("deletionTimestamp"):
            return
        with contextlib.suppress(ApiError):
            self.em.delete_object(JOBS, ns, name, {"propagationPolicy": "Foreground"}, False)
