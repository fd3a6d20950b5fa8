"""Following the lab pod as kubectl users do, against the API server emulator: `logs`
(tail, follow until the container ends, the pod goes or Ctrl-C), `events` (as
`kubectl describe pod` lists them, with kubectl as the judge), `create --no-wait`, and a
server profiled in the pod with `profile --serving`."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from clirun import sigint_default
from conftest import STG_CONTEXT
from kubesim import KubeSim, kubectl
from labenv import NS, PENDING, POD, nsl, write_config

HERE = Path(__file__).resolve().parent
FIXTURE03 = HERE / "fixtures" / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv"
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


# ---------------------------------------------------------------------------- logs


def test_logs_whole_tail_and_container(capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim) -> None:
    sim.append_log(NS, POD, "loading model\nready on :8000\nhandled 3 requests\n")
    r = nsl(capsys, "logs")
    assert r.code == 0, r
    assert r.out == "loading model\nready on :8000\nhandled 3 requests\n"
    assert "using the lab session: context stg" in r.err  # the session's rules, as status
    tail = nsl(capsys, "logs", "--tail", "1", "--context", "stg", "--container", "lab")
    assert tail.code == 0 and tail.out == "handled 3 requests\n"
    bad = nsl(capsys, "logs", "--container", "sidecar")
    assert (
        bad.code == 2
        and bad.err.strip().splitlines()[-1] == f"error: pod {POD} has no container 'sidecar'. Its containers: lab."
    )
    logs = [q for q in sim.requests if q.path.endswith(f"/pods/{POD}/log")]
    assert [q.query.get("tailLines") for q in logs] == [None, "1"]


def test_logs_follow_until_the_pod_goes(capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim) -> None:
    sim.append_log(NS, POD, "first\n")

    def later() -> None:
        sim.wait_until(lambda: any(q.path.endswith("/log") for q in sim.requests), timeout=20)
        time.sleep(0.3)
        sim.append_log(NS, POD, "second\nthird\n")
        time.sleep(0.5)
        sim.remove("pods", NS, POD)

    t = threading.Thread(target=later)
    t.start()
    watchdog = threading.Timer(20, lambda: sim.remove("pods", NS, POD))
    watchdog.start()
    try:
        r = nsl(capsys, "logs", "-f")
    finally:
        watchdog.cancel()
    t.join()
    assert r.code == 0, r
    assert r.out == "first\nsecond\nthird\n"
    (q,) = [q for q in sim.requests if q.path.endswith("/log")]
    assert q.query.get("follow") == "true"


def test_logs_follow_ends_with_the_container(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, sim: KubeSim
) -> None:
    from nsightlab import assets

    template = tmp_path / "short.yaml"
    text = assets.pod_template().read_text()
    # the emulated kubelet ends the container after 1.5 s, exit 0
    annotations = 'metadata:\n  annotations:\n    kubesim/exit-code: "0"\n    kubesim/run-seconds: "1.5"\n'
    template.write_text(text.replace("metadata:\n", annotations, 1))
    assert nsl(capsys, "create", "--context", "stg", "--yes", "--manifest", str(template)).code == 0
    sim.append_log(NS, POD, "working\n")
    watchdog = threading.Timer(20, lambda: sim.remove("pods", NS, POD))  # a hung follow fails, never hangs
    watchdog.start()
    try:
        r = nsl(capsys, "logs", "-f")
    finally:
        watchdog.cancel()
    assert r.code == 0 and r.out == "working\n", r
    pod = sim.get("pods", NS, POD)
    assert pod is not None and pod["status"]["phase"] == "Succeeded"  # it ended by itself


def test_ctrl_c_ends_a_followed_log_quietly(lab: dict[str, Any], sim: KubeSim) -> None:
    sim.append_log(NS, POD, "serving\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "nsightlab", "logs", "-f"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
        text=True,
        preexec_fn=sigint_default,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "serving\n"  # it is following
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "error" not in err and "Traceback" not in err


# ---------------------------------------------------------------------------- events


def test_events_as_kubectl_describe_lists_them(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim
) -> None:
    r = nsl(capsys, "events", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert (data["pod"], data["namespace"], data["uid"], data["gone"]) == (POD, NS, lab["uid"], False)
    reasons = [e["reason"] for e in data["events"]]
    assert reasons[0] == "Scheduled" and "Started" in reasons and reasons.index("Pulling") < reasons.index("Started")
    scheduled = data["events"][0]
    assert (
        scheduled["source"] == "default-scheduler"
        and scheduled["type"] == "Normal"
        and lab["node"] in scheduled["message"]
    )
    assert all(e["source"] == "kubelet" for e in data["events"][1:])
    text = nsl(capsys, "events")
    header = text.out.splitlines()[1].split()
    assert header == ["TYPE", "REASON", "AGE", "FROM", "MESSAGE"]
    assert "default-scheduler" in text.out and "Started container lab" in text.out


@needs_kubectl
def test_events_agree_with_kubectl(capsys: pytest.CaptureFixture[str], lab: dict[str, Any], kubeconfig: Path) -> None:
    proc = kubectl(
        kubeconfig,
        STG_CONTEXT,
        "-n",
        NS,
        "get",
        "events",
        "--field-selector",
        f"involvedObject.name={POD}",
        "-o",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    theirs = sorted((e["reason"], e["message"], e.get("count", 1)) for e in json.loads(proc.stdout)["items"])
    ours = sorted(
        (e["reason"], e["message"], e["count"]) for e in json.loads(nsl(capsys, "events", "--json").out)["events"]
    )
    assert ours == theirs and ours


def test_repeated_events_are_counted_as_kubectl_does() -> None:
    from datetime import datetime, timedelta, timezone

    from nsightlab.k8s.labpod import pod_events

    now = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)

    def stamp(minutes: int) -> str:
        return (now - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")

    events = [
        {
            "type": "Warning",
            "reason": "FailedScheduling",
            "message": "0/10 nodes are available",
            "count": 4,
            "firstTimestamp": stamp(10),
            "lastTimestamp": stamp(3),
            "source": {"component": "default-scheduler"},
            "involvedObject": {"uid": "u1"},
        },
        {
            "type": "Normal",
            "reason": "Scheduled",
            "message": "assigned",
            "firstTimestamp": stamp(2),
            "lastTimestamp": stamp(2),
            "source": {"component": "default-scheduler"},
            "involvedObject": {"uid": "u1"},
        },
        {
            "type": "Normal",
            "reason": "Killing",
            "message": "an older pod of the same name",
            "firstTimestamp": stamp(30),
            "lastTimestamp": stamp(30),
            "source": {"component": "kubelet"},
            "involvedObject": {"uid": "u0"},
        },
    ]
    rows = pod_events(events, uid="u1", now=now)
    assert [(e.reason, e.age) for e in rows] == [("FailedScheduling", "3m (x4 over 10m)"), ("Scheduled", "2m")]
    assert [e.reason for e in pod_events(events, uid=None, now=now)] == ["Killing", "FailedScheduling", "Scheduled"]


# ---------------------------------------------------------------------------- create --no-wait


def test_create_no_wait_returns_at_once_and_events_say_why_it_waits(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, sim: KubeSim
) -> None:
    cfg = write_config(tmp_path / "pending.yaml", node_selector=PENDING)  # no node matches: it stays Pending
    sim.clear_requests()
    r = nsl(capsys, "--config", str(cfg), "create", "--context", "stg", "--yes", "--no-wait")
    assert r.code == 0, r
    assert "Lab pod created, not waiting for it" in r.out and "Pending" in r.out
    assert "nsightlab events" in r.out and "nsightlab status" in r.out
    assert not [q for q in sim.requests if q.query.get("watch") == "true"]  # it did not wait
    session = json.loads((home / "session.json").read_text())
    assert session["pod"] == POD and session["uid"] == sim.get("pods", NS, POD)["metadata"]["uid"]
    # the commands it printed follow the pod: the scheduler's words arrive as an event
    deadline = time.monotonic() + 15
    while True:
        ev = nsl(capsys, "--config", str(cfg), "events", "--json")
        assert ev.code == 0, ev
        failed = [e for e in json.loads(ev.out)["events"] if e["reason"] == "FailedScheduling"]
        if failed or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert (
        failed
        and failed[0]["type"] == "Warning"
        and "didn't match Pod's node affinity/selector" in failed[0]["message"]
    )
    status = nsl(capsys, "--config", str(cfg), "status", "--json")
    assert status.code == 0 and json.loads(status.out)["lab"]["phase"] == "Pending"
    no_log = nsl(capsys, "--config", str(cfg), "logs")
    assert no_log.code == 5 and "has not started yet" in no_log.err
    assert f"`nsightlab events --context stg -n {NS}`" in no_log.err


# ---------------------------------------------------------------------------- a server in the pod

# a server that never stops by itself (nsys ends it), saying what it was given
SERVER = (
    "import os, sys, time\n"
    "print('workers:', os.environ.get('VLLM_WORKER_MULTIPROC_METHOD'), flush=True)\n"
    "print('argv:', ' '.join(sys.argv[1:]), flush=True)\n"
    "time.sleep(60)\n"
)


def test_profile_serving_in_the_pod_runs_the_command_as_given(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim, home: Path
) -> None:
    sim.put_tool(NS, POD, "nsys", (HERE / "standins" / "nsys").read_text().replace("@FIXTURE@", str(FIXTURE03)))
    command = ["python3", "-c", SERVER, "--port", "8000", "--duration", "7"]  # `--duration 7` is the server's
    start = time.monotonic()
    r = nsl(capsys, "profile", "--serving", "--duration", "1", "--json", "--", *command)
    assert r.code == 0, r
    assert time.monotonic() - start < 30  # not the server's 60 s: nsys ended it after our 1 s
    assert "workers: spawn" in r.err and "argv: --port 8000 --duration 7" in r.err
    assert "the server ended with exit" in r.err  # nsys stopped it: not a failure
    data = json.loads(r.out)
    assert data["target"] == f"pod {NS}/{POD}" and len(data["kernels"]) == 113 and data["ranges"] == []
    (run,) = (home / "runs").iterdir()
    assert "-profile-python3-" in run.name
    assert data["nsys_input"] == "sqlite" and (run / "raw" / "nsightlab.sqlite").is_file()
    # the stand-in lists in its placeholder report what nsys was asked for
    report = (run / "raw" / "nsightlab.nsys-rep").read_text().splitlines()
    options = json.loads(report[1].removeprefix("options: "))
    assert options["--trace-fork-before-exec"] == "true" and options["--cuda-graph-trace"] == "node"
    assert options["--duration"] == "1" and "--capture-range" not in options and "--delay" not in options
    assert json.loads(report[2].removeprefix("command: ")) == command  # run as given
    meta = json.loads((run / "meta.json").read_text())
    assert meta["command"] == ["nsightlab", "profile", "--serving", "--duration=1", "--", *command]
    assert meta["pod"] == POD
    # nothing was copied into the pod for it: no script beside the report
    assert not list(sim.pod_path(NS, POD, "/tmp/nsightlab").glob("run-*/*.py"))
