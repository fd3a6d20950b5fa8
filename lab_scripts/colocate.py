#!/usr/bin/env python3
"""K copies of an LLM decode loop at once on one device: what sharing a GPU does.

For each K in --copies, starts K worker processes, each running decode.py's loop (its
model in the shape of a real one, random weights, greedy decoding over a preallocated
KV cache), each capped to 1/K of the GPU's memory (torch.cuda.set_per_process_memory_fraction).
Every worker builds its model, prefills and warms up, then waits; when all K are ready
they are released together and each times --tokens decode steps. Without MPS the GPU
time-slices between the processes; where an MPS control daemon can be started
(nvidia-cuda-mps-control) the same K run again under MPS, else a note says why not. On
a CPU the copies are processes on the CPU's cores (one thread each unless --threads):
the same curve, on the CPU's memory bandwidth and cores.

Per K: each copy's step times (median, p90), aggregate tokens/s (the sum of the copies'
batch / median step) and aggregate bytes/s (the sum of bytes one step must read /
median step). One JSON record (`kind: colocate`), written atomically.

Standard library and torch; decode.py, decode_model.py and labcommon.py beside it. Python
3.8 or later.

    python3 colocate.py --preset llama-1b --copies 1,2,4,8 --batch 1 --tokens 64 --out /tmp/colocate.json
    python3 colocate.py --device cpu --preset tiny --copies 1,2 --tokens 8 --out /tmp/colocate.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, NoReturn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import decode
    import decode_model
    import labcommon as lab
except ModuleNotFoundError as _missing:
    if _missing.name not in ("labcommon", "decode", "decode_model"):
        raise
    sys.exit(
        f"colocate.py: needs {_missing.name}.py in the same folder as this script (copy lab_scripts/"
        f"{_missing.name}.py beside it)"
    )

SCHEMA = 1
PROG = "colocate.py"
USAGE_EXIT = 2
NO_ROOM_EXIT = 4
WORKER_FAILED_EXIT = 5
READY = "colocate-ready"
SKIP = "colocate-skip"
MPS_CONTROL = "nvidia-cuda-mps-control"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        fail(message + " (see --help)")


def fail(message: str, code: int = USAGE_EXIT) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def note(message: str) -> None:
    print("colocate: " + message, file=sys.stderr, flush=True)


def _copies(text: str) -> list[int]:
    try:
        values = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected whole numbers separated by commas (1,2,4,8); got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"every value must be at least 1; got {text!r}")
    return sorted(set(values))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = _Parser(
        prog=PROG,
        description="K copies of decode.py's loop at once on one device, for each K: per-copy step times and "
        "aggregate tokens/s and bytes/s.",
        epilog=f"Exit codes: 2 bad input, {lab.NO_GPU_EXIT} GPU asked for but not visible, {NO_ROOM_EXIT} no K "
        f"fits in memory, {WORKER_FAILED_EXIT} a copy failed.",
    )
    p.add_argument(
        "--preset", choices=list(decode_model.PRESETS), default=None, help="model shape (decode.py's presets)"
    )
    p.add_argument("--copies", type=_copies, default=[1, 2, 4], metavar="K[,K...]", help="copies at once (1,2,4)")
    p.add_argument("--batch", type=int, default=1, help="sequences per copy (default 1)")
    p.add_argument("--tokens", type=int, default=64, help="timed decode steps per copy (default 64)")
    p.add_argument("--prompt-len", type=int, default=128, help="prompt positions (default 128)")
    p.add_argument("--warmup", type=int, default=4, help="untimed steps per copy (default 4)")
    p.add_argument("--dtype", type=decode._dtype, default=None, help="bfloat16 (GPU default), float16, float32")
    p.add_argument("--device", choices=lab.DEVICE_CHOICES, default="auto")
    p.add_argument("--threads", type=int, default=None, help="torch threads per copy (CPU default 1)")
    p.add_argument("--mps", choices=("auto", "off"), default="auto", help="also run under MPS where it can start")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", "--json", dest="out", default=None, metavar="FILE.json", help="write the record here")
    # a worker: one copy, started by this script
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--memory-fraction", type=float, default=None, help=argparse.SUPPRESS)
    p.add_argument("--result", default=None, help=argparse.SUPPRESS)
    # pretend a copy may use at most this many bytes: exercises the does-not-fit path anywhere
    p.add_argument("--max-bytes", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for flag in ("batch", "tokens", "prompt_len"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be at least 1")
    if args.warmup < 0:
        p.error("--warmup must be 0 or more")
    if args.threads is not None and args.threads < 1:
        p.error("--threads must be at least 1")
    if not args.worker and not args.out:
        p.error("--out FILE.json is required")
    return args


# --------------------------------------------------------------------------- a worker


def worker(args: argparse.Namespace) -> int:
    """One copy: build, prefill, warm up, say ready, wait for the go line, time the steps."""
    import torch

    cuda = args.device == "cuda"
    if args.threads:
        torch.set_num_threads(args.threads)
    if cuda and args.memory_fraction:
        torch.cuda.set_per_process_memory_fraction(args.memory_fraction)
    shape = decode_model.PRESETS[args.preset]
    dtype = getattr(torch, args.dtype)
    why_not = room(torch, cuda, shape, args, decode.DTYPES[args.dtype])
    if why_not is not None:
        print(f"{SKIP} {why_not}", flush=True)
        return 0
    with torch.no_grad():
        try:
            w = decode.build_weights(torch, shape, args.device, dtype, args.seed)
            cache_len = args.prompt_len + args.tokens
            prompt = decode.make_prompt(torch, shape.vocab, args.batch, args.prompt_len, args.seed)
            state = decode.State(torch, w, prompt, cache_len)
            decode.prefill(torch, w, state)
        except RuntimeError as e:  # torch.cuda.OutOfMemoryError is a RuntimeError
            if "out of memory" not in str(e):
                raise
            print(f"{SKIP} it ran out of memory while building ({str(e).splitlines()[0][:160]})", flush=True)
            return 0

        def step() -> None:
            decode.decode_step(torch, w, state)

        decode.run_warmup(state, args.warmup, args.tokens, step)
        if cuda:
            torch.cuda.synchronize()
        print(READY, flush=True)
        if not sys.stdin.readline():
            return 1  # the parent went away
        started = time.time()
        seconds = decode.time_steps(torch, cuda, args.tokens, step)
        ended = time.time()
    es = int(w.embedding.element_size())
    kv = decode_model.kv_cache_bytes_per_step(shape, args.batch, args.prompt_len, args.tokens, es)
    weights = w.nbytes() if shape.tied else w.nbytes() - (shape.vocab - args.batch) * shape.hidden * es
    lab.write_json_atomic(
        args.result,
        {
            "step_seconds": seconds,
            "bytes_per_step": weights + kv,
            "weight_bytes": w.nbytes(),
            "params": w.params(),
            "started": started,
            "ended": ended,
            "device": lab.describe_device(torch, args.device),
        },
    )
    return 0


# --------------------------------------------------------------------------- the parent


def start_mps(torch: Any) -> tuple[dict[str, str] | None, str | None, str | None]:
    """(environment for MPS clients, the folder to stop it with, why not) for an MPS daemon."""
    control = shutil.which(MPS_CONTROL)
    if control is None:
        return None, None, f"{MPS_CONTROL} is not installed here, so MPS could not be started"
    base = tempfile.mkdtemp(prefix="nsightlab-mps-")
    env = {"CUDA_MPS_PIPE_DIRECTORY": os.path.join(base, "pipe"), "CUDA_MPS_LOG_DIRECTORY": os.path.join(base, "log")}
    for d in env.values():
        os.makedirs(d, exist_ok=True)
    try:
        done = subprocess.run([control, "-d"], env={**os.environ, **env}, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return None, None, f"{MPS_CONTROL} -d could not run ({e}): MPS was not measured"
    if done.returncode != 0:
        reason = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return None, None, f"{MPS_CONTROL} -d failed ({reason[0][:200]}): MPS was not measured"
    return env, base, None


def stop_mps(env: dict[str, str], base: str) -> None:
    control = shutil.which(MPS_CONTROL)
    if control is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                [control], input="quit\n", env={**os.environ, **env}, capture_output=True, timeout=30, text=True
            )
    shutil.rmtree(base, ignore_errors=True)


def worker_argv(
    args: argparse.Namespace, device: str, dtype: str, k: int, result: str, threads: int | None
) -> list[str]:
    argv = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        "--preset",
        args.preset,
        "--batch",
        str(args.batch),
        "--tokens",
        str(args.tokens),
        "--prompt-len",
        str(args.prompt_len),
        "--warmup",
        str(args.warmup),
        "--dtype",
        dtype,
        "--device",
        device,
        "--seed",
        str(args.seed),
        "--result",
        result,
    ]
    if args.max_bytes is not None:
        argv += ["--max-bytes", str(args.max_bytes)]
    argv += ["--memory-fraction", f"{1.0 / k:.6f}"]  # a GPU's allocator is capped to it; a CPU's RAM is shared
    if threads:
        argv += ["--threads", str(threads)]
    return argv


def run_k(
    args: argparse.Namespace, device: str, dtype: str, k: int, threads: int | None, env: dict[str, str] | None
) -> tuple[list[dict[str, Any]], str | None]:
    """K workers released together: each one's result, in order; or why K do not fit."""
    folder = tempfile.mkdtemp(prefix="colocate-")
    results = [os.path.join(folder, f"copy-{i}.json") for i in range(k)]
    procs: list[tuple[subprocess.Popen[str], Any]] = []
    try:
        for i in range(k):
            err = open(os.path.join(folder, f"copy-{i}.err"), "w+")  # noqa: SIM115 - closed below
            proc = subprocess.Popen(
                worker_argv(args, device, dtype, k, results[i], threads),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env={**os.environ, **(env or {})},
            )
            procs.append((proc, err))
        for i, (proc, err) in enumerate(procs):
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            if line.startswith(SKIP):
                return [], line[len(SKIP) :].strip()
            if line != READY:
                proc.wait()
                _failed(proc, err, i, k)
        for proc, _ in procs:  # all ready: go, together
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for i, (proc, err) in enumerate(procs):
            if proc.wait() != 0:
                _failed(proc, err, i, k)
        out = []
        for path in results:
            with open(path) as f:
                out.append(json.load(f))
        return out, None
    finally:
        for proc, err in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            err.close()
        shutil.rmtree(folder, ignore_errors=True)


