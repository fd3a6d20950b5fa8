"""Files a user names are read bounded: regular files only (a FIFO with no writer never
blocks, /dev/zero never ends), capped in size, and YAML with more aliases than a real file
has refused before any loader expands it. Each case runs the real console entry point in
a subprocess, under a timeout and an address-space limit (a regression fails here, it
does not take the machine), and reports its peak RSS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from labenv import write_config

from nsightlab import userfiles

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 90  # seconds: generous for a loaded machine; a blocked open never ends
ADDRESS_SPACE = 2 * 1024**3  # a run away read dies here (MemoryError) instead of filling the machine
SMALL_RSS_MIB = 200  # a refused file costs what starting the CLI costs (~50 MiB)

# The child runs the CLI under the limit and reports its exit code, stderr and peak RSS.
_WRAPPER = r"""
import json, resource, subprocess, sys, time
limit = int(sys.argv[1])
def cap():
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
t0 = time.monotonic()
p = subprocess.run([sys.executable, "-m", "nsightlab", *sys.argv[3:]], capture_output=True, text=True,
                   preexec_fn=cap, timeout=float(sys.argv[2]), stdin=subprocess.DEVNULL)
print(json.dumps({"code": p.returncode, "out": p.stdout, "err": p.stderr, "seconds": time.monotonic() - t0,
                  "rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


@dataclass
class Ran:
    code: int
    out: str
    err: str
    seconds: float
    rss_mib: float


def nsl_bounded(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Ran:
    """`python -m nsightlab ARGS` in a fresh process, with a timeout and a memory cap."""
    environ = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "NSIGHTLAB_HOME": str(tmp_path / "home"),
        "COLUMNS": "200",
        **(env or {}),
    }
    for name in ("KUBECONFIG", "NSIGHTLAB_CONFIG"):
        if name not in (env or {}):
            environ.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(ADDRESS_SPACE), str(TIMEOUT), *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=TIMEOUT + 30,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr  # the wrapper itself: a TimeoutExpired here means the CLI hung
    return Ran(**json.loads(proc.stdout))


def one_line(r: Ran, code: int, *needles: str) -> None:
    assert r.code == code, r
    assert r.err.startswith("error: ") and r.err.count("\n") == 1, r
    assert "Traceback" not in r.err and "This is a bug" not in r.err, r
    for needle in needles:
        assert needle in r.err, (needle, r)
    assert r.rss_mib < SMALL_RSS_MIB, r


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    """A FIFO nobody writes to: opening it for reading blocks forever."""
    path = tmp_path / "fifo.yaml"
    os.mkfifo(path)
    return path


@pytest.fixture
def sparse(tmp_path: Path) -> Path:
    """A 100 MiB file that takes no disk: one byte at its end."""
    path = tmp_path / "sparse.yaml"
    with open(path, "wb") as fh:
        fh.truncate(100 * 1024 * 1024)
    return path


def laughs(path: Path, *, kubeconfig: bool) -> Path:
    """A billion laughs in 1 KB: nine levels of nine aliases (9^9 strings once expanded).
    In a kubeconfig they are an exec plugin's args, which the kubernetes client's loader
    expands; in config.yaml, a lab setting."""
    lines = ['l0: &l0 ["lollollollollollollollollollol"]']
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 10)]
    if kubeconfig:
        lines = [
            "apiVersion: v1",
            "kind: Config",
            *lines,
            "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]",
            "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: echo, "
            "args: *l9}}}]",
            "contexts: [{name: stg, context: {cluster: c, user: u}}]",
        ]
    else:
        lines = ["x-laughs:", *(f"  {line}" for line in lines), "protected_contexts: *l9"]
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size < 1024
    return path


# ---------------------------------------------------------------------------- kubeconfig: exit 4


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "sparse", "laughs", "folder"])
def test_a_kubeconfig_that_is_no_kubeconfig_is_exit_4_promptly(
    tmp_path: Path, fifo: Path, sparse: Path, kind: str
) -> None:
    path = {
        "dev-zero": Path("/dev/zero"),
        "fifo": fifo,
        "sparse": sparse,
        "laughs": laughs(tmp_path / "laughs.yaml", kubeconfig=True),
        "folder": tmp_path,
    }[kind]
    words = {
        "dev-zero": "is a character device, not a regular file",
        "fifo": "is a FIFO (named pipe), not a regular file",
        "sparse": "is larger than 4 MiB",
        "laughs": "holds more than 8 YAML aliases",
        "folder": "is a folder, not a file",
    }[kind]
    r = nsl_bounded(tmp_path, "explore", "nodes", "--context", "stg", "--kubeconfig", str(path))
    one_line(r, 4, f"kubeconfig {path} {words}")


