"""Streaming readers of Nsight Systems trace exports (`nsys stats --format csv`).

Four reports, each a `BASE_<report>.csv` file:

- `cuda_gpu_trace` (old name `gputrace`): one row per kernel, memcpy or memset, in start
  order. Header (2024+): `Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,
  Reg/Trd,StcSMem (MB),DymSMem (MB),Bytes (MB),Throughput (MB/s),SrcMemKd,DstMemKd,Device,
  Ctx,GreenCtx,Strm,Name`; older exports lack `GreenCtx` and spell `Throughput (MBps)`.
  Memory operations have empty grid cells, a `Bytes` value and a name such as
  `[CUDA memcpy Host-to-Device]` (old: `[CUDA memcpy HtoD]`) or `[CUDA memset]`.
- `nvtx_pushpop_trace`: one row per push/pop range on a CPU thread: `Start (ns),End (ns),
  Duration (ns),DurChild (ns),DurNonChild (ns),Name,PID,TID,Lvl,NumChild,RangeId,ParentId,
  RangeStack,NameTree`. `Name` is `DOMAIN:TEXT`; the default domain is empty, so a range
  pushed as `decode_step` reads `:decode_step`.
- `nvtx_gpu_proj_trace`: one row per range that launched GPU work, projected onto the GPU:
  `Name,Projected Start (ns),Projected Duration (ns),Orig Start (ns),Orig Duration (ns),
  Style,PID,TID,NumGPUOps,Lvl,NumChild,RangeId,ParentId,RangeStack`. nsys counts an
  operation in a range when the CUDA call that launched it lies inside the range on the
  same thread; the projection spans the first to the last of those operations.
- `cuda_api_trace`: one row per CUDA runtime call: `Start (ns),Duration (ns),Name,Result,
  CorrID,Pid,Tid,T-Pri,Thread Name`. `CorrID` joins a launch to the GPU rows' `CorrId`.

Columns are matched by what their header means, never by position; `--timeunit` suffixes
(`(us)`, `(ms)`, `(s)`) and the raw `Start:ts_ns` spelling are understood. Times become
integer nanoseconds: whole-nanosecond cells exactly, decimal cells (`--timeunit usec`)
rounded half-to-even to the nanosecond. CSV is read with the stdlib `csv` module, so
quoted kernel names with commas stay whole. Lines of nsys chatter before the header
(`Processing [...] with [...]...`) are skipped.

Every reader is a generator: rows are yielded one at a time, in file order, and nothing
else of the file is kept. Any malformed input raises `ParseError` naming the file and the
line. `GpuTraceReader.in_start_order` tells, after iteration, whether the rows came sorted
by start as nsys writes them (the analysis sorts a file that is not; see
`nsightlab.analysis.steps`).
"""

from __future__ import annotations

import csv
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal

from nsightlab.errors import ParseError

TraceReport = Literal["cuda_gpu_trace", "nvtx_pushpop_trace", "nvtx_gpu_proj_trace", "cuda_api_trace"]
OpKind = Literal["kernel", "memcpy", "memset"]

# How many rows of chatter may come before the header.
_MAX_PREAMBLE_ROWS = 64
# The widest time a trace holds: int64 nanoseconds (the columns are int64 arrays).
NS_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class GpuOp:
    """One GPU operation of cuda_gpu_trace. Times in ns; `end_ns = start_ns + duration`."""

    start_ns: int
    end_ns: int
    name: str
    kind: OpKind
    corr_id: int | None
    device: str | None
    stream: int | None
    bytes: int | None
    line: int


@dataclass(frozen=True, slots=True)
class NvtxRange:
    """One push/pop range of nvtx_pushpop_trace (a CPU time range).

    `name` is the range's text without an empty domain (`:decode_step` -> `decode_step`);
    `raw_name` is the cell as written.
    """

    start_ns: int
    end_ns: int
    name: str
    raw_name: str
    pid: int | None
    tid: int | None
    level: int | None
    range_id: int | None
    parent_id: int | None
    line: int


