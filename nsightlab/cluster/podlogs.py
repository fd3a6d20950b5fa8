"""Pods' logs and Events: what `kubectl logs` and `kubectl describe pod` show, and a
log saved to a file as it streams (`save_log`: a fleet's Jobs, any pod's)."""

from __future__ import annotations

import codecs
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsightlab.cluster.lab_lifecycle import create_command
from nsightlab.errors import PodNotReadyError, UsageError
from nsightlab.k8s.labpod import EventsReport, pod_events

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube
    from nsightlab.cluster.safety import ResolvedContext

DEFAULT_CONTAINER = "kubectl.kubernetes.io/default-container"


def log_container(pod: dict[str, Any], requested: str | None) -> str:
    """The container whose log is read: the one asked for, else the pod's default (its
    annotation, else the first container), as kubectl picks it."""
    spec = pod.get("spec") or {}
    names = [str(c.get("name")) for c in spec.get("containers") or []]
    init = [str(c.get("name")) for c in spec.get("initContainers") or []]
    if requested is None:
        default = ((pod.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CONTAINER)
        return str(default) if default in names else names[0]
    if requested not in names and requested not in init:
        raise UsageError(
            f"pod {pod['metadata']['name']} has no container '{requested}'",
            hint=f"Its containers: {', '.join(names + init)}.",
        )
    return requested


def _not_started(pod: dict[str, Any], container: str) -> str | None:
    """Why the container has no log yet (it is waiting to start), else None."""
    status = pod.get("status") or {}
    for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if cs.get("name") == container:
            state = cs.get("state") or {}
            if "waiting" in state and not cs.get("lastState"):
                return str((state.get("waiting") or {}).get("reason") or "waiting")
            return None
    return str(status.get("phase") or "Pending")


class LogText:
    """The log's bytes as text for `write`, as they come (a character may span two pieces;
    bytes that are not UTF-8 are replaced). `finish()` writes what is left and says
    whether any output came at all."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._any = False

    def __call__(self, data: bytes) -> None:
        self._any = self._any or bool(data)
        self._write(self._decoder.decode(data))

    def finish(self) -> bool:
        self._write(self._decoder.decode(b"", final=True))
        return self._any


def stream_log(
    kube: Kube,
    ctx: ResolvedContext,
    name: str,
    *,
    write: Callable[[bytes], None],
    container: str | None = None,
    tail: int | None = None,
    follow: bool = False,
) -> None:
    """Write the lab pod's log (a container's) to `write` as it comes; with `follow`,
    until the container ends or the pod goes."""
    pod = kube.get_pod(ctx.namespace, name)
    if pod is None:
        raise PodNotReadyError(
            f"no lab pod {name} in namespace {ctx.namespace} (context {ctx.name})",
            hint=f"Create one with `{create_command(ctx)}`.",
        )
    chosen = log_container(pod, container)
    waiting = _not_started(pod, chosen)
    if waiting is not None:
        raise PodNotReadyError(
            f"container {chosen} of pod {name} has not started yet ({waiting}): it has no log",
            hint=f"See why with `nsightlab events {ctx.cli_args}`.",
        )
    for chunk in kube.pod_log(ctx.namespace, name, container=chosen, tail_lines=tail, follow=follow):
        write(chunk)


def save_log(
    kube: Kube,
    namespace: str,
    pod: str,
    dest: Path,
    *,
    container: str | None = None,
    feed: Callable[[bytes], None] | None = None,
) -> int:
    """A container's whole log (the pod's default container when None) written to
    `dest` piece by piece as it comes, each piece handed to `feed` too; the bytes
    written. Nothing holds the log whole: memory stays flat whatever its size.

    A log that breaks off is a ClusterError (what came before it is in `dest`); an OSError
    writing `dest` passes to the caller, which knows whose folder it is."""
    written = 0
    with open(dest, "wb") as out:
        for chunk in kube.pod_log(namespace, pod, container=container):
            out.write(chunk)
            written += len(chunk)
            if feed is not None:
                feed(chunk)
    return written


def lab_events(kube: Kube, ctx: ResolvedContext, name: str) -> EventsReport:
    """The Events about the lab pod, oldest first (those of an earlier pod of the same
    name are left out while the pod exists)."""
    pod = kube.get_pod(ctx.namespace, name)
    uid = (pod.get("metadata") or {}).get("uid") if pod else None
    raw = kube.list_events(ctx.namespace, field_selector=f"involvedObject.kind=Pod,involvedObject.name={name}")
    return EventsReport(
        context=ctx.name, namespace=ctx.namespace, pod=name, uid=uid, gone=pod is None, events=pod_events(raw, uid=uid)
    )