def test_a_fifo_among_the_kubeconfig_files_is_exit_4(tmp_path: Path, fifo: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("apiVersion: v1\nkind: Config\ncontexts: []\n")
    r = nsl_bounded(tmp_path, "explore", "nodes", "--context", "stg", env={"KUBECONFIG": f"{good}:{fifo}"})
    one_line(r, 4, f"kubeconfig {fifo} is a FIFO")


@pytest.mark.parametrize("key", ["certificate-authority", "client-certificate", "tokenFile"])
@pytest.mark.parametrize("target", ["fifo", "dev-zero"])
def test_a_credential_file_that_is_no_file_is_exit_4_before_any_loader(
    tmp_path: Path, fifo: Path, key: str, target: str
) -> None:
    named = str(fifo) if target == "fifo" else "/dev/zero"
    cluster = {"server": "https://127.0.0.1:1", **({key: named} if key == "certificate-authority" else {})}
    user = {"token": "t"} if key == "certificate-authority" else {key: named}
    if key == "client-certificate":
        user["client-key"] = named
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "stg", "context": {"cluster": "c", "user": "u"}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(doc))  # JSON is YAML
    r = nsl_bounded(tmp_path, "explore", "nodes", "--context", "stg", "--kubeconfig", str(path))
    one_line(r, 4, f"the {key} file of context 'stg'", "not a regular file")


# ---------------------------------------------------------------------------- config.yaml: exit 2


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "sparse", "laughs"])
@pytest.mark.parametrize("how", ["--config", "NSIGHTLAB_CONFIG"])
def test_a_config_that_is_no_config_is_exit_2_promptly(
    tmp_path: Path, fifo: Path, sparse: Path, kind: str, how: str
) -> None:
    path = {
        "dev-zero": Path("/dev/zero"),
        "fifo": fifo,
        "sparse": sparse,
        "laughs": laughs(tmp_path / "config.yaml", kubeconfig=False),
    }[kind]
    words = {
        "dev-zero": "is a character device, not a regular file",
        "fifo": "is a FIFO (named pipe), not a regular file",
        "sparse": "is larger than 1 MiB",
        "laughs": "holds more than 8 YAML aliases",
    }[kind]
    if how == "--config":
        r = nsl_bounded(tmp_path, "--config", str(path), "config")
    else:
        r = nsl_bounded(tmp_path, "config", env={"NSIGHTLAB_CONFIG": str(path)})
    one_line(r, 2, f"config file {path} {words}")


def test_a_few_aliases_are_still_yaml(tmp_path: Path) -> None:
    """A hand-written config may reuse a block: up to the limit, aliases load as YAML does."""
    path = tmp_path / "config.yaml"
    path.write_text(
        "clusters:\n  stg: &stg {context: stg-online-use1, namespace: serving}\n  stg2: *stg\n"
        "protected_contexts: &p [live-*]\n"
    )
    r = nsl_bounded(tmp_path, "--config", str(path), "config", "--json")
    assert r.code == 0, r
    assert "stg2" in r.out


# ---------------------------------------------------------------------------- the other readers


