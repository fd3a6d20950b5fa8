"""What a bandwidth sweep comes to: the result a run stores and prints, and the
tutorial's "predict, then measure" check between two of them.

- `build_result`: the analysis (`sweep_analysis`: regimes, launch floor, cache peak, DRAM
  plateau against the GPU's spec), the headline, and the tutorial's reference curve
  beside it.
- `compare_results`: going from float16 to float32 doubles the bytes per element; where
  the op is bandwidth-bound (DRAM) the time per call should double and the TB/s stay the
  same; at the launch floor the time should not move. The tolerances of that verdict are
  the named constants below; a verdict needs two sizes DRAM-bound in both runs, each
  judged, and is never firmer than its rows.

No I/O here: `nsightlab.measure.bandwidth_sweep` runs the script and stores runs;
`nsightlab.runs.sweeps` reads sweep files and stored runs; the record is read by
`nsightlab.parse.records.sweep_record`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from nsightlab import units
from nsightlab.analysis.explain.sweep_words import headline, sizes_text, tb_text
from nsightlab.analysis.roofline import PlateauSource
from nsightlab.analysis.sweep_analysis import SIXTEEN_BIT, analyze_sweep
from nsightlab.analysis.sweep_models import SweepAnalysis, SweepPoint, SweepSummary
from nsightlab.analysis.sweep_options import SIZE_MAX_LOG2, SIZE_MIN_LOG2
from nsightlab.models import Model
from nsightlab.parse.records.sweep_record import SweepRecord
from nsightlab.specs.gpus import REFERENCE_SWEEPS, lookup

#: The check agrees when the DRAM-regime time ratio is within this fraction of the
#: element-size ratio (x2 for float16 -> float32) ...
COMPARE_TIME_TOLERANCE = 0.15
#: ... and the DRAM-regime TB/s ratio within this fraction of 1.
COMPARE_TBPS_TOLERANCE = 0.15
#: At the launch floor the time should not follow the bytes: within this fraction of 1.
COMPARE_LAUNCH_TOLERANCE = 0.25
#: The prediction is judged on at least this many sizes DRAM-bound in both runs.
COMPARE_MIN_DRAM_SIZES = 2

#: The published sweep shown beside a run on the same GPU.
REFERENCE_KEY = "tutorial-rtx-pro-6000"


# ---------------------------------------------------------------------------- models


class SweepResultRow(SweepPoint):
    """A measured size, with the reference curve's TB/s at the same size when it applies."""

    reference_tbps: float | None = None


class ReferenceRow(Model):
    log2: int
    mib: float
    us: float
    tbps: float
    regime: str


class ReferenceCurve(Model):
    """A published sweep, analysed like a measured one."""

    key: str
    source: str
    gpu: str
    dtype: str
    element_size: int
    matches_device: bool  # the run was on this very GPU: its rows sit beside the measured ones
    launch_floor_us: float | None
    cache_peak_tbps: float | None
    cache_peak_log2: int | None
    dram_tbps: float | None
    dram_pct_of_spec: float | None
    spec_label: str | None
    rows: list[ReferenceRow]


class CompareSide(Model):
    run_id: str | None
    dtype: str
    element_size: int
    device: str | None
    device_type: str
    target: str
    launch_floor_us: float | None
    dram_tbps: float | None


class ComparePair(Model):
    """One size measured in both runs. Ratios are b / a (a has the smaller elements)."""

    log2: int
    elements: int
    regime_a: str
    regime_b: str
    us_a: float
    us_b: float
    tbps_a: float
    tbps_b: float
    time_ratio: float
    tbps_ratio: float
    expected_time_ratio: float | None  # only where the prediction is sharp: launch, dram
    agrees: bool | None
    spread_a: float | None = None  # (slowest - fastest batch) / median, for judging noise
    spread_b: float | None = None


