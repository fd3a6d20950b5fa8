"""A step's accumulation (its rows kept, its kernels' time by name counted only for the
steps that show it), attribution by launch and a union fed a batch at a time, against
the rules written out: the same figures for every step, the same step for every
operation, the same union, on random operations in and out of start order, overlapping or
not, nested step ranges, graph replays and operations that belong to no step."""

from __future__ import annotations

import bisect
import itertools
from array import array
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nsightlab.analysis.engine_ranges import HostRange
from nsightlab.analysis.intervals import IntervalUnion
from nsightlab.analysis.optable import KERNEL, OpTable
from nsightlab.analysis.projection import StepAcc, accumulate, attribute

_PAIRS = st.lists(st.tuples(st.integers(-50, 400), st.integers(-5, 60)), max_size=60)


def _union_state(u: IntervalUnion) -> tuple[Any, ...]:
    u.finish()
    return list(u.seg_start), list(u.seg_end), u.first_start, u.last_end, u.in_order, u.busy


@given(pairs=_PAIRS, cuts=st.lists(st.integers(1, 12), max_size=10), ordered=st.booleans())
def test_a_union_extended_in_chunks_is_the_union_added_one_by_one(
    pairs: list[tuple[int, int]], cuts: list[int], ordered: bool
) -> None:
    intervals = [(a, a + d) for a, d in pairs if d >= 0]
    if ordered:
        intervals.sort()
    one_by_one = IntervalUnion()
    for a, b in intervals:
        one_by_one.add(a, b)
    chunked = IntervalUnion()
    at = 0
    for size in [*cuts, len(intervals)]:
        chunk = intervals[at : at + size]
        chunked.extend([a for a, _ in chunk], [b for _, b in chunk])
        at += size
    assert _union_state(chunked) == _union_state(one_by_one)


def _ops(spans: list[tuple[int, int, int, int]]) -> OpTable:
    """Operations (start, duration, kind code, correlation id) in start order."""
    ops = OpTable()
    for start, dur, kind, corr in sorted(spans):
        ops.add(start, start + dur, f"k{corr % 3}", ("kernel", "memcpy", "memset")[kind], (0, corr % 2), corr)
    ops.seal()
    return ops


_SPANS = st.lists(
    st.tuples(st.integers(0, 2000), st.integers(0, 60), st.sampled_from([0, 0, 0, 1, 2]), st.integers(-1, 40)),
    min_size=1,
    max_size=80,
)
_STEPS = st.lists(st.tuples(st.integers(-100, 2200), st.integers(0, 700)), min_size=1, max_size=8)


def _by_the_rule(launches: Sequence[int], ranges: list[HostRange]) -> list[int]:
    """The step of each launch, the rule written out one operation at a time: the latest
    step begun at or before it that has not ended before it, among the last four begun."""
    starts = [r.start for r in ranges]
    out = []
    for t in launches:
        step = -1
        if t >= 0:
            s = bisect.bisect_right(starts, t) - 1
            step = next((k for k in range(s, max(s - 4, -1), -1) if ranges[k].end >= t), -1)
        out.append(step)
    return out


@settings(max_examples=200, deadline=None)
@given(spans=_SPANS, steps=_STEPS, launches=st.lists(st.integers(-3, 2300), min_size=80, max_size=80))
def test_attribution_by_launch_is_the_latest_step_begun_that_holds_the_launch(
    spans: list[tuple[int, int, int, int]], steps: list[tuple[int, int]], launches: list[int]
) -> None:
    ops = _ops(spans)
    ops.launch = array("q", launches[: len(ops)])
    ranges = sorted((HostRange(f"s{i}", a, a + d) for i, (a, d) in enumerate(steps)), key=lambda r: (r.start, r.end))
    assert list(attribute(ops, ranges, "launch")) == _by_the_rule(ops.launch, ranges)


