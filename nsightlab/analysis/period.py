"""Steps without ranges: a decode loop repeats the same sequence of kernel names, so its
period can be found in the sequence itself, noise and all (a one-off kernel inside a
step, a prefill prefix, a final kernel that changes each step)."""

from __future__ import annotations

import itertools
import operator
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# Period detection: the share of kernels that must equal the kernel one period later.
MIN_PERIOD_SCORE = 0.6


@dataclass
class Period:
    """Steps found in a kernel-name sequence: `boundaries[i]` is the index where step i
    starts; step i ends where step i+1 starts, the last one at `end`."""

    period: int
    score: float
    boundaries: list[int]
    end: int

    @property
    def count(self) -> int:
        return len(self.boundaries)


def _mismatches(a: Sequence[int], b: Sequence[int]) -> int:
    different: int = sum(map(operator.ne, a, b))
    return different + abs(len(a) - len(b))


def _lag_score(seq: Sequence[int], lag: int) -> float:
    n = len(seq) - lag
    if n <= 0:
        return 0.0
    same: int = sum(map(operator.eq, seq[:n], seq[lag:]))
    return same / n


def find_period(seq: Sequence[int], gaps: Sequence[int] | None = None, *, sample: int = 1 << 18) -> Period | None:
    """The repeating step of a sequence of operation names (as small ints), or None.

    1. Candidate periods: the most common distances between two calls of one kernel,
       counted on (at most) `sample` names from the middle of the sequence.
    2. Each candidate's score: the share of names equal to the name one period later.
       The best-scoring candidate wins; a divisor d of it that scores within
       max(0.01, min(0.05, 2/d)) is preferred: a period repeated twice scores as well as
       the period itself, and a step whose last kernel alternates scores 1/d better at
       twice its period.
       Below MIN_PERIOD_SCORE there is no repeating step.
    3. Where steps begin: see `boundaries`.

    Cost: O(n) time with a handful of passes, and O(sample) extra memory. `find_steps`
    adds the nesting (a layer inside a step) on top of it.
    """
    best = best_period(seq, sample=sample)
    if best is None:
        return None
    return boundaries(seq, gaps, best[0], best[1])


