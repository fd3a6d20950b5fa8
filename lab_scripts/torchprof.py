#!/usr/bin/env python3
"""Run a Python script under torch.profiler and write kernel tables as JSON.

The stand-in for Nsight Systems where nsys is not installed (`nsightlab profile
--profiler torch`). It writes the same three tables nsightlab reads from nsys:
- kernels: one row per kernel name. When the ops ran on a GPU, its CUDA kernels (no
  memory copies or sets); when they ran on the CPU, the top-level CPU ops (an op called
  by the script, not by another op: its time includes its callees, which are not listed
  again). `kernels_are` says which.
- nvtx: one row per labelled range: every `record_function` range (user annotation),
  the profiler's steps (`ProfilerStep*`), and the names given to `--ranges`. A range is
  never a kernel, on the CPU or (as its GPU-side span) on the GPU.
- nvtx_kernels: the kernels that started inside each range.
Where the ops ran (`device_type`) is read from the events themselves: CUDA kernels mean
cuda, CPU ops alone mean cpu, whatever GPU the machine has. Times are in nanoseconds.
`--trace PATH` also keeps the profiler's own Chrome trace, gzipped, for Perfetto.

Standard library and torch only; Python 3.8 or later. labcommon.py beside this file (as
nsightlab copies it) describes the device as the other lab scripts do; without it the
description is shorter.

    python3 torchprof.py --out prof.json [--trace prof.json.gz] SCRIPT.py [SCRIPT ARGS...]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import platform
import runpy
import shutil
import statistics
import sys
import tempfile
from collections import defaultdict
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import labcommon as lab
except ModuleNotFoundError as _missing:
    if _missing.name != "labcommon":
        raise
    lab = None  # type: ignore[assignment]

# What torch names the GPU's copies and fills: on the GPU timeline, but no kernels.
NOT_KERNELS = ("Memcpy", "Memset")
# CUDA runtime calls (cudaDeviceSynchronize, cudaLaunchKernel...) are CPU-side events but
# no ops: on a GPU machine whose script ran on the CPU they would pose as CPU ops.
RUNTIME_PREFIX = "cuda"
# torch names profiler steps ProfilerStep#N and lists them as "ProfilerStep*".
STEP_PREFIX = "ProfilerStep"


def _stats(durations: list[float]) -> dict[str, Any]:
    durations = sorted(durations)
    total = sum(durations)
    n = len(durations)
    return {
        "instances": n,
        "total_ns": total,
        "avg_ns": total / n if n else None,
        "med_ns": statistics.median(durations) if n else None,
        "min_ns": durations[0] if n else None,
        "max_ns": durations[-1] if n else None,
        "stddev_ns": statistics.stdev(durations) if n > 1 else 0.0,
    }


def is_range(evt: Any, range_names: set[str]) -> bool:
    """A labelled range: a record_function range, a profiler step, or a name in --ranges."""
    name = evt.name
    return bool(getattr(evt, "is_user_annotation", False) or name.startswith(STEP_PREFIX) or name in range_names)


def _on_device(evt: Any, cuda: Any) -> bool:
    return bool(getattr(evt, "device_type", None) == cuda)


def is_device_kernel(evt: Any, cuda: Any, range_names: set[str]) -> bool:
    """A kernel on the GPU timeline (not a range's GPU-side span, not a copy or fill)."""
    return _on_device(evt, cuda) and not is_range(evt, range_names) and not str(evt.name).startswith(NOT_KERNELS)


def is_top_level_op(evt: Any, range_names: set[str]) -> bool:
    """A CPU op called by the script itself: no op among its ancestors (ranges may be)."""
    parent = getattr(evt, "cpu_parent", None)
    while parent is not None:
        if not is_range(parent, range_names):
            return False
        parent = getattr(parent, "cpu_parent", None)
    return True


def ran_on(events: list[Any], range_names: set[str]) -> str:
    """'cuda' when the events hold a CUDA kernel, else 'cpu'."""
    from torch.autograd import DeviceType  # type: ignore[attr-defined]

    cuda = DeviceType.CUDA
    return "cuda" if any(is_device_kernel(e, cuda, range_names) for e in events) else "cpu"


def collect(
    events: list[Any], range_names: set[str], on_gpu: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], dict[str, float]]:
    """Kernel, range and range-kernel tables from a torch.profiler event list, and the
    self time (ns) of each kernel name (on a GPU a kernel's self time is its time)."""
    from torch.autograd import DeviceType  # type: ignore[attr-defined]

    cuda = DeviceType.CUDA
    ranges: dict[str, list[tuple[float, float]]] = defaultdict(list)  # name -> [(start_us, end_us)]
    gpu_spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    kernels: list[tuple[str, float, float, float]] = []  # (name, start_us, dur_ns, self_ns)
    for evt in events:
        name = evt.name
        start = evt.time_range.start
        end = evt.time_range.end
        if is_range(evt, range_names):
            (gpu_spans if _on_device(evt, cuda) else ranges)[name].append((start, end))
            continue
        if on_gpu:
            if is_device_kernel(evt, cuda, range_names):
                dur = (end - start) * 1000.0
                kernels.append((name, start, dur, dur))
        elif not _on_device(evt, cuda) and not name.startswith(RUNTIME_PREFIX) and is_top_level_op(evt, range_names):
            self_us = float(getattr(evt, "self_cpu_time_total", end - start))
            kernels.append((name, start, (end - start) * 1000.0, self_us * 1000.0))

    by_name: dict[str, list[float]] = defaultdict(list)
    self_ns: dict[str, float] = defaultdict(float)
    for name, _start, dur, own in kernels:
        by_name[name].append(dur)
        self_ns[name] += own
    grand = sum(sum(d) for d in by_name.values()) or 1.0
    kernel_rows = []
    for name, durs in by_name.items():
        row = {"name": name, **_stats(durs)}
        row["time_pct"] = round(100.0 * row["total_ns"] / grand, 1)
        kernel_rows.append(row)
    kernel_rows.sort(key=lambda r: -r["total_ns"])

    range_rows = []
    range_total = sum((e - s) * 1000.0 for spans in ranges.values() for s, e in spans) or 1.0
    for name, spans in ranges.items():
        row = {"name": name, "style": "PushPop", **_stats([(e - s) * 1000.0 for s, e in spans])}
        row["time_pct"] = round(100.0 * row["total_ns"] / range_total, 1)
        range_rows.append(row)
    range_rows.sort(key=lambda r: -r["total_ns"])

    # Kernels belong to a range when they start inside its span: on a GPU the span of
    # the range's own GPU-side annotation (kernels run after their launch), on a CPU the
    # range itself.
    spans_for = gpu_spans if on_gpu and gpu_spans else ranges
    per_range: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for name, start, dur, _own in kernels:
        for rname, spans in spans_for.items():
            if any(s <= start <= e for s, e in spans):
                per_range[rname][name].append(dur)
    nvtx_kernel_rows = []
    for rname, kmap in per_range.items():
        rtotal = sum(sum(d) for d in kmap.values()) or 1.0
        for kname, durs in kmap.items():
            stats = _stats(durs)
            nvtx_kernel_rows.append(
                {
                    "range_name": rname,
                    "kernel_name": kname,
                    "style": "PushPop",
                    "pid": None,
                    "tid": None,
                    "range_instances": len(ranges.get(rname, [])) or None,
                    "kernel_instances": stats.pop("instances"),
                    "time_pct": round(100.0 * stats["total_ns"] / rtotal, 1),
                    **stats,
                }
            )
    nvtx_kernel_rows.sort(key=lambda r: (r["range_name"], -r["total_ns"]))
    return kernel_rows, range_rows, nvtx_kernel_rows, {k: round(v, 1) for k, v in self_ns.items()}


