"""Exec over websockets into kubesim's pod sandboxes, through the official client."""

from __future__ import annotations

import hashlib
import io
import json
import os
import ssl
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import websocket
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream
from kubesim import KubeSim, realistic_cluster

NS, POD = "ml-lab", "gpu-smoke-test"


@pytest.fixture
def sim() -> Iterator[KubeSim]:
    with KubeSim(tls=True, kubelet_delay=0.02) as server:
        server.load(realistic_cluster())
        yield server


def open_exec(
    sim: KubeSim,
    command: list[str],
    *,
    pod: str = POD,
    ns: str = NS,
    stdin: bool = False,
    tty: bool = False,
    container: str | None = None,
    binary: bool = False,
) -> Any:
    """An open exec (``_preload_content=False``); each with its own ApiClient, as the
    client's stream() mutates the one it is given."""
    api = client.CoreV1Api(sim.api_client())
    kwargs: dict[str, Any] = {}
    if container:
        kwargs["container"] = container
    return stream(
        api.connect_get_namespaced_pod_exec,
        pod,
        ns,
        command=command,
        stdin=stdin,
        stdout=True,
        stderr=not tty,
        tty=tty,
        _preload_content=False,
        binary=binary,
        **kwargs,
    )


def run(sim: KubeSim, command: list[str], **kwargs: Any) -> tuple[str, str, int]:
    resp = open_exec(sim, command, **kwargs)
    resp.run_forever(timeout=30)
    return resp.read_stdout(), resp.read_stderr(), resp.returncode


def test_exit_code_and_separate_streams(sim: KubeSim) -> None:
    resp = open_exec(sim, ["sh", "-c", "echo out; echo err >&2; exit 3"])
    resp.run_forever(timeout=30)
    assert resp.read_stdout() == "out\n" and resp.read_stderr() == "err\n"
    status = json.loads(resp.peek_channel(3))
    assert status == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: error executing command "
        "[sh -c echo out; echo err >&2; exit 3], exit code 3",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
    }
    assert resp.returncode == 3
    assert run(sim, ["true"]) == ("", "", 0)
    last = sim.requests[-1]
    assert last.path == f"/api/v1/namespaces/{NS}/pods/{POD}/exec" and last.status == 101
    assert last.headers["Sec-WebSocket-Protocol"].startswith("v5.channel.k8s.io")


def test_success_status_message(sim: KubeSim) -> None:
    resp = open_exec(sim, ["echo", "hi"])
    resp.run_forever(timeout=30)
    assert json.loads(resp.peek_channel(3)) == {"metadata": {}, "status": "Success"}


def test_stdin_text_and_binary_frames_then_close_in_v5(sim: KubeSim) -> None:
    resp = open_exec(sim, ["sh", "-c", "cat; echo done"], stdin=True, binary=True)
    assert resp.subprotocol == "v5.channel.k8s.io"
    resp.write_stdin("text frame\n")
    resp.write_stdin(b"\x00\xffbinary frame\n")
    resp.close_channel(0)  # end of stdin: cat ends, then the shell goes on
    resp.run_forever(timeout=30)
    assert resp.read_stdout() == b"text frame\n\x00\xffbinary frame\ndone\n"
    assert resp.returncode == 0


def test_v4_through_the_client(sim: KubeSim) -> None:
    api = client.CoreV1Api(sim.api_client())
    resp = stream(
        api.connect_get_namespaced_pod_exec,
        POD,
        NS,
        command=["sh", "-c", "echo v4; exit 4"],
        stdout=True,
        stderr=True,
        stdin=False,
        tty=False,
        _preload_content=False,
        _headers={"sec-websocket-protocol": "v4.channel.k8s.io"},
    )
    resp.run_forever(timeout=30)
    assert resp.subprotocol == "v4.channel.k8s.io"
    assert (resp.read_stdout(), resp.returncode) == ("v4\n", 4)


def _raw_exec(sim: KubeSim, command: list[str], protocol: str, stdin: bool = False) -> websocket.WebSocket:
    query = urlencode(
        [("command", c) for c in command]
        + [("stdout", "true"), ("stderr", "true"), ("stdin", "true" if stdin else "false")]
    )
    url = sim.url.replace("https://", "wss://") + f"/api/v1/namespaces/{NS}/pods/{POD}/exec?{query}"
    ws = websocket.WebSocket(sslopt={"cert_reqs": ssl.CERT_REQUIRED, "ca_certs": sim.ca_file})
    ws.connect(url, header=[f"Authorization: Bearer {sim.token}"], subprotocols=[protocol])  # type: ignore[no-untyped-call]
    return ws


