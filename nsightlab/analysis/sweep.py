"""What a bandwidth sweep comes to: the result models, and pure functions over them.

- `record_from_json`: a sweep JSON (the script's, or a stored `result.json`) validated.
- `build_result`: the analysis (regimes, launch floor, cache peak, DRAM plateau against
  the GPU's spec), the headline, and the tutorial's reference curve beside it.
- `compare_results`: the tutorial's "predict, then measure" check. Going from float16 to
  float32 doubles the bytes per element; where the op is bandwidth-bound (DRAM) the time
  per call should double and the TB/s stay the same; at the launch floor the time should
  not move. The tolerances of that verdict are the named constants below.

No I/O here: `nsightlab.measure.sweep` runs the script and stores runs;
`nsightlab.runs.sweeps` reads sweep files and stored runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from nsightlab.analysis.gpus import REFERENCE_SWEEPS, lookup
from nsightlab.analysis.rates import (
    SweepAnalysis,
    SweepPoint,
    SweepRecord,
    SweepSummary,
    analyze_sweep,
)
from nsightlab.errors import ParseError, validation_message

#: Element sizes of the dtypes the sweep script accepts.
DTYPES: dict[str, int] = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
DEFAULT_DTYPE = "float16"
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

#: The check agrees when the DRAM-regime time ratio is within this fraction of the
#: element-size ratio (x2 for float16 -> float32) ...
COMPARE_TIME_TOLERANCE = 0.15
#: ... and the DRAM-regime TB/s ratio within this fraction of 1.
COMPARE_TBPS_TOLERANCE = 0.15
#: At the launch floor the time should not follow the bytes: within this fraction of 1.
COMPARE_LAUNCH_TOLERANCE = 0.25

#: The published sweep shown beside a run on the same GPU.
REFERENCE_KEY = "tutorial-rtx-pro-6000"


# ---------------------------------------------------------------------------- models


class SweepResultRow(SweepPoint):
    """A measured size, with the reference curve's TB/s at the same size when it applies."""

    reference_tbps: float | None = None


class ReferenceRow(BaseModel):
    log2: int
    mib: float
    us: float
    tbps: float
    regime: str


class ReferenceCurve(BaseModel):
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


class CompareSide(BaseModel):
    run_id: str | None
    dtype: str
    element_size: int
    device: str | None
    device_type: str
    target: str
    launch_floor_us: float | None
    dram_tbps: float | None


class ComparePair(BaseModel):
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


class SweepCompare(BaseModel):
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
    prediction: str
    lines: list[str]
    notes: list[str]


class SweepResult(BaseModel):
    """One analysed sweep: what `nsightlab sweep --json` prints and `result.json` holds."""

    kind: Literal["sweep"] = "sweep"
    run_id: str | None = None
    run_dir: str | None = None
    created: datetime | None = None
    source: str | None = None  # the file it was read from (`analyze`), if not a fresh run
    target: str
    where: dict[str, Any] = {}
    command: list[str] = []
    script_argv: list[str] = []
    dtype: str
    element_size: int
    iters: int
    warmup: int
    device: dict[str, Any]
    headline: str
    rows: list[SweepResultRow]
    summary: SweepSummary
    reference: ReferenceCurve | None = None
    compare: SweepCompare | None = None
    record: SweepRecord


# ---------------------------------------------------------------------------- building a result


def record_from_json(data: Any, *, source: str | Path) -> SweepRecord:
    """Validate parsed JSON as a sweep record; errors name `source` (ParseError, exit 2)."""
    if isinstance(data, dict) and data.get("kind") == "sweep" and isinstance(data.get("record"), dict):
        data = data["record"]  # a stored result.json
    if not isinstance(data, dict) or data.get("kind") != "sweep":
        kind = data.get("kind") if isinstance(data, dict) else type(data).__name__
        raise ParseError(f"not a sweep JSON (kind: {kind})", source=source, hint="Give the file `lab_scripts/sweep.py --json` wrote.")
    try:
        return SweepRecord.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ParseError(f"bad sweep JSON: {where + ': ' if where else ''}{validation_message(err)}", source=source) from None


def _fmt_tbps(tbps: float) -> str:
    return f"{tbps:.2f} TB/s" if tbps >= 0.1 else f"{tbps * 1e3:.1f} GB/s"


def headline(summary: SweepSummary) -> str:
    """One line for run lists: 'DRAM 1.46 TB/s (91% of 1.597 TB/s)'."""
    if summary.dram_tbps is not None:
        text = f"DRAM {'~' if summary.dram_is_estimate else ''}{_fmt_tbps(summary.dram_tbps)}"
        if summary.dram_pct_of_spec is not None and summary.spec_dram_tbps is not None:
            text += f" ({summary.dram_pct_of_spec:.0f}% of {summary.spec_dram_tbps:.4g} TB/s)"
        return text
    if summary.cache_peak_tbps is not None:
        return f"cache peak {_fmt_tbps(summary.cache_peak_tbps)}, no DRAM plateau"
    if summary.launch_floor_us is not None:
        return f"launch floor {summary.launch_floor_us:.1f} us, no DRAM plateau"
    return "no DRAM plateau"


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


