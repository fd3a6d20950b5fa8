"""An nsys SQLite export as a capture's timeline (`nsightlab.parse.nsys_trace.NsysTrace`):
the records the CSV trace exports give, made from the database in one streamed pass.

`SqliteTrace.gpu_columns()` reads every kernel, memcpy and memset from the cursor in start
order, each joined by SQLite to the CUDA call that launched it, straight into
`GpuTraceColumns` (with `launch`): the Name a GPU operation gets is the one
`cuda_gpu_trace` prints (a kernel's demangled name, `[CUDA memcpy Host-to-Device]`,
`[CUDA memset]`), its Device is `NAME (ID)` from the report's own GPU table. As the rows go
by, the same pass keeps what the summaries need and nothing else: each kernel name's
durations (8 bytes a kernel, for exact medians) and, for the NVTX push/pop ranges, which
range each operation was launched in (its launching thread's innermost range at the
launch's time; the enclosing ranges count it too). Memory: the columns (about 50 bytes an
operation), the durations, the ranges; never a row object per operation.

`pushpop()` gives `nvtx_pushpop_trace`'s ranges (names `DOMAIN:TEXT`, the default domain
empty: `:decode_step`; levels and parents per thread), `projections()` those of
`nvtx_gpu_proj_trace` (each range's span from the first to the last GPU operation launched
inside it, on its thread), `api_calls()` `cuda_api_trace`'s calls (names without nsys's
version suffix: `cudaLaunchKernel_v7000` is `cudaLaunchKernel`).
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsightlab.parse.gputrace import ApiCall, GpuTraceColumns, NvtxProjection, NvtxRange, TraceReport, range_text
from nsightlab.parse.nsys_sqlite import (
    DOMAIN_CREATE,
    NVTX,
    PUSH_POP,
    RUNTIME,
    START_END,
    NsysSqlite,
    split_global_tid,
)

_VERSION_SUFFIX = re.compile(r"_v\d+$")
MEMSET_NAME = "[CUDA memset]"


def api_name(stored: str) -> str:
    """A CUDA API name as nsys's reports print it: without the version suffix nsys stores."""
    return _VERSION_SUFFIX.sub("", stored)


@dataclass
class Ranges:
    """The NVTX ranges of a capture, in start order: push/pop ones with their thread's
    nesting, start/end ones apart (not tied to a thread)."""

    records: list[NvtxRange] = field(default_factory=list)
    gtids: list[int | None] = field(default_factory=list)
    start_end: list[tuple[str, int, int]] = field(default_factory=list)  # (raw name, start, end)
    unclosed: int = 0
    # per launching thread (globalTid): its push/pop ranges' starts, ends, parents, indexes
    by_thread: dict[int, tuple[list[int], list[int], list[int], list[int]]] = field(default_factory=dict)


@dataclass
class Scan:
    """What the one pass over the GPU operations keeps for the summaries."""

    durations: list[array[int]]  # per name id: the kernels' durations (kernels only)
    owner: array[int]  # per operation: its innermost launching range (index into Ranges.records), or -1


