"""How an `nsys stats` table is read into rows: each column matched by what its header
means (`Total Time (ns)`, `Avg (us)`, `Num Calls`...), never by position, so old
(2021-2022) and new (2023+) layouts and `--timeunit` all parse; then each row's cells
turned into the report's typed row."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from nsightlab.errors import ParseError
from nsightlab.parse.nsys_report import (
    ELLIPSIS,
    ApiCallRow,
    GpuTraceRow,
    KernelSummaryRow,
    MemOpKind,
    MemOpRow,
    NvtxGpuProjRow,
    NvtxKernelRow,
    NvtxRangeRow,
    ReportId,
    Row,
)


@dataclass(frozen=True)
class Column:
    key: str
    unit: str | None
    header: str


# A cell above 10^MAX_EXPONENT (in any unit) is no measurement: refused, with Infinity,
# NaN and 1e999, before it could become an infinity in a record.
MAX_EXPONENT = 30
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


def column(header: str) -> Column:
    text = header.strip()
    unit: str | None = None
    match = _HEADER_UNIT.match(text)
    if match:
        text, unit = match.group(1), match.group(2).strip()
    squashed = re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()
    return Column(key=_HEADER_KEYS.get(squashed, "?" + squashed), unit=unit, header=header.strip())


def identify(columns: list[Column], names: list[str] | None = None) -> ReportId | None:
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
        if count.header.lower().replace(" ", "").startswith("numcalls") or count.header.lower() == "calls":
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
            value = Decimal(cleaned)
        except InvalidOperation:
            raise self._fail(f"{self.headers.get(key, key)!r} is not a number: {raw!r}") from None
        if not value.is_finite() or value.adjusted() > MAX_EXPONENT:
            raise self._fail(f"{self.headers.get(key, key)!r} is not a finite number: {raw!r}")
        return value

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
    return any(n is not None and ELLIPSIS in n for n in names)


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


def _build_row(c: _Cells) -> Row:
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


@dataclass
class Table:
    report: ReportId
    columns: list[Column]
    rows: list[tuple[int, list[str]]]
    header_line: int
    default_size_unit: str = "MB"


# Reports whose headers cannot tell them apart (the same columns, or units absent).
_LOOKALIKES: tuple[frozenset[str], ...] = (
    frozenset({"cuda_api_sum", "osrt_sum"}),
    frozenset({"cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum"}),
)


def table_rows(table: Table, source: str | None) -> list[Row]:
    seen = identify(table.columns)
    if seen is not None and seen != table.report and not any({seen, table.report} <= pair for pair in _LOOKALIKES):
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
    out: list[Row] = []
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
