"""Turning times into rates, and naming the regime a measurement was taken in.

Pure functions over the JSON the lab scripts write (`lab_scripts/lesson1.py`,
`lab_scripts/sweep.py`), validated into the models below. No I/O.

Three things live here:

- Rates and the roofline (`rates`, `roofline`, `analyze_lesson1`): bytes and FLOPs per
  call over seconds per call; the percentage of the spec peak, naming the spec and its
  source; arithmetic intensity (FLOP/byte); the ridge point (peak FLOP/s / peak bytes/s)
  and which roof a kernel sits under.
- The regime classifier for a bandwidth sweep (`classify_regimes`, in `regimes`, with its
  thresholds): launch-bound, cache-resident, transition, DRAM-bound.
- `analyze_sweep`: rows with TB/s, % of spec and regime; a summary with the launch floor,
  the cache peak, the DRAM plateau, and a few sentences of lesson keyed to the numbers.

Bytes moved per call are 2 x kernels x elements x element size: each kernel reads and
writes the same buffer once (the in-place scale is one kernel; torch's scale-add is two,
`x.mul_` then `x.add_`; a fused Triton scale-add is one). The tutorial's script assumes 2
bytes per element, which halves the bandwidth it prints for float32; nothing here assumes
an element size.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from nsightlab import units

# The regime rule lives in `regimes`; its names are part of this module's API, as before.
from nsightlab.analysis.regimes import CACHE_FIT_FRACTION as CACHE_FIT_FRACTION
from nsightlab.analysis.regimes import DRAM_CACHE_MULTIPLE as DRAM_CACHE_MULTIPLE
from nsightlab.analysis.regimes import FLOOR_ROWS as FLOOR_ROWS
from nsightlab.analysis.regimes import LAUNCH_FACTOR as LAUNCH_FACTOR
from nsightlab.analysis.regimes import LAUNCH_SCALING_MAX as LAUNCH_SCALING_MAX
from nsightlab.analysis.regimes import PLATEAU_TOLERANCE as PLATEAU_TOLERANCE
from nsightlab.analysis.regimes import Regime as Regime
from nsightlab.analysis.regimes import RegimeInput as RegimeInput
from nsightlab.analysis.regimes import RegimeResult as RegimeResult
from nsightlab.analysis.regimes import classify_regimes as classify_regimes
from nsightlab.models import Model
from nsightlab.specs.gpus import DeviceSpec, GpuSpec, merge_device

#: Cache-resident sizes less than this many times faster than DRAM: the cache did not help.
CACHE_GAIN_MIN = 1.25
#: A size whose time grew this many times more than its bytes over the size before it was
#: held by something other than memory or launches (a busy machine, a thread pool).
STALL_FACTOR = 4.0
#: A DRAM plateau is named only from at least this many DRAM-bound sizes ...
PLATEAU_MIN_POINTS = 2
#: ... whose bandwidths agree within this fraction (largest / smallest - 1). One point, or
#: points that scatter more, make the plateau inconclusive: noise cannot be told from a level.
PLATEAU_AGREEMENT = 0.10

#: 16-bit floats: a CPU converts them element by element, so a CPU sweep of them times
#: that arithmetic, not memory (lab_scripts/sweep.py says so in its notes).
SIXTEEN_BIT = ("float16", "bfloat16")
#: Kernels one call launches, per (implementation, op): torch runs scale-add as x.mul_
#: then x.add_; the Triton kernel fuses it.
SWEEP_KERNELS: dict[tuple[str, str], int] = {
    ("torch", "scale"): 1,
    ("torch", "scale-add"): 2,
    ("triton", "scale"): 1,
    ("triton", "scale-add"): 1,
}

#: What the tutorial's sweep script assumes every element weighs.
TUTORIAL_ASSUMED_ELEMENT_SIZE = 2
#: An example of the weights one LLM decode step reads: 8B parameters in fp16.
EXAMPLE_WEIGHT_BYTES = 16e9


def bytes_moved(elements: int, element_size: int, kernels: int = 1) -> int:
    """Bytes one call moves: each of its `kernels` reads every element once and writes it
    once (the in-place scale: one kernel)."""
    return 2 * kernels * elements * element_size


# --- what the lab scripts write ---


class DeviceInfo(Model):
    """The `device` object of a lab script's JSON: what the device says about itself."""

    model_config = ConfigDict(extra="allow")

    type: str = "cuda"
    name: str | None = None
    memory_bytes: int | None = None
    l2_bytes: int | None = None
    l2_source: str | None = None
    sm_count: int | None = None
    cc: str | None = None
    arch: str | None = None  # ROCm's LLVM target (gfx942), where torch reports one
    torch: str | None = None
    cuda: str | None = None
    driver: str | None = None
    python: str | None = None


