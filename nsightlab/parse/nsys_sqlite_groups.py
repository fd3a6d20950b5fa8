"""The kernels of an nsys SQLite export's pass grouped by (the NVTX range that launched
them, their name), each group the durations of its kernels: what the kernel summary (exact
medians) and `nvtx_kern_sum` are computed from.

Two ways to the same groups. In general, each kernel's duration is appended to its group
(one dict lookup an operation). Where the operations a range launched are runs of them
(`nsightlab.parse.nsys_sqlite_trace`: one thread launched them all in time order), a run's
kernels are split by name with `operator.itemgetter`s made once for each sequence of names:
the steps of a capture repeat one sequence, so the split is C's work for all but the
first run of each. Groups come in the order of their first kernel either way.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from itertools import repeat
from operator import add, itemgetter, mul, sub
from typing import TypeAlias

# Sequences of names remembered; a run of a sequence not among them is split one kernel at a time.
MAX_SEQUENCES = 256

Groups: TypeAlias = "dict[int, array[int]]"  # owner * width + name id -> durations


def by_operation(
    owner: array[int], name: array[int], start: array[int], end: array[int], kernel: Sequence[bool]
) -> Groups:
    """The groups from each operation's owner (-1: none): key `owner * width + name id`,
    `width` = len(kernel), the names' count; memory operations (not `kernel[name]`) left out."""
    width = len(kernel)
    keys = array("q", map(add, map(mul, owner, repeat(width)), name))
    groups = {k: array("q") for k in dict.fromkeys(keys)}
    appends = {k: d.append for k, d in groups.items()}
    for k, d in zip(keys, map(sub, end, start), strict=True):
        appends[k](d)
    return {k: d for k, d in groups.items() if kernel[k % width]}


def by_runs(
    runs: Sequence[tuple[int, int, int]], name: array[int], start: array[int], end: array[int], kernel: Sequence[bool]
) -> Groups:
    """The same groups from runs (range, lo, hi) of operations, in operation order: those
    outside every run were launched in no range (owner -1)."""
    width = len(kernel)
    groups: Groups = {}
    splits: dict[bytes, list[tuple[int, Callable[[array[int]], tuple[int, ...]]]]] = {}

    def add_run(owner: int, lo: int, hi: int) -> None:
        names = name[lo:hi]
        durations = array("q", map(sub, end[lo:hi], start[lo:hi]))
        key = names.tobytes()
        split = splits.get(key)
        if split is None:
            split = _split(names, kernel)
            if len(splits) < MAX_SEQUENCES:
                splits[key] = split
        base = owner * width
        for nid, take in split:
            held = groups.get(base + nid)
            if held is None:
                groups[base + nid] = array("q", take(durations))
            else:
                held.extend(take(durations))

    done = 0
    for owner, lo, hi in runs:
        if lo > done:
            add_run(-1, done, lo)
        add_run(owner, lo, hi)
        done = hi
    if done < len(name):
        add_run(-1, done, len(name))
    return groups


def _split(names: array[int], kernel: Sequence[bool]) -> list[tuple[int, Callable[[array[int]], tuple[int, ...]]]]:
    """For a sequence of names: each kernel name (in the order of its first place) with a
    function taking its places' values from a sequence as long, as a tuple."""
    places: dict[int, list[int]] = {}
    for i, nid in enumerate(names):
        if kernel[nid]:
            places.setdefault(nid, []).append(i)
    return [(nid, itemgetter(*at) if len(at) > 1 else _one(at[0])) for nid, at in places.items()]


def _one(i: int) -> Callable[[array[int]], tuple[int, ...]]:
    return lambda values: (values[i],)