def compare_results(x: SweepResult, y: SweepResult) -> SweepCompare:
    """Check the prediction on two sweeps: in the DRAM regime, time follows the element
    size and TB/s stays put; at the launch floor, time stays put."""
    a, b = (x, y) if x.element_size <= y.element_size else (y, x)
    ratio = b.element_size / a.element_size
    notes: list[str] = []
    same_device = (a.summary.device_name, a.summary.device_type) == (b.summary.device_name, b.summary.device_type)
    if not same_device:
        notes.append(
            f"the runs are on different devices ({a.summary.device_name or a.summary.device_type} vs "
            f"{b.summary.device_name or b.summary.device_type}): the check needs one device"
        )
    if a.dtype == b.dtype:
        notes.append(f"both runs are {a.dtype}: this checks that the run repeats, not the prediction")
    by_log2 = {r.log2: r for r in b.rows}
    pairs: list[ComparePair] = []
    for ra in a.rows:
        rb = by_log2.get(ra.log2)
        if rb is None or ra.elements != rb.elements:
            continue
        t_ratio = rb.seconds_per_call / ra.seconds_per_call
        bw_ratio = rb.tbps / ra.tbps
        expected: float | None = None
        agrees: bool | None = None
        if ra.regime == rb.regime == "dram":
            expected = ratio
            agrees = abs(t_ratio / ratio - 1) <= COMPARE_TIME_TOLERANCE and abs(bw_ratio - 1) <= COMPARE_TBPS_TOLERANCE
        elif ra.regime == rb.regime == "launch":
            expected = 1.0
            agrees = abs(t_ratio - 1) <= COMPARE_LAUNCH_TOLERANCE
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
                time_ratio=t_ratio,
                tbps_ratio=bw_ratio,
                expected_time_ratio=expected,
                agrees=agrees,
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
        f"Prediction: {names}: {ratio:g}x the bytes for the same element count. Where the op is "
        f"bandwidth-bound (DRAM) the time per call should be x{ratio:g} and the TB/s the same; "
        "at the launch floor the time should not change."
    )
    lines: list[str] = []
    tol = f"time within ±{COMPARE_TIME_TOLERANCE:.0%} of x{ratio:g}, TB/s within ±{COMPARE_TBPS_TOLERANCE:.0%}"
    verdict: Literal["agrees", "disagrees", "inconclusive"]
    if time_ratio is not None and tbps_ratio is not None:
        ok = abs(time_ratio / ratio - 1) <= COMPARE_TIME_TOLERANCE and abs(tbps_ratio - 1) <= COMPARE_TBPS_TOLERANCE
        verdict = "agrees" if ok else "disagrees"
        lines.append(
            f"Measured in the DRAM regime ({_sizes_text([p.log2 for p in dram])}): time x{time_ratio:.2f}, "
            f"TB/s x{tbps_ratio:.2f} ({b.dtype} vs {a.dtype})."
        )
    elif plateau_ratio is not None:
        tbps_ratio = plateau_ratio
        ok = abs(plateau_ratio - 1) <= COMPARE_TBPS_TOLERANCE
        verdict = "agrees" if ok else "disagrees"
        tol = f"TB/s within ±{COMPARE_TBPS_TOLERANCE:.0%}; no size was DRAM-bound in both, so time is not checked"
        lines.append(
            f"Measured: DRAM plateau {_fmt_tbps(pb or 0)} for {b.dtype} vs {_fmt_tbps(pa or 0)} for {a.dtype} "
            f"(x{plateau_ratio:.2f})."
        )
    else:
        verdict = "inconclusive"
    if verdict == "agrees":
        lines.append(f"The measurement agrees with the prediction ({tol}): the op is bandwidth-bound, so bytes, not elements, set its speed.")
    elif verdict == "disagrees":
        assert tbps_ratio is not None
        conversion = (
            f" (on a CPU, typically converting {a.dtype} to float32 and back)"
            if a.summary.device_type == "cpu" and a.dtype in ("float16", "bfloat16")
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
        cache = a.summary.l2_bytes or b.summary.l2_bytes
        if cache:
            need = min(SIZE_MAX_LOG2, max(SIZE_MIN_LOG2, (4 * cache // a.element_size - 1).bit_length()))
            advice = f" (at least 2^{need} elements here: 4x the {cache / 2**20:.0f} MiB cache), e.g. --sizes 12,{need},{min(need + 2, SIZE_MAX_LOG2)}"
        else:
            advice = ", e.g. --sizes 16,26,28,30 on a GPU"
        lines.append(f"Inconclusive: no size was DRAM-bound in both runs. Rerun both with sizes several times the cache{advice}.")
    if launch_ratio is not None:
        at_floor = abs(launch_ratio - 1) <= COMPARE_LAUNCH_TOLERANCE
        lines.append(
            f"At the launch floor ({_sizes_text([p.log2 for p in launch])}): time x{launch_ratio:.2f}: "
            + ("the bytes did not matter there, as predicted." if at_floor else "not as predicted: the time changed with the type there (noise at the floor, or those sizes were not all overhead).")
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
        prediction=prediction,
        lines=lines,
        notes=notes,
    )
