#!/usr/bin/env python3
"""The step anatomy of a million-kernel trace, against a bare read of the same file.

nsys (`cuda_gpu_trace` CSV): generates a decode-like trace (a 229-operation step: embed,
32 layers of norm/qkv/attention/o/norm/up/down, final norm, lm_head, sampling, and a
copy of the next token to the device) of N GPU operations, then times, alternating, each
in its own process:

    bare      for row in csv.reader(file): pass
    nsightlab analyze_gpu_trace([file])   (whole trace + steps by repeating sequence)

Target: nsightlab at most 3x the bare pass, under 400 MB peak RSS.

Kineto: times nsightlab's `analyze_kineto` (the analysis `analyze` runs on a Kineto file,
in a fresh interpreter that imports it) and the whole `nsightlab analyze` command (its
start-up included; with --json and with the tables) against HolisticTraceAnalysis
loading the same trace and computing its temporal breakdown (`bench/hta_temporal.py`,
in a separate virtualenv that has HTA), on a real trace and on a generated one with N
GPU events. Target: at least 5x faster, at a fraction of its memory.

    python bench/trace_analyze.py nsys --ops 1000000
    python bench/trace_analyze.py kineto --ops 1000000 --hta-python /tmp/hta-venv/bin/python
    python bench/trace_analyze.py kineto --ops 0 --against REV   (the real trace alone; REV's analyze too)
    python bench/trace_analyze.py kineto --ops 0 --real A.json.gz --real B.json.gz   (other real traces:
        the serving-engine traces of tests/data/traces/SOURCES.md, say)
"""

from __future__ import annotations

import argparse
import csv
import gzip
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# This checkout's nsightlab, not whichever one the interpreter has installed.
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]
from _timing import checkouts, compile_package, nsightlab_argv, side_by_side, table  # noqa: E402
from tracebuild import kineto_event  # noqa: E402

_LAYER = [
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
    "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
    "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, float, 128, 16, 4, 4, false, "
    "false>(float, float)",
    "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, "
    "true>(Flash_fwd_params)",
    "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, float, 128, 16, 4, 2, false, "
    "false>(float, float)",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
    "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
    "nvjet_tst_64x8_64x16_4x1_v_bz_TNT",
    "void at::native::vectorized_elementwise_kernel<4, "
    "at::native::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() "
    "const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, "
    "at::native::silu_kernel, std::array<char*, 2ul>)",
]
_STEP = (
    [
        "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, "
        "-2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>)"
    ]
    + _LAYER * 32
    + [
        _LAYER[0],
        "nvjet_tst_128x8_64x16_2x1_v_bz_TNN",
        "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, "
        "unsigned int, long, 4>)",
        "[CUDA memcpy Host-to-Device]",
    ]
)
_DURATIONS = [3_000, 18_000, 9_000, 6_000, 3_000, 22_000, 2_500]


def _ops(n: int) -> list[tuple[str, int, int]]:
    """(name, start, duration) of n decode-like operations."""
    out = []
    t = 1_000_000_000
    i = 0
    while len(out) < n:
        for k, name in enumerate(_STEP):
            if len(out) >= n:
                break
            dur = _DURATIONS[(k - 1) % 7] if 0 < k < 225 else 4_000
            t += 1_800 if k else 250_000  # launch gaps; a long wait before each step
            out.append((name, t, dur))
            t += dur
            i += 1
    return out


def generate_csv(path: Path, n: int) -> None:
    header = [
        "Start (ns)",
        "Duration (ns)",
        "CorrId",
        "GrdX",
        "GrdY",
        "GrdZ",
        "BlkX",
        "BlkY",
        "BlkZ",
        "Reg/Trd",
        "StcSMem (MB)",
        "DymSMem (MB)",
        "Bytes (MB)",
        "Throughput (MB/s)",
        "SrcMemKd",
        "DstMemKd",
        "Device",
        "Ctx",
        "GreenCtx",
        "Strm",
        "Name",
    ]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        for corr, (name, start, dur) in enumerate(_ops(n), start=1):
            if name.startswith("[CUDA memcpy"):
                writer.writerow(
                    [
                        start,
                        dur,
                        corr,
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                        "0.000",
                        "2.000",
                        "Pinned",
                        "Device",
                        "NVIDIA H100 80GB HBM3 (0)",
                        1,
                        "",
                        7,
                        name,
                    ]
                )
            else:
                writer.writerow(
                    [
                        start,
                        dur,
                        corr,
                        132,
                        1,
                        1,
                        128,
                        1,
                        1,
                        64,
                        "0.000",
                        "0.033",
                        "",
                        "",
                        "",
                        "",
                        "NVIDIA H100 80GB HBM3 (0)",
                        1,
                        "",
                        7,
                        name,
                    ]
                )


