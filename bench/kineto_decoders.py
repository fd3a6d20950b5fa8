#!/usr/bin/env python3
"""JSON decoders on Kineto traces: how fast each parses a trace and keeps what `analyze`
keeps (the X events of the GPU, runtime-call and range categories: ph, cat, name, pid,
tid, ts, dur, args.correlation/device/stream), each in its own process, side by side.

    stdlib json      json.load of the whole document, then a filter over the events
    orjson           orjson.loads of the whole document, then the same filter
    simdjson         pysimdjson's parser (lazy objects), then the same filter
    msgspec whole    msgspec, the whole document at once into typed structs (only the
                     fields above are built), then the filter
    nsightlab        KinetoReader(path).batches(): msgspec a run of events at a time, into
                     columns (what analyze reads, less its filter of runtime calls by name)

A bench-only comparison: orjson and pysimdjson are not nsightlab's dependencies
(`pip install orjson pysimdjson` into the venv first; a decoder that is not installed is
left out).

    python bench/kineto_decoders.py --repeat 5 TRACE.json.gz [...]
    python bench/kineto_decoders.py --repeat 3 --ops 1000000        (a generated trace, as trace_analyze.py makes)
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]
from _timing import side_by_side, table  # noqa: E402

_WANTED = {
    "kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset", "cuda_runtime", "cuda_driver", "runtime", "driver",
    "user_annotation", "gpu_user_annotation",
}  # fmt: skip


def _keep(events: Any) -> int:
    """How many events `analyze` would read (their fields looked at, as it does)."""
    n = 0
    for e in events:
        cat = e.get("cat")
        if type(cat) is str and cat.lower() in _WANTED and e.get("ph", "X") == "X":
            args = e.get("args") or {}
            _ = (e.get("name"), e.get("pid"), e.get("tid"), e.get("ts"), e.get("dur"), args.get("correlation"))
            n += 1
    return n


def _raw(path: str) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _stdlib(path: str) -> int:
    import json

    return _keep(json.loads(_raw(path))["traceEvents"])


def _orjson(path: str) -> int:
    import orjson

    return _keep(orjson.loads(_raw(path))["traceEvents"])


def _simdjson(path: str) -> int:
    import simdjson

    doc = simdjson.Parser().parse(_raw(path))
    n = 0
    for e in doc["traceEvents"]:
        cat = e.get("cat")
        if type(cat) is str and cat.lower() in _WANTED and e.get("ph", "X") == "X":
            args = e.get("args") or {}
            _ = (e.get("name"), e.get("pid"), e.get("tid"), e.get("ts"), e.get("dur"), args.get("correlation"))
            n += 1
    return n


def _msgspec(path: str) -> int:
    import msgspec

    from nsightlab.parse.kineto_batch import RawEvent

    doc = msgspec.defstruct("Doc", [("traceEvents", list[RawEvent])])  # the trace's own key
    events = msgspec.json.Decoder(doc, float_hook=str).decode(_raw(path)).traceEvents
    return sum(1 for e in events if e.cat is not None and e.cat.lower() in _WANTED and e.ph == "X")


def _nsightlab(path: str) -> int:
    from nsightlab.parse.kineto import KinetoReader

    return sum(len(b) for b in KinetoReader(path).batches())


_DECODERS = {
    "stdlib json": (_stdlib, None),
    "orjson": (_orjson, "orjson"),
    "simdjson": (_simdjson, "simdjson"),
    "msgspec whole": (_msgspec, "msgspec"),
    "nsightlab batches": (_nsightlab, "msgspec"),
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ops", type=int, default=0, help="also a generated trace of this many GPU events")
    parser.add_argument("--only", help=argparse.SUPPRESS)  # a child: run one decoder on one file
    args = parser.parse_args(argv)
    if args.only:
        t0 = time.perf_counter()
        n = _DECODERS[args.only][0](args.paths[0])
        print(f"{args.only}: {n} events kept in {time.perf_counter() - t0:.3f} s", file=sys.stderr)
        return 0
    me = [sys.executable, str(Path(__file__).resolve())]
    names = [name for name, (_, module) in _DECODERS.items() if module is None or importlib.util.find_spec(module)]
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(p) for p in args.paths]
        if args.ops:
            from trace_analyze import generate_kineto

            generated = Path(tmp) / "generated.pt.trace.json.gz"
            generate_kineto(generated, args.ops)
            paths.append(generated)
        for path in paths:
            print(f"\n{path.name}")
            commands = {name: [*me, str(path), "--only", name] for name in names}
            results = side_by_side(commands, repeat=args.repeat, warmup=1)
            print(table(results, "stdlib json"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
