"""The union of time intervals, built as they stream in time order: how long something
(a GPU, over all its streams) was busy, never counting an overlap twice."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Sequence
from itertools import accumulate, compress, islice, repeat
from operator import ge, sub


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
        self._long_gaps: dict[int, tuple[array[int], array[int]]] = {}  # by least length

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
        """`add` every (start, end) pair: the same result, in one loop without a call
        per interval while they come in start order."""
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
        prefix = array("q", [0])
        prefix.extend(accumulate(map(sub, self.seg_end, self.seg_start)))
        self._prefix = prefix
        self._long_gaps = {}
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

    def gaps_within(self, a: int, b: int, at_least: int) -> list[tuple[int, int]]:
        """The gaps between the union's segments at least `at_least` long, the parts of
        them inside [a, b) (after `finish()`). The gaps of each length asked for are
        found once, in one pass over the segments."""
        assert self._prefix is not None, "call finish() first"
        found = self._long_gaps.get(at_least)
        if found is None:
            starts, ends = self.seg_start, self.seg_end
            lengths = map(sub, islice(starts, 1, None), ends)  # gap i: from ends[i] to starts[i + 1]
            index = list(compress(range(len(starts)), map(ge, lengths, repeat(at_least))))
            found = (array("q", [ends[i] for i in index]), array("q", [starts[i + 1] for i in index]))
            self._long_gaps[at_least] = found
        gap_starts, gap_ends = found
        out = []
        for k in range(bisect.bisect_right(gap_ends, a), bisect.bisect_left(gap_starts, b)):
            g0, g1 = max(gap_starts[k], a), min(gap_ends[k], b)
            if g1 > g0:
                out.append((g0, g1))
        return out


def union_length(intervals: Iterable[tuple[int, int]]) -> int:
    """Length of the union of [start, end) intervals, in any order."""
    union = IntervalUnion()
    for start, end in intervals:
        union.add(start, end)
    return union.finish().busy
