"""Parsers for Nsight Systems text output: `nsys stats` (CSV and column format),
`nsys profile --stats=true` console logs, `nsys stats --help-reports`, `nsys --version`.

Everything here is a pure function over text; only `parse_file` reads a file. The rows
and report names are in `nsys_report`; how a table's headers and cells are read, in
`nsys_columns`. Report names are canonicalised to the 2023.1+ names (`gpukernsum` ->
`cuda_gpu_kern_sum`).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from pathlib import Path

from nsightlab.errors import ParseError
from nsightlab.parse.lines import physical_lines
from nsightlab.parse.nsys_columns import Column, Table, column, identify, table_rows
from nsightlab.parse.nsys_report import (
    ALIAS_TO_ID,
    FIELD_OF_REPORT,
    OLD_HEADINGS,
    REPORT_ALIASES,
    REPORT_IDS,
    ApiCallRow,
    GpuTraceRow,
    ImporterMissingError,
    KernelSummaryRow,
    MemOpKind,
    MemOpRow,
    NsysReport,
    NvtxGpuProjRow,
    NvtxKernelRow,
    NvtxRangeRow,
    ReportId,
    StaleExportError,
    canonical_report_name,
)

# The row models and report names live in nsys_report; they are part of this module's API.
__all__ = [
    "REPORT_ALIASES",
    "REPORT_IDS",
    "ApiCallRow",
    "GpuTraceRow",
    "ImporterMissingError",
    "KernelSummaryRow",
    "MemOpKind",
    "MemOpRow",
    "NsysReport",
    "NvtxGpuProjRow",
    "NvtxKernelRow",
    "NvtxRangeRow",
    "ReportId",
    "StaleExportError",
    "available_reports",
    "canonical_report_name",
    "check_stats_output",
    "detect_importer_error",
    "merge_reports",
    "nsys_version_tuple",
    "parse_file",
    "parse_nsys_version",
    "parse_stats_console",
    "parse_stats_csv",
]


# --------------------------------------------------------------------------- models


# ----------------------------------------------------------------- report names


_HELP_ENTRY = re.compile(r"^\s*([a-z][a-z0-9_]*)(?=$|[\s\[:-])")


def available_reports(help_text: str, *, source: str | None = None) -> dict[ReportId, str]:
    """Which name this nsys uses for each report we know, from `nsys stats --help-reports`.

    Reads the report name at the start of each listed line (`  cuda_gpu_kern_sum[:base]
    -- CUDA GPU Kernel Summary`); where an nsys lists several names for one report the
    newest is chosen. Reports this nsys lacks are absent from the result. Raises
    ParseError when the text lists none of the reports we know.
    """
    listed: set[str] = set()
    for line in physical_lines(help_text):
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
    lines = physical_lines(text)
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
    for line in physical_lines(text):
        if "Importer error status" in line or "importer binary" in line.lower():
            return line
    return None


# ----------------------------------------------------------- header meaning


# ----------------------------------------------------------------- value parsing


# ---------------------------------------------------------------- table assembly


def _store(report: NsysReport, table: Table, source: str | None) -> None:
    field = FIELD_OF_REPORT[table.report]
    if getattr(report, field) is not None:
        raise ParseError(f"a second {table.report} table", source=source, line=table.header_line)
    setattr(report, field, table_rows(table, source))
    report.sources[table.report] = source or "<text>"


def _split_csv_line(line: str, number: int, source: str | None) -> list[str]:
    try:
        return next(csv.reader([line], strict=True))
    except (csv.Error, StopIteration) as exc:
        raise ParseError(f"malformed CSV line: {exc}", source=source, line=number) from None


def _csv_row_count_error(cells: list[str], columns: list[Column], number: int, source: str | None) -> ParseError:
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
    for alias, rid in ALIAS_TO_ID.items():
        if re.search(rf"(?:^|_){re.escape(alias)}(?:$|_)", stem) and (best is None or len(alias) > best[0]):
            best = (len(alias), rid)
    return best[1] if best else None


def parse_stats_csv(text: str, *, source: str | None = None, report: str | None = None) -> NsysReport:
    """Parse one `nsys stats --format csv` table (one report) into an NsysReport.

    The report is `report` when given (any old or new name), else the one named by a
    `BASE_<report>.csv` file name in `source`, else recognised from the header.
    Columns are matched by header meaning; other `--timeunit`s are converted to ns.
    Raises ParseError (file and line) on an unknown header, a row whose cell count
    differs from the header's, or a cell that is not a number where one is expected.
    """
    check_stats_output(text, source=source)
    lines = physical_lines(text)
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        raise ParseError("empty CSV: no header line", source=source, line=1)
    header_number = start + 1
    columns = [column(h) for h in _split_csv_line(lines[start], header_number, source)]
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
        rid = identify(columns, names)
    if rid is None:
        raise ParseError(
            "unrecognised nsys CSV header: " + ", ".join(c.header for c in columns),
            source=source,
            line=header_number,
        )
    result = NsysReport()
    _store(result, Table(rid, columns, rows, header_number), source)
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
    for prefix, rid in OLD_HEADINGS:
        if text.startswith(prefix):
            return rid
    return None


def _column_spans(dash_line: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", dash_line)]


def _slice_columns(line: str, spans: list[tuple[int, int]], number: int, source: str | None, what: str) -> list[str]:
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


def _try_csv_header(line: str) -> list[Column] | None:
    if "," not in line:
        return None
    try:
        cells = next(csv.reader([line], strict=True))
    except (csv.Error, StopIteration):
        return None
    if len(cells) < 3:
        return None
    columns = [column(c) for c in cells]
    return columns if identify(columns) is not None else None


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
            i, stored = _read_csv_block(lines, i, csv_columns, rid_hint, pending_name is not None, source, result)
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
        header_cells = _slice_columns(lines[header_index], spans, header_index + 1, source, "table header")
    except ParseError:
        if announced:
            raise
        return end
    columns = [column(h) for h in header_cells]
    rid = pending if announced else identify(columns)
    if rid is None:
        return end
    if any(not h for h in header_cells):
        raise ParseError("table header has an empty column title", source=source, line=header_index + 1)
    rows = [(j + 1, _slice_columns(lines[j], spans, j + 1, source, "row")) for j in range(dash_index + 1, end)]
    if not announced and rid == "cuda_api_sum":
        names = [cells[k] for _, cells in rows for k, c in enumerate(columns) if c.key == "name"]
        rid = identify(columns, names) or rid
    _store(result, Table(rid, columns, rows, header_index + 1, size_unit), source)
    return end


def _read_csv_block(
    lines: list[str],
    start: int,
    columns: list[Column],
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
    rid = pending if announced else identify(columns, names)
    if rid is None:
        return j, False
    _store(result, Table(rid, columns, rows, start + 1), source)
    return j, True


# ---------------------------------------------------------------------- helpers


def merge_reports(reports: Iterable[NsysReport]) -> NsysReport:
    """Combine reports parsed from separate files (`BASE_<report>.csv`) into one.

    Raises ValueError when two of them carry the same report.
    """
    merged = NsysReport()
    for part in reports:
        for rid, field in FIELD_OF_REPORT.items():
            rows = getattr(part, field)
            if rows is None:
                continue
            if getattr(merged, field) is not None:
                raise ValueError(f"{rid} appears twice ({merged.sources.get(rid)}, {part.sources.get(rid)})")
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


# ---------------------------------------------------------------------------- ranges among kernels

# torch.profiler names its steps ProfilerStep#N (torchprof lists them as "ProfilerStep*")
TORCH_STEP_PREFIX = "ProfilerStep"


def clean_range_name(name: str) -> str:
    """A range's name as the script gave it: newer nsys prefixes pushed ranges with ':'."""
    return name.lstrip(":").strip()


