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
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

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
        "--device", choices=("cuda", "cpu"), default=None, help="default: cuda if available"
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


# --- device description (kept in step with lesson1.py, which describes it the same way) ---


def _parse_cache_size(text: str) -> int | None:
    text = text.strip().upper()
    multipliers = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    try:
        if text and text[-1] in multipliers:
            return int(text[:-1]) * multipliers[text[-1]]
        return int(text)
    except ValueError:
        return None


def cpu_last_level_cache() -> tuple[int | None, int | None]:
    """(bytes, level) of cpu0's largest data/unified cache from sysfs; (None, None) if unknown."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    best: tuple[int, int] | None = None
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return None, None
    for entry in entries:
        if not entry.startswith("index"):
            continue
        try:
            with open(os.path.join(base, entry, "level")) as f:
                level = int(f.read().strip())
            with open(os.path.join(base, entry, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(base, entry, "size")) as f:
                size = _parse_cache_size(f.read())
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or size is None:
            continue
        if best is None or (level, size) > best:
            best = (level, size)
    if best is None:
        return None, None
    return best[1], best[0]


def _meminfo_bytes(key: str) -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(key + ":"):
                    parts = line.split()
                    return int(parts[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def cpu_memory_total() -> int | None:
    total = _meminfo_bytes("MemTotal")
    if total is not None:
        return total
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_headroom() -> int | None:
    """Bytes left under a cgroup v2 memory limit (a container's), or None if unlimited."""
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            current = int(f.read().strip())
    except (OSError, ValueError):
        return None
    if limit == "max":
        return None
    try:
        return max(0, int(limit) - current)
    except ValueError:
        return None


def cpu_memory_available() -> int | None:
    """Available RAM: MemAvailable, capped by the container's memory limit if it has one."""
    available = _meminfo_bytes("MemAvailable")
    if available is None:
        try:
            available = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
        except (ValueError, OSError, AttributeError):
            available = None
    headroom = _cgroup_headroom()
    if headroom is not None and (available is None or headroom < available):
        return headroom
    return available


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def nvidia_driver_version() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.strip().splitlines()
    return lines[0].strip() if out.returncode == 0 and lines else None


def describe_device(torch: Any, device: str) -> dict[str, Any]:
    """What the device reports about itself: preferred over any spec table."""
    info: dict[str, Any] = {
        "type": device,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        l2 = getattr(props, "L2_cache_size", None)
        info.update(
            {
                "name": props.name,
                "memory_bytes": int(props.total_memory),
                "l2_bytes": int(l2) if l2 else None,
                "l2_source": "device" if l2 else None,
                "sm_count": int(props.multi_processor_count),
                "cc": f"{props.major}.{props.minor}",
                "driver": nvidia_driver_version(),
            }
        )
    else:
        llc, level = cpu_last_level_cache()
        info.update(
            {
                "name": cpu_name(),
                "memory_bytes": cpu_memory_total(),
                "l2_bytes": llc,
                "l2_source": f"sysfs L{level} (last-level cache)" if llc else None,
                "sm_count": None,
                "cc": None,
                "driver": None,
                "cpu_count": os.cpu_count(),
                "threads": torch.get_num_threads(),
            }
        )
    return info


def write_json_atomic(path: str, document: dict[str, Any]) -> None:
    """Write to a temporary file beside `path`, then rename it into place."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".sweep-", suffix=".json.tmp", dir=directory)
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the result is meant to be shared
        with os.fdopen(fd, "w") as f:
            json.dump(document, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# --- the sweep ---


def free_bytes(torch: Any, cuda: bool) -> tuple[int | None, str]:
    """Bytes one tensor may take now, and how that was decided."""
    if cuda:
        free, _total = torch.cuda.mem_get_info()
        return int(free * GPU_FREE_FRACTION), f"{GPU_FREE_FRACTION:.0%} of free device memory"
    available = cpu_memory_available()
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


def format_bytes(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("sweep: --device cuda given but torch sees no CUDA device")
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
    info = describe_device(torch, device)
    l2 = info.get("l2_bytes")
    note(
        f"{info['name']} ({device}), {args.dtype} ({element_size} B/element), "
        f"cache {format_bytes(l2) if l2 else 'unknown'}, {args.warmup} warm-up + "
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
                f"needs {format_bytes(tensor_bytes)}, only {format_bytes(budget)} may be "
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
        write_json_atomic(args.json, document)
        note("wrote " + args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
