"""The lab pod end to end against the API server emulator: create (scheduler, kubelet,
watch, events), status, shell (commands and a real pty), copy (verified, atomic, safe),
cleanup (with decoys), doctor, and profile/sweep running inside the pod's sandbox."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import sigint_default
from conftest import CONTEXTS, STG_CONTEXT
from kubesim import KubeSim, kubectl, realistic_cluster
from labenv import IMAGE, NS, OWNER, PENDING, POD, nsl, write_config

HERE = Path(__file__).resolve().parent
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


# ---------------------------------------------------------------------------- create


def test_create_waits_until_ready_and_records_the_session(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim
) -> None:
    r = nsl(capsys, "create", "--context", "stg", "--yes", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["pod"] == POD and data["ready"] and data["phase"] == "Running"
    assert data["instance_type"] == "g7e.8xlarge"
    assert data["gpu_product"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert data["node"] in {"ip-10-0-19-150.ec2.internal", "ip-10-0-83-47.ec2.internal"}  # the two with a free GPU
    assert 14300 < data["seconds_left"] <= 14400
    session = json.loads((home / "session.json").read_text())
    assert (session["context"], session["namespace"], session["pod"], session["node"]) == (
        STG_CONTEXT,
        NS,
        POD,
        data["node"],
    )
    assert session["uid"] == sim.get("pods", NS, POD)["metadata"]["uid"]
    # the one line naming context, server and namespace came before the change
    assert f"context stg ({STG_CONTEXT}), server {sim.url}, namespace {NS}" in r.err
    assert "2 GPUs of g7e.8xlarge free right now" in r.err
    # it waited with a watch, not by polling
    watches = [q for q in sim.requests if q.query.get("watch") == "true" and q.path.endswith("/pods")]
    gets = [q for q in sim.requests if q.method == "GET" and q.path == f"/api/v1/namespaces/{NS}/pods/{POD}"]
    assert watches and len(gets) <= 3


@needs_kubectl
def test_kubectl_sees_the_tutorials_pod(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], kubeconfig: Path
) -> None:
    proc = kubectl(kubeconfig, STG_CONTEXT, "-n", NS, "get", "pod", POD, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    pod = json.loads(proc.stdout)
    labels = pod["metadata"]["labels"]
    assert labels["app.kubernetes.io/managed-by"] == "nsightlab" and labels["nsightlab/owner"] == OWNER
    spec = pod["spec"]
    assert spec["nodeSelector"]["node.kubernetes.io/instance-type"] == "g7e.8xlarge"
    assert {"key": "nvidia.com/gpu", "operator": "Exists"} in spec["tolerations"]
    assert spec["restartPolicy"] == "Never" and spec["activeDeadlineSeconds"] == 14400
    res = spec["containers"][0]["resources"]
    assert res["limits"] == res["requests"] == {"cpu": "4", "memory": "24Gi", "nvidia.com/gpu": "1"}
    sc = spec["containers"][0]["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}


def test_create_is_idempotent(capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim) -> None:
    again = nsl(capsys, "create", "--context", "stg", "--yes", "--json")
    assert again.code == 0, again
    data = json.loads(again.out)
    assert data["reused"] and data["uid"] == lab["uid"]
    mine = [p for p in sim.list("pods", NS) if p["metadata"].get("labels", {}).get("nsightlab/owner") == OWNER]
    assert len(mine) == 1


def test_unschedulable_pod_times_out_with_the_schedulers_words(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim
) -> None:
    _take_the_free_g7e_gpus(sim)
    start = time.monotonic()
    r = nsl(capsys, "create", "--context", "stg", "--yes", "--timeout", "2")
    assert r.code == 5, r
    assert time.monotonic() - start < 15
    assert "0/10 nodes are available" in r.err and "Insufficient nvidia.com/gpu" in r.err
    assert "free GPUs:" in r.err and "g7e.8xlarge 0/4" in r.err
    assert f"nsightlab cleanup --context stg --namespace {NS}" in r.err
    assert "FailedScheduling" in r.err  # the event arrived while waiting
    assert sim.get("pods", NS, POD) is not None  # left in place


def test_image_pull_failure_stops_the_wait(capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "bad-image.yaml", image="registry.example.com/does-not-exist:1")
    start = time.monotonic()
    r = nsl(capsys, "--config", str(cfg), "create", "--context", "stg", "--yes", "--timeout", "60")
    assert r.code == 5, r
    assert "ErrImagePull" in r.err or "ImagePullBackOff" in r.err
    assert "lab.image" in r.err
    assert time.monotonic() - start < 30  # it did not sit out the 60 s timeout


def test_pod_failing_while_waiting_is_named(capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path) -> None:
    """A template whose init container fails: the pod ends Failed before it is ever Ready."""
    from nsightlab import assets

    template = tmp_path / "setup-fails.yaml"
    text = assets.pod_template().read_text()
    setup = (
        '  initContainers:\n    - name: setup\n      image: busybox\n      command: ["sh", "-c", "exit 3"]\n  '
        "containers:\n"
    )
    template.write_text(text.replace("  containers:\n", setup, 1))
    r = nsl(capsys, "create", "--context", "stg", "--yes", "--manifest", str(template), "--timeout", "60")
    assert r.code == 5, r
    assert f"pod {POD} ended (Failed" in r.err and "Traceback" not in r.err


def test_crash_loop_while_waiting_is_named(capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim) -> None:
    """This owner's lab pod exists (restartPolicy Always, made by hand) and its init
    container keeps crashing: create reuses it and says so instead of sitting out the
    timeout."""
    from kubernetes import client

    from nsightlab import assets
    from nsightlab.cluster.labmanifest import build_manifest, load_template
    from nsightlab.userconfig import Config, LabConfig

    manifest = build_manifest(
        load_template(assets.pod_template()), Config(lab=LabConfig(image=IMAGE, owner=OWNER)), namespace=NS
    )
    manifest["spec"]["restartPolicy"] = "Always"
    manifest["spec"]["initContainers"] = [{"name": "setup", "image": "busybox", "command": ["sh", "-c", "exit 1"]}]
    client.CoreV1Api(sim.api_client()).create_namespaced_pod(NS, manifest)
    start = time.monotonic()
    r = nsl(capsys, "create", "--context", "stg", "--yes", "--timeout", "60")
    assert r.code == 5, r
    assert "reusing your lab pod" in r.err and "container setup is in CrashLoopBackOff" in r.err
    assert "check the template's command and the image" in r.err
    assert time.monotonic() - start < 30


def test_pod_deleted_while_waiting_is_named(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, sim: KubeSim
) -> None:
    cfg = write_config(tmp_path / "pending.yaml", node_selector=PENDING)  # stays Pending
    threading.Timer(1.0, lambda: sim.delete("pods", NS, POD)).start()
    start = time.monotonic()
    r = nsl(capsys, "--config", str(cfg), "create", "--context", "stg", "--yes", "--timeout", "60")
    assert r.code == 5, r
    assert f"pod {POD} was deleted while waiting for it" in r.err
    assert time.monotonic() - start < 30


def test_watch_closed_mid_wait_is_resumed(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with KubeSim(tls=True, kubelet_delay=0.6) as slow:
        slow.load(realistic_cluster())
        kc = slow.write_kubeconfig(tmp_path / "slow-kc", CONTEXTS)
        monkeypatch.setenv("KUBECONFIG", str(kc))
        stop = threading.Event()

        def close_watches() -> None:
            while not stop.wait(0.25):
                slow.faults.close_watches()

        t = threading.Thread(target=close_watches, daemon=True)
        t.start()
        try:
            r = nsl(capsys, "create", "--context", "stg", "--yes", "--json")
        finally:
            stop.set()
            t.join()
        assert r.code == 0, r
        assert json.loads(r.out)["ready"]
        watches = [
            q for q in slow.requests if q.query.get("watch") == "true" and q.path == f"/api/v1/namespaces/{NS}/pods"
        ]
        assert len(watches) >= 2  # it re-watched from the last resourceVersion


def test_server_going_away_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = KubeSim(tls=True)
    server.load(realistic_cluster())
    server.start()
    kc = server.write_kubeconfig(tmp_path / "gone-kc", CONTEXTS)
    monkeypatch.setenv("KUBECONFIG", str(kc))
    cfg = write_config(tmp_path / "pending.yaml", node_selector=PENDING)  # stays Pending: the wait goes on
    threading.Timer(1.0, server.stop).start()
    start = time.monotonic()
    # an outage is waited out until --timeout (tests/test_lab_outage.py); one that lasts is exit 4
    r = nsl(capsys, "--config", str(cfg), "create", "--context", "stg", "--yes", "--timeout", "4")
    assert r.code == 4, r
    assert "cannot reach the API server" in r.err and "did not come back within --timeout 4" in r.err
    assert time.monotonic() - start < 30


def test_ctrl_c_while_waiting(home: Path, tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "pending.yaml", node_selector=PENDING)
    env = {**os.environ, "NSIGHTLAB_CONFIG": str(cfg)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "nsightlab", "create", "--context", "stg", "--yes", "--timeout", "120"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        preexec_fn=sigint_default,
    )
    assert proc.stderr is not None
    seen = ""
    deadline = time.monotonic() + 30
    while "created pod" not in seen and time.monotonic() < deadline:
        seen += proc.stderr.readline()
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, seen + err
    assert "interrupted while waiting" in err and "Pending" in err
    assert "nsightlab cleanup --context stg" in err


# ---------------------------------------------------------------------------- status


def test_status_then_gone(capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path, sim: KubeSim) -> None:
    r = nsl(capsys, "status", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert not data["gone"] and data["lab"]["node"] == lab["node"] and data["lab"]["seconds_left"] > 14000
    assert "using the lab session: context stg" in r.err
    text = nsl(capsys, "status")
    assert "deletes itself in" in text.out and lab["node"] in text.out
    sim.remove("pods", NS, POD)
    gone = nsl(capsys, "status", "--json")
    assert gone.code == 0 and json.loads(gone.out)["gone"]
    assert not (home / "session.json").exists()


def test_no_session_no_context(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    r = nsl(capsys, "status")
    assert r.code == 3 and "--context" in r.err


# ---------------------------------------------------------------------------- shell


def test_shell_command_streams_and_passes_the_exit_code(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any]
) -> None:
    r = nsl(capsys, "shell", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert r.code == 3, r
    assert r.out == "out\n" and "err\n" in r.err


def test_shell_missing_command_is_127(capsys: pytest.CaptureFixture[str], lab: dict[str, Any]) -> None:
    r = nsl(capsys, "shell", "--", "no-such-tool-here")
    assert r.code in (6, 127), r


def test_shell_stdin_is_forwarded(lab: dict[str, Any]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "nsightlab", "shell", "-i", "--", "wc", "-c"],
        input=b"x" * 100000,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == b"100000"


def _pty_session(env: dict[str, str], rows: int, cols: int) -> tuple[subprocess.Popen[bytes], int]:
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "nsightlab", "shell"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    return proc, master


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    import select

    buf = b""
    end = time.monotonic() + timeout
    while needle not in buf and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    return buf


def test_interactive_shell_under_a_pty(lab: dict[str, Any]) -> None:
    import fcntl
    import struct
    import termios

    env = {**os.environ, "PS1": "lab$ ", "TERM": "dumb"}
    proc, master = _pty_session(env, 33, 111)
    try:
        banner = _read_until(master, b"# ", 30)  # the remote shell's prompt (root in the sandbox)
        assert b"using the lab session" in banner
        os.write(master, b"stty size\n")
        assert b"33 111" in _read_until(master, b"33 111", 30)
        # a window change reaches the remote pty over the resize channel
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        os.kill(proc.pid, signal.SIGWINCH)
        seen, deadline = b"", time.monotonic() + 30
        while b"40 120" not in seen and time.monotonic() < deadline:  # asked until the change has arrived
            os.write(master, b"stty size\n")
            seen += _read_until(master, b"40 120", 1)
        assert b"40 120" in seen, seen[-500:]
        # Ctrl-C reaches the remote process, not nsightlab
        os.write(master, b"sleep 30; echo not-$((1+1))-interrupted\n")
        time.sleep(0.5)
        os.write(master, b"\x03")
        os.write(master, b"echo back-$((40+2))\n")
        out = _read_until(master, b"back-42", 15)
        assert b"back-42" in out and b"not-2-interrupted" not in out
        os.write(master, b"exit 7\n")
        assert proc.wait(timeout=30) == 7
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)


# ---------------------------------------------------------------------------- copy


def _random_file(path: Path, size: int) -> str:
    data = os.urandom(size)
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def test_copy_in_and_out_verified(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim, tmp_path: Path
) -> None:
    src = tmp_path / "lesson1.bin"
    digest = _random_file(src, 3 * 2**20 + 17)
    r = nsl(capsys, "copy", str(src), ":/tmp/", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["verified"] and data["bytes"] == 3 * 2**20 + 17 and data["digests"] == {"lesson1.bin": digest}
    assert hashlib.sha256(sim.pod_path(NS, POD, "/tmp/lesson1.bin").read_bytes()).hexdigest() == digest
    # renamed on the way in
    assert nsl(capsys, "copy", str(src), ":/tmp/renamed.bin").code == 0
    assert sim.pod_path(NS, POD, "/tmp/renamed.bin").read_bytes() == src.read_bytes()
    # and back out, into a folder
    back = tmp_path / "back"
    back.mkdir()
    r = nsl(capsys, "copy", ":/tmp/renamed.bin", str(back))
    assert r.code == 0, r
    assert (back / "renamed.bin").read_bytes() == src.read_bytes()
    assert "sha256 verified" in r.out
    assert [p.name for p in back.iterdir()] == ["renamed.bin"]  # no staging left behind


def test_copy_folders_both_ways(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim, tmp_path: Path
) -> None:
    tree = tmp_path / "scripts"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.py").write_text("print('a')\n")
    (tree / "sub" / "b.txt").write_bytes(os.urandom(5000))
    assert nsl(capsys, "copy", str(tree), ":/workspace/").code == 0
    assert (sim.pod_path(NS, POD, "/workspace/scripts/sub/b.txt")).read_bytes() == (tree / "sub" / "b.txt").read_bytes()
    out = tmp_path / "out"
    r = nsl(capsys, "copy", ":/workspace/scripts", str(out), "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["files"] == 2
    assert (out / "sub" / "b.txt").read_bytes() == (tree / "sub" / "b.txt").read_bytes()


def test_lab_through_the_kubeconfig_loader(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A context with an exec credential plugin goes through the kubernetes client's loader
    (plain ones do not): create, shell and copy both ways work the same through it."""
    kc = sim.write_kubeconfig(tmp_path / "exec-kc", CONTEXTS, auth="exec")
    monkeypatch.setenv("KUBECONFIG", str(kc))
    assert nsl(capsys, "create", "--context", "stg", "--yes").code == 0
    r = nsl(capsys, "shell", "--", "sh", "-c", "echo from-the-pod")
    assert r.code == 0 and r.out == "from-the-pod\n", r
    src = tmp_path / "data.bin"
    digest = _random_file(src, 2**20 + 3)
    assert nsl(capsys, "copy", str(src), ":/tmp/data.bin").code == 0
    back = tmp_path / "back.bin"
    r = nsl(capsys, "copy", ":/tmp/data.bin", str(back))
    assert r.code == 0, r
    assert hashlib.sha256(back.read_bytes()).hexdigest() == digest
    assert sim.exec_log.read_text().strip()  # the plugin ran
    assert {r.user for r in sim.requests if r.path.startswith("/api/v1/namespaces")} == {"stg-user"}


