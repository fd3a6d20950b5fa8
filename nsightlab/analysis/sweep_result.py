"""What a bandwidth sweep comes to: the result models, and pure functions over them.

- `record_from_json`: a sweep JSON (the script's, or a stored `result.json`) validated.
- `build_result`: the analysis (regimes, launch floor, cache peak, DRAM plateau against
  the GPU's spec), the headline, and the tutorial's reference curve beside it.
- `compare_results`: the tutorial's "predict, then measure" check. Going from float16 to
  float32 doubles the bytes per element; where the op is bandwidth-bound (DRAM) the time
  per call should double and the TB/s stay the same; at the launch floor the time should
  not move. The tolerances of that verdict are the named constants below; a verdict needs
  two sizes DRAM-bound in both runs, each judged, and is never firmer than its rows.
- `compare_impls`: torch against a Triton kernel of the same op on the same device, size
  by size: the plateau each reaches, the launch floor of each, and for scale-add what
  fusing two kernels into one saves.

No I/O here: `nsightlab.measure.bandwidth_sweep` runs the script and stores runs;
`nsightlab.runs.sweeps` reads sweep files and stored runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from nsightlab import units
from nsightlab.analysis.sweep_analysis import (
    SIXTEEN_BIT,
    SweepAnalysis,
    SweepPoint,
    SweepRecord,
    SweepSummary,
    analyze_sweep,
)
from nsightlab.errors import ParseError, validation_message
from nsightlab.models import Model
from nsightlab.specs import bounds
from nsightlab.specs.gpus import REFERENCE_SWEEPS, lookup

#: Element sizes of the dtypes the sweep script accepts.
DTYPES: dict[str, int] = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
DEFAULT_DTYPE = "float16"  # on a GPU; the script's own default on a CPU is float32
#: What people type for them (PyTorch's own short names and the usual abbreviations).
DTYPE_ALIASES: dict[str, str] = {
    "fp16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "float": "float32",
    "fp64": "float64",
    "double": "float64",
}
DEFAULT_ITERS = 50
DEFAULT_WARMUP = 5
#: The range `--sizes` accepts (log2 of the element count): 1 Ki to 16 Gi elements.
SIZE_MIN_LOG2 = 10
SIZE_MAX_LOG2 = 34


def canonical_dtype(name: str) -> str | None:
    """The canonical name (a key of DTYPES) for a dtype or one of its aliases, else None.
    A `torch.` prefix and letter case are ignored: `fp16`, `half`, `torch.float16` are
    all float16."""
    key = name.strip().lower().removeprefix("torch.")
    if key in DTYPES:
        return key
    return DTYPE_ALIASES.get(key)


def dtype_choices() -> str:
    """The accepted names, each canonical one with its aliases: for help and errors."""
    parts = []
    for canonical in DTYPES:
        aliases = [a for a, c in DTYPE_ALIASES.items() if c == canonical]
        parts.append(f"{canonical} ({', '.join(aliases)})" if aliases else canonical)
    return ", ".join(parts)


#: What `--compare` runs when no --dtype is given: the type with the other element size.
COUNTERPART_DTYPE: dict[str, str] = {
    "float16": "float32",
    "bfloat16": "float32",
    "float32": "float16",
    "float64": "float32",
}
#: The same on a CPU, where 16-bit floats are converted element by element (not a
#: bandwidth test): float32's counterpart there is float64.
CPU_COUNTERPART_DTYPE: dict[str, str] = {**COUNTERPART_DTYPE, "float32": "float64"}


def counterpart_dtype(dtype: str, device_type: str) -> str:
    """The type `--compare` runs beside a stored run of `dtype` on `device_type`."""
    table = CPU_COUNTERPART_DTYPE if device_type == "cpu" else COUNTERPART_DTYPE
    return table.get(dtype, DEFAULT_DTYPE)


#: The check agrees when the DRAM-regime time ratio is within this fraction of the
#: element-size ratio (x2 for float16 -> float32) ...
COMPARE_TIME_TOLERANCE = 0.15
#: ... and the DRAM-regime TB/s ratio within this fraction of 1.
COMPARE_TBPS_TOLERANCE = 0.15
#: At the launch floor the time should not follow the bytes: within this fraction of 1.
COMPARE_LAUNCH_TOLERANCE = 0.25
#: The prediction is judged on at least this many sizes DRAM-bound in both runs.
COMPARE_MIN_DRAM_SIZES = 2
#: torch and Triton reach "the same plateau" when their DRAM plateaus (TB/s, each
#: counting its own bytes) are within this fraction of each other.
IMPLS_PLATEAU_TOLERANCE = 0.05

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


def record_from_json(data: Any, *, source: str | Path) -> SweepRecord:
    """Validate parsed JSON as a sweep record; errors name `source` (ParseError, exit 2)."""
    if isinstance(data, dict) and data.get("kind") == "sweep" and isinstance(data.get("record"), dict):
        data = data["record"]  # a stored result.json
    if not isinstance(data, dict) or data.get("kind") != "sweep":
        kind = data.get("kind") if isinstance(data, dict) else type(data).__name__
        raise ParseError(
            f"not a sweep JSON (kind: {kind})", source=source, hint="Give the file `lab_scripts/sweep.py --json` wrote."
        )
    try:
        record = SweepRecord.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ParseError(
            f"bad sweep JSON: {where + ': ' if where else ''}{validation_message(err)}", source=source
        ) from None
    bounds.refuse(
        (
            bounds.check_call(
                f"size 2^{row.log2}",
                seconds=min([row.seconds_per_call, *(row.batch_seconds_per_call or [])]),
                bytes_moved=row.bytes_per_call,
            )
            for row in record.rows
        ),
        source=source,
    )
    return record


def _tb(tbps: float) -> str:
    return units.tbps(tbps * 1e12)


def headline(summary: SweepSummary) -> str:
    """One line for run lists: 'DRAM 1.46 TB/s (92% of 1.597 TB/s spec)'."""
    what = "" if summary.impl == "torch" and summary.op == "scale" else f"{summary.impl} {summary.op}: "
    if summary.interpreted:
        return f"{what}interpreted: correctness only"
    if not summary.bandwidth_test:
        return f"{what}{summary.dtype} on a CPU: not a bandwidth test"
    if summary.dram_tbps is not None:
        text = f"{what}DRAM {'~' if summary.dram_is_estimate else ''}{_tb(summary.dram_tbps)}"
        if summary.dram_pct_of_spec is not None and summary.spec_dram_tbps is not None:
            # a datasheet figure is quoted as its datasheet gives it (as in the spec's label)
            text += f" ({units.percent(summary.dram_pct_of_spec)} of {summary.spec_dram_tbps:.4g} TB/s spec)"
        return text
    status = {"one point": "DRAM one point: inconclusive", "disagree": "DRAM sizes disagree: inconclusive"}.get(
        summary.plateau_status or "", "no DRAM plateau"
    )
    if summary.cache_peak_tbps is not None:
        return f"{what}cache peak {_tb(summary.cache_peak_tbps)}, {status}"
    if summary.launch_floor_us is not None:
        return f"{what}launch floor {units.duration(summary.launch_floor_us * 1e-6)}, {status}"
    return f"{what}{status}"


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


def _sizes_text(log2s: Sequence[int]) -> str:
    return ", ".join(f"2^{n}" for n in log2s)


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
        where = "every one" if not no else ("none" if not ok else f"{_sizes_text(ok)}, not at {_sizes_text(no)}")
        assert time_ratio is not None and tbps_ratio is not None
        lines.append(
            f"Measured in the DRAM regime ({_sizes_text([p.log2 for p in dram])}): time x{units.sig(time_ratio)}, "
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
            reason = f"the DRAM-bound sizes split: {_sizes_text(ok)} as predicted, {_sizes_text(no)} not"
    elif len(dram) == 1:
        reason = "one DRAM-bound size"
    elif plateau_ratio is not None:
        tbps_ratio = plateau_ratio
        ok_plateau = abs(plateau_ratio - 1) <= COMPARE_TBPS_TOLERANCE
        verdict = "agrees" if ok_plateau else "disagrees"
        reason = "no size DRAM-bound in both: the two plateaus compared"
        tol = f"TB/s within ±{COMPARE_TBPS_TOLERANCE:.0%}; no size was DRAM-bound in both, so time is not checked"
        lines.append(
            f"Measured: DRAM plateau {_tb(pb or 0)} for {b.dtype} vs {_tb(pa or 0)} for {a.dtype} "
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
            said = f"as predicted at {_sizes_text(ok)}, not at {off} (noise at the floor: see the SPREAD columns)."
        lines.append(
            f"At the launch floor ({_sizes_text([p.log2 for p in launch])}): time x{units.sig(launch_ratio)} "
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


# ---------------------------------------------------------------------------- torch against Triton


ImplsVerdict = Literal[
    "same plateau", "triton falls short", "torch falls short", "inconclusive", "interpreted: correctness only"
]


class ImplPair(Model):
    """One size run by both implementations. `ratio` = us_triton / us_torch: below 1,
    Triton is faster."""

    log2: int
    elements: int
    us_torch: float
    us_triton: float
    tbps_torch: float
    tbps_triton: float
    ratio: float
    regime_torch: str
    regime_triton: str
    spread_torch: float | None = None
    spread_triton: float | None = None


class ImplSide(Model):
    impl: str
    run_id: str | None
    kernels_per_call: int
    bytes_per_element: int  # bytes one call moves per element: 2 x kernels x element size
    launch_floor_us: float | None  # the launch regime's floor
    smallest_us: float | None  # the time at the smallest size, floor or not
    dram_tbps: float | None
    plateau_status: str | None
    interpreted: bool


class SweepImpls(Model):
    """`nsightlab sweep --impl torch,triton --json`: both runs, side by side per size."""

    kind: Literal["sweep-impls"] = "sweep-impls"
    op: str
    dtype: str
    device: str | None
    device_type: str
    target: str
    interpreted: bool
    runs: list[SweepResult]
    torch: ImplSide
    triton: ImplSide
    pairs: list[ImplPair]
    dram_sizes: list[int]  # DRAM-bound in both
    launch_sizes: list[int]  # at the launch floor in both
    dram_time_ratio: float | None  # median ratio over dram_sizes
    launch_time_ratio: float | None  # median ratio over launch_sizes
    plateau_ratio: float | None  # Triton's plateau / torch's (TB/s)
    plateau_tolerance: float
    verdict: ImplsVerdict
    reason: str
    lesson: list[str]
    notes: list[str]


def _impl_side(r: SweepResult) -> ImplSide:
    smallest = min(r.rows, key=lambda row: row.elements) if r.rows else None
    return ImplSide(
        impl=r.impl,
        run_id=r.run_id,
        kernels_per_call=r.kernels_per_call,
        bytes_per_element=2 * r.kernels_per_call * r.element_size,
        launch_floor_us=r.summary.launch_floor_us,
        smallest_us=smallest.us if smallest else None,
        dram_tbps=r.summary.dram_tbps,
        plateau_status=r.summary.plateau_status,
        interpreted=r.interpreted,
    )


def _matched(k: SweepResult) -> str:
    """What the check against torch found, from the Triton run's rows."""
    rows = [row for row in k.record.rows if row.max_abs_error is not None]
    if not rows:
        return "Triton's result was not checked against torch's in this run."
    worst = max(row.max_abs_error or 0.0 for row in rows)
    tolerance = rows[0].tolerance or "exact"
    diff = "no difference at all" if worst == 0 else f"largest difference {units.sig(worst)}"
    return f"Triton's {k.op} matched torch's at every size ({diff}; tolerance {tolerance})."


