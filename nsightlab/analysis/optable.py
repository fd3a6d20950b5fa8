"""A trace's GPU operations in compact parallel arrays, with the busy unions of the whole
timeline: all operations (kernels, memory copies and sets) and kernels alone.

`OpTable` is what every reader hands the step analysis (`steps.analyze_timeline`):
`add()` one operation at a time (Kineto, an SQLite export) or `from_columns()` (nsys's
`cuda_gpu_trace`), then `seal()`. About 60 bytes per operation.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from nsightlab.analysis.intervals import IntervalUnion
from nsightlab.analysis.stepmodels import TraceSummary
from nsightlab.parse import gputrace

KIND_CODES: dict[str, int] = {"kernel": 0, "memcpy": 1, "memset": 2}
KERNEL = 0
# bytes.translate table: kind code 0 (a kernel) -> 1, anything else -> 0.
_KERNEL_MASK = bytes([1] + [0] * 255)


def ms(ns: float) -> float:
    return round(ns / 1e6, 6)


def pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 3) if whole > 0 else 0.0


class OpTable:
    """GPU operations in compact parallel arrays, sorted by start once `seal()`ed.

    Row i: `start[i]`, `end[i]` (ns), `names[name[i]]`, kind `kind[i]` (KIND_CODES),
    `stream[i]` (an index into `stream_ids`' keys), `corr[i]` (the launch's correlation
    id, -1 for none), and after `set_launches` the launch's host time `launch[i]` (-1:
    no launch in the trace).
    """

    def __init__(self) -> None:
        self.start = array("q")
        self.end = array("q")
        self.name = array("l")
        self.kind = array("b")
        self.stream = array("l")
        self.corr = array("q")
        self.launch = array("q")
        self.names: list[str] = []
        self.name_ids: dict[str, int] = {}
        self.stream_ids: dict[object, int] = {}
        self.union = IntervalUnion()
        self.kernels = 0

    def __len__(self) -> int:
        return len(self.start)

    @classmethod
    def from_columns(cls, cols: gputrace.GpuTraceColumns) -> OpTable:
        ops = cls()
        ops.start, ops.end, ops.name, ops.kind = cols.start, cols.end, cols.name, cols.kind
        ops.stream, ops.corr, ops.names = cols.stream, cols.corr, cols.names
        ops.stream_ids = {key: i for i, key in enumerate(cols.streams)}
        ops.kernels = cols.kernels
        launch = getattr(cols, "launch", None)  # launch times an export joined to the operations
        if launch is not None:
            ops.launch = launch
        if cols.in_start_order:
            ops.union.extend(cols.start, cols.end)
        else:
            for a, b in zip(cols.start, cols.end, strict=True):
                ops.union.add(a, b)
        return ops

    def add(self, start: int, end: int, name: str, kind: str, stream: object, corr: int | None) -> None:
        """One operation; `kind` is `kernel`, `memcpy` or `memset`, `stream` any hashable
        key (a (device, stream) pair for GPU work)."""
        nid = self.name_ids.get(name)
        if nid is None:
            nid = self.name_ids[name] = len(self.names)
            self.names.append(name)
        sid = self.stream_ids.get(stream)
        if sid is None:
            sid = self.stream_ids[stream] = len(self.stream_ids)
        self.start.append(start)
        self.end.append(end)
        self.name.append(nid)
        code = KIND_CODES[kind]
        self.kind.append(code)
        if code == KERNEL:
            self.kernels += 1
        self.stream.append(sid)
        self.corr.append(-1 if corr is None else corr)
        self.union.add(start, end)

    def extend(
        self,
        starts: Sequence[int],
        ends: Sequence[int],
        names: Sequence[str],
        kinds: Sequence[str],
        streams: Sequence[Hashable],
        corrs: Sequence[int],
    ) -> None:
        """`add` for many operations at once (columns of equal length; `corrs` -1 for
        none), in loops that run in C: how a trace of a million operations comes in. (An
        array is extended by an array: from a list, it takes twice as long.)"""
        self.name.extend(array("l", _numbers(self.name_ids, names, self.names)))
        self.stream.extend(array("l", _numbers(self.stream_ids, streams)))
        codes = array("b", list(map(KIND_CODES.__getitem__, kinds)))
        self.kind.extend(codes)
        self.kernels += codes.count(KERNEL)
        for column, values in ((self.start, starts), (self.end, ends), (self.corr, corrs)):
            column.extend(values if isinstance(values, array) else array("q", values))
        self.union.extend(starts, ends)

    def seal(self) -> bool:
        """Finish the union and sort by start if needed; True when a sort was needed."""
        self.union.finish()
        if self.union.in_order:
            return False
        order = sorted(range(len(self.start)), key=self.start.__getitem__)
        attrs = ("start", "end", "name", "kind", "stream", "corr") + (("launch",) if len(self.launch) else ())
        for attr in attrs:
            old = getattr(self, attr)
            setattr(self, attr, array(old.typecode, [old[i] for i in order]))
        return True

    def kernel_busy(self) -> int:
        """The length of the union of the kernels alone (sealed: in start order); the
        union of all operations when there are no memory operations."""
        if self.kernels == len(self):
            return self.union.busy
        total = 0
        cur = end = -(1 << 62)
        mask = self.kind.tobytes().translate(_KERNEL_MASK)
        for a, b in zip(itertools.compress(self.start, mask), itertools.compress(self.end, mask), strict=True):
            if a <= end:
                if b > end:
                    end = b
            else:
                total += end - cur
                cur, end = a, b
        return total + (end - cur if self.kernels else 0)

    def set_launches(self, launch_of: Mapping[int, int]) -> int:
        """Launch time of every op from its correlation id; returns how many have none."""
        get = launch_of.get
        self.launch = array("q", [get(c, -1) if c >= 0 else -1 for c in self.corr])
        return self.launch.count(-1)

    def summary(self) -> TraceSummary:
        union = self.union
        span = union.span
        return TraceSummary(
            span_ms=ms(span),
            gpu_busy_pct=pct(union.busy, span),
            kernel_busy_pct=pct(self.kernel_busy(), span),
            kernels=self.kernels,
            memops=len(self) - self.kernels,
            streams=len(self.stream_ids),
        )

    def device_streams(self) -> list[tuple[object, object]]:
        """The (device, stream) keys of the operations' streams, in order of appearance."""
        return [key for key in self.stream_ids if isinstance(key, tuple)]


def _numbers(ids: dict[Any, int], keys: Sequence[Any], order: list[Any] | None = None) -> list[int]:
    """The number of each key in `ids`, giving a key not seen before the next number (and
    appending it to `order`)."""
    numbers = list(map(ids.get, keys))
    if None in numbers:
        for key in [k for k in dict.fromkeys(keys) if k not in ids]:
            ids[key] = len(ids)
            if order is not None:
                order.append(key)
        numbers = list(map(ids.__getitem__, keys))
    return numbers  # type: ignore[return-value]
