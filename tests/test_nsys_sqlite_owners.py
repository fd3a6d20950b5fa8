"""Which NVTX range launched each GPU operation of an nsys SQLite export, and the summaries
built on it (`nvtx_kern_sum`, `nvtx_gpu_proj_sum`, the kernel summary), against answers
worked out by brute force from the same rows.

Checked with launches in the kernels' order and shuffled, on nested ranges with gaps
between them, kernels launched outside every range, and ties."""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

import pytest
from nsys_sqlite_build import ExportWriter, api_name

from nsightlab.parse.nsys_sqlite_report import build_report
from nsightlab.parse.nsys_sqlite_trace import SqliteTrace

NAMES = ["gemv", "rms_norm", "flash_fwd", "argmax"]


def _ranges(rng: random.Random, t0: int, t1: int, depth: int) -> list[tuple[int, int, str]]:
    """Nested ranges inside [t0, t1], some touching, some with gaps between them."""
    out: list[tuple[int, int, str]] = []
    t = t0
    while depth and t < t1 - 40:
        a = t + rng.choice([0, 0, 5, 17])
        b = min(t1, a + rng.randint(10, 400))
        if b <= a:
            break
        out.append((a, b, f"level{depth}:{rng.randint(0, 2)}"))
        out.extend(_ranges(rng, a, b - 1, depth - 1))  # a child may start with its parent, never end with it
        t = b + rng.choice([0, 3, 30])
    return out


def _build(
    path: Path, seed: int, *, ordered: bool
) -> tuple[list[tuple[int, int, int, str]], list[tuple[int, int, str]]]:
    """An export of nested ranges on one thread and 600 kernels, each launched by its own
    call: launches in the kernels' start order (`ordered`) or not. Returns the kernels
    (start, end, launch, name) and the ranges (start, end, text)."""
    rng = random.Random(seed)
    ranges = _ranges(rng, 1_000, 40_000, 3)
    launches = sorted(rng.randint(500, 41_000) for _ in range(600))
    starts = sorted(rng.randint(50_000, 90_000) for _ in range(600))
    if not ordered:
        rng.shuffle(launches)
    kernels = [(s, s + rng.randint(1, 90), at, rng.choice(NAMES)) for s, at in zip(starts, launches, strict=True)]
    with ExportWriter(path) as w:
        w.gpu(0, "NVIDIA H100 80GB HBM3")
        w.kernels((s, e, name, 0, 7, corr) for corr, (s, e, _, name) in enumerate(kernels, start=1))
        w.api((at, at + 1, api_name("cudaLaunchKernel"), corr) for corr, (_, _, at, _) in enumerate(kernels, start=1))
        w.nvtx((a, b, text, 4242) for a, b, text in ranges)
    return kernels, ranges


def _innermost(at: int, ranges: list[tuple[int, int, str]]) -> int:
    """The index of the innermost range open at `at` (the last to start of those holding
    it, as nsys's sort puts an enclosing range first); -1: none."""
    ordered = sorted(range(len(ranges)), key=lambda i: (ranges[i][0], -ranges[i][1]))
    held = [i for i in ordered if ranges[i][0] <= at <= ranges[i][1]]
    return held[-1] if held else -1


@pytest.mark.parametrize("ordered", [True, False], ids=["in-order-launches", "shuffled-launches"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_kernel_goes_to_the_innermost_range_open_at_its_launch(tmp_path: Path, seed: int, ordered: bool) -> None:
    kernels, ranges = _build(tmp_path / "r.sqlite", seed, ordered=ordered)
    with SqliteTrace.open(tmp_path / "r.sqlite") as trace:
        records = trace.ranges().records
        owner = trace.attributed().owner
        assert owner is not None
        got = [(records[r].start_ns, records[r].end_ns) if r >= 0 else None for r in owner]
        projections = {(p.orig_start_ns, p.orig_end_ns): p for p in trace.projections()}
        report = build_report(trace)
    want = [ranges[i][:2] if (i := _innermost(at, ranges)) >= 0 else None for _, _, at, _ in kernels]
    assert got == want
    assert any(w is None for w in want) and len({w for w in want if w}) > 5  # outside every range, and many ranges

    # each range's projection: its kernels and those of the ranges inside it
    inside: dict[tuple[int, int], list[tuple[int, int, str]]] = {}
    for (s, e, at, name), w in zip(kernels, want, strict=True):
        for a, b, _ in ranges:
            if w is not None and a <= w[0] and w[1] <= b and a <= at <= b:
                inside.setdefault((a, b), []).append((s, e, name))
    assert set(projections) == set(inside)
    for key, ops in inside.items():
        p = projections[key]
        assert (p.proj_start_ns, p.proj_end_ns, p.gpu_ops) == (min(o[0] for o in ops), max(o[1] for o in ops), len(ops))

    # nvtx_kern_sum: per (range name, kernel name), over every instance of the range
    assert report.nvtx_kernels is not None
    rows = {(r.range_name, r.kernel_name): r for r in report.nvtx_kernels}
    expect: dict[tuple[str, str], list[int]] = {}
    count: dict[tuple[str, str], set[tuple[int, int]]] = {}
    for (a, b, text), ops in ((r, inside.get(r[:2], [])) for r in ranges):
        for s, e, name in ops:
            expect.setdefault((f":{text}", name), []).append(e - s)
            count.setdefault((f":{text}", name), set()).add((a, b))
    assert set(rows) == set(expect)
    for key, durations in expect.items():
        row = rows[key]
        assert (row.kernel_instances, row.range_instances) == (len(durations), len(count[key]))
        assert (row.total_ns, row.min_ns, row.max_ns) == (sum(durations), min(durations), max(durations))
        assert math.isclose(row.stddev_ns or 0.0, statistics.stdev(durations) if len(durations) > 1 else 0.0)

    # the kernel summary: every kernel, in a range or not, exact medians
    assert report.kernels is not None
    by_name = {k.name: k for k in report.kernels}
    for name in NAMES:
        durations = [e - s for s, e, _, n in kernels if n == name]
        k = by_name[name]
        assert (k.instances, k.total_ns, k.med_ns) == (len(durations), sum(durations), statistics.median(durations))