def _frames(ws: websocket.WebSocket) -> list[tuple[int, bytes]]:
    frames = []
    while True:
        try:
            opcode, data = ws.recv_data()
        except websocket.WebSocketConnectionClosedException:
            break
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            break
        frames.append((data[0], data[1:]))
    return frames


def test_v4_protocol_and_text_frames(sim: KubeSim) -> None:
    ws = _raw_exec(sim, ["sh", "-c", "head -c 5; exit 7"], "v4.channel.k8s.io", stdin=True)
    assert ws.subprotocol == "v4.channel.k8s.io"
    ws.send("\x00hello", opcode=websocket.ABNF.OPCODE_TEXT)
    frames = _frames(ws)
    out = b"".join(d for c, d in frames if c == 1)
    status = [json.loads(d) for c, d in frames if c == 3]
    assert out == b"hello"
    assert status[0]["details"]["causes"][0] == {"reason": "ExitCode", "message": "7"}
    assert all(c in (1, 2, 3) for c, _ in frames)


def test_old_channel_protocol_reports_errors_as_text(sim: KubeSim) -> None:
    ws = _raw_exec(sim, ["sh", "-c", "exit 2"], "channel.k8s.io")
    assert ws.subprotocol == "channel.k8s.io"
    frames = _frames(ws)
    assert [(c, d.decode()) for c, d in frames] == [(3, "command terminated with non-zero exit code: exit code 2")]


def test_tty_resize_reaches_stty(sim: KubeSim) -> None:
    resp = open_exec(sim, ["sh", "-c", "read go; stty size"], stdin=True, tty=True)
    resp.write_channel(4, json.dumps({"Width": 123, "Height": 45}))
    resp.write_stdin("go\r")
    resp.run_forever(timeout=30)
    out = resp.read_stdout()
    assert out.splitlines()[-1].strip() == "45 123"
    assert resp.returncode == 0


def test_ctrl_c_in_tty_interrupts_the_command(sim: KubeSim) -> None:
    resp = open_exec(sim, ["sh", "-c", "echo ready; exec sleep 30"], stdin=True, tty=True)
    out = ""
    deadline = time.monotonic() + 20
    while "ready" not in out and time.monotonic() < deadline:
        resp.update(timeout=1)
        out += resp.read_stdout(timeout=0) or ""
    resp.write_stdin("\x03")
    resp.run_forever(timeout=30)
    assert resp.returncode == 130  # 128 + SIGINT


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def test_closing_the_socket_kills_the_process_group(sim: KubeSim) -> None:
    resp = open_exec(sim, ["sh", "-c", "sleep 60 & echo $! > /tmp/child; echo started; wait"])
    pid_file = sim.pod_path(NS, POD, "/tmp/child")
    sim.wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", what="the child pid")
    child = int(pid_file.read_text())
    assert _alive(child)
    resp.close()
    sim.wait_until(lambda: not _alive(child), what="the child to be killed")


def test_sandbox_paths_environment_and_tools(sim: KubeSim) -> None:
    box = sim.sandbox(NS, POD)
    out, _, code = run(sim, ["sh", "-c", "echo x > /tmp/a.txt; echo --out=/workspace/r.json; pwd; echo $HOME $TMPDIR"])
    assert code == 0 and (box / "tmp" / "a.txt").read_text() == "x\n"
    lines = out.splitlines()
    assert lines[0] == f"--out={box}/workspace/r.json"
    assert lines[1] == str(box) and lines[2] == f"{box}/root {box}/tmp"
    out, _, _ = run(sim, ["python3", "-c", "import sys; print(sys.executable)"])
    assert out.strip() == sys.executable
    sim.put_tool(NS, POD, "nvidia-smi", "#!/bin/sh\necho 'NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887 MiB'\n")
    assert run(sim, ["nvidia-smi"])[0].startswith("NVIDIA RTX PRO 6000")
    (box / "proc" / "driver" / "nvidia" / "params").write_text("RmProfilingAdminOnly: 1\n")
    assert run(sim, ["cat", "/proc/driver/nvidia/params"])[0] == "RmProfilingAdminOnly: 1\n"
    assert run(sim, ["ls", "/usr/bin/env"])[0] == "/usr/bin/env\n"  # not a sandbox root