def _floor_text(side: ImplSide, label: str) -> str:
    if side.launch_floor_us is not None:
        return f"{label} {units.duration(side.launch_floor_us * 1e-6)}"
    if side.smallest_us is not None:
        return f"{label} {units.duration(side.smallest_us * 1e-6)} at the smallest size (no size sat at a floor)"
    return f"{label} not measured"


def compare_impls(x: SweepResult, y: SweepResult) -> SweepImpls:
    """torch against Triton: the same op, type and sizes on one device, size by size.

    The verdict compares the DRAM plateaus (each run's TB/s counts its own bytes): the same
    within IMPLS_PLATEAU_TOLERANCE, or which one falls short and at which sizes. Every
    sentence of the lesson is made from the measured rows; a run in Triton's interpreter
    makes no claim beyond correctness."""
    by_impl = {r.impl: r for r in (x, y)}
    if set(by_impl) != {"torch", "triton"}:
        raise ValueError(f"compare_impls needs a torch run and a triton run, got {x.impl} and {y.impl}")
    t, k = by_impl["torch"], by_impl["triton"]
    notes: list[str] = []
    if (t.summary.device_name, t.summary.device_type) != (k.summary.device_name, k.summary.device_type):
        notes.append("the runs are on different devices: the comparison needs one device")
    if (t.op, t.dtype) != (k.op, k.dtype):
        notes.append(f"the runs differ: torch {t.op} {t.dtype} vs triton {k.op} {k.dtype}")
    theirs = {r.log2: r for r in k.rows}
    pairs: list[ImplPair] = []
    for rt in t.rows:
        rk = theirs.get(rt.log2)
        if rk is None or rk.elements != rt.elements:
            continue
        pairs.append(
            ImplPair(
                log2=rt.log2,
                elements=rt.elements,
                us_torch=rt.us,
                us_triton=rk.us,
                tbps_torch=rt.tbps,
                tbps_triton=rk.tbps,
                ratio=rk.seconds_per_call / rt.seconds_per_call,
                regime_torch=rt.regime,
                regime_triton=rk.regime,
                spread_torch=rt.spread,
                spread_triton=rk.spread,
            )
        )
    if not pairs:
        notes.append("the runs have no size in common")
    dram = [p for p in pairs if p.regime_torch == p.regime_triton == "dram"]
    launch = [p for p in pairs if p.regime_torch == p.regime_triton == "launch"]
    dram_ratio = statistics.median(p.ratio for p in dram) if dram else None
    launch_ratio = statistics.median(p.ratio for p in launch) if launch else None
    ts, ks = _impl_side(t), _impl_side(k)
    plateau_ratio = ks.dram_tbps / ts.dram_tbps if ks.dram_tbps and ts.dram_tbps else None
    interpreted = t.interpreted or k.interpreted
    lesson: list[str] = []
    verdict: ImplsVerdict
    if interpreted:
        verdict = "interpreted: correctness only"
        reason = (
            "Triton ran in its interpreter, with no GPU: its times measure NumPy running each program, not the device"
        )
        lesson.append(_matched(k))
        lesson.append(
            "The times say nothing about bandwidth or launches here: torch's are this CPU's, "
            "Triton's are its interpreter's. Run on a GPU (the lab pod) to compare them."
        )
        return SweepImpls(
            op=t.op, dtype=t.dtype, device=t.summary.device_name, device_type=t.summary.device_type, target=t.target,
            interpreted=True, runs=[t, k], torch=ts, triton=ks, pairs=pairs, dram_sizes=[p.log2 for p in dram],
            launch_sizes=[p.log2 for p in launch], dram_time_ratio=dram_ratio, launch_time_ratio=launch_ratio,
            plateau_ratio=None, plateau_tolerance=IMPLS_PLATEAU_TOLERANCE, verdict=verdict, reason=reason,
            lesson=lesson, notes=notes,
        )  # fmt: skip
    tol = IMPLS_PLATEAU_TOLERANCE
    plateaus = ""
    if plateau_ratio is not None and ts.dram_tbps is not None and ks.dram_tbps is not None:
        plateaus = f"torch {_tb(ts.dram_tbps)}, Triton {_tb(ks.dram_tbps)}"
        if abs(plateau_ratio - 1) <= tol:
            verdict = "same plateau"
            reason = f"the same DRAM plateau within {tol:.0%} ({plateaus})"
        else:
            short, other = ("triton", "torch") if plateau_ratio < 1 else ("torch", "triton")
            verdict = "triton falls short" if short == "triton" else "torch falls short"
            behind = [
                p.log2
                for p in dram
                if (p.tbps_triton / p.tbps_torch if short == "triton" else p.tbps_torch / p.tbps_triton) < 1 - tol
            ]
            gap = 1 - (plateau_ratio if short == "triton" else 1 / plateau_ratio)
            where = f" at {_sizes_text(behind)}" if behind else ""
            reason = f"{short}'s DRAM plateau is {units.percent(100 * gap)} below {other}'s{where} ({plateaus})"
    else:
        verdict = "inconclusive"
        missing = [
            f"{side.impl} ({'one point' if side.plateau_status == 'one point' else side.plateau_status or 'none'})"
            for side in (ts, ks)
            if side.dram_tbps is None
        ]
        reason = f"no DRAM plateau for {' and '.join(missing)}: add larger --sizes"
    floors = f"{_floor_text(ts, 'torch')}, {_floor_text(ks, 'Triton')}"
    t_floor = ts.launch_floor_us if ts.launch_floor_us is not None else ts.smallest_us
    k_floor = ks.launch_floor_us if ks.launch_floor_us is not None else ks.smallest_us
    gpu = t.summary.device_type == "cuda"
    if t.op == "scale-add":
        if dram_ratio is not None:
            half = abs(dram_ratio - 0.5) <= 0.5 * COMPARE_TIME_TOLERANCE
            bw = (
                f"torch {_tb(statistics.median(p.tbps_torch for p in dram))}, Triton "
                f"{_tb(statistics.median(p.tbps_triton for p in dram))}"
            )
            lesson.append(
                f"At the DRAM plateau ({_sizes_text([p.log2 for p in dram])}) the fused Triton kernel took "
                f"{units.ratio(dram_ratio)} torch's time per call: it moves {ks.bytes_per_element} B per element "
                f"(one kernel reading and writing once) where torch's two kernels (x.mul_, then x.add_) move "
                f"{ts.bytes_per_element} B, at TB/s of {bw}. "
                + (
                    "Half the bytes, half the time: at the plateau a kernel is only as fast as the bytes it "
                    "moves, so the win is moving fewer of them (fusing), not faster arithmetic."
                    if half
                    else f"Half the bytes would predict 0.500x; the measured {units.ratio(dram_ratio)} says the two "
                    "did not run at the same TB/s."
                )
            )
        else:
            lesson.append(
                "No size was DRAM-bound in both runs, so the saving from fusing (half the bytes) is not measured "
                "here: add larger --sizes."
            )
        if launch_ratio is not None and t_floor is not None and k_floor is not None:
            if k_floor < t_floor:
                lesson.append(
                    f"At the launch floor ({_sizes_text([p.log2 for p in launch])}) torch pays two launches per call "
                    f"({_floor_text(ts, 'torch')}) against the fused kernel's one ({_floor_text(ks, 'Triton')}): "
                    "there the number of launches, not the bytes, sets the time."
                )
            else:
                lesson.append(
                    f"At the launch floor ({_sizes_text([p.log2 for p in launch])}) torch pays two launches per "
                    "call, yet "
                    f"its floor ({_floor_text(ts, 'torch')}) is below Triton's single launch "
                    f"({_floor_text(ks, 'Triton')}): "
                    "Triton's Python launch path costs more than two of torch's C++ launches."
                )
    else:
        if verdict == "same plateau":
            lesson.append(
                f"Both reach the same DRAM plateau ({plateaus}): the two kernels move the same bytes, "
                "and at the plateau a kernel can only be as fast as the bytes it moves. The win is moving fewer bytes "
                "(fusing ops: --op scale-add), not cleverer arithmetic."
            )
        elif verdict != "inconclusive":
            lesson.append(
                f"{reason[0].upper()}{reason[1:]}: the two kernels move the same bytes, so the slower one leaves "
                "memory bandwidth unused there."
            )
    if t_floor is not None and k_floor is not None and t.op != "scale-add":
        extra = k_floor - t_floor
        launcher = "Triton's Python launch path" if gpu else "Triton's launch path"
        if extra > 0:
            lesson.append(
                f"Launch floor: {floors}. {launcher} costs {units.duration(extra * 1e-6)} more per call "
                f"({units.ratio(k_floor / t_floor)} torch's): at small sizes the launch, not the bytes, sets the time."
            )
        else:
            lesson.append(f"Launch floor: {floors}: Triton's launches cost no more than torch's here.")
    lesson.append(_matched(k))
    return SweepImpls(
        op=t.op, dtype=t.dtype, device=t.summary.device_name, device_type=t.summary.device_type, target=t.target,
        interpreted=False, runs=[t, k], torch=ts, triton=ks, pairs=pairs, dram_sizes=[p.log2 for p in dram],
        launch_sizes=[p.log2 for p in launch], dram_time_ratio=dram_ratio, launch_time_ratio=launch_ratio,
        plateau_ratio=plateau_ratio, plateau_tolerance=tol, verdict=verdict, reason=reason, lesson=lesson, notes=notes,
    )  # fmt: skip
