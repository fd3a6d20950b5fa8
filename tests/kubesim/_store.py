"""The object store behind the emulated API server.

Objects live in kmock's :class:`kmock.ObjectsArray` (so every version of every object is
kept in its history and can be asserted on); this module adds what an API server needs
on top: a cluster-wide monotonic resourceVersion, pre-serialised JSON per object,
sorted keys for paging, list snapshots behind continue tokens, a bounded event log for
watches that resume from a resourceVersion, and live watchers.

All mutating calls must run on the server's event loop thread (or before it starts).
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import collections
import contextlib
import itertools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import kmock

from ._resources import RESOURCES, ResourceType

Obj = dict[str, Any]
Predicate = Callable[[Mapping[str, Any]], bool]
Key = tuple[str, str]  # (namespace or "", name)

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dumps(obj: Any) -> bytes:
    return _dumps(obj).encode()


class Entry:
    """A stored object, its resourceVersion and its cached JSON."""

    __slots__ = ("_raw", "obj", "rv")

    def __init__(self, obj: Obj, rv: int, raw: bytes | None = None):
        self.obj = obj
        self.rv = rv
        self._raw = raw

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = dumps(self.obj)
        return self._raw


@dataclass
class Event:
    """A change: ``old`` is None for ADDED, ``new`` is the last state for DELETED."""

    rv: int
    type: str
    rt: ResourceType
    old: Obj | None
    new: Obj
    _raw: bytes | None = None

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = dumps(self.new)
        return self._raw


_CLOSE = object()


@dataclass(eq=False)
class Watcher:
    """A live watch: events are pushed into ``queue``; ``_CLOSE`` ends it."""

    rt: ResourceType
    namespace: str | None
    predicate: Predicate | None
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)

    def _matches(self, obj: Mapping[str, Any] | None) -> bool:
        if obj is None:
            return False
        if self.namespace is not None and (obj.get("metadata") or {}).get("namespace") != self.namespace:
            return False
        return self.predicate is None or self.predicate(obj)

    def translate(self, event: Event) -> str | None:
        """The event type this watcher sees (a filter turns MODIFIED into ADDED/DELETED)."""
        was = self._matches(event.old)
        now = self._matches(event.new)
        if event.type == "DELETED":
            return "DELETED" if now else None
        if was and now:
            return event.type if event.type != "ADDED" else "MODIFIED"
        if now:
            return "ADDED"
        if was:
            return "DELETED"
        return None

    def close(self) -> None:
        self.queue.put_nowait(_CLOSE)


def is_close(item: Any) -> bool:
    return item is _CLOSE


@dataclass
class Snapshot:
    """A list result kept for continue tokens: the items as they were at ``rv``."""

    rv: int
    items: list[Entry]


class Store:
    """See the module docstring."""

    def __init__(self, objects: kmock.ObjectsArray, *, log_size: int = 200_000, snapshots: int = 64):
        self.objects = objects
        self.rv = 1000
        self._tables: dict[ResourceType, dict[Key, Entry]] = {rt: {} for rt in RESOURCES}
        self._sorted: dict[ResourceType, list[Key] | None] = {rt: [] for rt in RESOURCES}
        self.log: collections.deque[Event] = collections.deque()
        self._log_size = log_size
        self.log_floor = self.rv
        self.watchers: dict[ResourceType, list[Watcher]] = {rt: [] for rt in RESOURCES}
        self._snapshots: collections.OrderedDict[int, Snapshot] = collections.OrderedDict()
        self._snapshot_limit = snapshots
        self._snapshot_ids = itertools.count(1)
        self.listeners: list[Callable[[Event], None]] = []

    # ---- reads ---------------------------------------------------------------------------
    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Entry | None:
        return self._tables[rt].get((namespace or "", name))

    def count(self, rt: ResourceType) -> int:
        return len(self._tables[rt])

    def sorted_keys(self, rt: ResourceType) -> list[Key]:
        keys = self._sorted[rt]
        if keys is None:
            keys = sorted(self._tables[rt])
            self._sorted[rt] = keys
        return keys

    def select(self, rt: ResourceType, namespace: str | None, predicate: Predicate | None) -> list[Entry]:
        """Entries in etcd key order (namespace, name), filtered."""
        keys = self.sorted_keys(rt)
        table = self._tables[rt]
        if namespace is not None and rt.namespaced:
            lo = bisect.bisect_left(keys, (namespace, ""))
            hi = bisect.bisect_left(keys, (namespace + "\x00", ""))
            keys = keys[lo:hi]
        entries = [table[k] for k in keys]
        if predicate is not None:
            entries = [e for e in entries if predicate(e.obj)]
        return entries

    def iter_objects(self, rt: ResourceType) -> Iterable[Obj]:
        return (e.obj for e in self._tables[rt].values())

    # ---- writes --------------------------------------------------------------------------
    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def _stamp(self, obj: Obj, rv: int) -> Obj:
        meta = dict(obj.get("metadata") or {})
        meta["resourceVersion"] = str(rv)
        new = dict(obj)
        new["metadata"] = meta
        return new

    def _kmock_record(self, rt: ResourceType, key: Key, obj: Obj | None, created: bool) -> None:
        okey = (rt.kmock_resource, key[0] or None, key[1])
        if obj is None:
            if okey in self.objects:
                self.objects[okey].delete()
        elif created and okey in self.objects:
            self.objects[okey].create(obj)
        elif created:
            self.objects[okey] = obj
        else:
            self.objects[okey].history.append(obj)

    def put(self, rt: ResourceType, obj: Obj) -> Entry:
        """Create or replace an object as given (metadata already complete but for its rv)."""
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace") or "" if rt.namespaced else "", meta["name"])
        table = self._tables[rt]
        old = table.get(key)
        rv = self.next_rv()
        new = self._stamp(obj, rv)
        entry = Entry(new, rv)
        table[key] = entry
        if old is None:
            keys = self._sorted[rt]
            if keys is not None:
                bisect.insort(keys, key)
        self._kmock_record(rt, key, new, created=old is None)
        self._emit(Event(rv, "ADDED" if old is None else "MODIFIED", rt, old.obj if old else None, new))
        return entry

    def remove(self, rt: ResourceType, namespace: str | None, name: str) -> Obj | None:
        key = (namespace or "" if rt.namespaced else "", name)
        old = self._tables[rt].pop(key, None)
        if old is None:
            return None
        keys = self._sorted[rt]
        if keys is not None:
            i = bisect.bisect_left(keys, key)
            if i < len(keys) and keys[i] == key:
                keys.pop(i)
        rv = self.next_rv()
        last = self._stamp(old.obj, rv)
        self._kmock_record(rt, key, None, created=False)
        self._emit(Event(rv, "DELETED", rt, old.obj, last))
        return last

    def bulk_load(self, items: Iterable[tuple[ResourceType, Obj]]) -> int:
        """Store many objects at once without watch events (as if they predate every watch)."""
        n = 0
        touched: set[ResourceType] = set()
        objects = self.objects
        for rt, obj in items:
            meta = obj["metadata"]
            key = (meta.get("namespace") or "" if rt.namespaced else "", meta["name"])
            rv = self.next_rv()
            new = self._stamp(obj, rv)
            table = self._tables[rt]
            created = key not in table
            table[key] = Entry(new, rv, dumps(new))  # serialised now: lists then only join bytes
            okey = (rt.kmock_resource, key[0] or None, key[1])
            if okey in objects:
                if created:
                    objects[okey].create(new)
                else:
                    objects[okey].history.append(new)
            else:
                objects[okey] = new
            touched.add(rt)
            n += 1
        for rt in touched:
            self._sorted[rt] = None
        self.log_floor = self.rv
        self.log.clear()
        return n

    def clear(self) -> None:
        for rt in RESOURCES:
            for key in list(self._tables[rt]):
                self.remove(rt, key[0], key[1])

    def _emit(self, event: Event) -> None:
        self.log.append(event)
        if len(self.log) > self._log_size:
            dropped = self.log.popleft()
            self.log_floor = dropped.rv
        for watcher in self.watchers[event.rt]:
            etype = watcher.translate(event)
            if etype is not None:
                watcher.queue.put_nowait((etype, event))
        for listener in list(self.listeners):
            listener(event)

    # ---- watches ---------------------------------------------------------------------------
    def replay(self, watcher: Watcher, since: int) -> list[tuple[str, Event]]:
        out: list[tuple[str, Event]] = []
        for event in self.log:
            if event.rv <= since or event.rt is not watcher.rt:
                continue
            etype = watcher.translate(event)
            if etype is not None:
                out.append((etype, event))
        return out

    def add_watcher(self, watcher: Watcher) -> None:
        self.watchers[watcher.rt].append(watcher)

    def drop_watcher(self, watcher: Watcher) -> None:
        with contextlib.suppress(ValueError):
            self.watchers[watcher.rt].remove(watcher)

    def close_watches(self) -> int:
        n = 0
        for watchers in self.watchers.values():
            for watcher in watchers:
                watcher.close()
                n += 1
        return n

    # ---- continue tokens ---------------------------------------------------------------------
    def save_snapshot(self, rv: int, items: list[Entry]) -> int:
        sid = next(self._snapshot_ids)
        self._snapshots[sid] = Snapshot(rv, items)
        while len(self._snapshots) > self._snapshot_limit:
            self._snapshots.popitem(last=False)
        return sid

    def snapshot(self, sid: int) -> Snapshot | None:
        snap = self._snapshots.get(sid)
        if snap is not None:
            self._snapshots.move_to_end(sid)
        return snap

    def expire_snapshots(self) -> None:
        self._snapshots.clear()


def encode_continue(rv: int, start: str, sid: int, offset: int) -> str:
    """An opaque continue token shaped like the API server's (base64 of a small JSON)."""
    doc = {"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00", "snap": sid, "off": offset}
    return base64.urlsafe_b64encode(json.dumps(doc, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_continue(token: str) -> dict[str, Any]:
    padded = token + "=" * (-len(token) % 4)
    try:
        doc = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError("invalid continue token") from e
    if not isinstance(doc, dict) or doc.get("v") != "meta.k8s.io/v1":
        raise ValueError("invalid continue token")
    return doc
