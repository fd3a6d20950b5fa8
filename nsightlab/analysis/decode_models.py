"""The decode result models: the decode and trace results nsightlab builds from
`lab_scripts/decode.py`'s record (`parse.records.decode_record`) and a trace's step
anatomy (contracts: their shapes are documented in docs/decode.md), and the bandwidth a
step's floor divides by (from the spec table: `nsightlab.analysis.peaks`). Pure.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from nsightlab.analysis.stepmodels import (
    IdleMs,
    MsStats,
    Phase,
    RangeCount,
    StepSource,
    StepTimeline,
    TopKernel,
    TraceKernel,
    TraceSummary,
)
from nsightlab.analysis.verdicts import Floor, Verdict
from nsightlab.models import Model

Bound = Literal["memory", "compute"]

# ------------------------------------------------------------------------ results


class DecodeModelInfo(Model):
    preset: str | None
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    tied: bool
    params: int  # every weight tensor once (a tied LM head once)
    weight_bytes: int
    dtype: str


class DecodeSteps(Model):
    """One group of steps: the step anatomy, the floor and the verdict. A contract.

    Figures "per step" are the median step's (`StepAnatomy`); None where the steps come
    from the script's own timing (`source: script`: no trace) or, for `host_ms`, from
    the kernel sequence (no host range)."""

    source: StepSource
    step_range: str | None
    count: int
    step_ms: MsStats
    kernels_per_step: int | None
    gpu_busy_pct: float | None
    idle_ms_per_step: IdleMs | None
    top_kernels: list[TopKernel]
    floor: Floor | None
    verdict: Verdict
    phase: Phase = "unknown"
    host_ms: MsStats | None = None
    gpu_span_ms: MsStats | None = None
    gpu_busy_ms: MsStats | None = None
    kernel_busy_pct: float | None = None
    memops_per_step: int | None = None
    memops_ms_per_step: float | None = None
    graph_replays_per_step: int | None = None
    syncs_per_step: int | None = None
    syncs_ms_per_step: float | None = None
    other_busy_ms_per_step: float | None = None
    layer_period: int | None = None
    step_period: int | None = None


class GroupSteps(DecodeSteps):
    """`analyze`'s steps: a decode step object for each group of steps in the trace."""

    group: str | None  # the enclosing ranges (`mode:eager > batch:8`), None if none


class DecodeMode(Model):
    mode: str
    batch: int
    tokens_per_s: float  # batch x 1000 / median step ms
    steps: DecodeSteps


class BatchPoint(Model):
    """One batch size: measured, and what the roofline predicts."""

    batch: int
    step_ms: float
    tokens_per_s: float
    predicted_tokens_per_s: float | None
    bound: Bound | None


class DecodeResult(Model):
    """`nsightlab profile decode --json` (and the run's result.json). A contract."""

    kind: Literal["decode"] = "decode"
    run_id: str | None = None
    device: str  # the GPU's name, or "cpu (NAME)" where CPU ops stand in for kernels
    model: DecodeModelInfo
    modes: list[DecodeMode]
    trace: TraceSummary | None
    batch_sweep: list[BatchPoint] | None
    lesson: list[str]
    notes: list[str]


class TraceResult(Model):
    """`nsightlab analyze TRACE --json` for a trace alone (a cuda_gpu_trace export, a
    Kineto file): the whole timeline and a decode step object per group of steps."""

    kind: Literal["trace"] = "trace"
    source: str
    input: Literal["nsys", "kineto"]
    device: str | None
    steps: list[GroupSteps]
    trace: TraceSummary
    notes: list[str]
    kernels: list[TraceKernel] = Field(default_factory=list)  # the trace's top kernels, kernels only
    ranges: list[RangeCount] = Field(default_factory=list)  # its named ranges


class ModeTimeline(Model):
    """The median step of one mode and batch on the time axis (the report's picture)."""

    mode: str | None
    batch: int | None
    ops_are: Literal["gpu", "cpu"]
    timeline: StepTimeline


class RooflinePoint(Model):
    batch: float
    tokens_per_s: float
    bound: Bound | None


class DecodeTimelines(Model):
    """`timeline.json` of a decode run, what its figures need beyond the result: one
    step per mode and batch op by op, and the roofline's tokens/s as a curve of batch."""

    run_id: str | None
    device: str
    timelines: list[ModeTimeline]
    roofline: list[RooflinePoint] = Field(default_factory=list)
    roofline_mode: str | None = None
    crossover_batch: float | None = None
    bandwidth_label: str | None = None


# -------------------------------------------------------------------- bandwidth


class Bandwidth(Model):
    """What the floor divides by, where it came from, and the compute peak for the ridge."""

    tbps: float
    basis: Literal["measured", "spec"]
    label: str  # "measured DRAM plateau, run 3fa2c1 (float16 sweep)", "spec: NVIDIA H200 datasheet"
    peak_tflops: float | None = None  # dense matrix peak for the model's dtype, from the spec
    peak_label: str | None = None

    @property
    def ridge(self) -> float | None:
        """FLOP per byte where compute and memory take the same time."""
        if self.peak_tflops is None or self.tbps <= 0:
            return None
        return self.peak_tflops / self.tbps


_DEVICE_INDEX = re.compile(r"\s*\(\d+\)$")


def device_name_of(name: str | None) -> str | None:
    """A GPU name as the spec table knows it: nsys's Device column adds the device
    index (`NVIDIA H100 80GB HBM3 (0)`)."""
    if not name:
        return None
    return _DEVICE_INDEX.sub("", name.strip()) or None
