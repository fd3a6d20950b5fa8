"""Turning times into rates, and naming the regime a measurement was taken in.

Pure functions over the JSON the lab scripts write (`lab_scripts/lesson1.py`,
`lab_scripts/sweep.py`), validated into the models below. No I/O.

Three things live here:

- Rates and the roofline (`rates`, `roofline`, `analyze_lesson1`): bytes and FLOPs per
  call over seconds per call; the percentage of the spec peak, naming the spec and its
  source; arithmetic intensity (FLOP/byte); the ridge point (peak FLOP/s / peak bytes/s)
  and which roof a kernel sits under.
- The regime classifier for a bandwidth sweep (`classify_regimes`): launch-bound,
  cache-resident, transition, DRAM-bound. Its thresholds are named constants below.
- `analyze_sweep`: rows with TB/s, % of spec and regime; a summary with the launch floor,
  the cache peak, the DRAM plateau, and a few sentences of lesson keyed to the numbers.

Bytes moved by the in-place scale are 2 x elements x element size: one read and one write
of the same buffer. The tutorial's script assumes 2 bytes per element, which halves the
bandwidth it prints for float32; nothing here assumes an element size.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nsightlab.analysis.gpus import DeviceSpec, GpuSpec, merge_device

Regime = Literal["launch", "cache", "transition", "dram"]

# --- thresholds of the regime rule (see classify_regimes) ---

#: A size is launch-bound while its time per call is within this factor of the floor.
LAUNCH_FACTOR = 1.5
#: The floor is the least time per call over this many of the smallest sizes.
FLOOR_ROWS = 3
#: With a single size at the floor, it counts as launch-bound only if the next size's
#: time grew by less than this fraction of its growth in bytes (time not following size).
LAUNCH_SCALING_MAX = 0.5
#: A working set "fits" in a cache of C bytes when it is at most this share of C: the
#: cache also holds other data, and on GPUs it is split into partitions (an H200 whose
#: torch reports 60 MB of L2 falls off its L2 bandwidth between 44 and 60 MB).
CACHE_FIT_FRACTION = 0.75
#: A working set at least this many times the cache must stream from DRAM.
DRAM_CACHE_MULTIPLE = 4.0
#: Rows within this relative distance of the plateau belong to it; the plateau is grown
#: from the largest size downwards while rows stay within it of the running median.
PLATEAU_TOLERANCE = 0.25
#: Cache-resident sizes less than this many times faster than DRAM: the cache did not help.
CACHE_GAIN_MIN = 1.25

#: What the tutorial's sweep script assumes every element weighs.
TUTORIAL_ASSUMED_ELEMENT_SIZE = 2
#: An example of the weights one LLM decode step reads: 8B parameters in fp16.
EXAMPLE_WEIGHT_BYTES = 16e9


def bytes_moved(elements: int, element_size: int) -> int:
    """Bytes one in-place scale moves: every element read once and written once."""
    return 2 * elements * element_size


# --- what the lab scripts write ---


class DeviceInfo(BaseModel):
    """The `device` object of a lab script's JSON: what the device says about itself."""

    model_config = ConfigDict(extra="allow")

    type: str = "cuda"
    name: str | None = None
    memory_bytes: int | None = None
    l2_bytes: int | None = None
    l2_source: str | None = None
    sm_count: int | None = None
    cc: str | None = None
    torch: str | None = None
    cuda: str | None = None
    driver: str | None = None
    python: str | None = None


class SweepRow(BaseModel):
    model_config = ConfigDict(extra="allow")

    log2: int
    elements: int = Field(gt=0)
    bytes_per_call: int = Field(gt=0)
    seconds_per_call: float = Field(gt=0)
    tensor_bytes: int | None = None


class SweepSkip(BaseModel):
    model_config = ConfigDict(extra="allow")

    log2: int
    reason: str


