"""What `profile` shows: the kernel table, the timed ranges with their rates, the CUDA
API calls and memory operations, and the lesson and notes (`ProfileResult`, what `profile
--json` prints). Built by `profile_result`, written about by `explain.profile_words`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from nsightlab.analysis.decode_models import GroupSteps
from nsightlab.analysis.roofline import Rates
from nsightlab.analysis.stepmodels import TraceSummary
from nsightlab.models import Model

Profiler = Literal["nsys", "torch", "none"]  # "none": the lab script's own record, read alone


class KernelLine(Model):
    name: str
    short_name: str
    kind: str
    origin: str | None = None  # "triton": a kernel Triton compiled (its kind is beside it)
    instances: int
    total_ns: float
    avg_ns: float | None
    time_pct: float | None
    self_ns: float | None = None  # a CPU op's own time, without its callees (torch.profiler)


class RangeLine(Model):
    """One timed NVTX range of the script: its kernels, and its rates."""

    name: str
    calls: int | None
    kernel: str | None  # the kernel that takes most of the range's GPU time (short name)
    kernel_full: str | None
    kernel_instances: int | None  # launches inside the timed range
    gpu_ns: float | None  # GPU time of the range's kernels, all calls
    rates: Rates | None
    range_ns: float | None = None  # the range's own time, all calls (nvtx_sum)


class ApiLine(Model):
    """One CUDA API function of nsys's cuda_api_sum: what the CPU spent calling it."""

    name: str
    calls: int
    total_ns: float
    pct: float | None
    avg_ns: float | None = None


class MemOpLine(Model):
    """One kind of memory operation (copies, sets) on the GPU timeline."""

    operation: str  # as nsys prints it: "[CUDA memcpy Device-to-Host]"
    kind: str  # htod, dtoh, dtod, htoh, ptop, memset, other
    count: int
    total_ns: float | None  # cuda_gpu_mem_time_sum
    bytes: float | None  # cuda_gpu_mem_size_sum (MB = 10^6 bytes there), else None


class ProfileResult(Model):
    kind: Literal["profile"] = "profile"
    run_id: str | None = None
    run_dir: str | None = None
    script: str
    profiler: Profiler
    target: str
    device_name: str | None
    device_type: str | None
    spec_name: str | None
    versions: dict[str, str | None] = Field(default_factory=dict)
    kernels: list[KernelLine]
    ranges: list[RangeLine]
    timing_source: str
    lesson: list[str]
    notes: list[str]
    files: list[str] = Field(default_factory=list)
    kernels_are: str | None = None  # "cuda kernels" | "cpu ops"
    activities: list[str] | None = None  # what torch.profiler recorded
    device_requested: str | None = None  # --device as asked: auto, cuda, cpu
    cuda_api: list[ApiLine] = Field(default_factory=list)
    memory_ops: list[MemOpLine] = Field(default_factory=list)
    trace: str | None = None  # the profiler's own trace in the run, e.g. raw/trace.json.gz
    warnings: list[str] = Field(default_factory=list)
    # `analyze`: the step anatomy, when a GPU timeline (a cuda_gpu_trace export, the
    # profiler's trace) came with the tables; `trace` already names the trace's file, so
    # the whole timeline's figures are `trace_summary`
    steps: list[GroupSteps] | None = None
    trace_summary: TraceSummary | None = None
    trace_notes: list[str] | None = None  # how the trace's kernels were given to steps, ...
    # nsys: what the tables were read from, "sqlite" (the report's SQLite export) or "stats"
    # (`nsys stats` CSV or console output); and how the kernel table groups kernels where
    # that is known: "demangled" (a row per demangled name, cuda_gpu_kern_sum's default)
    nsys_input: Literal["sqlite", "stats"] | None = None
    kernel_grouping: Literal["demangled", "base", "mangled"] | None = None