def test_missing_command_is_an_internal_error(sim: KubeSim) -> None:
    resp = open_exec(sim, ["nsys", "--version"])
    resp.run_forever(timeout=30)
    status = json.loads(resp.peek_channel(3))
    assert status["status"] == "Failure" and status["reason"] == "InternalError" and status["code"] == 500
    assert 'exec: "nsys": executable file not found in $PATH' in status["message"]
    assert "causes" in status["details"] and "reason" not in status["details"]["causes"][0]


def _handshake_error(sim: KubeSim, pod: str, ns: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as exc:
        open_exec(sim, ["true"], pod=pod, ns=ns, **kwargs)
    reason = str(exc.value.reason)
    code = int(reason.split("Handshake status ")[1].split()[0])
    text = reason.rsplit("-+-+- ", 1)[1].strip()
    body = json.loads(text[text.index("{") : text.rindex("}") + 1])
    return code, body


def test_handshake_errors(sim: KubeSim) -> None:
    assert _handshake_error(sim, "nope", NS) == (
        404,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": 'pods "nope" not found',
            "reason": "NotFound",
            "code": 404,
            "details": {"name": "nope", "kind": "pods"},
        },
    )
    code, body = _handshake_error(sim, "rerank-v2-s1-6b8c9d7f4-n5j2r", "serving", container="model-server")
    assert (code, body["message"]) == (400, "pod rerank-v2-s1-6b8c9d7f4-n5j2r does not have a host assigned")
    code, body = _handshake_error(sim, "model-warmup-29140515-8xk2d", "serving")
    assert (code, body["message"]) == (
        400,
        "cannot exec into a container in a completed pod; current phase is Succeeded",
    )
    code, body = _handshake_error(sim, "llmqu-v1-s2-7d9f8c6b5-x2x9q", "serving", container="fetch-model")
    assert (code, body["message"]) == (400, 'container not found ("fetch-model")')
    code, body = _handshake_error(sim, "llmqu-v1-s2-7d9f8c6b5-x2x9q", "serving", container="nope")
    assert (code, body["message"]) == (400, "container nope is not valid for pod llmqu-v1-s2-7d9f8c6b5-x2x9q")
    sim.deny("create", "pods/exec", namespace=NS)
    code, body = _handshake_error(sim, POD, NS)
    assert code == 403 and body["message"] == (
        f'pods "{POD}" is forbidden: User "sim-user" cannot create resource "pods/exec" in API group "" '
        f'in the namespace "{NS}"'
    )
    # Exec into the sidecar of a serving pod works.
    out, _, code = run(
        sim, ["echo", "in-sidecar"], pod="llmqu-v1-s2-7d9f8c6b5-x2x9q", ns="serving", container="model-runtime"
    )
    assert (out, code) == ("in-sidecar\n", 0)


def _read_all_binary(resp: Any) -> tuple[bytes, bool]:
    """Read stdout frames straight from the socket until it ends; True when a status came.

    (WSClient.update() joins queued frames with ``+=``, quadratic for big outputs; reading
    frames from ``resp.sock`` is what a copy tool should do.)
    """
    chunks: list[bytes] = []
    status = False
    while True:
        try:
            opcode, frame = resp.sock.recv_data_frame(True)
        except (websocket.WebSocketConnectionClosedException, ConnectionError, ssl.SSLError):
            break
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            break
        data = bytes(frame.data)
        if data[:1] == b"\x01":
            chunks.append(data[1:])
        elif data[:1] == b"\x03":
            status = True
            resp._channels[3] = data[1:].decode()
    resp._connected = False
    return b"".join(chunks), status


def _copy_in(sim: KubeSim, payload: Iterator[bytes], command: list[str]) -> Any:
    resp = open_exec(sim, command, stdin=True, binary=True)
    for chunk in payload:
        resp.write_stdin(chunk)
        resp.update(timeout=0)
    resp.close_channel(0)
    resp.run_forever(timeout=120)
    return resp


