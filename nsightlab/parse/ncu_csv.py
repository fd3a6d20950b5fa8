"""Parsers for Nsight Compute text output: `ncu --csv` (sections or `--page details`),
`ncu --version`, and the counter-permission error.

Pure functions over text; only `parse_file` reads a file. Values are converted to base
units (ns, bytes, bytes/s, Hz); the raw text is kept beside each value.
"""

from __future__ import annotations

import csv
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

from pydantic import ConfigDict, Field

from nsightlab.errors import ParseError
from nsightlab.models import Model
from nsightlab.parse.lines import physical_lines


class NcuMetric(Model):
    """One metric value. `value` is in `unit` (a base unit where ncu's unit is known:
    ns, byte, byte/s, Hz); `raw_unit` and `raw` are as ncu printed them. `value` is
    None for `n/a` or a non-numeric value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: float | None
    unit: str
    raw_unit: str
    raw: str


class NcuRule(Model):
    """One rule result (ncu's advice), e.g. SOLBottleneck / OPT."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    section: str
    name: str
    type: str
    description: str
    speedup_type: str | None
    estimated_speedup: float | None


class NcuKernel(Model):
    """One profiled kernel launch (one ncu ID) with its metrics and rules.

    `metrics[section][metric name]`; the convenience fields are taken from the Speed Of
    Light section, the raw metric names, or Memory Workload Analysis, whichever the file
    has (None when it has none of them).
    """

    model_config = ConfigDict(extra="forbid")

    id: int
    name: str
    process_id: int | None = None
    process_name: str | None = None
    host: str | None = None
    context: int | None = None
    stream: int | None = None
    block: tuple[int, int, int] | None = None
    grid: tuple[int, int, int] | None = None
    device: int | None = None
    cc: str | None = None
    kernel_time: str | None = None
    metrics: dict[str, dict[str, NcuMetric]] = Field(default_factory=dict)
    rules: list[NcuRule] = Field(default_factory=list)
    duration_ns: float | None = None
    dram_throughput_pct: float | None = None
    memory_throughput_pct: float | None = None
    l2_throughput_pct: float | None = None
    l1_throughput_pct: float | None = None
    sm_throughput_pct: float | None = None
    l2_hit_rate_pct: float | None = None
    dram_bytes_read: float | None = None
    dram_bytes_write: float | None = None

    def metric(self, section: str, name: str) -> NcuMetric | None:
        """The metric `name` of `section`, or None."""
        return self.metrics.get(section, {}).get(name)

    def find_metric(self, name: str) -> NcuMetric | None:
        """The first metric called `name` in any section, or None."""
        for by_name in self.metrics.values():
            if name in by_name:
                return by_name[name]
        return None


class NcuReport(Model):
    """Every kernel in one ncu CSV output, in file order, plus ncu's own warnings."""

    model_config = ConfigDict(extra="forbid")

    kernels: list[NcuKernel] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


# ------------------------------------------------------------------ units

# A value above 10^MAX_EXPONENT (in any unit) is no counter's: refused, with Infinity
# and 1e999, before it could become an infinity in a record.
MAX_EXPONENT = 30
_UNIT_FACTORS: dict[str, tuple[str, Decimal]] = {}


def _add_units(base: str, names: dict[str, Decimal]) -> None:
    for name, factor in names.items():
        _UNIT_FACTORS[name.lower()] = (base, factor)


_add_units(
    "ns",
    {
        "ns": Decimal(1),
        "nsecond": Decimal(1),
        "us": Decimal(1000),
        "usecond": Decimal(1000),
        "μs": Decimal(1000),
        "µs": Decimal(1000),
        "ms": Decimal(10**6),
        "msecond": Decimal(10**6),
        "s": Decimal(10**9),
        "second": Decimal(10**9),
    },
)
_add_units(
    "Hz",
    {
        "hz": Decimal(1),
        "khz": Decimal(10**3),
        "mhz": Decimal(10**6),
        "ghz": Decimal(10**9),
        "cycle/second": Decimal(1),
        "cycle/msecond": Decimal(10**3),
        "cycle/usecond": Decimal(10**6),
        "cycle/nsecond": Decimal(10**9),
    },
)
_add_units(
    "byte",
    {
        "byte": Decimal(1),
        "kbyte": Decimal(10**3),
        "mbyte": Decimal(10**6),
        "gbyte": Decimal(10**9),
        "tbyte": Decimal(10**12),
        "kibyte": Decimal(1024),
        "mibyte": Decimal(1024**2),
        "gibyte": Decimal(1024**3),
    },
)
_add_units(
    "byte/s",
    {
        f"{prefix}byte/{per}": factor
        for prefix, factor in (
            ("", Decimal(1)),
            ("k", Decimal(10**3)),
            ("m", Decimal(10**6)),
            ("g", Decimal(10**9)),
            ("t", Decimal(10**12)),
        )
        for per in ("s", "second")
    },
)


def _convert(raw: str, raw_unit: str) -> tuple[float | None, str]:
    """(value in base unit, base unit) for one ncu value; None for n/a or text."""
    text = raw.strip().replace(",", "")
    base, factor = _UNIT_FACTORS.get(raw_unit.strip().lower(), (raw_unit, Decimal(1)))
    if not text or text.lower() in {"n/a", "nan", "-"}:
        return None, base
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None, raw_unit
    if not value.is_finite() or value.adjusted() > MAX_EXPONENT:
        raise ValueError(f"{raw.strip()!r} is not a finite number")
    return float(value * factor), base


def _finite(row: _Row, raw: str, raw_unit: str) -> tuple[float | None, str]:
    """`_convert` for a row's cell: a number that is not finite is the row's error."""
    try:
        return _convert(raw, raw_unit)
    except ValueError as e:
        raise row.fail(str(e)) from None


# ------------------------------------------------------------------ parsing

_XYZ = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$")


def _header_index(cells: list[str]) -> dict[str, int]:
    return {name.strip(): i for i, name in enumerate(cells)}


def _is_header(cells: list[str]) -> bool:
    names = {c.strip() for c in cells}
    return {"ID", "Kernel Name", "Metric Name"} <= names


class _Row:
    def __init__(self, cells: list[str], index: dict[str, int], line: int, source: str | None) -> None:
        self.cells = cells
        self.index = index
        self.line = line
        self.source = source

    def get(self, name: str) -> str | None:
        i = self.index.get(name)
        if i is None or i >= len(self.cells):
            return None
        return self.cells[i]

    def fail(self, message: str) -> ParseError:
        return ParseError(message, source=self.source, line=self.line)

    def int_or_none(self, name: str) -> int | None:
        raw = self.get(name)
        if raw is None or not raw.strip():
            return None
        try:
            return int(raw.replace(",", ""))
        except ValueError:
            raise self.fail(f"{name!r} is not a whole number: {raw!r}") from None

    def xyz(self, name: str) -> tuple[int, int, int] | None:
        raw = self.get(name)
        if raw is None or not raw.strip():
            return None
        match = _XYZ.match(raw.strip())
        if not match:
            raise self.fail(f"{name!r} is not '(x, y, z)': {raw!r}")
        return (int(match.group(1)), int(match.group(2)), int(match.group(3)))


def detect_counter_permission_error(text: str) -> str | None:
    """The verbatim line that reports ERR_NVGPUCTRPERM in ncu output, else None."""
    for line in physical_lines(text):
        if "ERR_NVGPUCTRPERM" in line:
            return line.rstrip("\r")
    return None


_NCU_VERSION = re.compile(r"^\s*Version\s+(\d[\w.\-]*)", re.M)


def parse_ncu_version(text: str, *, source: str | None = None) -> str:
    """The version from `ncu --version` (last line `Version 2024.3.2.0 (build ...)`)."""
    matches = _NCU_VERSION.findall(text)
    if not matches:
        raise ParseError("no `Version` line in ncu --version output", source=source)
    return str(matches[-1])


def parse_ncu_csv(text: str, *, source: str | None = None) -> NcuReport:
    """Parse `ncu --csv` output (`--section ...` or `--page details`) into kernels.

    Lines before the CSV header and lines that are not CSV rows (`==PROF==` chatter,
    the program's own output) are skipped; `==WARNING==`/`==ERROR==` lines are kept in
    `warnings`. Columns are found by header name, so older ncu (a `Kernel Time` column,
    no Block/Grid/Device/CC) parses too. Metric rows carry 16 fields, rule rows 20.
    Raises ParseError (file and line) on a row with more fields than the header, a row
    too short to hold a metric or a rule, or a kernel ID whose name changes.
    """
    report = NcuReport()
    index: dict[str, int] | None = None
    kernels: dict[tuple[int, int | None], NcuKernel] = {}
    for number, line in enumerate(physical_lines(text), start=1):
        stripped = line.strip()
        if stripped.startswith("==") and "==" in stripped[2:]:
            if stripped.startswith(("==WARNING==", "==ERROR==")):
                report.warnings.append(stripped)
            continue
        if not stripped.startswith('"'):
            continue  # program output or blank
        try:
            cells = next(csv.reader([line], strict=True))
        except (csv.Error, StopIteration) as exc:
            raise ParseError(f"malformed CSV line: {exc}", source=source, line=number) from None
        if _is_header(cells):
            index = _header_index(cells)
            continue
        if index is None:
            continue  # a quoted line of program output before any header
        row = _Row(cells, index, number, source)
        if len(cells) > len(index):
            raise row.fail(f"row has {len(cells)} fields, the header has {len(index)}")
        _add_row(row, kernels)
    if index is None and not report.warnings and not kernels:
        raise ParseError(
            'no ncu CSV header (a line with "ID", "Kernel Name", "Metric Name")',
            source=source,
            line=1,
            hint="run ncu with --csv",
        )
    report.kernels = [_with_summary(k) for k in kernels.values()]
    return report


def _add_row(row: _Row, kernels: dict[tuple[int, int | None], NcuKernel]) -> None:
    kernel_id = row.int_or_none("ID")
    name = row.get("Kernel Name")
    section = row.get("Section Name")
    if kernel_id is None or name is None or section is None:
        raise row.fail("row too short: no ID, Kernel Name or Section Name")
    key = (kernel_id, row.int_or_none("Process ID"))
    kernel = kernels.get(key)
    if kernel is None:
        kernel = NcuKernel(
            id=kernel_id,
            name=name,
            process_id=key[1],
            process_name=row.get("Process Name"),
            host=row.get("Host Name"),
            context=row.int_or_none("Context"),
            stream=row.int_or_none("Stream"),
            block=row.xyz("Block Size"),
            grid=row.xyz("Grid Size"),
            device=row.int_or_none("Device"),
            cc=row.get("CC"),
            kernel_time=row.get("Kernel Time"),
        )
        kernels[key] = kernel
    elif kernel.name != name:
        raise row.fail(f"kernel ID {kernel_id} changes name: {kernel.name!r} then {name!r}")
    rule_name = row.get("Rule Name")
    if rule_name:
        speedup_raw = row.get("Estimated Speedup") or ""
        speedup, _ = _finite(row, speedup_raw, "")
        kernel.rules.append(
            NcuRule(
                section=section,
                name=rule_name,
                type=row.get("Rule Type") or "",
                description=row.get("Rule Description") or "",
                speedup_type=row.get("Estimated Speedup Type") or None,
                estimated_speedup=speedup,
            )
        )
        return
    metric_name = row.get("Metric Name")
    raw = row.get("Metric Value")
    if metric_name is None or raw is None:
        raise row.fail("row too short: no Metric Name / Metric Value")
    if not metric_name:
        return  # a section line without metric and without rule: nothing to keep
    raw_unit = row.get("Metric Unit") or ""
    value, unit = _finite(row, raw, raw_unit)
    by_name = kernel.metrics.setdefault(section, {})
    by_name.setdefault(metric_name, NcuMetric(value=value, unit=unit, raw_unit=raw_unit, raw=raw))


def _is_sol(section: str) -> bool:
    return "speed of light" in section.lower() and "roofline" not in section.lower()


def _pick(
    kernel: NcuKernel,
    sol_names: tuple[str, ...],
    raw_names: tuple[str, ...],
    other: tuple[tuple[str, str], ...] = (),
) -> float | None:
    for section, by_name in kernel.metrics.items():
        if not _is_sol(section):
            continue
        for name in sol_names:
            metric = by_name.get(name)
            if metric is not None and metric.value is not None:
                return metric.value
    for name in raw_names:
        metric = kernel.find_metric(name)
        if metric is not None and metric.value is not None:
            return metric.value
    for section_part, name in other:
        for section, by_name in kernel.metrics.items():
            metric = by_name.get(name)
            if section_part in section.lower() and metric is not None and metric.value is not None:
                return metric.value
    return None


def _with_summary(kernel: NcuKernel) -> NcuKernel:
    """Fill the convenience fields from whichever metric spelling the file has."""
    return kernel.model_copy(
        update={
            "duration_ns": _pick(kernel, ("Duration",), ("gpu__time_duration.sum",)),
            "dram_throughput_pct": _pick(
                kernel,
                ("DRAM Throughput",),
                ("dram__throughput.avg.pct_of_peak_sustained_elapsed",),
            ),
            "memory_throughput_pct": _pick(
                kernel,
                ("Memory Throughput", "Memory [%]"),
                ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
            ),
            "l2_throughput_pct": _pick(
                kernel,
                ("L2 Cache Throughput",),
                ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),
            ),
            "l1_throughput_pct": _pick(
                kernel,
                ("L1/TEX Cache Throughput",),
                ("l1tex__throughput.avg.pct_of_peak_sustained_active",),
            ),
            "sm_throughput_pct": _pick(
                kernel,
                ("Compute (SM) Throughput", "Compute (SM) [%]"),
                ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
            ),
            "l2_hit_rate_pct": _pick(
                kernel,
                (),
                ("lts__t_sector_hit_rate.pct",),
                (("memory workload analysis", "L2 Hit Rate"),),
            ),
            "dram_bytes_read": _pick(kernel, (), ("dram__bytes_read.sum",)),
            "dram_bytes_write": _pick(kernel, (), ("dram__bytes_write.sum",)),
        }
    )


def parse_file(path: str | Path) -> NcuReport:
    """Read a file of `ncu --csv` output and parse it."""
    p = Path(path)
    return parse_ncu_csv(p.read_text(encoding="utf-8", errors="replace"), source=str(p))
