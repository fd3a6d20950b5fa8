"""Naming the regime of each size of a bandwidth sweep: launch-bound, cache-resident,
transition, DRAM-bound; and the DRAM plateau the regimes are judged against.

The rule is `classify_regimes`; its thresholds are the named constants below. Pure: no
I/O. `rates` builds a sweep's rows and lesson on top of it (and re-exports these names).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Literal

from nsightlab import units
from nsightlab.models import Model

Regime = Literal["launch", "cache", "transition", "dram", "interpreted"]

# --- thresholds of the regime rule (see classify_regimes) ---

#: A size is launch-bound while its time per call is within this factor of the floor.
LAUNCH_FACTOR = 1.5
#: The floor is the least time per call over this many of the smallest sizes.
FLOOR_ROWS = 3
#: With a single size at the floor, it counts as launch-bound only if the next size's
#: time grew by less than this fraction of its growth in bytes (time not following size).
LAUNCH_SCALING_MAX = 0.5
#: A working set "fits" in a cache of C bytes when it is at most this share of C: the
#: cache also holds other data, and on GPUs it is split into partitions (an H200 whose
#: torch reports 60 MB of L2 falls off its L2 bandwidth between 44 and 60 MB).
CACHE_FIT_FRACTION = 0.75
#: A working set at least this many times the cache must stream from DRAM.
DRAM_CACHE_MULTIPLE = 4.0
#: Rows within this relative distance of the plateau belong to it; the plateau is grown
#: from the largest size downwards while rows stay within it of the running median.
PLATEAU_TOLERANCE = 0.25


class RegimeInput(Model):
    """One size of a sweep, as the classifier sees it."""

    working_set_bytes: int  # the tensor's bytes: the op reads and writes this one buffer
    bytes_per_call: int
    seconds_per_call: float

    @property
    def bytes_per_s(self) -> float:
        return self.bytes_per_call / self.seconds_per_call


class RegimeResult(Model):
    regimes: list[Regime]  # one per input, in input order
    basis: Literal["cache size", "curve shape"]
    floor_seconds: float | None  # None when no size was launch-bound
    plateau_bytes_per_s: float | None
    plateau_rows: list[int]  # indices of the inputs the plateau was taken from
    plateau_is_estimate: bool
    notes: list[str]


def classify_regimes(
    points: Sequence[RegimeInput],
    *,
    cache_bytes: int | None,
    dram_spec_bytes_per_s: float | None = None,
) -> RegimeResult:
    """Name the regime of each size of a bandwidth sweep.

    The rule (thresholds are the module constants):

    1. launch: sizes, from the smallest up, whose time per call is within LAUNCH_FACTOR of
       the floor (the least time over the FLOOR_ROWS smallest sizes). The run stops at the
       first size that leaves the floor, and at the first size that does not fit in the
       cache: a working set that must stream from DRAM is not launch-bound even if it
       happens to read the floor. A floor needs evidence: two sizes on it, or, with one,
       the next size's time growing far less than its bytes (LAUNCH_SCALING_MAX).
    2. cache: not launch, and the working set fits in the cache
       (<= CACHE_FIT_FRACTION of it).
    3. The DRAM plateau: from the sizes at least DRAM_CACHE_MULTIPLE times the cache
       (failing that, the sizes that do not fit, marked as an estimate), grown from the
       largest size down while rows stay within PLATEAU_TOLERANCE of the running median;
       the plateau is their median. An estimated plateau above the DRAM spec is no DRAM
       figure at all (those sizes were still partly cached): it is dropped, with a note.
    4. The remaining sizes: dram when their bandwidth is at most the plateau plus
       PLATEAU_TOLERANCE, else transition: between the cache's rate and DRAM's. So a size
       just past the cache that already runs at the plateau is dram, and one that runs
       above it is partly cached. A size DRAM_CACHE_MULTIPLE times the cache or more that
       still runs well above the plateau is transition too, but not partly cached (no
       cache holds a part of it worth naming): a note says so, and names noise or a
       prefetcher. A size that does not fit but beats the DRAM spec is partly cached:
       transition, not a side forced.

    Without a cache size the rule falls back on the shape of the curve: the plateau is
    grown from the largest size as in 3; a size above it is cache when it is at or before
    the bandwidth peak (or beats the DRAM spec), transition after the peak.
    """
    n = len(points)
    regimes: list[Regime | None] = [None] * n
    notes: list[str] = []
    if n == 0:
        return RegimeResult(
            regimes=[],
            basis="cache size" if cache_bytes else "curve shape",
            floor_seconds=None,
            plateau_bytes_per_s=None,
            plateau_rows=[],
            plateau_is_estimate=False,
            notes=["no sizes were measured"],
        )
    order = sorted(range(n), key=lambda i: points[i].working_set_bytes)
    bw = [p.bytes_per_s for p in points]
    secs = [p.seconds_per_call for p in points]
    ws = [p.working_set_bytes for p in points]

    # 1. launch
    floor = min(secs[i] for i in order[:FLOOR_ROWS])
    run: list[int] = []
    for i in order:
        if cache_bytes and ws[i] > cache_bytes:
            break
        if secs[i] > LAUNCH_FACTOR * floor:
            break
        run.append(i)
    if len(run) == 1:
        nxt = order.index(run[0]) + 1
        if nxt < n:
            j = order[nxt]
            time_growth = secs[j] / secs[run[0]]
            bytes_growth = points[j].bytes_per_call / points[run[0]].bytes_per_call
            if time_growth >= LAUNCH_SCALING_MAX * bytes_growth:
                run = []
        else:
            run = []
    for i in run:
        regimes[i] = "launch"
    floor_seconds = min(secs[i] for i in run) if run else None

    # 2. cache by residency
    if cache_bytes:
        for i in order:
            if regimes[i] is None and ws[i] <= CACHE_FIT_FRACTION * cache_bytes:
                regimes[i] = "cache"

    # 3. the plateau
    rest = [i for i in order if regimes[i] is None]
    estimate = False
    if cache_bytes:
        candidates = [i for i in rest if ws[i] >= DRAM_CACHE_MULTIPLE * cache_bytes]
        if not candidates:
            candidates = rest  # the sizes that do not fit, if any
            estimate = True
            if not candidates and any(r == "cache" for r in regimes):
                notes.append("every size fitted in the cache; rerun with larger sizes to see DRAM")
            elif not candidates:
                notes.append(
                    "every size sat at the launch floor (all of them fit in the cache): rerun with larger sizes to "
                    "see the cache and DRAM"
                )
    else:
        candidates = rest
        estimate = True
        notes.append("cache size unknown: regimes are inferred from the shape of the curve")
    tail = _plateau_tail(candidates, bw)
    plateau = statistics.median(bw[i] for i in tail) if tail else None
    spec = dram_spec_bytes_per_s
    if plateau is not None and spec and plateau > spec:
        if estimate:
            notes.append(
                f"the largest sizes still ran at {plateau / 1e12:.3g} TB/s, above the "
                f"{spec / 1e12:.4g} TB/s DRAM spec: they were partly served from a cache, so "
                "there is no DRAM figure; rerun with larger sizes"
            )
            plateau, tail = None, []
        else:
            notes.append(
                "the DRAM plateau is above the DRAM spec: either the spec does not match "
                "this device or the largest sizes are still served from a cache"
            )
    elif plateau is not None and estimate and cache_bytes:
        notes.append(
            f"no size reached {DRAM_CACHE_MULTIPLE:g}x the cache; the DRAM figure comes from "
            "the largest sizes, which may still be partly cached"
        )
    # above a credible spec, a size cannot be streaming from DRAM alone
    beats_spec = [bool(spec and plateau and plateau <= spec and bw[i] > spec) for i in range(n)]

    # 4. the rest
    fast: list[int] = []  # far past the cache, yet well above the plateau
    non_launch = [i for i in order if regimes[i] != "launch"]
    peak_pos = max(range(len(non_launch)), key=lambda k: bw[non_launch[k]]) if non_launch else -1
    for pos, i in enumerate(non_launch):
        if regimes[i] is not None:
            continue
        on_plateau = plateau is not None and bw[i] <= plateau * (1 + PLATEAU_TOLERANCE) and not beats_spec[i]
        if cache_bytes:
            regimes[i] = "dram" if on_plateau else "transition"
            far_past = ws[i] >= DRAM_CACHE_MULTIPLE * cache_bytes and not beats_spec[i]
            if far_past and not on_plateau and plateau is not None:
                fast.append(i)
        elif spec and bw[i] > spec:
            regimes[i] = "cache"
        elif on_plateau:
            regimes[i] = "dram"
        else:
            regimes[i] = "cache" if pos <= peak_pos else "transition"
    if fast and plateau is not None and cache_bytes:
        sizes = ", ".join(units.size(ws[i]) for i in fast)
        ratios = [bw[i] / plateau for i in fast]
        times = units.ratio(min(ratios)) + ("" if len(fast) == 1 else f"-{units.ratio(max(ratios))}")
        notes.append(
            f"the {sizes} working set{'' if len(fast) == 1 else 's'} (transition) ran at {times} the rate of the "
            f"largest sizes, though {DRAM_CACHE_MULTIPLE:g}x the {units.size(cache_bytes)} cache or more: too large "
            "to be partly cached, so noise or a prefetcher; rerun with more --iters, or on a quieter machine"
        )
    return RegimeResult(
        regimes=[r if r is not None else "transition" for r in regimes],
        basis="cache size" if cache_bytes else "curve shape",
        floor_seconds=floor_seconds,
        plateau_bytes_per_s=plateau,
        plateau_rows=sorted(tail, key=lambda i: ws[i]),
        plateau_is_estimate=estimate and plateau is not None,
        notes=notes,
    )


def _plateau_tail(candidates: list[int], bw: list[float]) -> list[int]:
    """From the largest candidate down, the run of rows within tolerance of its median."""
    tail: list[int] = []
    for i in reversed(candidates):
        if not bw[i] > 0:  # no bandwidth is no plateau (and never a divisor)
            break
        if tail:
            mid = statistics.median(bw[j] for j in tail)
            if abs(bw[i] / mid - 1) > PLATEAU_TOLERANCE:
                break
        tail.append(i)
    return tail
