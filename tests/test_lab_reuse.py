"""create reuses a lab pod only when it is the configured one (else it says what differs,
and --recreate replaces it); a pod that could never be scheduled is refused before any
change; status says why a Pending pod waits; logs of a silent pod say so."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any

import pytest
from clirun import Result
from kubesim import KubeSim
from labenv import IMAGE, NS, OWNER, PENDING, POD, nsl, write_config

NEW_IMAGE = "registry.example.com/triton-vllm-container:2.0"


def _pod(sim: KubeSim) -> dict[str, Any]:
    pod = sim.get("pods", NS, POD)
    assert pod is not None
    return pod


def _posts(sim: KubeSim) -> list[str]:
    return [q.path for q in sim.requests if q.method in ("POST", "PUT", "PATCH", "DELETE")]


def _one_error(r: Result) -> str:
    lines = r.err.strip().splitlines()
    assert [line for line in lines if line.startswith("error:")] == [lines[-1]], r
    assert "Traceback" not in r.err
    return lines[-1]


def _commands(line: str) -> list[list[str]]:
    """The commands a line quotes in backticks, as argv (without `nsightlab`)."""
    quoted = line.split("`")[1::2]
    return [shlex.split(q)[1:] for q in quoted if q.startswith("nsightlab ")]


# ---------------------------------------------------------------------------- reuse only the configured pod


def test_a_new_image_is_not_answered_with_the_old_pod(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path, sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER", OWNER)  # `init` writes owner: null, so the owner is $USER
    init = nsl(capsys, "init", "--force", "--image", NEW_IMAGE)
    assert init.code == 0, init
    sim.clear_requests()
    r = nsl(capsys, "create", "--context", "stg", "--yes")
    assert r.code == 2, r
    line = _one_error(r)
    assert f"your lab pod {POD} is not the one config.yaml asks for" in line
    assert f"image: pod runs {IMAGE}, config says {NEW_IMAGE}" in line
    assert "reus" not in r.err.replace("not reusing it", "")  # no "reusing", no "Lab pod ready (reused)"
    assert r.out == "" and _posts(sim) == []  # nothing created or deleted
    pod = _pod(sim)
    assert pod["metadata"]["uid"] == lab["uid"] and pod["spec"]["containers"][0]["image"] == IMAGE

    # both ways out it names run as printed: cleanup then create gives the configured pod
    cleanup, create = _commands(line)[:2]
    assert cleanup[0] == "cleanup" and create[0] == "create"
    done = nsl(capsys, *cleanup, "--yes")
    assert done.code == 0 and sim.get("pods", NS, POD) is None, done
    again = nsl(capsys, *create, "--yes", "--json")
    assert again.code == 0, again
    data = json.loads(again.out)
    assert not data["reused"] and data["uid"] != lab["uid"]
    assert _pod(sim)["spec"]["containers"][0]["image"] == NEW_IMAGE


def test_recreate_gives_the_configured_pod(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path, sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER", OWNER)
    assert nsl(capsys, "init", "--force", "--image", NEW_IMAGE).code == 0
    refused = nsl(capsys, "create", "--context", "stg", "--yes")
    recreate = [c for c in _commands(_one_error(refused)) if "--recreate" in c]
    assert recreate == [["create", "--context", "stg", "-n", NS, "--recreate"]]
    r = nsl(capsys, *recreate[0], "--yes", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["pod"] == POD and data["ready"] and not data["reused"] and data["uid"] != lab["uid"]
    assert f"--recreate: deleting your lab pod {POD}" in r.err
    pod = _pod(sim)
    assert pod["metadata"]["uid"] == data["uid"] and pod["spec"]["containers"][0]["image"] == NEW_IMAGE
    session = json.loads((home / "session.json").read_text())
    assert session["uid"] == data["uid"]
    # the old pod was deleted as cleanup deletes it: one DELETE with its uid as precondition
    deletes = [q for q in sim.requests if q.method == "DELETE"]
    assert len(deletes) == 1 and deletes[0].path == f"/api/v1/namespaces/{NS}/pods/{POD}"


def test_another_name_and_two_gpus_do_not_return_the_old_pod(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path, tmp_path: Path, sim: KubeSim
) -> None:
    # on the same g7e.8xlarge, two GPUs could never be scheduled: said first, nothing changes
    cfg = write_config(tmp_path / "other.yaml", pod_name="lab-two-{user}", gpus=2)
    sim.clear_requests()
    r = nsl(capsys, "--config", str(cfg), "create", "--context", "stg", "--yes", "--json")
    assert r.code == 2, r
    assert "lab.gpus is 2, but a g7e.8xlarge node has at most 1 GPU" in _one_error(r)
    assert f"lab-two-{OWNER}" not in r.err.replace(f"create lab pod lab-two-{OWNER} (2 GPU", "")
    assert "reusing" not in r.err and r.out == "" and _posts(sim) == []
    again = nsl(capsys, "--config", str(cfg), "create", "--context", "stg", "--yes", "--recreate")
    assert again.code == 2 and "at most 1 GPU" in _one_error(again), again
    assert _posts(sim) == [] and _pod(sim)["metadata"]["uid"] == lab["uid"]  # --recreate deleted nothing

    # on a type with four: what differs, and the ways out, which keep --config
    cfg = write_config(tmp_path / "other.yaml", pod_name="lab-two-{user}", gpus=2, instance_type="g6.12xlarge")
    r = nsl(capsys, "--config", str(cfg), "create", "--context", "stg", "--yes", "--json")
    assert r.code == 2, r
    line = _one_error(r)
    differs = (
        f"(name: pod is {POD}, config says lab-two-{OWNER}; GPUs: pod has 1, config says 2; "
        "instance type: pod asks for g7e.8xlarge, config says g6.12xlarge); not reusing it"
    )
    assert f"error: your lab pod {POD} is not the one config.yaml asks for {differs}" in line
    assert r.out == "" and _posts(sim) == [] and sim.get("pods", NS, f"lab-two-{OWNER}") is None
    cleanup, create, recreate = _commands(line)
    assert cleanup == ["--config", str(cfg), "cleanup", "--context", "stg", "--namespace", NS]  # the session's pod
    assert create == ["--config", str(cfg), "create", "--context", "stg", "-n", NS]
    assert recreate == [*create, "--recreate"]
    made = nsl(capsys, *recreate, "--yes", "--no-wait", "--json")
    assert made.code == 0, made
    data = json.loads(made.out)
    assert data["pod"] == f"lab-two-{OWNER}" and not data["reused"]
    assert sim.get("pods", NS, POD) is None  # the old one was deleted first
    assert json.loads((home / "session.json").read_text())["pod"] == f"lab-two-{OWNER}"


def test_the_same_config_still_reuses(capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim) -> None:
    sim.clear_requests()
    r = nsl(capsys, "create", "--context", "stg", "--yes")
    assert r.code == 0, r
    assert f"reusing your lab pod {POD} (Running)" in r.err and "Lab pod ready (reused)" in r.out
    assert _posts(sim) == []


def test_profiling_caps_are_not_answered_with_a_pod_without_them(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any]
) -> None:
    r = nsl(capsys, "create", "--context", "stg", "--yes", "--profiling-caps")
    assert r.code == 2, r
    line = _one_error(r)
    assert "CAP_SYS_ADMIN: pod lacks it, --profiling-caps asks for it" in line
    assert f"`nsightlab create --context stg -n {NS} --profiling-caps --recreate`" in line


# ---------------------------------------------------------------------------- GPUs that no node has


def test_more_gpus_than_any_node_has_is_refused_before_any_change(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, sim: KubeSim
) -> None:
    cfg = write_config(tmp_path / "two.yaml", gpus=2)
    sim.clear_requests()
    r = nsl(capsys, "--config", str(cfg), "create", "--context", "stg", "--yes")
    assert r.code == 2, r
    assert _one_error(r) == (
        "error: lab.gpus is 2, but a g7e.8xlarge node has at most 1 GPU (allocatable on its 4 nodes): the pod "
        "could never be scheduled; nothing was created. Set lab.gpus in config.yaml to 1 or less, or "
        "lab.instance_type to one with 2 or more, e.g. g7e.12xlarge (2), g7e.24xlarge (4), g7e.48xlarge (8)."
    )
    assert _posts(sim) == [] and sim.get("pods", NS, POD) is None
    assert not (home / "session.json").exists()


def test_without_nodes_to_read_the_spec_table_decides(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, sim: KubeSim
) -> None:
    sim.deny("list", "nodes")
    cfg = write_config(tmp_path / "two.yaml", gpus=2)
    r = nsl(capsys, "--config", str(cfg), "create", "--context", "stg", "--yes")
    assert r.code == 2, r
    assert "a g7e.8xlarge node has at most 1 GPU (by AWS's specification of the type" in _one_error(r)
    assert _posts(sim) == []
    # a type the table does not know is not guessed at: the pod is created and waits
    unknown = write_config(tmp_path / "unknown.yaml", gpus=2, instance_type="x9.huge")
    made = nsl(capsys, "--config", str(unknown), "create", "--context", "stg", "--yes", "--no-wait")
    assert made.code == 0, made
    assert sim.get("pods", NS, POD) is not None


def test_a_type_with_enough_gpus_is_created(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, sim: KubeSim
) -> None:
    cfg = write_config(tmp_path / "g6.yaml", gpus=2, instance_type="g6.12xlarge")  # 4 x L4
    r = nsl(capsys, "--config", str(cfg), "create", "--context", "stg", "--yes", "--no-wait")
    assert r.code == 0, r
    assert _pod(sim)["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"


# ---------------------------------------------------------------------------- status and logs say more


def test_status_of_a_pending_pod_shows_the_schedulers_reason(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path
) -> None:
    cfg = write_config(tmp_path / "pending.yaml", node_selector=PENDING)
    assert nsl(capsys, "--config", str(cfg), "create", "--context", "stg", "--yes", "--no-wait").code == 0
    deadline = time.monotonic() + 30
    while True:
        r = nsl(capsys, "--config", str(cfg), "status", "--json")
        assert r.code == 0, r
        lab = json.loads(r.out)["lab"]
        if lab["scheduler"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert lab["phase"] == "Pending"
    assert lab["scheduler"].startswith("0/10 nodes are available: 10 node(s) didn't match Pod's node affinity/selector")
    text = nsl(capsys, "--config", str(cfg), "status")
    assert "scheduler: 0/10 nodes are available" in text.out


def test_status_falls_back_to_the_failed_scheduling_event(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim
) -> None:
    """A Pending pod whose PodScheduled condition says nothing: the last FailedScheduling
    Event says why (escaped: it is the server's text)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": POD,
            "namespace": NS,
            "uid": "0f0e0d0c-aaaa-bbbb-cccc-000000000001",
            "labels": {"app.kubernetes.io/managed-by": "nsightlab", "nsightlab/owner": OWNER},
        },
        "spec": {"containers": [{"name": "lab", "image": IMAGE}]},
        "status": {"phase": "Pending"},
    }
    sim.load([pod])
    sim.record_event(pod, "FailedScheduling", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.\x1b[2J")
    r = nsl(capsys, "status", "--context", "stg")
    assert r.code == 0, r
    assert "scheduler: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.\\x1b[2J" in r.out
    assert "\x1b" not in r.out


def test_logs_of_a_pod_with_no_output_say_so(capsys: pytest.CaptureFixture[str], lab: dict[str, Any]) -> None:
    r = nsl(capsys, "logs")
    assert r.code == 0, r
    assert r.out == "" and r.err.strip().splitlines()[-1] == "(no output yet)"