class SweepRow(Model):
    model_config = ConfigDict(extra="allow")

    log2: int
    elements: int = Field(gt=0)
    bytes_per_call: int = Field(gt=0)
    seconds_per_call: float = Field(gt=0)
    tensor_bytes: int | None = None
    # the spread over the batches of timed calls (older recordings have only the batches)
    seconds_min: float | None = None
    seconds_median: float | None = None
    seconds_max: float | None = None
    batch_seconds_per_call: list[float] | None = None
    op: str | None = None
    impl: str | None = None
    kernels_per_call: int | None = None
    interpreted: bool = False
    # under --impl triton: the check against torch, and the config that ran
    max_abs_error: float | None = None
    max_error_ulps: float | None = None
    tolerance: str | None = None
    triton_config: dict[str, int] | None = None
    autotuned: bool | None = None

    def spread_seconds(self) -> tuple[float, float] | None:
        """(fastest, slowest) batch's time per call, where the recording has them."""
        if self.seconds_min is not None and self.seconds_max is not None:
            return self.seconds_min, self.seconds_max
        if self.batch_seconds_per_call:
            return min(self.batch_seconds_per_call), max(self.batch_seconds_per_call)
        return None


class SweepSkip(Model):
    model_config = ConfigDict(extra="allow")

    log2: int
    reason: str


