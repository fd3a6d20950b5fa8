"""Rates, the roofline and the regime classifier, on published, synthetic and recorded sweeps."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from reportstore import lesson1_json

from nsightlab.analysis import lesson1_rates, roofline, sweep_analysis, sweep_models
from nsightlab.analysis import regimes as regimes_mod
from nsightlab.analysis.explain import sweep_words
from nsightlab.parse.records import lesson1_record, sweep_record
from nsightlab.specs.gpus import BY_KEY, REFERENCE_LESSON1, REFERENCE_SWEEPS, MiB

DATA = Path(__file__).parent / "data"
CPU_SWEEPS = sorted(DATA.glob("sweep_cpu_*_epyc-*.json"))
MB = 1e6


def sweep_doc(
    rows: Sequence[tuple[int, float]],
    *,
    name: str | None,
    l2_bytes: int | None,
    element_size: int = 2,
    dtype: str = "float16",
    device_type: str = "cuda",
) -> dict[str, Any]:
    """A sweep.py JSON document from (log2, microseconds per call) pairs."""
    return {
        "kind": "sweep",
        "schema": 1,
        "op": "scale",
        "dtype": dtype,
        "element_size": element_size,
        "iters": 50,
        "warmup": 5,
        "device": {"type": device_type, "name": name, "l2_bytes": l2_bytes},
        "rows": [
            {
                "log2": p,
                "elements": 1 << p,
                "bytes_per_call": 2 * (1 << p) * element_size,
                "seconds_per_call": us * 1e-6,
            }
            for p, us in rows
        ],
        "skipped": [],
    }


def modelled(
    sizes: Sequence[int], element_size: int, floor_us: float, bandwidth: Callable[[float], float]
) -> list[tuple[int, float]]:
    """Time per call = max(floor, traffic / bandwidth(working set))."""
    out = []
    for p in sizes:
        ws = (1 << p) * element_size
        out.append((p, max(floor_us, 2 * ws / bandwidth(ws) * 1e6)))
    return out


def analyse(doc: dict[str, Any], *args: Any, **kw: Any) -> sweep_models.SweepAnalysis:
    return sweep_analysis.analyze_sweep(sweep_record.SweepRecord.model_validate(doc), *args, **kw)


def regimes(a: sweep_models.SweepAnalysis) -> dict[int, str]:
    return {p.log2: p.regime for p in a.rows}


TUTORIAL = REFERENCE_SWEEPS["tutorial-rtx-pro-6000"].as_sweep_json()


# --- the tutorial's RTX PRO 6000 table ---


def test_tutorial_table() -> None:
    a = analyse(TUTORIAL)
    assert regimes(a) == {
        16: "launch",
        20: "launch",
        22: "launch",
        24: "cache",
        # 128 MiB on a 128 MiB L2: it cannot all stay resident (the cache holds other lines
        # too), yet at 3.04 TB/s it beats the DRAM spec, so part of it came from L2.
        26: "transition",
        28: "dram",
        30: "dram",
    }
    s = a.summary
    assert s.basis == "cache size"
    assert s.l2_bytes == 128 * MiB and s.l2_source == "RTX PRO 6000 Blackwell Server Edition datasheet"
    assert s.launch_floor_us == pytest.approx(5.7)
    assert s.cache_peak_log2 == 24 and s.cache_peak_tbps == pytest.approx(5.456, abs=0.001)
    assert s.dram_tbps == pytest.approx(1.462, abs=0.001)
    assert s.dram_from_log2 == [28, 30] and not s.dram_is_estimate
    assert s.dram_pct_of_spec is not None and 91 < s.dram_pct_of_spec < 92
    assert s.spec_label == "1.597 TB/s, RTX PRO 6000 Blackwell Server Edition datasheet"
    row24 = a.rows[3]
    assert row24.mib == 32.0 and row24.pct_of_dram_spec is not None
    assert round(row24.pct_of_dram_spec) == 342 and row24.cache_ratio == 0.25
    assert s.plateau_status == "plateau" and s.plateau_spread is not None and s.plateau_spread < 0.01
    launch, cache, dram = s.lesson
    assert "5.70 us floor" in launch and "Up to 8.00 MiB" in launch and "CUDA graphs" in launch
    assert "At 32.0 MiB" in cache and "5.46 TB/s" in cache and "3.42x the DRAM spec" in cache
    assert "(working set 32.0 MiB < 128 MiB L2 cache)" in cache and "partly launch-bound" in cache
    assert "From 512 MiB up" in dram and "1.46 TB/s, 92% of the DRAM spec (1.597 TB/s" in dram
    assert "2^28..2^30 agree within 0.1%" in dram
    assert "10.9 ms for 16.0 GB" in dram  # 16e9 B / 1.462e12 B/s
    assert s.notes == []


def test_tutorial_table_without_a_cache_size_uses_the_curve_shape() -> None:
    doc = json.loads(json.dumps(TUTORIAL))
    doc["device"]["l2_bytes"] = None
    bare = analyse(doc, use_table=False)
    with_spec = analyse(doc, BY_KEY["rtx-pro-6000-server"], l2_bytes=None)
    assert with_spec.summary.l2_bytes == 128 * MiB  # the spec's L2 fills the gap
    assert bare.summary.basis == "curve shape" and bare.summary.l2_bytes is None
    assert regimes(bare) == regimes(analyse(TUTORIAL))
    assert bare.summary.dram_tbps == pytest.approx(1.462, abs=0.001)
    assert bare.summary.dram_pct_of_spec is None and bare.summary.spec_name is None
    assert any("cache size unknown" in n for n in bare.summary.notes)
    assert "it ran from the cache" in bare.summary.lesson[1] and "not from memory" in bare.summary.lesson[1]
    assert "3.73x this device's measured DRAM plateau (1.46 TB/s)" in bare.summary.lesson[1]


def test_an_explicit_cache_size_wins() -> None:
    a = analyse(TUTORIAL, l2_bytes=256 * MiB)
    assert a.summary.l2_source == "given"
    assert regimes(a)[26] == "cache"  # 128 MiB fits in 0.75 x 256 MiB


# --- synthetic curves ---


def h200_bandwidth(ws: float) -> float:
    """gpu-benches on an H200: ~10 TB/s from L2 up to ~40 MB, ~3.9 TB/s DRAM from ~80 MB."""
    if ws <= 40 * MB:
        return 10e12
    if ws >= 80 * MB:
        return 3.9e12
    return 10e12 - (10e12 - 3.9e12) * (ws - 40 * MB) / (40 * MB)


def test_h200_like_curve() -> None:
    rows = modelled(range(16, 31), 2, 2.5, h200_bandwidth)
    a = analyse(sweep_doc(rows, name="NVIDIA H200", l2_bytes=60 * MiB))  # torch's figure
    r = regimes(a)
    assert all(r[p] == "launch" for p in range(16, 24))  # 2^23: 3.4 us, within 1.5x of 2.5
    assert r[24] == "cache"  # 32 MiB at 10 TB/s
    assert r[25] == "transition"  # 64 MiB: past the cliff, not yet at DRAM speed
    assert r[26] == "dram"  # 128 MiB is only 2.1x the L2 but already on the plateau
    assert all(r[p] == "dram" for p in range(27, 31))
    s = a.summary
    assert s.launch_floor_us == pytest.approx(2.5)
    assert s.cache_peak_tbps == pytest.approx(10.0)
    assert s.dram_tbps == pytest.approx(3.9)
    assert s.dram_pct_of_spec == pytest.approx(81.25)
    assert s.dram_from_log2 == [27, 28, 29, 30]  # the sizes at least 4x the 60 MiB L2
    assert s.dram_sizes == [26, 27, 28, 29, 30]
    assert s.l2_source == "device"
    assert any("60 MiB" in n and "50 MiB" in n for n in s.notes)
    assert "2.08x the DRAM spec (4.8 TB/s, NVIDIA H200 (SXM) datasheet)" in s.lesson[1]
    assert "From 128 MiB up the bandwidth settles at 3.90 TB/s, 81% of the DRAM spec (4.8 TB/s" in s.lesson[2]


def test_h200_like_curve_with_the_tables_l2() -> None:
    rows = modelled(range(16, 31), 2, 2.5, h200_bandwidth)
    a = analyse(sweep_doc(rows, name="NVIDIA H200", l2_bytes=None))
    assert a.summary.l2_bytes == 50 * MiB
    assert a.summary.l2_source == "NVIDIA H200 (SXM) datasheet"
    r = regimes(a)
    assert (r[24], r[25], r[26]) == ("cache", "transition", "dram")


def test_l2_barely_faster_than_dram() -> None:
    # An L4-sized GPU whose L2 streams at only 1.1x its DRAM plateau.
    def bw(ws: float) -> float:
        return 264e9 if ws <= 36 * MiB else 240e9

    rows = modelled(range(16, 31), 2, 4.0, bw)
    a = analyse(sweep_doc(rows, name="NVIDIA L4", l2_bytes=48 * MiB))
    r = regimes(a)
    assert [p for p in r if r[p] == "launch"] == [16, 17, 18]
    assert all(r[p] == "cache" for p in range(19, 25))  # up to 32 MiB: resident in 48 MiB
    assert all(r[p] == "dram" for p in range(25, 31))  # 64 MiB and up: at the plateau
    s = a.summary
    assert s.dram_tbps == pytest.approx(0.24)
    assert s.dram_pct_of_spec == pytest.approx(80.0)
    assert s.cache_peak_tbps == pytest.approx(0.264)
    assert "only 1.10x the DRAM plateau (0.240 TB/s) although it fits" in s.lesson[1]
    assert "the cache did not help this op" in s.lesson[1]
    assert "From 64.0 MiB up" in s.lesson[2]


def test_huge_l2_holds_float32_at_2_to_the_24() -> None:
    # 128 MiB of L2: 2^24 float32 elements (64 MiB) still fit.
    def bw(ws: float) -> float:
        if ws <= 96 * MiB:
            return 5.5e12
        return 3.0e12 if ws < 256 * MiB else 1.46e12

    rows = modelled(range(16, 31, 2), 4, 5.7, bw)
    a = analyse(
        sweep_doc(rows, name="NVIDIA RTX PRO 6000 Blackwell Server Edition", l2_bytes=128 * MiB,
                  element_size=4, dtype="float32")
    )  # fmt: skip
    r = regimes(a)
    # 2^22 (16 MiB) moves 33.5 MB in 6.1 us: still within 1.5x of the 5.7 us floor
    assert (r[16], r[18], r[20], r[22]) == ("launch",) * 4
    assert r[24] == "cache"
    assert r[26] == "dram"  # 256 MiB = 2x the L2, already at 1.46 TB/s
    assert (r[28], r[30]) == ("dram", "dram")
    row24 = next(p for p in a.rows if p.log2 == 24)
    assert row24.mib == 64.0 and row24.bytes_per_call == 2 * (1 << 24) * 4
    assert a.summary.cache_peak_log2 == 24
    assert any("4 B per element (float32)" in line and "0.500x these bandwidths" in line for line in a.summary.lesson)


def test_a_sweep_of_only_large_sizes_has_no_launch_regime() -> None:
    rows = [(26, 92.0), (28, 733.9), (30, 2939.7)]
    for l2 in (128 * MiB, None):
        a = analyse(sweep_doc(rows, name=None, l2_bytes=l2))
        r = regimes(a)
        assert "launch" not in r.values(), l2
        assert (r[28], r[30]) == ("dram", "dram")
        assert a.summary.launch_floor_us is None
        assert not any("us floor" in line for line in a.summary.lesson)


def test_a_large_size_at_the_floor_is_not_launch_bound() -> None:
    # 2^28 reads 5.8 us (a kernel that did not run, say): it cannot be a launch floor.
    rows = [(16, 5.8), (20, 5.8), (22, 5.7), (24, 12.3), (26, 88.3), (28, 5.8), (30, 2939.7)]
    for l2 in (128 * MiB, None):
        r = regimes(analyse(sweep_doc(rows, name=None, l2_bytes=l2)))
        assert r[28] != "launch" and r[16] == "launch", l2


def test_one_size_at_the_floor_needs_evidence() -> None:
    # T4-like: 4 MiB L2, 5 us floor. Only 2^16 sits at the floor, but 2^20 moves 16x the
    # bytes in 2.1x the time: 2^16 was overhead, not data.
    def bw(ws: float) -> float:
        return 0.4e12 if ws <= 3 * MiB else 0.25e12

    rows = modelled([16, 20, 24, 28], 2, 5.0, bw)
    r = regimes(analyse(sweep_doc(rows, name="Tesla T4", l2_bytes=4 * MiB)))
    assert r == {16: "launch", 20: "cache", 24: "dram", 28: "dram"}


def test_everything_in_cache_gives_no_dram_figure() -> None:
    rows = [(16, 5.9), (20, 5.8), (22, 5.7), (24, 12.3)]
    a = analyse(sweep_doc(rows, name="NVIDIA RTX PRO 6000 Blackwell Server Edition", l2_bytes=128 * MiB))
    assert regimes(a)[24] == "cache"
    assert a.summary.dram_tbps is None and a.summary.dram_pct_of_spec is None
    assert any("every size fitted in the cache" in n for n in a.summary.notes)
    assert not any("settles" in line for line in a.summary.lesson)


def test_without_sizes_far_beyond_the_cache_the_plateau_is_an_estimate() -> None:
    rows = modelled(range(16, 27), 2, 2.5, h200_bandwidth)  # up to 128 MiB, 2.1x the L2
    a = analyse(sweep_doc(rows, name="NVIDIA H200", l2_bytes=60 * MiB))
    assert regimes(a)[26] == "dram"
    # one DRAM-bound size is one point, not a plateau: no figure, and the reason is given
    s = a.summary
    assert s.dram_tbps is None and s.dram_from_log2 == [] and not s.dram_is_estimate
    assert s.plateau_status == "one point" and s.dram_sizes == [26]
    assert s.plateau_reason is not None and s.plateau_reason.startswith(
        "one point: inconclusive (it would rest on 2^26 alone, at 3.90 TB/s"
    )
    assert any("may still be partly cached" in n for n in s.notes)
    assert not any("settles" in line for line in s.lesson)
    assert any(line.startswith("DRAM plateau: one point: inconclusive") for line in s.lesson)
    # two DRAM-bound sizes that agree name it, an estimate still: neither is 4x the cache
    flat = modelled(range(16, 27), 2, 2.5, lambda ws: 10e12 if ws <= 30 * MiB else 3.9e12)
    b = analyse(sweep_doc(flat, name="NVIDIA H200", l2_bytes=40 * MiB))
    assert b.summary.plateau_status == "plateau" and b.summary.dram_from_log2 == [24, 25, 26]
    assert b.summary.dram_is_estimate and b.summary.dram_tbps == pytest.approx(3.9)
    assert "(an estimate: no size was far beyond the cache)" in b.summary.lesson[-1]


def test_a_plateau_above_the_spec_is_not_a_dram_figure() -> None:
    # The tutorial's sweep stopped at 2^26: 3.04 TB/s is L2-assisted, not DRAM.
    rows = [(16, 5.9), (20, 5.8), (22, 5.7), (24, 12.3), (26, 88.3)]
    a = analyse(sweep_doc(rows, name="NVIDIA RTX PRO 6000 Blackwell Server Edition", l2_bytes=128 * MiB))
    assert regimes(a)[26] == "transition"
    assert a.summary.dram_tbps is None and a.summary.dram_from_log2 == []
    assert any("above the 1.597 TB/s DRAM spec" in n for n in a.summary.notes)
    assert not any("settles" in line for line in a.summary.lesson)
    # a spec that does not match the device is called out, and the data is trusted
    slow_spec = BY_KEY["l4"]
    b = analyse(TUTORIAL, slow_spec)
    assert (regimes(b)[28], regimes(b)[30]) == ("dram", "dram")
    assert any("either the spec does not match" in n for n in b.summary.notes)


def test_skipped_sizes_are_reported() -> None:
    doc = sweep_doc([(16, 5.9), (20, 5.8)], name=None, l2_bytes=None)
    doc["skipped"] = [{"log2": 30, "reason": "needs 2.0 GiB, only 1.0 GiB may be used"}]
    assert "2^30 skipped: needs 2.0 GiB, only 1.0 GiB may be used" in analyse(doc).summary.notes


def test_classifier_on_nothing() -> None:
    result = regimes_mod.classify_regimes([], cache_bytes=None)
    assert result.regimes == [] and result.plateau_bytes_per_s is None


# --- real CPU recordings (tests/data, made with lab_scripts/sweep.py --device cpu) ---


@pytest.mark.parametrize("path", CPU_SWEEPS, ids=lambda p: p.stem)
def test_cpu_recordings(path: Path) -> None:
    doc = json.loads(path.read_text())
    a = analyse(doc)
    seq = [p.regime for p in a.rows]
    s = a.summary
    assert s.device_type == "cpu" and s.spec_name is None and s.dram_pct_of_spec is None
    assert s.basis == "cache size" and s.l2_bytes == 32 * MiB and "L3" in (s.l2_source or "")
    # the smallest sizes are launch-bound, the largest DRAM-bound
    assert seq[:4] == ["launch"] * 4 and seq[-2:] == ["dram", "dram"]
    # launch only as a prefix; cache never after a size that outgrew the cache
    first_other = seq.index(next(r for r in seq if r != "launch"))
    assert "launch" not in seq[first_other:]
    outgrown = [p.regime for p in a.rows if p.tensor_bytes > 32 * MiB]
    assert "cache" not in outgrown and "launch" not in outgrown
    assert s.launch_floor_us is not None and 1.0 < s.launch_floor_us < 4.0
    # a named plateau is two DRAM-bound sizes or more within 10% of each other; float32's
    # two disagree (19%), and 16-bit floats on a CPU are no bandwidth test at all
    expected = {
        "float64": "plateau",
        "float32": "disagree",
        "float16": "not a bandwidth test",
        "bfloat16": "not a bandwidth test",
    }
    assert s.plateau_status == expected[doc["dtype"]]
    if s.dram_tbps is not None:
        assert 0.03 < s.dram_tbps < 0.07  # ~50 GB/s on this VM
        plateau = [p.tbps for p in a.rows if p.log2 in s.dram_from_log2]
        assert len(plateau) >= 2 and max(plateau) / min(plateau) - 1 <= sweep_models.PLATEAU_AGREEMENT
    else:
        assert s.dram_from_log2 == [] and s.plateau_reason
    # bytes follow the element size, whatever the dtype
    for row in a.rows:
        assert row.bytes_per_call == 2 * row.elements * doc["element_size"]


def _cpu(dtype: str) -> sweep_models.SweepAnalysis:
    return analyse(json.loads((DATA / f"sweep_cpu_{dtype}_epyc-2c-l3-32mib.json").read_text()))


def test_cpu_float64_recording_shows_a_cache_several_times_faster_than_dram() -> None:
    s = _cpu("float64").summary
    assert s.cache_peak_tbps is not None and s.dram_tbps is not None
    assert s.cache_peak_tbps > 3 * s.dram_tbps
    # the sentence carries the measured figures: the ratio, the plateau, the working set
    ratio = s.cache_peak_tbps / s.dram_tbps
    assert f"{ratio:.2f}x this device's measured DRAM plateau ({s.dram_tbps:.3g} TB/s)" in s.lesson[1]
    assert "it ran from the cache (working set 4.00 MiB < 32.0 MiB last-level cache), not from memory" in s.lesson[1]
    assert "dispatching one torch operation" in s.lesson[0]


def test_cpu_float32_recording_names_no_plateau_from_two_sizes_that_disagree() -> None:
    s = _cpu("float32").summary
    assert s.dram_tbps is None and s.dram_sizes == [27, 28] and s.plateau_spread == pytest.approx(0.187, abs=0.001)
    assert s.plateau_reason == (
        "the DRAM-bound sizes disagree: inconclusive (TB/s 2^27 0.0433, 2^28 0.0514: no two neighbours "
        "within 10%; rerun with more --iters, or on a quieter machine)"
    )
    # the cache peak is reported, but no ratio to a plateau that was not measured
    assert "with no DRAM plateau measured this run cannot say how much faster" in s.lesson[1]
    assert not any("settles" in line for line in s.lesson)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_on_a_cpu_is_not_a_bandwidth_test(dtype: str) -> None:
    # the CPU converts every element: the cache sizes run at DRAM speed, whatever the memory
    a = _cpu(dtype)
    s = a.summary
    assert not s.bandwidth_test and s.plateau_status == "not a bandwidth test"
    assert s.dram_tbps is None and s.cache_peak_tbps is None
    assert s.lesson[0].startswith(f"{dtype} on a CPU is converted to float32 and back element by element")
    assert "this is not a bandwidth test there" in s.lesson[0]
    text = " ".join(s.lesson)
    assert "from the cache" not in text and "served from" not in text and "settles" not in text
    assert [p.regime for p in a.rows][-1] == "dram"  # the curve is still described


def test_the_tutorials_float32_mistake() -> None:
    # The tutorial's script computes bytes as 2 x n x 2 whatever the dtype.
    a = _cpu("float32")
    for row in a.rows:
        tutorial_tbps = 2 * row.elements * sweep_words.TUTORIAL_ASSUMED_ELEMENT_SIZE / row.seconds_per_call / 1e12
        assert row.bytes_per_call == 2 * sweep_record.bytes_moved(row.elements, 2)
        assert row.tbps == pytest.approx(2 * tutorial_tbps)
    assert any("would print 0.500x these bandwidths" in line for line in a.summary.lesson)
    # a document that counted float32 bytes the tutorial's way is refused
    doc = sweep_doc([(20, 10.0)], name=None, l2_bytes=None, element_size=4, dtype="float32")
    doc["rows"][0]["bytes_per_call"] = 2 * (1 << 20) * 2
    with pytest.raises(ValidationError, match=r"2 x 1048576 elements x 4 B is 8388608"):
        sweep_record.SweepRecord.model_validate(doc)


# --- rates and the roofline ---


lesson1_doc = lesson1_json  # the tutorial-sized work description, shared with the report tests


def test_roofline_arithmetic() -> None:
    roof = roofline.roofline(flops_per_s=400e12, intensity=8192 / 3, peak_flops_per_s=989e12, peak_bytes_per_s=3.35e12)
    assert roof.ridge == pytest.approx(295.2, abs=0.1)
    assert roof.bound == "compute"
    assert roof.attainable_flops_per_s == 989e12
    assert roof.pct_of_attainable == pytest.approx(40.4, abs=0.1)
    low = roofline.roofline(flops_per_s=0.8e12, intensity=0.25, peak_flops_per_s=989e12, peak_bytes_per_s=3.35e12)
    assert low.bound == "memory"
    assert low.attainable_flops_per_s == pytest.approx(0.8375e12)
    assert low.pct_of_attainable == pytest.approx(95.5, abs=0.1)


def test_tutorial_lesson1_on_the_rtx_pro_6000() -> None:
    ref = REFERENCE_LESSON1["tutorial-rtx-pro-6000"]
    record = lesson1_record.Lesson1Record.model_validate(
        lesson1_doc(BY_KEY[ref.gpu_key].name, ref.scale_avg_us, ref.gemm_avg_us)
    )
    a = lesson1_rates.analyze_lesson1(record)
    scale, gemm = a.ranges
    assert scale.tbps == pytest.approx(1.48, abs=0.005)
    assert scale.pct_of_bw_peak == pytest.approx(92.7, abs=0.1)
    assert scale.bw_label == "1.597 TB/s, RTX PRO 6000 Blackwell Server Edition datasheet"
    assert scale.intensity == 0.25
    assert gemm.tflops == pytest.approx(404.3, abs=0.1)
    assert gemm.intensity == pytest.approx(8192 / 3)
    # the table has no verified FP16 peak for this GPU: no verdict, said so
    assert gemm.roofline is None and gemm.pct_of_flops_peak is None
    assert any("compute peak" in n for n in a.notes)
    assert "memory is not what limits it" in a.lesson[1]
    assert a.lesson[0].startswith("memory_bound_scale: 725 us per call, 1.48 TB/s (93% of 1.597 TB/s")
    assert "0.250 FLOP/byte" in a.lesson[0]
    # with a peak given, the verdicts follow
    given = lesson1_rates.analyze_lesson1(record, peak_tflops=500)
    assert given.ranges[0].roofline is not None and given.ranges[0].roofline.bound == "memory"
    assert given.ranges[1].roofline is not None and given.ranges[1].roofline.bound == "compute"
    assert given.ranges[1].roofline.ridge == pytest.approx(500e12 / 1597e9)
    assert "above the ridge at 313 FLOP/byte: compute-bound, at 81% of the attainable 500 TFLOP/s" in given.lesson[1]
    assert "404 TFLOP/s (81% of 500 TFLOP/s (given))" in given.lesson[1]
    assert "memory-bound" in given.lesson[0]


def test_lesson1_on_an_h100_with_profiler_times() -> None:
    record = lesson1_record.Lesson1Record.model_validate(lesson1_doc("NVIDIA H100 80GB HBM3", 400.0, 1500.0))
    a = lesson1_rates.analyze_lesson1(
        record,
        seconds_per_call={"memory_bound_scale": 350e-6},
        timing_source="nsys nvtx_gpu_proj_sum",
    )
    scale, gemm = a.ranges
    assert a.timing_source == "nsys nvtx_gpu_proj_sum" and a.spec_name == "NVIDIA H100 80GB HBM3"
    assert scale.seconds_per_call == 350e-6  # the profiler's figure replaced the script's
    assert gemm.seconds_per_call == 1500e-6
    assert scale.roofline is not None and scale.roofline.bound == "memory"
    assert scale.flops_label == "67 TFLOP/s FP32 (CUDA cores), NVIDIA H100 SXM datasheet"
    assert gemm.roofline is not None and gemm.roofline.bound == "compute"
    assert gemm.flops_label == "989 TFLOP/s dense FP16 tensor, NVIDIA H100 SXM datasheet"
    assert gemm.pct_of_flops_peak == pytest.approx(2 * 8192**3 / 1500e-6 / 989e12 * 100)


def test_lesson1_cpu_recording() -> None:
    path = DATA / "lesson1_cpu_float32_epyc-2c-l3-32mib.json"
    a = lesson1_rates.analyze_lesson1(lesson1_record.Lesson1Record.model_validate_json(path.read_text()))
    assert a.device_type == "cpu" and a.scaled_down and a.spec_name is None
    assert all(r.roofline is None and r.pct_of_bw_peak is None for r in a.ranges)
    assert any("CPU" in n for n in a.notes)
    scale, gemm = a.ranges
    assert scale.bytes_per_call == 2 * (1 << 22) * 4
    assert gemm.flops_per_call == 2 * 512**3
    assert gemm.tflops > 0 and scale.tbps > 0


def test_rates_refuse_a_zero_time() -> None:
    with pytest.raises(ValueError, match="seconds per call must be positive"):
        roofline.rates(name="x", bytes_per_call=1, flops_per_call=1, seconds_per_call=0.0)


def test_a_size_held_by_something_else_is_said_to_be() -> None:
    # 2^16 float32 on a busy 2-vCPU machine: 9.43 ms where 2^14 took 2.94 us (a parallel op
    # waiting for its second thread), as recorded by the report tests' CPU runs
    doc = sweep_doc(
        [(12, 2.95), (14, 2.94), (16, 9430.0)],
        name="Intel(R) Xeon(R) Processor",
        l2_bytes=480 * MiB,
        element_size=4,
        dtype="float32",
        device_type="cpu",
    )
    (note,) = [n for n in analyse(doc).summary.notes if "held it" in n]
    # a CPU dispatches an op; it launches no kernel (the note said "launches" before)
    assert note.startswith(
        "2^16 took 3210x the time of 2^14 for 4.00x the bytes: something other than memory or dispatching the op "
        "held it (on a CPU"
    )
    assert not any("held it" in n for n in analyse(TUTORIAL).summary.notes)
