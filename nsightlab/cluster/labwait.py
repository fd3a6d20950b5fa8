"""Waiting on a lab pod: until it is Ready (a watch of the pod, resumed after drops, and
its Events shown as they come), until it is gone, and the error that says why it never
became Ready."""

from __future__ import annotations

import queue
import threading
import time
from typing import TYPE_CHECKING, Any

from nsightlab.cluster.answers import Forbidden, Gone
from nsightlab.cluster.labgpus import free_gpus
from nsightlab.cluster.outage import Outage
from nsightlab.cluster.permissions import skipped_note
from nsightlab.errors import ClusterError, PodNotReadyError
from nsightlab.k8s import pods as r

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube
    from nsightlab.env import Env

# Waiting reasons that will not fix themselves: stop waiting at once.
FATAL_WAITING = {
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
}


class PodWaiter:
    """Follows one pod with a watch (resuming after drops) and its events, until Ready."""

    def __init__(
        self,
        kube: Kube,
        env: Env,
        namespace: str,
        name: str,
        uid: str,
        resource_version: str,
        *,
        create_command: str = "nsightlab create",
    ) -> None:
        self.kube = kube
        self.create_command = create_command
        self.env = env
        self.namespace = namespace
        self.name = name
        self.uid = uid
        self.rv = resource_version
        self.pod: dict[str, Any] | None = None
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen_events: list[dict[str, Any]] = []
        self._stop = threading.Event()

    def _event_thread(self) -> None:
        field = f"involvedObject.name={self.name},involvedObject.kind=Pod"
        rv: str | None = None
        while not self._stop.is_set():
            try:
                for etype, ev in self.kube.watch_events(
                    self.namespace, field_selector=field, resource_version=rv, timeout_seconds=30
                ):
                    rv = (ev.get("metadata") or {}).get("resourceVersion") or rv
                    if etype in ("ADDED", "MODIFIED"):
                        self._event(ev)
                    if self._stop.is_set():
                        return
            except Forbidden:
                # the lab needs `list` on events, not `watch`: ask every second instead
                self._poll_events(field)
                return
            except ClusterError:
                if self._stop.wait(1.0):
                    return
                rv = None

    def _event(self, ev: dict[str, Any]) -> None:
        if (ev.get("involvedObject") or {}).get("uid") in (None, "", self.uid):
            self.events.put(ev)

    def _poll_events(self, field: str) -> None:
        """The pod's events by listing them, until the wait ends (events are context:
        a list that is refused too ends this thread quietly)."""
        while not self._stop.is_set():
            try:
                for ev in self.kube.list_events(self.namespace, field_selector=field):
                    self._event(ev)
            except Forbidden:
                return
            except ClusterError:
                pass
            if self._stop.wait(1.0):
                return

    def wait(self, timeout: float) -> dict[str, Any]:
        """The pod once Ready. The watch is resumed where it stopped; through an API
        outage it is tried again with backoff until `timeout` (cluster/outage.py)."""
        deadline = time.monotonic() + timeout
        threading.Thread(target=self._event_thread, daemon=True, name="nsightlab-events").start()
        outage = Outage(self.env.note, f"pod {self.name} to be Ready", deadline, limit=f"--timeout {timeout:g}")
        relist = False
        try:
            with self.env.status(f"waiting for pod {self.name}") as spinner:
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError
                    try:
                        done = self._relist() if relist else None
                        relist = False
                        if done is None:
                            done = self._watch(left, deadline, spinner, outage)
                        outage.answered()
                        if done is not None:
                            return done
                    except Gone:
                        relist = True
                    except ClusterError as e:
                        outage.failed(e)  # waits before the next try; raises when waiting will not help
                    self._drain_events()
        finally:
            self._stop.set()

    def _watch(self, left: float, deadline: float, spinner: Any, outage: Outage) -> dict[str, Any] | None:
        """One watch of the pod, from the last resourceVersion: the pod once Ready, else
        None when the watch ends first."""
        for etype, obj in self.kube.watch_pods(
            self.namespace,
            field_selector=f"metadata.name={self.name}",
            resource_version=self.rv,
            timeout_seconds=max(1, min(60, int(left) + 1)),
        ):
            outage.answered()
            self.rv = (obj.get("metadata") or {}).get("resourceVersion") or self.rv
            if etype == "BOOKMARK" or (obj.get("metadata") or {}).get("uid") != self.uid:
                continue
            if etype == "DELETED":
                raise PodNotReadyError(
                    f"pod {self.name} was deleted while waiting for it",
                    hint=f"Create it again with `{self.create_command}`.",
                )
            self.pod = obj
            self._drain_events()
            spinner.update(self._describe())
            done = self._verdict()
            if done is not None:
                return done
            if time.monotonic() >= deadline:
                raise TimeoutError
        return None

    def _relist(self) -> dict[str, Any] | None:
        """After a 410: the pod as it is now, and the resourceVersion to watch from."""
        fresh = self.kube.get_pod(self.namespace, self.name)
        if fresh is None or (fresh.get("metadata") or {}).get("uid") != self.uid:
            raise PodNotReadyError(
                f"pod {self.name} was deleted while waiting for it",
                hint=f"Create it again with `{self.create_command}`.",
            )
        self.pod = fresh
        self.rv = fresh["metadata"].get("resourceVersion", "")
        return self._verdict()

    def _drain_events(self) -> None:
        while True:
            try:
                ev = self.events.get_nowait()
            except queue.Empty:
                return
            key = (ev.get("reason"), ev.get("message"))
            if any((e.get("reason"), e.get("message")) == key for e in self.seen_events):
                continue
            self.seen_events.append(ev)
            kind = ev.get("type", "Normal")
            self.env.note(
                f"  event {kind}/{ev.get('reason')}: {ev.get('message', '')}",
                style="yellow" if kind == "Warning" else None,
            )

    def _describe(self) -> str:
        """One short line for the spinner: the status, and the conditions not yet true."""
        pod = self.pod or {}
        waiting = [
            str(c.get("type")) for c in (pod.get("status") or {}).get("conditions") or [] if c.get("status") != "True"
        ]
        node = (pod.get("spec") or {}).get("nodeName")
        text = f"pod {self.name}: {r.pod_status(pod)}"
        if node:
            text += f" on {node}"
        if waiting:
            text += f" (waiting for {', '.join(waiting)})"
        return text

    def _verdict(self) -> dict[str, Any] | None:
        pod = self.pod or {}
        phase = (pod.get("status") or {}).get("phase")
        if r.pod_is_ready(pod):
            return pod
        if phase in ("Failed", "Succeeded"):
            reason = (pod.get("status") or {}).get("reason") or r.pod_status(pod)
            message = (pod.get("status") or {}).get("message") or ""
            raise PodNotReadyError(f"pod {self.name} ended ({phase}: {reason}) while waiting for it. {message}".strip())
        for cs in ((pod.get("status") or {}).get("containerStatuses") or []) + (
            (pod.get("status") or {}).get("initContainerStatuses") or []
        ):
            waiting = (cs.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in FATAL_WAITING:
                raise PodNotReadyError(
                    f"pod {self.name}: container {cs.get('name')} is in {waiting['reason']}: "
                    f"{waiting.get('message', '').strip()}".rstrip(": "),
                    hint="Check lab.image in config.yaml (name, tag, registry access)."
                    if "Image" in waiting["reason"]
                    else "The container keeps failing; check the template's command and the image.",
                )
        return None


def not_ready(kube: Kube, waiter: PodWaiter, timeout: float, *, cleanup: str) -> PodNotReadyError:
    """Why the pod is not Ready after `timeout`: its status, the scheduler's word, the free
    GPUs per type; `cleanup` is the command that deletes it."""
    pod = waiter.pod or kube.get_pod(waiter.namespace, waiter.name) or {}
    sched = r.condition(pod, "PodScheduled")
    parts = [f"pod {waiter.name} is not Ready after {int(timeout)} s ({r.pod_status(pod)})"]
    if sched and sched.get("status") == "False":
        parts.append(f"scheduler: {sched.get('message') or sched.get('reason')}")
        try:
            free = free_gpus(kube)
        except Forbidden as e:
            free = []
            parts.append(skipped_note(e.what, "free GPUs per type not shown"))
        except ClusterError:
            free = []
        if free:
            parts.append("free GPUs: " + ", ".join(f"{g.instance_type} {g.gpu_free}/{g.gpu_allocatable}" for g in free))
    failed = [e for e in waiter.seen_events if e.get("reason") == "FailedScheduling"]
    if failed and not sched:
        parts.append(f"FailedScheduling: {failed[-1].get('message')}")
    return PodNotReadyError("; ".join(parts), hint=f"The pod is left in place; delete it with `{cleanup}`.")


def wait_gone(kube: Kube, namespace: str, name: str, uid: str | None, *, timeout: float) -> bool:
    """Watch until the pod (with that uid) is gone; True if it went."""
    end = time.monotonic() + timeout
    rv: str | None = None
    while time.monotonic() < end:
        pod = kube.get_pod(namespace, name)
        if pod is None or (uid and pod["metadata"].get("uid") != uid):
            return True
        rv = pod["metadata"].get("resourceVersion")
        try:
            for etype, obj in kube.watch_pods(
                namespace,
                field_selector=f"metadata.name={name}",
                resource_version=rv,
                timeout_seconds=max(1, int(end - time.monotonic())),
            ):
                if etype == "DELETED" and (not uid or obj["metadata"].get("uid") == uid):
                    return True
        except ClusterError:
            time.sleep(0.2)
    return False