def _failed(proc: subprocess.Popen[str], err_file: Any, i: int, k: int) -> NoReturn:
    err_file.seek(0)
    err = err_file.read().strip().splitlines()
    last = err[-1][:300] if err else "no message"
    fail(f"copy {i + 1} of {k} failed (exit {proc.returncode}): {last}", WORKER_FAILED_EXIT)


def summarize(k: int, sharing: str, batch: int, copies: list[dict[str, Any]], fraction: float | None) -> dict[str, Any]:
    per_copy = []
    for i, c in enumerate(copies):
        s = c["step_seconds"]
        med = statistics.median(s)
        per_copy.append(
            {
                "copy": i + 1,
                "median_step_s": med,
                "p90_step_s": decode.percentile(s, 0.9),
                "tokens_per_s": batch / med,
                "bytes_per_step": c["bytes_per_step"],
            }
        )
    every = [x for c in copies for x in c["step_seconds"]]
    overlap = min(c["ended"] for c in copies) - max(c["started"] for c in copies)
    return {
        "sharing": sharing,
        "copies": k,
        "memory_fraction": fraction,
        "per_copy": per_copy,
        "median_step_s": statistics.median(every),
        "p90_step_s": decode.percentile(every, 0.9),
        "aggregate_tokens_per_s": sum(c["tokens_per_s"] for c in per_copy),
        "aggregate_bytes_per_s": sum(c["bytes_per_step"] / c["median_step_s"] for c in per_copy),
        "overlap_s": max(0.0, overlap),
    }


