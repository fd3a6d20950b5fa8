"""`nsightlab runs`: list, show, rm over a store recorded by the real commands."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run_cli
from reportstore import Recorded, copy_home, recorded

pytest.importorskip("torch")

LINE_KEYS = {
    "id", "folder", "kind", "name", "created", "where", "target", "context", "node", "instance_type",
    "gpu", "device", "device_type", "dtype", "headline", "complete", "session_uid", "impl", "damaged", "problem",
}  # fmt: skip


@pytest.fixture
def rec(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Recorded:
    return copy_home(recorded(tmp_path_factory), tmp_path, monkeypatch)


def _ids(home: Path) -> set[str]:
    return {p.name.rsplit("-", 1)[-1] for p in (home / "runs").iterdir()}


def test_list_json_shape(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    r = run_cli(capsys, "runs", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["runs_dir"] == str(rec.home / "runs")
    assert [x["id"] for x in doc["runs"]][:3] == [rec.cpu_f16, rec.cpu_f32, rec.cpu_profile]  # oldest first
    assert {x["id"] for x in doc["runs"]} == rec.all_ids
    for x in doc["runs"]:
        assert set(x) == LINE_KEYS
        assert x["complete"] is True and x["damaged"] is False and x["problem"] is None
    by_id = {x["id"]: x for x in doc["runs"]}
    cpu = by_id[rec.cpu_f32]
    assert cpu["where"] == "local" and cpu["kind"] == "sweep" and cpu["dtype"] == "float32"
    assert cpu["device_type"] == "cpu" and cpu["device"].startswith("cpu")
    ref = by_id[rec.ref_sweep]
    assert ref["where"] == "stg-online-use1" and ref["node"] == "ip-10-0-3-17.ec2.internal"
    assert ref["device"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert ref["headline"].startswith("DRAM 1.46 TB/s")
    assert by_id[rec.ncu05]["kind"] == "ncu" and by_id[rec.ncu05]["device_type"] == "cuda"


def test_list_human_and_kind_filter(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    r = run_cli(capsys, "runs", "list", "--kind", "sweep")
    assert r.code == 0, r
    header, *rows = r.out.splitlines()
    assert header.split()[:5] == ["ID", "KIND", "NAME", "WHEN", "(UTC)"]
    assert {row.split()[0] for row in rows} == {rec.cpu_f16, rec.cpu_f32, rec.ref_sweep}
    assert all(row.split()[1] == "sweep" for row in rows)
    same = run_cli(capsys, "runs", "--kind", "sweep")
    assert same.out == r.out


def test_empty_store(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NSIGHTLAB_HOME", str(tmp_path / "empty"))
    r = run_cli(capsys, "runs")
    assert r.code == 0 and "no runs yet" in r.out
    assert json.loads(run_cli(capsys, "runs", "--json").out)["runs"] == []


def test_show_by_prefix(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    prefix = _shortest_prefix(rec, rec.ref_sweep)
    assert len(prefix) < len(rec.ref_sweep) or prefix == rec.ref_sweep
    r = run_cli(capsys, "runs", "show", prefix, "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert set(doc) == {"run", "path", "meta", "files", "result"}
    assert doc["run"]["id"] == rec.ref_sweep == doc["meta"]["id"] == doc["result"]["run_id"]
    files = {f["path"]: f["bytes"] for f in doc["files"]}
    assert {"meta.json", "result.json", "raw/sweep.json"} <= set(files)
    assert files["result.json"] == (Path(doc["path"]) / "result.json").stat().st_size
    assert doc["result"]["kind"] == "sweep" and doc["result"]["summary"]["dram_tbps"] == pytest.approx(1.46, abs=0.01)

    human = run_cli(capsys, "runs", "show", rec.ref_sweep)
    assert human.code == 0, human
    assert f"Run {rec.ref_sweep}: sweep float16" in human.out
    assert "node: ip-10-0-3-17.ec2.internal" in human.out and "raw/sweep.json" in human.out
    # the stored result, drawn as `sweep` draws it
    assert "Bandwidth sweep" in human.out and "REF TB/S" in human.out and "DRAM plateau: 1.46 TB/s" in human.out


def _shortest_prefix(rec: Recorded, run_id: str) -> str:
    """The shortest prefix of the id that finds only this run (ids and folder names count)."""
    folders = [p.name for p in (rec.home / "runs").iterdir()]
    for n in range(1, len(run_id) + 1):
        p = run_id[:n]
        if sum(1 for f in folders if f.rsplit("-", 1)[-1].startswith(p) or f.startswith(p)) == 1:
            return p
    return run_id


def test_show_latest_and_folder_prefix(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    latest = json.loads(run_cli(capsys, "runs", "show", "latest", "--json").out)
    assert latest["run"]["id"] == rec.ncu05
    folder = latest["run"]["folder"]
    by_folder = json.loads(run_cli(capsys, "runs", "show", folder[:-3], "--json").out)
    assert by_folder["run"]["id"] == rec.ncu05
    human = run_cli(capsys, "runs", "show", rec.ncu05)
    assert "Nsight Compute on" in human.out and "Verdict" in human.out


def test_ambiguous_prefix_names_candidates(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    # every folder starts with the UTC time it was made: its year matches them all
    folders = sorted(p.name for p in (rec.home / "runs").iterdir())
    common = folders[0][:8]  # the date: longer than an id, so a folder name's prefix
    assert all(f.startswith(common) for f in folders)
    r = run_cli(capsys, "runs", "show", common)
    assert r.code == 2, r
    assert f"'{common}' matches {len(folders)} runs" in r.err
    named = [i for i in rec.all_ids if i in r.err]
    assert len(named) >= min(6, len(folders))  # the candidates are named
    assert "more characters" in r.err


@pytest.mark.parametrize("which", ["first", "year"])
def test_a_short_prefix_matches_ids_only(capsys: pytest.CaptureFixture[str], rec: Recorded, which: str) -> None:
    """`runs show 2`: the runs whose id starts with 2, never every folder of 2026."""
    year = sorted(p.name for p in (rec.home / "runs").iterdir())[0][:1]
    ref = sorted(rec.all_ids)[0][:1] if which == "first" else year
    wanted = sorted(i for i in rec.all_ids if i.startswith(ref))
    r = run_cli(capsys, "runs", "show", ref, "--json")
    if not wanted:
        assert r.code == 2 and r.err.startswith(f"error: no run matches '{ref}'"), r
    elif len(wanted) == 1:
        assert r.code == 0 and json.loads(r.out)["run"]["id"] == wanted[0], r
    else:
        assert r.code == 2 and f"'{ref}' matches {len(wanted)} runs" in r.err, r
        assert {i for i in rec.all_ids if i in r.err} == set(wanted[:6])


def test_unknown_id(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    r = run_cli(capsys, "runs", "show", "zzzz")
    assert r.code == 2 and r.err.startswith("error: no run matches 'zzzz'"), r
    assert run_cli(capsys, "runs", "rm", "zzzz", "--yes").code == 2


def test_rm_by_prefixes(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    r = run_cli(capsys, "runs", "rm", rec.cpu_f16, rec.kern03, rec.cpu_f16, "--yes", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert [x["id"] for x in doc["removed"]] == [rec.cpu_f16, rec.kern03]  # duplicates once
    assert set(doc["removed"][0]) == LINE_KEYS
    assert _ids(rec.home) == rec.all_ids - {rec.cpu_f16, rec.kern03}
    listed = {x["id"] for x in json.loads(run_cli(capsys, "runs", "--json").out)["runs"]}
    assert listed == rec.all_ids - {rec.cpu_f16, rec.kern03}
    human = run_cli(capsys, "runs", "rm", rec.ncu05, "--yes")
    assert human.code == 0 and f"removed run {rec.ncu05} (ncu lesson1" in human.out


def test_rm_checks_every_id_first(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    r = run_cli(capsys, "runs", "rm", rec.cpu_f16, "nope42", "--yes")
    assert r.code == 2 and "no run matches 'nope42'" in r.err
    assert _ids(rec.home) == rec.all_ids  # nothing removed


def test_rm_refuses_a_folder_outside_the_store(
    capsys: pytest.CaptureFixture[str], rec: Recorded, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    src = next((rec.home / "runs").iterdir())
    (outside / "meta.json").write_text((src / "meta.json").read_text())
    r = run_cli(capsys, "runs", "rm", str(outside), "--yes")
    assert r.code == 2 and "not in the run store" in r.err
    assert (outside / "meta.json").is_file()


def _rm_on_a_terminal(home: Path, run_id: str, answer: bytes) -> tuple[int, str]:
    """`nsightlab runs rm ID` with stdin on a pseudo-terminal, answering the prompt."""
    main_fd, child_fd = pty.openpty()
    env = {**os.environ, "NSIGHTLAB_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from nsightlab.cli import main; main()", "runs", "rm", run_id],
        stdin=child_fd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    os.close(child_fd)
    os.write(main_fd, answer)
    out, err = proc.communicate(timeout=60)
    os.close(main_fd)
    return proc.returncode, err.decode() + out.decode()


def test_rm_asks_on_a_terminal(rec: Recorded) -> None:
    code, text = _rm_on_a_terminal(rec.home, rec.cpu_f32, b"n\n")
    assert code == 130 and "Remove 1 run?" in text and "nothing was removed" in text
    assert rec.cpu_f32 in _ids(rec.home)
    code, text = _rm_on_a_terminal(rec.home, rec.cpu_f32, b"y\n")
    assert code == 0 and f"removed run {rec.cpu_f32}" in text
    assert rec.cpu_f32 not in _ids(rec.home)
