"""Broken answers from kubesim (``sim.faults``), as real clients see them: kubectl and
``http.client`` on loopback."""

from __future__ import annotations

import http.client
import json
import shutil
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from kubesim import KubeSim, kubectl, realistic_cluster

F = TypeVar("F", bound=Callable[..., None])


def needs_kubectl(test: F) -> F:
    """The real kubectl judges this test (marked ``kubectl``; skipped without it)."""
    skip = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
    return cast(F, pytest.mark.kubectl(skip(test)))


NODES = "get /api/v1/nodes"
CTX = "c"


@pytest.fixture
def sim() -> Iterator[KubeSim]:
    with KubeSim(tls=True, scheduler=False) as server:
        server.load(realistic_cluster())
        yield server


@pytest.fixture
def plain_sim() -> Iterator[KubeSim]:
    """Plain HTTP: Python's TLS layer reports a reset as a clean end of stream."""
    with KubeSim(scheduler=False) as server:
        server.load(realistic_cluster())
        yield server


@pytest.fixture
def cfg(sim: KubeSim, tmp_path: Path) -> Path:
    return sim.write_kubeconfig(tmp_path / "kubeconfig", {CTX: {"namespace": "serving"}})


def warm_discovery(cfg: Path) -> None:
    """Fill kubectl's discovery cache, so that a short --request-timeout covers only the
    request under test (on a busy machine discovery alone can take long)."""
    assert kubectl(cfg, CTX, "api-resources", "-o", "name").returncode == 0


def get_nodes(cfg: Path, *args: str) -> tuple[int, str, str]:
    result = kubectl(cfg, CTX, "get", "nodes", "--no-headers", *args)
    return result.returncode, str(result.stdout), str(result.stderr).strip()


def connect(sim: KubeSim, timeout: float = 5) -> http.client.HTTPConnection:
    if sim.tls:
        ctx = ssl.create_default_context(cafile=sim.ca_file)
        return http.client.HTTPSConnection("127.0.0.1", sim.port, context=ctx, timeout=timeout)
    return http.client.HTTPConnection("127.0.0.1", sim.port, timeout=timeout)


def fetch(sim: KubeSim, path: str = "/api/v1/nodes", timeout: float = 5) -> tuple[int, dict[str, str], bytes]:
    conn = connect(sim, timeout)
    try:
        conn.request("GET", path, headers={"Authorization": "Bearer sim-token"})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def statuses(sim: KubeSim, path: str = "/api/v1/nodes") -> list[int | None]:
    return [r.status for r in sim.requests if r.path == path]


# ---- answers that are not the API's -----------------------------------------------------------------


@needs_kubectl
def test_an_html_login_page(sim: KubeSim, cfg: Path) -> None:
    sim.faults.html_page(NODES)
    assert get_nodes(cfg) == (1, "", "serializer for text/html; charset=utf-8 doesn't exist")
    status, headers, body = fetch(sim)  # the fault was for one request: normal again
    assert status == 200 and headers["Content-Type"] == "application/json"
    sim.faults.html_page(NODES)
    status, headers, body = fetch(sim)
    assert (status, headers["Content-Type"]) == (200, "text/html; charset=utf-8")
    assert body.startswith(b"<!DOCTYPE html>") and b'<input type="password"' in body
    assert statuses(sim) == [200, 200, 200]


@needs_kubectl
def test_truncated_json(sim: KubeSim, cfg: Path) -> None:
    sim.faults.truncated_json(NODES)
    assert get_nodes(cfg) == (1, "", "unexpected end of JSON input")
    sim.faults.truncated_json(NODES)
    status, headers, body = fetch(sim)
    whole = fetch(sim)[2]
    # The real answer, cut mid-object, with a Content-Length that matches what is sent.
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert int(headers["Content-Length"]) == len(body) == len(whole) // 2 and whole.startswith(body)
    with pytest.raises(json.JSONDecodeError):
        json.loads(body)


@needs_kubectl
def test_a_chunked_answer_that_stops(sim: KubeSim, cfg: Path) -> None:
    sim.faults.truncated_json(NODES, chunked=True)
    code, _, err = get_nodes(cfg)
    assert code == 1 and err.endswith(
        "unexpected error when reading response body. Please retry. Original error: unexpected EOF"
    )
    sim.faults.truncated_json(NODES, chunked=True)
    with pytest.raises(http.client.IncompleteRead) as exc:
        fetch(sim)
    assert exc.value.partial.startswith(b'{"kind":"NodeList"')
    assert statuses(sim) == [200, 200]  # the status line went out; the body did not finish


@needs_kubectl
def test_server_errors_with_and_without_a_status_body(sim: KubeSim, cfg: Path) -> None:
    sim.faults.status_error(NODES)
    assert (
        get_nodes(cfg)[2] == "Error from server (InternalError): Internal error occurred: etcdserver: request timed out"
    )
    sim.faults.plain_error(NODES, code=502)
    assert get_nodes(cfg)[2] == (
        'Error from server (InternalError): an error on the server ("upstream connect error or disconnect/reset '
        'before headers. reset reason: connection failure") has prevented the request from succeeding (get nodes)'
    )
    sim.faults.plain_error(NODES, code=503)
    assert get_nodes(cfg)[2] == (
        "Error from server (ServiceUnavailable): the server is currently unable to handle the request (get nodes)"
    )
    sim.faults.plain_error(NODES, code=503)
    status, headers, body = fetch(sim)
    assert (status, headers["Content-Type"], body) == (503, "text/plain", b"no healthy upstream")
    sim.faults.status_error(NODES, code=500, message="Internal error occurred: boom")
    status, headers, body = fetch(sim)
    assert (status, json.loads(body)) == (
        500,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Internal error occurred: boom",
            "reason": "InternalError",
            "code": 500,
            "details": {"causes": [{"message": "boom"}]},
        },
    )
    assert statuses(sim) == [500, 502, 503, 503, 500]


