"""Collect the kernel names of real traces into kernels.tsv's shape (run by hand).

    python tests/data/kernel_names/collect.py SOURCE_KEY TRACE [TRACE...] > new.tsv

Prints `kind<TAB>source<TAB>name` for every kernel, memory copy and memory set of the
given Chrome traces (torch.profiler / Kineto `.json` or `.json.gz`), one row per distinct
name, the source being SOURCE_KEY and the trace's path. The kind column is the current
classifier's: review each row before adding it to kernels.tsv, whose kinds are a person's
judgement and the test's answer, not the code's output.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

from nsightlab.parse.kinds import kernel_kind

GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}


def names_of(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    seen: dict[str, None] = {}
    for event in events:
        if isinstance(event, dict) and event.get("cat") in GPU_CATEGORIES and isinstance(event.get("name"), str):
            seen.setdefault(event["name"], None)
    return list(seen)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    key, paths = argv[0], [Path(p) for p in argv[1:]]
    for path in paths:
        for name in names_of(path):
            if "\t" in name or "\n" in name:
                continue
            print(f"{kernel_kind(name)}\t{key}:{path.as_posix()}\t{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