class SweepRecord(BaseModel):
    """`lab_scripts/sweep.py --json`: one in-place scale timed at many sizes."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    kind: Literal["sweep"]
    schema_version: int = Field(alias="schema")
    op: str = "scale"
    dtype: str
    element_size: int = Field(gt=0)
    iters: int
    warmup: int
    device: DeviceInfo
    rows: list[SweepRow]
    skipped: list[SweepSkip] = []

    @model_validator(mode="after")
    def _bytes_follow_element_size(self) -> SweepRecord:
        for row in self.rows:
            expected = bytes_moved(row.elements, self.element_size)
            if row.bytes_per_call != expected:
                raise ValueError(
                    f"row 2^{row.log2}: bytes_per_call is {row.bytes_per_call}, but 2 x "
                    f"{row.elements} elements x {self.element_size} B is {expected}"
                )
        return self


class RangeWork(BaseModel):
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


class Lesson1Record(BaseModel):
    """`lab_scripts/lesson1.py --json`."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    kind: Literal["lesson1"]
    schema_version: int = Field(alias="schema")
    device: DeviceInfo
    scaled_down: bool = False
    ranges: list[RangeWork]


# --- rates and the roofline ---


class Roofline(BaseModel):
    """Where one kernel sits on the roofline: min(peak FLOP/s, bandwidth x intensity)."""

    intensity: float  # FLOP per byte
    peak_flops_per_s: float
    peak_bytes_per_s: float
    ridge: float  # FLOP per byte where the two roofs meet
    bound: Literal["memory", "compute"]
    attainable_flops_per_s: float
    achieved_flops_per_s: float
    pct_of_attainable: float


def roofline(
    *, flops_per_s: float, intensity: float, peak_flops_per_s: float, peak_bytes_per_s: float
) -> Roofline:
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


class Rates(BaseModel):
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
        memory_roof_flops_per_s=(
            peak_bytes_per_s * intensity if peak_bytes_per_s and intensity is not None else None
        ),
    )


def compute_peak(
    spec: DeviceSpec | None, dtype: str, kernel_kind: str
) -> tuple[float | None, str | None]:
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
                f"{spec.fp16_tensor_tflops:g} TFLOPS dense FP16 tensor, {src}",
            )
        return None, None
    if dtype in ("float32", "float16", "bfloat16") and spec.fp32_tflops:
        return spec.fp32_tflops * 1e12, f"{spec.fp32_tflops:g} TFLOPS FP32 (CUDA cores), {src}"
    return None, None


class Lesson1Analysis(BaseModel):
    device_name: str | None
    device_type: str
    spec_name: str | None
    timing_source: str
    scaled_down: bool
    ranges: list[Rates]
    lesson: list[str]
    notes: list[str]


def _fmt_rate(bps: float) -> str:
    return f"{bps / 1e12:.2f} TB/s" if bps >= 1e11 else f"{bps / 1e9:.1f} GB/s"


def _fmt_flops(fps: float) -> str:
    return f"{fps / 1e12:.0f} TFLOPS" if fps >= 1e13 else f"{fps / 1e9:.1f} GFLOP/s"


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
            peak_f, f_label = peak_tflops * 1e12, f"{peak_tflops:g} TFLOPS (given)"
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
                f"{r.name}: no roofline verdict: the {missing} of "
                f"{dev.name or 'this GPU'} is not in the table"
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
    head = f"{r.name}: {r.us:.1f} us per call"
    if work.kernel_kind == "gemm":
        head += f", {_fmt_flops(r.flops_per_s)}"
        if r.pct_of_flops_peak is not None:
            head += f" ({r.pct_of_flops_peak:.0f}% of {r.flops_label})"
    else:
        head += f", {_fmt_rate(r.bytes_per_s)}"
        if r.pct_of_bw_peak is not None:
            head += f" ({r.pct_of_bw_peak:.0f}% of {r.bw_label})"
    if r.intensity is None:
        return head + "."
    head += f"; {r.intensity:.3g} FLOP/byte"
    if r.roofline is not None:
        roof = r.roofline
        if roof.bound == "memory":
            return (
                head + f", below the ridge at {roof.ridge:.0f} FLOP/byte: memory-bound. Only "
                "moving fewer bytes (smaller types, fusing ops) makes it faster."
            )
        return (
            head + f", above the ridge at {roof.ridge:.0f} FLOP/byte: compute-bound, at "
            f"{roof.pct_of_attainable:.0f}% of the attainable {_fmt_flops(roof.attainable_flops_per_s)}."
        )
    if r.memory_roof_flops_per_s is not None:
        ratio = r.flops_per_s / r.memory_roof_flops_per_s
        if ratio < 0.5:
            return (
                head + f": bandwidth alone would allow {_fmt_flops(r.memory_roof_flops_per_s)} "
                f"at this intensity and it ran at {ratio:.0%} of that, so memory is not what "
                "limits it (the compute peak is not in the table)."
            )
    return head + "."


