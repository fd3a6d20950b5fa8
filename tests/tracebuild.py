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
from typing import Any, Literal

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
    return [
        start,
        dur,
        corr,
        128,
        1,
        1,
        256,
        1,
        1,
        32,
        "0.000",
        "0.000",
        None,
        None,
        None,
        None,
        DEVICE,
        1,
        None,
        stream,
        name,
    ]


def memcpy_row(
    start: int, dur: int, corr: int, mb: str, name: str = "[CUDA memcpy Device-to-Host]", stream: int = 7
) -> list[object]:
    return [
        start,
        dur,
        corr,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        mb,
        "1000.000",
        "Device",
        "Pinned",
        DEVICE,
        1,
        None,
        stream,
        name,
    ]


def pushpop_row(
    start: int, end: int, name: str, range_id: int, parent: int | None, level: int, tid: int = 100
) -> list[object]:
    stack = f":{parent}:{range_id}" if parent else f":{range_id}"
    return [
        start,
        end,
        end - start,
        0,
        end - start,
        ":" + name,
        100,
        tid,
        level,
        0,
        range_id,
        parent,
        stack,
        "--" * level + ":" + name,
    ]


def proj_row(
    name: str,
    pstart: int,
    pend: int,
    ostart: int,
    oend: int,
    ops: int,
    range_id: int,
    parent: int | None,
    level: int,
    tid: int = 100,
) -> list[object]:
    stack = f":{parent}:{range_id}" if parent else f":{range_id}"
    return [
        ":" + name,
        pstart,
        pend - pstart,
        ostart,
        oend - ostart,
        "PushPop",
        100,
        tid,
        ops,
        level,
        0,
        range_id,
        parent,
        stack,
    ]


def api_row(start: int, dur: int, name: str, corr: int, tid: int = 100) -> list[object]:
    return [start, dur, name, 0, corr, 100, tid, 0, "python3"]


# ------------------------------------------------------------------------ Kineto


def x_event(
    cat: str, name: str, ts: float | int, dur: float | int, pid: int | str, tid: int | str, **args: Any
) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        event["args"] = args
    return event


def kernel(
    name: str, ts: float | int, dur: float | int, corr: int, stream: int = 7, cat: str = "kernel"
) -> dict[str, Any]:
    return x_event(
        cat, name, ts, dur, 0, stream, device=0, stream=stream, correlation=corr, grid=[1, 1, 1], block=[128, 1, 1]
    )


def launch(
    name: str, ts: float | int, dur: float | int, corr: int, tid: int = 1, cat: str = "cuda_runtime"
) -> dict[str, Any]:
    return x_event(cat, name, ts, dur, 4242, tid, correlation=corr)


def annotation(name: str, ts: float | int, dur: float | int, tid: int = 1) -> dict[str, Any]:
    return x_event("user_annotation", name, ts, dur, 4242, tid)


def _pairs(items: Any) -> str:
    return ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in items)


def kineto_event(e: dict[str, Any]) -> str:
    """One event as libkineto writes it: `ph`, `cat`, `name`, `pid`, `tid`, ... on its
    first line, `ts`, `dur` on the next, one line per arg; indented for `traceEvents`."""
    lines = [_pairs((k, v) for k, v in e.items() if k not in ("ts", "dur", "args"))]
    times = [(k, e[k]) for k in ("ts", "dur") if k in e]
    if times:
        lines.append(_pairs(times))
    if "args" in e:
        args = ",\n      ".join(_pairs([item]) for item in e["args"].items())
        lines.append('"args": {\n      ' + args + "\n    }")
    return "  {\n    " + ",\n    ".join(lines) + "\n  }"


def kineto_layout(doc: dict[str, Any]) -> str:
    """`doc` as libkineto writes a trace: each event as `kineto_event` writes it, the
    other keys one per line."""
    out = []
    for key, value in doc.items():
        if key == "traceEvents":
            out.append('  "traceEvents": [\n' + ",\n".join(kineto_event(e) for e in value) + "\n  ]")
        else:
            out.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(out) + "\n}\n"


