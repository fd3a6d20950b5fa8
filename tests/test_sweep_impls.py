"""`nsightlab sweep --impl torch,triton`: a Triton kernel of the same op beside torch's.

End to end on this machine's CPU, where Triton runs in its interpreter (correctness
only); the verdicts and lessons on curves whose numbers are known: recorded CPU runs
(tests/data) and the tutorial's published GPU curve, rerun as torch's two-kernel
scale-add would time it.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli

from nsightlab.analysis import sweep_impls, sweep_result
from nsightlab.cli import main
from nsightlab.parse.records.sweep_record import SweepRecord
from nsightlab.present import sweepview
from nsightlab.present.console import Env
from nsightlab.runs import sweeps
from nsightlab.specs.gpus import REFERENCE_SWEEPS

DATA = Path(__file__).parent / "data"
TUTORIAL = REFERENCE_SWEEPS["tutorial-rtx-pro-6000"]
SIZES = ("--sizes", "10,12", "--iters", "2", "--warmup", "1")


# --- end to end, in Triton's interpreter ---


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One `sweep --impl torch,triton --json` on this CPU, its store kept for the tests."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    home = tmp_path_factory.mktemp("impls") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NSIGHTLAB_HOME", str(home))
        mp.delenv("NSIGHTLAB_CONFIG", raising=False)
        mp.delenv("TRITON_INTERPRET", raising=False)  # nsightlab must set it itself
        out, err = io.StringIO(), io.StringIO()
        code = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(["sweep", "--local", "--device", "cpu", *SIZES, "--impl", "torch,triton", "--json"])
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
    assert code == 0, err.getvalue()[-3000:]
    return {"home": home, "doc": json.loads(out.getvalue()), "err": err.getvalue()}


@pytest.mark.torch
def test_torch_and_triton_side_by_side(pair: dict[str, Any]) -> None:
    doc = pair["doc"]
    assert doc["kind"] == "sweep-impls" and doc["op"] == "scale" and doc["dtype"] == "float32"
    t, k = doc["runs"]
    assert (t["impl"], k["impl"]) == ("torch", "triton")
    assert t["kind"] == k["kind"] == "sweep"  # each a normal sweep document
    # Triton had no GPU here: nsightlab ran it in the interpreter, and every part says so
    assert k["script_argv"][:2] == ["env", "TRITON_INTERPRET=1"] and "TRITON_INTERPRET=1" not in t["script_argv"]
    assert "it runs in its interpreter (TRITON_INTERPRET=1)" in pair["err"]
    assert k["interpreted"] is True and t["interpreted"] is False
    assert all(
        row["regime"] == "interpreted" and row["interpreted"] is True and row["pct_of_dram_spec"] is None
        for row in k["rows"]
    )
    assert all(row["interpreted"] is False for row in t["rows"])
    assert all(row["interpreted"] is True and row["max_abs_error"] == 0.0 for row in k["record"]["rows"])
    ks = k["summary"]
    assert ks["dram_tbps"] is None and ks["cache_peak_tbps"] is None and ks["launch_floor_us"] is None
    assert ks["plateau_status"] == "interpreted" and any("interpreter" in n for n in ks["notes"])
    assert k["headline"] == "triton scale: interpreted: correctness only"
    assert "No bandwidth can be read from this run" in ks["lesson"][0] and ks["lesson"][0].endswith(
        "Every size matched torch's result exactly."
    )
    # the pairs, size by size; ratio = Triton's time / torch's
    assert [p["log2"] for p in doc["pairs"]] == [10, 12]
    for p, rt, rk in zip(doc["pairs"], t["rows"], k["rows"], strict=True):
        assert {"log2", "us_torch", "us_triton", "tbps_torch", "tbps_triton", "ratio"} <= set(p)
        assert (p["us_torch"], p["us_triton"]) == (rt["us"], rk["us"])
        assert (p["tbps_torch"], p["tbps_triton"]) == (rt["tbps"], rk["tbps"])
        assert p["ratio"] == pytest.approx(rk["seconds_per_call"] / rt["seconds_per_call"])
        assert (p["regime_torch"], p["regime_triton"]) == (rt["regime"], "interpreted")
    assert doc["verdict"] == "interpreted: correctness only" and doc["interpreted"] is True
    assert doc["plateau_ratio"] is None
    assert doc["lesson"][0] == "Triton's scale matched torch's at every size (no difference at all; tolerance exact)."
    assert not any("TB/s" in line for line in doc["lesson"])  # no bandwidth claim


@pytest.mark.torch
def test_the_pair_is_stored_as_two_sweep_runs(
    capsys: pytest.CaptureFixture[str], pair: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSIGHTLAB_HOME", str(pair["home"]))
    t, k = pair["doc"]["runs"]
    listing = json.loads(run_cli(capsys, "runs", "--json").out)["runs"]
    by_id = {x["id"]: x for x in listing}
    assert set(by_id) == {t["run_id"], k["run_id"]}
    assert (by_id[t["run_id"]]["impl"], by_id[t["run_id"]]["name"]) == ("torch", "float32")
    assert (by_id[k["run_id"]]["impl"], by_id[k["run_id"]]["name"]) == ("triton", "float32-triton")
    human = run_cli(capsys, "runs").out
    assert f"{k['run_id']}  sweep  float32-triton" in human and "interpreted: correctness only" in human
    meta = json.loads((Path(k["run_dir"]) / "meta.json").read_text())
    assert meta["command"][:6] == ["nsightlab", "sweep", "--dtype", "float32", "--impl", "triton"]
    assert meta["versions"]["triton"]


@pytest.mark.torch
def test_the_pair_rendered(capsys: pytest.CaptureFixture[str], pair: dict[str, Any]) -> None:
    impls = sweep_impls.SweepImpls.model_validate(pair["doc"])
    capsys.readouterr()
    sweepview.sweep_impls(Env.create(width=220, stdin_tty=False), impls)
    out = capsys.readouterr().out
    t, k = impls.runs
    assert out.startswith(
        f"torch vs Triton: float32 scale on {t.summary.device_name}, this machine (torch run {t.run_id}, triton "
        f"run {k.run_id})"
    )
    header = out.splitlines()[2].split()
    assert (
        header[:2] == ["SIZE", "TENSOR"] and "TRITON/TORCH" in header and "TB/S" not in header
    )  # interpreted: no TB/s
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("2^")}
    assert set(rows) == {"2^10", "2^12"} and rows["2^10"][-3] == "interpreted"
    assert "- verdict: interpreted: correctness only (Triton ran in its interpreter, with no GPU" in out
    assert f"stored as runs {t.run_id} (torch), {k.run_id} (triton)" in out


@pytest.mark.torch
def test_the_report_draws_torch_and_names_the_interpreted_run(
    capsys: pytest.CaptureFixture[str], pair: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    from nsightlab.present import sweepfigure

    monkeypatch.setenv("NSIGHTLAB_HOME", str(pair["home"]))
    t, k = pair["doc"]["runs"]
    r = run_cli(capsys, "report", "--out", str(tmp_path / "r"), "--json")
    assert r.code == 0, r
    files = json.loads(r.out)
    assert set(files["runs"]) == {t["run_id"], k["run_id"]}  # the latest of each name: both
    md = (tmp_path / "r" / "report.md").read_text()
    assert f"### torch vs Triton: float32 scale on {t['summary']['device_name']}" in md
    assert "verdict: interpreted: correctness only" in md
    (fig,) = [f for f in files["figures"] if f["key"] == "sweep"]
    assert "float32 triton (run " in fig["caption"] and "correctness only (no bandwidth)" in fig["caption"]
    plot = sweepfigure.sweep_figure([sweep_result.SweepResult.model_validate(x) for x in (t, k)])
    # the interpreter's TB/s are no bandwidth: torch's curve alone, the Triton run named in a note
    series = [a for a in plot.figure.axes[0].get_lines() if (a.get_gid() or "").startswith("series-")]
    assert [a.get_label().replace("\n", " ").split(", run")[0] for a in series] == [
        f"float32, cpu ({t['summary']['device_name']})"
    ]
    note = plot.figure._supxlabel.get_text().replace("\n", " ")
    assert f"float32 triton, cpu ({k['summary']['device_name']}), run {k['run_id']}: Triton's interpreter" in note


# --- verdicts and lessons from numbers that are known ---


def _tutorial_as(impl: str, op: str, factor: float, floor_us: float | None = None) -> sweep_result.SweepResult:
    """The tutorial's float16 curve as `impl`'s `op` would run on that GPU: every time x
    `factor` (torch's scale-add moves twice the bytes in two kernels: 2.0), and no size
    faster than `floor_us` when given (a slower launcher)."""
    doc = TUTORIAL.as_sweep_json()
    kernels = 2 if (impl, op) == ("torch", "scale-add") else 1
    doc["impl"], doc["op"], doc["kernels_per_call"] = impl, op, kernels
    for row in doc["rows"]:
        row["bytes_per_call"] = 2 * kernels * row["elements"] * 2
        row["seconds_per_call"] *= factor
        if floor_us is not None:  # a floor under every size: time = max(floor, data time)
            row["seconds_per_call"] = max(row["seconds_per_call"], floor_us * 1e-6)
    result = sweep_result.build_result(SweepRecord.model_validate(doc), target="test")
    result.run_id = f"{impl[:3]}{op[:3]}"
    return result


def test_fused_scale_add_takes_half_the_time_at_the_plateau() -> None:
    torch_add = _tutorial_as("torch", "scale-add", 2.0)  # 4 B per element at the same TB/s
    fused = _tutorial_as("triton", "scale-add", 1.0, floor_us=9.0)  # one launch, Python's launcher
    impls = sweep_impls.compare_impls(fused, torch_add)  # either order
    assert (
        impls.torch.run_id == torch_add.run_id
        and impls.torch.bytes_per_element == 8
        and impls.triton.bytes_per_element == 4
    )
    assert impls.dram_sizes == [28, 30] and impls.dram_time_ratio == pytest.approx(0.5)
    assert [p.ratio for p in impls.pairs if p.log2 >= 28] == pytest.approx([0.5, 0.5])
    assert (
        impls.verdict == "same plateau"
        and impls.reason == "the same DRAM plateau within 5% (torch 1.46 TB/s, Triton 1.46 TB/s)"
    )
    dram, launch = impls.lesson[0], impls.lesson[1]
    assert dram.startswith("At the DRAM plateau (2^28, 2^30) the fused Triton kernel took 0.500x torch's time per call")
    assert "moves 4 B per element" in dram and "move 8 B" in dram and "Half the bytes, half the time" in dram
    # at the floor: torch's two launches (2 x 5.70 us) against Triton's one of 9.00 us
    assert launch == (
        "At the launch floor (2^16, 2^20, 2^22) torch pays two launches per call (torch 11.4 us) against the fused "
        "kernel's one (Triton 9.00 us): there the number of launches, not the bytes, sets the time."
    )
    # a slower launcher than two of torch's: said so, from the same numbers
    slow = sweep_impls.compare_impls(torch_add, _tutorial_as("triton", "scale-add", 1.0, floor_us=20.0))
    assert "Triton's Python launch path costs more than two of torch's C++ launches" in slow.lesson[1]


def test_the_same_plateau_and_the_launch_floor_of_each() -> None:
    impls = sweep_impls.compare_impls(
        _tutorial_as("torch", "scale", 1.0), _tutorial_as("triton", "scale", 1.0, floor_us=20.0)
    )
    assert impls.verdict == "same plateau" and impls.plateau_ratio == pytest.approx(1.0)
    assert impls.torch.launch_floor_us == pytest.approx(5.7) and impls.triton.launch_floor_us == pytest.approx(20.0)
    assert any(
        line.startswith("Both reach the same DRAM plateau (torch 1.46 TB/s, Triton 1.46 TB/s)") for line in impls.lesson
    )
    floor = next(line for line in impls.lesson if line.startswith("Launch floor:"))
    assert floor.startswith(
        "Launch floor: torch 5.70 us, Triton 20.0 us. Triton's Python launch path costs 14.3 us more per call "
        "(3.51x torch's)"
    )


def test_which_one_falls_short_and_where() -> None:
    t = _tutorial_as("torch", "scale", 1.0)
    doc = TUTORIAL.as_sweep_json()
    doc["impl"] = "triton"
    for row in doc["rows"]:
        row["seconds_per_call"] *= {28: 1.25, 30: 1.25}.get(row["log2"], 1.0)
    k = sweep_result.build_result(SweepRecord.model_validate(doc), target="test")
    impls = sweep_impls.compare_impls(t, k)
    assert impls.verdict == "triton falls short" and impls.plateau_ratio == pytest.approx(0.8)
    assert (
        impls.reason == "triton's DRAM plateau is 20% below torch's at 2^28, 2^30 (torch 1.46 TB/s, Triton 1.17 TB/s)"
    )


def test_a_comparison_of_runs_never_stored_names_no_run(capsys: pytest.CaptureFixture[str]) -> None:
    # two results built here (no run folder): the view says nothing of stored runs ("runs None" before)
    t, k = _tutorial_as("torch", "scale", 1.0), _tutorial_as("triton", "scale", 1.0)
    t.run_id = k.run_id = None
    impls = sweep_impls.compare_impls(t, k)
    assert [r.run_id for r in impls.runs] == [None, None]
    capsys.readouterr()
    sweepview.sweep_impls(Env.create(width=220, stdin_tty=False), impls)
    out = capsys.readouterr().out
    assert "What it means" in out and "stored as runs" not in out and "None" not in out


def test_no_plateau_is_no_verdict() -> None:
    t, k = _tutorial_as("torch", "scale", 1.0), _tutorial_as("triton", "scale", 1.0)
    for r in (t, k):
        r.rows = [row for row in r.rows if row.log2 <= 28]
        r.summary.dram_tbps = None
        r.summary.plateau_status = "one point"
    impls = sweep_impls.compare_impls(t, k)
    assert impls.verdict == "inconclusive"
    assert impls.reason == "no DRAM plateau for torch (one point) and triton (one point): add larger --sizes"


def test_recorded_scale_add_pair_in_the_interpreter() -> None:
    """Recorded rows (tests/data): torch's two kernels on a CPU, the fused kernel in the
    interpreter. The check passed at every size; nothing else is claimed."""
    t = sweeps.analyze_record_file(DATA / "sweep_cpu_float32_scale-add_torch_xeon-2c-l3-480mib.json")
    k = sweeps.analyze_record_file(DATA / "sweep_cpu_float32_scale-add_triton-interpreted_xeon-2c-l3-480mib.json")
    impls = sweep_impls.compare_impls(t, k)
    assert impls.verdict == "interpreted: correctness only" and impls.interpreted
    assert [p.log2 for p in impls.pairs] == [10, 12, 14, 16, 18, 20]
    assert impls.lesson[0].startswith("Triton's scale-add matched torch's at every size (")
    assert "tolerance 2 ulp" in impls.lesson[0]
    assert not any("TB/s" in line or "plateau" in line.lower() for line in impls.lesson)


def test_impl_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NSIGHTLAB_HOME", str(tmp_path / "home"))
    r = run_cli(capsys, "sweep", "--local", "--impl", "cuda")
    assert r.code == 2 and r.err.startswith("error: --impl: 'cuda' is not torch, triton or torch,triton")
    r = run_cli(capsys, "sweep", "--local", "--impl", "triton", "--dtype", "fp64")
    assert r.code == 2 and "--impl triton takes float16, bfloat16, float32, not float64" in r.err
    r = run_cli(capsys, "sweep", "--local", "--impl", "torch,triton", "--compare", "latest")
    assert r.code == 2 and "--compare checks one implementation against a stored run" in r.err
    r = run_cli(capsys, "sweep", "--local", "--op", "fma")
    assert r.code == 2 and "--op" in r.err
    assert not (tmp_path / "home" / "runs").exists()
