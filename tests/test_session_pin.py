"""The lab session is pinned (context, API server, namespace, pod uid) and the lab pod's
labels are checked before every exec or copy; a session ends only on the word of its own
server; `create` checks NSIGHTLAB_HOME before it touches the cluster."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from clirun import Result
from conftest import CONTEXTS, STG_CONTEXT
from kubesim import KubeSim, realistic_cluster
from labenv import NS, OWNER, POD, nsl, write_config


def session(home: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((home / "session.json").read_text())
    return data


def edit_session(home: Path, **changes: str) -> None:
    (home / "session.json").write_text(json.dumps({**session(home), **changes}))


def run_pod(sim: KubeSim, name: str, labels: dict[str, str]) -> dict[str, Any]:
    """A pod made through the API (so the kubelet runs it and exec works), Running."""
    from kubernetes import client

    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]},
    }
    client.CoreV1Api(sim.api_client()).create_namespaced_pod(NS, manifest)
    sim.wait_until(
        lambda: (sim.get("pods", NS, name) or {}).get("status", {}).get("phase") == "Running",
        what=f"pod {name} running",
    )
    pod: dict[str, Any] = sim.get("pods", NS, name)
    return pod


def execs(sim: KubeSim) -> list[str]:
    return [q.path for q in sim.requests if q.path.endswith("/exec")]


def last_line(r: Result) -> str:
    lines = r.err.strip().splitlines()
    return lines[-1] if lines else ""


def one_error(r: Result) -> str:
    errors = [line for line in r.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0] == last_line(r) and "Traceback" not in r.err, r
    return errors[0]


# ---------------------------------------------------------------------------- the pod's identity


def test_nothing_execs_into_a_pod_the_session_did_not_create(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path, sim: KubeSim, tmp_path: Path
) -> None:
    serving = run_pod(sim, "llmqu-canary", {"app.kubernetes.io/name": "llmqu"})
    edit_session(home, pod="llmqu-canary")  # session.json now names a pod nsightlab did not make
    sim.clear_requests()
    f = tmp_path / "x.txt"
    f.write_text("x")
    commands = [
        ["shell", "--", "hostname"],
        ["copy", str(f), ":/tmp/"],
        ["copy", ":/etc/hostname", str(tmp_path)],
        ["profile", "lesson1", "--profiler", "torch"],
        ["sweep", "--device", "cpu", "--sizes", "12", "--iters", "1", "--warmup", "0"],
        ["ncu"],
    ]
    for args in commands:
        r = nsl(capsys, *args)
        assert r.code == 3, (args, r)
        line = one_error(r)
        assert line.startswith(f"error: the lab session's pod llmqu-canary has uid {lab['uid'][:8]}"), line
        assert f"but pod llmqu-canary in {NS} has uid {serving['metadata']['uid'][:8]}" in line
        assert "it is not the pod nsightlab created" in line and "nsightlab status" in line
    assert execs(sim) == []
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())  # no run was stored
    assert session(home)["pod"] == "llmqu-canary"  # refused, not forgotten


def test_doctor_does_not_probe_a_pod_the_session_did_not_create(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path, sim: KubeSim
) -> None:
    run_pod(sim, "llmqu-canary", {"app.kubernetes.io/name": "llmqu"})
    edit_session(home, pod="llmqu-canary")
    sim.clear_requests()
    r = nsl(capsys, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(r.out)["checks"]}
    assert checks["lab pod"]["ok"] is False and "it is not the pod nsightlab created" in checks["lab pod"]["detail"]
    assert r.code == 4 and execs(sim) == []


@pytest.mark.parametrize(
    ("labels", "words"),
    [
        ({}, "label app.kubernetes.io/managed-by is missing"),
        ({"app.kubernetes.io/managed-by": "nsightlab", "nsightlab/owner": "bob"}, "label nsightlab/owner is 'bob'"),
        (
            {"app.kubernetes.io/managed-by": "helm", "nsightlab/owner": OWNER},
            "label app.kubernetes.io/managed-by is 'helm'",
        ),
    ],
)
def test_without_a_session_the_labels_are_checked(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, labels: dict[str, str], words: str
) -> None:
    run_pod(sim, POD, labels)  # someone else's pod under the lab pod's name
    sim.clear_requests()
    r = nsl(capsys, "shell", "--context", "stg", "--", "hostname")
    assert r.code == 3, r
    line = one_error(r)
    assert f"pod {POD} in {NS} is not a lab pod of {OWNER}" in line and words in line, line
    assert execs(sim) == []


# ---------------------------------------------------------------------------- the session's server and namespace


def test_a_session_whose_server_moved_is_refused_and_kept(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path, sim: KubeSim, kubeconfig: Path, tmp_path: Path
) -> None:
    with KubeSim(tls=True, scheduler=False) as other:
        other.load(realistic_cluster())
        other.write_kubeconfig(kubeconfig, CONTEXTS)  # the same context names, now on another server
        sim.clear_requests()
        for args in (["status"], ["status", "--context", "stg"], ["shell", "--", "true"], ["cleanup", "--yes"]):
            r = nsl(capsys, *args)
            assert r.code == 3, (args, r)
            line = one_error(r)
            assert f"the lab session was created on server {sim.url}" in line, line
            assert f"context {STG_CONTEXT} now points at server {other.url}" in line
            assert str(home / "session.json") in line  # what to do if the old server is gone for good
        assert other.requests == [] and sim.requests == []  # refused before any request
    assert session(home)["uid"] == lab["uid"]
    assert sim.get("pods", NS, POD) is not None


def test_a_session_whose_namespace_moved_is_refused_and_kept(
    capsys: pytest.CaptureFixture[str],
    lab: dict[str, Any],
    home: Path,
    sim: KubeSim,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sim.clear_requests()
    r = nsl(capsys, "status", "-n", "serving")
    assert r.code == 3, r
    line = one_error(r)
    assert f"the lab session's pod {POD} is in namespace {NS} (context {STG_CONTEXT})" in line
    assert "but this command would use namespace serving" in line, line
    # the alias's namespace edited in config.yaml
    monkeypatch.setenv("NSIGHTLAB_CONFIG", str(write_config(tmp_path / "moved.yaml", namespace="serving")))
    for args in (["status"], ["shell", "--", "true"], ["copy", ":/etc/hostname", str(tmp_path)]):
        r = nsl(capsys, *args)
        assert r.code == 3, (args, r)
        assert "but this command would use namespace serving" in one_error(r)
    assert sim.requests == []
    assert session(home)["uid"] == lab["uid"]


def test_a_session_ends_on_a_404_from_its_own_server(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path, sim: KubeSim
) -> None:
    sim.remove("pods", NS, POD)
    r = nsl(capsys, "status", "--json")
    assert r.code == 0 and json.loads(r.out)["gone"], r
    assert not (home / "session.json").exists()


def test_a_pod_replaced_under_the_same_name_ends_the_session(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path, sim: KubeSim
) -> None:
    sim.remove("pods", NS, POD)
    other = run_pod(sim, POD, {"app.kubernetes.io/managed-by": "nsightlab", "nsightlab/owner": OWNER})
    sim.clear_requests()
    r = nsl(capsys, "shell", "--", "true")
    assert r.code == 3 and "it is not the pod nsightlab created" in one_error(r), r
    assert execs(sim) == []
    r = nsl(capsys, "status", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["gone"] and other["metadata"]["uid"] in data["note"] and lab["uid"] in data["note"]
    assert not (home / "session.json").exists()
    text = nsl(capsys, "status", "--context", "stg")  # no session now: the pod by its name
    assert text.code == 0 and "Lab pod" in text.out, text


# ---------------------------------------------------------------------------- NSIGHTLAB_HOME


def _unusable_homes(tmp_path: Path) -> list[Path]:
    a_file = tmp_path / "home-is-a-file"
    a_file.write_text("not a folder\n")
    homes = [a_file, a_file / "below-a-file"]
    proc_home = Path("/proc/self/nsightlab-home")  # not writable, even for root
    if not os.access("/proc/self", os.W_OK) or not proc_home.parent.exists():
        homes.append(proc_home)
    else:
        try:
            proc_home.mkdir()
        except OSError:
            homes.append(proc_home)
    return homes


def test_create_checks_the_home_before_touching_the_cluster(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for bad in _unusable_homes(tmp_path):
        monkeypatch.setenv("NSIGHTLAB_HOME", str(bad))
        sim.clear_requests()
        r = nsl(capsys, "create", "--context", "stg", "--yes")
        assert r.code == 2, (bad, r)
        line = one_error(r)
        assert str(bad) in line and "NSIGHTLAB_HOME" in line, line
        assert sim.requests == []  # nothing was asked of the cluster, let alone created
    assert sim.get("pods", NS, POD) is None