def write_kineto(
    path: Path,
    events: Sequence[dict[str, Any]],
    *,
    gz: bool = False,
    device: str = "NVIDIA H100 80GB HBM3",
    layout: Literal["kineto", "indent"] = "kineto",
) -> Path:
    """A trace of `events` in Kineto's own layout, or as `json.dumps(indent=1)` writes it."""
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": device, "totalGlobalMem": 85000000000}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
        "traceEvents": list(events),
        "traceName": str(path),
    }
    text = kineto_layout(doc) if layout == "kineto" else json.dumps(doc, indent=1)
    if gz:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------ a decode run's exports

GEMV = (
    "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false, false, "
    "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched"
    "<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float> >(cublasGemvParamsEx<int, "
    "cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, "
    "cublasGemvTensorStridedBatched<__nv_bfloat16>, float>, float, float)"
)
GEMM = "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn"
MEAN = (
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, "
    "float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
    "unsigned int, float, 4>)"
)
SILU = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}"
    "::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >"
    "(int, at::native::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()"
    "() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)"
)
SOFTMAX = (
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous "
    "namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)"
)
# One layer of an eager decode step, as PyTorch launches it: RMSNorm's mean, the q/k/v
# projections (GEMVs at batch 1), attention (scores, softmax, weighted sum), the output
# projection, RMSNorm, the SwiGLU MLP. Then the LM head and the argmax.
LAYER_KERNELS = (MEAN, GEMV, GEMV, GEMV, GEMM, SOFTMAX, GEMM, GEMV, MEAN, GEMV, GEMV, SILU, GEMV)
HEAD_KERNELS = (MEAN, GEMV, MEAN)
# How busy the GPU is in a step of each mode: eager steps wait for Python between
# launches, a graph replay runs its kernels back to back.
BUSY = {"eager": 0.55, "graphs": 0.92}


def decode_kernels(layers: int) -> list[str]:
    """The kernels of one decode step of a model with `layers` layers."""
    return [*LAYER_KERNELS * layers, *HEAD_KERNELS]


def _weight(name: str) -> int:
    return 3 if name in (GEMV, GEMM) else 1