@settings(max_examples=200, deadline=None)
@given(spans=_SPANS, steps=_STEPS, cuts=st.lists(st.integers(0, 80), max_size=4), data=st.data())
def test_attribution_of_launches_in_runs_of_order_is_the_same(
    spans: list[tuple[int, int, int, int]], steps: list[tuple[int, int]], cuts: list[int], data: st.DataObject
) -> None:
    """Launches in runs of increasing time (as a trace's launches come in GPU order, long
    runs and short), many at a step's start or end, each run attributed by slices: the
    same step for every operation as the rule gives it one at a time."""
    bounds_of_steps = [t + d for a, w in steps for t in (a, a + w) for d in (-1, 0, 1)]
    any_time = st.integers(-3, 2300) | st.sampled_from(bounds_of_steps)
    launches = data.draw(st.lists(any_time, min_size=80, max_size=80))
    ops = _ops(spans)
    bounds = sorted({0, len(ops), *(c for c in cuts if c < len(ops))})
    ops.launch = array("q", [t for lo, hi in itertools.pairwise(bounds) for t in sorted(launches[lo:hi])])
    ranges = sorted((HostRange(f"s{i}", a, a + d) for i, (a, d) in enumerate(steps)), key=lambda r: (r.start, r.end))
    assert list(attribute(ops, ranges, "launch")) == _by_the_rule(ops.launch, ranges)


def _expected_figures(ops: OpTable, step_of: list[int], k: int, graphs: set[int]) -> tuple[Any, ...]:
    rows = [i for i, s in enumerate(step_of) if s == k]
    if not rows:
        return (0, 0, 0, 0, None, None, 0, 0, set(), 0, [])

    def union(selected: list[int]) -> int:
        u = IntervalUnion()
        for i in selected:
            u.add(ops.start[i], ops.end[i])
        return u.finish().busy

    kernels = [i for i in rows if ops.kind[i] == KERNEL]
    memops = [i for i in rows if ops.kind[i] != KERNEL]
    replayed = [ops.corr[i] for i in rows if ops.corr[i] in graphs]
    return (
        len(rows),
        len(kernels),
        len(memops),
        sum(ops.end[i] - ops.start[i] for i in memops),
        ops.start[rows[0]],
        max(ops.end[i] for i in rows),
        union(rows),
        union(kernels) if kernels else 0,
        set(replayed),
        len(replayed),
        rows,
    )


@settings(max_examples=200, deadline=None)
@given(spans=_SPANS, assign=st.lists(st.integers(-1, 5), min_size=80, max_size=80), graphs=st.sets(st.integers(0, 40)))
def test_a_steps_figures_are_those_of_its_operations(
    spans: list[tuple[int, int, int, int]], assign: list[int], graphs: set[int]
) -> None:
    ops = _ops(spans)
    step_of = assign[: len(ops)]
    accs = [StepAcc(name=f"s{k}", cpu_start=None, cpu_end=None, group=None) for k in range(6)]
    accumulate(ops, accs, array("l", step_of), graphs)
    for k, acc in enumerate(accs):
        got = (
            acc.count,
            acc.kernels,
            acc.memops,
            acc.memops_ns,
            acc.first,
            acc.last_end,
            acc.busy,
            acc.kernel_busy,
            acc.graphs,
            acc.graph_ops,
            list(acc.ops),
        )
        assert got == _expected_figures(ops, step_of, k, graphs)
        by_name: dict[int, int] = {}
        for i in acc.ops:  # in start order: the order a kernel's name first ran in
            if ops.kind[i] == KERNEL:
                by_name[ops.name[i]] = by_name.get(ops.name[i], 0) + ops.end[i] - ops.start[i]
        assert list(acc.kernel_time(ops).items()) == list(by_name.items())


def test_operations_that_end_before_they_start_follow_the_running_segment() -> None:
    # (an export may hold them)
    ops = OpTable()
    for start, end in [(0, 10), (5, 3), (20, 30), (25, 22)]:
        ops.start.append(start)
        ops.end.append(end)
        ops.kind.append(KERNEL)
        ops.name.append(0)
        ops.corr.append(-1)
    ops.names = ["k"]
    accs = [StepAcc(name="s", cpu_start=None, cpu_end=None, group=None)]
    accumulate(ops, accs, array("l", [0, 0, 0, 0]), set())
    acc = accs[0]
    assert (acc.count, acc.busy, acc.kernel_busy, acc.first, acc.last_end) == (4, 20, 20, 0, 30)
    assert list(itertools.chain(acc.ops)) == [0, 1, 2, 3]
