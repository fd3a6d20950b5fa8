"""A bandwidth sweep's numbers: a row per size (TB/s, % of the DRAM spec, the regime it
was measured in: `regimes.classify_regimes`), and the summary (the launch floor, the
cache peak, the DRAM plateau named only when its sizes agree) that `explain.sweep_words`
turns into the lesson. Pure: a validated record (`parse.records.sweep_record`) in, a
`SweepAnalysis` out.

What the times can speak of decides what is claimed: a run in Triton's interpreter claims
no bandwidth (its regime is `interpreted`), and a 16-bit run on a CPU (which converts
every element) names no cache peak and no plateau.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence

from nsightlab import units
from nsightlab.analysis.explain.sweep_words import sweep_lesson, tb_text
from nsightlab.analysis.regimes import Regime, RegimeInput, classify_regimes
from nsightlab.analysis.sweep_models import PLATEAU_AGREEMENT, Plateau, SweepAnalysis, SweepPoint, SweepSummary
from nsightlab.parse.records.sweep_record import SweepRecord, SweepRow
from nsightlab.specs.gpus import GpuSpec, merge_device

#: A size whose time grew this many times more than its bytes over the size before it was
#: held by something other than memory or launches (a busy machine, a thread pool).
STALL_FACTOR = 4.0
#: A DRAM plateau is named only from at least this many DRAM-bound sizes whose bandwidths
#: agree within PLATEAU_AGREEMENT (`sweep_models`).
PLATEAU_MIN_POINTS = 2

#: 16-bit floats: a CPU converts them element by element, so a CPU sweep of them times
#: that arithmetic, not memory (lab_scripts/sweep.py says so in its notes).
SIXTEEN_BIT = ("float16", "bfloat16")


def _agreement(values: Sequence[float]) -> float:
    return max(values) / min(values) - 1


def name_plateau(points: Sequence[SweepPoint]) -> Plateau:
    """The DRAM plateau, named only from PLATEAU_MIN_POINTS DRAM-bound sizes or more whose
    TB/s agree within PLATEAU_AGREEMENT: the longest run of consecutive sizes that does
    (the larger sizes on a tie); its median. `points` are the plateau's candidates (the
    classifier's: the DRAM-bound sizes far enough past the cache). One of them is one
    point, and points that scatter more disagree: both inconclusive, with the reason."""
    dram = [p for p in sorted(points, key=lambda q: q.elements) if p.regime == "dram"]
    if not dram:
        return Plateau(
            status="none", log2s=[], tbps=None, spread=None, reason="no size was DRAM-bound: add larger --sizes"
        )
    if len(dram) < PLATEAU_MIN_POINTS:
        (only,) = dram
        return Plateau(
            status="one point",
            log2s=[],
            tbps=None,
            spread=None,
            reason=(
                f"one point: inconclusive (it would rest on 2^{only.log2} alone, at {tb_text(only.tbps)}; a plateau "
                f"needs {PLATEAU_MIN_POINTS} DRAM-bound sizes within {PLATEAU_AGREEMENT:.0%}: add larger --sizes)"
            ),
        )
    best: list[SweepPoint] = []
    for i in range(len(dram)):
        for j in range(i + 1, len(dram) + 1):
            run = dram[i:j]
            if _agreement([p.tbps for p in run]) > PLATEAU_AGREEMENT:
                break
            if len(run) >= len(best):  # ties go to the larger sizes
                best = run
    if len(best) < PLATEAU_MIN_POINTS:
        values = ", ".join(f"2^{p.log2} {units.tbps_value(p.tbps)}" for p in dram)
        return Plateau(
            status="disagree",
            log2s=[],
            tbps=None,
            spread=_agreement([p.tbps for p in dram]),
            reason=(
                f"the DRAM-bound sizes disagree: inconclusive (TB/s {values}: no two neighbours within "
                f"{PLATEAU_AGREEMENT:.0%}; rerun with more --iters, or on a quieter machine)"
            ),
        )
    spread = _agreement([p.tbps for p in best])
    return Plateau(
        status="plateau",
        log2s=[p.log2 for p in best],
        tbps=statistics.median(p.tbps for p in best),
        spread=spread,
        reason=f"{len(best)} DRAM-bound sizes within {units.percent(100 * spread)} of each other",
    )


def analyze_sweep(
    record: SweepRecord,
    spec: GpuSpec | None = None,
    *,
    use_table: bool = True,
    l2_bytes: int | None = None,
) -> SweepAnalysis:
    """Rates, regimes and a summary for a sweep.

    The cache size is `l2_bytes` if given, else what the device reported (the last-level
    cache on a CPU), else the spec table's. `spec` defaults to the table's entry for the
    reported GPU name (unless `use_table` is False); without one there is no % of spec.

    What the times can speak of decides what is claimed: a run in Triton's interpreter
    claims no bandwidth at all (its regime is `interpreted`), and a 16-bit run on a CPU
    (which converts every element) names no cache peak and no plateau.
    """
    dev = merge_device(record.device.model_dump(), spec, use_table=use_table)
    cache = l2_bytes if l2_bytes is not None else dev.l2_bytes
    cache_src = "given" if l2_bytes is not None else dev.l2_source
    interpreted = record.is_interpreted
    spec_bw = None if interpreted else dev.dram_bw_bytes_per_s
    rows = sorted(record.rows, key=lambda r: r.elements)
    inputs = [
        RegimeInput(
            working_set_bytes=r.tensor_bytes or r.elements * record.element_size,
            bytes_per_call=r.bytes_per_call,
            seconds_per_call=r.seconds_per_call,
        )
        for r in rows
    ]
    result = classify_regimes(inputs, cache_bytes=cache, dram_spec_bytes_per_s=spec_bw)
    regimes: list[Regime] = ["interpreted"] * len(rows) if interpreted else result.regimes
    points = [
        _point(r, p, regime, record.kernels, cache, spec_bw) for r, p, regime in zip(rows, inputs, regimes, strict=True)
    ]
    cpu_16bit = dev.device_type == "cpu" and record.dtype in SIXTEEN_BIT
    bandwidth_test = not interpreted and not cpu_16bit
    notes = list(dev.notes) + ([] if interpreted else result.notes)
    notes += [n for n in record.notes if n not in notes]
    notes += [f"2^{s.log2} skipped: {s.reason}" for s in record.skipped]
    if not interpreted:
        notes += _stalls(points, cpu=dev.device_type == "cpu")
    if interpreted:
        plateau = Plateau(
            status="interpreted",
            log2s=[],
            tbps=None,
            spread=None,
            reason="interpreted: correctness only (Triton's interpreter, not the device, was timed)",
        )
    elif cpu_16bit:
        plateau = Plateau(
            status="not a bandwidth test",
            log2s=[],
            tbps=None,
            spread=None,
            reason=f"{record.dtype} on a CPU is not a bandwidth test: each element is converted, so the times measure "
            "arithmetic",
        )
    else:
        plateau = name_plateau([points[i] for i in result.plateau_rows])
    cache_rows = [p for p in points if p.regime == "cache"] if bandwidth_test else []
    peak = max(cache_rows, key=lambda p: p.tbps) if cache_rows else None
    plateau_bps = plateau.tbps * 1e12 if plateau.tbps is not None else None
    summary = SweepSummary(
        device_name=dev.name,
        device_type=dev.device_type,
        dtype=record.dtype,
        element_size=record.element_size,
        basis=result.basis,
        launch_floor_us=result.floor_seconds * 1e6 if result.floor_seconds and not interpreted else None,
        cache_peak_tbps=peak.tbps if peak else None,
        cache_peak_log2=peak.log2 if peak else None,
        dram_tbps=plateau.tbps,
        dram_from_log2=plateau.log2s,
        dram_is_estimate=result.plateau_is_estimate and plateau.tbps is not None,
        dram_pct_of_spec=100.0 * plateau_bps / spec_bw if plateau_bps and spec_bw else None,
        spec_name=dev.spec_name,
        spec_dram_tbps=spec_bw / 1e12 if spec_bw else None,
        spec_label=dev.dram_bw_label if spec_bw else None,
        l2_bytes=cache,
        l2_source=cache_src,
        lesson=[],
        notes=notes,
        impl=record.impl,
        op=record.op,
        kernels_per_call=record.kernels,
        interpreted=interpreted,
        bandwidth_test=bandwidth_test,
        plateau_status=plateau.status,
        plateau_reason=plateau.reason,
        plateau_spread=plateau.spread,
        dram_sizes=[p.log2 for p in points if p.regime == "dram"],
    )
    summary.lesson = sweep_lesson(summary, points, record)
    return SweepAnalysis(rows=points, summary=summary)


def _point(
    r: SweepRow, p: RegimeInput, regime: Regime, kernels: int, cache: int | None, spec_bw: float | None
) -> SweepPoint:
    spread = r.spread_seconds()
    median = r.seconds_median if r.seconds_median is not None else r.seconds_per_call
    return SweepPoint(
        log2=r.log2,
        elements=r.elements,
        tensor_bytes=p.working_set_bytes,
        bytes_per_call=r.bytes_per_call,
        seconds_per_call=r.seconds_per_call,
        us=r.seconds_per_call * 1e6,
        mib=p.working_set_bytes / 2**20,
        tbps=p.bytes_per_s / 1e12,
        pct_of_dram_spec=100.0 * p.bytes_per_s / spec_bw if spec_bw and regime != "interpreted" else None,
        cache_ratio=p.working_set_bytes / cache if cache else None,
        regime=regime,
        us_min=spread[0] * 1e6 if spread else None,
        us_median=median * 1e6 if spread else None,
        us_max=spread[1] * 1e6 if spread else None,
        spread=(spread[1] - spread[0]) / median if spread else None,
        kernels_per_call=kernels,
        interpreted=regime == "interpreted",
    )


def _stalls(points: Sequence[SweepPoint], *, cpu: bool = False) -> list[str]:
    """Sizes whose time grew far more than their bytes over the size before: not memory,
    not a launch (on a CPU: not dispatch), but something that held the op (said, so no
    one reads them as bandwidth)."""
    fixed_cost = "dispatching the op" if cpu else "launches"
    out = []
    for a, b in itertools.pairwise(points):
        time_growth, bytes_growth = b.seconds_per_call / a.seconds_per_call, b.bytes_per_call / a.bytes_per_call
        if time_growth > STALL_FACTOR * bytes_growth:
            out.append(
                f"2^{b.log2} took {units.ratio(time_growth)} the time of 2^{a.log2} for "
                f"{units.ratio(bytes_growth)} the bytes: "
                f"something other than memory or {fixed_cost} held it"
                + (
                    " (on a CPU, often a parallel op waiting for a thread on a busy machine); rerun on a quieter "
                    "machine, or with OMP_NUM_THREADS=1"
                    if cpu
                    else " (another process on the GPU, a clock change); rerun on a quiet GPU"
                )
            )
    return out
