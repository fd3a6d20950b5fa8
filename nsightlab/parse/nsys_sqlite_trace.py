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
from functools import partial
from operator import itemgetter
from pathlib import Path

from nsightlab.parse.apicalls import is_graph_launch, is_sync_call
from nsightlab.parse.gputrace import ApiCall, GpuTraceColumns, NvtxProjection, NvtxRange, TraceReport, range_text
from nsightlab.parse.nsys_sqlite import (
    DOMAIN_CREATE,
    MEMSET_CODE,
    NVTX,
    PUSH_POP,
    RUNTIME,
    START_END,
    NsysSqlite,
    split_global_tid,
)

# nsys stores a runtime call with the CUDA version that brought it in (`cudaLaunchKernel_v7000`)
# and its reports drop a last `_v` and four characters, no more: `cudaLaunchKernelExC_v11060`
# and `cudaGraphLaunch_v10000` keep theirs, and a driver call's own `_v2` (`cuMemAlloc_v2`,
# `cuGetProcAddress_v2`, a function apart from `cuGetProcAddress`) is its name.
_VERSION_SUFFIX = re.compile(r"_v\d{4}$")
MEMSET_NAME = "[CUDA memset]"


def api_name(stored: str) -> str:
    """A CUDA API name as nsys's `cuda_api_sum` prints it: without a four-digit version suffix."""
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
    """What the pass over the GPU operations keeps beside the columns: the launching thread
    of each operation (an index into `threads`, -1: none known), when the export has NVTX
    ranges to attribute operations to."""

    thread: array[int] | None = None
    threads: list[int | None] = field(default_factory=list)


class SqliteTrace:
    """An nsys SQLite export's timeline records; see the module docstring. Holds `db`
    open: close it (or use it as a context manager) when done."""

    def __init__(self, db: NsysSqlite) -> None:
        self.db = db
        self.label = db.source
        self._columns: GpuTraceColumns | None = None
        self._ranges: Ranges | None = None
        self._attribution: Attribution | None = None
        self.scan: Scan | None = None
        self.launch_calls = 0  # the kernel and graph launch calls, once the API summary has counted them

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
        return iter(self.attributed().projections)

    def api_calls(self) -> Iterator[ApiCall]:
        """The CUDA API calls a step's anatomy reads. Where the GPU operations came with their
        launches joined (any export with the API table), only the graph launches and the
        calls that block the host: every other call's part, its launch time, is in the
        columns already, and a million of them need not be read again."""
        db = self.db
        names: dict[object, str] = {}
        name_ids: list[object] | None = None
        if self.gpu_columns().launch is not None:
            for name_id in db.api_name_ids():
                names[name_id] = api_name(db.string(name_id))
            name_ids = [i for i, name in names.items() if is_graph_launch(name) or is_sync_call(name)]
        for n, (start, end, name_id, corr, gtid) in enumerate(db.api_rows(name_ids), start=1):
            name = names.get(name_id)
            if name is None:
                name = names[name_id] = api_name(db.string(name_id))
            pid, tid = split_global_tid(gtid if isinstance(gtid, int) else None)
            if type(start) is not int or type(end) is not int:
                raise db.not_whole("a CUDA API call's start or end")
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
        ranges = self.ranges()
        gpus = db.gpu_names()
        cols = GpuTraceColumns(
            array("q"), array("q"), array("l"), array("b"), array("l"), array("q"), [], [], 0, True, array("q")
        )
        nid_of: dict[int, int] = {}
        kinds: list[int] = []
        sid_of: dict[int, int] = {}
        scan = Scan(thread=array("l") if ranges.by_thread else None)
        thread_of: dict[int | None, int] = {None: -1}
        start, end, code, skey, corr, launch, ltid = (itemgetter(k) for k in range(7))
        try:
            for chunk in db.op_chunks(threads=scan.thread is not None):
                for c in set(map(code, chunk)).difference(nid_of):
                    nid_of[c] = len(cols.names)
                    cols.names.append(self._op_name(c))
                    kinds.append(0 if c >= 0 else 2 if c == MEMSET_CODE else 1)
                for k in set(map(skey, chunk)).difference(sid_of):
                    sid_of[k] = len(cols.streams)
                    cols.streams.append(self._stream(gpus, k))
                nids = array("l", map(nid_of.__getitem__, map(code, chunk)))
                cols.start.extend(map(start, chunk))
                cols.end.extend(map(end, chunk))
                cols.name.extend(nids)
                cols.kind.extend(map(kinds.__getitem__, nids))
                cols.stream.extend(map(sid_of.__getitem__, map(skey, chunk)))
                cols.corr.extend(map(corr, chunk))
                assert cols.launch is not None
                cols.launch.extend(map(launch, chunk))
                if scan.thread is not None:
                    for t in set(map(ltid, chunk)).difference(thread_of):
                        thread_of[t] = len(scan.threads)
                        scan.threads.append(t)
                    scan.thread.extend(map(thread_of.__getitem__, map(ltid, chunk)))
        except (TypeError, OverflowError):
            raise db.not_whole("a GPU operation's time or id") from None
        cols.kernels = cols.kind.count(0)
        if not self.has("cuda_api_trace"):
            cols.launch = None  # no CUDA API table: no launch is known (not: none was launched)
        self.scan = scan
        return cols

    # ------------------------------------------------------------------ attribution

    def attributed(self) -> Attribution:
        """Which NVTX push/pop range launched each GPU operation, and what follows from it
        (computed once, on first use)."""
        if self._attribution is None:
            self._attribution = _attribute(self.gpu_columns(), self.scan or Scan(), self.ranges())
        return self._attribution

    def release_operations(self) -> None:
        """Let go of what only the summaries read per operation (the range that launched
        it, its launching thread): 16 bytes an operation that the step anatomy, which
        comes after them, does not read."""
        self.attributed().owner = None
        if self.scan is not None:
            self.scan.thread = None

    def kernel_durations(self) -> list[array[int]]:
        """Per name id, the durations of that name's kernels (memory operations: empty)."""
        cols = self.gpu_columns()
        out: list[array[int]] = [array("q") for _ in cols.names]
        appends = [d.append for d in out]
        for nid, kind, a, b in zip(cols.name, cols.kind, cols.start, cols.end, strict=True):
            if kind == 0:
                appends[nid](b - a)
        return out

    def _op_name(self, code: int) -> str:
        """The Name cuda_gpu_trace prints for an operation's name code (see `op_chunks`)."""
        if code >= 0:
            return self.db.string(code)
        if code == MEMSET_CODE:
            return MEMSET_NAME
        return self.db.copy_label(-1 - code)

    @staticmethod
    def _stream(gpus: dict[tuple[int | None, int], str], key: int) -> tuple[str | None, int | None]:
        """(Device, Strm) as cuda_gpu_trace prints them (`NAME (ID)`; None when the report
        names no GPU for it) for a stream key (see `op_chunks`)."""
        pid, device, stream = key >> 40, (key >> 32) & 0xFF, key & 0xFFFFFFFF
        name = gpus.get((pid, device)) or gpus.get((None, device))
        return (f"{name} ({device})" if name else None), stream