# --- the bandwidth sweep ---


class RegimeInput(BaseModel):
    """One size of a sweep, as the classifier sees it."""

    working_set_bytes: int  # the tensor's bytes: the op reads and writes this one buffer
    bytes_per_call: int
    seconds_per_call: float

    @property
    def bytes_per_s(self) -> float:
        return self.bytes_per_call / self.seconds_per_call


class RegimeResult(BaseModel):
    regimes: list[Regime]  # one per input, in input order
    basis: Literal["cache size", "curve shape"]
    floor_seconds: float | None  # None when no size was launch-bound
    plateau_bytes_per_s: float | None
    plateau_rows: list[int]  # indices of the inputs the plateau was taken from
    plateau_is_estimate: bool
    notes: list[str]


def classify_regimes(
    points: Sequence[RegimeInput],
    *,
    cache_bytes: int | None,
    dram_spec_bytes_per_s: float | None = None,
) -> RegimeResult:
    """Name the regime of each size of a bandwidth sweep.

    The rule (thresholds are the module constants):

    1. launch: sizes, from the smallest up, whose time per call is within LAUNCH_FACTOR of
       the floor (the least time over the FLOOR_ROWS smallest sizes). The run stops at the
       first size that leaves the floor, and at the first size that does not fit in the
       cache: a working set that must stream from DRAM is not launch-bound even if it
       happens to read the floor. A floor needs evidence: two sizes on it, or, with one,
       the next size's time growing far less than its bytes (LAUNCH_SCALING_MAX).
    2. cache: not launch, and the working set fits in the cache
       (<= CACHE_FIT_FRACTION of it).
    3. The DRAM plateau: from the sizes at least DRAM_CACHE_MULTIPLE times the cache
       (failing that, the sizes that do not fit, marked as an estimate), grown from the
       largest size down while rows stay within PLATEAU_TOLERANCE of the running median;
       the plateau is their median. An estimated plateau above the DRAM spec is no DRAM
       figure at all (those sizes were still partly cached): it is dropped, with a note.
    4. The remaining sizes: dram when their bandwidth is at most the plateau plus
       PLATEAU_TOLERANCE, else transition. So a size just past the cache that already runs
       at the plateau is dram, and a size several times the cache that still runs well
       above it (a larger effective cache, a prefetcher) is transition. A size that does
       not fit but beats the DRAM spec is partly cached: transition, not a side forced.

    Without a cache size the rule falls back on the shape of the curve: the plateau is
    grown from the largest size as in 3; a size above it is cache when it is at or before
    the bandwidth peak (or beats the DRAM spec), transition after the peak.
    """
    n = len(points)
    regimes: list[Regime | None] = [None] * n
    notes: list[str] = []
    if n == 0:
        return RegimeResult(
            regimes=[],
            basis="cache size" if cache_bytes else "curve shape",
            floor_seconds=None,
            plateau_bytes_per_s=None,
            plateau_rows=[],
            plateau_is_estimate=False,
            notes=["no sizes were measured"],
        )
    order = sorted(range(n), key=lambda i: points[i].working_set_bytes)
    bw = [p.bytes_per_s for p in points]
    secs = [p.seconds_per_call for p in points]
    ws = [p.working_set_bytes for p in points]

    # 1. launch
    floor = min(secs[i] for i in order[:FLOOR_ROWS])
    run: list[int] = []
    for i in order:
        if cache_bytes and ws[i] > cache_bytes:
            break
        if secs[i] > LAUNCH_FACTOR * floor:
            break
        run.append(i)
    if len(run) == 1:
        nxt = order.index(run[0]) + 1
        if nxt < n:
            j = order[nxt]
            time_growth = secs[j] / secs[run[0]]
            bytes_growth = points[j].bytes_per_call / points[run[0]].bytes_per_call
            if time_growth >= LAUNCH_SCALING_MAX * bytes_growth:
                run = []
        else:
            run = []
    for i in run:
        regimes[i] = "launch"
    floor_seconds = min(secs[i] for i in run) if run else None

    # 2. cache by residency
    if cache_bytes:
        for i in order:
            if regimes[i] is None and ws[i] <= CACHE_FIT_FRACTION * cache_bytes:
                regimes[i] = "cache"

    # 3. the plateau
    rest = [i for i in order if regimes[i] is None]
    estimate = False
    if cache_bytes:
        candidates = [i for i in rest if ws[i] >= DRAM_CACHE_MULTIPLE * cache_bytes]
        if not candidates:
            candidates = rest  # the sizes that do not fit, if any
            estimate = True
            if not candidates:
                notes.append("every size fitted in the cache; rerun with larger sizes to see DRAM")
    else:
        candidates = rest
        estimate = True
        notes.append("cache size unknown: regimes are inferred from the shape of the curve")
    tail = _plateau_tail(candidates, bw)
    plateau = statistics.median(bw[i] for i in tail) if tail else None
    spec = dram_spec_bytes_per_s
    if plateau is not None and spec and plateau > spec:
        if estimate:
            notes.append(
                f"the largest sizes still ran at {plateau / 1e12:.3g} TB/s, above the "
                f"{spec / 1e12:.4g} TB/s DRAM spec: they were partly served from a cache, so "
                "there is no DRAM figure; rerun with larger sizes"
            )
            plateau, tail = None, []
        else:
            notes.append(
                "the DRAM plateau is above the DRAM spec: either the spec does not match "
                "this device or the largest sizes are still served from a cache"
            )
    elif plateau is not None and estimate and cache_bytes:
        notes.append(
            f"no size reached {DRAM_CACHE_MULTIPLE:g}x the cache; the DRAM figure comes from "
            "the largest sizes, which may still be partly cached"
        )
    # above a credible spec, a size cannot be streaming from DRAM alone
    beats_spec = [bool(spec and plateau and plateau <= spec and bw[i] > spec) for i in range(n)]

    # 4. the rest
    non_launch = [i for i in order if regimes[i] != "launch"]
    peak_pos = max(range(len(non_launch)), key=lambda k: bw[non_launch[k]]) if non_launch else -1
    for pos, i in enumerate(non_launch):
        if regimes[i] is not None:
            continue
        on_plateau = (
            plateau is not None and bw[i] <= plateau * (1 + PLATEAU_TOLERANCE) and not beats_spec[i]
        )
        if cache_bytes:
            regimes[i] = "dram" if on_plateau else "transition"
        elif spec and bw[i] > spec:
            regimes[i] = "cache"
        elif on_plateau:
            regimes[i] = "dram"
        else:
            regimes[i] = "cache" if pos <= peak_pos else "transition"
    return RegimeResult(
        regimes=[r if r is not None else "transition" for r in regimes],
        basis="cache size" if cache_bytes else "curve shape",
        floor_seconds=floor_seconds,
        plateau_bytes_per_s=plateau,
        plateau_rows=sorted(tail, key=lambda i: ws[i]),
        plateau_is_estimate=estimate and plateau is not None,
        notes=notes,
    )


