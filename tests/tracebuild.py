"""Hand-built traces in the exact shapes the profilers write, for tests whose answer is
known exactly: nsys `stats --format csv` trace reports (headers as NVIDIA's report
scripts alias them) and Kineto Chrome-trace events (as torch.profiler writes them)."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# nsys 2024+ (`cuda_gpu_trace.py`, `nvtx_pushpop_trace.py`, `nvtx_gpu_proj_trace.py`,
# `cuda_api_trace.py` of the reports folder); times in ns, sizes in MB.
GPU_TRACE_HEADER = [
    "Start (ns)", "Duration (ns)", "CorrId", "GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ",
    "Reg/Trd", "StcSMem (MB)", "DymSMem (MB)", "Bytes (MB)", "Throughput (MB/s)", "SrcMemKd",
    "DstMemKd", "Device", "Ctx", "GreenCtx", "Strm", "Name",
]  # fmt: skip
PUSHPOP_HEADER = [
    "Start (ns)", "End (ns)", "Duration (ns)", "DurChild (ns)", "DurNonChild (ns)", "Name", "PID",
    "TID", "Lvl", "NumChild", "RangeId", "ParentId", "RangeStack", "NameTree",
]  # fmt: skip
PROJ_HEADER = [
    "Name", "Projected Start (ns)", "Projected Duration (ns)", "Orig Start (ns)",
    "Orig Duration (ns)", "Style", "PID", "TID", "NumGPUOps", "Lvl", "NumChild", "RangeId",
    "ParentId", "RangeStack",
]  # fmt: skip
API_HEADER = ["Start (ns)", "Duration (ns)", "Name", "Result", "CorrID", "Pid", "Tid", "T-Pri", "Thread Name"]

DEVICE = "NVIDIA H100 80GB HBM3 (0)"


def write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[object]]) -> Path:
    """Write as nsys does: minimal quoting (only cells with commas or quotes), LF lines."""
    buf = io.StringIO()
    writer = csv.writer(buf, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if c is None else c for c in row])
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def kernel_row(start: int, dur: int, corr: int, name: str, stream: int = 7) -> list[object]:
    return [start, dur, corr, 128, 1, 1, 256, 1, 1, 32, "0.000", "0.000", None, None, None, None, DEVICE, 1, None, stream, name]


def memcpy_row(start: int, dur: int, corr: int, mb: str, name: str = "[CUDA memcpy Device-to-Host]", stream: int = 7) -> list[object]:
    return [start, dur, corr, None, None, None, None, None, None, None, None, None, mb, "1000.000", "Device", "Pinned", DEVICE, 1, None, stream, name]


def pushpop_row(start: int, end: int, name: str, range_id: int, parent: int | None, level: int, tid: int = 100) -> list[object]:
    stack = f":{parent}:{range_id}" if parent else f":{range_id}"
    return [start, end, end - start, 0, end - start, ":" + name, 100, tid, level, 0, range_id, parent, stack, "--" * level + ":" + name]


def proj_row(name: str, pstart: int, pend: int, ostart: int, oend: int, ops: int, range_id: int, parent: int | None, level: int, tid: int = 100) -> list[object]:
    stack = f":{parent}:{range_id}" if parent else f":{range_id}"
    return [":" + name, pstart, pend - pstart, ostart, oend - ostart, "PushPop", 100, tid, ops, level, 0, range_id, parent, stack]


def api_row(start: int, dur: int, name: str, corr: int, tid: int = 100) -> list[object]:
    return [start, dur, name, 0, corr, 100, tid, 0, "python3"]


# ------------------------------------------------------------------------ Kineto


def x_event(cat: str, name: str, ts: float | int, dur: float | int, pid: int | str, tid: int | str, **args: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        event["args"] = args
    return event


def kernel(name: str, ts: float | int, dur: float | int, corr: int, stream: int = 7, cat: str = "kernel") -> dict[str, Any]:
    return x_event(cat, name, ts, dur, 0, stream, device=0, stream=stream, correlation=corr, grid=[1, 1, 1], block=[128, 1, 1])


def launch(name: str, ts: float | int, dur: float | int, corr: int, tid: int = 1, cat: str = "cuda_runtime") -> dict[str, Any]:
    return x_event(cat, name, ts, dur, 4242, tid, correlation=corr)


def annotation(name: str, ts: float | int, dur: float | int, tid: int = 1) -> dict[str, Any]:
    return x_event("user_annotation", name, ts, dur, 4242, tid)


def write_kineto(path: Path, events: Sequence[dict[str, Any]], *, gz: bool = False, device: str = "NVIDIA H100 80GB HBM3") -> Path:
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": device, "totalGlobalMem": 85000000000}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
        "traceEvents": list(events),
        "traceName": str(path),
    }
    text = json.dumps(doc, indent=1)
    if gz:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return path