@dataclass(frozen=True, slots=True)
class NvtxProjection:
    """One range of nvtx_gpu_proj_trace: its CPU range (`orig_*`) and its GPU projection."""

    proj_start_ns: int
    proj_end_ns: int
    orig_start_ns: int | None
    orig_end_ns: int | None
    name: str
    raw_name: str
    style: str | None
    pid: int | None
    tid: int | None
    gpu_ops: int | None
    level: int | None
    range_id: int | None
    parent_id: int | None
    line: int


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One CUDA API call of cuda_api_trace."""

    start_ns: int
    end_ns: int
    name: str
    corr_id: int | None
    pid: int | None
    tid: int | None
    line: int


def range_text(raw: str) -> str:
    """A range name without its empty NVTX domain: `:decode_step` -> `decode_step`.

    nsys writes `DOMAIN:TEXT`; a named domain is kept (`mylib:step` stays), since a range
    text may itself hold colons (`mode:eager`).
    """
    return raw[1:] if raw.startswith(":") else raw


# ------------------------------------------------------------------ header meaning

_HEADER_KEYS: dict[str, str] = {
    "start": "start",
    "end": "end",
    "duration": "duration",
    "corrid": "corr_id",
    "corr id": "corr_id",
    "correlation id": "corr_id",
    "correlationid": "corr_id",
    "grdx": "grid_x",
    "gridx": "grid_x",
    "bytes": "bytes",
    "device": "device",
    "strm": "stream",
    "stream": "stream",
    "name": "name",
    "pid": "pid",
    "tid": "tid",
    "lvl": "level",
    "level": "level",
    "rangeid": "range_id",
    "parentid": "parent_id",
    "projected start": "proj_start",
    "projected duration": "proj_duration",
    "orig start": "orig_start",
    "orig duration": "orig_duration",
    "style": "style",
    "numgpuops": "gpu_ops",
    "durchild": "dur_child",
    "result": "result",
    "thread name": "thread_name",
}
_UNIT_SUFFIX = re.compile(r"^(.*?)\s*\(([^()]*)\)\s*$")

_TIME_FACTORS: dict[str, int] = {
    "ns": 1,
    "nsec": 1,
    "us": 1_000,
    "usec": 1_000,
    "μs": 1_000,
    "µs": 1_000,
    "ms": 1_000_000,
    "msec": 1_000_000,
    "s": 1_000_000_000,
    "sec": 1_000_000_000,
}
_SIZE_FACTORS: dict[str, int] = {  # to bytes
    "b": 1,
    "kb": 1_000,
    "kib": 1_024,
    "mb": 1_000_000,
    "mib": 1_048_576,
    "gb": 1_000_000_000,
    "gib": 1_073_741_824,
}


@dataclass(frozen=True)
class _Column:
    key: str
    unit: str | None
    header: str


def _column(header: str) -> _Column:
    text = header.strip().lstrip("\ufeff")
    unit: str | None = None
    match = _UNIT_SUFFIX.match(text)
    if match:
        text, unit = match.group(1), match.group(2).strip()
    elif ":" in text:
        # The raw SQL alias spelling: `Start:ts_ns`, `Bytes:mem_B`.
        text, _, fmt = text.partition(":")
        unit = fmt.rsplit("_", 1)[-1] if "_" in fmt else None
    squashed = re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()
    return _Column(_HEADER_KEYS.get(squashed, "?" + squashed), unit, header.strip())


_REQUIRED: dict[TraceReport, tuple[str, ...]] = {
    "cuda_gpu_trace": ("start", "duration", "name"),
    "nvtx_pushpop_trace": ("start", "end", "name"),
    "nvtx_gpu_proj_trace": ("name", "proj_start", "proj_duration"),
    "cuda_api_trace": ("start", "duration", "name", "corr_id"),
}


def _identify(keys: set[str]) -> TraceReport | None:
    if "proj_start" in keys:
        return "nvtx_gpu_proj_trace"
    if {"start", "end", "name"} <= keys and ("dur_child" in keys or "level" in keys):
        return "nvtx_pushpop_trace"
    if {"start", "duration", "name"} <= keys and ("grid_x" in keys or "stream" in keys):
        return "cuda_gpu_trace"
    if {"start", "duration", "name", "corr_id"} <= keys:
        return "cuda_api_trace"
    return None


def report_of_file(path: str | Path) -> TraceReport | None:
    """The report a `BASE_<report>.csv` file name names (`gputrace` -> cuda_gpu_trace)."""
    stem = Path(path).name.lower().removesuffix(".csv")
    for suffix, report in (
        ("nvtx_gpu_proj_trace", "nvtx_gpu_proj_trace"),
        ("nvtx_pushpop_trace", "nvtx_pushpop_trace"),
        ("cuda_gpu_trace", "cuda_gpu_trace"),
        ("gputrace", "cuda_gpu_trace"),
        ("cuda_api_trace", "cuda_api_trace"),
    ):
        if stem == suffix or stem.endswith("_" + suffix):
            return report  # type: ignore[return-value]
    return None


# -------------------------------------------------------------------- cell values


class _Cells:
    """Converts the cells of one file's rows; knows the file for error messages."""

    def __init__(self, source: str, columns: list[_Column]) -> None:
        self.source = source
        self.index = {c.key: i for i, c in reversed(list(enumerate(columns)))}
        self.units = {c.key: c.unit for c in columns}
        self.headers = {c.key: c.header for c in columns}
        self.width = len(columns)

    def fail(self, line: int, message: str) -> ParseError:
        return ParseError(message, source=self.source, line=line)

    def time_factor(self, key: str, line: int) -> int:
        unit = (self.units.get(key) or "ns").strip()
        factor = _TIME_FACTORS.get(unit, _TIME_FACTORS.get(unit.lower()))
        if factor is None:
            raise self.fail(line, f"unknown time unit {unit!r} in column {self.headers[key]!r}")
        return factor

    def size_factor(self, key: str, line: int) -> int:
        unit = (self.units.get(key) or "MB").strip().lower()
        factor = _SIZE_FACTORS.get(unit)
        if factor is None:
            raise self.fail(line, f"unknown size unit {unit!r} in column {self.headers[key]!r}")
        return factor

    def scaled(self, raw: str, factor: int, key: str, line: int) -> int:
        """A number cell times `factor`, as an integer (half-to-even to the unit)."""
        try:
            value = int(raw) * factor
        except ValueError:
            try:
                scaled = Decimal(raw.replace(",", "").strip()) * factor
                value = int(scaled.to_integral_value(rounding=ROUND_HALF_EVEN))
            except (InvalidOperation, ValueError, OverflowError):
                raise self.fail(line, f"{self.headers[key]!r} is not a number: {raw!r}") from None
        if not -NS_MAX <= value <= NS_MAX:
            raise self.fail(line, f"{self.headers[key]!r} is out of range: {raw[:40]!r}")
        return value

    def integer(self, row: list[str], key: str, line: int) -> int | None:
        i = self.index.get(key)
        if i is None:
            return None
        raw = row[i]
        if raw == "":
            return None
        try:
            return int(raw)
        except ValueError:
            raise self.fail(line, f"{self.headers[key]!r} is not a whole number: {raw!r}") from None

    def text(self, row: list[str], key: str) -> str | None:
        i = self.index.get(key)
        if i is None:
            return None
        return row[i] or None