class SweepCompare(Model):
    """Predict, then measure: the same sizes in two dtypes."""

    a: CompareSide
    b: CompareSide
    element_ratio: float  # b's element size / a's
    same_device: bool
    pairs: list[ComparePair]
    dram_sizes: list[int]  # log2 of the sizes DRAM-bound in both runs
    launch_sizes: list[int]
    time_ratio: float | None  # median over dram_sizes
    tbps_ratio: float | None  # median over dram_sizes, else the ratio of the plateaus
    launch_time_ratio: float | None
    plateau_ratio: float | None
    expected_time_ratio: float
    expected_tbps_ratio: float
    time_tolerance: float
    tbps_tolerance: float
    verdict: Literal["agrees", "disagrees", "inconclusive"]
    reason: str | None = None  # why this verdict, in a few words ("one DRAM-bound size")
    prediction: str
    lines: list[str]
    notes: list[str]


class SweepResult(Model):
    """One analysed sweep: what `nsightlab sweep --json` prints and `result.json` holds."""

    kind: Literal["sweep"] = "sweep"
    run_id: str | None = None
    run_dir: str | None = None
    created: datetime | None = None
    source: str | None = None  # the file it was read from (`analyze`), if not a fresh run
    target: str
    where: dict[str, Any] = Field(default_factory=dict)
    command: list[str] = Field(default_factory=list)
    script_argv: list[str] = Field(default_factory=list)
    dtype: str
    element_size: int
    iters: int
    warmup: int
    op: str = "scale"
    impl: str = "torch"
    kernels_per_call: int = 1
    interpreted: bool = False  # Triton's interpreter ran it: correctness only
    device: dict[str, Any]
    headline: str
    rows: list[SweepResultRow]
    summary: SweepSummary
    reference: ReferenceCurve | None = None
    compare: SweepCompare | None = None
    record: SweepRecord

    @model_validator(mode="after")
    def _judged_by_todays_rules(self) -> SweepResult:
        """A result stored before plateaus were judged (no `plateau_status`) is analysed
        again from its record: an old run never shows a plateau, a cache claim or a lesson
        that today's rules would not make. Its run, target and comparison stay as stored."""
        if self.summary.plateau_status is None:
            fresh = build_result(self.record, target=self.target)
            self.rows, self.summary, self.headline = fresh.rows, fresh.summary, fresh.headline
            self.op, self.impl, self.kernels_per_call, self.interpreted = (
                fresh.op,
                fresh.impl,
                fresh.kernels_per_call,
                fresh.interpreted,
            )
        return self


# ---------------------------------------------------------------------------- building a result


def reference_curve(analysis: SweepAnalysis) -> ReferenceCurve | None:
    """The tutorial's sweep, analysed; `matches_device` when the run was on its GPU."""
    ref = REFERENCE_SWEEPS.get(REFERENCE_KEY)
    if ref is None:
        return None
    ra = analyze_sweep(SweepRecord.model_validate(ref.as_sweep_json()))
    s = ra.summary
    mine = analysis.summary
    measured_spec = lookup(mine.device_name) if mine.device_type == "cuda" else None
    return ReferenceCurve(
        key=ref.key,
        source=ref.source,
        gpu=s.spec_name or s.device_name or ref.gpu_key,
        dtype=ref.dtype,
        element_size=ref.element_size,
        matches_device=measured_spec is not None and measured_spec.key == ref.gpu_key,
        launch_floor_us=s.launch_floor_us,
        cache_peak_tbps=s.cache_peak_tbps,
        cache_peak_log2=s.cache_peak_log2,
        dram_tbps=s.dram_tbps,
        dram_pct_of_spec=s.dram_pct_of_spec,
        spec_label=s.spec_label,
        rows=[ReferenceRow(log2=p.log2, mib=p.mib, us=p.us, tbps=p.tbps, regime=p.regime) for p in ra.rows],
    )


