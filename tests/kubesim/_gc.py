"""The garbage collector of ownerReferences, as kube-controller-manager runs it.

A DELETE's propagation policy is its ``propagationPolicy`` (or the older
``orphanDependents``); without one, batch/v1 Jobs default to ``Orphan`` (and the API server
answers with a warning header saying so) and everything else to ``Background``.

* **Background**: the owner goes at once; then each dependent (an object whose
  ``ownerReferences`` name the owner's uid) is deleted as through the API (a bound pod
  terminates gracefully), or, when it has other owners, only loses that reference.
* **Foreground**: the owner stays, with ``deletionTimestamp`` and the
  ``foregroundDeletion`` finalizer, while its dependents are deleted; once none is left
  the finalizer is dropped and the owner goes.
* **Orphan**: the owner stays with the ``orphan`` finalizer until the reference to it is
  removed from every dependent, then goes.

Pods are never held by these finalizers here (the policy of a pod's own deletion is
ignored). Only deletions seen while the collector is attached are acted on: objects seeded
with references to owners that do not exist are left alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._resources import ResourceType, lookup
from ._store import Event

if TYPE_CHECKING:
    from ._api import SimEmulator

Obj = dict[str, Any]

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
JOB_DELETE_WARNING = (
    "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background "
    "to remove them or set propagationPolicy=Orphan to suppress this warning"
)
# Kinds that own others in this emulator, and the resources their dependents can be.
OWNER_PLURALS = frozenset({"jobs", "deployments", "replicasets", "statefulsets", "daemonsets"})
DEPENDENTS = tuple(lookup(p) for p in ("pods", "replicasets", "jobs"))


def _policy(rt: ResourceType, options: Obj) -> tuple[str, bool]:
    """(propagation policy, whether it was left to the server's default)."""
    policy = options.get("propagationPolicy")
    if policy in ("Background", "Foreground", "Orphan"):
        return str(policy), False
    if options.get("orphanDependents") is not None:
        return ("Orphan" if options["orphanDependents"] else "Background"), False
    return ("Orphan" if rt.plural == "jobs" else "Background"), True


def delete_warning(rt: ResourceType, options: Obj) -> str | None:
    """The warning the API server adds to a DELETE of a Job that leaves the policy to it."""
    _, defaulted = _policy(rt, options)
    return JOB_DELETE_WARNING if rt.plural == "jobs" and defaulted else None


def deletion_finalizer(rt: ResourceType, options: Obj) -> str | None:
    """The finalizer a DELETE adds to the object (Foreground, Orphan), or None."""
    if rt.plural == "pods":
        return None
    policy, _ = _policy(rt, options)
    return {"Orphan": ORPHAN, "Foreground": FOREGROUND}.get(policy)


def _refs_to(obj: Mapping[str, Any], uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in (obj.get("metadata") or {}).get("ownerReferences") or [])


class GarbageCollector:
    """Watches the store (see the module docstring); work runs soon after, on the loop."""

    def __init__(self, em: SimEmulator):
        self.em = em
        # Owners gone since the last sweep, by namespace: one pass over the dependents then
        # serves them all (clearing a store of thousands of objects stays cheap).
        self._gone: dict[str | None, set[str]] = {}

    def attach(self) -> None:
        self.em.store.listeners.append(self._on_event)
        self.em.garbage_collector = self

    def detach(self) -> None:
        with contextlib.suppress(ValueError):
            self.em.store.listeners.remove(self._on_event)
        self.em.garbage_collector = None

    def _soon(self, fn: Any, *args: Any) -> None:
        loop = self.em.loop
        if loop is not None and loop.is_running():
            loop.call_soon(self._guarded, fn, *args)

    def _running(self) -> bool:
        return self.em.loop is not None and self.em.loop.is_running()

    def _guarded(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as e:  # a bug here must show in sim.server_errors, not vanish in the loop
            if self.em._errors:
                self.em._errors[-1].append(e)

    def _on_event(self, event: Event) -> None:
        if not self._running():
            return
        meta = event.new.get("metadata") or {}
        ns = meta.get("namespace")
        if event.type == "DELETED":
            if event.rt.plural in OWNER_PLURALS and meta.get("uid"):
                self._gone.setdefault(ns, set()).add(str(meta["uid"]))
                self._soon(self._collect)  # the first to run sweeps for all; the others find nothing
            for ref in meta.get("ownerReferences") or []:  # a dependent gone: its owner may be waiting
                self._soon(self._owner_changed, ref, ns)
            return
        finalizers = meta.get("finalizers") or []
        if meta.get("deletionTimestamp") and (ORPHAN in finalizers or FOREGROUND in finalizers):
            self._soon(self._finalize, event.rt, ns, meta.get("name"))

    def _dependents(self, uid: str, ns: str | None) -> list[tuple[ResourceType, Obj]]:
        return [(rt, e.obj) for rt in DEPENDENTS for e in self.em.store.select(rt, ns, lambda o: _refs_to(o, uid))]

    def _drop_refs(self, rt: ResourceType, obj: Obj, uids: set[str]) -> None:
        meta = dict(obj["metadata"])
        refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") not in uids]
        if refs:
            meta["ownerReferences"] = refs
        else:
            meta.pop("ownerReferences", None)
        self.em.store.put(rt, {**obj, "metadata": meta})

    def _collect(self) -> None:
        """Background: delete what vanished owners owned (or drop the references to them)."""
        gone, self._gone = self._gone, {}
        for ns, uids in gone.items():

            def refers(obj: Mapping[str, Any], uids: set[str] = uids) -> bool:
                return any(r.get("uid") in uids for r in (obj.get("metadata") or {}).get("ownerReferences") or [])

            for rt in DEPENDENTS:
                for entry in self.em.store.select(rt, ns, refers):
                    current = self.em.store.get(rt, ns, entry.obj["metadata"]["name"])
                    if current is None:
                        continue
                    meta = current.obj["metadata"]
                    refs = meta.get("ownerReferences") or []
                    if any(r.get("uid") not in uids for r in refs):  # other owners keep it
                        self._drop_refs(rt, current.obj, uids)
                    elif not meta.get("deletionTimestamp"):
                        self.em.delete_object(rt, ns, meta["name"], {"propagationPolicy": "Background"}, False)

    def _owner_changed(self, ref: Obj, ns: str | None) -> None:
        try:
            rt = lookup(str(ref.get("kind", "")))
        except KeyError:
            return
        entry = self.em.store.get(rt, ns if rt.namespaced else None, str(ref.get("name", "")))
        if entry is not None and entry.obj["metadata"].get("uid") == ref.get("uid"):
            meta = entry.obj["metadata"]
            if meta.get("deletionTimestamp") and FOREGROUND in (meta.get("finalizers") or []):
                self._finalize(rt, ns, meta["name"])

    def _finalize(self, rt: ResourceType, ns: str | None, name: str | None) -> None:
        """Work off an owner's orphan or foregroundDeletion finalizer; remove it when done."""
        entry = self.em.store.get(rt, ns, name or "")
        if entry is None:
            return
        obj = entry.obj
        meta = obj["metadata"]
        uid = str(meta.get("uid", ""))
        finalizers = list(meta.get("finalizers") or [])
        if ORPHAN in finalizers:
            for dep_rt, dep in self._dependents(uid, ns):
                self._drop_refs(dep_rt, dep, {uid})
            finalizers.remove(ORPHAN)
        if FOREGROUND in finalizers:
            dependents = self._dependents(uid, ns)
            for dep_rt, dep in dependents:
                dmeta = dep["metadata"]
                if not dmeta.get("deletionTimestamp"):
                    self.em.delete_object(
                        dep_rt, dmeta.get("namespace"), dmeta["name"], {"propagationPolicy": "Background"}, False
                    )
            if any(
                self.em.store.get(r, d["metadata"].get("namespace"), d["metadata"]["name"]) is not None
                for r, d in dependents
            ):
                return  # waits for them: their DELETED events bring it back here
            finalizers.remove(FOREGROUND)
        current = self.em.store.get(rt, ns, name or "")
        if current is None:
            return
        if finalizers:
            self.em.store.put(rt, {**current.obj, "metadata": {**current.obj["metadata"], "finalizers": finalizers}})
        else:
            self.em.store.remove(rt, ns, name or "")
