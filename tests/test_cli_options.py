"""One meaning for each short option across every command (kubectl's where it has one:
`-n` the namespace, `-c` a container, and `--context` without a short form); the
program's own options after the command too; shell completion."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from cliwalk import commands, meaning, short_names
from conftest import STG_CONTEXT
from labenv import NS, POD, nsl

ROOT = Path(__file__).resolve().parents[1]

# kubectl's meaning of the short options it shares with nsightlab
KUBECTL = {"-n": "--namespace", "-c": "--container", "-A": "--all-namespaces", "-f": "--follow", "-h": "--help"}


def _short_options() -> dict[str, dict[str, list[str]]]:
    """short option -> its meaning -> the commands where it has that meaning."""
    found: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for command in commands():
        for option in command.options():
            for short in short_names(option):
                found[short][meaning(option)].append(command.name)
    return found


def test_the_walk_finds_every_command() -> None:
    names = {c.name for c in commands()}
    assert {"nsightlab", "nsightlab ncu", "nsightlab logs", "nsightlab explore pods", "nsightlab fleet sweep"} <= names


def test_each_short_option_means_one_thing_everywhere() -> None:
    clashes = [
        f"{short}: " + "; ".join(f"{what} in {', '.join(where)}" for what, where in sorted(meanings.items()))
        for short, meanings in sorted(_short_options().items())
        if len(meanings) > 1
    ]
    assert clashes == []


def test_no_command_reuses_a_short_form_of_the_program_s_options() -> None:
    program, *rest = commands()
    assert program.path == ()
    own = {short: meaning(o) for o in program.options() for short in short_names(o)}
    reused = [
        f"{c.name}: {short} is {meaning(o)}, the program's {own[short]}"
        for c in rest
        for o in c.options()
        for short in short_names(o)
        if short in own and meaning(o) != own[short]
    ]
    assert reused == []


def test_short_options_mean_what_they_mean_in_kubectl() -> None:
    found = _short_options()
    differ = {
        short: sorted(found[short])
        for short, theirs in KUBECTL.items()
        if short in found and set(found[short]) != {theirs}
    }
    assert differ == {}
    context_shorts = {
        c.name: short_names(o) for c in commands() for o in c.options() if meaning(o) == "--context" and short_names(o)
    }
    assert context_shorts == {}  # kubectl's --context has none
    # wherever there is a namespace option, -n is its short form
    assert all("-n" in short_names(o) for c in commands() for o in c.options() if meaning(o) == "--namespace")


def test_ncu_dash_c_is_not_a_context(capsys: pytest.CaptureFixture[str], nsl_home: Path) -> None:
    r = nsl(capsys, "ncu", "lesson1", "-c", "2")
    assert r.code == 2, r
    assert r.err.strip().splitlines()[-1].startswith("error: nsightlab ncu has no option -c"), r
    assert "context" not in r.err


def test_logs_dash_c_is_the_container(capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: Any) -> None:
    sim.append_log(NS, POD, "loading model\nready on :8000\n")
    r = nsl(capsys, "logs", "-c", "lab", "--tail", "1")
    assert r.code == 0, r
    assert r.out == "ready on :8000\n"
    bad = nsl(capsys, "logs", "-c", "sidecar")
    assert bad.code == 2 and bad.err.strip().splitlines()[-1].endswith(
        "has no container 'sidecar'. Its containers: lab."
    )


# ---------------------------------------------------------------------------- the program's options after the command


def test_the_program_s_options_after_the_command(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nothere.yaml"
    before = nsl(capsys, "--config", str(missing), "config")
    after = nsl(capsys, "config", "--config", str(missing))
    assert before.code == after.code == 2, (before, after)
    assert after.err == before.err and str(missing) in after.err
    assert nsl(capsys, "runs", "list", "--request-timeout", "5").code == 0
    bad = nsl(capsys, "status", "--request-timeout", "nan")
    assert bad.code == 2, bad
    assert "--request-timeout: 'nan' is not a duration" in bad.err
    # after the command, and hidden from its help: the program's help lists them once
    assert "--request-timeout" not in nsl(capsys, "status", "--help").out
    assert "--request-timeout" in nsl(capsys, "--help").out


def test_request_timeout_after_the_command_is_the_one_used(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, sim: Any, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    sim.faults.stall(times=None)  # the server stops answering: the timeout given decides
    node = "ip-10-0-19-150.ec2.internal"
    r = nsl(capsys, "explore", "node", node, "--context", STG_CONTEXT, "--request-timeout", "1s")
    assert r.code == 4, r
    assert f"did not answer within 1 s (--request-timeout) while trying to get node {node}" in r.err


def test_traceback_after_the_command_is_accepted(capsys: pytest.CaptureFixture[str], nsl_home: Path) -> None:
    r = nsl(capsys, "runs", "list", "--traceback")
    assert r.code == 0, r


# ---------------------------------------------------------------------------- shell completion


def _nsightlab(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nsightlab", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
        timeout=120,
    )


def test_show_completion_prints_the_bash_script() -> None:
    done = _nsightlab("--show-completion", "bash")
    assert done.returncode == 0, done.stderr
    assert "complete -o default -F _nsightlab_completion nsightlab" in done.stdout
    assert "_NSIGHTLAB_COMPLETE=complete_bash" in done.stdout
    bad = _nsightlab("--show-completion", "tcsh")
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "error: --show-completion 'tcsh' is not a shell nsightlab completes (bash, zsh, fish, powershell, pwsh); "
        "see `nsightlab --help`"
    )


def test_completion_protocol_completes_commands_and_options() -> None:
    words = _nsightlab(env={"_NSIGHTLAB_COMPLETE": "complete_bash", "COMP_WORDS": "nsightlab pro", "COMP_CWORD": "1"})
    assert words.returncode == 0, words.stderr
    assert words.stdout.split() == ["profile"]
    sub = _nsightlab(env={"_NSIGHTLAB_COMPLETE": "complete_bash", "COMP_WORDS": "nsightlab fleet s", "COMP_CWORD": "2"})
    assert sub.stdout.split() == ["status", "sweep"] or sorted(sub.stdout.split()) == ["status", "sweep"]
    opts = _nsightlab(
        env={"_NSIGHTLAB_COMPLETE": "complete_bash", "COMP_WORDS": "nsightlab logs --c", "COMP_CWORD": "2"}
    )
    assert sorted(opts.stdout.split()) == ["--container", "--context"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_with_the_installed_script(tmp_path: Path) -> None:
    """--install-completion bash writes the script where Typer puts it and bash, sourcing
    it, completes a command name by asking nsightlab."""
    done = _nsightlab("--install-completion", "bash", env={"HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    script = tmp_path / ".bash_completions" / "nsightlab.sh"
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()
    assert "bash completion installed in" in done.stderr
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "nsightlab"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m nsightlab "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    session = (
        f"source '{script}'\n"
        "COMP_WORDS=(nsightlab expl); COMP_CWORD=1\n"
        "_nsightlab_completion nsightlab\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    out = subprocess.run(["bash", "--norc", "-c", session], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["explore"]