def build_result(
    record: SweepRecord,
    *,
    target: str,
    where: dict[str, Any] | None = None,
    run_id: str | None = None,
    run_dir: str | None = None,
    created: datetime | None = None,
    source: str | None = None,
    command: Sequence[str] = (),
    script_argv: Sequence[str] = (),
    against: SweepResult | None = None,
) -> SweepResult:
    """Analyse a record (spec from the GPU's name) and put together everything shown."""
    spec = lookup(record.device.name) if record.device.type == "cuda" else None
    analysis = analyze_sweep(record, spec)
    reference = reference_curve(analysis)
    ref_tbps = {r.log2: r.tbps for r in reference.rows} if reference and reference.matches_device else {}
    rows = [SweepResultRow(**p.model_dump(), reference_tbps=ref_tbps.get(p.log2)) for p in analysis.rows]
    result = SweepResult(
        run_id=run_id,
        run_dir=run_dir,
        created=created,
        source=source,
        target=target,
        where=dict(where or {}),
        command=list(command),
        script_argv=list(script_argv),
        dtype=record.dtype,
        element_size=record.element_size,
        iters=record.iters,
        warmup=record.warmup,
        op=record.op,
        impl=record.impl,
        kernels_per_call=record.kernels,
        interpreted=record.is_interpreted,
        device=record.device.model_dump(mode="json"),
        headline=headline(analysis.summary),
        rows=rows,
        summary=analysis.summary,
        reference=reference,
        record=record,
    )
    if against is not None:
        result.compare = compare_results(result, against)
    return result


# ---------------------------------------------------------------------------- predict, then measure


def _side(r: SweepResult) -> CompareSide:
    return CompareSide(
        run_id=r.run_id,
        dtype=r.dtype,
        element_size=r.element_size,
        device=r.summary.device_name,
        device_type=r.summary.device_type,
        target=r.target,
        launch_floor_us=r.summary.launch_floor_us,
        dram_tbps=r.summary.dram_tbps,
    )


def _judge_pair(ra: SweepResultRow, rb: SweepResultRow, ratio: float) -> tuple[float | None, bool | None]:
    """The expected time ratio at this size and whether the measurement meets it (None
    where the prediction is not sharp: cache and transition sizes)."""
    t_ratio = rb.seconds_per_call / ra.seconds_per_call
    if ra.regime == rb.regime == "dram":
        bw_ratio = rb.tbps / ra.tbps
        ok = abs(t_ratio / ratio - 1) <= COMPARE_TIME_TOLERANCE and abs(bw_ratio - 1) <= COMPARE_TBPS_TOLERANCE
        return ratio, ok
    if ra.regime == rb.regime == "launch":
        return 1.0, abs(t_ratio - 1) <= COMPARE_LAUNCH_TOLERANCE
    return None, None


def _which(pairs: Sequence[ComparePair], agree: bool) -> list[int]:
    return [p.log2 for p in pairs if p.agrees is agree]


def _not_a_bandwidth_test(r: SweepResult) -> str | None:
    """Why a run cannot test a bandwidth prediction, or None."""
    s = r.summary
    if r.interpreted or s.interpreted:
        return f"run {r.run_id or '-'} ran in Triton's interpreter: correctness only"
    if s.device_type == "cpu" and r.dtype in SIXTEEN_BIT:
        return f"{r.dtype} on a CPU is not a bandwidth test: each element is converted"
    return None