class _CsvFile:
    """A CSV file read row by row, with the header found past any chatter."""

    def __init__(self, path: str | Path, report: TraceReport | None) -> None:
        self.path = Path(path)
        self.source = str(path)
        self.expected = report

    def rows(self, *, header_only: bool = False) -> Iterator[tuple[int, TraceReport, _Cells, list[str]]]:
        """Yield (line, report, cells, row) for every data row after the header; with
        `header_only`, one item (the header row itself) once the header is found."""
        try:
            handle = open(self.path, newline="", encoding="utf-8", errors="strict")  # noqa: SIM115
        except OSError as exc:
            raise ParseError(f"cannot read the file: {exc.strerror or exc}", source=self.source) from None
        with handle:
            reader = csv.reader(handle, strict=True)
            cells: _Cells | None = None
            report: TraceReport | None = None
            preamble = 0
            try:
                for row in reader:
                    if cells is None:
                        report, cells = self._header(row, reader.line_num)
                        if cells is None:
                            preamble += 1
                            if preamble > _MAX_PREAMBLE_ROWS:
                                break
                        elif header_only:
                            assert report is not None
                            yield reader.line_num, report, cells, row
                            return
                        continue
                    if not row or (len(row) == 1 and not row[0].strip()):
                        continue
                    if len(row) != cells.width:
                        raise cells.fail(
                            reader.line_num,
                            f"row has {len(row)} cells, the header has {cells.width}",
                        )
                    assert report is not None
                    yield reader.line_num, report, cells, row
            except csv.Error as exc:
                raise ParseError(f"malformed CSV: {exc}", source=self.source, line=reader.line_num + 1) from None
            except UnicodeDecodeError as exc:
                raise ParseError(
                    f"not UTF-8 text ({exc.reason})", source=self.source, line=reader.line_num + 1
                ) from None
            if cells is None:
                what = self.expected or "nsys trace report"
                raise ParseError(
                    f"no {what} CSV header found",
                    source=self.source,
                    line=reader.line_num or 1,
                    hint="export it with `nsys stats --format csv --report "
                    f"{self.expected or 'cuda_gpu_trace'} --output BASE REPORT.nsys-rep`",
                )

    def _header(self, row: list[str], line: int) -> tuple[TraceReport | None, _Cells | None]:
        joined = ",".join(row)
        if "Existing SQLite export found" in joined or "older than input file" in joined:
            raise ParseError(
                "nsys reused an out-of-date SQLite export and wrote no table",
                source=self.source,
                line=line,
                hint="re-run `nsys stats` with --force-export=true",
            )
        if joined.lstrip().startswith("SKIPPED:") or "does not contain" in joined:
            raise ParseError(f"nsys wrote no table: {joined.strip()}", source=self.source, line=line)
        if len(row) < 3:
            return None, None
        columns = [_column(h) for h in row]
        keys = {c.key for c in columns}
        report = self.expected or _identify(keys)
        if report is None or not set(_REQUIRED[report]) <= keys:
            if report is not None and self.expected is not None and _identify(keys) is not None:
                raise ParseError(
                    f"expected a {report} table, but its header is that of {_identify(keys)}",
                    source=self.source,
                    line=line,
                )
            return None, None
        return report, _Cells(self.source, columns)


