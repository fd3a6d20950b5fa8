"""Plain contexts (a CA, client certificates, a token) are connected without the kubernetes
client's loader: the settings must be the ones the loader would make, TLS must be checked
as strictly, and anything else must still go through the loader."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml
from clirun import run_cli
from kubesim import KubeSim

from nsightlab.cluster.kube import Kube
from nsightlab.cluster.kubeconfig import PlainConnection, load_kubeconfig, plain_connection
from nsightlab.cluster.safety import Intent, resolve_context
from nsightlab.errors import ClusterError
from nsightlab.userconfig import Config

CTX = "lab"


@pytest.fixture(scope="module")
def pems() -> dict[str, bytes]:
    ca = trustme.CA()
    leaf = ca.issue_cert("alice.example", common_name="alice")
    return {"ca": ca.cert_pem.bytes(), "cert": leaf.cert_chain_pems[0].bytes(), "key": leaf.private_key_pem.bytes()}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def _doc(cluster: dict[str, Any] | None = None, user: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "contexts": [{"name": CTX, "context": {"cluster": "c", "user": "u", "namespace": "ml-lab"}}],
    }
    if cluster is not None:
        doc["clusters"] = [{"name": "c", "cluster": cluster}]
    if user is not None:
        doc["users"] = [{"name": "u", "user": user}]
    return doc


def _cases(tmp: Path, pems: dict[str, bytes]) -> dict[str, list[Path]]:
    """Kubeconfig (file lists) of each plain shape, with files beside them."""
    out: dict[str, list[Path]] = {}
    # the cluster in a second file, in another folder, its CA relative to that file
    second = tmp / "split" / "team" / "clusters.yaml"
    (second.parent / "certs").mkdir(parents=True)
    (second.parent / "certs" / "ca.crt").write_bytes(pems["ca"])
    first = _write(tmp / "split" / "main.yaml", {**_doc(user={"token": "t0k3n"}), "clusters": []})
    _write(
        second,
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "c", "cluster": {"server": "https://127.0.0.1:6443/", "certificate-authority": "certs/ca.crt"}}
            ],
        },
    )
    out["ca-file-in-second-file+token"] = [first, second]
    out["inline-data"] = [
        _write(
            tmp / "inline.yaml",
            _doc(
                {"server": "https://k8s.example:443", "certificate-authority-data": _b64(pems["ca"])},
                {"client-certificate-data": _b64(pems["cert"]), "client-key-data": _b64(pems["key"])},
            ),
        )
    ]
    (tmp / "files").mkdir()
    for name in ("cert", "key"):
        (tmp / "files" / f"{name}.pem").write_bytes(pems[name])
    out["cert-files+insecure+server-name"] = [
        _write(
            tmp / "files" / "kc.yaml",
            _doc(
                {"server": "https://10.0.0.1", "insecure-skip-tls-verify": True, "tls-server-name": "api.internal"},
                {"client-certificate": "cert.pem", "client-key": "./cert.pem/../key.pem", "token": "abc"},
            ),
        )
    ]
    out["http+token (no TLS files read)"] = [
        _write(
            tmp / "http.yaml",
            _doc({"server": "http://127.0.0.1:8080", "certificate-authority": "missing.crt"}, {"token": "xyz"}),
        )
    ]
    out["data preferred to file"] = [
        _write(
            tmp / "both.yaml",
            _doc(
                {
                    "server": "https://h",
                    "certificate-authority-data": _b64(pems["ca"]),
                    "certificate-authority": "missing.crt",
                },
                {},
            ),
        )
    ]
    out["no user"] = [
        _write(tmp / "nouser.yaml", {**_doc({"server": "https://h", "insecure-skip-tls-verify": False}), "users": []})
    ]
    return out


def _loader_view(paths: list[Path]) -> PlainConnection:
    """What the kubernetes client's own loader makes of the same files."""
    from kubernetes.config import new_client_from_config

    api = new_client_from_config(config_file=os.pathsep.join(map(str, paths)), context=CTX, persist_config=False)
    cfg = api.configuration

    def read(path: str | None) -> bytes | None:
        return Path(path).read_bytes() if path else None

    token = cfg.auth_settings().get("BearerToken")
    https = cfg.host.startswith("https")
    return PlainConnection(
        server=cfg.host,
        verify=cfg.verify_ssl,
        ca=read(cfg.ssl_ca_cert) if https else None,
        cert=read(cfg.cert_file) if https else None,
        key=read(cfg.key_file) if https else None,
        server_name=cfg.tls_server_name,
        token=token["value"] if token else None,
    )


