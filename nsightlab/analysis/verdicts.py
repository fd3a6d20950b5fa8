"""What bounds a step, from named thresholds kept here: the host (the GPU waits for it),
launches (the GPU idles between kernels), compute, the memory floor, or memory far from
it; and the floor itself (bytes one step must move / bandwidth).

`decide` applies the thresholds to a group's median step (the step whose figures the
group's anatomy gives): every verdict, the decode ones included, is decided here. The
sentences around a decision are `explain.step_words`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import ConfigDict

from nsightlab.analysis.stepmodels import StepGroup, StepTiming
from nsightlab.models import Model


class _Model(Model):
    model_config = ConfigDict(extra="forbid")


# A step is host-bound when the GPU waits for the host at least this share of it (and
# longer than it idles between kernels): before the step's GPU work while its host range
# is open, in its synchronisations, and after its last GPU operation while the host is
# still in the step.
HOST_BOUND_WAIT_PCT = 30.0
# A step is launch-bound when the GPU sits idle for at least this share of it.
LAUNCH_BOUND_IDLE_PCT = 30.0
# A gap at least this long between a step's own GPU operations, with the GPU running
# nothing, is the host's: a launch takes microseconds (tens, through PyTorch's dispatch),
# so in a millisecond of nothing the host was doing other work (loading the next batch,
# CPU compute, Python). Such gaps wait for the host; the shorter ones are launch gaps.
HOST_GAP_MS = 1.0
# A step within this factor of the memory floor is at the floor: the GPU is the limit.
NEAR_FLOOR_RATIO = 1.3
# A busy step is bound by its memory copies and sets when they run with no kernel at
# least this share of it (host<->device copies go at the link's speed, far below DRAM's),
# and by communication when its communication kernels (NCCL, RCCL) run with no other
# kernel at least this share (at least: the kernels' union less the other kernels' summed
# time, so other kernels overlapping each other never make it larger than it is).
ALONE_BOUND_PCT = 50.0


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


VerdictKind = Literal[
    "host-bound",
    "launch-bound",
    "copy-bound",
    "communication-bound",
    "compute-bound",
    "near-memory-floor",
    "memory-bound",
    "busy",
    "no-trace",
]


class Verdict(_Model):
    """What limits the step, in one sentence, and the next thing to try."""

    kind: VerdictKind
    text: str
    next_step: str
    thresholds: dict[str, float]


def thresholds() -> dict[str, float]:
    return {
        "host_bound_wait_pct": HOST_BOUND_WAIT_PCT,
        "launch_bound_idle_pct": LAUNCH_BOUND_IDLE_PCT,
        "host_gap_ms": HOST_GAP_MS,
        "alone_bound_pct": ALONE_BOUND_PCT,
        "near_floor_ratio": NEAR_FLOOR_RATIO,
    }


# ------------------------------------------------------------------ the decision


@dataclass(frozen=True)
class Decision:
    """The verdict's kind and the values it was decided on (of the median step)."""

    kind: VerdictKind
    step: StepTiming
    idle_pct: float
    wait_pct: float
    ratio: float | None  # step / floor
    intensity: float | None  # FLOP per byte
    cached: bool  # the bytes a step reads fit in the last-level cache: no DRAM floor
    copies_pct: float = 0.0  # the share of the step when only memory copies and sets ran
    comm_pct: float = 0.0  # the share when only communication kernels ran (at least)
    comm_ms: float = 0.0  # the communication kernels' time in the step, summed


def median_step(group: StepGroup) -> StepTiming:
    return group.steps[group.median_step]


def host_wait_ns(m: StepTiming) -> int:
    """The time the GPU waits for the host in a step, with nothing queued: before its GPU
    work, in its synchronisations and in gaps of HOST_GAP_MS or more between its
    operations (`idle_waiting_for_host_ns`), and after its last GPU operation
    (`idle_after_last_ns`): while its host range is still open, or, for a step inferred
    from the operations alone, until the next step's first operation. The shorter gaps
    between the step's own kernels are not in it: they are the launches' (`decide`)."""
    return m.idle_waiting_for_host_ns + m.idle_after_last_ns


def decide(
    group: StepGroup,
    *,
    floor: Floor | None = None,
    flop_per_step: float | None = None,
    ridge_flop_per_byte: float | None = None,
    cache_bytes: int | None = None,
) -> Decision:
    """The kind, in this order: host-bound when the GPU waits for the host at least
    HOST_BOUND_WAIT_PCT of the step and longer than it idles between kernels;
    launch-bound when it idles at least LAUNCH_BOUND_IDLE_PCT; copy-bound when memory
    copies and sets run with no kernel at least ALONE_BOUND_PCT of it, and
    communication-bound when communication kernels run alone that long; compute-bound when FLOP
    per byte passes the ridge point; when the bytes a step reads fit in the cache, busy
    (the DRAM floor does not bound it); at the memory floor within NEAR_FLOOR_RATIO;
    memory-bound beyond it; without a floor, busy."""
    m = median_step(group)
    window = m.window_ns
    idle_pct = 100.0 * m.idle_ns / window if window else 0.0
    host_ns = host_wait_ns(m)
    wait_pct = 100.0 * host_ns / window if window else 0.0
    ratio = None
    if floor is not None:
        ratio = group.anatomy.step_ms.median / floor.floor_ms if floor.floor_ms > 0 else math.inf
    intensity = None
    if flop_per_step is not None and floor is not None and floor.bytes_per_step > 0:
        intensity = flop_per_step / floor.bytes_per_step
    cached = floor is not None and cache_bytes is not None and floor.bytes_per_step <= cache_bytes
    copies_pct = 100.0 * max(0, m.busy_ns - m.kernel_busy_ns) / window if window else 0.0
    comm_ms = sum(k.ms_per_step for k in group.kinds if k.kind == "communication")
    other_ms = sum(k.ms_per_step for k in group.kinds if k.kind != "communication")
    alone_ms = min(comm_ms, m.kernel_busy_ns / 1e6 - other_ms) if comm_ms else 0.0
    comm_pct = max(0.0, 100.0 * alone_ms * 1e6 / window) if window else 0.0
    kind: VerdictKind
    if wait_pct >= HOST_BOUND_WAIT_PCT and host_ns >= m.idle_between_kernels_ns:
        kind = "host-bound"
    elif idle_pct >= LAUNCH_BOUND_IDLE_PCT:
        kind = "launch-bound"
    elif copies_pct >= ALONE_BOUND_PCT:
        kind = "copy-bound"
    elif comm_pct >= ALONE_BOUND_PCT:
        kind = "communication-bound"
    elif intensity is not None and ridge_flop_per_byte is not None and intensity > ridge_flop_per_byte:
        kind = "compute-bound"
    elif floor is None or cached:
        kind = "busy"
    elif ratio is not None and ratio <= NEAR_FLOOR_RATIO:
        kind = "near-memory-floor"
    else:
        kind = "memory-bound"
    return Decision(kind, m, idle_pct, wait_pct, ratio, intensity, cached, copies_pct, comm_pct, comm_ms)