def describe(torch: Any, device_type: str) -> dict[str, Any]:
    """torch's own description of the device the ops ran on (labcommon's, when beside us)."""
    if lab is not None:
        return lab.describe_device(torch, device_type)
    cuda = device_type == "cuda"
    return {
        "type": device_type,
        "name": torch.cuda.get_device_name(0) if cuda else (platform.processor() or platform.machine()),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "described_by": "torchprof.py alone (labcommon.py was not beside it)",
    }


def write_trace(prof: Any, path: str) -> None:
    """The profiler's Chrome trace, gzipped into `path` (written beside it, then renamed)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, plain = tempfile.mkstemp(prefix=".torchprof-", suffix=".json", dir=directory)
    os.close(fd)
    packed = plain + ".gz"
    try:
        prof.export_chrome_trace(plain)
        with open(plain, "rb") as src, gzip.open(packed, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.chmod(packed, 0o644)
        os.replace(packed, path)
    finally:
        for leftover in (plain, packed):
            with contextlib.suppress(OSError):
                os.unlink(leftover)


def write_json(path: str, document: dict[str, Any]) -> None:
    if lab is not None:
        lab.write_json_atomic(path, document)
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(document, fh, indent=1)
    os.replace(tmp, path)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="torchprof.py",
        description=(__doc__ or "").splitlines()[0],
        epilog="Exit status: the script's own when it fails; 2 for a usage error.",
    )
    parser.add_argument("--out", required=True, help="where to write the JSON tables")
    parser.add_argument(
        "--trace",
        default=None,
        metavar="PATH.json.gz",
        help="also write the profiler's Chrome trace here, gzipped (opens in Perfetto)",
    )
    parser.add_argument(
        "--ranges",
        default="memory_bound_scale,compute_bound_gemm",
        help="comma-separated names that are ranges even where torch does not mark "
        "record_function ranges as user annotations (every user annotation is a range)",
    )
    parser.add_argument("script", help="the Python script to profile")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    opts = parser.parse_args(argv)
    if opts.trace is not None and not opts.trace.endswith(".gz"):
        parser.error(f"--trace writes a gzipped trace: give a name ending in .json.gz, not {opts.trace!r}")
    return opts


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)

    import torch
    from torch.profiler import ProfilerActivity, profile

    gpu_visible = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu_visible else [])
    range_names = {r for r in opts.ranges.split(",") if r}
    # The script sees its own argv and folder, as if run directly; both are put back after.
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [opts.script, *opts.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(opts.script)))
    status = 0
    try:
        with profile(activities=activities) as prof:
            try:
                runpy.run_path(opts.script, run_name="__main__")
            except SystemExit as e:  # the script's own sys.exit(): keep its status
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if gpu_visible:
                torch.cuda.synchronize()
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    if status:
        print(f"torchprof: the script exited with status {status}", file=sys.stderr)
        return status
    events = list(prof.events())
    # A range's GPU-side span carries the name of its CPU-side range: name them all ranges.
    range_names |= {e.name for e in events if is_range(e, range_names)}
    device_type = ran_on(events, range_names)
    kernels, ranges, nvtx_kernels, self_ns = collect(events, range_names, device_type == "cuda")
    doc = {
        "profiler": "torch",
        "torch": torch.__version__,
        "activities": ["cpu", "cuda"] if gpu_visible else ["cpu"],
        "device_type": device_type,
        "kernels_are": "cuda kernels" if device_type == "cuda" else "cpu ops",
        "device": describe(torch, device_type),
        "kernels": kernels,
        "self_ns": self_ns,
        "nvtx": ranges,
        "nvtx_kernels": nvtx_kernels,
        "trace": os.path.basename(opts.trace) if opts.trace else None,
    }
    if opts.trace:
        write_trace(prof, opts.trace)
    write_json(opts.out, doc)
    what = "CUDA kernels" if device_type == "cuda" else "CPU ops"
    print(
        f"torchprof: {len(kernels)} {what}, {len(ranges)} ranges -> {opts.out}"
        + (f" (trace: {opts.trace})" if opts.trace else ""),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
