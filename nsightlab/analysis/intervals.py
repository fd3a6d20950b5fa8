"""The union of time intervals, built as they stream in time order: how long something
(a GPU, over all its streams) was busy, never counting an overlap twice."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Sequence
from itertools import accumulate, compress, islice
from operator import gt, le, sub

# Pairs merged at a time by `IntervalUnion.extend`.
_CHUNK = 1 << 16


class IntervalUnion:
    """The union of [start, end) intervals, fed one at a time.

    Fed in start order it runs in constant time per interval and keeps only the disjoint
    busy segments (16 bytes each, needed to ask how busy any window was). Fed out of
    order it keeps the late intervals aside and merges them at `finish()`.
    """

    def __init__(self) -> None:
        self.seg_start = array("q")
        self.seg_end = array("q")
        self._cur_start: int | None = None
        self._cur_end = 0
        self._late: list[tuple[int, int]] = []
        self.first_start: int | None = None
        self.last_end: int | None = None
        self.in_order = True
        self._prefix: array[int] | None = None

    def add(self, start: int, end: int) -> None:
        if end < start:
            end = start
        if self.first_start is None or start < self.first_start:
            self.first_start = start
        if self.last_end is None or end > self.last_end:
            self.last_end = end
        cur = self._cur_start
        if cur is None:
            self._cur_start, self._cur_end = start, end
        elif start >= cur:
            if start <= self._cur_end:
                if end > self._cur_end:
                    self._cur_end = end
            else:
                self.seg_start.append(cur)
                self.seg_end.append(self._cur_end)
                self._cur_start, self._cur_end = start, end
        else:
            self.in_order = False
            self._late.append((start, end))

    def extend(self, starts: Sequence[int], ends: Sequence[int]) -> None:
        """`add` every (start, end) pair: the same result. Pairs in start order, none
        ending before it starts (a trace's operations), are merged by loops that run in
        C: with the running maximum of the ends, a segment begins at each start past it."""
        if len(starts) > _CHUNK:  # a chunk at a time: the loops' lists stay small
            for lo in range(0, len(starts), _CHUNK):
                self.extend(starts[lo : lo + _CHUNK], ends[lo : lo + _CHUNK])
            return
        if not starts:
            return
        cur = self._cur_start
        if (cur is not None and starts[0] < cur) or not _in_start_order(starts, ends):
            self._extend_one_by_one(starts, ends)
            return
        head = starts[0]
        if cur is None:
            cur, cur_end = head, ends[0]
            starts, ends = starts[1:], ends[1:]
        else:
            cur_end = self._cur_end
        highest = running_max(ends, cur_end)
        begins = list(map(gt, starts, highest))
        opened = list(compress(starts, begins))
        if opened:
            self.seg_start.append(cur)
            self.seg_start.extend(opened[:-1])
            self.seg_end.extend(compress(highest, begins))
            cur = opened[-1]
        self._cur_start, self._cur_end = cur, highest[-1]
        first, last = self.first_start, self.last_end
        self.first_start = head if first is None else min(first, head)
        self.last_end = highest[-1] if last is None else max(last, highest[-1])

    def _extend_one_by_one(self, starts: Sequence[int], ends: Sequence[int]) -> None:
        seg_start, seg_end = self.seg_start, self.seg_end
        cur, cur_end = self._cur_start, self._cur_end
        first, last = self.first_start, self.last_end
        begin = 0
        n = len(starts)
        if cur is None and n:
            cur, cur_end = starts[0], max(ends[0], starts[0])
            first = cur if first is None else min(first, cur)
            last = cur_end if last is None else max(last, cur_end)
            begin = 1
        if cur is None or first is None or last is None:
            return
        for k in range(begin, n):
            start, end = starts[k], ends[k]
            if start < cur:  # out of order: the general path from here on
                self._cur_start, self._cur_end = cur, cur_end
                self.first_start, self.last_end = first, last
                for j in range(k, n):
                    self.add(starts[j], ends[j])
                return
            if end > last:
                last = end
            if start <= cur_end:
                if end > cur_end:
                    cur_end = end
            else:
                seg_start.append(cur)
                seg_end.append(cur_end)
                cur, cur_end = start, end
        self._cur_start, self._cur_end = cur, cur_end
        self.first_start, self.last_end = first, last

    def finish(self) -> IntervalUnion:
        """Close the last segment and merge intervals that came out of order."""
        if self._cur_start is not None:
            self.seg_start.append(self._cur_start)
            self.seg_end.append(self._cur_end)
            self._cur_start = None
        if self._late:
            merged = sorted([*zip(self.seg_start, self.seg_end, strict=True), *self._late])
            self._late = []
            self.seg_start, self.seg_end = array("q"), array("q")
            for s, e in merged:
                if self.seg_start and s <= self.seg_end[-1]:
                    if e > self.seg_end[-1]:
                        self.seg_end[-1] = e
                else:
                    self.seg_start.append(s)
                    self.seg_end.append(e)
        self._prefix = array("q", accumulate(map(sub, self.seg_end, self.seg_start), initial=0))
        return self

    @property
    def busy(self) -> int:
        """Total length of the union (after `finish()`)."""
        assert self._prefix is not None, "call finish() first"
        return self._prefix[-1]

    @property
    def span(self) -> int:
        if self.first_start is None or self.last_end is None:
            return 0
        return self.last_end - self.first_start

    def busy_within(self, a: int, b: int) -> int:
        """How long the union covers [a, b) (after `finish()`)."""
        if b <= a:
            return 0
        assert self._prefix is not None, "call finish() first"
        starts, ends = self.seg_start, self.seg_end
        lo = bisect.bisect_right(ends, a)  # first segment ending after a
        hi = bisect.bisect_left(starts, b)  # segments [lo, hi) start before b
        if hi <= lo:
            return 0
        total = self._prefix[hi] - self._prefix[lo]
        if starts[lo] < a:
            total -= a - starts[lo]
        if ends[hi - 1] > b:
            total -= ends[hi - 1] - b
        return total


def union_length(intervals: Iterable[tuple[int, int]]) -> int:
    """Length of the union of [start, end) intervals, in any order."""
    union = IntervalUnion()
    for start, end in intervals:
        union.add(start, end)
    return union.finish().busy


def _in_start_order(starts: Sequence[int], ends: Sequence[int]) -> bool:
    """Every start at least the one before, every end at least its start."""
    return all(map(le, starts, islice(starts, 1, None))) and all(map(le, starts, ends))


def running_max(ends: Sequence[int], before: int) -> list[int]:
    """highest[k]: the latest of `before` and ends[:k] (k up to len(ends)): where a pair
    that starts past it begins a segment of the union. Ends that never decrease (one
    stream's operations) are their own running maximum."""
    if (not ends or before <= ends[0]) and all(map(le, ends, islice(ends, 1, None))):
        return [before, *ends]
    return list(accumulate(ends, max, initial=before))