def _plateau_tail(candidates: list[int], bw: list[float]) -> list[int]:
    """From the largest candidate down, the run of rows within tolerance of its median."""
    tail: list[int] = []
    for i in reversed(candidates):
        if tail:
            mid = statistics.median(bw[j] for j in tail)
            if abs(bw[i] / mid - 1) > PLATEAU_TOLERANCE:
                break
        tail.append(i)
    return tail


class SweepPoint(BaseModel):
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


class SweepSummary(BaseModel):
    device_name: str | None
    device_type: str
    dtype: str
    element_size: int
    basis: str
    launch_floor_us: float | None
    cache_peak_tbps: float | None
    cache_peak_log2: int | None
    dram_tbps: float | None
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


class SweepAnalysis(BaseModel):
    rows: list[SweepPoint]
    summary: SweepSummary


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
    """
    dev = merge_device(record.device.model_dump(), spec, use_table=use_table)
    cache = l2_bytes if l2_bytes is not None else dev.l2_bytes
    cache_src = "given" if l2_bytes is not None else dev.l2_source
    spec_bw = dev.dram_bw_bytes_per_s
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
    points = [
        SweepPoint(
            log2=r.log2,
            elements=r.elements,
            tensor_bytes=p.working_set_bytes,
            bytes_per_call=r.bytes_per_call,
            seconds_per_call=r.seconds_per_call,
            us=r.seconds_per_call * 1e6,
            mib=p.working_set_bytes / 2**20,
            tbps=p.bytes_per_s / 1e12,
            pct_of_dram_spec=100.0 * p.bytes_per_s / spec_bw if spec_bw else None,
            cache_ratio=p.working_set_bytes / cache if cache else None,
            regime=regime,
        )
        for r, p, regime in zip(rows, inputs, result.regimes, strict=True)
    ]
    cache_rows = [p for p in points if p.regime == "cache"]
    peak = max(cache_rows, key=lambda p: p.tbps) if cache_rows else None
    plateau = result.plateau_bytes_per_s
    notes = list(dev.notes) + result.notes
    notes += [f"2^{s.log2} skipped: {s.reason}" for s in record.skipped]
    summary = SweepSummary(
        device_name=dev.name,
        device_type=dev.device_type,
        dtype=record.dtype,
        element_size=record.element_size,
        basis=result.basis,
        launch_floor_us=result.floor_seconds * 1e6 if result.floor_seconds else None,
        cache_peak_tbps=peak.tbps if peak else None,
        cache_peak_log2=peak.log2 if peak else None,
        dram_tbps=plateau / 1e12 if plateau else None,
        dram_from_log2=[points[i].log2 for i in result.plateau_rows],
        dram_is_estimate=result.plateau_is_estimate,
        dram_pct_of_spec=100.0 * plateau / spec_bw if plateau and spec_bw else None,
        spec_name=dev.spec_name,
        spec_dram_tbps=spec_bw / 1e12 if spec_bw else None,
        spec_label=dev.dram_bw_label,
        l2_bytes=cache,
        l2_source=cache_src,
        lesson=[],
        notes=notes,
    )
    summary.lesson = sweep_lesson(summary, points)
    return SweepAnalysis(rows=points, summary=summary)


def _size(nbytes: float) -> str:
    if nbytes >= 2**30:
        return f"{nbytes / 2**30:.0f} GiB"
    if nbytes >= 2**20:
        return f"{nbytes / 2**20:.0f} MiB"
    return f"{nbytes / 2**10:.0f} KiB"


def sweep_lesson(summary: SweepSummary, points: Sequence[SweepPoint]) -> list[str]:
    """A few sentences keyed to the measured numbers."""
    gpu = summary.device_type == "cuda"
    cache_name = "L2 cache" if gpu else "last-level cache"
    out: list[str] = []
    launch = [p for p in points if p.regime == "launch"]
    if launch and summary.launch_floor_us is not None:
        floor = summary.launch_floor_us
        what = "launching one kernel" if gpu else "dispatching one torch operation"
        cure = (
            "This is why LLM serving captures CUDA graphs and fuses kernels: a step of 1,000 "
            f"small kernels would spend ~{floor:.1f} ms on launches alone."
            if gpu
            else f"1,000 such small operations would spend ~{floor:.1f} ms on overhead alone; "
            "fusing them (torch.compile) is the cure."
        )
        out.append(
            f"Up to {_size(launch[-1].tensor_bytes)} the time sits at a ~{floor:.1f} us floor "
            f"whatever the size: that is the fixed cost of {what}, not data movement, and "
            f"the bandwidth figures there mean nothing. {cure}"
        )
    plateau = summary.dram_tbps
    if summary.cache_peak_tbps is not None and summary.cache_peak_log2 is not None:
        peak_row = next(p for p in points if p.log2 == summary.cache_peak_log2)
        where = f"At {_size(peak_row.tensor_bytes)} the scale ran at {_rate_tb(summary.cache_peak_tbps)}"
        if plateau and summary.cache_peak_tbps < CACHE_GAIN_MIN * plateau:
            out.append(
                f"{where}, hardly faster than the DRAM plateau ({_rate_tb(plateau)}): the "
                f"{cache_name} did not help this op, so something other than memory limits "
                "it at those sizes (on a CPU, typically the arithmetic or converting "
                "fp16/bf16 to fp32 and back)."
            )
        else:
            if summary.spec_dram_tbps and summary.cache_peak_tbps > summary.spec_dram_tbps:
                versus = (
                    f"{summary.cache_peak_tbps / summary.spec_dram_tbps:.1f}x the DRAM spec "
                    f"({summary.spec_label})"
                )
            elif plateau:
                versus = f"{summary.cache_peak_tbps / plateau:.1f}x the DRAM plateau"
            else:
                versus = "above what memory delivers"
            size = (
                f"the {_size(summary.l2_bytes)} {cache_name}"
                if summary.l2_bytes
                else f"the {cache_name}"
            )
            partly = ""
            if summary.launch_floor_us and peak_row.us < 3 * summary.launch_floor_us:
                partly = " It is still partly launch-bound, so the cache itself is faster still."
            out.append(
                f"{where}, {versus}: the data was served from {size}, not from memory. "
                f"Never quote such a figure as memory bandwidth.{partly}"
            )
    if plateau:
        # the run of dram sizes that ends the sweep: where the curve has settled
        settled: list[SweepPoint] = []
        for p in reversed(points):
            if p.regime != "dram":
                break
            settled.append(p)
        start = f"From {_size(settled[-1].tensor_bytes)} up" if settled else "At the largest sizes"
        pct = ""
        if summary.dram_pct_of_spec is not None:
            pct = (
                f" ({summary.dram_pct_of_spec:.0f}% of {summary.spec_label}; 70-80% is "
                "typical for a kernel like this)"
            )
        per_token_ms = EXAMPLE_WEIGHT_BYTES / (plateau * 1e12) * 1e3
        estimate = (
            " (an estimate: no size was far beyond the cache)" if summary.dram_is_estimate else ""
        )
        out.append(
            f"{start} the bandwidth settles at {_rate_tb(plateau)}{pct}{estimate}: the real "
            "memory ceiling. LLM weights are far larger than any cache and decode reads all "
            "of them for every token, so this governs decode: per-token floor = weight bytes "
            f"/ {_rate_tb(plateau)}, e.g. {per_token_ms:.1f} ms for 16 GB (8B parameters in "
            "fp16)."
        )
    if summary.element_size != TUTORIAL_ASSUMED_ELEMENT_SIZE:
        factor = summary.element_size / TUTORIAL_ASSUMED_ELEMENT_SIZE
        out.append(
            f"Bytes are counted as 2 x elements x {summary.element_size} B ({summary.dtype}). "
            f"The tutorial's script assumes 2 B per element and would print {1 / factor:g}x "
            "these bandwidths."
        )
    return out


def _rate_tb(tbps: float) -> str:
    return f"{tbps:.2f} TB/s" if tbps >= 0.1 else f"{tbps * 1e3:.1f} GB/s"
