"""Every command line a message prints runs as printed. The messages of the error paths
are collected by running them (every command fed bad input, as tests/test_bad_input.py
does, against a server that answers and one that does not; then the lab's own mistakes
against the API server emulator), every `nsightlab ...` command in them is extracted
and parsed against the CLI (tests/hintcheck.py). The commands are found by walking the
app, so a command added later is covered."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clirun import Result
from conftest import PRD_CONTEXT, STG_CONTEXT
from hintcheck import commands_in, problem
from kubesim import KubeSim
from labenv import NS, POD, nsl, write_config
from test_bad_input import _invocations

Seen = dict[str, str]  # command -> where it was printed (the first time)


def _collect(seen: Seen, argv: list[str], r: Result) -> None:
    for command in commands_in(r.out + "\n" + r.err):
        seen.setdefault(command, "nsightlab " + " ".join(argv))


def _check(seen: Seen, at_least: int) -> None:
    assert len(seen) >= at_least, sorted(seen)  # the paths were reached
    wrong = [f"`{c}` (printed by `{where}`): {p}" for c, where in sorted(seen.items()) if (p := problem(c))]
    assert not wrong, "\n".join(wrong)


def _files(tmp_path: Path) -> tuple[Path, Path]:
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 4 + b"\n{not: json, nor: csv\n\x00\xff")
    return garbage, tmp_path / "not-there" / "nothing.py"


def _makes_something(argv: list[str]) -> bool:
    """A walk's command that would succeed in making a pod or a fleet on the emulator (and
    then run a real sweep in it): not an error path."""
    named = "--context" in argv and argv[argv.index("--context") + 1] in ("stg", STG_CONTEXT)
    return named and (argv[0] == "create" or argv[:2] == ["fleet", "sweep"])


# the walk's bad values that print hints of their own; the others ("-1", "", a garbage
# file, 1e999, an unknown id) end in the same lines as these, at twice the time
_VALUES = ("nan", "latest", "x")


def _walk(capsys: pytest.CaptureFixture[str], tmp_path: Path, keep: Callable[[list[str]], bool]) -> Seen:
    seen: Seen = {}
    garbage, missing = _files(tmp_path)
    for label, argv in _invocations(garbage, missing):
        value = label.rsplit("=", 1)[-1] if label.startswith("argument ") else label.split(" ", 1)[-1]
        if "'" in value and value.strip("'") not in (*_VALUES, str(missing)):
            continue
        if keep(argv):
            _collect(seen, argv, nsl(capsys, *argv))
    return seen


def test_hints_of_bad_input_against_a_login_page(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim: KubeSim, kubeconfig: Path
) -> None:
    monkeypatch.setenv("NSIGHTLAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NSIGHTLAB_CONFIG", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.chdir(tmp_path)
    sim.faults.html_page(times=None)
    _check(_walk(capsys, tmp_path, lambda argv: True), at_least=5)


def test_hints_of_bad_input_against_a_cluster_that_answers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, sim: KubeSim
) -> None:
    monkeypatch.chdir(tmp_path)
    seen = _walk(capsys, tmp_path, lambda argv: not _makes_something(argv))
    _check(seen, at_least=10)
    assert sim.get("pods", NS, POD) is None


def test_hints_of_the_lab_s_mistakes(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path, tmp_path: Path, sim: KubeSim
) -> None:
    seen: Seen = {}
    local = tmp_path / "note.txt"
    local.write_text("hello\n")
    rep = tmp_path / "trace.nsys-rep"
    rep.write_bytes(b"not really a report")
    runs: list[list[str]] = [
        ["copy", str(local), ":/no/such/folder/"],  # the folder is not there: how to make it
        ["copy", str(local), ":no/such/folder/"],
        ["shell"],  # no terminal here
        ["ncu", "lesson1", "--device", "cpu"],
        ["ncu", "lesson1", "--device", "cpu", "--local"],
        ["profile", "lesson1", "--batch", "4"],
        ["profile", "my_model.py", "--tokens", "8", "--local"],
        ["profile", "lesson1", "--serving", "--local"],
        ["profile", "lesson1", "--profiler", "none"],
        ["logs", "--container", "sidecar"],
        ["roofline"],
        ["report"],
        ["runs", "show", "nothing-like-it"],
        ["analyze", str(rep)],
        ["create", "--context", PRD_CONTEXT],
        ["doctor", "--context", "stg"],
        ["config"],
        ["status"],
    ]
    for argv in runs:
        _collect(seen, argv, nsl(capsys, *argv))
    sim.remove("pods", NS, POD)
    for argv in (["status"], ["shell", "--", "true"], ["copy", str(local), ":/tmp/"], ["events"], ["cleanup"]):
        _collect(seen, argv, nsl(capsys, *argv))
    for argv in (["status"], ["cleanup", "--yes"], ["shell", "--", "true"]):
        _collect(seen, argv, nsl(capsys, *argv))
    _check(seen, at_least=8)


def test_hints_after_fleet_status(capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path) -> None:
    """A fleet kept in place (one tiny CPU sweep on a g7e node, `--keep`): `fleet status`
    says how to collect or remove it, with its id and where it is."""
    cfg = write_config(tmp_path / "serving.yaml", namespace="serving")
    tiny = ["--device", "cpu", "--sizes", "10", "--iters", "1", "--warmup", "0"]
    start = nsl(
        capsys, "--config", str(cfg), "fleet", "sweep", "--context", "stg", "--types", "g7e.8xlarge", *tiny, "--keep"
    )
    assert start.code == 0, start
    status = nsl(capsys, "--config", str(cfg), "fleet", "status", "--context", "stg")
    assert status.code == 0, status
    [fleet_id] = [line.split()[0] for line in status.out.splitlines()[1:] if line.strip() and "`" not in line]
    seen: Seen = {}
    for argv, r in ((["fleet", "sweep", "--keep"], start), (["fleet", "status"], status)):
        _collect(seen, argv, r)
    assert f"nsightlab fleet collect {fleet_id} --context stg -n serving" in seen, sorted(seen)
    assert f"nsightlab cleanup --fleet {fleet_id} --context stg -n serving" in seen, sorted(seen)
    _check(seen, at_least=3)


def test_hints_of_a_config_with_placeholders(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim: KubeSim
) -> None:
    """An older starter config that still says CHANGE-ME."""
    cfg = tmp_path / "old.yaml"
    cfg.write_text(
        f"clusters:\n  stg:\n    context: {STG_CONTEXT}\n    namespace: CHANGE-ME-namespace\n"
        "lab:\n  image: CHANGE-ME.registry.example.com/triton-vllm-container:1.0-1\n"
    )
    monkeypatch.setenv("NSIGHTLAB_CONFIG", str(cfg))
    seen: Seen = {}
    for argv in (["create", "--context", "stg", "--dry-run"], ["fleet", "sweep", "--context", "stg", "--dry-run"]):
        r = nsl(capsys, *argv)
        assert r.code == 2, r
        _collect(seen, argv, r)
    _check(seen, at_least=1)


def test_hints_of_a_config_without_an_image(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim: KubeSim
) -> None:
    cfg = tmp_path / "no-image.yaml"
    cfg.write_text(f"clusters:\n  stg:\n    context: {STG_CONTEXT}\n    namespace: {NS}\n")
    monkeypatch.setenv("NSIGHTLAB_CONFIG", str(cfg))
    seen: Seen = {}
    for argv in (
        ["create", "--context", "stg"],
        ["fleet", "sweep", "--context", "stg", "--dry-run"],
        ["doctor", "--context", "stg"],
    ):
        r = nsl(capsys, *argv)
        assert r.code != 0, r
        _collect(seen, argv, r)
    _check(seen, at_least=1)
    assert sim.get("pods", NS, POD) is None
