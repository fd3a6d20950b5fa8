#!/usr/bin/env python3
"""Lesson 1: one memory-bound kernel and one compute-bound kernel, side by side.

The experiment of the tutorial's section 10: an in-place scale of a 2^28-element fp16
tensor (`x.mul_(1.0001)`: reads and writes every element, almost no math) and an
8192 x 8192 x 8192 fp16 matrix multiply (`a @ w`: 2 * 8192^3 FLOP). Three warm-up calls,
then 20 timed calls of each inside the NVTX ranges `memory_bound_scale` and
`compute_bound_gemm`, so that `nsys stats -r nvtx_gpu_proj_sum` can pick out the timed
calls from the warm-ups.

The script also times each range itself (CUDA events on a GPU, `time.perf_counter` on a
CPU, where torch runs operations synchronously), so a run without any profiler still
yields rates. It writes a JSON document describing the work done (bytes and FLOPs per
call, computed from the real tensors) and the time per call.

On a machine without a GPU it runs on the CPU and says so on stderr: float32 (a CPU converts
16-bit floats element by element, so their time measures arithmetic, not memory), a
512^3 GEMM, and a scale tensor sized to leave the cache: the smallest 2^N elements that
take at least 4x the last-level cache (read from sysfs; 32 MiB assumed when it names none)
and at least 2^24 elements, capped by available memory. A smaller tensor is served partly
from the cache and runs several times faster than memory. The scale range records the
cache size, the working set and whether it is past the cache (`past_llc`). The same ranges
are visible to `torch.profiler` on both.

Runs in the lab pod's own Python (3.8 or later) with only the standard library and torch.

    python3 lesson1.py                      # GPU if there is one, JSON to ./lesson1.json
    python3 lesson1.py --device cpu --json /tmp/l1.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

# labcommon.py travels beside every lab script: the device, its description, JSON output.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import labcommon as lab
except ModuleNotFoundError as _missing:
    if _missing.name != "labcommon":
        raise
    sys.exit(
        "lesson1.py: needs labcommon.py in the same folder as this script (copy lab_scripts/labcommon.py beside it)"
    )

SCHEMA = 1
SCALE_RANGE = "memory_bound_scale"
GEMM_RANGE = "compute_bound_gemm"
SCALE_FACTOR = 1.0001

# The tutorial's experiment (a GPU), and the one used on a CPU:
# (log2 of the scale's elements, GEMM size, dtype). On a CPU the scale's size comes from
# the last-level cache (cpu_scale_log2); CPU_MIN_SCALE_LOG2 is its floor.
GPU_DEFAULTS = (28, 8192, "float16")
CPU_DEFAULTS = (24, 512, "float32")
CPU_MIN_SCALE_LOG2 = 24
# Share of the available RAM the scale tensor may take: the rest of the machine needs room.
CPU_FREE_FRACTION = 0.5
DTYPES = ("float16", "bfloat16", "float32", "float64")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="lesson1.py",
        description=(
            "Time a memory-bound in-place scale (x.mul_) and a compute-bound GEMM (a @ w) "
            "inside the NVTX ranges memory_bound_scale and compute_bound_gemm, and write "
            "the work done and the time per call as JSON."
        ),
        epilog=(
            "GPU defaults: 2^28 elements, 8192^3 GEMM, float16. CPU defaults (no GPU, or "
            "--device cpu): 512^3 GEMM, float32, and the smallest 2^N elements (at least "
            f"2^{CPU_MIN_SCALE_LOG2}) that take {lab.PAST_LLC_FACTOR}x the last-level cache, "
            "capped by available memory."
        ),
    )
    parser.add_argument(
        "--json",
        default="lesson1.json",
        metavar="PATH",
        help="where to write the JSON result (default: lesson1.json in the current directory)",
    )
    parser.add_argument(
        "--device",
        choices=lab.DEVICE_CHOICES,
        default="auto",
        help="auto (default): the GPU if torch sees one, else the CPU; cuda: the GPU or "
        f"exit {lab.NO_GPU_EXIT}; cpu: the CPU on purpose",
    )
    parser.add_argument("--scale-log2", type=int, default=None, help="scale tensor has 2^N elements")
    parser.add_argument("--gemm-n", type=int, default=None, help="GEMM is N x N x N")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up calls (default 3)")
    parser.add_argument("--iters", type=int, default=20, help="timed calls (default 20)")
    parser.add_argument("--dtype", choices=DTYPES, default=None, help="element type")
    args = parser.parse_args(argv)
    if args.warmup < 0:
        parser.error("--warmup must be 0 or more")
    if args.iters < 1:
        parser.error("--iters must be at least 1")
    if args.scale_log2 is not None and not 0 <= args.scale_log2 <= 40:
        parser.error("--scale-log2 must be between 0 and 40")
    if args.gemm_n is not None and args.gemm_n < 1:
        parser.error("--gemm-n must be at least 1")
    return args


def note(message: str) -> None:
    print("lesson1: " + message, file=sys.stderr, flush=True)


# --- the experiment ---


def time_range(torch: Any, name: str, cuda: bool, calls: int, fn: Callable[[], None]) -> float:
    """Run `fn` `calls` times inside the labelled range; return seconds per call."""
    if cuda:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        with lab.labelled_range(torch, name, cuda):
            start.record()
            for _ in range(calls):
                fn()
            end.record()
        torch.cuda.synchronize()
        return float(start.elapsed_time(end)) / 1e3 / calls
    # CPU operations return when done, so the wall clock around the loop is the time.
    with lab.labelled_range(torch, name, cuda):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
    return (t1 - t0) / calls


def cpu_scale_log2(llc_bytes: int, element_size: int, budget: int | None) -> tuple[int, bool]:
    """log2 of the CPU scale's element count: the smallest 2^N (N >= CPU_MIN_SCALE_LOG2)
    whose tensor takes at least PAST_LLC_FACTOR x the last-level cache; when that does not
    fit in `budget` bytes, the largest 2^N that does. Returns (N, whether it was capped)."""
    wanted = max(
        CPU_MIN_SCALE_LOG2,
        lab.smallest_log2_holding(lab.PAST_LLC_FACTOR * llc_bytes, element_size),
    )
    if budget is None or (1 << wanted) * element_size <= budget:
        return wanted, False
    fits = wanted
    while fits > 0 and (1 << fits) * element_size > budget:
        fits -= 1
    return fits, True


def scale_range_cache_fields(llc_bytes: int | None, llc_source: str | None, working_set: int) -> dict[str, Any]:
    """What the scale range records about the cache: its size, the working set (the tensor:
    the op reads and writes the same buffer) and whether the set is past the cache
    (at least PAST_LLC_FACTOR times it, so it streams from memory)."""
    return {
        "llc_bytes": llc_bytes,
        "llc_source": llc_source,
        "working_set_bytes": working_set,
        "past_llc": bool(llc_bytes) and working_set >= lab.PAST_LLC_FACTOR * int(llc_bytes or 0),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    device = lab.pick_device(torch, args.device, "lesson1.py")
    cuda = device == "cuda"
    default_log2, default_n, default_dtype = GPU_DEFAULTS if cuda else CPU_DEFAULTS
    gemm_n: int = args.gemm_n if args.gemm_n is not None else default_n
    dtype_name: str = args.dtype or default_dtype
    dtype = getattr(torch, dtype_name)
    element_size = torch.empty(0, dtype=dtype).element_size()
    notes: list[str] = []
    info = lab.describe_device(torch, device)
    if cuda:
        llc_bytes: int | None = info.get("l2_bytes")
        llc_source: str | None = "device L2" if llc_bytes else None
        scale_log2: int = args.scale_log2 if args.scale_log2 is not None else default_log2
    else:
        llc, llc_source = lab.llc_for_sizing()
        llc_bytes = llc
        capped = False
        if args.scale_log2 is not None:
            scale_log2 = args.scale_log2
            why = "--scale-log2"
        else:
            available = lab.cpu_memory_available()
            budget = int(available * CPU_FREE_FRACTION) if available is not None else None
            scale_log2, capped = cpu_scale_log2(llc, element_size, budget)
            why = (
                f"the smallest power of two at least {lab.PAST_LLC_FACTOR}x the cache and "
                f"2^{CPU_MIN_SCALE_LOG2} elements"
            )
            if capped:
                why = f"that size does not fit in {CPU_FREE_FRACTION:.0%} of available RAM; the largest that does"
        size = (1 << scale_log2) * element_size
        past = size >= lab.PAST_LLC_FACTOR * llc
        said = (
            f"scale: 2^{scale_log2} elements = {lab.format_bytes(size)} of {dtype_name}, "
            f"{size / llc:.1f}x the {lab.format_bytes(llc)} last-level cache ({llc_source}); "
            f"{why}: "
            + (
                "it streams from memory"
                if past
                else "partly served from the cache, so it is no memory-bandwidth figure"
            )
        )
        note(said)
        if not past:
            notes.append(said)
        chosen = []
        if args.gemm_n is None:
            chosen.append(f"a {gemm_n}^3 GEMM (GPU: 8192^3)")
        if args.dtype is None:
            chosen.append(f"{dtype_name} (fp16 matmul is very slow on CPUs)")
        if chosen:
            note("no GPU: running on the CPU, scaled down to " + ", ".join(chosen))
        sixteen = lab.sixteen_bit_cpu_note(dtype_name)
        if sixteen:
            notes.append(sixteen)
            note(sixteen)
        if dtype_name == "float16" and gemm_n > 1024:
            note("warning: float16 matmul on a CPU runs at a few GFLOP/s; this will be slow")

    # Values in [-1, 1): uniform fills gigabytes on a CPU twice as fast as randn.
    x = torch.empty(1 << scale_log2, device=device, dtype=dtype).uniform_(-1.0, 1.0)
    w = torch.randn(gemm_n, gemm_n, device=device, dtype=dtype)
    a = torch.randn(gemm_n, gemm_n, device=device, dtype=dtype)

    def scale() -> None:
        x.mul_(SCALE_FACTOR)

    def gemm() -> None:
        a @ w

    for _ in range(args.warmup):
        scale()
        gemm()
    if cuda:
        torch.cuda.synchronize()

    scale_s = time_range(torch, SCALE_RANGE, cuda, args.iters, scale)
    gemm_s = time_range(torch, GEMM_RANGE, cuda, args.iters, gemm)

    es = x.element_size()
    m, k = a.shape
    n = w.shape[1]
    ranges = [
        {
            "name": SCALE_RANGE,
            "op": "scale",
            "kernel_kind": "elementwise",
            "calls": args.iters,
            "warmup": args.warmup,
            "dtype": dtype_name,
            "element_size": es,
            "elements": x.numel(),
            # read every element once and write it back once
            "bytes_per_call": 2 * x.numel() * es,
            "flops_per_call": x.numel(),
            "seconds_per_call": scale_s,
            "timer": "cuda_events" if cuda else "perf_counter",
            **scale_range_cache_fields(llc_bytes, llc_source, x.numel() * es),
        },
        {
            "name": GEMM_RANGE,
            "op": "gemm",
            "kernel_kind": "gemm",
            "calls": args.iters,
            "warmup": args.warmup,
            "dtype": dtype_name,
            "element_size": a.element_size(),
            "m": int(m),
            "n": int(n),
            "k": int(k),
            "flops_per_call": 2 * int(m) * int(n) * int(k),
            # the least traffic a GEMM can do: read A and B once, write C once
            "bytes_per_call": (a.numel() + w.numel() + int(m) * int(n)) * a.element_size(),
            "seconds_per_call": gemm_s,
            "timer": "cuda_events" if cuda else "perf_counter",
        },
    ]
    return {
        "kind": "lesson1",
        "schema": SCHEMA,
        "device": info,
        "scaled_down": scale_log2 < GPU_DEFAULTS[0] or gemm_n < GPU_DEFAULTS[1],
        "matches_tutorial": (scale_log2, gemm_n, dtype_name) == GPU_DEFAULTS,
        "notes": notes,
        "ranges": ranges,
    }


def summary_lines(document: dict[str, Any]) -> list[str]:
    lines = []
    for r in document["ranges"]:
        t = r["seconds_per_call"]
        if r["op"] == "gemm":
            work = "{}x{}x{} {}".format(r["m"], r["n"], r["k"], r["dtype"])
            rate = "{:8.2f} TFLOP/s".format(r["flops_per_call"] / t / 1e12)
        else:
            work = "{} elems {}".format(r["elements"], r["dtype"])
            rate = "{:8.3f} TB/s".format(r["bytes_per_call"] / t / 1e12)
        lines.append(
            "{:<20} {:<28} {:>3} calls {:>11.1f} us/call {}".format(r["name"], work, r["calls"], t * 1e6, rate)
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    document = run(args)
    for line in summary_lines(document):
        print(line, flush=True)
    lab.write_json_atomic(args.json, document)
    note("wrote " + args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
