"""Every bad input is one line on stderr with a documented exit code: kubeconfig and
config.yaml files, names and numbers, and names echoed back with control characters."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from clirun import Result, run_cli

from nsightlab.cluster.kube import Kube
from nsightlab.cluster.kubeconfig import load_kubeconfig
from nsightlab.cluster.safety import Intent, resolve_context
from nsightlab.errors import ClusterError, ConfigError, UsageError
from nsightlab.k8s.pods import parse_quantity as api_quantity
from nsightlab.userconfig import Config, load_config


def _one_line(r: Result, code: int, *needles: str) -> None:
    """Exit `code`, exactly one line on stderr, naming every needle, no traceback."""
    assert r.code == code, r
    assert r.err.startswith("error: ") and r.err.count("\n") == 1 and r.err.endswith("\n"), r
    assert "Traceback" not in r.err and "This is a bug" not in r.err, r
    for needle in needles:
        assert needle in r.err, (needle, r)


# ---------------------------------------------------------------------------- kubeconfig files


def _bad_kubeconfigs(tmp: Path) -> dict[str, Path]:
    out = {}
    out["not utf-8"] = tmp / "latin1"
    out["not utf-8"].write_bytes("contexts:\n- name: caf\xe9\n".encode("latin-1"))
    out["not a mapping"] = tmp / "list"
    out["not a mapping"].write_text("- a\n- b\n")
    out["yaml syntax"] = tmp / "syntax"
    out["yaml syntax"].write_text("contexts: [\n  {name: a\n")
    out["a folder"] = tmp / "folder"
    out["a folder"].mkdir()
    out["wrong types"] = tmp / "types"
    out["wrong types"].write_text(
        yaml.safe_dump({"contexts": [{"name": "stg", "context": {"cluster": ["a", "b"], "user": "u"}}]})
    )
    out["empty"] = tmp / "empty"
    out["empty"].write_text("")
    return out


@pytest.mark.parametrize("case", ["not utf-8", "not a mapping", "yaml syntax", "a folder", "wrong types", "empty"])
def test_a_bad_kubeconfig_is_exit_4_naming_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nsl_home: Path, case: str
) -> None:
    path = _bad_kubeconfigs(tmp_path)[case]
    r = run_cli(capsys, "explore", "nodes", "--context", "stg", "--kubeconfig", str(path))
    _one_line(r, 4, str(path))
    # and through KUBECONFIG, beside a good file
    good = tmp_path / "good"
    good.write_text(yaml.safe_dump({"contexts": [{"name": "other", "context": {"cluster": "c"}}]}))
    os.environ["KUBECONFIG"] = f"{good}{os.pathsep}{path}"
    try:
        with pytest.raises(ClusterError) if case != "empty" else _nothing():
            load_kubeconfig()
    finally:
        del os.environ["KUBECONFIG"]


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


def _refuse_reading(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root reads anything: inject the refusal a user would get, at the open of that path."""
    if not os.access(path, os.R_OK):
        return
    real = os.open

    def refuse(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(file) == path:
            raise PermissionError(13, "Permission denied", str(file))
        return real(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)


def test_an_unreadable_kubeconfig_is_exit_4(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nsl_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("contexts: []\n")
    path.chmod(0)
    _refuse_reading(path, monkeypatch)
    r = run_cli(capsys, "explore", "nodes", "--context", "stg", "--kubeconfig", str(path))
    _one_line(r, 4, str(path), "Permission denied")


def test_an_empty_kubeconfig_has_no_contexts(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.write_text("")
    assert load_kubeconfig(path).contexts == {}


# ---------------------------------------------------------------------------- config.yaml


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"lab:\n  owner: b\xe9a\n", "not UTF-8"),
        (b"lab: [\n", "not valid YAML"),
        (b"- lab\n", "must be a mapping"),
        (b"lab: &a\n  owner: *a\n  x: *a\n", "lab.owner"),
    ],
)
def test_a_bad_config_file_is_exit_2_naming_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nsl_home: Path, body: bytes, needle: str
) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(body)
    _one_line(run_cli(capsys, "--config", str(path), "config"), 2, str(path), needle)


