"""One nsys capture's GPU timeline, whichever export it comes from: the records the step
anatomy reads (`nsightlab.analysis.steps.analyze_nsys_trace`).

`NsysTrace` is what a source gives: the GPU operations in the compact columns form
(`gputrace.GpuTraceColumns`), the NVTX push/pop ranges (`NvtxRange`), their GPU
projections (`NvtxProjection`) and the CUDA API calls (`ApiCall`, with correlation ids:
launches, `cudaGraphLaunch`, synchronisations, every call), each a stream of the same
records whatever the export. Two sources:

- `CsvTrace`: `nsys stats --format csv` trace exports, one file per report
  (`nsightlab.parse.gputrace`);
- `nsightlab.parse.nsys_sqlite_trace.SqliteTrace`: the report's SQLite export, where each
  operation comes joined to the call that launched it (`GpuTraceColumns.launch`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Protocol

from nsightlab.parse import gputrace
from nsightlab.parse.gputrace import ApiCall, GpuTraceColumns, NvtxProjection, NvtxRange, TraceReport


class NsysTrace(Protocol):
    """A capture's timeline records. `label` names it in notes and errors (the path of
    the file that holds the GPU operations); `has(report)` says whether the source has that trace
    report's records at all (an empty report is still had)."""

    label: str

    def has(self, report: TraceReport) -> bool: ...

    def gpu_columns(self) -> GpuTraceColumns: ...

    def pushpop(self) -> Iterator[NvtxRange]: ...

    def projections(self) -> Iterator[NvtxProjection]: ...

    def api_calls(self) -> Iterator[ApiCall]: ...


class CsvTrace:
    """The trace reports of one capture's `nsys stats --format csv` exports."""

    def __init__(self, files: Mapping[str, Path]) -> None:
        self.files = dict(files)
        self.label = str(self.files.get("cuda_gpu_trace", "the trace"))

    def has(self, report: TraceReport) -> bool:
        return report in self.files

    def gpu_columns(self) -> GpuTraceColumns:
        return gputrace.read_gpu_trace_columns(self.files["cuda_gpu_trace"])

    def pushpop(self) -> Iterator[NvtxRange]:
        return gputrace.read_nvtx_pushpop(self.files["nvtx_pushpop_trace"])

    def projections(self) -> Iterator[NvtxProjection]:
        return gputrace.read_nvtx_gpu_proj(self.files["nvtx_gpu_proj_trace"])

    def api_calls(self) -> Iterator[ApiCall]:
        return gputrace.read_cuda_api(self.files["cuda_api_trace"])
