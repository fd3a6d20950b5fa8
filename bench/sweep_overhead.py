#!/usr/bin/env python3
"""What `nsightlab sweep --local` costs on top of running the lab script by hand.

Runs, alternating, N times each:

    nsightlab sweep --local --device cpu --dtype D --sizes S --iters I --warmup W --json
    python lab_scripts/sweep.py --device cpu --dtype D --sizes S --iters I --warmup W --json PATH

and reports the median wall time of each and their ratio (target: <= 1.15x). The
nsightlab runs go to a throw-away NSIGHTLAB_HOME.

    python bench/sweep_overhead.py
    python bench/sweep_overhead.py --reps 15 --sizes 12,14,16,18,20,22,24 --dtype float16
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.15


def nsightlab_argv() -> list[str]:
    script = Path(sys.executable).parent / "nsightlab"
    return [str(script)] if script.exists() else [sys.executable, "-m", "nsightlab"]


def timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed (exit {proc.returncode}): {proc.stderr.decode()[-500:]}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--sizes", default="12,14,16,18,20,22")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()

    common = [
        "--device",
        "cpu",
        "--dtype",
        args.dtype,
        "--sizes",
        args.sizes,
        "--iters",
        str(args.iters),
        "--warmup",
        str(args.warmup),
    ]
    scratch = Path(tempfile.mkdtemp(prefix="nsightlab-bench-"))
    env = {**os.environ, "NSIGHTLAB_HOME": str(scratch / "home")}
    cli = [*nsightlab_argv(), "sweep", "--local", *common, "--json"]
    script = [sys.executable, str(ROOT / "lab_scripts" / "sweep.py"), *common, "--json", str(scratch / "sweep.json")]
    try:
        timed(script, env)  # warm the page cache for torch before timing anything
        cli_times: list[float] = []
        script_times: list[float] = []
        for i in range(args.reps):
            order = [(cli, cli_times), (script, script_times)]
            for argv, into in order if i % 2 == 0 else reversed(order):
                into.append(timed(argv, env))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    cli_med, script_med = statistics.median(cli_times), statistics.median(script_times)
    ratio = cli_med / script_med
    # each pair ran back to back: their ratio cancels slow changes in the machine's load
    paired = statistics.median(c / s for c, s in zip(cli_times, script_times, strict=True))
    print(
        f"sweep overhead: {args.reps} runs each, alternating; dtype {args.dtype}, sizes {args.sizes}, iters "
        f"{args.iters}, warmup {args.warmup}"
    )
    print(
        f"  nsightlab sweep --local --json : median {cli_med:.3f} s  (min {min(cli_times):.3f}, max "
        f"{max(cli_times):.3f})"
    )
    print(
        f"  python lab_scripts/sweep.py    : median {script_med:.3f} s  (min {min(script_times):.3f}, max "
        f"{max(script_times):.3f})"
    )
    print(
        f"  ratio of medians {ratio:.3f}x, overhead {cli_med - script_med:+.3f} s (target <= {TARGET_RATIO}x): "
        f"{'ok' if ratio <= TARGET_RATIO else 'OVER'}"
    )
    print(f"  median of paired ratios {paired:.3f}x; ratio of minimums {min(cli_times) / min(script_times):.3f}x")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