def generate_kineto(path: Path, n: int) -> None:
    """n GPU events, each with its launch, ProfilerStep ranges over every decode step, in
    Kineto's own layout."""
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as fh:
        fh.write(
            '{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],\n  '
            '"traceEvents": [\n'
        )
        first = True
        step_start = None
        step_no = 0

        def emit(event: dict[str, object]) -> None:
            nonlocal first
            fh.write(("" if first else ",\n") + kineto_event(event))
            first = False

        for corr, (name, start, dur) in enumerate(_ops(n), start=1):
            us = start / 1000
            if name == _STEP[0]:
                if step_start is not None:
                    emit(
                        {
                            "ph": "X",
                            "cat": "user_annotation",
                            "name": f"ProfilerStep#{step_no}",
                            "pid": 7,
                            "tid": 7,
                            "ts": step_start,
                            "dur": round(us - 200 - step_start, 3),
                        }
                    )
                    step_no += 1
                step_start = round(us - 200, 3)
            cat = "gpu_memcpy" if name.startswith("[CUDA memcpy") else "kernel"
            emit(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaMemcpyAsync" if cat == "gpu_memcpy" else "cudaLaunchKernel",
                    "pid": 7,
                    "tid": 7,
                    "ts": round(us - 30, 3),
                    "dur": 4.5,
                    "args": {"External id": corr, "correlation": corr},
                }
            )
            emit(
                {
                    "ph": "X",
                    "cat": cat,
                    "name": "Memcpy HtoD (Pinned -> Device)" if cat == "gpu_memcpy" else name,
                    "pid": 0,
                    "tid": 7,
                    "ts": round(us, 3),
                    "dur": dur / 1000,
                    "args": {
                        "External id": corr,
                        "device": 0,
                        "stream": 7,
                        "correlation": corr,
                        "grid": [132, 1, 1],
                        "block": [128, 1, 1],
                    },
                }
            )
        fh.write('\n  ],\n  "traceName": "generated"\n}\n')


def _bare(path: str) -> None:
    with open(path, newline="", encoding="utf-8") as fh:
        for _row in csv.reader(fh):
            pass


def _analyze(path: str) -> None:
    from nsightlab.analysis.steps import analyze_gpu_trace

    result = analyze_gpu_trace([path])
    group = result.groups[0]
    print(result.trace.model_dump(), group.period, group.anatomy.count, group.anatomy.step_ms.median, file=sys.stderr)


def _kineto(path: str) -> None:
    from nsightlab.analysis.steps import analyze_kineto

    result = analyze_kineto(path)
    print(result.trace.model_dump(), [g.anatomy.count for g in result.groups], file=sys.stderr)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["nsys", "kineto", "_bare", "_analyze", "_kineto"])
    parser.add_argument("path", nargs="?")
    parser.add_argument("--ops", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--hta-python", default="/tmp/hta-venv/bin/python", help="`none`: leave HTA out")
    parser.add_argument(
        "--against",
        metavar="REV",
        action="append",
        default=[],
        help="also time `nsightlab analyze` of this git revision (repeatable)",
    )
    parser.add_argument(
        "--real",
        action="append",
        default=[],
        help="a real Kineto trace to time (repeatable; default: HTA's negative_queue_length rank 0)",
    )
    args = parser.parse_args(argv)
    real = args.real or [str(ROOT / "tests/data/traces/hta_negative_queue_length_rank0.json.gz")]
    if args.what == "_bare":
        _bare(args.path)
        return 0
    if args.what == "_analyze":
        _analyze(args.path)
        return 0
    if args.what == "_kineto":
        _kineto(args.path)
        return 0
    compile_package()  # this tree byte-compiled as the revisions' trees are (PYTHONDONTWRITEBYTECODE may be set)
    me = [sys.executable, str(Path(__file__).resolve())]
    with tempfile.TemporaryDirectory() as tmp:
        if args.what == "nsys":
            path = Path(tmp) / "decode_cuda_gpu_trace.csv"
            t0 = time.perf_counter()
            generate_csv(path, args.ops)
            print(
                f"generated {args.ops} operations, {path.stat().st_size / 1e6:.0f} MB, in "
                f"{time.perf_counter() - t0:.1f} s"
            )
            with checkouts(args.against) as trees:
                commands = {
                    "bare csv.reader pass": [*me, "_bare", str(path)],
                    "nsightlab analyze_gpu_trace": [*me, "_analyze", str(path)],
                }
                if trees:
                    commands["nsightlab analyze --json"] = nsightlab_argv(ROOT, "analyze", str(path), "--json")
                for rev, tree in trees.items():
                    commands[f"nsightlab analyze --json at {rev}"] = nsightlab_argv(
                        tree, "analyze", str(path), "--json"
                    )
                results = side_by_side(commands, repeat=args.repeat, warmup=args.warmup)
            print(table(results, "bare csv.reader pass"))
            return 0
        files = [Path(p) for p in real]
        generated = Path(tmp) / "generated.pt.trace.json.gz"
        if args.ops:
            t0 = time.perf_counter()
            generate_kineto(generated, args.ops)
            print(
                f"generated {args.ops} GPU events, {generated.stat().st_size / 1e6:.0f} MB gzipped, in "
                f"{time.perf_counter() - t0:.1f} s"
            )
            files.append(generated)
        hta = [args.hta_python, str(Path(__file__).resolve().parent / "hta_temporal.py")]
        with checkouts(args.against) as trees:
            for path in files:
                print(f"\n{path.name}")
                commands = (
                    {} if args.hta_python == "none" else {"HTA temporal breakdown": [*hta, str(path.parent), path.name]}
                )
                commands |= {
                    "nsightlab analyze_kineto": [*me, "_kineto", str(path)],
                    "nsightlab analyze --json": nsightlab_argv(ROOT, "analyze", str(path), "--json"),
                    "nsightlab analyze": nsightlab_argv(ROOT, "analyze", str(path)),
                }
                for rev, tree in trees.items():
                    commands[f"nsightlab analyze at {rev}"] = nsightlab_argv(tree, "analyze", str(path))
                results = side_by_side(commands, repeat=args.repeat, warmup=args.warmup)
                print(table(results, next(iter(commands))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
