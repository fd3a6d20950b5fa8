"""The roofline: rates against the GPU's peaks, and the floor on one decode step.

- `rates` and `roofline`: bytes and FLOPs per call over seconds per call; the percentage
  of the spec peak (`compute_peak` picks the one that applies and names its source);
  arithmetic intensity (FLOP/byte), the ridge point (peak FLOP/s / peak bytes/s) and
  which roof a kernel sits under.
- `decode_floor`: decoding one token reads every weight once and does little arithmetic
  per byte, so the step cannot be faster than weight bytes / memory bandwidth (the
  tutorial's "where to go next": weight bytes / 1.46 TB/s). Two floors side by side: from
  the DRAM plateau a sweep measured (what the GPU really delivers to a streaming kernel)
  and from the GPU's spec sheet (what it is sold as). The measured floor is the honest
  one; the spec floor is a bound nothing reaches.

Units: GB are 10^9 bytes (8B parameters in fp16 are 16 GB), TB/s are 10^12 bytes/s.
Pure: no I/O.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from nsightlab import units
from nsightlab.errors import UsageError
from nsightlab.models import Model
from nsightlab.specs.gpus import SPECS, DeviceSpec, GpuSpec, for_instance_type, lookup

GB = 1e9

Basis = Literal["measured", "spec"]


class FloorLine(Model):
    """One floor: a bandwidth, where it came from, and what it allows per token."""

    basis: Basis
    label: str  # e.g. "measured DRAM plateau, run 3fa2c1 (float16)"
    source: str  # the run, or the spec and its source
    gpu: str | None
    run_id: str | None = None
    dtype: str | None = None
    bandwidth_tbps: float
    ms_per_token: float
    tokens_per_s: float  # one sequence, batch 1: the ceiling the floor implies
    estimate: bool = False  # the plateau came from sizes that may still be partly cached


class DecodeFloor(Model):
    """`nsightlab roofline --json`: the per-token floor for a model of `weights_gb`."""

    kind: Literal["decode-floor"] = "decode-floor"
    weights_gb: float
    weight_bytes: int  # a count of bytes: 16 GB is 16000000000
    lines: list[FloorLine]
    measured_pct_of_spec: float | None = None  # the first measured floor's bandwidth vs its spec
    summary: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class PlateauSource(Model):
    """What the floor needs from a sweep run (kept small so this module stays pure)."""

    run_id: str | None
    dtype: str
    device_name: str | None
    device_type: str
    dram_tbps: float | None
    dram_is_estimate: bool = False


def floor_line(
    weight_bytes: float,
    bandwidth_bytes_per_s: float,
    *,
    basis: Basis,
    label: str,
    source: str,
    gpu: str | None,
    run_id: str | None = None,
    dtype: str | None = None,
    estimate: bool = False,
) -> FloorLine:
    """weight bytes / bandwidth, in ms per token and tokens per second."""
    if bandwidth_bytes_per_s <= 0:
        raise ValueError("bandwidth must be positive")
    seconds = weight_bytes / bandwidth_bytes_per_s
    return FloorLine(
        basis=basis,
        label=label,
        source=source,
        gpu=gpu,
        run_id=run_id,
        dtype=dtype,
        bandwidth_tbps=bandwidth_bytes_per_s / 1e12,
        ms_per_token=seconds * 1e3,
        tokens_per_s=1.0 / seconds,
        estimate=estimate,
    )


def find_gpu(name: str) -> GpuSpec:
    """A spec by product name (as torch reports it), table key, or EC2 instance type."""
    spec = lookup(name)
    if spec is None:
        spec = next((s for s in SPECS if s.key == name.strip().lower()), None)
    if spec is None and "." in name:
        spec = for_instance_type(name)
    if spec is None:
        known = ", ".join(s.key for s in SPECS)
        raise UsageError(
            f"no GPU '{name}' in the spec table",
            hint=f"Give a product name as nvidia-smi shows it, an instance type (g7e.8xlarge) or one of: {known}.",
        )
    return spec


def _spec_line(weight_bytes: float, spec: GpuSpec) -> FloorLine | None:
    if spec.dram_bw_bytes_per_s is None:
        return None
    return floor_line(
        weight_bytes,
        spec.dram_bw_bytes_per_s,
        basis="spec",
        label=f"DRAM spec, {spec.short}",
        source=spec.bw_label() or spec.source,
        gpu=spec.name,
    )


def decode_floor(
    weights_gb: float,
    *,
    sweeps: list[PlateauSource] | None = None,
    gpus: list[GpuSpec] | None = None,
) -> DecodeFloor:
    """Floors from each sweep's measured DRAM plateau and from each GPU's spec.

    A sweep's own GPU adds its spec line beside the measured one; `gpus` adds spec lines
    for GPUs with no sweep (`--gpu NAME`). A sweep with no plateau (sizes too small, or a
    CPU whose sizes all fitted in cache) gives no line, and a note says why.
    """
    if not 0 < weights_gb < float("inf"):  # (NaN fails this too)
        raise UsageError(f"--weights-gb must be positive, got {weights_gb:g}")
    weight_bytes = round(weights_gb * GB)
    lines: list[FloorLine] = []
    notes: list[str] = []
    specs: list[GpuSpec] = []
    for s in sweeps or []:
        spec = lookup(s.device_name) if s.device_type == "cuda" else None
        run = f"run {s.run_id}" if s.run_id else "a sweep"
        if s.dram_tbps is None:
            notes.append(f"{run} ({s.dtype}) reached no DRAM plateau: sweep larger sizes to measure one")
        else:
            device = s.device_name or s.device_type
            lines.append(
                floor_line(
                    weight_bytes,
                    s.dram_tbps * 1e12,
                    basis="measured",
                    label=f"measured DRAM plateau, {run}, {s.dtype}",
                    source=f"{run}: {s.dtype} sweep on {device}",
                    gpu=device,
                    run_id=s.run_id,
                    dtype=s.dtype,
                    estimate=s.dram_is_estimate,
                )
            )
            if s.dram_is_estimate:
                notes.append(
                    f"{run}: the plateau is an estimate (no size was far beyond the cache); the floor may be optimistic"
                )
        if spec is not None and spec not in specs:
            specs.append(spec)
        elif spec is None and s.device_type == "cuda":
            notes.append(f"{s.device_name or 'the GPU'} of {run} is not in the spec table: no spec floor for it")
    for g in gpus or []:
        if g not in specs:
            specs.append(g)
    for spec in specs:
        line = _spec_line(weight_bytes, spec)
        if line is None:
            notes.append(f"{spec.name}: no DRAM bandwidth in the spec table")
        else:
            lines.append(line)
    result = DecodeFloor(weights_gb=weights_gb, weight_bytes=weight_bytes, lines=lines, notes=notes)
    result.measured_pct_of_spec, result.summary = _summary(result)
    return result


def _summary(floor: DecodeFloor) -> tuple[float | None, list[str]]:
    """Sentences in nsightlab.units' words (the spec quoted as its source gives it)."""
    out: list[str] = []
    pct: float | None = None
    w = units.gigabytes(floor.weight_bytes)
    for m in (x for x in floor.lines if x.basis == "measured"):
        spec = next((x for x in floor.lines if x.basis == "spec" and x.gpu == m.gpu), None)
        text = (
            f"{w} / {units.tbps(m.bandwidth_tbps * 1e12)} ({m.label}) = {units.duration(m.ms_per_token * 1e-3)} "
            "per token "
            f"at least, {units.sig(m.tokens_per_s)} tokens/s at most for one sequence"
        )
        if spec is not None:
            share = 100.0 * m.bandwidth_tbps / spec.bandwidth_tbps
            pct = share if pct is None else pct
            text += (
                f"; the spec ({spec.source}) would give {units.duration(spec.ms_per_token * 1e-3)}. The plateau is "
                f"{units.percent(share)} of the spec, so the real floor is "
                f"{units.percent(100 * (m.ms_per_token / spec.ms_per_token - 1))} "
                "above the spec's"
            )
        out.append(text + ".")
    for s in (x for x in floor.lines if x.basis == "spec"):
        if any(m.gpu == s.gpu for m in floor.lines if m.basis == "measured"):
            continue
        out.append(
            f"{w} / {s.source} = {units.duration(s.ms_per_token * 1e-3)} per token: a bound no kernel reaches; "
            "sweep the GPU to measure its plateau."
        )
    if floor.lines:
        out.append(
            "The floor counts only reading the weights once per token (batch 1); the KV cache, "
            "activations and launch gaps come on top. Compare it with a measured decode step."
        )
    return pct, out


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
