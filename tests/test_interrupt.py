"""Ctrl-C (a real SIGINT to the console script) ends every command with exit 130 and one
last line on stderr saying what was done and what was not."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli, sigint_default
from conftest import STG_CONTEXT
from kubesim import KubeSim
from labenv import PENDING

NS = "ml-lab"
OWNER = "ana"
POD = f"nsight-lab-{OWNER}"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kubeconfig: Path) -> Path:
    h = tmp_path / "home"
    monkeypatch.setenv("NSIGHTLAB_HOME", str(h))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("COLUMNS", "200")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        f"clusters:\n  stg:\n    context: {STG_CONTEXT}\n    namespace: {NS}\n"
        f"lab:\n  image: registry.example.com/triton-vllm-container:1.0-1\n  owner: {OWNER}\n"
    )
    monkeypatch.setenv("NSIGHTLAB_CONFIG", str(cfg))
    return h


def interrupt(args: list[str], ready: Callable[[str], bool], *, settle: float = 0.3) -> tuple[int, str]:
    """Run the console script, send SIGINT once `ready(stderr so far)` (or `ready("")`
    polled) holds, and return (exit code, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "nsightlab", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
        preexec_fn=sigint_default,
    )
    assert proc.stderr is not None
    os.set_blocking(proc.stderr.fileno(), False)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while not ready(seen.decode("utf-8", "replace")):
            assert proc.poll() is None, seen.decode()
            assert time.monotonic() < deadline, seen.decode()
            time.sleep(0.05)
            seen += proc.stderr.read() or b""
        time.sleep(settle)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=20)  # a bound, not a benchmark: Ctrl-C must not hang
        os.set_blocking(proc.stderr.fileno(), True)
        seen += proc.stderr.read() or b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, seen.decode("utf-8", "replace")


def last_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert lines and "Traceback" not in err and "Aborted" not in err, err
    assert [line for line in lines if line.startswith("error:")] == [lines[-1]], err
    return lines[-1]


def test_create_interrupted_while_waiting(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim: KubeSim
) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(cfg.read_text() + f"  node_selector: {json.dumps(PENDING)}\n")  # no node matches: it stays Pending
    code, err = interrupt(["create", "--context", "stg", "--yes", "--timeout", "120"], lambda e: "created pod" in e)
    assert code == 130, err
    line = last_line(err)
    assert line.startswith(
        f"error: interrupted while waiting: the lab pod {POD} is still being created (Pending) and stays in place"
    ), line
    assert (
        "`nsightlab status` shows it" in line
        and f"`nsightlab cleanup --context stg --namespace {NS}` removes it" in line
    )
    # what it said is true: the pod is there, and the session knows it without --context
    r = run_cli(capsys, "status", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert not data["gone"] and data["lab"]["phase"] == "Pending"


def test_a_read_interrupted_on_a_silent_server(home: Path, sim: KubeSim) -> None:
    sim.faults.stall(times=None)  # every request hangs: Ctrl-C must not wait for them
    code, err = interrupt(["explore", "nodes", "--context", "stg"], lambda e: sim.faults.stalled >= 2, settle=0.1)
    assert code == 130, err
    assert last_line(err) == "error: interrupted: nothing was changed."


def test_interrupt_reaches_the_command_when_the_suite_ignores_sigint(home: Path, sim: KubeSim) -> None:
    """A CI runner may start the suite from a shell that ignores SIGINT (a background job
    without job control); the commands these tests Ctrl-C must hear it all the same."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        test_a_read_interrupted_on_a_silent_server(home, sim)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_local_sweep_interrupted_mid_run(home: Path) -> None:
    pytest.importorskip("torch")
    args = [
        "sweep",
        "--local",
        "--device",
        "cpu",
        "--dtype",
        "float32",
        "--sizes",
        "12,25",
        "--iters",
        "2000",
        "--warmup",
        "1",
    ]
    code, err = interrupt(args, lambda e: "2^12 elements" in e)
    assert code == 130, err
    assert last_line(err) == "error: interrupted: the sweep was stopped; no run was stored."
    runs = home / "runs"
    assert not runs.exists() or list(runs.iterdir()) == []


def test_shell_command_interrupted(capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim) -> None:
    r = run_cli(capsys, "create", "--context", "stg", "--yes")
    assert r.code == 0, r
    code, err = interrupt(["shell", "--", "sleep", "30"], lambda e: any(q.path.endswith("/exec") for q in sim.requests))
    assert code == 130, err
    assert (
        last_line(err)
        == f"error: interrupted: the connection to pod {POD} was closed; the command may still be running there."
    )


def test_the_innermost_work_says_what_it_left() -> None:
    """A copy (or anything nested) that knows better raises its own Interrupted: it passes
    through the outer scopes untouched; a bare Ctrl-C takes the innermost scope's state."""
    from nsightlab.errors import Interrupted, OnInterrupt

    with pytest.raises(Interrupted) as own, OnInterrupt("the copy was stopped"), OnInterrupt("inner"):
        raise Interrupted("interrupted: 3 of 5 files were copied; nothing half-written is left")
    assert own.value.message == "interrupted: 3 of 5 files were copied; nothing half-written is left"
    with pytest.raises(Interrupted) as bare, OnInterrupt("outer state") as outer, OnInterrupt("first state") as inner:
        inner.state = "the state now"
        outer.state = "not this one"
        raise KeyboardInterrupt
    assert bare.value.line() == "error: interrupted: the state now."
    assert bare.value.exit_code == 130


def test_lab_work_interrupted_removes_its_unfinished_run_and_keeps_a_finished_one(home: Path) -> None:
    from nsightlab.errors import Interrupted
    from nsightlab.measure.targets import LocalTarget
    from nsightlab.measure.work import LabWork

    with pytest.raises(Interrupted) as unfinished, LabWork("profile", LocalTarget()) as work:
        run, _ = work.new_run("profile", "lesson1")
        (run.raw / "partial.csv").write_text("half")
        raise KeyboardInterrupt
    assert not run.path.exists()
    assert unfinished.value.line() == "error: interrupted: the profile was stopped; no run was stored."
    with pytest.raises(Interrupted) as finished, LabWork("profile", LocalTarget()) as work:
        run, _ = work.new_run("profile", "lesson1")
        (run.path / "result.json").write_text("{}")
        raise KeyboardInterrupt
    assert run.path.is_dir()
    assert finished.value.line() == "error: interrupted: the profile was stopped after its run was stored."
