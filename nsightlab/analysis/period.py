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
    """The repeating step of a kernel-name sequence (names as small ints), or None.

    1. Candidate periods: the most common distances between two calls of one kernel,
       counted on (at most) `sample` names from the middle of the sequence.
    2. Each candidate's score: the share of names equal to the name one period later.
       The best-scoring candidate wins; a divisor d of it that scores within
       max(0.01, min(0.05, 2/d)) is preferred: a period repeated twice scores as well as
       the period itself, and a step whose last kernel alternates scores 1/d better at
       twice its period.
       Below MIN_PERIOD_SCORE there is no repeating step.
    3. Where steps begin: from the first stretch of a whole period that repeats (exactly,
       else but for p/16 names),
       the position (within one period) after which the GPU typically waits longest
       (`gaps[i]`: the idle time before name i); without gaps, that stretch's start.
    4. Step boundaries: walking a period at a time in both directions, a step starts
       where the first names of the template step recur (one substitution tolerated),
       or, failing that, within a few names of there (an extra or a missing kernel in
       a step); the walk stops where neither holds. What lies before the first and
       after the last step (a prefill, a tail) belongs to no step.

    Cost: O(n) time with a handful of passes, and O(sample) extra memory.
    """
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
    p = best
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
