"""Words chosen from the measured values: each sentence family of the sweep and lesson1
lessons fed the rows that contradict its usual wording. The rows are the suite's recorded
runs (tests/data), where each contradiction was seen, or a recorded run with one row
changed (said where)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli

from nsightlab.analysis.explain.profile_words import instances_lesson
from nsightlab.analysis.profile_models import KernelLine
from nsightlab.parse.records import lesson1_record

DATA = Path(__file__).parent / "data"
FLOAT64 = DATA / "sweep_cpu_float64_epyc-2c-l3-32mib.json"
FLOAT32 = DATA / "sweep_cpu_float32_epyc-2c-l3-32mib.json"
SCALE_ADD = DATA / "sweep_cpu_float32_scale-add_torch_xeon-2c-l3-480mib.json"
LESSON1_CPU = DATA / "lesson1_cpu_float32_epyc-2c-l3-32mib.json"
SMALL = ["--", "--scale-log2", "16", "--gemm-n", "64"]

pytestmark = pytest.mark.usefixtures("nsl_home")


def _analyze(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[str, dict[str, Any]]:
    text = run_cli(capsys, "analyze", str(path))
    assert text.code == 0, text
    data = json.loads(run_cli(capsys, "analyze", str(path), "--json").out)
    return text.out, data


def _changed(tmp_path: Path, source: Path, change: dict[int, float], keep: set[int] | None = None) -> Path:
    """`source` with the time per call of some rows multiplied (log2 -> factor), and
    only the rows in `keep` (all when None)."""
    doc = json.loads(source.read_text())
    doc["rows"] = [r for r in doc["rows"] if keep is None or r["log2"] in keep]
    for row in doc["rows"]:
        factor = change.get(row["log2"], 1.0)
        row["seconds_per_call"] *= factor
        if "batch_seconds" in row:
            row["batch_seconds"] = [s * factor for s in row["batch_seconds"]]
    out = tmp_path / source.name
    out.write_text(json.dumps(doc))
    return out


def _settles(lines: list[str]) -> str:
    return next(line for line in lines if "the bandwidth settles at" in line)


# --- "From X up the bandwidth settles at Y" ---


def test_settles_from_where_the_rows_agree(capsys: pytest.CaptureFixture[str]) -> None:
    # As recorded: 64 MiB and up all within 10% of the 0.0493 TB/s plateau.
    _, data = _analyze(capsys, FLOAT64)
    assert _settles(data["summary"]["lesson"]).startswith("From 64.0 MiB up the bandwidth settles at 0.0493 TB/s")


def test_settles_never_from_a_row_that_ran_far_below(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # The recorded float64 run with its 64 MiB row (2^23) 30% below the plateau, as seen:
    # it is still DRAM-bound, but "from 64 MiB up ... settles" would not be true.
    plateau = 0.0493
    measured = 0.0532
    slower = _changed(tmp_path, FLOAT64, {23: measured / (0.7 * plateau)})
    out, data = _analyze(capsys, slower)
    line = _settles(data["summary"]["lesson"])
    assert "From 64.0 MiB up" not in out
    assert line.startswith("From 128 MiB up the bandwidth settles at 0.0493 TB/s")
    assert "64.0 MiB ran 30% below it" in line


def test_settles_at_the_plateau_sizes_when_the_largest_row_is_off(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The largest size (2^27) made 20% faster than the plateau: still DRAM-bound, but no
    # run of agreeing sizes ends the sweep, so no "from X up".
    faster = _changed(tmp_path, FLOAT64, {27: 0.0538 / (1.2 * 0.0493)})
    _, data = _analyze(capsys, faster)
    assert {r["log2"]: r["regime"] for r in data["rows"]}[27] == "dram"
    line = _settles(data["summary"]["lesson"])
    assert line.startswith("At 2^24..2^26 the bandwidth settles at 0.0493 TB/s")
    assert "1.00 GiB ran 20% above it" in line


# --- `transition`: partly cached, and where it is not ---


def test_a_transition_far_past_the_cache_is_not_called_partly_cached(capsys: pytest.CaptureFixture[str]) -> None:
    # As recorded: 128 and 256 MiB (4x and 8x the 32 MiB L3; 8x and 16x in bytes moved)
    # ran twice as fast as the largest sizes and are labelled transition.
    out, data = _analyze(capsys, FLOAT32)
    regimes = {r["log2"]: r["regime"] for r in data["rows"]}
    assert regimes[25] == regimes[26] == "transition" and regimes[24] == "transition"
    note = next(n for n in data["summary"]["notes"] if "too large to be partly cached" in n)
    assert note.startswith("the 128 MiB, 256 MiB working sets (transition) ran at 1.86x-2.22x the rate")
    assert "4x the 32.0 MiB cache or more" in note and note in out


def test_no_note_where_every_transition_is_near_the_cache(capsys: pytest.CaptureFixture[str]) -> None:
    _, data = _analyze(capsys, FLOAT64)  # its one transition, 32 MiB, is the cache's size
    assert not any("partly cached" in n for n in data["summary"]["notes"])


# --- "every size fitted in the cache" / "no size ran from the cache" ---


def test_sizes_all_at_the_launch_floor_are_said_to_be_there(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # The recorded scale-add run's three smallest sizes (2^10..2^14): all at the launch
    # floor, all inside the 480 MiB L3.
    small = _changed(tmp_path, SCALE_ADD, {}, keep={10, 12, 14})
    out, data = _analyze(capsys, small)
    assert {r["regime"] for r in data["rows"]} == {"launch"}
    assert "cache peak: none (every size sat at the launch floor)" in out
    assert "no size ran from the cache" not in out and "every size fitted in the cache" not in out
    assert any(n.startswith("every size sat at the launch floor (all of them fit") for n in data["summary"]["notes"])


def test_sizes_that_ran_from_the_cache_keep_their_words(capsys: pytest.CaptureFixture[str]) -> None:
    out, data = _analyze(capsys, SCALE_ADD)  # as recorded: 2^16..2^20 ran from the cache
    assert "cache peak: 0.114 TB/s at 2^18" in out
    assert "every size fitted in the cache; rerun with larger sizes to see DRAM" in data["summary"]["notes"]


# --- lesson1 on a CPU: calls, not launches; no CUDA ---


def test_cpu_ops_are_called_not_launched(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "profile", "lesson1", "--local", "--profiler", "torch", "--json", *SMALL)
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["kernels_are"] == "cpu ops"
    counted = [line for line in data["lesson"] if "warm-ups + 20 timed" in line]
    assert len(counted) == 2
    assert counted[0].startswith("The op table counts 23 calls of aten::")
    words = " ".join(data["lesson"] + data["notes"])
    assert "launch" not in words and "CUDA" not in words


def test_a_cpu_lesson1_timed_by_its_own_clock_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    out, data = _analyze(capsys, LESSON1_CPU)
    assert "rates use the script's own timing (its clock, time.perf_counter)" in " ".join(data["notes"])
    assert "CUDA events" not in out


def test_gpu_kernels_are_still_launched() -> None:
    record = lesson1_record.Lesson1Record.model_validate(json.loads(LESSON1_CPU.read_text()))
    work = record.ranges[0]
    kernel = KernelLine(
        name="k", instances=23, total_ns=23, avg_ns=1.0, time_pct=100.0, short_name="k", kind="elementwise"
    )
    per_range = {work.name: (20.0, 20, "k")}
    (gpu,) = instances_lesson([kernel], record, per_range)
    (cpu,) = instances_lesson([kernel], record, per_range, cpu_ops=True)
    assert gpu.startswith("The kernel summary counts 23 launches of k") and "(CUDA init, kernel selection)" in gpu
    assert cpu.startswith("The op table counts 23 calls of k") and "CUDA" not in cpu
