#!/usr/bin/env python3
"""What reading kernel names costs: demangling, kinds and a table's distinct short names,
on the real names of tests/data/kernel_names (each step cold: its caches cleared).

    python bench/kernel_names.py --repeat 5

Prints the median, min and max of each step, per name and in all.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]  # this checkout's nsightlab

from nsightlab.parse import demangle, kinds, names  # noqa: E402

DATA = ROOT / "tests" / "data" / "kernel_names"


def _corpus() -> list[str]:
    lines = (DATA / "kernels.tsv").read_text(encoding="utf-8").splitlines()
    return [line.split("\t", 2)[2] for line in lines if line and not line.startswith("#")]


def _symbols() -> list[str]:
    with gzip.open(DATA / "gxx_symbols.tsv.gz", "rt", encoding="utf-8") as f:
        return [line.split("\t", 1)[0] for line in f]


def _clear() -> None:
    for cached in (demangle.demangle, kinds.kernel_kind, kinds.step_kernel_kind, names.short_kernel_name):
        cached.cache_clear()


def _time(step: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        _clear()
        t0 = time.perf_counter()
        step()
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    corpus, symbols = _corpus(), _symbols()
    steps: list[tuple[str, int, Callable[[], object]]] = [
        ("demangle: g++ symbols", len(symbols), lambda: [demangle.demangle(s) for s in symbols]),
        ("kernel_kind: corpus", len(corpus), lambda: [kinds.kernel_kind(n) for n in corpus]),
        ("short_kernel_name: corpus", len(corpus), lambda: [names.short_kernel_name(n) for n in corpus]),
        ("distinct_short_names: corpus as one column", len(corpus), lambda: names.distinct_short_names(corpus)),
    ]
    print(f"{'step':44} {'names':>6} {'median':>9} {'min':>9} {'max':>9} {'per name':>9}")
    for label, count, step in steps:
        times = _time(step, args.repeat)
        median = statistics.median(times)
        print(
            f"{label:44} {count:6d} {median * 1e3:7.1f}ms {min(times) * 1e3:7.1f}ms {max(times) * 1e3:7.1f}ms "
            f"{median / count * 1e6:7.1f}us"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
