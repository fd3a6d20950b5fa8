"""`nsightlab sweep`: the real lab script run on this machine's CPU, stored, analysed, shown.

The lab-pod variant (sweep.py through the Kubernetes emulator's exec) needs the emulator
in tests/kubesim and belongs beside its tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from clirun import Result, run_cli
from pydantic import ValidationError

from nsightlab.analysis import sweep_result
from nsightlab.analysis.sweep_analysis import analyze_sweep
from nsightlab.analysis.sweep_models import PLATEAU_AGREEMENT
from nsightlab.errors import ParseError
from nsightlab.parse.records.sweep_record import SweepRecord
from nsightlab.present import render, sweepview
from nsightlab.present.console import Env
from nsightlab.present.text import SPREAD_NOTE, compare_lines, compare_table
from nsightlab.runs import sweeps
from nsightlab.specs.gpus import REFERENCE_SWEEPS

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
ELEMENT_SIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
REGIMES = {"launch", "cache", "transition", "dram"}
SMALL = ("--local", "--device", "cpu", "--iters", "5", "--warmup", "1")
TUTORIAL = REFERENCE_SWEEPS["tutorial-rtx-pro-6000"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NSIGHTLAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NSIGHTLAB_CONFIG", raising=False)
    return tmp_path / "home"


def runs(home: Path) -> list[Path]:
    base = home / "runs"
    return sorted(base.iterdir()) if base.is_dir() else []


def sweep_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[Result, dict[str, Any]]:
    r = run_cli(capsys, "sweep", *args, "--json")
    assert r.code == 0, r
    return r, json.loads(r.out)  # exactly one document, or this raises


# --- end to end on the CPU ---


SIXTEEN_BIT_NOTE = (
    "{} on a CPU is converted element by element: its time measures arithmetic, not memory "
    "bandwidth; use float32 for a bandwidth test"
)


@pytest.mark.torch
@pytest.mark.parametrize("dtype", [None, "float16", "bfloat16", "float64"])
def test_sweep_on_this_machine(capsys: pytest.CaptureFixture[str], home: Path, dtype: str | None) -> None:
    """None: no --dtype, --iters or --warmup at all, so the script's CPU defaults run
    (float32, 2 + 10 calls) and the stored run says so."""
    torch = pytest.importorskip("torch")
    given = ("--dtype", dtype, "--iters", "5", "--warmup", "1") if dtype else ()
    r, doc = sweep_json(capsys, "--local", "--device", "cpu", "--sizes", "12,16,20", *given)
    ran = dtype or "float32"  # the script's default on a CPU

    # only what was given reached the script
    argv = doc["script_argv"]
    for flag in ("--dtype", "--iters", "--warmup"):
        assert (flag in argv) == bool(dtype), (flag, argv)
    assert (doc["iters"], doc["warmup"]) == ((5, 1) if dtype else (10, 2))

    # the JSON shape
    assert doc["kind"] == "sweep" and doc["dtype"] == ran and doc["impl"] == "torch" and doc["op"] == "scale"
    assert doc["element_size"] == ELEMENT_SIZE[ran] and doc["interpreted"] is False
    assert [row["log2"] for row in doc["rows"]] == [12, 16, 20]
    for row in doc["rows"]:
        assert {"log2", "elements", "mib", "us", "tbps", "regime", "us_min", "us_median", "us_max", "spread"} <= set(
            row
        )
        assert row["regime"] in REGIMES
        assert row["elements"] == 1 << row["log2"]
        # bytes follow the element size of the dtype actually run
        assert row["bytes_per_call"] == 2 * row["elements"] * ELEMENT_SIZE[ran]
        assert row["mib"] == row["elements"] * ELEMENT_SIZE[ran] / 2**20
        assert row["tbps"] == pytest.approx(row["bytes_per_call"] / (row["us"] * 1e-6) / 1e12)
        # the spread of the timed batches, from the script's seconds_min/median/max
        assert row["us_min"] <= row["us_median"] <= row["us_max"]
        assert row["us_median"] == pytest.approx(row["us"])
        assert row["spread"] == pytest.approx((row["us_max"] - row["us_min"]) / row["us_median"])
    summary = doc["summary"]
    assert {
        "launch_floor_us",
        "cache_peak_tbps",
        "dram_tbps",
        "dram_pct_of_spec",
        "plateau_status",
        "plateau_reason",
    } <= set(summary)
    assert summary["dram_pct_of_spec"] is None  # a CPU has no spec
    assert doc["device"]["type"] == "cpu" and doc["target"] == "this machine"
    assert doc["reference"]["matches_device"] is False

    # 16-bit floats on a CPU: the script's note, on stderr and in the run, and a lesson
    # that calls it what it is
    note = SIXTEEN_BIT_NOTE.format(ran)
    sixteen = ran in ("float16", "bfloat16")
    assert (note in r.err) == sixteen and (note in summary["notes"]) == sixteen
    assert summary["bandwidth_test"] is not sixteen
    lesson = " ".join(summary["lesson"])
    if sixteen:
        assert "this is not a bandwidth test there" in lesson and summary["dram_tbps"] is None
        assert "from the cache" not in lesson and "served from" not in lesson
        assert doc["headline"] == f"{ran} on a CPU: not a bandwidth test"

    assert "2^12" not in r.out.split('"rows"')[0]  # progress went to stderr

    # the run folder: raw output, meta.json, result.json
    (run,) = runs(home)
    assert run.name.endswith(f"-sweep-{ran}-{doc['run_id']}")
    assert doc["run_dir"] == str(run)
    raw = json.loads((run / "raw" / "sweep.json").read_text())
    assert raw["kind"] == "sweep" and raw["dtype"] == ran
    assert [row["seconds_per_call"] for row in raw["rows"]] == [row["seconds_per_call"] for row in doc["rows"]]
    # the live rows on stderr, in the number format of the table (three significant
    # figures, binary sizes, TB/s), from the very rows stored
    from nsightlab import units

    for row in raw["rows"]:
        line = (
            f"2^{row['log2']} elements  {units.size(row['tensor_bytes'])}  "
            f"{units.duration(row['seconds_per_call'])} per call  "
            f"{units.tbps(row['bytes_per_call'] / row['seconds_per_call'])}"
        )
        assert line in r.err.splitlines(), (line, r.err)
    assert "elems" not in r.err  # the tutorial's own rounding is the script's, standalone
    assert '"log2": 16' in (run / "raw" / "sweep.log").read_text()  # the rows as the script wrote them
    assert json.loads((run / "result.json").read_text()) == doc
    meta = json.loads((run / "meta.json").read_text())
    assert meta["kind"] == "sweep" and meta["name"] == ran and meta["dtype"] == ran
    assert meta["id"] == doc["run_id"] and meta["target"] == "this machine"
    assert meta["headline"] == doc["headline"]
    assert meta["versions"]["torch"] == torch.__version__
    assert meta["versions"]["python"] == "{}.{}.{}".format(*sys.version_info[:3])
    # the command that repeats it: what ran, whatever was left to the defaults
    assert meta["command"][:4] == ["nsightlab", "sweep", "--dtype", ran]
    assert "--local" in meta["command"] and "12,16,20" in meta["command"]
    i = meta["command"].index("--iters")
    assert meta["command"][i : i + 4] == ["--iters", str(doc["iters"]), "--warmup", str(doc["warmup"])]


@pytest.mark.slow
@pytest.mark.torch
def test_predict_then_measure(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    """float32 (the CPU's default), then `--compare latest`, which on a CPU runs float64 (a
    16-bit type there is no bandwidth test) at the same sizes, then the two stored runs
    compared without running anything."""
    pytest.importorskip("torch")
    # 2^26 float32 is 256 MiB: several times the last-level cache of most CPUs
    first = run_cli(capsys, "sweep", *SMALL, "--sizes", "12,26")
    assert first.code == 0, first
    assert "Summary" in first.out and "launch floor:" in first.out and "DRAM plateau:" in first.out
    assert "What it means" in first.out and "stored as run" in first.out
    header = first.out.splitlines()[2].split()
    assert header[:4] == ["SIZE", "TENSOR", "(MiB)", "TIME/CALL"] and header[4] in ("(us)", "(ms)", "(s)")
    assert header[5:] == ["SPREAD", "TB/S", "REGIME", "BAR"]  # no % SPEC on a CPU
    table_rows = [line.split() for line in first.out.splitlines() if line.startswith("2^")]
    assert [row[0] for row in table_rows] == ["2^12", "2^26"]
    assert all(row[5] in REGIMES for row in table_rows)

    second = run_cli(capsys, "sweep", "--local", "--iters", "5", "--warmup", "1", "--compare", "latest")
    assert second.code == 0, second
    assert "comparing with run" in second.err and "float64 at 2^12..2^26 on cpu" in second.err
    f32_dir, f64_dir = runs(home)
    assert f64_dir.name.split("-")[2] == "float64"  # the other element size was chosen
    f64 = json.loads((f64_dir / "result.json").read_text())
    f32 = json.loads((f32_dir / "result.json").read_text())
    assert [row["log2"] for row in f64["rows"]] == [12, 26] and f64["device"]["type"] == "cpu"

    cmp = f64["compare"]
    assert cmp["a"]["dtype"] == "float32" and cmp["b"]["dtype"] == "float64"
    assert cmp["a"]["run_id"] == f32["run_id"] and cmp["b"]["run_id"] == f64["run_id"]
    assert cmp["element_ratio"] == 2.0 and cmp["expected_time_ratio"] == 2.0 and cmp["expected_tbps_ratio"] == 1.0
    assert (
        cmp["time_tolerance"] == sweep_result.COMPARE_TIME_TOLERANCE
        and cmp["tbps_tolerance"] == sweep_result.COMPARE_TBPS_TOLERANCE
    )
    # ratios and spreads come from the two runs' own rows
    for pair in cmp["pairs"]:
        a = next(r for r in f32["rows"] if r["log2"] == pair["log2"])
        b = next(r for r in f64["rows"] if r["log2"] == pair["log2"])
        assert pair["time_ratio"] == pytest.approx(b["seconds_per_call"] / a["seconds_per_call"])
        assert pair["tbps_ratio"] == pytest.approx(2 / pair["time_ratio"])  # twice the bytes
        assert (pair["regime_a"], pair["regime_b"]) == (a["regime"], b["regime"])
        assert (pair["spread_a"], pair["spread_b"]) == (a["spread"], b["spread"])
    dram = [p for p in cmp["pairs"] if p["regime_a"] == p["regime_b"] == "dram"]
    assert cmp["dram_sizes"] == [p["log2"] for p in dram]
    # two sizes, the smaller at the launch floor: one DRAM-bound size at most, and no run
    # has a plateau (one point): never a verdict
    assert len(dram) <= 1 and cmp["plateau_ratio"] is None and cmp["verdict"] == "inconclusive"
    assert cmp["reason"] == ("one DRAM-bound size" if dram else "no size was DRAM-bound in both runs")
    assert f"verdict: {cmp['verdict']} ({cmp['reason']})" in second.out
    assert (
        "Predict, then measure: float64" in second.out
        and "the time per call should be x2 and the TB/s the same" in second.out
    )

    # two stored runs, nothing run: the same comparison
    before = runs(home)
    r, only = sweep_json(capsys, "--compare", f32["run_id"], "--compare", f64["run_id"])
    assert runs(home) == before and r.err == ""
    assert only == cmp


@pytest.mark.torch
def test_nsightlab_itself_does_not_import_torch(home: Path) -> None:
    pytest.importorskip("torch")
    code = (
        "import sys, json\n"
        "from nsightlab.cli import main\n"
        "try:\n    main(['sweep', '--local', '--device', 'cpu', '--sizes', '10', '--iters', '1', '--warmup', "
        "'0', '--json'])\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "sys.stderr.write(json.dumps([m for m in ('torch', 'kubernetes', 'numpy') if m in sys.modules]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == []
    assert json.loads(proc.stdout)["rows"][0]["log2"] == 10


# --- errors ---


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ("12,x", "error: --sizes: 'x' is not an integer"),
        ("9,12", "error: --sizes: 9 is out of range 10..34"),
        ("35", "error: --sizes: 35 is out of range 10..34"),
        ("12,,16", "error: --sizes wants comma-separated integers such as 16,20,24, got '12,,16'"),
    ],
)
def test_bad_sizes_are_a_usage_error(capsys: pytest.CaptureFixture[str], home: Path, sizes: str, message: str) -> None:
    r = run_cli(capsys, "sweep", "--local", "--sizes", sizes)
    assert r.code == 2, r
    assert r.out == ""
    assert r.err.startswith(message) and len(r.err.strip().splitlines()) == 1
    assert runs(home) == []


def test_bad_dtype_is_a_usage_error(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    r = run_cli(capsys, "sweep", "--local", "--dtype", "int8")
    assert r.code == 2 and "--dtype 'int8' is not an element type" in r.err and "float32 (fp32, float)" in r.err


@pytest.mark.torch
def test_compare_across_targets_says_so(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    """`--compare` a run the lab pod made, on this machine: said before it runs, and in the
    comparison."""
    pytest.importorskip("torch")
    from datetime import datetime, timezone

    from nsightlab.runs import store

    pod = sweeps.analyze_record_file(DATA / "sweep_cpu_float32_epyc-2c-l3-32mib.json")
    pod.target = "pod ml-lab/nsight-lab-ana"
    run, run_id = store.new_run("sweep", "float32", now=datetime.now(timezone.utc))
    pod.run_id = run_id
    run.write_meta(
        store.RunMeta(id=run_id, kind="sweep", name="float32", created=datetime.now(timezone.utc), target=pod.target)
    )
    run.write_result(pod)
    r = run_cli(capsys, "sweep", *SMALL, "--sizes", "12,14", "--compare", run_id)
    assert r.code == 0, r
    said = f"note: run {run_id} ran on pod ml-lab/nsight-lab-ana and this one runs on this machine"
    assert said in r.err
    assert (
        f"note: the runs ran on different targets (run {run_id} on pod ml-lab/nsight-lab-ana, run " in r.out
        and "on this machine)" in r.out
    )


def test_compare_needs_a_stored_sweep(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    r = run_cli(capsys, "sweep", "--local", "--compare", "latest")
    assert r.code == 2 and "error: there is no finished sweep run yet" in r.err
    r = run_cli(capsys, "sweep", "--local", "--compare", "abc")
    assert r.code == 2 and "error: no run matches 'abc'" in r.err
    r = run_cli(capsys, "sweep", "--compare", "a", "--compare", "b", "--compare", "c")
    assert r.code == 2 and "--compare takes one stored run" in r.err
    assert runs(home) == []


@pytest.mark.torch
def test_a_failing_script_is_exit_6_and_leaves_no_run(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: --device cuda would succeed")
    r = run_cli(capsys, "sweep", "--local", "--device", "cuda", "--sizes", "12", "--iters", "1")
    assert r.code == 6, r
    assert r.out == ""
    assert r.err.strip().splitlines()[-1] == (
        f"error: torch on this machine cannot see the GPU: CPU-only build {torch.__version__}; "
        "install a CUDA build of torch here, or --device cpu."
    )
    assert runs(home) == []


# --- analysing sweep JSON from disk (what `nsightlab analyze FILE` shows) ---


def test_analyze_a_recorded_cpu_sweep() -> None:
    path = next(DATA.glob("sweep_cpu_float64_*.json"))
    result = sweeps.analyze_record_file(path)
    record = SweepRecord.model_validate_json(path.read_text())
    expected = analyze_sweep(record)
    assert result.source == str(path) and result.run_id is None
    assert result.dtype == "float64" and result.element_size == 8
    assert [r.regime for r in result.rows] == [p.regime for p in expected.rows]
    assert result.summary == expected.summary
    assert result.summary.dram_tbps is not None and result.summary.plateau_status == "plateau"
    assert result.headline == f"DRAM {result.summary.dram_tbps:.3g} TB/s"  # three significant figures, TB/s
    assert result.reference is not None and not result.reference.matches_device
    assert all(r.reference_tbps is None for r in result.rows)
    plateau = [r.tbps for r in result.rows if r.log2 in result.summary.dram_from_log2]
    assert len(plateau) >= 2 and max(plateau) / min(plateau) - 1 <= PLATEAU_AGREEMENT
    # recordings older than seconds_min/max keep their batches: the spread comes from them
    raw = {r.log2: r for r in record.rows}
    for row in result.rows:
        batches = raw[row.log2].batch_seconds_per_call
        assert (
            batches
            and row.us_min == pytest.approx(min(batches) * 1e6)
            and row.us_max == pytest.approx(max(batches) * 1e6)
        )


def test_analyze_the_tutorials_reference_sweep(tmp_path: Path) -> None:
    path = tmp_path / "tutorial.json"
    path.write_text(json.dumps(TUTORIAL.as_sweep_json()))
    result = sweeps.analyze_record_file(path)
    assert [r.regime for r in result.rows] == ["launch", "launch", "launch", "cache", "transition", "dram", "dram"]
    assert result.headline == "DRAM 1.46 TB/s (92% of 1.597 TB/s spec)"
    ref = result.reference
    assert ref is not None and ref.matches_device and ref.key == "tutorial-rtx-pro-6000"
    for row, quoted in zip(result.rows, TUTORIAL.rows, strict=True):
        assert row.reference_tbps == pytest.approx(quoted.quoted_tbps, abs=0.02)  # quoted from rounded times
        assert row.spread is None and row.us_min is None  # a published table has no batches
    # a stored result.json reads back the same
    stored = tmp_path / "result.json"
    stored.write_text(result.model_dump_json())
    again = sweeps.analyze_record_file(stored)
    assert again.summary == result.summary and again.rows == result.rows


def test_analyze_refuses_what_is_not_a_sweep(tmp_path: Path) -> None:
    with pytest.raises(
        ParseError, match=r"lesson1_cpu_float32_epyc-2c-l3-32mib.json: not a sweep JSON \(kind: lesson1\)"
    ):
        sweeps.analyze_record_file(next(DATA.glob("lesson1_cpu_*.json")))
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "sweep", "schema": 1')
    with pytest.raises(ParseError, match=r"bad.json: not valid JSON"):
        sweeps.analyze_record_file(bad)
    doc = TUTORIAL.as_sweep_json()
    doc["rows"][0]["bytes_per_call"] //= 2
    bad.write_text(json.dumps(doc))
    with pytest.raises(
        ParseError,
        match=r"bad.json: bad sweep JSON: .*bytes_per_call is 131072, but 2 x 65536 elements x 2 B is 262144 \(torch "
        r"scale\)",
    ):
        sweeps.analyze_record_file(bad)


# --- the byte accounting of each op and implementation ---

SCALE_ADD = {
    "torch": DATA / "sweep_cpu_float32_scale-add_torch_xeon-2c-l3-480mib.json",
    "triton": DATA / "sweep_cpu_float32_scale-add_triton-interpreted_xeon-2c-l3-480mib.json",
}


def test_scale_add_accounting_on_recorded_runs() -> None:
    """torch's scale-add is two kernels (4 x elements x 4 B per call), the fused Triton
    kernel one (2 x): the recorded runs validate, and the analysis keeps their bytes."""
    torch_add = sweeps.analyze_record_file(SCALE_ADD["torch"])
    assert (torch_add.impl, torch_add.op, torch_add.kernels_per_call) == ("torch", "scale-add", 2)
    assert all(r.bytes_per_call == 4 * r.elements * 4 and r.kernels_per_call == 2 for r in torch_add.rows)
    assert any(
        "2 kernels per call (x.mul_, then x.add_)" in line and "4 x elements x 4 B" in line
        for line in torch_add.summary.lesson
    )
    fused = sweeps.analyze_record_file(SCALE_ADD["triton"])
    assert (fused.impl, fused.op, fused.kernels_per_call, fused.interpreted) == ("triton", "scale-add", 1, True)
    assert all(r.bytes_per_call == 2 * r.elements * 4 for r in fused.rows)


@pytest.mark.parametrize(
    ("impl", "factor", "kernels", "message"),
    [
        (
            "torch",
            2,
            None,
            r"bytes_per_call is 8192, but 2 x 2 kernels x 1024 elements x 4 B is 16384 \(torch scale-add\)",
        ),
        ("triton", 4, None, r"bytes_per_call is 16384, but 2 x 1024 elements x 4 B is 8192 \(triton scale-add\)"),
        ("torch", 4, 1, r"kernels_per_call is 1, but torch scale-add launches 2"),
    ],
)
def test_scale_add_accounting_is_checked_exactly(impl: str, factor: int, kernels: int | None, message: str) -> None:
    doc = json.loads(SCALE_ADD["torch"].read_text())
    doc["impl"] = impl
    row = doc["rows"][0]
    row.pop("impl", None)
    row.pop("kernels_per_call", None)
    doc.pop("kernels_per_call", None)
    row["bytes_per_call"] = factor * row["elements"] * 4
    if kernels is not None:
        doc["kernels_per_call"] = kernels
    with pytest.raises(ValidationError, match=message):
        SweepRecord.model_validate(doc)


# --- the prediction check on recorded and published curves ---


def _cpu_result(dtype: str) -> sweep_result.SweepResult:
    return sweeps.analyze_record_file(next(DATA.glob(f"sweep_cpu_{dtype}_epyc-*.json")))


def test_recorded_16_bit_on_a_cpu_cannot_test_the_prediction() -> None:
    cmp = sweep_result.compare_results(_cpu_result("float32"), _cpu_result("float16"))
    assert (cmp.a.dtype, cmp.b.dtype) == ("float16", "float32")  # smaller elements first
    assert cmp.dram_sizes == [27, 28] and cmp.launch_sizes == [10, 11, 12, 13, 14]
    assert (
        cmp.verdict == "inconclusive"
        and cmp.reason == "float16 on a CPU is not a bandwidth test: each element is converted"
    )
    assert (
        cmp.lines[0]
        == "Measured in the DRAM regime (2^27, 2^28): time x2.10, TB/s x0.967 (float32 vs float16, medians); as "
        "predicted at 2^28, not at 2^27."
    )
    assert cmp.lines[1] == f"Inconclusive: {cmp.reason}."


def test_recorded_float32_and_float64_share_one_dram_size() -> None:
    cmp = sweep_result.compare_results(_cpu_result("float32"), _cpu_result("float64"))
    assert cmp.expected_time_ratio == 2.0 and cmp.dram_sizes == [27]
    # float64 moved bytes 1.24x as fast as float32 there: the row says NO, but one size
    # is no verdict
    (dram,) = [p for p in cmp.pairs if p.log2 == 27]
    assert dram.agrees is False and dram.tbps_ratio > 1 + sweep_result.COMPARE_TBPS_TOLERANCE
    assert cmp.verdict == "inconclusive" and cmp.reason == "one DRAM-bound size"
    assert cmp.lines[1].startswith(
        "Inconclusive: one DRAM-bound size. Rerun both with sizes several times the cache (at least 2^25 "
        "elements here: 4x the 32.0 MiB cache), e.g. --sizes 12,25,26."
    )
    assert cmp.model_dump(mode="json")["reason"] == "one DRAM-bound size"


def _tutorial_in(dtype: str, element_size: int, dram_time_factor: float | dict[int, float]) -> sweep_result.SweepResult:
    """The tutorial's curve as if rerun in another dtype: launch sizes keep their time,
    DRAM sizes take `dram_time_factor` times as long (one factor, or one per size)."""
    doc = TUTORIAL.as_sweep_json()
    doc["dtype"], doc["element_size"] = dtype, element_size
    for row in doc["rows"]:
        row["bytes_per_call"] = 2 * row["elements"] * element_size
        if row["log2"] >= 28:
            row["seconds_per_call"] *= (
                dram_time_factor if isinstance(dram_time_factor, float) else dram_time_factor[row["log2"]]
            )
    return sweep_result.build_result(SweepRecord.model_validate(doc), target="test")


def test_prediction_check_on_the_tutorials_curve() -> None:
    f16 = _tutorial_in("float16", 2, 1.0)
    doubled = sweep_result.compare_results(f16, _tutorial_in("float32", 4, 2.0))
    assert doubled.verdict == "agrees" and doubled.dram_sizes == [28, 30]
    assert doubled.reason == "2 DRAM-bound sizes, each as predicted"
    assert doubled.time_ratio == pytest.approx(2.0) and doubled.tbps_ratio == pytest.approx(1.0)
    assert doubled.launch_sizes == [16, 20, 22] and doubled.launch_time_ratio == pytest.approx(1.0)
    assert doubled.lines[0].endswith("as predicted at every one.")
    assert (
        doubled.lines[-1]
        == "At the launch floor (2^16, 2^20, 2^22): time x1.00 (median); the bytes did not matter there, as "
        "predicted at every size."
    )
    # time that did not follow the bytes: float32 "twice as fast" in TB/s
    same_time = sweep_result.compare_results(f16, _tutorial_in("float32", 4, 1.0))
    assert same_time.dram_sizes == [28, 30] and same_time.tbps_ratio == pytest.approx(2.0)
    assert same_time.verdict == "disagrees" and same_time.reason == "2 DRAM-bound sizes, none as predicted"
    assert "float32 moved bytes faster than float16" in same_time.lines[1]
    assert "converting" not in same_time.lines[1]  # a GPU


def test_one_dram_size_is_no_verdict() -> None:
    """The finding: one DRAM-bound size made `agrees`. Now it is inconclusive, reason given."""
    f16, f32 = _tutorial_in("float16", 2, 1.0), _tutorial_in("float32", 4, 2.0)
    for r in (f16, f32):  # the sweep stops at 2^28: one DRAM-bound size
        r.rows = [row for row in r.rows if row.log2 <= 28]
    cmp = sweep_result.compare_results(f16, f32)
    assert cmp.dram_sizes == [28] and cmp.pairs[-1].agrees is True
    assert cmp.verdict == "inconclusive" and cmp.reason == "one DRAM-bound size"
    assert "verdict: inconclusive (one DRAM-bound size)" in compare_lines(cmp)


def test_split_rows_are_inconclusive_and_named() -> None:
    """Rows that disagree among themselves never add up to a verdict the rows deny."""
    f16 = _tutorial_in("float16", 2, 1.0)
    split = sweep_result.compare_results(f16, _tutorial_in("float32", 4, {28: 2.0, 30: 1.4}))
    assert [p.agrees for p in split.pairs if p.log2 in (28, 30)] == [True, False]
    assert split.verdict == "inconclusive"
    assert split.reason == "the DRAM-bound sizes split: 2^28 as predicted, 2^30 not"
    assert split.lines[0].endswith("as predicted at 2^28, not at 2^30.")


def test_the_launch_line_agrees_with_its_rows() -> None:
    """The finding: one launch row read 'time x1 NO' while the line said 'as predicted'."""
    f16 = _tutorial_in("float16", 2, 1.0)
    doc = TUTORIAL.as_sweep_json()
    doc["dtype"], doc["element_size"] = "float32", 4
    for row in doc["rows"]:
        row["bytes_per_call"] = 2 * row["elements"] * 4
        row["seconds_per_call"] *= {20: 1.4, 28: 2.0, 30: 2.0}.get(row["log2"], 1.0)
    cmp = sweep_result.compare_results(f16, sweep_result.build_result(SweepRecord.model_validate(doc), target="test"))
    launch = {p.log2: p.agrees for p in cmp.pairs if p.regime_a == p.regime_b == "launch"}
    assert launch == {16: True, 20: False, 22: True}
    line = next(x for x in cmp.lines if x.startswith("At the launch floor"))
    # the median (x1.00) is within tolerance, but the line names the row that is not
    assert "as predicted at 2^16, 2^22, not at 2^20 x1.40" in line and "as predicted at every" not in line
    table = compare_table(cmp)
    assert [row[-1] for row in table.rows if row[0] in ("2^16", "2^20", "2^22")] == [
        "time x1 yes",
        "time x1 NO",
        "time x1 yes",
    ]
    assert cmp.verdict == "agrees"  # the DRAM sizes, each as predicted, decide it


def test_prediction_check_on_plateaus_when_no_size_is_shared() -> None:
    f16 = _tutorial_in("float16", 2, 1.0)
    doc = TUTORIAL.as_sweep_json()
    doc["dtype"], doc["element_size"] = "float32", 4
    for row in doc["rows"]:
        if row["log2"] >= 28:  # the same bytes in half the elements, in the same time
            row["log2"] -= 1
            row["elements"] //= 2
        row["bytes_per_call"] = 2 * row["elements"] * 4
    f32 = sweep_result.build_result(SweepRecord.model_validate(doc), target="test")
    cmp = sweep_result.compare_results(f16, f32)
    assert cmp.dram_sizes == [] and cmp.time_ratio is None
    assert cmp.plateau_ratio == pytest.approx(1.0) and cmp.verdict == "agrees"
    assert cmp.reason == "no size DRAM-bound in both: the two plateaus compared"
    assert cmp.lines[0] == "Measured: DRAM plateau 1.46 TB/s for float32 vs 1.46 TB/s for float16 (x1.00)."
    assert "no size was DRAM-bound in both, so time is not checked" in cmp.lines[1]
    # just inside and just outside the tolerance
    inside = 2.0 * (1 + sweep_result.COMPARE_TIME_TOLERANCE * 0.9)
    outside = 2.0 * (1 + sweep_result.COMPARE_TIME_TOLERANCE * 1.1)
    assert sweep_result.compare_results(f16, _tutorial_in("float32", 4, inside)).verdict == "agrees"
    assert sweep_result.compare_results(f16, _tutorial_in("float32", 4, outside)).verdict == "disagrees"


def test_prediction_check_without_dram_sizes_is_inconclusive() -> None:
    doc = TUTORIAL.as_sweep_json()
    doc["rows"] = doc["rows"][:3]  # launch sizes only
    f16 = sweep_result.build_result(SweepRecord.model_validate(doc), target="test")
    doc32 = json.loads(json.dumps(doc))
    doc32["dtype"], doc32["element_size"] = "float32", 4
    for row in doc32["rows"]:
        row["bytes_per_call"] *= 2
    cmp = sweep_result.compare_results(f16, sweep_result.build_result(SweepRecord.model_validate(doc32), target="test"))
    assert cmp.verdict == "inconclusive" and cmp.time_ratio is None and cmp.tbps_ratio is None
    assert cmp.reason == "no size was DRAM-bound in both runs"
    assert cmp.lines[0].startswith(
        "Inconclusive: no size was DRAM-bound in both runs. Rerun both with sizes several times the cache"
    )
    assert "(at least 2^28 elements here: 4x the 128 MiB cache), e.g. --sizes 12,28,29." in cmp.lines[0]


# --- rendering ---


def _plain_env(capsys: pytest.CaptureFixture[str]) -> Env:
    capsys.readouterr()
    return Env.create(width=200, stdin_tty=False)


def test_render_the_tutorials_sweep(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "tutorial.json"
    path.write_text(json.dumps(TUTORIAL.as_sweep_json()))
    result = sweeps.analyze_record_file(path)
    sweepview.sweep(_plain_env(capsys), result)
    out = capsys.readouterr().out
    lines = out.splitlines()
    # one unit per column, taken from its largest value (2 GiB, 2.94 ms)
    assert lines[2].split() == [
        "SIZE",
        "TENSOR",
        "(GiB)",
        "TIME/CALL",
        "(ms)",
        "SPREAD",
        "TB/S",
        "%",
        "SPEC",
        "REGIME",
        "REF",
        "TB/S",
        "BAR",
    ]
    rows = {line.split()[0]: line.split() for line in lines if line.startswith("2^")}
    # three significant figures; no spread in a published table (its cells are empty)
    assert rows["2^16"][:6] == ["2^16", "0.000122", "0.00590", "0.0444", "2.8%", "launch"]
    assert rows["2^24"][:7] == ["2^24", "0.0312", "0.0123", "5.46", "342%", "cache", "5.46"]
    assert rows["2^28"][:7] == ["2^28", "0.500", "0.734", "1.46", "92%", "dram", "1.46"]
    assert rows["2^30"][:6] == ["2^30", "2.00", "2.94", "1.46", "91%", "dram"]
    # bars scale with TB/s: the cache peak gets the whole width
    assert rows["2^24"][7] == "█" * render.BAR_WIDTH
    assert rows["2^30"][7] == "██████▍"  # 24 x 1.461 / 5.456 = 6.43 cells
    assert "- launch floor: 5.70 us per call (2^16..2^22: fixed cost, not data)" in lines
    assert "- cache peak: 5.46 TB/s at 2^24 (3.42x the DRAM spec: served from cache)" in lines
    assert (
        "- DRAM plateau: 1.46 TB/s (2^28..2^30, within 0.1% of each other), 92% of the DRAM spec 1.597 TB/s, "
        "RTX PRO 6000 Blackwell Server Edition datasheet" in lines
    )
    assert "- L2 used for the regimes: 128 MiB (RTX PRO 6000 Blackwell Server Edition datasheet)" in lines
    assert any(line.startswith("- reference (REF TB/S column): the same GPU in the tutorial") for line in lines)
    assert "CUDA graphs" in out and "governs decode" in out
    assert SPREAD_NOTE in out


def test_bar() -> None:
    assert render.bar(1.0, 2.0, width=8) == "████"
    assert render.bar(1.0, 8.0, width=10) == "█▎"
    assert render.bar(0.001, 100.0, width=10) == "▏"  # never invisible
    assert render.bar(1.0, 2.0, width=8, unicode=False) == "####"
    assert render.bar(0.0, 2.0) == "" and render.bar(1.0, 0.0) == ""