def test_a_config_folder_or_unreadable_file_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nsl_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "config.yaml"
    folder.mkdir()
    _one_line(run_cli(capsys, "--config", str(folder), "config"), 2, str(folder), "folder")
    path = tmp_path / "locked.yaml"
    path.write_text("lab: {}\n")
    path.chmod(0)
    _refuse_reading(path, monkeypatch)
    _one_line(run_cli(capsys, "--config", str(path), "config"), 2, str(path), "Permission denied")


@pytest.mark.parametrize(
    ("yaml_text", "key"),
    [
        ('lab:\n  pod_name: "lab;rm -rf ~"\n', "lab.pod_name"),
        ("lab:\n  pod_name: Lab-{user}\n", "lab.pod_name"),
        ("lab:\n  pod_name: lab/../../x\n", "lab.pod_name"),
        (f"lab:\n  pod_name: {'x' * 250}-{{user}}\n", "lab.pod_name"),
        ("lab:\n  memory: infGi\n", "lab.memory"),
        ("lab:\n  cpu: 1e400\n", "lab.cpu"),
        ("lab:\n  cpu: .nan\n", "lab.cpu"),
        ("lab:\n  cpu: .inf\n", "lab.cpu"),
        ("lab:\n  cpu: '-1'\n", "lab.cpu"),
        ("lab:\n  memory: 1e3Gi\n", "lab.memory"),
        ("lab:\n  memory: 4 Gi\n", "lab.memory"),
        ("lab:\n  instance_type: 'g7e 8xlarge'\n", "lab.instance_type"),
        ("lab:\n  node_selector: {'bad key!': x}\n", "lab.node_selector"),
    ],
)
def test_bad_values_are_refused_when_the_config_loads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nsl_home: Path, yaml_text: str, key: str
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ConfigError) as e:
        load_config(path)
    line = e.value.line()
    assert f"{path}:2:" in line and f"'{key}'" in line and "\n" not in line
    _one_line(run_cli(capsys, "--config", str(path), "config"), 2, str(path), key)


@pytest.mark.parametrize(
    ("cpu", "memory"), [("1e3", "24Gi"), ("500m", "1E"), (".5", "1.5Gi"), ("4", "24e9"), ("+2", "128974848")]
)
def test_kubernetes_quantities_are_accepted(tmp_path: Path, cpu: str, memory: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"lab": {"cpu": cpu, "memory": memory, "pod_name": "a.b-{user}"}}))
    lab = load_config(path).config.lab
    assert (lab.cpu, lab.memory) == (cpu, memory)


@pytest.mark.parametrize("user", ["Jöhn Smith", "x" * 80, "--", "a.b@corp"])
def test_any_user_fills_the_pod_name_with_a_valid_label(user: str) -> None:
    from nsightlab.kubevalues import dns1123_subdomain_problem

    name = Config.model_validate({"lab": {"owner": user}}).pod_name()
    assert dns1123_subdomain_problem(name) is None, name


def test_one_quantity_parser_for_config_and_api_objects() -> None:
    from nsightlab.kubevalues import parse_quantity

    assert parse_quantity("500m") == Decimal("0.5") and parse_quantity("24Gi") == 24 * 2**30
    assert parse_quantity("1e3") == 1000 and parse_quantity("1E") == 10**18 and parse_quantity("1E3") == 1000
    assert (
        parse_quantity("1.5e-3") == Decimal("0.0015")
        and parse_quantity("5.") == 5
        and parse_quantity("+.5") == Decimal("0.5")
    )
    for bad in (
        "inf",
        "nan",
        "infGi",
        "Infinity",
        "1e3Gi",
        "4 Gi",
        "1_000",
        "Gi",
        "0x10",
        "١٢",
        "",
        "1e",
        "1e99999999999",
    ):
        with pytest.raises(ValueError):
            parse_quantity(bad)
    # what the API objects' reader makes of the same: nothing for what does not parse
    assert api_quantity("8") == 8 and api_quantity("1e3") == 1000 and api_quantity(2) == 2
    assert (
        api_quantity("inf") == 0
        and api_quantity("nan") == 0
        and api_quantity(float("inf")) == 0
        and api_quantity(None) == 0
    )
    assert int(api_quantity("infGi")) == 0  # int() of an infinite Decimal raised here before


