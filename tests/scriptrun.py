"""Running several lab scripts at once, as the lab-script tests do: each pays for
importing torch, so they start together and are collected after."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path


def run_together(
    plans: Mapping[str, Sequence[str]],
    *,
    cwd: Path,
    env: Mapping[str, str],
    cwds: Mapping[str, Path] | None = None,
    envs: Mapping[str, Mapping[str, str]] | None = None,
    timeout: float = 180,
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Start `python ARGV...` for every plan at once, wait for all; a run still going when
    an error ends the wait is killed."""
    procs = {
        name: subprocess.Popen(
            [sys.executable, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=(cwds or {}).get(name, cwd),
            env=dict((envs or {}).get(name, env)),
        )
        for name, argv in plans.items()
    }
    done: dict[str, subprocess.CompletedProcess[str]] = {}
    try:
        for name, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=timeout)
            done[name] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    return done
