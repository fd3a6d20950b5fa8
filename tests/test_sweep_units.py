"""One run, one spelling: the same figure in the terminal, the report, `runs` and the
figures; captions made from the measured values; runs stored before spreads still load.

The run is a recorded CPU sweep (tests/data), stored through the run store's own API, so
nothing here depends on this machine's speed.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
from clirun import run_cli

from nsightlab.analysis.sweep_result import SweepResult
from nsightlab.present.text import roofline_remarks
from nsightlab.runs import store
from nsightlab.runs.analyze import analyze_path
from nsightlab.runs.store import RunMeta
from nsightlab.runs.sweeps import analyze_record_file, load_sweep_run

DATA = Path(__file__).parent / "data"
F64 = DATA / "sweep_cpu_float64_epyc-2c-l3-32mib.json"
LESSON1 = DATA / "lesson1_cpu_float32_epyc-2c-l3-32mib.json"
# a bandwidth written any other way than "N TB/s" with three significant figures
OTHER_BANDWIDTH = re.compile(r"\d\s*(?:GB/s|MB/s|TFLOPS\b)")


def _store(result: SweepResult, folder_name: str, when: datetime) -> str:
    run, run_id = store.new_run("sweep", folder_name, now=when)
    result.run_id, result.run_dir, result.source = run_id, str(run.path), None
    run.write_meta(
        RunMeta(
            id=run_id,
            kind="sweep",
            name=result.dtype,
            created=when,
            target="this machine",
            dtype=result.dtype,
            headline=result.headline,
        )
    )
    run.write_result(result)
    return run_id


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NSIGHTLAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NSIGHTLAB_CONFIG", raising=False)
    monkeypatch.setenv("COLUMNS", "250")
    return tmp_path / "home"


def test_the_same_figure_reads_the_same_everywhere(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    result = analyze_record_file(F64)
    run_id = _store(result, "float64", datetime(2026, 1, 1, tzinfo=timezone.utc))
    s = result.summary
    assert s.dram_tbps is not None and s.launch_floor_us is not None and s.cache_peak_tbps is not None
    plateau, floor, peak = "0.0493 TB/s", "1.51 us", "0.157 TB/s"  # three significant figures
    assert f"{s.dram_tbps:.3g} TB/s" == plateau

    listing = run_cli(capsys, "runs")
    show = run_cli(capsys, "runs", "show", run_id)
    report = run_cli(capsys, "report", run_id, "--terminal")
    assert listing.code == show.code == report.code == 0
    # runs: the headline
    assert f"DRAM {plateau}" in listing.out
    # the terminal and the report: the same summary lines, word for word
    for line in (
        f"- DRAM plateau: {plateau} (2^24..2^26, within 2.7% of each other); a CPU has no spec in the table: the "
        "figure is this machine's own",
        f"- launch floor: {floor} per call (2^10..2^13: fixed cost, not data)",
        f"- cache peak: {peak} at 2^19 (3.18x the DRAM plateau)",
        "- last-level cache used for the regimes: 32.0 MiB (sysfs L3 (last-level cache))",
    ):
        assert line in show.out.splitlines() and line in report.out.splitlines(), line
    # the same table in both: one unit per column
    table = [line for line in show.out.splitlines() if line.startswith(("SIZE", "2^"))]
    assert table and all(line in report.out.splitlines() for line in table)
    assert table[0].split()[:5] == ["SIZE", "TENSOR", "(GiB)", "TIME/CALL", "(ms)"]
    # the figure: its caption and legend
    pytest.importorskip("matplotlib")
    from nsightlab.present import sweepfigure

    plot = sweepfigure.sweep_figure([load_sweep_run(run_id)])
    assert f"DRAM plateau {plateau} (2^24..2^26)" in plot.caption and f"launch floor {floor}" in plot.caption
    assert f"cache peak {peak} at 2^19" in plot.caption
    legend = [t.get_text() for sub in plot.figure.subfigs for leg in sub.legends for t in leg.get_texts()]
    assert f"measured DRAM plateau {plateau} (float64)" in legend
    assert "last-level cache 32.0 MiB = 2^22 float64 elements" in legend
    # and nowhere another spelling of a bandwidth, a rounded-away size or a zero
    for text in (listing.out, show.out, report.out, plot.caption, *legend):
        assert not OTHER_BANDWIDTH.search(text), OTHER_BANDWIDTH.search(text)
        assert "0.0 MiB" not in text and "0 MiB/s" not in text


def test_captions_follow_the_numbers() -> None:
    """The roofline caption said "the in-place scale sits near the memory roof" whatever
    the data. This lesson1 ran its scale inside the last-level cache: 4.6x the plateau."""
    prof = analyze_path(LESSON1)
    sweep = analyze_record_file(F64)
    sweep.run_id = "f64aaa"
    (remark,) = roofline_remarks([prof], [sweep])
    assert remark == (
        "memory_bound_scale at 0.228 TB/s, 4.62x the DRAM plateau measured on this CPU (0.0493 TB/s, "
        "float64 sweep, run f64aaa): it ran from the cache (working set 16.0 MiB < 32.0 MiB last-level "
        "cache), not from memory."
    )
    # the same range against a plateau it reaches: memory-bound, said with its percentage
    scale = next(r for r in prof.ranges if r.name == "memory_bound_scale")
    assert scale.rates is not None
    sweep.summary.dram_tbps = scale.rates.tbps / 0.98
    (near,) = roofline_remarks([prof], [sweep])
    assert near.endswith(
        f"98% of the DRAM plateau measured on this CPU ({scale.rates.tbps / 0.98:.3g} TB/s, float64 sweep, run "
        "f64aaa): memory-bound."
    )
    # without a plateau on the device, no claim at all
    assert roofline_remarks([prof], []) == [
        "memory_bound_scale at 0.228 TB/s; no sweep measured a DRAM plateau on this device to compare it with."
    ]
    pytest.importorskip("matplotlib")
    from nsightlab.present import figures

    plot = figures.roofline_figure([prof], remarks=roofline_remarks([prof], [analyze_record_file(F64)]))
    assert plot is not None
    assert "near the memory roof" not in plot.caption and "it ran from the cache" in plot.caption
    assert "memory_bound_scale at 0.125 FLOP/B" in plot.caption and "TFLOP/s" in plot.caption


def test_runs_stored_before_spreads_and_verdicts_still_load(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    result = analyze_record_file(F64)
    data = json.loads(result.model_dump_json())
    # what an older nsightlab wrote: no spread, no implementation, no plateau verdict
    for key in ("op", "impl", "kernels_per_call", "interpreted"):
        del data[key]
    for row in data["rows"]:
        for key in ("us_min", "us_median", "us_max", "spread", "kernels_per_call", "interpreted"):
            del row[key]
    for key in (
        "impl",
        "op",
        "kernels_per_call",
        "interpreted",
        "bandwidth_test",
        "plateau_status",
        "plateau_reason",
        "plateau_spread",
        "dram_sizes",
    ):
        del data["summary"][key]
    run, run_id = store.new_run("sweep", "float64", now=datetime(2026, 1, 1, tzinfo=timezone.utc))
    data["run_id"] = run_id
    run.write_meta(
        RunMeta(
            id=run_id,
            kind="sweep",
            name="float64",
            created=datetime(2026, 1, 1, tzinfo=timezone.utc),
            target="this machine",
            dtype="float64",
            headline="DRAM 49.3 GB/s",
        )
    )
    run.write_result(data)
    old = load_sweep_run(run_id)
    # judged again from its record by today's rules: the spread from its batches, the plateau
    assert old.impl == "torch" and old.op == "scale" and old.summary.plateau_status == "plateau"
    assert old.rows == result.rows and old.summary == result.summary and old.headline == result.headline
    listing = json.loads(run_cli(capsys, "runs", "--json").out)["runs"]
    assert listing[0]["impl"] == "torch"
    shown = run_cli(capsys, "runs", "show", run_id)
    assert shown.code == 0 and "DRAM plateau: 0.0493 TB/s" in shown.out
    rows = [line.split() for line in shown.out.splitlines() if line.startswith("2^")]
    assert rows and all(len(row) == len(rows[0]) for row in rows)
    # a one-point "plateau" stored by an older nsightlab is no plateau today
    one = analyze_record_file(F64)
    data = json.loads(one.model_dump_json())
    del data["summary"]["plateau_status"]
    data["record"]["rows"] = [r for r in data["record"]["rows"] if r["log2"] <= 24]  # 2^24 alone past the cache
    data["summary"]["dram_tbps"], data["summary"]["dram_from_log2"] = 0.0493, [24]
    again = SweepResult.model_validate(data)
    assert again.summary.dram_tbps is None and again.summary.plateau_status == "one point"
    assert again.headline.endswith("DRAM one point: inconclusive")