# ---------------------------------------------------------------------------- numeric options


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("roofline", "--weights-gb", "nan", "--gpu", "L4"), "--weights-gb"),
        (("roofline", "--weights-gb", "inf", "--gpu", "L4"), "--weights-gb"),
        (("roofline", "--weights-gb", "1e400", "--gpu", "L4"), "--weights-gb"),
        (("roofline", "--weights-gb", "-16", "--gpu", "L4"), "--weights-gb"),
        (("report", "--weights-gb", "nan"), "--weights-gb"),
        (("create", "--timeout", "nan", "--context", "x"), "--timeout"),
        (("create", "--timeout", "inf", "--context", "x"), "--timeout"),
        (("create", "--timeout", "-5", "--context", "x"), "--timeout"),
        (("sweep", "--local", "--iters", "nan"), "--iters"),
        (("sweep", "--local", "--iters", "0"), "--iters"),
        (("sweep", "--local", "--warmup", "-1"), "--warmup"),
        (("sweep", "--local", "--warmup", "inf"), "--warmup"),
        (("ncu", "--count", "nan"), "--count"),
        (("ncu", "--count", "-2"), "--count"),
        (("profile", "lesson1", "--local", "--top", "inf"), "--top"),
        (("profile", "lesson1", "--local", "--top", "0"), "--top"),
        (("profile", "--serving", "--duration", "nan", "--", "true"), "--duration"),
        (("profile", "--serving", "--duration", "0", "--", "true"), "--duration"),
        (("profile", "--serving", "--delay", "-1", "--duration", "5", "--", "true"), "--delay"),
        (("logs", "--tail", "inf"), "--tail"),
        (("logs", "--tail", "-3"), "--tail"),
    ],
)
def test_numeric_options_refuse_nan_infinity_and_negatives(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, args: tuple[str, ...], option: str
) -> None:
    _one_line(run_cli(capsys, *args), 2, option)


def test_a_finite_weight_still_gives_the_floor(capsys: pytest.CaptureFixture[str], nsl_home: Path) -> None:
    r = run_cli(capsys, "roofline", "--weights-gb", "16", "--gpu", "L4", "--json")
    assert r.code == 0, r
    (line,) = json.loads(r.out)["lines"]
    assert line["ms_per_token"] == pytest.approx(16e9 / 300e9 * 1e3)


# ---------------------------------------------------------------------------- request paths


class _Recorder(BaseHTTPRequestHandler):
    """An API server that knows nothing: records each request line as sent, answers 404."""

    seen: list[str]

    def _answer(self) -> None:
        self.seen.append(f"{self.command} {self.path}")
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = json.dumps(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "NotFound",
                "code": 404,
                "message": "not found",
            }
        ).encode()
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[tuple[Kube, list[str]]]:
    seen: list[str] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "lab", "context": {"cluster": "c", "user": "u", "namespace": "ml-lab"}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    ctx = resolve_context("lab", config=Config(), kubeconfig=load_kubeconfig(path), intent=Intent.READ)
    kube = Kube(ctx)
    try:
        yield kube, seen
    finally:
        kube.close()
        server.shutdown()
        server.server_close()


HOSTILE = ["lab;rm -rf ~", "../../nodes/x", "a/b?watch=1#frag", "..", ".", "50%", "ünï code"]