def decode_exports(
    doc: dict[str, Any], base: str, reports: Sequence[str], device: str = DEVICE, t0: int = 1_000_000_000
) -> list[Path]:
    """nsys trace exports of a run of lab_scripts/decode.py, built from its JSON.

    Every timed step takes exactly the script's own step time: its CPU range
    (`decode_step`) spans it and its kernels fill `BUSY[mode]` of it, a gap of equal length
    before each kernel (so `idle between` = (K-1) gaps, `before first` = one gap, `after
    last` = 0). Eager launches each kernel with `cudaLaunchKernel`; graphs replays them all
    with one `cudaGraphLaunch` (one correlation id). Prefill and warm-up launch kernels too,
    outside any `decode_step` range. Writes `BASE_<report>.csv` for each of `reports`
    among the four trace reports; returns the paths.
    """
    names = decode_kernels(int(doc["model"]["layers"]))
    total_weight = sum(_weight(n) for n in names)
    gpu: list[list[object]] = []
    api: list[list[object]] = []
    ranges: list[tuple[str, int, int, int, int | None, int]] = []  # name, start, end, id, parent, level
    launched: dict[int, list[tuple[int, int]]] = {}  # range id -> its kernels' (start, end)
    corr = [1000]
    ids = [0]
    t = [t0]

    def new_range(name: str, start: int, end: int, parent: int | None, level: int) -> int:
        ids[0] += 1
        ranges.append((name, start, end, ids[0], parent, level))
        return ids[0]

    def step(duration: int, busy: float, graph: bool, owners: Sequence[int]) -> None:
        start = t[0]
        k = len(names)
        gap = duration * (1 - busy) / k
        if graph:
            corr[0] += 1
            api.append(api_row(start + int(gap / 4), max(1, int(gap / 4)), "cudaGraphLaunch", corr[0]))
        cursor = float(start)
        for name in names:
            if not graph:
                corr[0] += 1
                api.append(api_row(int(cursor) + int(gap / 4), max(1, int(gap / 4)), "cudaLaunchKernel", corr[0]))
            kstart = cursor + gap
            kend = kstart + duration * busy * _weight(name) / total_weight
            gpu.append(kernel_row(int(kstart), int(kend) - int(kstart), corr[0], name))
            for owner in owners:
                launched.setdefault(owner, []).append((int(kstart), int(kend)))
            cursor = kend
        t[0] = start + duration

    for mode_name in dict.fromkeys(str(e["mode"]) for e in doc["modes"]):
        entries = [e for e in doc["modes"] if e["mode"] == mode_name]
        mode_start = t[0]
        mode_id = new_range(f"mode:{mode_name}", mode_start, 0, None, 0)
        for e in entries:
            busy = BUSY.get(mode_name, 0.55)
            graph = mode_name == "graphs"
            median = int(e["median_step_s"] * 1e9)
            parent, level = mode_id, 1
            if e["ranges"].get("batch"):
                parent = new_range(str(e["ranges"]["batch"]), t[0], 0, mode_id, 1)
                level = 2
            prefill = new_range("prefill", t[0], 0, parent, level)
            step(4 * median, 0.9, False, [prefill, parent, mode_id])
            _close(ranges, prefill, t[0])
            warm = new_range("warmup", t[0], 0, parent, level)
            for _ in range(int(e.get("warmup_steps") or 0)):
                step(median, busy, False, [warm, parent, mode_id])
            _close(ranges, warm, t[0])
            if graph:
                cap = new_range("capture", t[0], t[0] + median, parent, level)
                del cap
                t[0] += median
            for seconds in e["step_seconds"]:
                rid = new_range("decode_step", t[0], 0, parent, level)
                step(max(1, int(seconds * 1e9)), busy, graph, [rid, parent, mode_id])
                _close(ranges, rid, t[0])
            if parent != mode_id:
                _close(ranges, parent, t[0])
            t[0] += 50_000
        _close(ranges, mode_id, t[0])

    out: list[Path] = []
    for report in reports:
        path = Path(f"{base}_{report}.csv")
        if report == "cuda_gpu_trace":
            out.append(write_csv(path, GPU_TRACE_HEADER, sorted(gpu, key=lambda r: int(str(r[0])))))
        elif report == "cuda_api_trace":
            out.append(write_csv(path, API_HEADER, api))
        elif report == "nvtx_pushpop_trace":
            rows = [
                pushpop_row(s, e, n, i, p, lvl) for n, s, e, i, p, lvl in sorted(ranges, key=lambda r: (r[1], r[5]))
            ]
            out.append(write_csv(path, PUSHPOP_HEADER, rows))
        elif report == "nvtx_gpu_proj_trace":
            rows = []
            for n, s, e, i, p, lvl in sorted(ranges, key=lambda r: (r[1], r[5])):
                work = launched.get(i)
                if work:
                    rows.append(
                        proj_row(n, min(a for a, _ in work), max(b for _, b in work), s, e, len(work), i, p, lvl)
                    )
            out.append(write_csv(path, PROJ_HEADER, rows))
    return out


def _close(ranges: list[tuple[str, int, int, int, int | None, int]], rid: int, end: int) -> None:
    for k, r in enumerate(ranges):
        if r[3] == rid:
            ranges[k] = (r[0], r[1], end, r[3], r[4], r[5])
            return


def analyze_verdict(group: Any, **kw: Any) -> Any:
    """The verdict `analyze` gives a group of steps (`decode_words.verdict`, as
    `decode_result.steps_report` calls it), with the floor and bandwidth given."""
    from nsightlab.analysis.explain.decode_words import verdict

    kw.setdefault("floor", None)
    return verdict(group.anatomy.step_ms, group, command="analyze", script=False, **kw)
