#!/usr/bin/env python3
"""Run a Python script under torch.profiler and write kernel tables as JSON.

The stand-in for Nsight Systems where nsys is not installed (`nsightlab profile
--profiler torch`). It writes the same three tables nsightlab reads from nsys:
- kernels: one row per kernel name (CUDA kernels on a GPU; on a CPU, the leaf CPU ops),
- nvtx: one row per labelled range (torch.profiler.record_function names),
- nvtx_kernels: the kernels launched inside each range.
Times are in nanoseconds. Standard library and torch only.

    python3 torchprof.py --out prof.json SCRIPT.py [SCRIPT ARGS...]
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import statistics
import sys
from collections import defaultdict


def _stats(durations):
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


def _is_device_kernel(evt, device_type_cuda):
    return getattr(evt, "device_type", None) == device_type_cuda and not getattr(evt, "is_user_annotation", False)


def _top_level(evt, range_names):
    """A CPU op called by the script itself (not by another op): its time includes its callees."""
    parent = getattr(evt, "cpu_parent", None)
    return parent is None or parent.name in range_names or bool(getattr(parent, "is_user_annotation", False))


def collect(events, range_names, on_gpu):
    """Kernel, range and range-kernel tables from a torch.profiler event list."""
    from torch.autograd import DeviceType

    cuda = DeviceType.CUDA
    ranges = defaultdict(list)  # name -> [(start_us, end_us)]
    gpu_spans = defaultdict(list)
    kernels = []  # (name, start_us, dur_ns)
    for evt in events:
        name = evt.name
        start = evt.time_range.start
        end = evt.time_range.end
        if name in range_names:
            if getattr(evt, "device_type", None) == cuda:
                gpu_spans[name].append((start, end))
            else:
                ranges[name].append((start, end))
            continue
        if on_gpu:
            if _is_device_kernel(evt, cuda):
                kernels.append((name, start, (end - start) * 1000.0))
        elif getattr(evt, "device_type", None) != cuda and _top_level(evt, range_names):
            kernels.append((name, start, (end - start) * 1000.0))

    by_name = defaultdict(list)
    for name, _start, dur in kernels:
        by_name[name].append(dur)
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
    per_range = defaultdict(lambda: defaultdict(list))
    for name, start, dur in kernels:
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
    return kernel_rows, range_rows, nvtx_kernel_rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="where to write the JSON tables")
    parser.add_argument("--ranges", default="memory_bound_scale,compute_bound_gemm", help="comma-separated range names to report")
    parser.add_argument("script", help="the Python script to profile")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    opts = parser.parse_args(argv)

    import torch
    from torch.profiler import ProfilerActivity, profile

    on_gpu = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    range_names = {r for r in opts.ranges.split(",") if r}
    sys.argv = [opts.script, *opts.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(opts.script)))
    status = 0
    with profile(activities=activities) as prof:
        try:
            runpy.run_path(opts.script, run_name="__main__")
        except SystemExit as e:  # the script's own sys.exit(): keep its status
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if on_gpu:
            torch.cuda.synchronize()
    if status:
        print(f"torchprof: the script exited with status {status}", file=sys.stderr)
        return status
    kernels, ranges, nvtx_kernels = collect(prof.events(), range_names, on_gpu)
    doc = {
        "profiler": "torch",
        "torch": torch.__version__,
        "device": "cuda" if on_gpu else "cpu",
        "kernels": kernels,
        "nvtx": ranges,
        "nvtx_kernels": nvtx_kernels,
    }
    tmp = opts.out + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(doc, fh, indent=1)
    os.replace(tmp, opts.out)
    print(f"torchprof: {len(kernels)} kernels, {len(ranges)} ranges -> {opts.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