# ------------------------------------------------------------------------ readers


class GpuTraceReader:
    """Iterate the GPU operations of a cuda_gpu_trace CSV, one `GpuOp` at a time.

    `in_start_order` is False after iteration when some row started before the row above
    it (nsys writes the report sorted by start; a hand-merged file may not be).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.in_start_order = True
        self.rows = 0

    def __iter__(self) -> Iterator[GpuOp]:
        file = _CsvFile(self.path, "cuda_gpu_trace")
        previous = None
        setup: tuple[int, int, int, int, int, int, int, int, int | None] | None = None
        for line, _report, cells, row in file.rows():
            if setup is None:
                idx = cells.index
                setup = (
                    idx["start"],
                    idx["duration"],
                    idx["name"],
                    cells.time_factor("start", line),
                    cells.time_factor("duration", line),
                    idx.get("corr_id", -1),
                    idx.get("stream", -1),
                    idx.get("device", -1),
                    idx.get("bytes"),
                )
                size_factor = cells.size_factor("bytes", line) if "bytes" in idx else 1
                grid = idx.get("grid_x", -1)
            i_start, i_dur, i_name, f_start, f_dur, i_corr, i_strm, i_dev, i_bytes = setup
            raw = row[i_start]
            start = cells.scaled(raw, f_start, "start", line) if raw else None
            raw = row[i_dur]
            dur = cells.scaled(raw, f_dur, "duration", line) if raw else None
            if start is None or dur is None:
                raise cells.fail(line, "empty Start or Duration cell")
            name = row[i_name]
            if not name:
                raise cells.fail(line, "empty Name cell")
            kind: OpKind
            if name.startswith("[CUDA memcpy") or name.startswith("[CUDA memset"):
                kind = "memset" if "memset" in name else "memcpy"
            elif grid >= 0 and row[grid] == "" and i_bytes is not None and row[i_bytes] != "":
                kind = "memset" if "memset" in name.lower() else "memcpy"
            else:
                kind = "kernel"
            nbytes = None
            if i_bytes is not None and row[i_bytes] != "" and kind != "kernel":
                nbytes = cells.scaled(row[i_bytes], size_factor, "bytes", line)
            if previous is not None and start < previous:
                self.in_start_order = False
            previous = start
            self.rows += 1
            yield GpuOp(
                start,
                start + max(dur, 0),
                name,
                kind,
                _opt_int(cells, row, i_corr, "corr_id", line),
                (row[i_dev] or None) if i_dev >= 0 else None,
                _opt_int(cells, row, i_strm, "stream", line),
                nbytes,
                line,
            )


def _opt_int(cells: _Cells, row: list[str], i: int, key: str, line: int) -> int | None:
    if i < 0:
        return None
    raw = row[i]
    if raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise cells.fail(line, f"{cells.headers[key]!r} is not a whole number: {raw!r}") from None


def read_gpu_trace(path: str | Path) -> Iterator[GpuOp]:
    """The GPU operations of a cuda_gpu_trace CSV, in file order (see `GpuTraceReader`)."""
    return iter(GpuTraceReader(path))


def _time(cells: _Cells, row: list[str], key: str, line: int, *, required: bool) -> int | None:
    i = cells.index.get(key)
    raw = row[i] if i is not None else ""
    if raw == "":
        if required:
            raise cells.fail(line, f"empty {cells.headers.get(key, key)!r} cell")
        return None
    return cells.scaled(raw, cells.time_factor(key, line), key, line)


def read_nvtx_pushpop(path: str | Path) -> Iterator[NvtxRange]:
    """The push/pop ranges of an nvtx_pushpop_trace CSV, in file order (start order)."""
    for line, _report, cells, row in _CsvFile(path, "nvtx_pushpop_trace").rows():
        start = _time(cells, row, "start", line, required=True)
        end = _time(cells, row, "end", line, required=False)
        if end is None:
            duration = _time(cells, row, "duration", line, required=True)
            assert start is not None and duration is not None
            end = start + duration
        raw = cells.text(row, "name") or ""
        assert start is not None
        yield NvtxRange(
            start,
            max(end, start),
            range_text(raw),
            raw,
            cells.integer(row, "pid", line),
            cells.integer(row, "tid", line),
            cells.integer(row, "level", line),
            cells.integer(row, "range_id", line),
            cells.integer(row, "parent_id", line),
            line,
        )


def read_nvtx_gpu_proj(path: str | Path) -> Iterator[NvtxProjection]:
    """The projected ranges of an nvtx_gpu_proj_trace CSV, in file order."""
    for line, _report, cells, row in _CsvFile(path, "nvtx_gpu_proj_trace").rows():
        start = _time(cells, row, "proj_start", line, required=True)
        duration = _time(cells, row, "proj_duration", line, required=True)
        orig_start = _time(cells, row, "orig_start", line, required=False)
        orig_duration = _time(cells, row, "orig_duration", line, required=False)
        assert start is not None and duration is not None
        raw = cells.text(row, "name") or ""
        yield NvtxProjection(
            start,
            start + max(duration, 0),
            orig_start,
            None if orig_start is None or orig_duration is None else orig_start + orig_duration,
            range_text(raw),
            raw,
            cells.text(row, "style"),
            cells.integer(row, "pid", line),
            cells.integer(row, "tid", line),
            cells.integer(row, "gpu_ops", line),
            cells.integer(row, "level", line),
            cells.integer(row, "range_id", line),
            cells.integer(row, "parent_id", line),
            line,
        )


def read_cuda_api(path: str | Path) -> Iterator[ApiCall]:
    """The CUDA API calls of a cuda_api_trace CSV, in file order."""
    for line, _report, cells, row in _CsvFile(path, "cuda_api_trace").rows():
        start = _time(cells, row, "start", line, required=True)
        duration = _time(cells, row, "duration", line, required=True)
        assert start is not None and duration is not None
        yield ApiCall(
            start,
            start + max(duration, 0),
            cells.text(row, "name") or "",
            cells.integer(row, "corr_id", line),
            cells.integer(row, "pid", line),
            cells.integer(row, "tid", line),
            line,
        )


def identify_file(path: str | Path) -> TraceReport:
    """Which trace report a CSV file holds: from its `BASE_<report>.csv` name, else from
    its header. Raises ParseError when neither tells."""
    named = report_of_file(path)
    if named is not None:
        return named
    for _line, report, _cells, _row in _CsvFile(path, None).rows(header_only=True):
        return report
    raise ParseError("no nsys trace report header found", source=str(path))  # pragma: no cover


# ------------------------------------------------------------- columnar reading

KIND_CODES: dict[OpKind, int] = {"kernel": 0, "memcpy": 1, "memset": 2}


@dataclass
class GpuTraceColumns:
    """A whole cuda_gpu_trace in compact parallel arrays (about 40 bytes an operation).

    Row i: `start[i]`, `end[i]` (ns), `names[name[i]]`, kind `kind[i]` (KIND_CODES),
    `streams[stream[i]]` = (device, stream), `corr[i]` (-1 when empty). In file order;
    `in_start_order` as for `GpuTraceReader`. `launch[i]`, where the source knows it (an
    nsys SQLite export joins each operation to its CUDA call), is the start of the call
    that launched operation i (-1: none); None for a CSV export.
    """

    start: array[int]
    end: array[int]
    name: array[int]
    kind: array[int]
    stream: array[int]
    corr: array[int]
    names: list[str]
    streams: list[tuple[str | None, int | None]]
    kernels: int
    in_start_order: bool
    launch: array[int] | None = None


def read_gpu_trace_columns(path: str | Path) -> GpuTraceColumns:
    """Read a cuda_gpu_trace CSV straight into `GpuTraceColumns`.

    The same rows, values and errors as `GpuTraceReader`, without a record object per
    row: one loop over the `csv.reader` rows converts and appends each (about twice as
    fast on a million rows; see bench/RESULTS.md). Kinds are decided once per name.
    """
    file = _CsvFile(path, "cuda_gpu_trace")
    source = file.source
    try:
        handle = open(file.path, newline="", encoding="utf-8", errors="strict")  # noqa: SIM115
    except OSError as exc:
        raise ParseError(f"cannot read the file: {exc.strerror or exc}", source=source) from None
    cols = GpuTraceColumns(array("q"), array("q"), array("l"), array("b"), array("l"), array("q"), [], [], 0, True)
    with handle:
        reader = csv.reader(handle, strict=True)
        try:
            cells: _Cells | None = None
            for preamble, row in enumerate(reader):
                _report, cells = file._header(row, reader.line_num)
                if cells is not None or preamble >= _MAX_PREAMBLE_ROWS:
                    break
            if cells is None:
                raise ParseError(
                    "no cuda_gpu_trace CSV header found",
                    source=source,
                    line=reader.line_num or 1,
                    hint="export it with `nsys stats --format csv --report cuda_gpu_trace "
                    "--output BASE REPORT.nsys-rep`",
                )
            _fill_columns(cols, reader, cells)
        except csv.Error as exc:
            raise ParseError(f"malformed CSV: {exc}", source=source, line=reader.line_num + 1) from None
        except UnicodeDecodeError as exc:
            raise ParseError(f"not UTF-8 text ({exc.reason})", source=source, line=reader.line_num + 1) from None
    return cols


def _fill_columns(cols: GpuTraceColumns, reader: Any, cells: _Cells) -> None:
    idx = cells.index
    width = cells.width
    i_start, i_dur, i_name = idx["start"], idx["duration"], idx["name"]
    i_corr, i_strm, i_dev = idx.get("corr_id", -1), idx.get("stream", -1), idx.get("device", -1)
    i_grid, i_bytes = idx.get("grid_x", -1), idx.get("bytes", -1)
    line = reader.line_num
    f_start, f_dur = cells.time_factor("start", line), cells.time_factor("duration", line)
    name_ids: dict[str, int] = {}
    name_kinds: list[int] = []
    stream_ids: dict[tuple[str | None, int | None], int] = {}
    add_start, add_end, add_name = cols.start.append, cols.end.append, cols.name.append
    add_kind, add_stream, add_corr = cols.kind.append, cols.stream.append, cols.corr.append
    previous = -(1 << 62)
    prev_dev: str | None = None
    prev_strm: str | None = None
    sid = -1
    kernels = 0
    in_order = True
    for row in reader:
        if len(row) != width:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            raise cells.fail(reader.line_num, f"row has {len(row)} cells, the header has {width}")
        try:
            start = int(row[i_start]) * f_start
            dur = int(row[i_dur]) * f_dur
            if not (-NS_MAX <= start <= NS_MAX and -NS_MAX <= dur <= NS_MAX):
                raise ValueError  # read again below, which says so
        except ValueError:
            line = reader.line_num
            raw_start, raw_dur = row[i_start], row[i_dur]
            if not raw_start or not raw_dur:
                raise cells.fail(line, "empty Start or Duration cell") from None
            start = cells.scaled(raw_start, f_start, "start", line)
            dur = cells.scaled(raw_dur, f_dur, "duration", line)
        name = row[i_name]
        nid = name_ids.get(name)
        if nid is None:
            if not name:
                raise cells.fail(reader.line_num, "empty Name cell")
            nid = name_ids[name] = len(cols.names)
            cols.names.append(name)
            if name.startswith("[CUDA memcpy") or name.startswith("[CUDA memset"):
                code = 2 if "memset" in name else 1
            elif i_grid >= 0 and row[i_grid] == "" and i_bytes >= 0 and row[i_bytes] != "":
                code = 2 if "memset" in name.lower() else 1
            else:
                code = 0
            name_kinds.append(code)
        code = name_kinds[nid]
        if code == 0:
            kernels += 1
        dev = row[i_dev] if i_dev >= 0 else None
        strm = row[i_strm] if i_strm >= 0 else None
        if dev != prev_dev or strm != prev_strm or sid < 0:
            key = (dev or None, _opt_int(cells, row, i_strm, "stream", reader.line_num))
            got = stream_ids.get(key)
            if got is None:
                got = stream_ids[key] = len(cols.streams)
                cols.streams.append(key)
            sid, prev_dev, prev_strm = got, dev, strm
        raw_corr = row[i_corr] if i_corr >= 0 else ""
        if raw_corr:
            try:
                corr = int(raw_corr)
            except ValueError:
                raise cells.fail(
                    reader.line_num, f"{cells.headers['corr_id']!r} is not a whole number: {raw_corr!r}"
                ) from None
        else:
            corr = -1
        if start < previous:
            in_order = False
        previous = start
        add_start(start)
        add_end(start + dur if dur > 0 else start)
        add_name(nid)
        add_kind(code)
        add_stream(sid)
        add_corr(corr)
    cols.kernels = kernels
    cols.in_start_order = in_order