def compare_results(x: SweepResult, y: SweepResult) -> SweepCompare:
    """Check the prediction on two sweeps: in the DRAM regime, time follows the element
    size and TB/s stays put; at the launch floor, time stays put.

    The verdict is never firmer than the rows: it needs COMPARE_MIN_DRAM_SIZES sizes
    DRAM-bound in both runs, and `agrees` (or `disagrees`) only when every one of them
    does; rows that split make it `inconclusive`, with the sizes named in `reason`."""
    a, b = (x, y) if x.element_size <= y.element_size else (y, x)
    ratio = b.element_size / a.element_size
    notes: list[str] = []
    same_device = (a.summary.device_name, a.summary.device_type) == (b.summary.device_name, b.summary.device_type)
    if not same_device:
        notes.append(
            f"the runs are on different devices ({a.summary.device_name or a.summary.device_type} vs "
            f"{b.summary.device_name or b.summary.device_type}): the check needs one device"
        )
    if a.target != b.target:
        notes.append(
            f"the runs ran on different targets (run {a.run_id or '-'} on {a.target}, run {b.run_id or '-'} on "
            f"{b.target}): what differs between them is in the figures too, not only the element size"
        )
    if a.dtype == b.dtype:
        notes.append(f"both runs are {a.dtype}: this checks that the run repeats, not the prediction")
    if (a.impl, a.op) != (b.impl, b.op):
        notes.append(f"the runs differ in more than the type ({a.impl} {a.op} vs {b.impl} {b.op})")
    by_log2 = {r.log2: r for r in b.rows}
    pairs: list[ComparePair] = []
    for ra in a.rows:
        rb = by_log2.get(ra.log2)
        if rb is None or ra.elements != rb.elements:
            continue
        expected, agrees = _judge_pair(ra, rb, ratio)
        pairs.append(
            ComparePair(
                log2=ra.log2,
                elements=ra.elements,
                regime_a=ra.regime,
                regime_b=rb.regime,
                us_a=ra.us,
                us_b=rb.us,
                tbps_a=ra.tbps,
                tbps_b=rb.tbps,
                time_ratio=rb.seconds_per_call / ra.seconds_per_call,
                tbps_ratio=rb.tbps / ra.tbps,
                expected_time_ratio=expected,
                agrees=agrees,
                spread_a=ra.spread,
                spread_b=rb.spread,
            )
        )
    if not pairs:
        notes.append("the runs have no size in common: sizes are compared at equal element counts")
    dram = [p for p in pairs if p.regime_a == p.regime_b == "dram"]
    launch = [p for p in pairs if p.regime_a == p.regime_b == "launch"]
    time_ratio = statistics.median(p.time_ratio for p in dram) if dram else None
    tbps_ratio = statistics.median(p.tbps_ratio for p in dram) if dram else None
    launch_ratio = statistics.median(p.time_ratio for p in launch) if launch else None
    pa, pb = a.summary.dram_tbps, b.summary.dram_tbps
    plateau_ratio = pb / pa if pa and pb else None

    names = f"{b.dtype} ({b.element_size} B per element) vs {a.dtype} ({a.element_size} B)"
    prediction = (
        f"Prediction: {names}: {units.sig(ratio)}x the bytes for the same element count. Where the op is "
        f"bandwidth-bound (DRAM) the time per call should be x{ratio:g} and the TB/s the same; "
        "at the launch floor the time should not change."
    )
    lines: list[str] = []
    tol = f"time within ±{COMPARE_TIME_TOLERANCE:.0%} of x{ratio:g}, TB/s within ±{COMPARE_TBPS_TOLERANCE:.0%}"
    if dram:
        ok, no = _which(dram, True), _which(dram, False)
        where = "every one" if not no else ("none" if not ok else f"{sizes_text(ok)}, not at {sizes_text(no)}")
        assert time_ratio is not None and tbps_ratio is not None
        lines.append(
            f"Measured in the DRAM regime ({sizes_text([p.log2 for p in dram])}): time x{units.sig(time_ratio)}, "
            f"TB/s x{units.sig(tbps_ratio)} ({b.dtype} vs {a.dtype}, medians); as predicted at {where}."
        )
    verdict: Literal["agrees", "disagrees", "inconclusive"] = "inconclusive"
    unfit = [why for why in (_not_a_bandwidth_test(a), _not_a_bandwidth_test(b)) if why]
    reason: str
    if not same_device:
        reason = "different devices"
    elif unfit:
        reason = unfit[0]
    elif len(dram) >= COMPARE_MIN_DRAM_SIZES:
        ok, no = _which(dram, True), _which(dram, False)
        if not no:
            verdict, reason = "agrees", f"{len(dram)} DRAM-bound sizes, each as predicted"
        elif not ok:
            verdict, reason = "disagrees", f"{len(dram)} DRAM-bound sizes, none as predicted"
        else:
            reason = f"the DRAM-bound sizes split: {sizes_text(ok)} as predicted, {sizes_text(no)} not"
    elif len(dram) == 1:
        reason = "one DRAM-bound size"
    elif plateau_ratio is not None:
        tbps_ratio = plateau_ratio
        ok_plateau = abs(plateau_ratio - 1) <= COMPARE_TBPS_TOLERANCE
        verdict = "agrees" if ok_plateau else "disagrees"
        reason = "no size DRAM-bound in both: the two plateaus compared"
        tol = f"TB/s within ±{COMPARE_TBPS_TOLERANCE:.0%}; no size was DRAM-bound in both, so time is not checked"
        lines.append(
            f"Measured: DRAM plateau {tb_text(pb or 0)} for {b.dtype} vs {tb_text(pa or 0)} for {a.dtype} "
            f"(x{units.sig(plateau_ratio)})."
        )
    else:
        reason = "no size was DRAM-bound in both runs"
    if verdict == "agrees":
        lines.append(
            f"The measurement agrees with the prediction ({tol}): the op is bandwidth-bound, so bytes, not "
            "elements, set its speed."
        )
    elif verdict == "disagrees":
        assert tbps_ratio is not None
        conversion = (
            f" (on a CPU, typically converting {a.dtype} to float32 and back)"
            if a.summary.device_type == "cpu" and a.dtype in SIXTEEN_BIT
            else ""
        )
        why = (
            f"{b.dtype} moved bytes faster than {a.dtype}: the narrower type did not reach the memory "
            f"ceiling, so something else limits it{conversion}"
            if tbps_ratio > 1 + COMPARE_TBPS_TOLERANCE
            else f"{b.dtype} moved bytes slower than {a.dtype}: at these sizes the op is not purely "
            "bandwidth-bound, or a run was disturbed (rerun with more --iters)"
            if tbps_ratio < 1 - COMPARE_TBPS_TOLERANCE
            else "the time did not follow the bytes"
        )
        lines.append(f"The measurement does not agree with the prediction ({tol}): {why}.")
    else:
        advice = ""
        if reason in ("one DRAM-bound size", "no size was DRAM-bound in both runs"):
            cache = a.summary.l2_bytes or b.summary.l2_bytes
            if cache:
                need = min(SIZE_MAX_LOG2, max(SIZE_MIN_LOG2, (4 * cache // a.element_size - 1).bit_length()))
                advice = (
                    f" Rerun both with sizes several times the cache (at least 2^{need} elements here: 4x the "
                    f"{units.size(cache)} cache), e.g. --sizes 12,{need},{min(need + 1, SIZE_MAX_LOG2)}."
                )
            else:
                advice = " Rerun both with sizes several times the cache, e.g. --sizes 16,26,28,30 on a GPU."
        elif reason.startswith("the DRAM-bound sizes split"):
            advice = " Look at the SPREAD columns: rerun with more --iters, or on a quieter machine."
        lines.append(f"Inconclusive: {reason}.{advice}")
    if launch_ratio is not None:
        ok, no = _which(launch, True), _which(launch, False)
        if not no:
            said = "the bytes did not matter there, as predicted at every size."
        elif not ok:
            said = (
                "not as predicted at any size: the time changed with the type there (noise at the floor, or those "
                "sizes were not all overhead)."
            )
        else:
            off = ", ".join(f"2^{p.log2} x{units.sig(p.time_ratio)}" for p in launch if p.agrees is False)
            said = f"as predicted at {sizes_text(ok)}, not at {off} (noise at the floor: see the SPREAD columns)."
        lines.append(
            f"At the launch floor ({sizes_text([p.log2 for p in launch])}): time x{units.sig(launch_ratio)} "
            f"(median); {said}"
        )
    return SweepCompare(
        a=_side(a),
        b=_side(b),
        element_ratio=ratio,
        same_device=same_device,
        pairs=pairs,
        dram_sizes=[p.log2 for p in dram],
        launch_sizes=[p.log2 for p in launch],
        time_ratio=time_ratio,
        tbps_ratio=tbps_ratio,
        launch_time_ratio=launch_ratio,
        plateau_ratio=plateau_ratio,
        expected_time_ratio=ratio,
        expected_tbps_ratio=1.0,
        time_tolerance=COMPARE_TIME_TOLERANCE,
        tbps_tolerance=COMPARE_TBPS_TOLERANCE,
        verdict=verdict,
        reason=reason,
        prediction=prediction,
        lines=lines,
        notes=notes,
    )


# ---------------------------------------------------------------------------- the floor's plateau


def plateau_source(result: SweepResult) -> PlateauSource:
    """The few fields of a sweep result the floor needs."""
    s = result.summary
    return PlateauSource(
        run_id=result.run_id,
        dtype=result.dtype,
        device_name=s.device_name,
        device_type=s.device_type,
        dram_tbps=s.dram_tbps,
        dram_is_estimate=s.dram_is_estimate,
    )
