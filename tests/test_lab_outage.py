"""`create` through a short API outage: the wait for Ready watches again with backoff
until `--timeout` (as `kubectl wait` does) and says on stderr what it waits for; a
refusal that waiting cannot mend, or the timeout, still ends it."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from conftest import CONTEXTS
from kubesim import KubeSim, realistic_cluster
from labenv import NS, POD, home, nsl

__all__ = ["home"]  # the fixture, imported to be used


def _outage_after_create(sim: KubeSim, seconds: float, stop: threading.Event) -> None:
    """Once the pod is created: every request is reset and the open watches closed, for
    `seconds`; then the server answers again."""
    while not stop.wait(0.02):
        if any(q.method == "POST" and q.path == f"/api/v1/namespaces/{NS}/pods" for q in sim.requests):
            break
    else:
        return
    sim.faults.reset_connection(times=None)
    sim.faults.close_watches()
    stop.wait(seconds)
    sim.faults.clear()


def test_a_six_second_outage_during_create_ends_in_a_ready_pod(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with KubeSim(tls=True, kubelet_delay=1.0) as slow:  # Ready only a few seconds after the create
        slow.load(realistic_cluster())
        monkeypatch.setenv("KUBECONFIG", str(slow.write_kubeconfig(tmp_path / "kc", CONTEXTS)))
        stop = threading.Event()
        outage = threading.Thread(target=_outage_after_create, args=(slow, 6.0, stop), daemon=True)
        outage.start()
        start = time.monotonic()
        try:
            r = nsl(capsys, "create", "--context", "stg", "--yes", "--timeout", "45", "--json")
        finally:
            stop.set()
            outage.join()
        took = time.monotonic() - start
    assert r.code == 0, r
    assert json.loads(r.out)["ready"] is True
    assert took >= 6  # it was still waiting when the server came back
    assert f"waiting for pod {POD} to be Ready: " in r.err and "trying again until --timeout 45 (" in r.err
    assert "the API server answers again after " in r.err and f"still waiting for pod {POD} to be Ready" in r.err


def test_an_outage_past_the_timeout_is_exit_4_naming_it(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with KubeSim(tls=True, kubelet_delay=1.0) as slow:
        slow.load(realistic_cluster())
        monkeypatch.setenv("KUBECONFIG", str(slow.write_kubeconfig(tmp_path / "kc", CONTEXTS)))
        stop = threading.Event()
        outage = threading.Thread(target=_outage_after_create, args=(slow, 60.0, stop), daemon=True)
        outage.start()
        start = time.monotonic()
        try:
            r = nsl(capsys, "create", "--context", "stg", "--yes", "--timeout", "5")
        finally:
            stop.set()
            outage.join()
        took = time.monotonic() - start
    assert r.code == 4, r
    line = r.err.strip().splitlines()[-1]
    assert line.startswith("error: the API server ") and "the API server did not come back within --timeout 5" in line
    assert "Traceback" not in r.err
    assert took < 5 + 20  # the timeout, and the create before it


def test_a_refusal_during_the_wait_is_not_waited_out(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with KubeSim(tls=True, kubelet_delay=1.0) as slow:
        slow.load(realistic_cluster())
        monkeypatch.setenv("KUBECONFIG", str(slow.write_kubeconfig(tmp_path / "kc", CONTEXTS)))
        stop = threading.Event()

        def forbid_watches() -> None:
            while not stop.wait(0.02):
                if any(q.method == "POST" for q in slow.requests):
                    slow.deny(verb="watch", resource="pods")
                    slow.faults.close_watches()
                    return

        t = threading.Thread(target=forbid_watches, daemon=True)
        t.start()
        start = time.monotonic()
        try:
            r = nsl(capsys, "create", "--context", "stg", "--yes", "--timeout", "45")
        finally:
            stop.set()
            t.join()
    assert r.code == 4, r
    assert r.err.strip().splitlines()[-1].startswith(f"error: forbidden: cannot watch pods in namespace {NS}"), r
    assert "trying again" not in r.err
    assert time.monotonic() - start < 30
