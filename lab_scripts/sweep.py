#!/usr/bin/env python3
"""The bandwidth sweep: one in-place scale at many sizes, to see launch, cache and DRAM.

The experiment of the tutorial's section 12, done with the element size taken from the
tensor: `x.mul_(1.0001)` on 2^16 .. 2^30 elements, 5 warm-up calls, then 50 timed calls
per size. Each call reads and writes every element once, so the bytes moved per call are
2 x elements x element size (the tutorial's script hard-codes 2 bytes per element, which
halves the TB/s it prints for float32).

Timing: CUDA events on a GPU; on a CPU, `time.perf_counter` around the calls (torch runs
CPU operations synchronously, so the call has finished when it returns). The timed calls
are split into a few equal batches and the time per call is the median over the batches,
which keeps one disturbed batch (a CPU migration, a page fault storm) out of the figure;
the per-batch figures are kept in the JSON.

Sizes that do not fit in free memory (device memory on a GPU, available RAM on a CPU) are
skipped with a note. Each row is printed as soon as it is measured, in the tutorial's
format:

    2^16 elems       0.1 MiB        5.9 us   0.04 TB/s

Runs in the lab pod's own Python (3.8 or later) with only the standard library and torch.

    python3 sweep.py                                # GPU if there is one
    python3 sweep.py --dtype float32 --json /tmp/sweep.json
    python3 sweep.py --device cpu --sizes 12,16,20,24
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

# labcommon.py travels beside every lab script: the device, its description, JSON output.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import labcommon as lab
except ModuleNotFoundError as _missing:
    if _missing.name != "labcommon":
        raise
    sys.exit(
        "sweep.py: needs labcommon.py in the same folder as this script "
        "(copy lab_scripts/labcommon.py beside it)"
    )

SCHEMA = 1
SCALE_FACTOR = 1.0001
GPU_SIZES = (16, 20, 22, 24, 26, 28, 30)
CPU_SIZES = (12, 14, 16, 18, 20, 22, 24, 26)
DTYPES = ("float16", "bfloat16", "float32", "float64")
BATCHES = 5
# Share of the free memory a tensor may take: the allocator and the rest of the process
# (on a CPU, the rest of the machine) need room too.
GPU_FREE_FRACTION = 0.9
CPU_FREE_FRACTION = 0.5


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated powers of two, e.g. 16,20,24; got {text!r}"
        ) from None
    if not sizes:
        raise argparse.ArgumentTypeError("no sizes given")
    for p in sizes:
        if not 0 <= p <= 40:
            raise argparse.ArgumentTypeError(f"size 2^{p} is out of range (0..40)")
    return sorted(set(sizes))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="sweep.py",
        description=(
            "Time an in-place scale (x.mul_) at sizes 2^N and print time per call and "
            "bandwidth (bytes = 2 x elements x element size: one read and one write)."
        ),
        epilog=(
            "GPU default sizes: " + ",".join(str(p) for p in GPU_SIZES) + ". CPU default "
            "sizes: " + ",".join(str(p) for p in CPU_SIZES) + " (smaller, so a run takes "
            "seconds)."
        ),
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=None,
        metavar="N,N,...",
        help="log2 of the element counts (default depends on the device)",
    )
    parser.add_argument("--warmup", type=int, default=5, help="warm-up calls per size (5)")
    parser.add_argument("--iters", type=int, default=50, help="timed calls per size (50)")
    parser.add_argument("--dtype", choices=DTYPES, default="float16", help="default float16")
    parser.add_argument(
        "--device",
        choices=lab.DEVICE_CHOICES,
        default="auto",
        help="auto (default): the GPU if torch sees one, else the CPU; cuda: the GPU or "
        f"exit {lab.NO_GPU_EXIT}; cpu: the CPU on purpose",
    )
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the rows here")
    # Pretend the device has at most this many bytes free: exercises the skip path.
    parser.add_argument("--max-bytes", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.warmup < 0:
        parser.error("--warmup must be 0 or more")
    if args.iters < 1:
        parser.error("--iters must be at least 1")
    if args.max_bytes is not None and args.max_bytes < 0:
        parser.error("--max-bytes must be 0 or more")
    return args


def note(message: str) -> None:
    print("sweep: " + message, file=sys.stderr, flush=True)


# --- the sweep ---


def free_bytes(torch: Any, cuda: bool) -> tuple[int | None, str]:
    """Bytes one tensor may take now, and how that was decided."""
    if cuda:
        free, _total = torch.cuda.mem_get_info()
        return int(free * GPU_FREE_FRACTION), f"{GPU_FREE_FRACTION:.0%} of free device memory"
    available = lab.cpu_memory_available()
    if available is None:
        return None, "available RAM unknown"
    return int(available * CPU_FREE_FRACTION), f"{CPU_FREE_FRACTION:.0%} of available RAM"


def split_batches(iters: int, batches: int) -> list[int]:
    """Split `iters` calls into at most `batches` near-equal batches."""
    count = max(1, min(batches, iters))
    base, extra = divmod(iters, count)
    return [base + (1 if i < extra else 0) for i in range(count)]


def time_calls(torch: Any, cuda: bool, x: Any, batches: list[int]) -> list[float]:
    """Seconds per call in each batch of timed calls."""
    if cuda:
        events = [torch.cuda.Event(enable_timing=True) for _ in range(len(batches) + 1)]
        events[0].record()
        for i, calls in enumerate(batches):
            for _ in range(calls):
                x.mul_(SCALE_FACTOR)
            events[i + 1].record()
        torch.cuda.synchronize()
        return [
            events[i].elapsed_time(events[i + 1]) / 1e3 / calls for i, calls in enumerate(batches)
        ]
    out = []
    for calls in batches:
        t0 = time.perf_counter()
        for _ in range(calls):
            x.mul_(SCALE_FACTOR)
        out.append((time.perf_counter() - t0) / calls)
    return out


def format_row(
    log2: int, tensor_bytes: int, seconds: float, bytes_per_call: int, digits: int = 2
) -> str:
    """One row in the tutorial's format; `digits` after the point for TB/s (3 on a CPU)."""
    tbps = bytes_per_call / seconds / 1e12
    return (
        f"2^{log2:<2} elems  {tensor_bytes / 2**20:8.1f} MiB  {seconds * 1e6:9.1f} us  "
        f"{tbps:{digits + 3}.{digits}f} TB/s"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    device = lab.pick_device(torch, args.device, "sweep.py")
    cuda = device == "cuda"
    sizes = args.sizes
    if sizes is None:
        sizes = list(GPU_SIZES if cuda else CPU_SIZES)
        if not cuda:
            note(
                "no GPU: running on the CPU with smaller default sizes 2^"
                + f"{sizes[0]}..2^{sizes[-1]} (GPU: 2^16..2^30); pass --sizes to change"
            )
    dtype = getattr(torch, args.dtype)
    element_size = torch.empty(0, dtype=dtype).element_size()
    batches = split_batches(args.iters, BATCHES)
    info = lab.describe_device(torch, device)
    l2 = info.get("l2_bytes")
    note(
        f"{info['name']} ({device}), {args.dtype} ({element_size} B/element), "
        f"cache {lab.format_bytes(l2) if l2 else 'unknown'}, {args.warmup} warm-up + "
        f"{args.iters} timed calls per size; bytes = 2 x elements x {element_size} "
        "(read + write)"
    )

    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for log2 in sizes:
        elements = 1 << log2
        tensor_bytes = elements * element_size
        budget, how = free_bytes(torch, cuda)
        if args.max_bytes is not None and (budget is None or args.max_bytes < budget):
            budget, how = args.max_bytes, "--max-bytes"
        if budget is not None and tensor_bytes > budget:
            reason = (
                f"needs {lab.format_bytes(tensor_bytes)}, only {lab.format_bytes(budget)} may be "
                f"used ({how})"
            )
            note(f"skipping 2^{log2}: {reason}")
            skipped.append({"log2": log2, "elements": elements, "reason": reason})
            continue
        try:
            x = torch.randn(elements, device=device, dtype=dtype)
        except RuntimeError as e:  # torch.cuda.OutOfMemoryError is a RuntimeError
            reason = "allocation failed: " + str(e).splitlines()[0]
            note(f"skipping 2^{log2}: {reason}")
            skipped.append({"log2": log2, "elements": elements, "reason": reason})
            if cuda:
                torch.cuda.empty_cache()
            continue
        for _ in range(args.warmup):
            x.mul_(SCALE_FACTOR)
        if cuda:
            torch.cuda.synchronize()
        per_batch = time_calls(torch, cuda, x, batches)
        seconds = statistics.median(per_batch)
        bytes_per_call = 2 * x.numel() * x.element_size()
        rows.append(
            {
                "log2": log2,
                "elements": x.numel(),
                "tensor_bytes": x.numel() * x.element_size(),
                "bytes_per_call": bytes_per_call,
                "seconds_per_call": seconds,
                "batch_seconds_per_call": per_batch,
            }
        )
        line = format_row(log2, rows[-1]["tensor_bytes"], seconds, bytes_per_call, 2 if cuda else 3)
        print(line, flush=True)
        del x
        if cuda:
            torch.cuda.empty_cache()

    return {
        "kind": "sweep",
        "schema": SCHEMA,
        "op": "scale",
        "dtype": args.dtype,
        "element_size": element_size,
        "iters": args.iters,
        "warmup": args.warmup,
        "batches": batches,
        "timer": "cuda_events" if cuda else "perf_counter",
        "statistic": "median of batch means",
        "device": info,
        "rows": rows,
        "skipped": skipped,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    document = run(args)
    if args.json:
        lab.write_json_atomic(args.json, document)
        note("wrote " + args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
