"""Every command, fed bad input, ends with a documented exit code and exactly one `error:`
line (its last line on stderr): never a traceback, never "This is a bug".

The commands are found by walking the Typer app, so a new command is covered as soon as
it exists. Bad input: an unknown option, missing arguments, nonsense values for every
option and argument (NaN, negative, words, a garbage file, a path that is not there), a
run id that does not exist, an unknown context, a protected one, a server that answers
with a login page, and an NSIGHTLAB_HOME that is empty or is a file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import Result, run_cli
from conftest import PRD_CONTEXT, STG_CONTEXT
from kubesim import KubeSim

DOCUMENTED = {0, 2, 3, 4, 5, 6, 7}  # 1 is a bug; 130 is Ctrl-C


def _commands() -> list[tuple[list[str], Any]]:
    import typer.main

    from nsightlab.cli import app

    out: list[tuple[list[str], Any]] = []

    def walk(cmd: Any, path: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            if getattr(cmd, "invoke_without_command", False) and path:
                out.append((path, cmd))
            for name, sub in sorted(subs.items()):
                walk(sub, [*path, name])
        else:
            out.append((path, cmd))

    walk(typer.main.get_command(app), [])
    return out


def _is_option(p: Any) -> bool:
    return bool(getattr(p, "opts", None)) and p.param_type_name == "option"


def _invocations(garbage: Path, missing: Path) -> Iterator[tuple[str, list[str]]]:
    """(label, argv) for every command and bad input."""
    words = ["nan", "-1", "", str(garbage), str(missing)]
    for path, cmd in _commands():
        params = [p for p in cmd.params if p.name not in ("help",)]
        args = [p for p in params if not _is_option(p)]
        options = [p for p in params if _is_option(p) and not p.is_flag and not p.hidden]
        fill = ["x" for p in args if p.required]
        has_context = any("--context" in p.opts for p in options)
        yield "unknown option", [*path, "--no-such-option"]
        yield "nothing given", [*path]
        for i, p in enumerate(args):
            for w in [*words, "ffffff", "latest"]:
                argv = [*path, *fill[:i], w, *fill[i + 1 :]]
                yield f"argument {p.name}={w!r}", [*argv, "--", "x"] if p.nargs == -1 and w.startswith("-") else argv
        for p in options:
            opt = max(p.opts, key=len)
            for w in [*words, "1e999"]:
                yield f"{opt} {w!r}", [*path, *fill, opt, w]
        if has_context:
            for ctx in ("no-such-context", PRD_CONTEXT, STG_CONTEXT):
                yield f"--context {ctx}", [*path, *fill, "--context", ctx]


def _check(label: str, argv: list[str], r: Result) -> str | None:
    """What is wrong with the result, or None."""
    if r.code not in DOCUMENTED:
        return f"exit {r.code}"
    if "Traceback" in r.err or "This is a bug" in r.err:
        return "a traceback or a bug report"
    if r.code != 0:
        lines = r.err.strip().splitlines()
        errors = [line for line in lines if line.startswith("error:")]
        if len(errors) != 1 or errors[0] != lines[-1]:
            return f"{len(errors)} error lines, last line {lines[-1:]!r}"
    return None


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim: KubeSim, kubeconfig: Path) -> tuple[Path, Path]:
    """An empty NSIGHTLAB_HOME, the default config, a kubeconfig whose server answers every
    request with an SSO login page, and a folder to run in."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("NSIGHTLAB_HOME", str(home))
    monkeypatch.delenv("NSIGHTLAB_CONFIG", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("COLUMNS", "120")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 4 + b"\n{not: json, nor: csv\n\x00\xff")
    sim.faults.html_page(times=None)
    return garbage, tmp_path / "not-there" / "nothing.py"


def test_every_command_with_bad_input(
    capsys: pytest.CaptureFixture[str], world: tuple[Path, Path], sim: KubeSim
) -> None:
    garbage, missing = world
    cases = list(_invocations(garbage, missing))
    assert len({" ".join(c[1][:2]) for c in cases}) > 15  # the walk found the commands
    wrong = []
    for label, argv in cases:
        r = run_cli(capsys, *argv)
        problem = _check(label, argv, r)
        if problem:
            wrong.append(f"nsightlab {' '.join(argv)}  [{label}]: {problem}: {r.err.strip()[-300:]!r}")
    assert not wrong, f"{len(wrong)} of {len(cases)}:\n" + "\n".join(wrong)
    assert sim.get("pods", "serving", "nsight-lab-user") is None


def test_every_command_with_an_unusable_home(
    capsys: pytest.CaptureFixture[str], world: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_file = tmp_path / "home-file"
    a_file.write_text("not a folder\n")
    wrong = []
    for home in (a_file, a_file / "below"):
        monkeypatch.setenv("NSIGHTLAB_HOME", str(home))
        for path, cmd in _commands():
            fill = ["x" for p in cmd.params if not _is_option(p) and p.required]
            has_context = any(_is_option(p) and "--context" in p.opts for p in cmd.params)
            argv = [*path, *fill, *(["--context", STG_CONTEXT] if has_context else [])]
            r = run_cli(capsys, *argv)
            problem = _check("unusable home", argv, r)
            if problem:
                wrong.append(f"NSIGHTLAB_HOME={home} nsightlab {' '.join(argv)}: {problem}: {r.err.strip()[-300:]!r}")
    assert not wrong, "\n".join(wrong)
    assert a_file.read_text() == "not a folder\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["roofline", "--weights-gb", "nan", "--gpu", "g7e.8xlarge"],
        ["roofline", "--weights-gb", "1e999", "--gpu", "g7e.8xlarge"],
        ["roofline", "--weights-gb", "-16", "--gpu", "g7e.8xlarge"],
        ["create", "--timeout", "nan", "--dry-run"],
        ["sweep", "--local", "--sizes", "nan"],
        ["sweep", "--local", "--iters", "nan"],
        ["--request-timeout", "nan", "runs"],
    ],
    ids=lambda a: " ".join(a),
)
def test_numbers_that_are_not_numbers_are_refused(
    capsys: pytest.CaptureFixture[str], world: tuple[Path, Path], argv: list[str]
) -> None:
    """NaN and infinity pass many a `< 0` check: each is a usage error, not a result."""
    r = run_cli(capsys, *argv)
    assert r.code == 2, r
    assert _check("nan", argv, r) is None, r
    assert r.out == ""
