"""A pod path without a leading / means one place both ways: the pod's working folder
(the container's working directory, where an exec starts, as kubectl cp has it)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubesim import KubeSim
from labenv import NS, POD, nsl

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(params=[None, "/workspace"], ids=["no-workingDir", "workingDir-workspace"])
def workdir(request: pytest.FixtureRequest) -> str | None:
    value: str | None = request.param
    return value


@pytest.fixture
def lab_in(capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, workdir: str | None) -> dict[str, Any]:
    """A Ready lab pod whose container has `workdir` as its workingDir (None: none, so
    execs start in /)."""
    template = yaml.safe_load((ROOT / "manifests" / "pod.yaml").read_text())
    if workdir:
        template["spec"]["containers"][0]["workingDir"] = workdir
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(template))
    r = nsl(capsys, "create", "--context", "stg", "--yes", "--json", "--manifest", str(path))
    assert r.code == 0, r
    data: dict[str, Any] = json.loads(r.out)
    return data


def _in_pod(sim: KubeSim, workdir: str | None, rel: str) -> Path:
    """Where the pod's `workdir`/`rel` is on this machine (the sandbox stands for its /)."""
    return sim.pod_path(NS, POD, f"{workdir}/{rel}") if workdir else sim.sandbox(NS, POD) / rel


def test_a_file_goes_there_and_comes_back_from_the_same_place(
    capsys: pytest.CaptureFixture[str], lab_in: dict[str, Any], sim: KubeSim, tmp_path: Path, workdir: str | None
) -> None:
    src = tmp_path / "proj.txt"
    src.write_bytes(os.urandom(3000))
    r = nsl(capsys, "copy", str(src), ":dest.txt")
    assert r.code == 0, r
    assert _in_pod(sim, workdir, "dest.txt").read_bytes() == src.read_bytes()
    back = tmp_path / "back.txt"
    r = nsl(capsys, "copy", ":dest.txt", str(back))
    assert r.code == 0, r
    assert back.read_bytes() == src.read_bytes()
    # ./ reads the same way, and so does a path under a folder there
    assert nsl(capsys, "copy", str(src), ":./sub.txt").code == 0
    assert nsl(capsys, "copy", ":sub.txt", str(tmp_path / "sub-back.txt")).code == 0
    assert (tmp_path / "sub-back.txt").read_bytes() == src.read_bytes()


def test_a_folder_goes_there_and_comes_back_from_the_same_place(
    capsys: pytest.CaptureFixture[str], lab_in: dict[str, Any], sim: KubeSim, tmp_path: Path, workdir: str | None
) -> None:
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "a.py").write_text("print('a')\n")
    (proj / "sub" / "b.bin").write_bytes(os.urandom(5000))
    assert nsl(capsys, "copy", str(proj), ":dest").code == 0
    assert _in_pod(sim, workdir, "dest/sub/b.bin").read_bytes() == (proj / "sub" / "b.bin").read_bytes()
    r = nsl(capsys, "copy", ":dest", str(tmp_path / "back"), "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["files"] == 2
    assert (tmp_path / "back" / "sub" / "b.bin").read_bytes() == (proj / "sub" / "b.bin").read_bytes()
    # a file inside it, by a relative path with a folder in it
    r = nsl(capsys, "copy", ":dest/sub/b.bin", str(tmp_path / "b.bin"))
    assert r.code == 0, r
    assert (tmp_path / "b.bin").read_bytes() == (proj / "sub" / "b.bin").read_bytes()


def test_a_missing_relative_path_is_named_in_the_working_folder(
    capsys: pytest.CaptureFixture[str], lab_in: dict[str, Any], sim: KubeSim, tmp_path: Path, workdir: str | None
) -> None:
    r = nsl(capsys, "copy", ":missing.txt", str(tmp_path))
    assert r.code == 6, r
    line = r.err.strip().splitlines()[-1]
    where = str(_in_pod(sim, workdir, ".").resolve())  # the sandbox's path for the pod's working folder
    assert line == f"error: no such file or directory: missing.txt in the pod's working folder {where} (in pod {POD})."
    assert "//" not in line
    nested = nsl(capsys, "copy", ":nope/missing.txt", str(tmp_path))
    assert nested.code == 6 and "no such directory: nope in the pod's working folder" in nested.err
    # an absolute path keeps its own words (the sandbox shows its /tmp as its own path)
    absolute = nsl(capsys, "copy", ":/tmp/missing.txt", str(tmp_path))
    assert absolute.code == 6 and "/tmp/missing.txt (in pod" in absolute.err and "working folder" not in absolute.err
    assert list(tmp_path.glob(".nsightlab-copy-*")) == []


@pytest.mark.parametrize("workdir", ["/workspace"], indirect=True)
def test_without_python_in_the_pod_the_same_place(
    capsys: pytest.CaptureFixture[str], lab_in: dict[str, Any], sim: KubeSim, tmp_path: Path, workdir: str | None
) -> None:
    """The tar and sha256sum path (python3 too old) reads the same place."""
    sim.put_tool(NS, POD, "python3", "#!/bin/sh\nexit 99\n")
    src = tmp_path / "proj.txt"
    src.write_text("from the working folder\n")
    assert nsl(capsys, "copy", str(src), ":dest.txt").code == 0
    assert _in_pod(sim, workdir, "dest.txt").read_text() == "from the working folder\n"
    r = nsl(capsys, "copy", ":dest.txt", str(tmp_path / "back.txt"))
    assert r.code == 0, r
    assert (tmp_path / "back.txt").read_text() == "from the working folder\n"