@needs_kubectl
def test_too_many_requests_then_normal_answers(sim: KubeSim, cfg: Path) -> None:
    sim.faults.too_many_requests(NODES, times=1, retry_after=1)
    code, out, err = get_nodes(cfg)  # kubectl waits Retry-After and tries again
    assert code == 0 and len(out.splitlines()) == 10, err
    assert statuses(sim) == [429, 200]
    sim.faults.too_many_requests(NODES, times=2, retry_after=3)
    status, headers, body = fetch(sim)
    assert (status, headers["Retry-After"], json.loads(body)["reason"]) == (429, "3", "TooManyRequests")
    assert json.loads(body)["details"] == {"retryAfterSeconds": 3}
    assert [fetch(sim)[0] for _ in range(2)] == [429, 200]


# ---- connections that break ------------------------------------------------------------------------


def test_reset_and_closed_connections(plain_sim: KubeSim) -> None:
    sim = plain_sim
    sim.faults.reset_connection(NODES)
    with pytest.raises(ConnectionResetError) as reset:
        fetch(sim)
    assert not isinstance(reset.value, http.client.RemoteDisconnected)  # a real RST, not an EOF
    sim.faults.reset_connection(NODES, rst=False)
    with pytest.raises(http.client.RemoteDisconnected):
        fetch(sim)
    assert fetch(sim)[0] == 200
    assert statuses(sim) == [None, None, 200]


@needs_kubectl
def test_kubectl_sees_the_reset_and_retries(sim: KubeSim, cfg: Path) -> None:
    warm_discovery(cfg)
    sim.faults.reset_connection(NODES, times=None)
    code, _, err = get_nodes(cfg, "--request-timeout=1s")
    # It would retry after a second; its deadline comes first and it names the reset.
    assert code == 1 and err.endswith("read: connection reset by peer"), err
    assert statuses(sim) and set(statuses(sim)) == {None}  # Go's transport may retry once itself


def test_a_stalled_request_times_out_then_is_answered(plain_sim: KubeSim) -> None:
    sim = plain_sim
    sim.faults.stall(NODES)
    with pytest.raises(TimeoutError):
        fetch(sim, timeout=0.3)
    sim.faults.stall(NODES, seconds=0.2)
    assert fetch(sim, timeout=5)[0] == 200  # slow, then the usual answer
    assert fetch(sim, timeout=5)[0] == 200  # each stall was for one request


def test_release_and_stop_end_stalls(sim: KubeSim) -> None:
    sim.faults.stall(NODES, times=None)
    results: list[Any] = []

    def client() -> None:
        try:
            results.append(fetch(sim, timeout=30)[0])
        except Exception as e:
            results.append(e)

    first = threading.Thread(target=client)
    first.start()
    sim.wait_until(lambda: sim.faults.stalled == 1, what="a stalled request")
    assert sim.faults.release_stalls() == 1
    first.join(10)
    assert results == [200]
    second = threading.Thread(target=client)
    second.start()
    sim.wait_until(lambda: sim.faults.stalled == 1, what="a stalled request")
    sim.stop()  # drops the stalled connection instead of waiting for it
    second.join(10)
    assert not second.is_alive() and isinstance(results[1], http.client.RemoteDisconnected)
    sim.start()
    sim.faults.clear()
    assert fetch(sim)[0] == 200


@needs_kubectl
def test_kubectl_request_timeout_on_a_stall(sim: KubeSim, cfg: Path) -> None:
    warm_discovery(cfg)
    sim.faults.stall(NODES, times=None)
    code, _, err = get_nodes(cfg, "--request-timeout=1s")
    # kubectl sets both a context deadline and an HTTP client timeout: the words depend on
    # which fires first ("net/http: request canceled (Client.Timeout exceeded while awaiting
    # headers)", "context deadline exceeded", or both).
    assert code == 1 and err.startswith("Unable to connect to the server: ") and "exceeded" in err, err
    assert statuses(sim) == [None]


# ---- matching ------------------------------------------------------------------------------------------


def test_faults_match_patterns_and_count_from_now(sim: KubeSim) -> None:
    assert fetch(sim)[0] == 200
    # Earlier requests do not use up the count; other paths and methods are untouched.
    sim.faults.plain_error(NODES, code=503, times=2)
    sim.faults.status_error("get /api/v1/namespaces/*/pods", code=500, times=None)
    assert fetch(sim, "/api/v1/namespaces")[0] == 200
    assert [fetch(sim)[0] for _ in range(3)] == [503, 503, 200]
    assert fetch(sim, "/api/v1/namespaces/serving/pods")[0] == 500
    assert fetch(sim, "/api/v1/namespaces/ml-lab/pods")[0] == 500
    sim.clear_requests()  # the counts survive clearing the record
    assert fetch(sim)[0] == 200
    sim.faults.clear()
    assert fetch(sim, "/api/v1/namespaces/serving/pods")[0] == 200
    assert [(r.path, r.status) for r in sim.requests] == [
        ("/api/v1/nodes", 200),
        ("/api/v1/namespaces/serving/pods", 200),
    ]
    with pytest.raises(ValueError):
        sim.faults.html_page(NODES, times=0)