@dataclass
class Attribution:
    """Operations given to the NVTX range that launched them: each operation's innermost
    range (`owner`, -1: none; None once `SqliteTrace.release_operations` let it go), and
    each range's GPU projection (ranges that launched nothing have none)."""

    owner: array[int] | None
    projections: list[NvtxProjection]


def _innermost(j: int, at: int, ends: list[int], parents: list[int], indexes: list[int]) -> int:
    """The innermost range holding time `at`, from `j`, the last range of the thread that
    began at or before it (ranges nest: the others holding it enclose `j`); -1: none."""
    while j >= 0 and ends[j] < at:
        j = parents[j]
    return indexes[j] if j >= 0 else -1


def _attribute(cols: GpuTraceColumns, scan: Scan, ranges: Ranges) -> Attribution:
    n = len(cols.start)
    owner = array("l", [-1]) * n
    if scan.thread is None or cols.launch is None or not ranges.records:
        return Attribution(owner, [])
    lists = [ranges.by_thread.get(g) if g is not None else None for g in scan.threads]
    with_ranges = [t for t, found in enumerate(lists) if found is not None]
    if len(with_ranges) == 1 and len(lists) == 1:
        # one launching thread, and it has ranges (the usual capture): bisect in C
        found = lists[0]
        assert found is not None
        starts, ends, parents, indexes = found
        after = map(partial(bisect.bisect_right, starts), cols.launch)
        owner = array(
            "l",
            (
                indexes[j - 1] if j and ends[j - 1] >= at else _innermost(j - 1, at, ends, parents, indexes)
                for j, at in zip(after, cols.launch, strict=True)
            ),
        )
    else:
        right = bisect.bisect_right
        for i, t, at in zip(range(n), scan.thread, cols.launch, strict=True):
            found = lists[t] if t >= 0 else None
            if found is not None:
                starts, ends, parents, indexes = found
                owner[i] = _innermost(right(starts, at) - 1, at, ends, parents, indexes)
    # each range's projection: its own operations and those of the ranges inside it
    records = ranges.records
    k = len(records)
    first, last, count = [0] * k, [0] * k, [0] * k
    for r, a, b in zip(owner, cols.start, cols.end, strict=True):
        if r < 0:
            continue
        if count[r] == 0:
            first[r], last[r] = a, b
        elif b > last[r]:
            last[r] = b
        count[r] += 1
    index = {rec.range_id: i for i, rec in enumerate(records)}
    for i in range(k - 1, -1, -1):  # children come after their parents
        parent = index.get(records[i].parent_id, -1) if records[i].parent_id is not None else -1
        if parent >= 0 and count[i]:
            if count[parent] == 0 or first[i] < first[parent]:
                first[parent] = first[i]
            if count[parent] == 0 or last[i] > last[parent]:
                last[parent] = last[i]
            count[parent] += count[i]
    projections = [
        NvtxProjection(
            first[i],
            last[i],
            rec.start_ns,
            rec.end_ns,
            rec.name,
            rec.raw_name,
            "PushPop",
            rec.pid,
            rec.tid,
            count[i],
            rec.level,
            rec.range_id,
            rec.parent_id,
            rec.line,
        )
        for i, rec in enumerate(records)
        if count[i]
    ]
    return Attribution(owner, projections)