@pytest.mark.parametrize("target", ["fifo", "dev-zero"])
def test_a_manifest_that_is_no_file_is_exit_2(tmp_path: Path, fifo: Path, target: str) -> None:
    named = fifo if target == "fifo" else Path("/dev/zero")
    config = write_config(tmp_path / "config.yaml")
    r = nsl_bounded(tmp_path, "--config", str(config), "create", "--dry-run", "--manifest", str(named))
    one_line(r, 2, f"pod template {named} is a", "not a regular file")


def test_a_billion_laughs_manifest_is_exit_2(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.yaml")
    manifest = tmp_path / "pod.yaml"
    body = laughs(tmp_path / "l.yaml", kubeconfig=False).read_text()
    manifest.write_text("apiVersion: v1\nkind: Pod\n" + body)
    r = nsl_bounded(tmp_path, "--config", str(config), "create", "--dry-run", "--manifest", str(manifest))
    one_line(r, 2, "holds more than 8 YAML aliases")


@pytest.mark.parametrize("name", ["fifo.csv", "fifo.json", "fifo.txt", "fifo.pt.trace.json.gz"])
def test_analyze_of_a_fifo_is_exit_2_promptly(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    os.mkfifo(path)
    one_line(nsl_bounded(tmp_path, "analyze", str(path)), 2, f"file {path} is a FIFO")


def test_analyze_of_a_device_is_exit_2(tmp_path: Path) -> None:
    one_line(nsl_bounded(tmp_path, "analyze", "/dev/zero"), 2, "file /dev/zero is a character device")


def test_analyze_of_a_folder_holding_a_fifo_export_is_exit_2_promptly(tmp_path: Path) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "report_cuda_gpu_kern_sum.csv").write_text("Time (%),Total Time (ns)\n")
    os.mkfifo(folder / "report_nvtx_sum.csv")
    one_line(nsl_bounded(tmp_path, "analyze", str(folder)), 2, "report_nvtx_sum.csv is a FIFO")


def test_profile_of_a_fifo_script_is_exit_2(tmp_path: Path, fifo: Path) -> None:
    """Keep what holds: a script that is not a regular file is not sent anywhere."""
    script = tmp_path / "lesson.py"
    os.mkfifo(script)
    r = nsl_bounded(tmp_path, "profile", str(script), "--local")
    assert r.code == 2 and r.err.count("\n") == 1 and str(script) in r.err, r
    assert "not a regular file" in r.err and "no such file" not in r.err, r  # it exists


def test_the_limits_are_kilobytes_files_need() -> None:
    assert userfiles.KUBECONFIG_MAX_BYTES == 4 * 1024**2 and userfiles.CONFIG_MAX_BYTES == 1024**2
    assert userfiles.MAX_YAML_ALIASES < 9  # a billion laughs needs nine levels of nine


def test_copy_of_a_fifo_never_blocks(tmp_path: Path, lab: dict[str, Any], home: Path) -> None:
    """Keep what holds: a FIFO given to `copy` is not read (alone: refused, non-zero and one
    line; inside a folder: left out), and the copy ends at once."""
    env = {"NSIGHTLAB_CONFIG": os.environ["NSIGHTLAB_CONFIG"], "KUBECONFIG": os.environ["KUBECONFIG"]}
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    alone = nsl_bounded(tmp_path, "copy", str(pipe), ":/tmp/", env=env)
    one_line(alone, 2, f"local source {pipe} is a FIFO (named pipe): copy sends files and folders")
    assert alone.seconds < TIMEOUT, alone
    folder = tmp_path / "folder"
    folder.mkdir()
    os.mkfifo(folder / "pipe")
    (folder / "ok.txt").write_text("x")
    inside = nsl_bounded(tmp_path, "copy", str(folder), ":/tmp/", env=env)
    assert inside.code == 0 and "copied 1 file" in inside.out, inside