def _tar_of(name: str, size: int, block: bytes) -> tuple[bytes, str]:
    """A tar stream of one file of ``size`` bytes repeating ``block``, and its sha256."""
    data = (block * (size // len(block) + 1))[:size]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = size
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue(), hashlib.sha256(data).hexdigest()


def _chunks(data: bytes, size: int = 1 << 20) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


def test_large_binary_transfer_through_tar(sim: KubeSim) -> None:
    # 48 MiB: dozens of frames each way, through the backpressure of both directions
    archive, digest = _tar_of("big.bin", 48 << 20, os.urandom(1 << 20))
    resp = _copy_in(sim, _chunks(archive), ["tar", "xf", "-", "-C", "/tmp"])
    assert resp.returncode == 0
    out, _, _ = run(sim, ["sha256sum", "/tmp/big.bin"])
    assert out.split()[0] == digest
    resp = open_exec(sim, ["tar", "cf", "-", "/tmp/big.bin"], binary=True)
    data, has_status = _read_all_binary(resp)
    assert has_status and resp.returncode == 0
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = tar.getmember("tmp/big.bin")  # named as in a pod, not by its sandbox path
        extracted = tar.extractfile(member)
        assert extracted is not None
        assert hashlib.sha256(extracted.read()).hexdigest() == digest


def test_socket_drops_mid_copy_out(sim: KubeSim) -> None:
    box = sim.sandbox(NS, POD)
    (box / "tmp" / "big.bin").write_bytes(os.urandom(4 << 20))
    sim.faults.drop_exec_after(1 << 20)
    resp = open_exec(sim, ["cat", "/tmp/big.bin"], binary=True)
    data, has_status = _read_all_binary(resp)
    assert not has_status and len(data) <= 1 << 20
    # The next exec is not affected.
    resp = open_exec(sim, ["cat", "/tmp/big.bin"], binary=True)
    data, has_status = _read_all_binary(resp)
    assert has_status and len(data) == 4 << 20


def test_socket_drops_mid_copy_in(sim: KubeSim) -> None:
    sim.faults.drop_exec_after(2 << 20, direction="in")
    resp = open_exec(sim, ["sh", "-c", "cat > /tmp/upload.bin"], stdin=True, binary=True)
    with pytest.raises(
        (websocket.WebSocketConnectionClosedException, BrokenPipeError, ConnectionResetError, ssl.SSLError)
    ):
        for chunk in _chunks(os.urandom(16 << 20), 256 << 10):
            resp.write_stdin(chunk)
            resp.update(timeout=0.01)
            if not resp.is_open():
                raise websocket.WebSocketConnectionClosedException("closed")
    uploaded = sim.pod_path(NS, POD, "/tmp/upload.bin")
    assert uploaded.stat().st_size <= 2 << 20


def test_drop_exec_closes_open_sessions(sim: KubeSim) -> None:
    resp = open_exec(sim, ["sh", "-c", "echo up; sleep 30"])
    sim.wait_until(lambda: len(sim.exec_server.sessions) == 1, what="the session")
    assert sim.faults.drop_exec() == 1
    _, has_status = _read_all_binary(resp)
    assert not has_status


def test_a_crafted_tar_can_stand_in_for_the_pods_tar(sim: KubeSim) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("../../escape.txt")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"owned"))
    crafted = buf.getvalue()
    sim.put_tool(
        NS,
        POD,
        "tar",
        f'#!/bin/sh\nexec {sys.executable} -c "import sys; '
        f"sys.stdout.buffer.write(bytes.fromhex('{crafted.hex()}'))\"\n",
    )
    resp = open_exec(sim, ["tar", "cf", "-", "/tmp/lesson1.py"], binary=True)
    data, _ = _read_all_binary(resp)
    assert data == crafted
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert tar.getnames() == ["../../escape.txt"]


def test_deleting_the_pod_removes_its_sandbox_and_stops_execs(sim: KubeSim) -> None:
    box = sim.sandbox(NS, POD)
    resp = open_exec(sim, ["sh", "-c", "echo $$ > /tmp/pid; sleep 60"])
    pid_file = box / "tmp" / "pid"
    sim.wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", what="the pid")
    pid = int(pid_file.read_text())
    client.CoreV1Api(sim.api_client()).delete_namespaced_pod(POD, NS)
    sim.wait_for("pods", NS, POD, lambda p: p is None)
    sim.wait_until(lambda: not box.exists(), what="the sandbox to go")
    sim.wait_until(lambda: not _alive(pid), what="the command to stop")
    resp.run_forever(timeout=30)
    assert not resp.is_open()