def room(torch: Any, cuda: bool, shape: decode_model.Shape, args: argparse.Namespace, es: int) -> str | None:
    """Why one copy does not fit in its share (1/K of the GPU, or of the available RAM), or None."""
    plan = decode_model.memory_plan(shape, [args.batch], args.prompt_len, args.tokens, es)
    need = sum(plan.values())
    share = args.memory_fraction or 1.0
    if cuda:
        free, total = torch.cuda.mem_get_info()
        budget = min(free, total * share) * decode.GPU_FREE_FRACTION
        where = f"its {share:.3g} of the GPU's memory"
    else:
        available = lab.cpu_memory_available()
        if available is None:
            return None
        budget = available * decode.CPU_FREE_FRACTION * share
        where = f"its {share:.3g} of the available RAM"
    if args.max_bytes is not None and args.max_bytes < budget:
        budget, where = args.max_bytes, "--max-bytes"
    if need > budget:
        return f"one copy needs about {lab.format_bytes(need)} and {where} is {lab.format_bytes(int(budget))}"
    return None


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    device = lab.pick_device(torch, args.device, PROG)
    cuda = device == "cuda"
    notes: list[str] = []

    def say(message: str) -> None:
        note(message)
        notes.append(message)

    preset = args.preset or (decode_model.GPU_DEFAULT_PRESET if cuda else decode_model.CPU_DEFAULT_PRESET)
    args.preset = preset
    dtype = args.dtype or ("bfloat16" if cuda else "float32")
    es = decode.DTYPES[dtype]
    shape = decode_model.PRESETS[preset]
    threads = args.threads or (None if cuda else 1)
    if not cuda:
        say(
            f"on the CPU: each copy is a process with {threads} torch thread{'s' if threads != 1 else ''}; the copies "
            "share the CPU's cores and memory bandwidth, not a GPU's (no memory cap per copy)"
        )
    info: dict[str, Any] | None = None  # a copy describes the device: this process makes no CUDA context
    sharings = [("time-slicing" if cuda else "processes", None)]
    mps_env: dict[str, str] | None = None
    mps_base: str | None = None
    mps = {"tried": False, "used": False, "reason": None}
    if cuda and args.mps == "auto":
        mps["tried"] = True
        mps_env, mps_base, why = start_mps(torch)
        if mps_env is not None:
            mps["used"] = True
            sharings.append(("mps", mps_env))
        else:
            mps["reason"] = why
            say(str(why))
    elif not cuda:
        mps["reason"] = "MPS shares a GPU: not on a CPU"
    runs: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    try:
        for sharing, env in sharings:
            for k in args.copies:
                copies, why_not = run_k(args, device, dtype, k, threads, env)
                if why_not is not None:
                    skipped.append({"sharing": sharing, "copies": k, "reason": why_not})
                    say(f"{k} copies skipped: {why_not}")
                    continue
                info = info or copies[0]["device"]
                entry = summarize(k, sharing, args.batch, copies, (1.0 / k) if cuda else None)
                runs.append(entry)
                note(
                    f"{sharing:<12} {k:>3} cop{'ies' if k != 1 else 'y '}: {entry['median_step_s'] * 1e3:9.3f} ms/step "
                    f"median (p90 {entry['p90_step_s'] * 1e3:.3f}), {entry['aggregate_tokens_per_s']:10.1f} tokens/s "
                    f"together, {entry['aggregate_bytes_per_s'] / 1e9:8.2f} GB/s"
                )
    finally:
        if mps_env is not None and mps_base is not None:
            stop_mps(mps_env, mps_base)
    if not runs:
        fail("no number of copies fits in memory: " + "; ".join(s["reason"] for s in skipped[:1]), NO_ROOM_EXIT)
    return {
        "kind": "colocate",
        "schema": SCHEMA,
        "device": info or {"type": device},
        "model": {
            "preset": preset,
            **shape._asdict(),
            "params": decode_model.count_params(shape),
            "dtype": dtype,
            "weight_bytes": decode_model.count_params(shape) * es,
        },
        "batch": args.batch,
        "tokens": args.tokens,
        "prompt_len": args.prompt_len,
        "warmup": args.warmup,
        "threads_per_copy": threads,
        "copies": args.copies,
        "mps": mps,
        "runs": runs,
        "skipped": skipped,
        "notes": notes,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    document = run(args)
    lab.write_json_atomic(args.out, document)
    note("wrote " + args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
