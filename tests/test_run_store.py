"""A damaged run store: listed and marked, one error line naming the file everywhere else,
and told apart from a run that is still being written."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from clirun import Result, run_cli

from nsightlab.analysis.ncu_result import from_report
from nsightlab.parse import ncu_csv as ncu_parse
from nsightlab.runs import store
from nsightlab.runs.analyze import analyze_path
from nsightlab.runs.store import RunMeta
from nsightlab.runs.sweeps import analyze_record_file
from nsightlab.specs import gpus

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NSYS03 = FIXTURES / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv"
NCU05 = FIXTURES / "ncu" / "05_ncu_csv_page_details_vectorized_elementwise_rtx5090.csv"
T0 = datetime(2026, 5, 4, 10, 0, tzinfo=timezone.utc)
OLD = time.time() - 5 * 3600  # older than store.RUNNING_GRACE


@dataclass
class Store:
    home: Path
    ids: dict[str, str]  # case -> run id

    def folder(self, case: str) -> Path:
        return next(p for p in (self.home / "runs").iterdir() if p.name.endswith(self.ids[case]))


def _record(kind: str, name: str, result: object, when: datetime, **meta: object) -> tuple[store.Run, str]:
    run, run_id = store.new_run(kind, name, now=when)
    result.run_id = run_id  # type: ignore[attr-defined]
    run.write_meta(RunMeta(id=run_id, kind=kind, name=name, created=when, target="this machine", **meta))  # type: ignore[arg-type]
    run.write_result(result)  # type: ignore[arg-type]
    return run, run_id


def _make(base: Path) -> Store:
    """Good runs of each kind, then one damaged run per way a folder can be damaged."""
    home = base / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NSIGHTLAB_HOME", str(home))
        ids: dict[str, str] = {}
        ref = gpus.REFERENCE_SWEEPS["tutorial-rtx-pro-6000"]
        sweep_json = base / "sweep.json"
        sweep_json.write_text(json.dumps(ref.as_sweep_json()))
        sweep = analyze_record_file(sweep_json)
        _, ids["sweep"] = _record("sweep", "float16", sweep, T0, dtype="float16", headline=sweep.headline)
        profile = analyze_path(NSYS03)
        _, ids["profile"] = _record("profile", "dsocr", profile, T0 + timedelta(seconds=1))
        ncu = from_report(ncu_parse.parse_ncu_csv(NCU05.read_text(), source=str(NCU05)), "this machine")
        _, ids["ncu"] = _record("ncu", "lesson1", ncu, T0 + timedelta(seconds=2))
        # the damaged ones, newer than the good ones
        when = T0 + timedelta(minutes=1)
        for i, case in enumerate(
            [
                "shape",
                "garbage",
                "truncated",
                "meta-truncated",
                "no-meta",
                "raw-only-old",
                "raw-only-new",
                "no-result",
                "sweep-shape",
            ]
        ):
            kind = "sweep" if case == "sweep-shape" else "profile"
            run, run_id = _record(
                kind,
                case,
                sweep if kind == "sweep" else profile,
                when + timedelta(seconds=i),
                dtype="float16" if kind == "sweep" else None,
            )
            ids[case] = run_id
            result, meta = run.path / "result.json", run.path / "meta.json"
            if case in ("shape", "sweep-shape"):
                result.write_text(json.dumps({"kind": kind, "kernels": 5}))
            elif case == "garbage":
                result.write_bytes(b"\x00\xff\xfegarbage")
            elif case == "truncated":
                result.write_bytes(result.read_bytes()[:300])
            elif case == "meta-truncated":
                meta.write_bytes(meta.read_bytes()[:40])
            elif case == "no-meta":
                meta.unlink()
            elif case.startswith("raw-only"):
                meta.unlink()
                result.unlink()
                (run.raw / "ncu.csv").write_text("partial")
                if case == "raw-only-old":
                    for p in (run.raw / "ncu.csv", run.raw, run.path):
                        os.utime(p, (OLD, OLD))
            elif case == "no-result":
                result.unlink()
    return Store(home, ids)


DAMAGED = {  # case -> (the file named, what the problem says)
    "shape": ("result.json", "not a profile result"),
    "sweep-shape": ("result.json", "not a sweep result"),
    "garbage": ("result.json", "not UTF-8"),
    "truncated": ("result.json", "cut short"),
    "meta-truncated": ("meta.json", "cut short"),
    "no-meta": ("", "no meta.json"),
    "raw-only-old": ("", "no meta.json"),
}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return _make(tmp_path_factory.mktemp("damaged"))


@pytest.fixture
def st(made: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    home = tmp_path / "home"
    shutil.copytree(made.home, home)
    old = next(p for p in (home / "runs").iterdir() if p.name.endswith(made.ids["raw-only-old"]))
    for p in (old / "raw" / "ncu.csv", old / "raw", old):  # copytree keeps the times; to be sure
        os.utime(p, (OLD, OLD))
    monkeypatch.setenv("NSIGHTLAB_HOME", str(home))
    monkeypatch.delenv("NSIGHTLAB_CONFIG", raising=False)
    monkeypatch.setenv("COLUMNS", "250")
    return Store(home, made.ids)


def _one_line(r: Result, *needles: str) -> None:
    assert r.code == 2, r
    assert r.err.startswith("error: ") and r.err.count("\n") == 1, r
    assert "Traceback" not in r.err and "This is a bug" not in r.err and "pydantic" not in r.err, r
    for needle in needles:
        assert needle in r.err, (needle, r)


def test_runs_lists_damaged_runs_marked_and_exits_0(capsys: pytest.CaptureFixture[str], st: Store) -> None:
    r = run_cli(capsys, "runs", "--json")
    assert r.code == 0, r
    by_id = {x["id"]: x for x in json.loads(r.out)["runs"]}
    assert set(by_id) == set(st.ids.values())  # every folder is listed, damaged or not
    for case in ("sweep", "profile", "ncu"):
        assert by_id[st.ids[case]]["complete"] is True and by_id[st.ids[case]]["damaged"] is False
    for case, (file, what) in DAMAGED.items():
        x = by_id[st.ids[case]]
        assert x["damaged"] is True and x["complete"] is False, x
        assert what in x["problem"] and x["problem"].startswith(file), x
    # what the folder's name says, when meta.json cannot tell
    assert (
        by_id[st.ids["raw-only-old"]]["kind"] == "profile" and by_id[st.ids["raw-only-old"]]["name"] == "raw-only-old"
    )
    # not damaged: a run still being written, and one that stopped before its result
    new, unfinished = by_id[st.ids["raw-only-new"]], by_id[st.ids["no-result"]]
    assert new["damaged"] is False and new["complete"] is False and "still being written" in new["problem"]
    assert (
        unfinished["damaged"] is False and unfinished["complete"] is False and unfinished["problem"] == "did not finish"
    )

    human = run_cli(capsys, "runs")
    assert human.code == 0, human
    rows = {line.split()[0]: line for line in human.out.splitlines()[1:]}
    for case, (file, _what) in DAMAGED.items():
        assert f"(damaged: {file}" in rows[st.ids[case]], rows[st.ids[case]]
    assert "(did not finish)" in rows[st.ids["no-result"]]
    assert "still being written" in rows[st.ids["raw-only-new"]] and "damaged" not in rows[st.ids["raw-only-new"]]


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_show_analyze_and_report_name_the_damaged_file(
    capsys: pytest.CaptureFixture[str], st: Store, case: str
) -> None:
    file, what = DAMAGED[case]
    folder = st.folder(case)
    named = str(folder / file) if file else str(folder)
    run_id = st.ids[case]
    _one_line(run_cli(capsys, "runs", "show", run_id), named, what, f"runs rm {run_id}")
    _one_line(run_cli(capsys, "analyze", str(folder)), named, what)
    _one_line(run_cli(capsys, "report", run_id, "--terminal"), named, what)


def test_a_run_still_being_written_is_not_damaged(capsys: pytest.CaptureFixture[str], st: Store) -> None:
    new, unfinished = st.ids["raw-only-new"], st.ids["no-result"]
    _one_line(run_cli(capsys, "runs", "show", new), "still being written")
    _one_line(run_cli(capsys, "analyze", str(st.folder("raw-only-new"))), "still being written")
    shown = run_cli(capsys, "runs", "show", unfinished)
    assert shown.code == 0 and "the run did not finish" in shown.out, shown
    _one_line(run_cli(capsys, "analyze", str(st.folder("no-result"))), "did not finish")
    r = run_cli(capsys, "report", unfinished, "--terminal")
    assert r.code == 2 and "none of the chosen runs has a result" in r.err and "did not finish" in r.err


def test_report_leaves_damaged_runs_out_with_a_note(capsys: pytest.CaptureFixture[str], st: Store) -> None:
    # by default: the latest complete run of each kind, the newer damaged ones named
    doc = json.loads(run_cli(capsys, "report", "--terminal", "--json").out)
    assert {x["id"] for x in doc["runs"]} == {st.ids["sweep"], st.ids["profile"], st.ids["ncu"]}
    notes = " ".join(doc["notes"])
    for case in DAMAGED:
        assert f"left out run {st.ids[case]}: it is damaged" in notes, (case, notes)
    # runs given by id: the damaged one left out, the others reported
    r = run_cli(capsys, "report", st.ids["profile"], st.ids["garbage"], "--terminal", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert [x["id"] for x in doc["runs"]] == [st.ids["profile"]]
    assert any(st.ids["garbage"] in n and "result.json: not UTF-8" in n for n in doc["notes"])


def test_roofline_and_compare_pass_over_a_damaged_sweep(capsys: pytest.CaptureFixture[str], st: Store) -> None:
    r = run_cli(capsys, "roofline", "--weights-gb", "16", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert any(x["run_id"] == st.ids["sweep"] for x in doc["lines"])
    assert any(st.ids["sweep-shape"] in n and "damaged" in n for n in doc["notes"])
    _one_line(
        run_cli(capsys, "roofline", "--weights-gb", "16", "--run", st.ids["sweep-shape"]),
        "result.json",
        "not a sweep result",
    )


def test_a_damaged_run_can_be_removed(capsys: pytest.CaptureFixture[str], st: Store) -> None:
    gone = [st.ids["garbage"], st.ids["raw-only-old"], st.ids["meta-truncated"]]
    r = run_cli(capsys, "runs", "rm", *gone, "--yes", "--json")
    assert r.code == 0, r
    assert [x["id"] for x in json.loads(r.out)["removed"]] == gone
    left = {x["id"] for x in json.loads(run_cli(capsys, "runs", "--json").out)["runs"]}
    assert left == set(st.ids.values()) - set(gone)


def test_latest_is_the_last_run_made_even_within_one_second(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder's name holds only the second: of two runs begun in one second, "latest" is the
    one made last (meta.json's created), not the one whose kind or name sorts last."""
    monkeypatch.setenv("NSIGHTLAB_HOME", str(tmp_path))
    second = datetime(2026, 12, 3, 9, 0, 0, tzinfo=timezone.utc)
    made = []
    for kind, name, micro in (("tokenizer", "bpe", 1), ("pack", "colocate", 900_000)):  # "tokenizer" sorts last
        run, run_id = store.new_run(kind, name, now=second)
        run.write_meta(
            RunMeta(id=run_id, kind=kind, name=name, created=second.replace(microsecond=micro), target="this machine")
        )
        made.append(run.id)
    assert [r.id for r in store.all_runs()] == made
    assert store.resolve("latest").id == made[-1]


@pytest.mark.parametrize("swap", ["fifo", "dev-zero"])
def test_a_run_file_that_is_no_regular_file_is_damaged_not_read(
    capsys: pytest.CaptureFixture[str], st: Store, swap: str
) -> None:
    """result.json swapped for a FIFO nobody writes (the read blocked forever) or a link to
    /dev/zero (the read never ended): damaged, named, and nothing read from it."""
    folder = st.folder("sweep")
    result = folder / "result.json"
    result.unlink()
    if swap == "fifo":
        os.mkfifo(result)
    else:
        result.symlink_to("/dev/zero")
    what = "FIFO (named pipe), not a regular file" if swap == "fifo" else "character device, not a regular file"
    run_id = st.ids["sweep"]
    _one_line(run_cli(capsys, "runs", "show", run_id), str(result), what)
    _one_line(run_cli(capsys, "analyze", str(folder)), str(result), what)
    listed = {x["id"]: x for x in json.loads(run_cli(capsys, "runs", "--json").out)["runs"]}
    assert listed[run_id]["damaged"] is True and what in listed[run_id]["problem"], listed[run_id]
