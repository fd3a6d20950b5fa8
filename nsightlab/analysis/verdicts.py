"""What bounds a step, in words, from named thresholds kept here: launch-bound, at the
memory floor, memory-bound far from it, or compute-bound at large batch; and the floor
itself (bytes one step must move / bandwidth)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

from pydantic import ConfigDict

from nsightlab.analysis.steps import StepGroup
from nsightlab.models import Model


class _Model(Model):
    model_config = ConfigDict(extra="forbid")


# A step is launch-bound when the GPU sits idle for at least this share of it.
LAUNCH_BOUND_IDLE_PCT = 30.0


# A step within this factor of the memory floor is at the floor: the GPU is the limit.
NEAR_FLOOR_RATIO = 1.3


class Floor(_Model):
    """The memory floor of a step: the time to move its bytes once at DRAM bandwidth.

    `pct_of_floor` is the step time as a percentage of the floor (100 = at the floor).
    """

    bytes_per_step: int
    bandwidth_tbps: float
    basis: Literal["measured", "spec"]
    floor_ms: float
    pct_of_floor: float | None = None


def memory_floor(
    bytes_per_step: int,
    bandwidth_tbps: float,
    basis: Literal["measured", "spec"],
    step_ms: float | None = None,
) -> Floor:
    """floor = bytes per step / DRAM bandwidth (TB/s = 10^12 bytes/s); the caller supplies
    both (a measured sweep plateau, or the GPU's spec sheet)."""
    if bandwidth_tbps <= 0:
        raise ValueError("bandwidth must be positive")
    floor_ms = bytes_per_step / (bandwidth_tbps * 1e12) * 1e3
    pct = round(100.0 * step_ms / floor_ms, 1) if step_ms is not None and floor_ms > 0 else None
    return Floor(
        bytes_per_step=bytes_per_step,
        bandwidth_tbps=bandwidth_tbps,
        basis=basis,
        floor_ms=round(floor_ms, 6),
        pct_of_floor=pct,
    )


VerdictKind = Literal["launch-bound", "compute-bound", "near-memory-floor", "memory-bound", "busy", "no-trace"]


class Verdict(_Model):
    """What limits the step, in one sentence, and the next thing to try."""

    kind: VerdictKind
    text: str
    next_step: str
    thresholds: dict[str, float]


def _thresholds() -> dict[str, float]:
    return {"launch_bound_idle_pct": LAUNCH_BOUND_IDLE_PCT, "near_floor_ratio": NEAR_FLOOR_RATIO}


def step_verdict(
    group: StepGroup,
    *,
    floor: Floor | None = None,
    flop_per_step: float | None = None,
    ridge_flop_per_byte: float | None = None,
    kernel_bytes: Mapping[str, int] | None = None,
) -> Verdict:
    """The verdict on one group of steps.

    In order: launch-bound when the GPU is idle for at least LAUNCH_BOUND_IDLE_PCT of the
    step; compute-bound when FLOP per byte (needs `flop_per_step`, `ridge_flop_per_byte`
    and the floor's bytes) exceeds the ridge point; at the memory floor when the median
    step is within NEAR_FLOOR_RATIO of `floor`; else memory-bound but far from the floor,
    naming the kernels with the lowest achieved bandwidth when `kernel_bytes` (bytes per
    step, by full kernel name) is given, else the largest. Without a floor: `busy`.
    """
    steps = group.steps
    window = sum(t.window_ns for t in steps)
    idle = sum(t.idle_ns for t in steps)
    idle_pct = 100.0 * idle / window if window else 0.0
    step_ms = group.anatomy.step_ms.median
    thresholds = _thresholds()
    rule = f"(launch-bound at >= {LAUNCH_BOUND_IDLE_PCT:g}% idle; at the floor within {NEAR_FLOOR_RATIO:g}x)"
    floor_text = ""
    if floor is not None:
        floor_text = f", the memory floor is {floor.floor_ms:.3g} ms ({floor.basis} {floor.bandwidth_tbps:g} TB/s)"
    head = f"the step takes {step_ms:.3g} ms{floor_text}"
    if idle_pct >= LAUNCH_BOUND_IDLE_PCT:
        gaps = group.anatomy.idle_ms_per_step
        return Verdict(
            kind="launch-bound",
            text=f"{head}; the GPU sits idle {idle_pct:.0f}% of each step "
            f"({gaps.between_kernels:.3g} ms between kernels, {gaps.before_first:.3g} ms before the "
            f"first, {gaps.after_last:.3g} ms after the last): launch-bound {rule}",
            next_step="capture the step in a CUDA graph, or launch fewer, fused kernels (torch.compile)",
            thresholds=thresholds,
        )
    if (
        flop_per_step is not None
        and ridge_flop_per_byte is not None
        and floor is not None
        and floor.bytes_per_step > 0
        and flop_per_step / floor.bytes_per_step > ridge_flop_per_byte
    ):
        intensity = flop_per_step / floor.bytes_per_step
        return Verdict(
            kind="compute-bound",
            text=f"{head}; {intensity:.3g} FLOP per byte is above the GPU's ridge point of "
            f"{ridge_flop_per_byte:.3g}: compute-bound at this batch {rule}",
            next_step="lower precision matrix math (FP8), or a smaller batch per GPU",
            thresholds=thresholds,
        )
    if floor is None:
        return Verdict(
            kind="busy",
            text=f"{head}; the GPU is busy {100 - idle_pct:.0f}% of the step {rule}",
            next_step="give the bytes moved per step (weights + KV cache) to compare with the memory floor",
            thresholds=thresholds,
        )
    ratio = step_ms / floor.floor_ms if floor.floor_ms > 0 else math.inf
    if ratio <= NEAR_FLOOR_RATIO:
        return Verdict(
            kind="near-memory-floor",
            text=f"{head}; the step is {ratio:.2f}x the floor: the GPU's memory is the limit {rule}",
            next_step="faster memory (another GPU), or a smaller / quantized model",
            thresholds=thresholds,
        )
    if kernel_bytes:
        rates = []
        for k in group.anatomy.top_kernels:
            moved = kernel_bytes.get(k.name)
            if moved and k.ms_per_step > 0:
                rates.append((moved / (k.ms_per_step * 1e-3) / 1e12, k.short_name))
        rates.sort()
        named = ", ".join(f"{name} ({tbps:.2g} TB/s)" for tbps, name in rates[:3])
        which = f"lowest achieved bandwidth: {named}"
    else:
        named = ", ".join(f"{k.short_name} ({k.ms_per_step:.3g} ms)" for k in group.anatomy.top_kernels[:3])
        which = f"largest kernels: {named}"
    return Verdict(
        kind="memory-bound",
        text=f"{head}; the GPU is busy but the step is {ratio:.2f}x the floor: memory-bound, "
        f"far from the floor {rule}; {which}",
        next_step="look at those kernels with ncu (memory throughput, achieved occupancy)",
        thresholds=thresholds,
    )