def range_names(report: NsysReport) -> set[str]:
    """Every range the tables name (nvtx_sum, nvtx_kern_sum, nvtx_gpu_proj_sum)."""
    found = {clean_range_name(r.name) for r in report.nvtx or []}
    found |= {clean_range_name(r.range_name) for r in report.nvtx_kernels or []}
    found |= {clean_range_name(r.range_name) for r in report.nvtx_gpu_proj or []}
    return found


def _as_range(row: KernelSummaryRow) -> NvtxRangeRow:
    return NvtxRangeRow(
        name=row.name,
        style="PushPop",
        time_pct=None,
        total_ns=row.total_ns,
        instances=row.instances,
        avg_ns=row.avg_ns,
        med_ns=row.med_ns,
        min_ns=row.min_ns,
        max_ns=row.max_ns,
        stddev_ns=row.stddev_ns,
    )


def without_ranges(report: NsysReport, extra: set[str] | None = None) -> tuple[NsysReport, list[str]]:
    """The report with no range in its kernel table, and the names taken out.

    A kernel row is a range when a range table names it, when it is a profiler step
    (`ProfilerStep*`), or when `extra` names it. Such a row is moved to the range table
    (unless it is there already) and the kernels' Time (%) is recomputed without it: a
    range's time holds its kernels' time, which would otherwise count twice.
    """
    if not report.kernels:
        return report, []
    known = range_names(report) | (extra or set())
    moved = [k for k in report.kernels if clean_range_name(k.name) in known or k.name.startswith(TORCH_STEP_PREFIX)]
    if not moved:
        return report, []
    kept = [k for k in report.kernels if k not in moved]
    total = sum(k.total_ns for k in kept) or 1.0
    kept = [k.model_copy(update={"time_pct": round(100.0 * k.total_ns / total, 1)}) for k in kept]
    listed = {clean_range_name(r.name) for r in report.nvtx or []}
    ranges = list(report.nvtx or []) + [_as_range(k) for k in moved if clean_range_name(k.name) not in listed]
    return report.model_copy(update={"kernels": kept, "nvtx": ranges}), [k.name for k in moved]
