#!/usr/bin/env python3
"""`analyze REPORT.sqlite` of a million-kernel nsys report, against a bare sqlite3 pass.

Generates, with tests/nsys_sqlite_build.py (the exporter's schema of nsys 2026.1), an
nsys SQLite export of N GPU operations: the decode-like steps of bench/trace_analyze.py
(229 operations a step: 225 kernels and a host-to-device copy among them), each launched by
a CUDA call (`cudaLaunchKernel`, `cudaMemcpyAsync`) and each step inside an NVTX
`decode_step` range; and the same operations as a `cuda_gpu_trace` CSV (as `nsys stats`
writes it). Then times, alternating, each in its own process:

    bare       python: sqlite3 SELECT of the kernels' start, end, stream, correlation id
               and name (joined to StringIds) in time order, and their busy-time union
    sqlite     nsightlab analyze REPORT.sqlite --json   (every table, the whole trace,
               the steps)
    csv        nsightlab analyze REPORT_cuda_gpu_trace.csv --json   (today's trace path:
               the whole trace and steps inferred from the repeating sequence, no tables)
    csv+       nsightlab analyze FOLDER --json, the folder holding the same capture's
               cuda_gpu_trace, nvtx_pushpop_trace and cuda_api_trace CSVs (the step
               anatomy the export gives, by launch; still no tables)

Target: sqlite at most 2x bare, under 200 MB peak RSS.

    python bench/nsys_sqlite.py --ops 1000000 --rounds 5
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]
from _timing import compare, nsightlab_argv, side_by_side, table  # noqa: E402
from nsys_sqlite_build import ExportWriter, api_name  # noqa: E402
from trace_analyze import _STEP, _ops, generate_csv  # noqa: E402
from tracebuild import API_HEADER, PUSHPOP_HEADER  # noqa: E402

BARE = """
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
rows = db.execute(
    "SELECT k.start, k.end, k.streamId, k.correlationId, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
    "JOIN StringIds AS s ON s.id = k.demangledName ORDER BY k.start"
)
busy = n = 0
lo = hi = None
for start, end, stream, corr, name in rows:
    n += 1
    if hi is None or start > hi:
        if hi is not None:
            busy += hi - lo
        lo, hi = start, end
    elif end > hi:
        hi = end
busy += (hi - lo) if hi is not None else 0
print(n, busy)
"""


def generate(folder: Path, n: int) -> tuple[Path, Path, Path]:
    """REPORT.sqlite, REPORT_cuda_gpu_trace.csv of the same n operations, and a folder of
    the capture's three trace CSVs (GPU trace, NVTX ranges, CUDA API calls)."""
    db = folder / "report.sqlite"
    csv_path = folder / "report_cuda_gpu_trace.csv"
    generate_csv(csv_path, n)
    ops = _ops(n)
    trio = folder / "csv"
    trio.mkdir(exist_ok=True)
    shutil.copy(csv_path, trio / "report_cuda_gpu_trace.csv")
    with ExportWriter(db, "2026.1") as w:
        w.gpu(0, "NVIDIA H100 80GB HBM3")
        w.kernels(
            (start, start + dur, name, 0, 7, corr)
            for corr, (name, start, dur) in enumerate(ops, start=1)
            if not name.startswith("[CUDA memcpy")
        )
        w.memcpys(
            (start, start + dur, 8, 1, 1, 2, 0, 7, corr)
            for corr, (name, start, dur) in enumerate(ops, start=1)
            if name.startswith("[CUDA memcpy")
        )
        launch, copy = api_name("cudaLaunchKernel"), api_name("cudaMemcpyAsync")
        w.api(
            (start - 1_500, start - 1_000, copy if name.startswith("[CUDA memcpy") else launch, corr)
            for corr, (name, start, _dur) in enumerate(ops, start=1)
        )
        steps = []
        begin = None
        for name, start, _dur in ops:
            if name == _STEP[0]:
                if begin is not None:
                    steps.append((begin, start - 1_600, "decode_step", 4242))
                begin = start - 1_600
        if begin is not None:
            steps.append((begin, ops[-1][1] + ops[-1][2], "decode_step", 4242))
        w.nvtx(steps)
    with open(trio / "report_cuda_api_trace.csv", "w", encoding="utf-8") as fh:
        fh.write(",".join(API_HEADER) + "\n")
        for corr, (name, start, _dur) in enumerate(ops, start=1):
            call = "cudaMemcpyAsync" if name.startswith("[CUDA memcpy") else "cudaLaunchKernel"
            fh.write(f"{start - 1_500},500,{call},0,{corr},4242,4242,0,python3\n")
    with open(trio / "report_nvtx_pushpop_trace.csv", "w", encoding="utf-8") as fh:
        fh.write(",".join(PUSHPOP_HEADER) + "\n")
        for k, (a, b, _name, _tid) in enumerate(steps, start=1):
            fh.write(f"{a},{b},{b - a},0,{b - a},:decode_step,4242,4242,0,0,{k},,:{k},:decode_step\n")
    return db, csv_path, trio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=1_000_000, help="GPU operations in the report")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="write the report here (and keep it) instead of a temporary folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nsys-sqlite-bench-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        db, csv_path, trio = generate(folder, args.ops)
        print(f"{args.ops} operations: {db} ({db.stat().st_size / 2**20:.0f} MiB), {csv_path.name}", flush=True)
        results = side_by_side(
            {
                "bare sqlite3 kernels + union": [sys.executable, "-c", BARE, str(db)],
                "nsightlab analyze .sqlite --json": nsightlab_argv(ROOT, "analyze", str(db), "--json"),
                "nsightlab analyze .csv --json": nsightlab_argv(ROOT, "analyze", str(csv_path), "--json"),
                "nsightlab analyze 3 CSVs --json": nsightlab_argv(ROOT, "analyze", str(trio), "--json"),
            },
            repeat=args.rounds,
        )
        print(table(results, "bare sqlite3 kernels + union"))
        print(compare(results, "nsightlab analyze .sqlite --json", "bare sqlite3 kernels + union"))
        print(compare(results, "nsightlab analyze .csv --json", "nsightlab analyze .sqlite --json"))
        print(compare(results, "nsightlab analyze 3 CSVs --json", "nsightlab analyze .sqlite --json"))


if __name__ == "__main__":
    main()
