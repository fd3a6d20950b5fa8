"""Broken answers from the API server, or from whatever stands in front of it (an SSO
proxy's login page, a load balancer's 502, JSON cut off, a reset, silence), end as one
line naming the server and exit 4, through REST reads, paged lists, watches and the exec
handshake alike, on both connection paths; a 429 is waited out as it asks; the request
timeout is `--request-timeout`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kmock
import pytest
from clirun import Result, run_cli
from conftest import CONTEXTS, STG_CONTEXT
from kubesim import KubeSim
from labenv import PENDING

NODE = "ip-10-0-19-150.ec2.internal"
NS = "ml-lab"
OWNER = "ana"
POD = f"nsight-lab-{OWNER}"


def nsl(capsys: pytest.CaptureFixture[str], *args: str, timeout: str = "1s") -> Result:
    return run_cli(capsys, "--request-timeout", timeout, *args)


def one_error(r: Result) -> str:
    errors = [line for line in r.err.splitlines() if line.startswith("error:")]
    lines = r.err.strip().splitlines()
    assert len(errors) == 1 and errors[0] == lines[-1], r
    assert "Traceback" not in r.err and "This is a bug" not in r.err, r
    return errors[0]


@pytest.fixture
def env(sim: KubeSim, kubeconfig: Path, nsl_home: Path, monkeypatch: pytest.MonkeyPatch) -> KubeSim:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    return sim


Fault = Callable[[KubeSim], None]
FAULTS: dict[str, tuple[Fault, list[str]]] = {
    "html login page": (
        lambda s: s.faults.html_page(times=None),
        [
            "answered with an HTML page (text/html, titled 'Sign in - Corporate SSO'), not JSON: a proxy or a "
            "login page?"
        ],
    ),
    "truncated json": (lambda s: s.faults.truncated_json(times=None), ["sent JSON that is cut off or malformed"]),
    "chunked answer cut": (
        lambda s: s.faults.truncated_json(times=None, chunked=True),
        ["dropped the connection without a whole answer"],
    ),
    "500 status": (
        lambda s: s.faults.status_error(times=None),
        ["answered 500 InternalError", "etcdserver: request timed out"],
    ),
    "502 from a load balancer": (
        lambda s: s.faults.plain_error(times=None, code=502),
        ["answered 502", "upstream connect error"],
    ),
    "503 from a load balancer": (
        lambda s: s.faults.plain_error(times=None, code=503),
        ["answered 503", "no healthy upstream"],
    ),
    # (over TLS, Python reports a reset before any answer as the connection closing)
    "connection reset": (
        lambda s: s.faults.reset_connection(times=None),
        ["dropped the connection without a whole answer"],
    ),
    "connection closed": (
        lambda s: s.faults.reset_connection(times=None, rst=False),
        ["dropped the connection without a whole answer"],
    ),
    "429 past the timeout": (
        lambda s: s.faults.too_many_requests(times=None, retry_after=30),
        ["is too busy to answer (429 TooManyRequests", "it asks to wait 30 s more, past the request timeout (1 s)"],
    ),
}


# every fault on a plain read; on paged lists (pages are scanned before they are decoded,
# two lists at once) the ones whose body is read there
CASES = [(f, ["explore", "node", NODE]) for f in FAULTS] + [
    (f, ["explore", "nodes"])
    for f in ("html login page", "truncated json", "chunked answer cut", "connection reset", "500 status")
]


@pytest.mark.parametrize(("fault", "command"), CASES, ids=[f"{' '.join(c[:2])}: {f}" for f, c in CASES])
def test_a_broken_answer_is_one_line_and_exit_4(
    capsys: pytest.CaptureFixture[str], env: KubeSim, fault: str, command: list[str]
) -> None:
    make, words = FAULTS[fault]
    make(env)
    r = nsl(capsys, *command, "--context", STG_CONTEXT)
    assert r.code == 4, r
    line = one_error(r)
    assert f"the API server {env.url} " in line, line
    for w in words:
        assert w in line, line
    assert r.out == ""


@pytest.mark.parametrize("fault", ["html login page", "connection reset", "500 status"])
def test_the_loader_path_says_the_same(
    capsys: pytest.CaptureFixture[str], env: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """A context with an exec credential plugin goes through the kubernetes client's loader."""
    monkeypatch.setenv("KUBECONFIG", str(env.write_kubeconfig(tmp_path / "exec-kc", CONTEXTS, auth="exec")))
    make, words = FAULTS[fault]
    make(env)
    r = nsl(capsys, "explore", "node", NODE, "--context", STG_CONTEXT)
    assert r.code == 4, r
    line = one_error(r)
    assert all(w in line for w in words), line
    assert env.exec_log.read_text().strip()  # it did go through the plugin


def test_a_server_that_stops_answering_times_out_at_the_request_timeout(
    capsys: pytest.CaptureFixture[str], env: KubeSim
) -> None:
    env.faults.stall(times=None)
    r = nsl(capsys, "explore", "node", NODE, "--context", STG_CONTEXT)
    assert r.code == 4, r
    line = one_error(r)
    assert (
        f"the API server {env.url} did not answer within 1 s (--request-timeout) while trying to get node {NODE}"
        in line
    ), line
    assert "--request-timeout 2m" in line


