#!/usr/bin/env python3
"""What each way of going faster buys on a Kineto trace (the house's 20% rule): the step
anatomy of a trace with everything on, and with one of them swapped for the plain way,
each in its own process, side by side.

    all                  as `analyze` runs it
    records              the reader's records, one event at a time into the op table (as
                         before the columns), instead of `batches()`

Three more ways were measured here and taken out, each buying under 20% on a million GPU
events (bench/RESULTS.md, "kineto-speed"): the step anatomy's loops in C (attribution by
launch, each step's figures, the unions a chunk at a time), times of one shape read as one
msgspec array of integers, and each distinct duration converted once.

    python bench/kineto_variants.py --repeat 3 --ops 1000000
    python bench/kineto_variants.py --repeat 5 TRACE.json.gz
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]
from _timing import side_by_side, table  # noqa: E402

VARIANTS = ["all", "records"]


def _records(path: str) -> None:
    from nsightlab.analysis import steps
    from nsightlab.analysis.engine_ranges import HostRange
    from nsightlab.analysis.optable import OpTable
    from nsightlab.analysis.projection import HostCalls
    from nsightlab.parse import kineto

    reader = kineto.KinetoReader(path, launches_only=True)
    ops, calls, ranges = OpTable(), HostCalls(), []
    for e in reader:
        if type(e) is kineto.GpuEvent:
            ops.add(e.start_ns, e.end_ns, e.name, e.kind, (e.device, e.stream), e.correlation)
        elif type(e) is kineto.LaunchCall:
            calls.add(e.name, e.start_ns, e.end_ns, e.correlation, e.pid)
        elif type(e) is kineto.TraceRange and e.cat == "user_annotation":
            ranges.append(HostRange(e.name, e.start_ns, e.end_ns, e.pid, e.tid))
    ops.seal()
    ops.set_launches(calls.launch_of)
    calls.launch_of.clear()
    steps.analyze_timeline(
        ops, ranges, calls, input="kineto", attribution="launch", default_source="record_function", tile=True
    )


def _run(variant: str, path: str) -> None:
    from nsightlab.analysis.steps import analyze_kineto

    if variant == "records":
        _records(path)
        return
    result = analyze_kineto(path, tile=True)
    print(result.trace.model_dump(), file=sys.stderr)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ops", type=int, default=0, help="also a generated trace of this many GPU events")
    parser.add_argument("--variant", help=argparse.SUPPRESS)  # a child: run one variant
    args = parser.parse_args(argv)
    if args.variant:
        _run(args.variant, args.paths[0])
        return 0
    me = [sys.executable, str(Path(__file__).resolve())]
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(p) for p in args.paths]
        if args.ops:
            from trace_analyze import generate_kineto

            generated = Path(tmp) / "generated.pt.trace.json.gz"
            generate_kineto(generated, args.ops)
            paths.append(generated)
        for path in paths:
            print(f"\n{path.name}")
            commands = {v: [*me, str(path), "--variant", v] for v in VARIANTS}
            print(table(side_by_side(commands, repeat=args.repeat, warmup=0), "all"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