def test_copy_errors_are_one_clear_line(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], tmp_path: Path
) -> None:
    missing_local = nsl(capsys, "copy", str(tmp_path / "nope.py"), ":/tmp/")
    assert missing_local.code == 2 and "does not exist" in missing_local.err
    missing_remote = nsl(capsys, "copy", ":/tmp/nope.bin", str(tmp_path))
    assert missing_remote.code == 6 and "no such file" in missing_remote.err
    f = tmp_path / "x.txt"
    f.write_text("x")
    no_dir = nsl(capsys, "copy", str(f), ":/tmp/not-a-dir/")
    assert no_dir.code == 6 and "no such directory" in no_dir.err
    no_local_dir = nsl(capsys, "copy", ":/etc/hostname", str(tmp_path / "a" / "b" / "c"))
    assert no_local_dir.code in (2, 6)
    both = nsl(capsys, "copy", "a", "b")
    assert both.code == 2 and "exactly one of SRC and DST" in both.err
    assert missing_local.err.strip().count("\n") == 0  # checked before anything is sent
    for r in (missing_local, missing_remote, no_dir, both):
        errors = [line for line in r.err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and errors[0] == r.err.strip().splitlines()[-1] and "Traceback" not in r.err


def test_a_file_changed_after_it_was_checksummed_fails_the_copy(
    capsys: pytest.CaptureFixture[str],
    lab: dict[str, Any],
    sim: KubeSim,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nsightlab.cluster import transfer

    src = tmp_path / "data.bin"
    _random_file(src, 2**20)

    class ChangedAfterHashing(transfer.Hashing):
        def __init__(self, path: Path) -> None:
            self.changed = threading.Event()
            super().__init__(path)
            self.changed.wait()  # the change lands before anything is sent

        def _run(self) -> None:
            super()._run()
            src.write_bytes(os.urandom(2**20))  # same size, other bytes
            self.changed.set()

    monkeypatch.setattr(transfer, "Hashing", ChangedAfterHashing)
    r = nsl(capsys, "copy", str(src), ":/tmp/")
    assert r.code == 6 and "copy verification failed for data.bin" in r.err, r


def test_no_space_is_one_clear_line_either_way(
    capsys: pytest.CaptureFixture[str],
    lab: dict[str, Any],
    sim: KubeSim,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import errno

    # in the pod: its filesystem fills up (the pod's side of a copy in says so and fails)
    sim.put_tool(
        NS,
        POD,
        "python3",
        '#!/bin/sh\ncat >/dev/null; echo "[Errno 28] No space left on device: /tmp/x" >&2; exit 48\n',
    )
    src = tmp_path / "x"
    _random_file(src, 2**20)
    r = nsl(capsys, "copy", str(src), ":/tmp/")
    assert r.code == 6 and r.err.strip().splitlines()[-1].startswith("error: no space left in the pod"), r
    # here: the local disk fills up mid-copy (a fault nothing real produces on demand)
    sim.put_tool(NS, POD, "python3", f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    sim.pod_path(NS, POD, "/tmp/big.bin").write_bytes(os.urandom(3 * 2**20))
    from nsightlab.cluster import podtar

    def full(fd: int, h: Any, view: memoryview) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(podtar, "_hash_write", full)
    dest = tmp_path / "dest"
    dest.mkdir()
    r = nsl(capsys, "copy", ":/tmp/big.bin", str(dest))
    monkeypatch.undo()
    assert r.code == 6 and r.err.strip().splitlines()[-1].startswith("error: no space left on this machine"), r
    assert list(dest.iterdir()) == []  # neither the file nor a staging folder


def test_dropped_socket_mid_copy_leaves_no_partial_file(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim, tmp_path: Path
) -> None:
    big = sim.pod_path(NS, POD, "/tmp/big.bin")
    big.write_bytes(os.urandom(6 * 2**20))
    dest = tmp_path / "dest"
    dest.mkdir()
    # the copy is one exec: the tar stream and, at its end, the pod's checksums
    sim.faults.drop_exec_after(2 * 2**20, nth=1, direction="out")
    r = nsl(capsys, "copy", ":/tmp/big.bin", str(dest))
    assert r.code in (4, 6), r
    assert list(dest.iterdir()) == []  # neither big.bin nor a staging folder


def test_dropped_socket_mid_copy_in_leaves_no_file_in_the_pod(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim, tmp_path: Path
) -> None:
    src = tmp_path / "big.bin"
    _random_file(src, 6 * 2**20)
    sim.faults.drop_exec_after(2 * 2**20, nth=1, direction="in")
    r = nsl(capsys, "copy", str(src), ":/tmp/big.bin")
    assert r.code in (4, 6), r
    assert r.err.strip().splitlines()[-1].startswith("error: ") and "Traceback" not in r.err
    assert not sim.pod_path(NS, POD, "/tmp/big.bin").exists()  # nothing under the final name


def test_crafted_archive_from_the_pod_is_refused(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim, tmp_path: Path
) -> None:
    sim.pod_path(NS, POD, "/tmp/run").mkdir(parents=True)
    sim.pod_path(NS, POD, "/tmp/run/ok.txt").write_text("ok")
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w") as tar:
        for name, data in (("run/ok.txt", b"ok"), ("run/../../escaped.txt", b"gotcha")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    payload = evil.getvalue().hex()
    # the pod's side of a copy out runs under python3 (tar where there is none): both lie
    emit = f"import sys; sys.stdout.buffer.write(bytes.fromhex('{payload}'))"
    sim.put_tool(NS, POD, "python3", f'#!/bin/sh\nexec "{sys.executable}" -c "{emit}"\n')
    sim.put_tool(NS, POD, "tar", f'#!/bin/sh\nexec "{sys.executable}" -c "{emit}"\n')
    dest = tmp_path / "a" / "dest"
    dest.mkdir(parents=True)
    r = nsl(capsys, "copy", ":/tmp/run", str(dest))
    assert r.code == 6, r
    assert "refusing" in r.err and "'..'" in r.err
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "a" / "escaped.txt").exists()
    assert list(dest.iterdir()) == []


# ---------------------------------------------------------------------------- cleanup


def _decoy(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "infinity"]}]},
        "status": {"phase": "Running"},
    }