def best_period(seq: Sequence[int], *, sample: int = 1 << 18) -> tuple[int, float] | None:
    """Steps 1 and 2 of `find_period`: (period, score), or None."""
    n = len(seq)
    if n < 4:
        return None
    lo = max(0, (n - sample) // 2)
    window = list(seq[lo : lo + sample])
    last: dict[int, int] = {}
    distances: Counter[int] = Counter()
    half = len(window) // 2
    for i, x in enumerate(window):
        j = last.get(x)
        if j is not None and i - j <= half:
            distances[i - j] += 1
        last[x] = i
    candidates = [d for d, _ in distances.most_common(16)]
    if not candidates:
        return None
    scores = {d: _lag_score(window, d) for d in candidates}
    best = max(candidates, key=lambda d: (scores[d], -d))
    # A divisor may lose up to ~2 names per period to a kernel that varies from step to
    # step (2/d of its score), within [0.01, 0.05].
    divisors = [
        d for d in candidates if d < best and best % d == 0 and scores[d] >= scores[best] - max(0.01, min(0.05, 2 / d))
    ]
    if divisors:
        best = min(divisors)
    score = scores[best]
    if score < MIN_PERIOD_SCORE:
        return None
    return best, score


def boundaries(seq: Sequence[int], gaps: Sequence[int] | None, p: int, score: float) -> Period | None:
    """Where the steps of period `p` begin.

    3. From the first stretch of a whole period that repeats (exactly, else but for p/16
       names), the position (within one period) after which the GPU typically waits
       longest (`gaps[i]`: the idle time before name i); without gaps, that stretch's
       start.
    4. Walking a period at a time in both directions, a step starts where the first
       names of the template step recur (one substitution tolerated), or, failing that,
       within a few names of there (an extra or a missing kernel in a step); the walk
       stops where neither holds. What lies before the first and after the last step
       (a prefill, a tail) belongs to no step.
    """
    n = len(seq)
    # 3. The first stretch of a whole period that repeats one period later, but for a
    # kernel or two that vary from step to step.
    matches = bytes(map(operator.eq, seq[: n - p], seq[p:]))
    first = matches.find(b"\x01" * p)
    if first < 0:
        allowed = max(1, p // 16)
        running = [0, *itertools.accumulate(matches)]
        first = next((i for i in range(len(matches) - p + 1) if running[i + p] - running[i] >= p - allowed), -1)
        if first < 0:
            return None
    anchor = first
    if gaps is not None:
        repeats = max(1, min(64, (n - first) // p - 1))
        best_gap = -1.0
        for r in range(first, first + p):
            sample_gaps = sorted(gaps[r + k * p] for k in range(repeats) if r + k * p < n)
            median = sample_gaps[len(sample_gaps) // 2] if sample_gaps else 0
            if median > best_gap:
                best_gap, anchor = median, r
    k = min(p, 8)
    template = list(seq[anchor : anchor + p])
    sig = template[:k]
    tol = max(2, p // 20)

    def starts_here(i: int, exact: bool) -> bool:
        if i < 0 or i + k > n:
            return False
        return _mismatches(seq[i : i + k], sig) <= (0 if exact else 1)

    def next_start(expected: int, previous: int) -> int | None:
        if starts_here(expected, exact=False):
            return expected
        for delta in range(1, tol + 1):
            for j in (expected - delta, expected + delta):
                if previous < j and starts_here(j, exact=True):
                    return j
        return None

    boundaries = [anchor]
    pos = anchor
    while True:
        found = next_start(pos + p, pos)
        if found is None:
            break
        boundaries.append(found)
        pos = found
    pos = anchor
    while True:
        found = next_start(pos - p, -1)
        if found is None or found >= pos:
            break
        boundaries.insert(0, found)
        pos = found
    # The last step: as long as a step, if it resembles the template.
    tail = boundaries[-1]
    length = min(p, n - tail)
    if length >= p - tol and _mismatches(seq[tail : tail + length], template[:length]) <= max(1, p // 5):
        end = tail + length
    else:
        boundaries.pop()
        end = tail
    if len(boundaries) < 2:
        return None
    return Period(period=p, score=round(score, 4), boundaries=boundaries, end=end)


# ------------------------------------------------------------------ nested periods

# Mismatch clusters recur with one distance when at least this share of their
# distances lie within the tolerance of it.
CLUSTER_AGREEMENT = 0.6
# Without a graph replay to tell, repeats are layers of one step when the GPU's wait
# before a repeat is at most this many times its typical wait inside them.
STEP_GAP_FACTOR = 4.0
# A launch holds the repeats (a graph replay: one step) when it has this share of them.
ONE_LAUNCH_SHARE = 0.9
# How many repeats the GPU's waits are compared over.
QUIET_SAMPLE = 64


@dataclass
class Steps:
    """What the nested search found: steps (`period`: their boundaries, in the
    sequence's positions), or `one_step` (the whole sequence is one step), or neither
    (`why` says). `layer`: the period of what repeats inside a step, `layer_repeats`
    how often."""

    period: Period | None
    layer: int | None = None
    layer_repeats: int | None = None
    one_step: bool = False
    why: str = ""


def _cluster_starts(seq: Sequence[int], p: int) -> list[int]:
    """Where runs of positions whose name differs from the one p later begin (two
    mismatches less than p apart are one run)."""
    n = len(seq)
    mism = bytes(map(operator.ne, seq[: n - p], seq[p:]))
    starts: list[int] = []
    last = -(1 << 62)
    i = mism.find(1)
    while i >= 0:
        if i - last >= p:
            starts.append(i)
        last = i
        i = mism.find(1, i + 1)
    return starts


def _recurring(starts: Sequence[int], p: int) -> int | None:
    """The distance at which mismatch runs recur, when they do (at least two runs, most
    distances within max(2, D/20) of their median D, and D at least twice p)."""
    if len(starts) < 2:
        return None
    distances = sorted(b - a for a, b in itertools.pairwise(starts))
    d = distances[(len(distances) - 1) // 2]
    tol = max(2, d // 20)
    agree = sum(1 for x in distances if abs(x - d) <= tol)
    if d < 2 * p or agree < CLUSTER_AGREEMENT * len(distances):
        return None
    return d


def inner_layer(template: Sequence[int]) -> tuple[int, int] | None:
    """(period, repeats) of the longest stretch of a step that repeats one period (a
    layer), when it repeats at least twice; None otherwise."""
    distances: Counter[int] = Counter()
    last: dict[int, int] = {}
    for i, x in enumerate(template):
        j = last.get(x)
        if j is not None:
            distances[i - j] += 1
        last[x] = i
    best: tuple[int, int] | None = None
    for d, _ in distances.most_common(8):
        if d < 2 or 2 * d > len(template):
            continue
        eq = bytes(map(operator.eq, template[: len(template) - d], template[d:]))
        run = max((len(r) for r in eq.split(b"\x00")), default=0)
        repeats = run // d + 1
        covered = repeats * d
        if repeats >= 2 and (best is None or (covered, -d) > (best[0] * best[1], -best[0])):
            best = (d, repeats)
    return best


def _run(seq: Sequence[int], p: int) -> tuple[int, int]:
    """(start, end) of the longest stretch that repeats with period p (a name equal to
    the name p later, the last period included), across breaks shorter than two periods
    (a layer whose operations differ a little)."""
    n = len(seq)
    eq = bytes(map(operator.eq, seq[: n - p], seq[p:]))
    best, cur, pos = (0, 0), None, 0
    for chunk in eq.split(b"\x00"):
        if chunk:
            a, b = pos, pos + len(chunk)
            cur = (cur[0], b) if cur is not None and a - cur[1] < 2 * p else (a, b)
            if cur[1] - cur[0] > best[1] - best[0]:
                best = cur
        pos += len(chunk) + 1
    return best[0], best[1] + p


def _median(values: Sequence[int]) -> int:
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2] if ordered else 0


def find_steps(
    seq: Sequence[int],
    gaps: Sequence[int] | None = None,
    launch: Sequence[int] | None = None,
    *,
    sample: int = 1 << 18,
) -> Steps:
    """The steps of a sequence of operation names, seeing through layers.

    A decode step is a layer's operations repeated once per layer, between a head and a
    tail (embedding; final norm, LM head, sampling, the next token's copy), so the best
    period of the sequence (`best_period`) is often the layer. Then the places where the
    sequence stops repeating with that period (the head and tail) recur once per step:
    when they recur at a steady distance, the step period is the best-scoring lag near
    that distance (with at least two whole steps to compare) and the layer is the inner
    period. When they do not recur, the repeats are either steps (a loop without layers)
    or the layers of one step: one step when one launch holds them (`launch[i]`: the
    graph replay operation i belongs to, -1 for none) or, with `gaps` (the GPU's idle
    time before each operation), when the GPU waits no longer before a repeat than
    inside it (at most STEP_GAP_FACTOR times) and something precedes or follows them.
    (`launch[i]` may be each operation's launch correlation id: one id shared by most of
    the repeats is one launch, a graph replay; -1 is no launch.)
    A period of 1 (one operation, over and over) is never a step.
    """
    n = len(seq)
    best = best_period(seq, sample=sample)
    if best is None:
        return Steps(None, why="the operation sequence does not repeat (no period found)")
    p, score = best
    step_period = _recurring(_cluster_starts(seq, p), p)
    if step_period is not None:
        tol = max(2, step_period // 20)
        lags = [d for d in range(max(2, step_period - tol), step_period + tol + 1) if 2 * d <= n]  # never 0 or 1
        size = min(n, max(sample, 4 * (step_period + tol)))
        lo = (n - size) // 2
        window = seq[lo : lo + size]
        scored = [(_lag_score(window, d), -d) for d in lags if 2 * d <= len(window)]
        if scored:
            top, neg = max(scored)
            if top >= MIN_PERIOD_SCORE:
                found = boundaries(seq, gaps, -neg, top)
                if found is not None:
                    template = seq[found.boundaries[0] : found.boundaries[0] + found.period]
                    run_start, run_end = _run(template, p)
                    return Steps(found, layer=p, layer_repeats=(run_end - run_start) // p)
    if p == 1:
        return Steps(None, why="the sequence repeats one operation over and over: a period of 1 is not a step")
    start, end = _run(seq, p)
    repeats = (end - start) // p
    flanks = start > 0 or end < n
    one_launch = False
    if launch is not None and end > start:
        run = launch[start:end]
        # one launch holding most of the run holds its first, middle or last operation
        for c in {run[0], run[len(run) // 2], run[-1]}:
            if c >= 0 and run.count(c) >= ONE_LAUNCH_SHARE * len(run):
                one_launch = True
    quiet = False
    if gaps is not None and flanks and repeats >= 2:
        sampled = min(end, start + QUIET_SAMPLE * p)  # the first repeats tell
        inside = _median(gaps[start:sampled])
        at_repeat = max(_median(gaps[start + r : sampled : p]) for r in range(p))
        quiet = at_repeat <= STEP_GAP_FACTOR * max(inside, 1)
    if repeats >= 2 and (one_launch or quiet):
        why = "one graph replay holds them" if one_launch else "the GPU waits no longer between them than inside them"
        return Steps(None, layer=p, layer_repeats=repeats, one_step=True, why=why)
    found = boundaries(seq, gaps, p, score)
    if found is None:
        return Steps(None, why="the operation sequence does not repeat as steps (no two whole periods in a row)")
    layer = inner_layer(seq[found.boundaries[0] : found.boundaries[0] + p])
    return Steps(found, layer=layer[0] if layer else None, layer_repeats=layer[1] if layer else None)