def test_plain_settings_are_the_loaders(
    tmp_path: Path, pems: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in [k for k in os.environ if k.lower().endswith("_proxy")]:
        monkeypatch.delenv(var)
    for name, paths in _cases(tmp_path, pems).items():
        monkeypatch.setenv("KUBECONFIG", os.pathsep.join(map(str, paths)))  # one file, or a list merged
        ours = plain_connection(load_kubeconfig(None), CTX)
        assert ours is not None, name
        assert ours == _loader_view(paths), name


@pytest.mark.parametrize(
    ("cluster", "user"),
    [
        ({"server": "https://h"}, {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "aws"}}),
        ({"server": "https://h"}, {"auth-provider": {"name": "oidc", "config": {}}}),
        ({"server": "https://h"}, {"username": "u", "password": "p"}),
        ({"server": "https://h"}, {"tokenFile": "/var/run/token"}),
        ({"server": "https://h", "proxy-url": "http://proxy:3128"}, {"token": "t"}),
        ({"server": "https://h", "certificate-authority": "no-such-ca.crt"}, {"token": "t"}),
        ({"server": "https://h"}, {"client-certificate-data": _b64(b"pem")}),  # a certificate without its key
        ({"server": "https://h"}, {"as": "someone-else", "token": "t"}),
        ({"server": "https://h", "certificate-authority-data": "%%% not base64"}, {}),
        ({}, {"token": "t"}),  # no server
    ],
    ids=[
        "exec-plugin",
        "auth-provider",
        "basic-auth",
        "token-file",
        "proxy-url",
        "missing-ca-file",
        "cert-without-key",
        "impersonation",
        "bad-base64",
        "no-server",
    ],
)
def test_anything_else_goes_through_the_loader(tmp_path: Path, cluster: dict[str, Any], user: dict[str, Any]) -> None:
    kc = load_kubeconfig(_write(tmp_path / "kc.yaml", _doc(cluster, user)))
    assert plain_connection(kc, CTX) is None


def test_a_proxy_in_the_environment_goes_through_the_loader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kc = load_kubeconfig(_write(tmp_path / "kc.yaml", _doc({"server": "https://h"}, {"token": "t"})))
    for var in [k for k in os.environ if k.lower().endswith("_proxy")]:
        monkeypatch.delenv(var)
    assert plain_connection(kc, CTX) is not None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    assert plain_connection(kc, CTX) is None


# ---------------------------------------------------------------------------- against a server


def _kube(kc_path: Path, context: str = CTX) -> Kube:
    ctx = resolve_context(context, config=Config(), kubeconfig=load_kubeconfig(kc_path), intent=Intent.READ)
    return Kube(ctx)


def _exec(kube: Kube, argv: list[str]) -> tuple[bytes, int | None]:
    """Run argv in the test server's pod through the exec websocket: (stdout, exit code)."""
    session = kube.exec("ml-lab", "gpu-smoke-test", argv)
    out = b"".join(data for channel, data in iter(session.read, None) if channel == 1)
    session.close()
    return out, session.returncode()


def _sim_kubeconfig(sim: KubeSim, path: Path, cluster: dict[str, Any], user: dict[str, Any]) -> Path:
    return _write(path, _doc({"server": sim.url, **cluster}, user))