def test_429_is_waited_out_as_it_asks(capsys: pytest.CaptureFixture[str], env: KubeSim) -> None:
    env.faults.too_many_requests(f"get /api/v1/nodes/{NODE}", times=1, retry_after=1)
    r = nsl(capsys, "explore", "node", NODE, "--context", STG_CONTEXT, "--json", timeout="10s")
    assert r.code == 0, r
    assert json.loads(r.out)["name"] == NODE
    tries = [q for q in env.requests if q.path == f"/api/v1/nodes/{NODE}"]
    assert [q.status for q in tries] == [429, 200]
    assert tries[1].time - tries[0].time >= 0.9  # it waited the second it was asked to


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("1s", 1.0), ("2m", 120.0), ("1m30s", 90.0), ("500ms", 0.5), ("45", 45.0), ("0", None), ("1.5h", 5400.0)],
)
def test_request_timeout_values(value: str, seconds: float | None) -> None:
    from nsightlab.cluster.answers import parse_duration

    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["nan", "-1", "1x", "", "inf", "s", "1s2", "m1"])
def test_request_timeout_refuses_nonsense(capsys: pytest.CaptureFixture[str], env: KubeSim, value: str) -> None:
    r = run_cli(capsys, "--request-timeout", value, "explore", "nodes", "--context", STG_CONTEXT)
    assert r.code == 2, r
    assert "--request-timeout" in one_error(r)
    assert env.requests == []


# ---------------------------------------------------------------------------- watches and exec


def _config(tmp_path: Path, *, pending: bool = False) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(
        f"clusters:\n  stg:\n    context: {STG_CONTEXT}\n    namespace: {NS}\n"
        f"lab:\n  image: registry.example.com/triton-vllm-container:1.0-1\n  owner: {OWNER}\n"
        + (f"  node_selector: {json.dumps(PENDING)}\n" if pending else "")
    )
    return path


def test_a_broken_watch_is_one_line_and_exit_4(
    capsys: pytest.CaptureFixture[str], env: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "NSIGHTLAB_CONFIG", str(_config(tmp_path, pending=True))
    )  # stays Pending: create watches; a broken watch is waited out, within --timeout
    env.faults.html_page(lambda q: q.action == kmock.action.WATCH, times=None)
    r = nsl(capsys, "create", "--context", "stg", "--yes", "--timeout", "6")
    assert r.code == 4, r
    line = one_error(r)
    assert f"the API server {env.url} answered with an HTML page" in line and f"watch pods in namespace {NS}" in line, (
        line
    )


@pytest.fixture
def lab(
    capsys: pytest.CaptureFixture[str], env: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    monkeypatch.setenv("NSIGHTLAB_CONFIG", str(_config(tmp_path)))
    r = nsl(capsys, "create", "--context", "stg", "--yes", "--json", timeout="30s")
    assert r.code == 0, r
    data: dict[str, Any] = json.loads(r.out)
    return data


EXEC = f"/api/v1/namespaces/{NS}/pods/{POD}/exec"


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        (
            lambda s: s.faults.html_page(EXEC, times=None),
            "answered with an HTML page (text/html, titled 'Sign in - Corporate SSO')",
        ),
        (lambda s: s.faults.plain_error(EXEC, times=None, code=502), "answered 502"),
        (lambda s: s.faults.stall(EXEC, times=None), "did not answer within 1 s (--request-timeout)"),
        (lambda s: s.faults.reset_connection(EXEC, times=None), "dropped the connection"),
    ],
    ids=["html", "502", "stall", "reset"],
)
def test_a_broken_exec_handshake_is_one_line_and_exit_4(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], env: KubeSim, fault: Fault, words: str
) -> None:
    fault(env)
    r = nsl(capsys, "shell", "--", "true")
    assert r.code == 4, r
    line = one_error(r)
    assert env.url in line and words in line and f"exec into pod {POD}" in line, line


@pytest.mark.parametrize("path", ["plain", "loader"])
def test_request_timeout_bounds_the_whole_request_retries_included(
    capsys: pytest.CaptureFixture[str], env: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    # A silent server: the read times out once, and is not sent again (it was, once, and
    # `--request-timeout 5` took 11 s). The server sees one request; the command ends
    # within the timeout plus a margin for a loaded machine.
    if path == "loader":  # an exec plugin: the kubernetes client's loader and its pool
        monkeypatch.setenv("KUBECONFIG", str(env.write_kubeconfig(tmp_path / "exec-kc", CONTEXTS, auth="exec")))
    env.faults.stall(f"get /api/v1/nodes/{NODE}", times=None)
    start = time.monotonic()
    r = nsl(capsys, "explore", "node", NODE, "--context", STG_CONTEXT, timeout="3s")
    took = time.monotonic() - start
    assert r.code == 4, r
    assert "did not answer within 3 s (--request-timeout)" in one_error(r)
    assert [q.path for q in env.requests if q.path == f"/api/v1/nodes/{NODE}"] == [f"/api/v1/nodes/{NODE}"]
    assert took < 3 + 2.5, took
