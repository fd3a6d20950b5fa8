"""Parsers for Nsight Systems text output: `nsys stats` (CSV and column format),
`nsys profile --stats=true` console logs, `nsys stats --help-reports`, `nsys --version`.

Everything here is a pure function over text; only `parse_file` reads a file. Columns
are matched by what their header means (`Total Time (ns)`, `Avg (us)`, `Num Calls`...),
never by position, so old (2021-2022) and new (2023+) layouts and `--timeunit` all parse.
Report names are canonicalised to the 2023.1+ names (`gpukernsum` -> `cuda_gpu_kern_sum`).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

from nsightlab.errors import ParseError

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
_ALIAS_TO_ID: dict[str, ReportId] = {
    alias: rid for rid, aliases in REPORT_ALIASES.items() for alias in aliases
}

# Headings that name a report in column output before 2023 (2021.x `.qdrep` era).
_OLD_HEADINGS: tuple[tuple[str, ReportId], ...] = (
    ("cuda api statistics", "cuda_api_sum"),
    ("cuda kernel statistics", "cuda_gpu_kern_sum"),
    ("cuda memory operation statistics (by time)", "cuda_gpu_mem_time_sum"),
    ("cuda memory operation statistics (by size", "cuda_gpu_mem_size_sum"),
    ("operating system runtime api statistics", "osrt_sum"),
    ("nvtx push-pop range statistics", "nvtx_sum"),
    ("nvtx range statistics", "nvtx_sum"),
)

_ELLIPSIS = "…"


# --------------------------------------------------------------------------- models


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KernelSummaryRow(_Row):
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


class NvtxRangeRow(_Row):
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


class NvtxKernelRow(_Row):
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


class NvtxGpuProjRow(_Row):
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


class ApiCallRow(_Row):
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


class MemOpRow(_Row):
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


class GpuTraceRow(_Row):
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


class NsysReport(BaseModel):
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
    skipped: list[str] = []
    ignored_reports: list[str] = []
    nsys_version: str | None = None
    sources: dict[str, str] = {}


_FIELD_OF_REPORT: dict[ReportId, str] = {
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


# ----------------------------------------------------------------- report names


def canonical_report_name(name: str) -> ReportId | None:
    """The canonical id of a report name, old or new, or None when unknown.

    Accepts options and paths as nsys prints them: `gpukernsum:base`,
    `/opt/nvidia/.../reports/cuda_gpu_kern_sum.py`.
    """
    base = name.strip().rsplit("/", 1)[-1]
    base = base.split(":", 1)[0].split("[", 1)[0]
    base = base.removesuffix(".py").strip().lower()
    return _ALIAS_TO_ID.get(base)


_HELP_ENTRY = re.compile(r"^\s*([a-z][a-z0-9_]*)(?=$|[\s\[:-])")


def available_reports(help_text: str, *, source: str | None = None) -> dict[ReportId, str]:
    """Which name this nsys uses for each report we know, from `nsys stats --help-reports`.

    Reads the report name at the start of each listed line (`  cuda_gpu_kern_sum[:base]
    -- CUDA GPU Kernel Summary`); where an nsys lists several names for one report the
    newest is chosen. Reports this nsys lacks are absent from the result. Raises
    ParseError when the text lists none of the reports we know.
    """
    listed: set[str] = set()
    for line in help_text.splitlines():
        match = _HELP_ENTRY.match(line)
        if match:
            listed.add(match.group(1))
    found: dict[ReportId, str] = {}
    for rid, aliases in REPORT_ALIASES.items():
        for alias in aliases:
            if alias in listed:
                found[rid] = alias
                break
    if not found:
        raise ParseError(
            "no known report names in `nsys stats --help-reports` output",
            source=source,
            hint="check that nsys runs (`nsys --version`)",
        )
    return found


_NSYS_VERSION = re.compile(r"Nsight Systems version\s+(\S+)", re.I)


def parse_nsys_version(text: str, *, source: str | None = None) -> str:
    """The version from `nsys --version` (`NVIDIA Nsight Systems version 2024.6.1.90-...`)."""
    match = _NSYS_VERSION.search(text)
    if not match:
        raise ParseError("no `Nsight Systems version` line in nsys --version output", source=source)
    return match.group(1)


def nsys_version_tuple(version: str) -> tuple[int, ...]:
    """Leading numeric parts of a version string: `2024.6.1.90-2461...` -> (2024, 6, 1, 90)."""
    parts: list[int] = []
    for piece in re.split(r"[.\-]", version):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


# ------------------------------------------------------------ chatter detection

_STALE = re.compile(r"Existing SQLite export found", re.I)


def check_stats_output(text: str, *, source: str | None = None) -> None:
    """Raise when nsys output means "there are no tables, and here is why".

    - StaleExportError on `WARNING: Existing SQLite export found ... older than input
      file`: nsys printed no table (re-run with `--force-export=true`). The NOTICE that
      a fresh export is reused is fine.
    - ImporterMissingError when nsys could not import its capture (`.qdstrm` only).
    """
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if _STALE.search(line):
            window = " ".join(lines[number - 1 : number + 4])
            if line.lstrip().upper().startswith("WARNING") or "older than" in window:
                raise StaleExportError(
                    "nsys stats found an older SQLite export and printed no table: " + line.strip(),
                    source=source,
                    line=number,
                    hint="re-run `nsys stats` with --force-export=true",
                )
    importer = detect_importer_error(text)
    if importer is not None:
        importer_line = lines.index(importer) + 1 if importer in lines else None
        raise ImporterMissingError(
            "nsys wrote only a .qdstrm capture, no .nsys-rep: " + importer.strip(),
            source=source,
            line=importer_line,
            hint="install the full Nsight Systems (host + target), not the target-only package",
        )


def detect_importer_error(text: str) -> str | None:
    """The verbatim importer-error line when nsys left only a `.qdstrm`, else None."""
    for line in text.splitlines():
        if "Importer error status" in line or "importer binary" in line.lower():
            return line
    return None


# ----------------------------------------------------------- header meaning


@dataclass(frozen=True)
class _Column:
    key: str
    unit: str | None
    header: str


_HEADER_UNIT = re.compile(r"^(.*?)\s*\(([^()]*)\)\s*$")

# Header text (lowercase, unit removed, punctuation squashed) -> meaning.
_HEADER_KEYS: dict[str, str] = {
    "time": "time_pct",
    "total time": "total",
    "total": "total",
    "instances": "count",
    "num calls": "count",
    "calls": "count",
    "count": "count",
    "operations": "count",
    "avg": "avg",
    "average": "avg",
    "med": "med",
    "median": "med",
    "min": "min",
    "minimum": "min",
    "max": "max",
    "maximum": "max",
    "stddev": "stddev",
    "std dev": "stddev",
    "name": "name",
    "operation": "operation",
    "range": "range",
    "nvtx range": "range",
    "style": "style",
    "gridxyz": "grid",
    "blockxyz": "block",
    "pid": "pid",
    "tid": "tid",
    "nvtx inst": "range_inst",
    "range inst": "range_inst",
    "range instances": "range_inst",
    "kern inst": "kern_inst",
    "kernel inst": "kern_inst",
    "kernel name": "kernel_name",
    "total proj time": "total_proj",
    "total range time": "total_range",
    "proj avg": "proj_avg",
    "proj med": "proj_med",
    "proj min": "proj_min",
    "proj max": "proj_max",
    "proj stddev": "proj_stddev",
    "proj std dev": "proj_stddev",
    "total gpu ops": "total_gpu_ops",
    "avg gpu ops": "avg_gpu_ops",
    "avg range lvl": "avg_range_lvl",
    "avg num child": "avg_num_child",
    "start": "start",
    "duration": "duration",
    "corrid": "corr_id",
    "grdx": "grdx",
    "grdy": "grdy",
    "grdz": "grdz",
    "blkx": "blkx",
    "blky": "blky",
    "blkz": "blkz",
    "reg trd": "regs",
    "stcsmem": "static_smem",
    "dymsmem": "dynamic_smem",
    "bytes": "bytes",
    "throughput": "throughput",
    "srcmemkd": "src_kind",
    "dstmemkd": "dst_kind",
    "device": "device",
    "ctx": "ctx",
    "greenctx": "green_ctx",
    "strm": "stream",
}


def _column(header: str) -> _Column:
    text = header.strip()
    unit: str | None = None
    match = _HEADER_UNIT.match(text)
    if match:
        text, unit = match.group(1), match.group(2).strip()
    squashed = re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()
    return _Column(key=_HEADER_KEYS.get(squashed, "?" + squashed), unit=unit, header=header.strip())


def _identify(columns: list[_Column], names: list[str] | None = None) -> ReportId | None:
    """Which report a table is, from the meaning of its header (and, for the API
    tables, which look alike, from the function names in it)."""
    keys = {c.key for c in columns}
    if "total_proj" in keys:
        return "nvtx_gpu_proj_sum"
    if "kernel_name" in keys and "range" in keys:
        return "nvtx_kern_sum"
    if {"start", "duration", "name"} <= keys:
        return "cuda_gpu_trace"
    if "operation" in keys and "total" in keys:
        total = next(c for c in columns if c.key == "total")
        if total.unit is not None and _size_factor(total.unit) is not None:
            return "cuda_gpu_mem_size_sum"
        return "cuda_gpu_mem_time_sum"
    if "range" in keys and "total" in keys:
        return "nvtx_sum"
    if {"name", "total", "count"} <= keys:
        count = next(c for c in columns if c.key == "count")
        if (
            count.header.lower().replace(" ", "").startswith("numcalls")
            or count.header.lower() == "calls"
        ):
            if names is None:
                return "cuda_api_sum"
            cuda = sum(1 for n in names if n.startswith("cu"))
            return "cuda_api_sum" if names and cuda * 2 >= len(names) else "osrt_sum"
        return "cuda_gpu_kern_sum"
    return None


_REQUIRED: dict[ReportId, tuple[str, ...]] = {
    "cuda_gpu_kern_sum": ("name", "total", "count"),
    "nvtx_sum": ("range", "total", "count"),
    "nvtx_kern_sum": ("range", "kernel_name", "total", "kern_inst"),
    "nvtx_gpu_proj_sum": ("range", "total_proj", "range_inst"),
    "cuda_api_sum": ("name", "total", "count"),
    "osrt_sum": ("name", "total", "count"),
    "cuda_gpu_mem_time_sum": ("operation", "total", "count"),
    "cuda_gpu_mem_size_sum": ("operation", "total", "count"),
    "cuda_gpu_trace": ("start", "duration", "name"),
}

# ----------------------------------------------------------------- value parsing

_TIME_FACTORS: dict[str, Decimal] = {
    "ns": Decimal(1),
    "nsec": Decimal(1),
    "us": Decimal(1000),
    "usec": Decimal(1000),
    "μs": Decimal(1000),
    "µs": Decimal(1000),
    "ms": Decimal(10**6),
    "msec": Decimal(10**6),
    "s": Decimal(10**9),
    "sec": Decimal(10**9),
}
_SIZE_FACTORS: dict[str, Decimal] = {  # to MB (10^6 bytes)
    "b": Decimal("0.000001"),
    "kb": Decimal("0.001"),
    "kib": Decimal(1024) / Decimal(10**6),
    "mb": Decimal(1),
    "mib": Decimal(1024**2) / Decimal(10**6),
    "gb": Decimal(1000),
    "gib": Decimal(1024**3) / Decimal(10**6),
}
_RATE_FACTORS: dict[str, Decimal] = {  # to MB/s
    "kb/s": Decimal("0.001"),
    "kbps": Decimal("0.001"),
    "mb/s": Decimal(1),
    "mbps": Decimal(1),
    "gb/s": Decimal(1000),
    "gbps": Decimal(1000),
}


def _size_factor(unit: str) -> Decimal | None:
    return _SIZE_FACTORS.get(unit.strip().lower())


@dataclass
class _Cells:
    """One data row: raw cells by meaning, with the units of their columns."""

    values: dict[str, str]
    units: dict[str, str | None]
    headers: dict[str, str]
    line: int
    source: str | None
    report: ReportId
    default_size_unit: str = "MB"

    def _fail(self, message: str) -> ParseError:
        return ParseError(f"{self.report}: {message}", source=self.source, line=self.line)

    def text(self, key: str) -> str | None:
        value = self.values.get(key)
        if value is None or value == "":
            return None
        return value

    def required_text(self, key: str) -> str:
        value = self.text(key)
        if value is None:
            raise self._fail(f"empty {self.headers.get(key, key)!r} cell")
        return value

    def _decimal(self, key: str) -> Decimal | None:
        raw = self.text(key)
        if raw is None:
            return None
        cleaned = raw.replace(",", "").strip()
        if cleaned in {"-", "n/a", "N/A"}:
            return None
        try:
            return Decimal(cleaned)
        except InvalidOperation:
            raise self._fail(f"{self.headers.get(key, key)!r} is not a number: {raw!r}") from None

    def number(self, key: str) -> float | None:
        value = self._decimal(key)
        return None if value is None else float(value)

    def integer(self, key: str) -> int | None:
        value = self._decimal(key)
        if value is None:
            return None
        if value != value.to_integral_value():
            raise self._fail(f"{self.headers.get(key, key)!r} is not a whole number: {value}")
        return int(value)

    def required_integer(self, key: str) -> int:
        value = self.integer(key)
        if value is None:
            raise self._fail(f"empty {self.headers.get(key, key)!r} cell")
        return value

    def _scaled(self, key: str, factors: dict[str, Decimal], default: str) -> float | None:
        value = self._decimal(key)
        if value is None:
            return None
        unit = (self.units.get(key) or default).strip()
        factor = factors.get(unit) if unit in factors else factors.get(unit.lower())
        if factor is None:
            raise self._fail(f"unknown unit {unit!r} in {self.headers.get(key, key)!r}")
        return float(value * factor)

    def ns(self, key: str) -> float | None:
        return self._scaled(key, _TIME_FACTORS, "ns")

    def required_ns(self, key: str) -> float:
        value = self.ns(key)
        if value is None:
            raise self._fail(f"empty {self.headers.get(key, key)!r} cell")
        return value

    def mb(self, key: str) -> float | None:
        return self._scaled(key, _SIZE_FACTORS, self.default_size_unit)

    def mb_per_s(self, key: str) -> float | None:
        return self._scaled(key, _RATE_FACTORS, "MB/s")

    def xyz(self, key: str) -> tuple[int, int, int] | None:
        raw = self.text(key)
        if raw is None:
            return None
        parts = raw.replace(",", " ").split()
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise self._fail(f"{self.headers.get(key, key)!r} is not 'X Y Z': {raw!r}")
        return (int(parts[0]), int(parts[1]), int(parts[2]))

    def xyz_columns(self, x: str, y: str, z: str) -> tuple[int, int, int] | None:
        values = [self.integer(k) for k in (x, y, z)]
        if all(v is None for v in values):
            return None
        if any(v is None for v in values):
            raise self._fail(f"incomplete {x}/{y}/{z} cells")
        return (values[0] or 0, values[1] or 0, values[2] or 0)


def _is_truncated(*names: str | None) -> bool:
    return any(n is not None and _ELLIPSIS in n for n in names)


def _mem_kind(operation: str) -> MemOpKind:
    text = operation.lower().replace("-", "").replace(" ", "")
    if "memset" in text:
        return "memset"
    spellings: tuple[tuple[str, MemOpKind], ...] = (
        ("htod", "htod"),
        ("hosttodevice", "htod"),
        ("dtoh", "dtoh"),
        ("devicetohost", "dtoh"),
        ("dtod", "dtod"),
        ("devicetodevice", "dtod"),
        ("htoh", "htoh"),
        ("hosttohost", "htoh"),
        ("ptop", "ptop"),
        ("peertopeer", "ptop"),
    )
    for spelled, kind in spellings:
        if spelled in text:
            return kind
    return "other"


def _time_stats(c: _Cells) -> dict[str, float | None]:
    """The avg/med/min/max/stddev columns every timed summary report has."""
    return {f"{k}_ns": c.ns(k) for k in ("avg", "med", "min", "max", "stddev")}


def _build_row(c: _Cells) -> _Row:
    rid = c.report
    if rid == "cuda_gpu_kern_sum":
        name = c.required_text("name")
        return KernelSummaryRow(
            name=name,
            time_pct=c.number("time_pct"),
            total_ns=c.required_ns("total"),
            instances=c.required_integer("count"),
            **_time_stats(c),
            grid=c.xyz("grid"),
            block=c.xyz("block"),
            truncated=_is_truncated(name),
        )
    if rid == "nvtx_sum":
        name = c.required_text("range")
        return NvtxRangeRow(
            name=name,
            style=c.text("style"),
            time_pct=c.number("time_pct"),
            total_ns=c.required_ns("total"),
            instances=c.required_integer("count"),
            **_time_stats(c),
            truncated=_is_truncated(name),
        )
    if rid == "nvtx_kern_sum":
        range_name = c.required_text("range")
        kernel_name = c.required_text("kernel_name")
        return NvtxKernelRow(
            range_name=range_name,
            kernel_name=kernel_name,
            style=c.text("style"),
            pid=c.integer("pid"),
            tid=c.integer("tid"),
            range_instances=c.integer("range_inst"),
            kernel_instances=c.required_integer("kern_inst"),
            time_pct=c.number("time_pct"),
            total_ns=c.required_ns("total"),
            **_time_stats(c),
            truncated=_is_truncated(range_name, kernel_name),
        )
    if rid == "nvtx_gpu_proj_sum":
        range_name = c.required_text("range")
        return NvtxGpuProjRow(
            range_name=range_name,
            style=c.text("style"),
            total_proj_ns=c.required_ns("total_proj"),
            total_range_ns=c.ns("total_range"),
            range_instances=c.required_integer("range_inst"),
            proj_avg_ns=c.ns("proj_avg"),
            proj_med_ns=c.ns("proj_med"),
            proj_min_ns=c.ns("proj_min"),
            proj_max_ns=c.ns("proj_max"),
            proj_stddev_ns=c.ns("proj_stddev"),
            total_gpu_ops=c.integer("total_gpu_ops"),
            avg_gpu_ops=c.number("avg_gpu_ops"),
            avg_range_level=c.number("avg_range_lvl"),
            avg_num_child=c.number("avg_num_child"),
            truncated=_is_truncated(range_name),
        )
    if rid in ("cuda_api_sum", "osrt_sum"):
        return ApiCallRow(
            name=c.required_text("name"),
            time_pct=c.number("time_pct"),
            total_ns=c.required_ns("total"),
            num_calls=c.required_integer("count"),
            **_time_stats(c),
        )
    if rid == "cuda_gpu_mem_time_sum":
        raw = c.required_text("operation")
        return MemOpRow(
            operation=_mem_kind(raw),
            raw_operation=raw,
            count=c.required_integer("count"),
            time_pct=c.number("time_pct"),
            total_ns=c.required_ns("total"),
            **_time_stats(c),
        )
    if rid == "cuda_gpu_mem_size_sum":
        raw = c.required_text("operation")
        return MemOpRow(
            operation=_mem_kind(raw),
            raw_operation=raw,
            count=c.required_integer("count"),
            total_mb=c.mb("total"),
            avg_mb=c.mb("avg"),
            med_mb=c.mb("med"),
            min_mb=c.mb("min"),
            max_mb=c.mb("max"),
            stddev_mb=c.mb("stddev"),
        )
    # cuda_gpu_trace
    name = c.required_text("name")
    return GpuTraceRow(
        start_ns=c.required_ns("start"),
        duration_ns=c.required_ns("duration"),
        name=name,
        corr_id=c.integer("corr_id"),
        grid=c.xyz_columns("grdx", "grdy", "grdz"),
        block=c.xyz_columns("blkx", "blky", "blkz"),
        registers_per_thread=c.integer("regs"),
        static_smem_mb=c.mb("static_smem"),
        dynamic_smem_mb=c.mb("dynamic_smem"),
        bytes_mb=c.mb("bytes"),
        throughput_mb_s=c.mb_per_s("throughput"),
        src_mem_kind=c.text("src_kind"),
        dst_mem_kind=c.text("dst_kind"),
        device=c.text("device"),
        context=c.integer("ctx"),
        green_context=c.integer("green_ctx"),
        stream=c.integer("stream"),
        truncated=_is_truncated(name),
    )


# ---------------------------------------------------------------- table assembly


@dataclass
class _Table:
    report: ReportId
    columns: list[_Column]
    rows: list[tuple[int, list[str]]]
    header_line: int
    default_size_unit: str = "MB"


# Reports whose headers cannot tell them apart (the same columns, or units absent).
_LOOKALIKES: tuple[frozenset[str], ...] = (
    frozenset({"cuda_api_sum", "osrt_sum"}),
    frozenset({"cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum"}),
)


def _table_rows(table: _Table, source: str | None) -> list[_Row]:
    seen = _identify(table.columns)
    if (
        seen is not None
        and seen != table.report
        and not any({seen, table.report} <= pair for pair in _LOOKALIKES)
    ):
        raise ParseError(
            f"expected a {table.report} table, but its header is that of {seen} "
            f"({', '.join(c.header for c in table.columns)})",
            source=source,
            line=table.header_line,
        )
    keys = [c.key for c in table.columns]
    missing = [k for k in _REQUIRED[table.report] if k not in keys]
    if missing:
        raise ParseError(
            f"{table.report} table lacks column(s) {', '.join(missing)} "
            f"(header: {', '.join(c.header for c in table.columns)})",
            source=source,
            line=table.header_line,
        )
    units = {c.key: c.unit for c in table.columns}
    headers = {c.key: c.header for c in table.columns}
    out: list[_Row] = []
    for line, cells in table.rows:
        values = {c.key: cell for c, cell in zip(table.columns, cells, strict=True)}
        out.append(
            _build_row(
                _Cells(
                    values=values,
                    units=units,
                    headers=headers,
                    line=line,
                    source=source,
                    report=table.report,
                    default_size_unit=table.default_size_unit,
                )
            )
        )
    return out


def _store(report: NsysReport, table: _Table, source: str | None) -> None:
    field = _FIELD_OF_REPORT[table.report]
    if getattr(report, field) is not None:
        raise ParseError(f"a second {table.report} table", source=source, line=table.header_line)
    setattr(report, field, _table_rows(table, source))
    report.sources[table.report] = source or "<text>"


def _split_csv_line(line: str, number: int, source: str | None) -> list[str]:
    try:
        return next(csv.reader([line], strict=True))
    except (csv.Error, StopIteration) as exc:
        raise ParseError(f"malformed CSV line: {exc}", source=source, line=number) from None


def _csv_row_count_error(
    cells: list[str], columns: list[_Column], number: int, source: str | None
) -> ParseError:
    return ParseError(
        f"row has {len(cells)} cells, the header has {len(columns)}",
        source=source,
        line=number,
    )


def _report_hint_from_source(source: str | None) -> ReportId | None:
    """`BASE_cuda_gpu_kern_sum.csv` -> cuda_gpu_kern_sum (longest known name wins)."""
    if not source:
        return None
    stem = Path(source).name.removesuffix(".csv")
    best: tuple[int, ReportId] | None = None
    for alias, rid in _ALIAS_TO_ID.items():
        if re.search(rf"(?:^|_){re.escape(alias)}(?:$|_)", stem) and (
            best is None or len(alias) > best[0]
        ):
            best = (len(alias), rid)
    return best[1] if best else None


def parse_stats_csv(
    text: str, *, source: str | None = None, report: str | None = None
) -> NsysReport:
    """Parse one `nsys stats --format csv` table (one report) into an NsysReport.

    The report is `report` when given (any old or new name), else the one named by a
    `BASE_<report>.csv` file name in `source`, else recognised from the header.
    Columns are matched by header meaning; other `--timeunit`s are converted to ns.
    Raises ParseError (file and line) on an unknown header, a row whose cell count
    differs from the header's, or a cell that is not a number where one is expected.
    """
    check_stats_output(text, source=source)
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        raise ParseError("empty CSV: no header line", source=source, line=1)
    header_number = start + 1
    columns = [_column(h) for h in _split_csv_line(lines[start], header_number, source)]
    rows: list[tuple[int, list[str]]] = []
    for index in range(start + 1, len(lines)):
        line = lines[index]
        if not line.strip():
            continue
        cells = _split_csv_line(line, index + 1, source)
        if len(cells) != len(columns):
            raise _csv_row_count_error(cells, columns, index + 1, source)
        rows.append((index + 1, cells))
    rid: ReportId | None = None
    if report is not None:
        rid = canonical_report_name(report)
        if rid is None:
            raise ParseError(f"unknown nsys report name {report!r}", source=source)
    rid = rid or _report_hint_from_source(source)
    if rid is None:
        names = [cells[i] for _, cells in rows for i, c in enumerate(columns) if c.key == "name"]
        rid = _identify(columns, names)
    if rid is None:
        raise ParseError(
            "unrecognised nsys CSV header: " + ", ".join(c.header for c in columns),
            source=source,
            line=header_number,
        )
    result = NsysReport()
    _store(result, _Table(rid, columns, rows, header_number), source)
    return result


# --------------------------------------------------------- console / column format

_BANNER = re.compile(r"^\s*\[\d+/\d+\]\s+Executing\s+'([^']+)'\s+stats report", re.I)
_STARS = re.compile(r"^\s*\*\*\s.*\((\w+)\):\s*$")
_PROCESSING = re.compile(r"^\s*Processing \[.*\] with \[(.*?)\]")
_DASHES = re.compile(r"^\s*-{2,}(?:\s+-{2,})+\s*$")


def _old_heading(line: str) -> ReportId | None:
    text = line.strip().lower()
    if not text.endswith(":"):
        return None
    for prefix, rid in _OLD_HEADINGS:
        if text.startswith(prefix):
            return rid
    return None


def _column_spans(dash_line: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", dash_line)]


def _slice_columns(
    line: str, spans: list[tuple[int, int]], number: int, source: str | None, what: str
) -> list[str]:
    """Cut a column-format line into cells along the dash runs of the underline."""
    cells: list[str] = []
    if what == "row" and len(line.rstrip()) <= spans[-1][0]:
        raise ParseError(
            f"row is cut short: it ends before the last of its {len(spans)} columns",
            source=source,
            line=number,
        )
    if line[: spans[0][0]].strip():
        raise ParseError(f"{what} starts left of the first column", source=source, line=number)
    for i, (start, end) in enumerate(spans):
        if i + 1 < len(spans):
            next_start = spans[i + 1][0]
            gap = line[end:next_start]
            if gap.strip():
                raise ParseError(
                    f"{what} does not fit the columns (text {gap.strip()!r} between "
                    f"columns {i + 1} and {i + 2}): wrong number of cells or a cut line",
                    source=source,
                    line=number,
                )
            cells.append(line[start:end].strip())
        else:
            cells.append(line[start:].strip())
    return cells


def _try_csv_header(line: str) -> list[_Column] | None:
    if "," not in line:
        return None
    try:
        cells = next(csv.reader([line], strict=True))
    except (csv.Error, StopIteration):
        return None
    if len(cells) < 3:
        return None
    columns = [_column(c) for c in cells]
    return columns if _identify(columns) is not None else None


def parse_stats_console(text: str, *, source: str | None = None) -> NsysReport:
    """Parse console output of `nsys stats` or `nsys profile --stats=true`.

    Splits the log into its reports using the banners (`[6/8] Executing
    'cuda_gpu_kern_sum' stats report`, ` ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):`,
    `Processing [...] with [.../cuda_gpu_kern_sum.py]`, old `CUDA Kernel Statistics:`)
    and ignores everything else (program output, progress bars, `Generated:` lists).
    Column tables are cut along the dash runs of their underline, so cells that contain
    spaces (old GridXYZ `32768    1    1`, kernel names) stay whole; CSV tables printed to
    stdout (`--format csv --output -`) are read too. `SKIPPED:` notices are collected.
    Raises StaleExportError/ImporterMissingError (see `check_stats_output`) and
    ParseError naming the line of a malformed table.
    """
    check_stats_output(text, source=source)
    result = NsysReport()
    version = _NSYS_VERSION.search(text)
    if version:
        result.nsys_version = version.group(1)
    lines = [line.rstrip("\r") for line in text.split("\n")]
    pending: ReportId | None = None
    pending_name: str | None = None
    size_unit = "MB"
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        banner = _BANNER.match(line) or _STARS.match(line) or _PROCESSING.match(line)
        if banner:
            name = banner.group(1)
            pending = canonical_report_name(name)
            pending_name = name.rsplit("/", 1)[-1].removesuffix(".py")
            size_unit = "MB"
            i += 1
            continue
        heading = _old_heading(line)
        if heading:
            pending, pending_name = heading, heading
            size_unit = "KiB" if "kib" in stripped.lower() else "MB"
            i += 1
            continue
        if stripped.startswith("SKIPPED:"):
            result.skipped.append(stripped)
            pending = pending_name = None
            i += 1
            continue
        csv_columns = _try_csv_header(line) if stripped else None
        if csv_columns is not None:
            rid_hint = pending if pending_name is not None else None
            i, stored = _read_csv_block(
                lines, i, csv_columns, rid_hint, pending_name is not None, source, result
            )
            if not stored and pending_name is not None:
                result.ignored_reports.append(pending_name)
            pending = pending_name = None
            continue
        if _DASHES.match(line) and i > 0:
            i = _read_column_table(lines, i, pending, pending_name, size_unit, source, result)
            pending = pending_name = None
            continue
        i += 1
    return result


def _read_column_table(
    lines: list[str],
    dash_index: int,
    pending: ReportId | None,
    pending_name: str | None,
    size_unit: str,
    source: str | None,
    result: NsysReport,
) -> int:
    """Read a column-format table whose dash underline is at `dash_index`.

    A table that no banner announced and whose header means nothing to us is the
    program's own output: skipped, however it is laid out. After a banner, the table
    must parse. Returns the index after the table.
    """
    header_index = dash_index - 1
    spans = _column_spans(lines[dash_index])
    end = dash_index + 1
    while end < len(lines) and lines[end].strip():
        end += 1
    announced = pending_name is not None
    if announced and pending is None:
        # A report we do not model (cuda_gpu_kern_gb_sum looks like kern_sum: not ours).
        result.ignored_reports.append(pending_name or "")
        return end
    try:
        header_cells = _slice_columns(
            lines[header_index], spans, header_index + 1, source, "table header"
        )
    except ParseError:
        if announced:
            raise
        return end
    columns = [_column(h) for h in header_cells]
    rid = pending if announced else _identify(columns)
    if rid is None:
        return end
    if any(not h for h in header_cells):
        raise ParseError(
            "table header has an empty column title", source=source, line=header_index + 1
        )
    rows = [
        (j + 1, _slice_columns(lines[j], spans, j + 1, source, "row"))
        for j in range(dash_index + 1, end)
    ]
    if not announced and rid == "cuda_api_sum":
        names = [cells[k] for _, cells in rows for k, c in enumerate(columns) if c.key == "name"]
        rid = _identify(columns, names) or rid
    _store(result, _Table(rid, columns, rows, header_index + 1, size_unit), source)
    return end


def _read_csv_block(
    lines: list[str],
    start: int,
    columns: list[_Column],
    pending: ReportId | None,
    announced: bool,
    source: str | None,
    result: NsysReport,
) -> tuple[int, bool]:
    """Read CSV rows after a header at `start` until a blank line.

    Returns the index after the block and whether the table was stored.
    """
    rows: list[tuple[int, list[str]]] = []
    j = start + 1
    while j < len(lines) and lines[j].strip():
        cells = _split_csv_line(lines[j], j + 1, source)
        if len(cells) != len(columns):
            raise _csv_row_count_error(cells, columns, j + 1, source)
        rows.append((j + 1, cells))
        j += 1
    names = [cells[k] for _, cells in rows for k, c in enumerate(columns) if c.key == "name"]
    rid = pending if announced else _identify(columns, names)
    if rid is None:
        return j, False
    _store(result, _Table(rid, columns, rows, start + 1), source)
    return j, True


# ---------------------------------------------------------------------- helpers


def merge_reports(reports: Iterable[NsysReport]) -> NsysReport:
    """Combine reports parsed from separate files (`BASE_<report>.csv`) into one.

    Raises ValueError when two of them carry the same report.
    """
    merged = NsysReport()
    for part in reports:
        for rid, field in _FIELD_OF_REPORT.items():
            rows = getattr(part, field)
            if rows is None:
                continue
            if getattr(merged, field) is not None:
                raise ValueError(
                    f"{rid} appears twice ({merged.sources.get(rid)}, {part.sources.get(rid)})"
                )
            setattr(merged, field, rows)
            if rid in part.sources:
                merged.sources[rid] = part.sources[rid]
        merged.skipped.extend(part.skipped)
        merged.ignored_reports.extend(part.ignored_reports)
        merged.nsys_version = merged.nsys_version or part.nsys_version
    return merged


def parse_file(path: str | Path, *, report: str | None = None) -> NsysReport:
    """Read a file and parse it: `*.csv` as one stats CSV, anything else as console output."""
    p = Path(path)
    text = p.read_text(encoding="utf-8", errors="replace")
    if p.suffix.lower() == ".csv":
        return parse_stats_csv(text, source=str(p), report=report)
    return parse_stats_console(text, source=str(p))