class SweepRecord(Model):
    """`lab_scripts/sweep.py --json`: one in-place elementwise op timed at many sizes."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    kind: Literal["sweep"]
    schema_version: int = Field(alias="schema")
    op: Literal["scale", "scale-add"] = "scale"
    impl: Literal["torch", "triton"] = "torch"
    kernels_per_call: int | None = None
    dtype: str
    element_size: int = Field(gt=0)
    iters: int
    warmup: int
    interpreted: bool = False
    notes: list[str] = Field(default_factory=list)
    triton: str | None = None  # its version, under --impl triton
    device: DeviceInfo
    rows: list[SweepRow]
    skipped: list[SweepSkip] = Field(default_factory=list)

    @property
    def kernels(self) -> int:
        """Kernels one call launches (torch's scale-add: 2)."""
        return SWEEP_KERNELS[(self.impl, self.op)]

    @model_validator(mode="after")
    def _bytes_follow_the_kernels(self) -> SweepRecord:
        """The accounting, checked exactly: 2 x kernels x elements x element size."""
        kernels = self.kernels
        what = f"{self.impl} {self.op}"
        if self.kernels_per_call is not None and self.kernels_per_call != kernels:
            raise ValueError(f"kernels_per_call is {self.kernels_per_call}, but {what} launches {kernels}")
        for row in self.rows:
            for field, value in (("impl", row.impl), ("op", row.op)):
                if value is not None and value != getattr(self, field):
                    raise ValueError(f"row 2^{row.log2}: {field} is {value}, but the sweep's is {getattr(self, field)}")
            if row.kernels_per_call is not None and row.kernels_per_call != kernels:
                raise ValueError(
                    f"row 2^{row.log2}: kernels_per_call is {row.kernels_per_call}, but {what} launches {kernels}"
                )
            expected = bytes_moved(row.elements, self.element_size, kernels)
            if row.bytes_per_call != expected:
                factor = "2 x" if kernels == 1 else f"2 x {kernels} kernels x"
                raise ValueError(
                    f"row 2^{row.log2}: bytes_per_call is {row.bytes_per_call}, but {factor} "
                    f"{row.elements} elements x {self.element_size} B is {expected} ({what})"
                )
        return self

    @property
    def is_interpreted(self) -> bool:
        """Triton ran in its interpreter: the times measure it, not the device."""
        return self.interpreted or any(r.interpreted for r in self.rows)


class RangeWork(Model):
    """One timed NVTX range of `lab_scripts/lesson1.py`: the work of one call, and its time."""

    model_config = ConfigDict(extra="allow")

    name: str
    op: str
    kernel_kind: str
    calls: int
    warmup: int = 0
    dtype: str
    element_size: int
    bytes_per_call: int = Field(gt=0)
    flops_per_call: int = Field(ge=0)
    seconds_per_call: float | None = Field(default=None, gt=0)
    elements: int | None = None
    m: int | None = None
    n: int | None = None
    k: int | None = None


class Lesson1Record(Model):
    """`lab_scripts/lesson1.py --json`."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    kind: Literal["lesson1"]
    schema_version: int = Field(alias="schema")
    device: DeviceInfo
    scaled_down: bool = False
    ranges: list[RangeWork]


# --- rates and the roofline ---


class Roofline(Model):
    """Where one kernel sits on the roofline: min(peak FLOP/s, bandwidth x intensity)."""

    intensity: float  # FLOP per byte
    peak_flops_per_s: float
    peak_bytes_per_s: float
    ridge: float  # FLOP per byte where the two roofs meet
    bound: Literal["memory", "compute"]
    attainable_flops_per_s: float
    achieved_flops_per_s: float
    pct_of_attainable: float


def roofline(*, flops_per_s: float, intensity: float, peak_flops_per_s: float, peak_bytes_per_s: float) -> Roofline:
    """The roofline verdict: under the memory roof if intensity < ridge, else under compute."""
    ridge = peak_flops_per_s / peak_bytes_per_s
    attainable = min(peak_flops_per_s, peak_bytes_per_s * intensity)
    return Roofline(
        intensity=intensity,
        peak_flops_per_s=peak_flops_per_s,
        peak_bytes_per_s=peak_bytes_per_s,
        ridge=ridge,
        bound="memory" if intensity < ridge else "compute",
        attainable_flops_per_s=attainable,
        achieved_flops_per_s=flops_per_s,
        pct_of_attainable=100.0 * flops_per_s / attainable if attainable > 0 else 0.0,
    )


class Rates(Model):
    """Rates of one timed range, against named peaks."""

    name: str
    seconds_per_call: float
    us: float
    bytes_per_call: int
    flops_per_call: int
    bytes_per_s: float
    tbps: float
    flops_per_s: float
    tflops: float
    intensity: float | None  # FLOP per byte; None when no bytes were counted
    peak_bytes_per_s: float | None
    bw_label: str | None  # e.g. "1.6 TB/s, RTX PRO 6000 Blackwell Server Edition datasheet"
    pct_of_bw_peak: float | None
    peak_flops_per_s: float | None
    flops_label: str | None
    pct_of_flops_peak: float | None
    roofline: Roofline | None
    memory_roof_flops_per_s: float | None  # what bandwidth alone would allow at this intensity


def rates(
    *,
    name: str,
    bytes_per_call: int,
    flops_per_call: int,
    seconds_per_call: float,
    peak_bytes_per_s: float | None = None,
    bw_label: str | None = None,
    peak_flops_per_s: float | None = None,
    flops_label: str | None = None,
) -> Rates:
    """Bytes/s, FLOP/s, % of peak, intensity and the roofline verdict for one range."""
    if seconds_per_call <= 0:
        raise ValueError(f"{name}: seconds per call must be positive, got {seconds_per_call}")
    bps = bytes_per_call / seconds_per_call
    fps = flops_per_call / seconds_per_call
    intensity = flops_per_call / bytes_per_call if bytes_per_call > 0 else None
    roof = None
    if intensity is not None and peak_bytes_per_s and peak_flops_per_s:
        roof = roofline(
            flops_per_s=fps,
            intensity=intensity,
            peak_flops_per_s=peak_flops_per_s,
            peak_bytes_per_s=peak_bytes_per_s,
        )
    return Rates(
        name=name,
        seconds_per_call=seconds_per_call,
        us=seconds_per_call * 1e6,
        bytes_per_call=bytes_per_call,
        flops_per_call=flops_per_call,
        bytes_per_s=bps,
        tbps=bps / 1e12,
        flops_per_s=fps,
        tflops=fps / 1e12,
        intensity=intensity,
        peak_bytes_per_s=peak_bytes_per_s,
        bw_label=bw_label if peak_bytes_per_s else None,
        pct_of_bw_peak=100.0 * bps / peak_bytes_per_s if peak_bytes_per_s else None,
        peak_flops_per_s=peak_flops_per_s,
        flops_label=flops_label if peak_flops_per_s else None,
        pct_of_flops_peak=100.0 * fps / peak_flops_per_s if peak_flops_per_s else None,
        roofline=roof,
        memory_roof_flops_per_s=(peak_bytes_per_s * intensity if peak_bytes_per_s and intensity is not None else None),
    )


def compute_peak(spec: DeviceSpec | None, dtype: str, kernel_kind: str) -> tuple[float | None, str | None]:
    """The FLOP/s peak that applies to a kernel, and a label naming it and its source.

    A GEMM in fp16/bf16 runs on the tensor cores (dense peak, FP32 accumulate: what torch
    uses); in float32 torch does not use TF32 by default, so the FP32 peak applies. An
    elementwise op cannot use tensor cores: the FP32 CUDA-core peak is used (for fp16 it is
    a lower bound of the vector rate, which only moves the ridge further right).
    """
    if spec is None:
        return None, None
    src = spec.flops_source or "spec table"
    if kernel_kind == "gemm" and dtype in ("float16", "bfloat16"):
        if spec.fp16_tensor_tflops:
            return (
                spec.fp16_tensor_tflops * 1e12,
                f"{spec.fp16_tensor_tflops:g} TFLOP/s dense FP16 tensor, {src}",
            )
        return None, None
    if dtype in ("float32", "float16", "bfloat16") and spec.fp32_tflops:
        return spec.fp32_tflops * 1e12, f"{spec.fp32_tflops:g} TFLOP/s FP32 (CUDA cores), {src}"
    return None, None


class Lesson1Analysis(Model):
    device_name: str | None
    device_type: str
    spec_name: str | None
    timing_source: str
    scaled_down: bool
    ranges: list[Rates]
    lesson: list[str]
    notes: list[str]


def _fmt_rate(bps: float) -> str:
    return units.tbps(bps)


def _fmt_flops(fps: float) -> str:
    return units.tflops(fps)


def analyze_lesson1(
    record: Lesson1Record,
    spec: GpuSpec | None = None,
    *,
    seconds_per_call: Mapping[str, float] | None = None,
    timing_source: str = "the script's own timing",
    peak_tflops: float | None = None,
) -> Lesson1Analysis:
    """Rates and roofline verdicts for lesson1's two ranges.

    `spec` defaults to the table's entry for the reported GPU. `seconds_per_call` replaces
    the script's own times per range name (e.g. the profiler's per-range kernel time, which
    excludes the warm-up calls), with `timing_source` naming where they came from.
    `peak_tflops` overrides the compute peak (for a GPU whose peak the table lacks).
    """
    dev = merge_device(record.device.model_dump(), spec)
    notes: list[str] = list(dev.notes)
    out: list[Rates] = []
    lesson: list[str] = []
    for r in record.ranges:
        secs = (seconds_per_call or {}).get(r.name, r.seconds_per_call)
        if secs is None:
            notes.append(f"{r.name}: no time per call; not analysed")
            continue
        peak_f, f_label = compute_peak(dev, r.dtype, r.kernel_kind)
        if peak_tflops is not None:
            peak_f, f_label = peak_tflops * 1e12, f"{peak_tflops:g} TFLOP/s (given)"
        rr = rates(
            name=r.name,
            bytes_per_call=r.bytes_per_call,
            flops_per_call=r.flops_per_call,
            seconds_per_call=secs,
            peak_bytes_per_s=dev.dram_bw_bytes_per_s,
            bw_label=dev.dram_bw_label,
            peak_flops_per_s=peak_f,
            flops_label=f_label,
        )
        out.append(rr)
        lesson.append(_range_sentence(r, rr))
        if rr.roofline is None and dev.device_type == "cuda":
            missing = "bandwidth" if rr.peak_bytes_per_s is None else "compute peak"
            notes.append(
                f"{r.name}: no roofline verdict: the {missing} of {dev.name or 'this GPU'} is not in the table"
            )
    if dev.device_type != "cuda":
        notes.append("measured on a CPU: no spec peaks apply; rates are this machine's own")
    return Lesson1Analysis(
        device_name=dev.name,
        device_type=dev.device_type,
        spec_name=dev.spec_name,
        timing_source=timing_source,
        scaled_down=record.scaled_down,
        ranges=out,
        lesson=lesson,
        notes=notes,
    )


def _range_sentence(work: RangeWork, r: Rates) -> str:
    head = f"{r.name}: {units.duration(r.seconds_per_call)} per call"
    if work.kernel_kind == "gemm":
        head += f", {_fmt_flops(r.flops_per_s)}"
        if r.pct_of_flops_peak is not None:
            head += f" ({units.percent(r.pct_of_flops_peak)} of {r.flops_label})"
    else:
        head += f", {_fmt_rate(r.bytes_per_s)}"
        if r.pct_of_bw_peak is not None:
            head += f" ({units.percent(r.pct_of_bw_peak)} of {r.bw_label})"
    if r.intensity is None:
        return head + "."
    head += f"; {units.sig(r.intensity)} FLOP/byte"
    if r.roofline is not None:
        roof = r.roofline
        if roof.bound == "memory":
            return (
                head + f", below the ridge at {units.sig(roof.ridge)} FLOP/byte: memory-bound. Only "
                "moving fewer bytes (smaller types, fusing ops) makes it faster."
            )
        return (
            head + f", above the ridge at {units.sig(roof.ridge)} FLOP/byte: compute-bound, at "
            f"{units.percent(roof.pct_of_attainable)} of the attainable {_fmt_flops(roof.attainable_flops_per_s)}."
        )
    if r.memory_roof_flops_per_s is not None:
        ratio = r.flops_per_s / r.memory_roof_flops_per_s
        if ratio < 0.5:
            return (
                head + f": bandwidth alone would allow {_fmt_flops(r.memory_roof_flops_per_s)} "
                f"at this intensity and it ran at {units.percent(100 * ratio)} of that, so memory is not what "
                "limits it (the compute peak is not in the table)."
            )
    return head + "."


# --- the bandwidth sweep ---


class SweepPoint(Model):
    log2: int
    elements: int
    tensor_bytes: int
    bytes_per_call: int
    seconds_per_call: float
    us: float
    mib: float  # the tensor's size in MiB, as the tutorial's table prints it
    tbps: float
    pct_of_dram_spec: float | None
    cache_ratio: float | None  # working set / cache size
    regime: Regime
    # the spread of the timed batches: fastest, median and slowest time per call (us);
    # None for recordings that kept no batches
    us_min: float | None = None
    us_median: float | None = None
    us_max: float | None = None
    spread: float | None = None  # (slowest - fastest) / median
    kernels_per_call: int = 1
    interpreted: bool = False  # Triton's interpreter ran it: no bandwidth in this row


PlateauStatus = Literal["plateau", "one point", "disagree", "none", "not a bandwidth test", "interpreted"]


class SweepSummary(Model):
    device_name: str | None
    device_type: str
    dtype: str
    element_size: int
    basis: str
    launch_floor_us: float | None
    cache_peak_tbps: float | None
    cache_peak_log2: int | None
    dram_tbps: float | None  # the named plateau: two DRAM-bound sizes or more that agree
    dram_from_log2: list[int]
    dram_is_estimate: bool
    dram_pct_of_spec: float | None
    spec_name: str | None
    spec_dram_tbps: float | None
    spec_label: str | None
    l2_bytes: int | None
    l2_source: str | None
    lesson: list[str]
    notes: list[str]
    # what ran: the op, how, and whether the times can speak of bandwidth at all
    impl: str = "torch"
    op: str = "scale"
    kernels_per_call: int = 1
    interpreted: bool = False
    bandwidth_test: bool = True
    # the plateau's verdict (None: a result stored before plateaus were judged)
    plateau_status: PlateauStatus | None = None
    plateau_reason: str | None = None
    plateau_spread: float | None = None  # largest / smallest - 1 over the plateau's sizes
    dram_sizes: list[int] = Field(default_factory=list)  # every DRAM-bound size, plateau or not


class SweepAnalysis(Model):
    rows: list[SweepPoint]
    summary: SweepSummary


class Plateau(Model):
    """Whether the DRAM-bound sizes name a plateau, and why (not)."""

    status: PlateauStatus
    log2s: list[int]  # the sizes the plateau is taken from
    tbps: float | None
    spread: float | None
    reason: str


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
                f"one point: inconclusive (it would rest on 2^{only.log2} alone, at {_tb(only.tbps)}; a plateau "
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


def _tb(tbps: float) -> str:
    return units.tbps(tbps * 1e12)


def _log2s(values: Sequence[int]) -> str:
    if not values:
        return ""
    return f"2^{values[0]}" if len(values) == 1 else f"2^{values[0]}..2^{values[-1]}"


def sweep_lesson(summary: SweepSummary, points: Sequence[SweepPoint], record: SweepRecord | None = None) -> list[str]:
    """A few sentences, each made from the measured numbers: a claim the rows do not
    support is not made (no plateau from one point, no bandwidth from an interpreter or
    from 16-bit floats on a CPU)."""
    gpu = summary.device_type == "cuda"
    infinity = "Infinity Cache" in (summary.l2_source or "")  # an AMD Instinct GPU's last level
    cache_name = "Infinity Cache" if infinity else "L2 cache" if gpu else "last-level cache"
    out: list[str] = []
    if summary.interpreted:
        errors = [r.max_abs_error for r in (record.rows if record else []) if r.max_abs_error is not None]
        worst = max(errors, default=None)
        checked = (
            ""
            if worst is None
            else (
                " Every size matched torch's result exactly."
                if worst == 0
                else f" Every size matched torch's result (largest difference {units.sig(worst)})."
            )
        )
        out.append(
            "Triton ran in its interpreter (TRITON_INTERPRET=1, no GPU here): NumPy executed every "
            "program on the CPU, so the times measure the interpreter, not memory or launches. "
            f"No bandwidth can be read from this run: it checks correctness only.{checked}"
        )
        return out
    if not summary.bandwidth_test:
        out.append(
            f"{summary.dtype} on a CPU is converted to float32 and back element by element, so these "
            "times measure that arithmetic, not memory: this is not a bandwidth test there. "
            "Use float32 (the CPU default) to measure the memory system."
        )
    launch = [p for p in points if p.regime == "launch"]
    if launch and summary.launch_floor_us is not None:
        floor = summary.launch_floor_us
        floor_s = floor * 1e-6
        if gpu:
            what = "launching one kernel"
            if summary.kernels_per_call > 1:
                what = (
                    f"launching {summary.kernels_per_call} kernels (one call of {summary.impl}'s {summary.op} is "
                    f"{summary.kernels_per_call} kernels)"
                )
            cure = (
                "This is why LLM serving captures CUDA graphs and fuses kernels: a step of 1,000 "
                f"such calls would spend {units.duration(1000 * floor_s)} on launches alone."
            )
        else:
            what = (
                "dispatching one torch operation"
                if summary.kernels_per_call == 1
                else f"dispatching {summary.kernels_per_call} torch operations"
            )
            cure = (
                f"1,000 such calls would spend {units.duration(1000 * floor_s)} on overhead alone; fusing them "
                "(torch.compile) is the cure."
            )
        if summary.impl == "triton":
            what = "a launch through Triton's Python launcher" if gpu else what
        out.append(
            f"Up to {units.size(launch[-1].tensor_bytes)} the time sits at a {units.duration(floor_s)} floor "
            f"whatever the size: that is the fixed cost of {what}, not data movement, and "
            f"the bandwidth figures there mean nothing. {cure}"
        )
    if not summary.bandwidth_test:
        return out
    plateau = summary.dram_tbps
    if summary.cache_peak_tbps is not None and summary.cache_peak_log2 is not None:
        peak_row = next(p for p in points if p.log2 == summary.cache_peak_log2)
        where = f"At {units.size(peak_row.tensor_bytes)} the {summary.op} ran at {_tb(summary.cache_peak_tbps)}"
        fits = (
            f"working set {units.size(peak_row.tensor_bytes)} < {units.size(summary.l2_bytes)} {cache_name}"
            if summary.l2_bytes
            else f"the working set fits in the {cache_name}"
        )
        if plateau and summary.cache_peak_tbps < CACHE_GAIN_MIN * plateau:
            out.append(
                f"{where}, only {units.ratio(summary.cache_peak_tbps / plateau)} the DRAM plateau "
                f"({_tb(plateau)}) although it fits ({fits}): the cache did not help this op, so something "
                "other than memory limits it at those sizes."
            )
        else:
            if summary.spec_dram_tbps and summary.cache_peak_tbps > summary.spec_dram_tbps:
                versus = (
                    f"{units.ratio(summary.cache_peak_tbps / summary.spec_dram_tbps)} the DRAM spec "
                    f"({summary.spec_label})"
                )
            elif plateau:
                versus = (
                    f"{units.ratio(summary.cache_peak_tbps / plateau)} this device's measured DRAM plateau "
                    f"({_tb(plateau)})"
                )
            else:
                versus = None
            partly = ""
            if summary.launch_floor_us and peak_row.us < 3 * summary.launch_floor_us:
                partly = " It is still partly launch-bound, so the cache itself is faster still."
            if versus is not None:
                out.append(
                    f"{where}, {versus}: it ran from the cache ({fits}), not from memory. "
                    f"Never quote such a figure as memory bandwidth.{partly}"
                )
            else:
                out.append(
                    f"{where} ({fits}), but with no DRAM plateau measured this run cannot say how "
                    "much faster the cache was than memory."
                )
    if plateau:
        # the run of DRAM-bound sizes that ends the sweep, each within PLATEAU_AGREEMENT of
        # the plateau: where the curve has settled ("from X up" claims every size above X)
        settled: list[SweepPoint] = []
        for p in reversed(points):
            if p.regime != "dram" or abs(p.tbps / plateau - 1) > PLATEAU_AGREEMENT:
                break
            settled.append(p)
        start = f"From {units.size(settled[-1].tensor_bytes)} up" if settled else f"At {_log2s(summary.dram_from_log2)}"
        off = [
            p
            for p in points
            if p.regime == "dram" and p not in settled and abs(p.tbps / plateau - 1) > PLATEAU_AGREEMENT
        ]
        pct = ""
        if summary.dram_pct_of_spec is not None:
            pct = f", {units.percent(summary.dram_pct_of_spec)} of the DRAM spec ({summary.spec_label})"
        agree = _log2s(summary.dram_from_log2)
        if summary.plateau_spread is not None:
            agree += f" agree within {units.percent(100 * summary.plateau_spread)}"
        estimate = " (an estimate: no size was far beyond the cache)" if summary.dram_is_estimate else ""
        floor_s = EXAMPLE_WEIGHT_BYTES / (plateau * 1e12)
        if off:
            agree += "; " + ", ".join(
                f"{units.size(p.tensor_bytes)} ran {units.percent(100 * abs(p.tbps / plateau - 1))} "
                f"{'below' if p.tbps < plateau else 'above'} it"
                for p in off
            )
        out.append(
            f"{start} the bandwidth settles at {_tb(plateau)}{pct}; {agree}{estimate}. That is "
            "the memory ceiling of this device for a streaming op. LLM weights are far larger than "
            "any cache and decode reads all of them for every token, so this governs decode: "
            f"per-token floor = weight bytes / {_tb(plateau)}, e.g. {units.duration(floor_s)} for "
            f"{units.gigabytes(EXAMPLE_WEIGHT_BYTES)} (8B parameters in fp16)."
        )
    elif summary.plateau_reason:
        out.append(f"DRAM plateau: {summary.plateau_reason}.")
    if summary.op == "scale-add":
        if summary.kernels_per_call > 1:
            out.append(
                f"scale-add in torch is {summary.kernels_per_call} kernels per call (x.mul_, then x.add_), "
                f"each reading and writing the tensor: {2 * summary.kernels_per_call} x elements x "
                f"{summary.element_size} B per call. A fused kernel (--impl triton) does the same work "
                "moving half the bytes."
            )
        else:
            out.append(
                f"scale-add here is one fused kernel: 2 x elements x {summary.element_size} B per call, "
                "half the bytes torch's two kernels (x.mul_, then x.add_) move."
            )
    if summary.element_size != TUTORIAL_ASSUMED_ELEMENT_SIZE:
        factor = summary.element_size / TUTORIAL_ASSUMED_ELEMENT_SIZE
        out.append(
            f"Bytes are counted with {summary.element_size} B per element ({summary.dtype}). "
            f"The tutorial's script assumes 2 B per element and would print {units.sig(1 / factor)}x "
            "these bandwidths."
        )
    return out
