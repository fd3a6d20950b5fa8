"""What a bandwidth sweep's analysis is made of: a row per size (TB/s, % of spec, regime,
the spread of its batches), the summary (launch floor, cache peak, DRAM plateau against
the spec) and the plateau's verdict, with the agreement the plateau rule asks of its
sizes. The arithmetic is `sweep_analysis`; the sentences are `explain.sweep_words`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from nsightlab.analysis.regimes import Regime
from nsightlab.models import Model

#: The DRAM-bound sizes a plateau is named from agree within this fraction (largest /
#: smallest - 1). One point, or points that scatter more, make the plateau inconclusive:
#: noise cannot be told from a level.
PLATEAU_AGREEMENT = 0.10


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
