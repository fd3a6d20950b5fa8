"""What the lab-pod tests share: the lab's names, its config file, an NSIGHTLAB_HOME with
that config, and a Ready lab pod made by nsightlab itself (fixtures `home` and `lab`:
import them into a test module to use them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clirun import Result, run_cli
from conftest import STG_CONTEXT

NS = "ml-lab"
OWNER = "ana"
POD = f"nsight-lab-{OWNER}"
IMAGE = "registry.example.com/triton-vllm-container:1.0-1"
# lab.node_selector that no node of the emulator matches (a node group scaled to zero): the
# pod stays Pending and the scheduler says why, while its GPUs fit the instance type
PENDING = {"eks.amazonaws.com/nodegroup": "scaled-to-zero"}


def write_config(path: Path, namespace: str = NS, **lab: Any) -> Path:
    """config.yaml with the alias `stg` (the emulator's staging context in `namespace`)
    and the lab's settings (`lab` adds or overrides keys)."""
    settings = {"image": IMAGE, "owner": OWNER, **lab}
    lines = [f"clusters:\n  stg:\n    context: {STG_CONTEXT}\n    namespace: {namespace}\nlab:"]
    lines += [f"  {k}: {json.dumps(v)}" for k, v in settings.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def nsl(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    return run_cli(capsys, *args)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kubeconfig: Path) -> Path:
    """A fresh NSIGHTLAB_HOME, the emulator's kubeconfig and the lab's config file."""
    h = tmp_path / "home"
    monkeypatch.setenv("NSIGHTLAB_HOME", str(h))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NSIGHTLAB_CONFIG", str(write_config(tmp_path / "config.yaml")))
    return h


@pytest.fixture
def lab(capsys: pytest.CaptureFixture[str], home: Path) -> dict[str, Any]:
    """A Ready lab pod, created by nsightlab itself (create --json's document)."""
    r = nsl(capsys, "create", "--context", "stg", "--yes", "--json")
    assert r.code == 0, r
    data: dict[str, Any] = json.loads(r.out)
    return data
