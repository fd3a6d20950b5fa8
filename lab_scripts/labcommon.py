#!/usr/bin/env python3
"""What every lab script shares: the device it runs on, how it is described, and how
results are written.

This file travels with every lab script (nsightlab copies the whole set to the target;
by hand, copy it beside the script you run). Standard library only at import time; the
functions that need torch take the module as an argument, so importing this file never
imports torch. Python 3.8 or later.

Device choice (`--device auto|cuda|cpu` in every script):
- `auto`: the GPU when torch can see one, else the CPU;
- `cuda`: the GPU, and when torch cannot see one the script stops with exit code
  `NO_GPU_EXIT` and one line saying why (a CPU-only torch build, or no device visible);
- `cpu`: the CPU, on purpose.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

# A script asked for the GPU that torch cannot see exits with this code, its last stderr
# line starting with NO_GPU_PREFIX: the caller tells this apart from any other failure.
NO_GPU_EXIT = 3
NO_GPU_PREFIX = "torch cannot see the GPU: "
DEVICE_CHOICES = ("auto", "cuda", "cpu")


def no_gpu_reason(torch: Any) -> str:
    """Why torch sees no CUDA device, in words a user can act on."""
    if getattr(torch.version, "cuda", None) is None:
        return f"CPU-only build {torch.__version__}"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1", "none", "NoDevFiles"):
        return f"CUDA build {torch.__version__}, but CUDA_VISIBLE_DEVICES={visible!r} hides every device"
    return (
        f"CUDA build {torch.__version__} (CUDA {torch.version.cuda}), but no device is visible (driver or device "
        "plugin)"
    )


def pick_device(torch: Any, requested: str, script: str) -> str:
    """'cuda' or 'cpu' for `--device auto|cuda|cpu`; exits NO_GPU_EXIT when cuda is asked
    for and torch cannot see a GPU."""
    if requested == "cpu":
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    if requested == "cuda":
        print(f"{script}: {NO_GPU_PREFIX}{no_gpu_reason(torch)}", file=sys.stderr, flush=True)
        raise SystemExit(NO_GPU_EXIT)
    return "cpu"


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
                # ROCm's LLVM target (gfx942): names the GPU where the name is generic
                "arch": getattr(props, "gcnArchName", None) or None,
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
    fd, tmp = tempfile.mkstemp(prefix=".lab-", suffix=".json.tmp", dir=directory)
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


# Sizing past the cache: a working set this many times the last-level cache streams from
# memory (a smaller one is partly served from the cache and reads fast); when sysfs names no
# cache, a common server L3 is assumed.
PAST_LLC_FACTOR = 4
ASSUMED_LLC_BYTES = 32 << 20


def llc_for_sizing() -> tuple[int, str]:
    """The CPU's last-level cache size to size tensors by, and where the figure came from
    (sysfs, or the ASSUMED_LLC_BYTES stand-in when sysfs names no cache)."""
    size, level = cpu_last_level_cache()
    if size is None:
        return (
            ASSUMED_LLC_BYTES,
            f"assumed {format_bytes(ASSUMED_LLC_BYTES)} (sysfs names no cache)",
        )
    return size, f"sysfs L{level}"


def smallest_log2_holding(nbytes: int, element_size: int) -> int:
    """The smallest N such that 2^N elements of `element_size` bytes take >= `nbytes`."""
    n = 0
    while (1 << n) * element_size < nbytes:
        n += 1
    return n


def sixteen_bit_cpu_note(dtype: str) -> str | None:
    """Why a 16-bit float timed on a CPU is no bandwidth figure; None for other types."""
    if dtype not in ("float16", "bfloat16"):
        return None
    return (
        f"{dtype} on a CPU is converted element by element: its time measures arithmetic, "
        "not memory bandwidth; use float32 for a bandwidth test"
    )


def format_bytes(n: int) -> str:
    """A buffer size in binary units (MiB below 1 GiB, else GiB)."""
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


@contextlib.contextmanager
def labelled_range(torch: Any, name: str, cuda: bool) -> Iterator[None]:
    """An NVTX range on a GPU (for nsys), and a record_function range for torch.profiler."""
    with torch.autograd.profiler.record_function(name):
        if cuda:
            torch.cuda.nvtx.range_push(name)
        try:
            yield
        finally:
            if cuda:
                torch.cuda.nvtx.range_pop()
