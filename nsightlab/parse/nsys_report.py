"""What `nsys stats` reports hold, as typed rows: the report names (new and old), one row
model per report, and `NsysReport`, all the tables of one profile."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import ConfigDict, Field

from nsightlab.errors import ParseError
from nsightlab.models import Model

ReportId = Literal[
    "cuda_gpu_kern_sum",
    "nvtx_sum",
    "nvtx_kern_sum",
    "nvtx_gpu_proj_sum",
    "cuda_api_sum",
    "osrt_sum",
    "cuda_gpu_mem_time_sum",
    "cuda_gpu_mem_size_sum",
    "cuda_gpu_trace",
]


REPORT_IDS: tuple[ReportId, ...] = get_args(ReportId)


# Every name a report has had, newest first: the first one a given nsys lists is used.
REPORT_ALIASES: dict[ReportId, tuple[str, ...]] = {
    "cuda_gpu_kern_sum": ("cuda_gpu_kern_sum", "gpukernsum"),
    "nvtx_sum": ("nvtx_sum", "nvtxsum", "nvtx_pushpop_sum", "nvtxppsum"),
    "nvtx_kern_sum": ("nvtx_kern_sum", "nvtxkernsum"),
    "nvtx_gpu_proj_sum": ("nvtx_gpu_proj_sum",),
    "cuda_api_sum": ("cuda_api_sum", "cudaapisum"),
    "osrt_sum": ("osrt_sum", "osrtsum"),
    "cuda_gpu_mem_time_sum": ("cuda_gpu_mem_time_sum", "gpumemtimesum"),
    "cuda_gpu_mem_size_sum": ("cuda_gpu_mem_size_sum", "gpumemsizesum"),
    "cuda_gpu_trace": ("cuda_gpu_trace", "gputrace"),
}


ALIAS_TO_ID: dict[str, ReportId] = {alias: rid for rid, aliases in REPORT_ALIASES.items() for alias in aliases}


# Headings that name a report in column output before 2023 (2021.x `.qdrep` era).
OLD_HEADINGS: tuple[tuple[str, ReportId], ...] = (
    ("cuda api statistics", "cuda_api_sum"),
    ("cuda kernel statistics", "cuda_gpu_kern_sum"),
    ("cuda memory operation statistics (by time)", "cuda_gpu_mem_time_sum"),
    ("cuda memory operation statistics (by size", "cuda_gpu_mem_size_sum"),
    ("operating system runtime api statistics", "osrt_sum"),
    ("nvtx push-pop range statistics", "nvtx_sum"),
    ("nvtx range statistics", "nvtx_sum"),
)


ELLIPSIS = "…"


class Row(Model):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KernelSummaryRow(Row):
    """One kernel of cuda_gpu_kern_sum (old: gpukernsum). Times in ns."""

    name: str
    time_pct: float | None
    total_ns: float
    instances: int
    avg_ns: float | None
    med_ns: float | None
    min_ns: float | None
    max_ns: float | None
    stddev_ns: float | None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    truncated: bool = False


class NvtxRangeRow(Row):
    """One NVTX range of nvtx_sum (old: nvtxsum, nvtxppsum). `name` is the range name."""

    name: str
    style: str | None
    time_pct: float | None
    total_ns: float
    instances: int
    avg_ns: float | None
    med_ns: float | None
    min_ns: float | None
    max_ns: float | None
    stddev_ns: float | None
    truncated: bool = False


class NvtxKernelRow(Row):
    """One (NVTX range, kernel) pair of nvtx_kern_sum: kernel time inside that range."""

    range_name: str
    kernel_name: str
    style: str | None
    pid: int | None
    tid: int | None
    range_instances: int | None
    kernel_instances: int
    time_pct: float | None
    total_ns: float
    avg_ns: float | None
    med_ns: float | None
    min_ns: float | None
    max_ns: float | None
    stddev_ns: float | None
    truncated: bool = False


class NvtxGpuProjRow(Row):
    """One NVTX range of nvtx_gpu_proj_sum: the range projected onto the GPU timeline."""

    range_name: str
    style: str | None
    total_proj_ns: float
    total_range_ns: float | None
    range_instances: int
    proj_avg_ns: float | None
    proj_med_ns: float | None
    proj_min_ns: float | None
    proj_max_ns: float | None
    proj_stddev_ns: float | None
    total_gpu_ops: int | None
    avg_gpu_ops: float | None
    avg_range_level: float | None
    avg_num_child: float | None
    truncated: bool = False


class ApiCallRow(Row):
    """One function of cuda_api_sum or osrt_sum."""

    name: str
    time_pct: float | None
    total_ns: float
    num_calls: int
    avg_ns: float | None
    med_ns: float | None
    min_ns: float | None
    max_ns: float | None
    stddev_ns: float | None


MemOpKind = Literal["htod", "dtoh", "dtod", "htoh", "ptop", "memset", "other"]


class MemOpRow(Row):
    """One operation of cuda_gpu_mem_time_sum (times, ns) or cuda_gpu_mem_size_sum (MB).

    `operation` is normalised across nsys spellings (`[CUDA memcpy HtoD]` and
    `[CUDA memcpy Host-to-Device]` are both `htod`); `raw_operation` is as printed.
    MB are 10^6 bytes, as nsys prints them.
    """

    operation: MemOpKind
    raw_operation: str
    count: int
    time_pct: float | None = None
    total_ns: float | None = None
    avg_ns: float | None = None
    med_ns: float | None = None
    min_ns: float | None = None
    max_ns: float | None = None
    stddev_ns: float | None = None
    total_mb: float | None = None
    avg_mb: float | None = None
    med_mb: float | None = None
    min_mb: float | None = None
    max_mb: float | None = None
    stddev_mb: float | None = None


class GpuTraceRow(Row):
    """One GPU activity (kernel or memory operation) of cuda_gpu_trace, in order."""

    start_ns: float
    duration_ns: float
    name: str
    corr_id: int | None = None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers_per_thread: int | None = None
    static_smem_mb: float | None = None
    dynamic_smem_mb: float | None = None
    bytes_mb: float | None = None
    throughput_mb_s: float | None = None
    src_mem_kind: str | None = None
    dst_mem_kind: str | None = None
    device: str | None = None
    context: int | None = None
    green_context: int | None = None
    stream: int | None = None
    truncated: bool = False


class NsysReport(Model):
    """Every report found in one or more pieces of nsys output.

    A report that was not in the output (or was SKIPPED) is None; an empty list means
    the report was there with no rows. `sources` says where each report came from.
    """

    model_config = ConfigDict(extra="forbid")

    kernels: list[KernelSummaryRow] | None = None
    nvtx: list[NvtxRangeRow] | None = None
    nvtx_kernels: list[NvtxKernelRow] | None = None
    nvtx_gpu_proj: list[NvtxGpuProjRow] | None = None
    cuda_api: list[ApiCallRow] | None = None
    osrt: list[ApiCallRow] | None = None
    mem_time: list[MemOpRow] | None = None
    mem_size: list[MemOpRow] | None = None
    gpu_trace: list[GpuTraceRow] | None = None
    skipped: list[str] = Field(default_factory=list)
    ignored_reports: list[str] = Field(default_factory=list)
    nsys_version: str | None = None
    sources: dict[str, str] = Field(default_factory=dict)


FIELD_OF_REPORT: dict[ReportId, str] = {
    "cuda_gpu_kern_sum": "kernels",
    "nvtx_sum": "nvtx",
    "nvtx_kern_sum": "nvtx_kernels",
    "nvtx_gpu_proj_sum": "nvtx_gpu_proj",
    "cuda_api_sum": "cuda_api",
    "osrt_sum": "osrt",
    "cuda_gpu_mem_time_sum": "mem_time",
    "cuda_gpu_mem_size_sum": "mem_size",
    "cuda_gpu_trace": "gpu_trace",
}


class StaleExportError(ParseError):
    """`nsys stats` reused an out-of-date `.sqlite` export and printed no table."""


class ImporterMissingError(ParseError):
    """`nsys profile` wrote only a `.qdstrm`: the host importer is not installed."""


def canonical_report_name(name: str) -> ReportId | None:
    """The canonical id of a report name, old or new, or None when unknown.

    Accepts options and paths as nsys prints them: `gpukernsum:base`,
    `/opt/nvidia/.../reports/cuda_gpu_kern_sum.py`.
    """
    base = name.strip().rsplit("/", 1)[-1]
    base = base.split(":", 1)[0].split("[", 1)[0]
    base = base.removesuffix(".py").strip().lower()
    return ALIAS_TO_ID.get(base)