def test_client_certificate_authenticates_rest_and_exec(sim: KubeSim, tmp_path: Path) -> None:
    pem, key = sim.client_cert("alice")
    ca = Path(str(sim.ca_file)).read_bytes()
    kc = _sim_kubeconfig(
        sim,
        tmp_path / "kc.yaml",
        {"certificate-authority-data": _b64(ca)},
        {"client-certificate-data": _b64(pem), "client-key-data": _b64(key)},
    )
    kube = _kube(kc)
    try:
        assert kube.api_client is None  # the plain path
        assert kube.get_pod("ml-lab", "gpu-smoke-test") is not None
        assert _exec(kube, ["sh", "-c", "echo hello"]) == (b"hello\n", 0)
    finally:
        kube.close()
    assert {r.user for r in sim.requests} == {"alice"}
    assert any("/exec" in r.path for r in sim.requests)
    if shutil.which("kubectl"):  # the independent judge: kubectl accepts the same file
        done = subprocess.run(
            ["kubectl", "--kubeconfig", str(kc), "--context", CTX, "get", "pods", "-n", "ml-lab", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0 and "pod/gpu-smoke-test" in done.stdout, done.stderr


def test_the_servers_certificate_is_checked(sim: KubeSim, tmp_path: Path) -> None:
    other_ca = trustme.CA().cert_pem.bytes()
    ca = Path(str(sim.ca_file)).read_bytes()
    token = {"token": sim.token or "sim-token"}
    cases = {
        "another CA": ({"certificate-authority-data": _b64(other_ca)}, "TLS verification failed"),
        "a name the certificate does not have": (
            {"certificate-authority-data": _b64(ca), "tls-server-name": "api.wrong.example"},
            "TLS verification failed",
        ),
    }
    for cluster, message in cases.values():
        kube = _kube(_sim_kubeconfig(sim, tmp_path / "bad.yaml", cluster, token))
        try:
            with pytest.raises(ClusterError, match=message):
                kube.get_pod("ml-lab", "gpu-smoke-test")
            with pytest.raises(ClusterError, match=message):
                kube.exec("ml-lab", "gpu-smoke-test", ["true"])
        finally:
            kube.close()
    # a name the certificate has, other than the server's address; and insecure-skip-tls-verify
    for cluster in (
        {"certificate-authority-data": _b64(ca), "tls-server-name": "kubernetes.default.svc"},
        {"certificate-authority-data": _b64(other_ca), "insecure-skip-tls-verify": True},
    ):
        kube = _kube(_sim_kubeconfig(sim, tmp_path / "ok.yaml", cluster, token))
        try:
            assert kube.get_pod("ml-lab", "gpu-smoke-test") is not None
            assert _exec(kube, ["true"])[1] == 0
        finally:
            kube.close()


def test_a_bad_client_key_is_one_clear_error(
    capsys: pytest.CaptureFixture[str], sim: KubeSim, tmp_path: Path, nsl_home: Path
) -> None:
    pem, _ = sim.client_cert("alice")
    kc = _sim_kubeconfig(
        sim,
        tmp_path / "kc.yaml",
        {},
        {
            "client-certificate-data": _b64(pem),
            "client-key-data": _b64(b"-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n"),
        },
    )
    r = run_cli(capsys, "explore", "nodes", "--context", CTX, "--kubeconfig", str(kc))
    assert r.code == 4, r
    assert "bad certificate or key" in r.err and "Traceback" not in r.err
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("nsightlab-tls-*/key.pem"))  # nothing left on disk


def test_a_plain_context_does_not_import_the_kubernetes_client(sim: KubeSim, kubeconfig: Path, nsl_home: Path) -> None:
    code = (
        "import sys\n"
        "from nsightlab.cli import main\n"
        "try:\n    main(['explore', 'nodes', '--context', 'stg-online-use1', '--kubeconfig', sys.argv[1]])\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "print('kubernetes' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(kubeconfig)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_a_plain_http_server_rest_and_exec(tmp_path: Path) -> None:
    from kubesim import realistic_cluster

    with KubeSim() as sim:  # no TLS
        sim.load(realistic_cluster())
        kube = _kube(_sim_kubeconfig(sim, tmp_path / "kc.yaml", {}, {"token": sim.token or "sim-token"}))
        try:
            assert kube.server.startswith("http://") and kube.get_pod("ml-lab", "gpu-smoke-test") is not None
            assert _exec(kube, ["sh", "-c", "echo plain"]) == (b"plain\n", 0)
        finally:
            kube.close()