def test_cleanup_never_touches_decoys(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path, sim: KubeSim
) -> None:
    sim.put(_decoy("nsight-lab-bob", {"app.kubernetes.io/managed-by": "nsightlab", "nsightlab/owner": "bob"}))
    sim.put(_decoy("nsight-lab-notes", {"nsightlab/owner": OWNER}))  # ours by owner, but not managed by nsightlab
    sim.put(_decoy("training-job", {}))
    r = nsl(capsys, "cleanup", "--all-mine", "--yes", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["deleted"] == [POD]
    assert sim.get("pods", NS, POD) is None
    for name in ("nsight-lab-bob", "nsight-lab-notes", "training-job"):
        assert sim.get("pods", NS, name) is not None, name
    assert not (home / "session.json").exists()
    deletes = [q.path for q in sim.requests if q.method == "DELETE"]
    assert deletes == [f"/api/v1/namespaces/{NS}/pods/{POD}"]


def test_cleanup_refuses_a_foreign_pod_with_our_name(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim
) -> None:
    sim.put(_decoy(POD, {}))
    r = nsl(capsys, "cleanup", "--context", "stg", "--yes", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["skipped"] == [POD]
    assert sim.get("pods", NS, POD) is not None
    assert not [q for q in sim.requests if q.method == "DELETE"]


# ---------------------------------------------------------------------------- doctor

NVIDIA_SMI = "#!/bin/sh\necho 'NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887 MiB, 570.86.15'\n"


def _standin(name: str, fixture: Path) -> str:
    return (HERE / "standins" / name).read_text().replace("@FIXTURE@", str(fixture))


@pytest.mark.slow
def test_doctor_checks_cluster_and_pod(capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim) -> None:
    sim.put_tool(NS, POD, "nvidia-smi", NVIDIA_SMI)
    sim.put_tool(
        NS, POD, "nsys", _standin("nsys", HERE / "fixtures" / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv")
    )
    sim.put_tool(
        NS,
        POD,
        "ncu",
        _standin("ncu", HERE / "fixtures" / "ncu" / "05_ncu_csv_page_details_vectorized_elementwise_rtx5090.csv"),
    )
    sim.pod_path(NS, POD, "/proc/driver/nvidia/params").write_text(
        "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n"
    )
    r = nsl(capsys, "doctor", "--json")
    data = json.loads(r.out)
    checks = {c["name"]: c for c in data["checks"]}
    assert checks["API server reachable"]["ok"] and "v1.31" in checks["API server reachable"]["detail"]
    assert checks["namespace"]["ok"] and checks["namespace"]["detail"] == f"{NS} exists"
    assert checks["may create/get pods/exec"]["ok"] and checks["may create/get/list/watch/delete pods"]["ok"]
    assert checks["nodes of g7e.8xlarge"]["ok"] and "4 node(s)" in checks["nodes of g7e.8xlarge"]["detail"]
    assert checks["pod: GPU (nvidia-smi)"]["detail"].startswith(
        "NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887 MiB"
    )
    assert checks["pod: nsys"]["ok"] and "2024.6.1" in checks["pod: nsys"]["detail"]
    assert checks["pod: ncu"]["ok"]
    # read through the exec from the pod's /proc/driver/nvidia/params (the verdict also
    # depends on CAP_SYS_ADMIN, which the sandbox cannot take away: see test_doctor_facts)
    assert "RmProfilingAdminOnly: 1" in checks["pod: GPU counters for ncu (RmProfilingAdminOnly)"]["detail"]
    assert checks["pod: PyTorch"]["ok"] is False  # torch here has no CUDA
    assert checks["pod: PyTorch"]["detail"].startswith("CUDA not available: CPU-only build 2.")
    assert r.code == 4 and not data["ok"]
    text = nsl(capsys, "doctor")
    assert "FAIL  pod: PyTorch" in text.out and "pass  pod: nsys" in text.out


def test_doctor_facts_mean_what_they_say() -> None:
    from nsightlab.k8s.doctor import parse_probe, pod_checks

    facts = parse_probe(
        "gpu=NVIDIA H200, 143771 MiB, 580.159.03\nnsys=\nncu=Version 2025.3.1.0\ntorch=2.11.0 True\n"
        "tmp_opts=rw,nosuid,nodev,noexec\ntmp_exec=no\nparanoid=4\nrm_admin_only=1\ncapsys=00000000a80425fb\n"
    )
    args = f"--context stg -n {NS}"
    checks = {c.name: c for c in pod_checks(facts, cli_args=args)}
    assert checks["pod: GPU (nvidia-smi)"].detail == "NVIDIA H200, 143771 MiB, driver 580.159.03"
    assert checks["pod: PyTorch"].ok is True and checks["pod: PyTorch"].detail == "2.11.0, CUDA available"
    assert checks["pod: nsys"].ok is False and "`nsightlab profile lesson1 --profiler torch`" in (
        checks["pod: nsys"].fix or ""
    )
    assert checks["pod: /tmp allows exec"].ok is False and "TMPDIR" in (checks["pod: /tmp allows exec"].fix or "")
    assert checks["pod: perf_event_paranoid"].ok is None and "--sample=none" in (
        checks["pod: perf_event_paranoid"].fix or ""
    )
    blocked = checks["pod: GPU counters for ncu (RmProfilingAdminOnly)"]
    assert blocked.ok is False and "profiling-enabled node" in (blocked.fix or "")
    # the fix makes the pod anew (create alone would reuse it), context and namespace written out
    assert f"`nsightlab create {args} --profiling-caps --recreate`" in (blocked.fix or "")
    with_cap = pod_checks({**facts, "capsys": "00000000a82425fb"}, cli_args=args)  # bit 21: CAP_SYS_ADMIN
    assert next(c for c in with_cap if c.name.startswith("pod: GPU counters")).ok is True
    open_node = pod_checks({**facts, "rm_admin_only": "0"}, cli_args=args)
    assert next(c for c in open_node if c.name.startswith("pod: GPU counters")).ok is True


@pytest.mark.parametrize(
    ("probe", "gpu", "torch"),
    [
        # nvidia-smi absent: it is not installed, not "found no GPU"; a CPU wheel says so
        (
            "smi=\ngpu=\ntorch=2.13.0+cpu False None\n",
            "nvidia-smi is not installed in the pod",
            "CUDA not available: CPU-only build 2.13.0+cpu",
        ),
        # nvidia-smi there but silent; a CUDA build of torch that sees no GPU
        (
            "smi=/usr/bin/nvidia-smi\ngpu=\ntorch=2.11.0+cu128 False 12.8\n",
            "nvidia-smi found no GPU",
            "CUDA not available: 2.11.0+cu128 (built for CUDA 12.8) sees no GPU",
        ),
        ("smi=\ngpu=\ntorch=\n", "nvidia-smi is not installed in the pod", "python3 cannot import torch"),
        (
            "smi=/usr/bin/nvidia-smi\ngpu=NVIDIA H200, 143771 MiB, 580.159.03\ntorch=2.11.0+cu128 True 12.8\n",
            "NVIDIA H200, 143771 MiB, driver 580.159.03",
            "2.11.0+cu128, CUDA available (built for CUDA 12.8)",
        ),
    ],
)
def test_doctor_says_plainly_what_the_pod_lacks(probe: str, gpu: str, torch: str) -> None:
    from nsightlab.k8s.doctor import parse_probe, pod_checks

    checks = {c.name: c for c in pod_checks(parse_probe(probe), cli_args="--context stg -n ml-lab")}
    good = gpu.startswith("NVIDIA")  # only the last case has a GPU and a CUDA torch
    assert (checks["pod: GPU (nvidia-smi)"].detail, checks["pod: GPU (nvidia-smi)"].ok) == (gpu, good)
    assert (checks["pod: PyTorch"].detail, checks["pod: PyTorch"].ok) == (torch, good)


def test_doctor_reports_missing_rbac(capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim) -> None:
    sim.deny("create", "pods/exec", NS)
    r = nsl(capsys, "doctor", "--context", "stg", "--json")
    checks = {c["name"]: c for c in json.loads(r.out)["checks"]}
    exec_check = checks["may create/get pods/exec"]
    assert exec_check["ok"] is False and exec_check["detail"] == f"in {NS}: denied create"
    assert exec_check["fix"].startswith(f"Ask for create on pods/exec in namespace {NS}: docs/permissions.md")
    assert checks["may create/get/list/watch/delete pods"]["ok"] is True
    # no pod up: the in-pod checks are skipped, and the note says how to start one
    assert checks["lab pod"]["ok"] is None and checks["lab pod"]["detail"].endswith(
        f"(`nsightlab create --context stg -n {NS}` starts one)"
    )
    assert r.code == 4
    # no fix sends the user back to doctor
    assert not [c for c in checks.values() if "nsightlab doctor" in (c["fix"] or "")]


# ---------------------------------------------------------------------------- lab work in the pod


@pytest.mark.slow
def test_profile_in_the_pod(capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim, home: Path) -> None:
    pytest.importorskip("torch")
    fixture = HERE / "fixtures" / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv"
    sim.put_tool(NS, POD, "nsys", _standin("nsys", fixture))
    # the pod's torch is a CPU build: measuring its CPU must be asked for
    r = nsl(capsys, "profile", "lesson1", "--device", "cpu", "--json", "--", "--scale-log2", "14", "--gemm-n", "32")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["target"] == f"pod {NS}/{POD}" and len(data["kernels"]) == 113
    assert data["device_requested"] == "cpu" and any("on purpose (--device cpu)" in n for n in data["notes"])
    assert "--device cpu: measuring the CPU in the pod on purpose, not its GPU" in r.err
    run = next((home / "runs").iterdir())
    # the report's SQLite export came back from the pod with the report, and was read here
    assert data["nsys_input"] == "sqlite" and "raw/nsightlab.sqlite" in data["files"]
    assert (run / "raw" / "nsightlab.sqlite").read_bytes()[:16] == b"SQLite format 3\x00"
    meta = json.loads((run / "meta.json").read_text())
    assert (meta["context"], meta["pod"], meta["node"], meta["instance_type"]) == (
        STG_CONTEXT,
        POD,
        lab["node"],
        "g7e.8xlarge",
    )
    assert meta["image"] == IMAGE
    assert meta["device_requested"] == "cpu" and meta["node_gpu"] == lab["gpu_product"]


@pytest.mark.slow
def test_sweep_in_the_pod(capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path) -> None:
    pytest.importorskip("torch")
    r = nsl(capsys, "sweep", "--device", "cpu", "--sizes", "12,14,16", "--iters", "3", "--warmup", "1", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert [row["log2"] for row in data["rows"]] == [12, 14, 16]
    assert "--device cpu: measuring the CPU in the pod on purpose, not its GPU" in r.err
    assert any("on purpose (--device cpu)" in n for n in data["summary"]["notes"])
    meta = json.loads((next((home / "runs").iterdir()) / "meta.json").read_text())
    assert meta["target"] == f"pod {NS}/{POD}" and meta["kind"] == "sweep"
    # what it ran on, from the run: the CPU, not the GPU the node's labels name
    assert meta["device_type"] == "cpu" and meta["device"] == data["device"]["name"] and meta["gpu"] is None
    assert meta["device_requested"] == "cpu" and meta["node_gpu"] == lab["gpu_product"]


@pytest.mark.slow
@pytest.mark.torch
def test_a_gpu_pod_whose_torch_cannot_see_the_gpu_is_exit_6(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path
) -> None:
    """The lab pod requests nvidia.com/gpu; its torch (this machine's) is a CPU build.
    Without --device cpu that is an error, not a quiet CPU run."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine's torch sees a GPU")
    expected = (
        f"error: torch in the pod cannot see the GPU: CPU-only build {torch.__version__}; use an image with CUDA "
        "torch, or --device cpu."
    )
    sweep = nsl(capsys, "sweep", "--sizes", "12", "--iters", "1", "--warmup", "0")
    assert sweep.code == 6, sweep
    assert sweep.err.strip().splitlines()[-1] == expected and sweep.out == ""
    profile = nsl(capsys, "profile", "lesson1", "--profiler", "torch", "--", "--scale-log2", "12", "--gemm-n", "16")
    assert profile.code == 6, profile
    assert profile.err.strip().splitlines()[-1] == expected
    assert not (home / "runs").is_dir() or list((home / "runs").iterdir()) == []  # no half a run left behind


MY_MODEL = """\
import torch
from torch.profiler import record_function

x = torch.ones(1 << 12)
w = torch.randn(32, 32)
for _ in range(3):
    with record_function("step"):
        x.mul_(1.0001)
        y = torch.matmul(w, w).relu()
"""


@pytest.mark.slow
@pytest.mark.torch
def test_users_script_in_a_gpu_pod_that_ran_on_the_cpu_says_so(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim, home: Path, tmp_path: Path
) -> None:
    """nvidia-smi in the pod names the GPU, the node's labels too; torch is a CPU build, so
    the ops ran on the CPU: the table, the run, `runs` and `report` all say CPU."""
    pytest.importorskip("torch")
    sim.put_tool(NS, POD, "nvidia-smi", NVIDIA_SMI)
    script = tmp_path / "my_model.py"
    script.write_text(MY_MODEL)
    r = nsl(capsys, "profile", str(script), "--profiler", "torch")
    assert r.code == 0, r
    run = next((home / "runs").iterdir())
    prof = json.loads((run / "raw" / "torchprof.json").read_text())
    cpu_name = prof["device"]["name"]
    assert prof["device_type"] == "cpu" and "described_by" not in prof["device"]  # labcommon.py went along
    heading = r.out.splitlines()[0]
    assert heading.endswith(f"on pod {NS}/{POD}: cpu ({cpu_name})"), heading
    assert "CPU ops, by total time" in r.out and "GPU kernels" not in r.out and "RTX PRO 6000" not in r.out
    # the user's range is a range, its ops are the ops, with their own time beside the total
    ops = r.out.split("CPU ops, by total time", 1)[1].split("\n\n", 1)[0]
    assert "aten::matmul" in ops and "aten::mul_" in ops and "step" not in ops
    assert "Self (" in ops
    assert "Labelled ranges (record_function)" in r.out
    ranges = r.out.split("Labelled ranges (record_function)", 1)[1].splitlines()
    assert ranges[2].split()[:2] == ["step", "3"]
    warning = [line for line in r.err.splitlines() if line.startswith("warning: ")]
    assert warning == [
        "warning: my_model.py ran only CPU ops in the pod, which requests a GPU: torch there cannot see it, or "
        "the script never moved its work to it (`.to('cuda')`); this run is recorded as a CPU run"
    ]
    # kineto's own lines stay off the terminal, and in the run's raw log
    assert "USDT:" not in r.err and "USDT:" not in r.out
    log = (run / "raw" / "profile.log").read_text()
    assert "profiler_start" in log and "profiler_stop" in log and "torchprof: " in log
    # the profiler's own trace, kept for Perfetto
    with gzip.open(run / "raw" / "trace.json.gz", "rt") as f:
        assert any(e.get("name") == "step" for e in json.load(f)["traceEvents"])
    assert f"profiler trace: {run}/raw/trace.json.gz (open it in Perfetto" in r.out
    meta = json.loads((run / "meta.json").read_text())
    assert (meta["device_type"], meta["device"], meta["gpu"]) == ("cpu", cpu_name, None)
    assert meta["node_gpu"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition" and meta["device_requested"] == "auto"
    result = json.loads((run / "result.json").read_text())
    assert (result["device_type"], result["device_name"], result["kernels_are"]) == ("cpu", cpu_name, "cpu ops")
    assert result["trace"] == "raw/trace.json.gz" and result["warnings"] == [warning[0].removeprefix("warning: ")]
    assert all(k["self_ns"] is not None and k["self_ns"] <= k["total_ns"] + 1.0 for k in result["kernels"])

    listed = json.loads(nsl(capsys, "runs", "--json").out)["runs"]
    assert [(x["device"], x["device_type"]) for x in listed] == [(f"cpu ({cpu_name})", "cpu")]
    shown = nsl(capsys, "runs", "show", "latest")
    assert f"device: cpu ({cpu_name})" in shown.out and "CPU ops, by total time" in shown.out
    assert "Perfetto" in shown.out and "raw/trace.json.gz" in shown.out
    report = nsl(capsys, "report", "--terminal")
    assert report.code == 0, report
    assert f"cpu ({cpu_name})" in report.out and "CPU ops, by total time" in report.out
    assert "GPU kernels" not in report.out and "RTX PRO 6000" not in report.out and "GPU TIME" not in report.out

    # the same figures, written the same way, in the terminal and in the report
    def matmul_row(text: str) -> list[str]:
        return next(line.split() for line in text.splitlines() if line.endswith(" aten::matmul"))

    assert matmul_row(report.out) == matmul_row(ops)


@pytest.mark.slow
def test_triton_sweep_in_the_pod_runs_in_the_interpreter_on_its_cpu(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path
) -> None:
    """--device cpu in the pod: nsightlab sets TRITON_INTERPRET=1 in the pod's environment
    for that run, and the run says it checks correctness only."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    r = nsl(
        capsys,
        "sweep",
        "--device",
        "cpu",
        "--impl",
        "triton",
        "--sizes",
        "10",
        "--iters",
        "1",
        "--warmup",
        "0",
        "--json",
    )
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["impl"] == "triton" and data["interpreted"] is True
    assert data["script_argv"][:3] == ["env", "TRITON_INTERPRET=1", "python3"]
    assert (
        data["record"]["rows"][0]["max_abs_error"] == 0.0
        and data["headline"] == "triton scale: interpreted: correctness only"
    )
    assert f"no GPU for Triton on pod {NS}/{POD}" in r.err


def test_lab_commands_without_a_ready_pod(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    r = nsl(capsys, "shell", "--context", "stg", "--", "true")
    assert r.code == 5 and "no lab pod" in r.err and "nsightlab create" in r.err


@pytest.fixture(autouse=True)
def _no_leftover_processes() -> Iterator[None]:
    yield


def test_confirmation_on_a_terminal(home: Path, sim: KubeSim) -> None:
    """On a TTY, create names context, server and namespace and asks first; 'n' changes nothing."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nsightlab", "create", "--context", "stg"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    try:
        prompt = _read_until(master, b"Proceed?", 30)
        assert f"context stg ({STG_CONTEXT}), server {sim.url}, namespace {NS}".encode() in prompt
        os.write(master, b"n\n")
        assert proc.wait(timeout=30) == 130
        rest = _read_until(master, b"nothing was changed", 5)
        assert b"cancelled; nothing was changed" in rest
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert sim.requests == []  # not even a read before the answer
    assert sim.get("pods", NS, POD) is None


def _take_the_free_g7e_gpus(sim: KubeSim) -> None:
    for node in ("ip-10-0-19-150.ec2.internal", "ip-10-0-83-47.ec2.internal"):  # the two free g7e GPUs
        pod = _decoy(f"squatter-{node[:12]}", {})
        pod["spec"]["nodeName"] = node
        pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
        sim.put(pod)


def test_create_warns_when_no_gpu_is_free(capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim) -> None:
    _take_the_free_g7e_gpus(sim)
    r = nsl(capsys, "create", "--context", "stg", "--yes", "--timeout", "1")
    assert "warning: 0 GPUs of g7e.8xlarge are free right now (4 nodes, 4 GPUs, all in use)" in r.err
    assert r.code == 5 and "Insufficient nvidia.com/gpu" in r.err  # warned, not refused: it tried