class SqliteTrace:
    """An nsys SQLite export's timeline records; see the module docstring. Holds `db`
    open: close it (or use it as a context manager) when done."""

    def __init__(self, db: NsysSqlite) -> None:
        self.db = db
        self.label = db.source
        self._columns: GpuTraceColumns | None = None
        self._ranges: Ranges | None = None
        self.scan: Scan | None = None

    @classmethod
    def open(cls, path: str | Path) -> SqliteTrace:
        return cls(NsysSqlite(path))

    def __enter__(self) -> SqliteTrace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.close()

    # ------------------------------------------------------------------ NsysTrace

    def has(self, report: TraceReport) -> bool:
        if report == "cuda_gpu_trace":
            return True
        launches = self.db.has(RUNTIME, "start", "end", "nameId", "correlationId", "globalTid")
        if report == "nvtx_pushpop_trace":
            return self.db.has(NVTX, "start", "end", "eventType")
        if report == "nvtx_gpu_proj_trace":  # a projection follows the launches inside a range
            return launches and self.db.has(NVTX, "start", "end", "eventType")
        return launches

    def gpu_columns(self) -> GpuTraceColumns:
        if self._columns is None:
            self._columns = self._scan()
        return self._columns

    def pushpop(self) -> Iterator[NvtxRange]:
        return iter(self.ranges().records)

    def projections(self) -> Iterator[NvtxProjection]:
        cols, ranges = self.gpu_columns(), self.ranges()
        assert self.scan is not None
        n = len(ranges.records)
        first, last, count = [0] * n, [0] * n, [0] * n
        parent_index = {r.range_id: i for i, r in enumerate(ranges.records)}
        for i, r in enumerate(self.scan.owner):
            while r >= 0:
                a, b = cols.start[i], cols.end[i]
                if count[r] == 0 or a < first[r]:
                    first[r] = a
                if count[r] == 0 or b > last[r]:
                    last[r] = b
                count[r] += 1
                parent = ranges.records[r].parent_id
                r = parent_index.get(parent, -1) if parent is not None else -1
        for k, rec in enumerate(ranges.records):
            if count[k]:
                yield NvtxProjection(
                    first[k],
                    last[k],
                    rec.start_ns,
                    rec.end_ns,
                    rec.name,
                    rec.raw_name,
                    "PushPop",
                    rec.pid,
                    rec.tid,
                    count[k],
                    rec.level,
                    rec.range_id,
                    rec.parent_id,
                    rec.line,
                )

    def api_calls(self) -> Iterator[ApiCall]:
        db = self.db
        names: dict[object, str] = {}
        for n, (start, end, name_id, corr, gtid) in enumerate(db.api_rows(), start=1):
            name = names.get(name_id)
            if name is None:
                name = names[name_id] = api_name(db.string(name_id))
            pid, tid = split_global_tid(gtid if isinstance(gtid, int) else None)
            assert isinstance(start, int) and isinstance(end, int)
            yield ApiCall(start, max(end, start), name, corr if isinstance(corr, int) else None, pid, tid, n)

    # ------------------------------------------------------------------ NVTX ranges

    def ranges(self) -> Ranges:
        if self._ranges is None:
            self._ranges = self._read_ranges()
        return self._ranges

    def _read_ranges(self) -> Ranges:
        out = Ranges()
        domains: dict[object, str] = {}
        rows: list[tuple[int, int, bool, object, int | None, object]] = []
        for start, end, kind, text, gtid, domain in self.db.nvtx_rows():
            if kind == DOMAIN_CREATE:
                domains[domain] = text if isinstance(text, str) else ""
            elif kind in PUSH_POP or kind in START_END:
                if not isinstance(end, int):
                    out.unclosed += 1
                    continue
                assert isinstance(start, int)
                rows.append(
                    (start, max(end, start), kind in PUSH_POP, text, gtid if isinstance(gtid, int) else None, domain)
                )
        stacks: dict[int | None, list[NvtxRange]] = {}
        for start, end, pushpop, text, gtid, domain in rows:
            prefix = domains.get(domain, "") if domain not in (0, None) else ""
            raw = f"{prefix}:{text if isinstance(text, str) else ''}"
            if not pushpop:
                out.start_end.append((raw, start, end))
                continue
            stack = stacks.setdefault(gtid, [])
            while stack and not (stack[-1].start_ns <= start and end <= stack[-1].end_ns):
                stack.pop()
            pid, tid = split_global_tid(gtid)
            rid = len(out.records) + 1
            record = NvtxRange(
                start, end, range_text(raw), raw, pid, tid, len(stack), rid, stack[-1].range_id if stack else None, rid
            )
            out.records.append(record)
            out.gtids.append(gtid)
            stack.append(record)
        index = {r.range_id: i for i, r in enumerate(out.records)}
        position: dict[int, int] = {}  # a range's place in its thread's lists
        for i, (record, gtid) in enumerate(zip(out.records, out.gtids, strict=True)):
            if gtid is None:
                continue
            starts, ends, parents, indexes = out.by_thread.setdefault(gtid, ([], [], [], []))
            parent = index.get(record.parent_id, -1) if record.parent_id is not None else -1
            position[i] = len(indexes)
            starts.append(record.start_ns)
            ends.append(record.end_ns)
            parents.append(position.get(parent, -1))  # the parent came earlier, on the same thread
            indexes.append(i)
        return out

    # ------------------------------------------------------------------ the pass

    def _scan(self) -> GpuTraceColumns:
        db = self.db
        db.check_ops()
        ranges = self.ranges()
        gpus = db.gpu_names()
        cols = GpuTraceColumns(
            array("q"), array("q"), array("l"), array("b"), array("l"), array("q"), [], [], 0, True, array("q")
        )
        launch = cols.launch
        assert launch is not None
        owner = array("l")
        durations: list[array[int]] = []
        name_ids: dict[tuple[object, object], int] = {}
        kinds: list[int] = []
        stream_ids: dict[tuple[object, object, object], int] = {}
        add_start, add_end, add_name = cols.start.append, cols.end.append, cols.name.append
        add_kind, add_stream, add_corr = cols.kind.append, cols.stream.append, cols.corr.append
        add_launch, add_owner = launch.append, owner.append
        by_thread = ranges.by_thread
        previous = -(1 << 62)
        prev_key: tuple[object, object, object] | None = None
        sid = -1
        kernels = 0
        in_order = True
        rows: Iterator[Any] = db.ops()  # whole numbers (check_ops), NULL where the export has none
        for start, end, kind, name, device, stream, corr, gpid, lstart, ltid in rows:
            nid = name_ids.get((kind, name))
            if nid is None:
                nid = name_ids[(kind, name)] = len(cols.names)
                cols.names.append(self._op_name(kind, name))
                kinds.append(int(kind))
                durations.append(array("q"))
            key = (device, stream, gpid)
            if key != prev_key:
                got = stream_ids.get(key)
                if got is None:
                    got = stream_ids[key] = len(cols.streams)
                    cols.streams.append((self._device(gpus, device, gpid), stream if isinstance(stream, int) else None))
                sid, prev_key = got, key
            dur = end - start
            if dur < 0:
                dur = 0
            if kind == 0:
                kernels += 1
                durations[nid].append(dur)
            if start < previous:
                in_order = False
            previous = start
            add_start(start)
            add_end(start + dur)
            add_name(nid)
            add_kind(kinds[nid])
            add_stream(sid)
            add_corr(corr if corr is not None else -1)
            add_launch(lstart if lstart is not None else -1)
            r = -1
            if ltid is not None:
                thread = by_thread.get(ltid)
                if thread is not None:
                    starts, ends, parents, indexes = thread
                    j = bisect.bisect_right(starts, lstart) - 1
                    while j >= 0 and ends[j] < lstart:
                        j = parents[j]
                    r = indexes[j] if j >= 0 else -1
            add_owner(r)
        cols.kernels = kernels
        cols.in_start_order = in_order
        if not self.has("cuda_api_trace"):
            cols.launch = None  # no CUDA API table: no launch is known (not: none was launched)
        self.scan = Scan(durations, owner)
        return cols

    def _op_name(self, kind: object, name: object) -> str:
        if kind == 0:
            return self.db.string(name)
        if kind == 1:
            return self.db.copy_label(name if isinstance(name, int) else 0)
        return MEMSET_NAME

    @staticmethod
    def _device(gpus: dict[tuple[int | None, int], str], device: object, gpid: object) -> str | None:
        """`NAME (ID)` as cuda_gpu_trace's Device column prints it; None when unknown."""
        if not isinstance(device, int):
            return None
        pid = (gpid >> 24) & 0xFFFFFF if isinstance(gpid, int) else None
        name = gpus.get((pid, device)) or gpus.get((None, device))
        return f"{name} ({device})" if name else None
