#!/usr/bin/env python3
"""The machine's facts for `bench/gpu_run.sh`, before anything is measured.

Writes one JSON document (`kind: gpu-run-facts`) to the path given and prints, on stdout,
`key=value` lines the shell script reads (`gpu`, `triton`, `summary`). Standard library;
torch and triton are imported when the machine has them, and their absence is a fact too.
Runs with the machine's own python3 (no nsightlab), like the lab scripts, whose
`labcommon.py` describes the device here the way every lab record does.

    python3 bench/gpu_facts.py --device cuda --out facts.json
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lab_scripts"))
import labcommon as lab  # noqa: E402  (the lab scripts' shared module, found beside them)

SMI_FIELDS = (
    "name",
    "driver_version",
    "memory.total",
    "clocks.max.sm",
    "clocks.max.memory",
    "clocks.sm",
    "clocks.mem",
    "power.limit",
    "temperature.gpu",
    "persistence_mode",
    "compute_mode",
    "mig.mode.current",
)


def _run(argv: list[str], timeout: float = 20) -> tuple[int | None, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e)
    return done.returncode, (done.stdout + done.stderr).strip()


def nvidia_smi() -> dict[str, Any]:
    """What nvidia-smi says of each GPU, or why it could not say."""
    if shutil.which("nvidia-smi") is None:
        return {"found": False, "reason": "nvidia-smi is not on PATH"}
    code, text = _run(["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader"])
    if code != 0:
        return {"found": True, "exit": code, "error": text[-500:]}
    gpus = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == len(SMI_FIELDS):
            gpus.append(dict(zip(SMI_FIELDS, cells, strict=True)))
    return {"found": True, "gpus": gpus}


def tool_version(name: str) -> dict[str, Any]:
    path = shutil.which(name)
    if path is None:
        return {"found": False}
    code, text = _run([name, "--version"])
    lines = [x for x in text.splitlines() if x.strip()]
    return {"found": True, "path": path, "exit": code, "version": lines[-1] if lines else None}


def torch_facts(device: str) -> dict[str, Any]:
    try:
        import torch
    except Exception as e:  # any import failure is a fact about the machine
        return {"imported": False, "error": f"{type(e).__name__}: {e}"}
    out: dict[str, Any] = {
        "imported": True,
        "version": torch.__version__,
        "cuda": torch.version.cuda,
        "cuda_available": bool(torch.cuda.is_available()),
    }
    if out["cuda_available"]:
        out["device_count"] = torch.cuda.device_count()
        out["device"] = lab.describe_device(torch, "cuda")
        free, total = torch.cuda.mem_get_info()
        out["memory_free_bytes"], out["memory_total_bytes"] = int(free), int(total)
    else:
        out["no_gpu_reason"] = lab.no_gpu_reason(torch)
    if device == "cpu" or not out["cuda_available"]:
        out["cpu_device"] = lab.describe_device(torch, "cpu")
    return out


def triton_facts() -> dict[str, Any]:
    try:
        import triton
    except Exception as e:
        return {"imported": False, "error": f"{type(e).__name__}: {e}"}
    return {"imported": True, "version": getattr(triton, "__version__", None)}


def summary(facts: dict[str, Any]) -> str:
    t = facts["torch"]
    parts = []
    dev = t.get("device") or {}
    smi = facts["nvidia_smi"].get("gpus") or [{}]
    if dev:
        parts.append(f"{dev.get('name')}, driver {smi[0].get('driver_version') or dev.get('driver')}")
    elif facts["nvidia_smi"].get("gpus"):
        parts.append(f"{smi[0].get('name')} (nvidia-smi; torch sees no GPU)")
    else:
        parts.append("no GPU")
    if t.get("imported"):
        parts.append(f"torch {t['version']} (CUDA {t.get('cuda')})")
    else:
        parts.append("no torch")
    tr = facts["triton"]
    parts.append(f"triton {tr['version']}" if tr.get("imported") else "no triton")
    mem = facts["memory_bytes"]
    parts.append(
        f"{facts['cpu']['name']}, {facts['cpu']['count']} CPUs"
        + (f", {mem / 2**30:.0f} GiB" if isinstance(mem, int) else "")
    )
    return "; ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(prog="gpu_facts.py", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--out", required=True, metavar="FILE.json")
    args = parser.parse_args()
    llc, level = lab.cpu_last_level_cache()
    facts: dict[str, Any] = {
        "kind": "gpu-run-facts",
        "schema": 1,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device_requested": args.device,
        "python": platform.python_version(),
        "executable": sys.executable,
        "platform": platform.platform(),
        "kernel": platform.release(),
        "cpu": {
            "name": lab.cpu_name(),
            "count": os.cpu_count(),
            "llc_bytes": llc,
            "llc_level": level,
        },
        "memory_bytes": lab.cpu_memory_total(),
        "memory_available_bytes": lab.cpu_memory_available(),
        "nvidia_smi": nvidia_smi(),
        "tools": {name: tool_version(name) for name in ("ncu", "nsys", "nvcc")},
        "env": {k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS") if k in os.environ},
    }
    facts["torch"] = torch_facts(args.device)
    facts["triton"] = triton_facts()
    facts["summary"] = summary(facts)
    lab.write_json_atomic(args.out, facts)
    # what the shell script decides on: one key=value a line, values on one line
    gpu = facts["torch"].get("cuda_available", False)
    print(f"gpu={1 if gpu else 0}")
    device = facts["torch"].get("device") or {}
    print("gpu_name=" + " ".join(f"{device.get('name') or ''} (driver {device.get('driver') or 'unknown'})".split()))
    reason = facts["torch"].get("no_gpu_reason") or facts["torch"].get("error") or ""
    print("gpu_reason=" + " ".join(str(reason).split()))
    print(f"triton={1 if facts['triton'].get('imported') else 0}")
    print("triton_reason=" + " ".join(str(facts["triton"].get("error", "")).split()))
    print("summary=" + " ".join(facts["summary"].split()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