@pytest.mark.parametrize("name", HOSTILE)
def test_every_name_is_one_quoted_path_segment(recorder: tuple[Kube, list[str]], name: str) -> None:
    kube, seen = recorder
    assert kube.get_pod("ml-lab", name) is None
    assert kube.get_node(name) is None
    assert kube.namespace_exists(name) is False
    assert kube.delete_pod("ml-lab", name) is False
    for call in (
        lambda: kube.list_pods(name),
        lambda: list(kube.watch_pods(name, timeout_seconds=1)),
        lambda: list(kube.watch_events(name, timeout_seconds=1)),
    ):
        with pytest.raises(ClusterError):
            call()
    with pytest.raises(ClusterError):
        kube.create_pod(name, {"metadata": {"name": "x"}})
    with pytest.raises(ClusterError):
        kube.exec("ml-lab", name, ["true"])
    with pytest.raises(ClusterError):
        kube.list_events(name)
    with pytest.raises(ClusterError):
        b"".join(kube.pod_log("ml-lab", name))
    # the fleet's Jobs and ConfigMaps
    assert kube.get_job("ml-lab", name) is None and kube.delete_job("ml-lab", name) is False
    assert kube.get_configmap("ml-lab", name) is None and kube.delete_configmap("ml-lab", name) is False
    paths = [line.split(" ", 1)[1].split("?", 1)[0] for line in seen]
    assert len(paths) == 15, seen
    for path in paths:
        segments = path.split("/")
        assert segments[:3] in (["", "api", "v1"], ["", "apis", "batch"]), path
        assert ".." not in segments and "." not in segments and all(segments[1:]), path
        assert all(ch.isascii() and ch not in " ;#?" for ch in path), path
    # each request reached the object it names, in a single segment
    assert seen[0].startswith("GET /api/v1/namespaces/ml-lab/pods/") and seen[0].count("/") == 6
    assert seen[1].startswith("GET /api/v1/nodes/") and seen[1].count("/") == 4
    assert seen[3].startswith("DELETE /api/v1/namespaces/ml-lab/pods/") and seen[3].count("/") == 6


def test_an_empty_name_is_never_sent(recorder: tuple[Kube, list[str]]) -> None:
    kube, seen = recorder
    with pytest.raises(UsageError, match="empty name"):
        kube.delete_pod("ml-lab", "")  # ".../pods/" would be the whole collection
    with pytest.raises(UsageError, match="empty name"):
        kube.get_pod("", "x")
    assert seen == []


# ---------------------------------------------------------------------------- control characters


HOSTILE_TEXT = "stg\n\x1b[31mprd\x1b[0m"


def test_a_context_name_with_control_characters_stays_on_one_line(
    capsys: pytest.CaptureFixture[str], kubeconfig: Path, nsl_home: Path
) -> None:
    r = run_cli(capsys, "explore", "nodes", "--context", HOSTILE_TEXT, "--kubeconfig", str(kubeconfig))
    _one_line(r, 4, "unknown context", "stg\\n\\x1b[31mprd\\x1b[0m")
    assert "\x1b" not in r.err


def test_a_config_key_with_control_characters_stays_on_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nsl_home: Path
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text('lab:\n  "own\\ner\\e[2J": x\n')  # YAML escapes: a newline and ESC in the key
    r = run_cli(capsys, "--config", str(path), "config")
    _one_line(r, 2, "unknown key", "own\\ner\\x1b[2J")
    assert "\x1b" not in r.err


def test_a_file_name_with_control_characters_stays_on_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nsl_home: Path
) -> None:
    missing = tmp_path / "conf\n\x1b]0;owned\x07.yaml"
    r = run_cli(capsys, "--config", str(missing), "config")
    _one_line(r, 2, "does not exist", "conf\\n\\x1b]0;owned\\x07.yaml")
    bad = tmp_path / "stats\r\n\x1b[1A.txt"
    bad.write_text("not an nsys output at all\n")
    r = run_cli(capsys, "analyze", str(bad))
    _one_line(r, 2, "stats\\r\\n\\x1b[1A.txt")
    assert "\x1b" not in r.err and "\r" not in r.err


def test_an_option_name_with_control_characters_stays_on_one_line(
    capsys: pytest.CaptureFixture[str], nsl_home: Path
) -> None:
    r = run_cli(capsys, "runs", "--ki\nnd\x1b[2J", "sweep")
    _one_line(r, 2, "no option", "--ki\\nnd\\x1b[2J")
    assert "\x1b" not in r.err
