"""The `nsys stats` summary reports, made from an nsys SQLite export: the same `NsysReport`
the CSV and console readers give (`nsightlab.parse.nsys`), from one database.

- `cuda_gpu_kern_sum`: kernels grouped by demangled name (nsys's default grouping; the
  `:base` option would group by `shortName`), each with instances, total, average,
  median, minimum, maximum and standard deviation (sample, n-1) of its durations, exact,
  from the durations the trace's one pass kept;
- `cuda_api_sum`: every CUDA runtime and driver call per function (names without nsys's
  version suffix), computed by SQLite (`GROUP BY`); no median;
- `cuda_gpu_mem_time_sum` / `cuda_gpu_mem_size_sum`: memcpy per copy kind and memset;
- `nvtx_sum`: NVTX push/pop and start/end ranges per name and style;
- `nvtx_kern_sum`: per (range, kernel name), the kernels whose launching CUDA call lies
  inside the range on the same thread (nested ranges count them too); no median;
- `nvtx_gpu_proj_sum`: per range name, each instance's projection onto the GPU (first to
  last operation launched inside it).

`Time (%)` is rounded to one decimal as nsys prints it; every other figure is exact.
Tables the export lacks are left out (None), with a note in `skipped` saying so.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from nsightlab.parse.apicalls import is_kernel_launch
from nsightlab.parse.nsys_columns import _mem_kind
from nsightlab.parse.nsys_report import (
    ApiCallRow,
    KernelSummaryRow,
    MemOpRow,
    NsysReport,
    NvtxGpuProjRow,
    NvtxKernelRow,
    NvtxRangeRow,
)
from nsightlab.parse.nsys_sqlite import KERNEL, MEMCPY, MEMSET, NVTX, RUNTIME
from nsightlab.parse.nsys_sqlite_trace import MEMSET_NAME, SqliteTrace, api_name

Stats = tuple[int, int, float, float, int, int, float]  # n, total, avg, med, min, max, stddev


def stats(values: Sequence[int] | array[int]) -> Stats:
    """n, total, average, median, minimum, maximum, sample standard deviation."""
    ordered = sorted(values)
    n = len(ordered)
    total = sum(ordered)
    mid = n // 2
    med = float(ordered[mid]) if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    avg = total / n
    stddev = 0.0
    if n > 1:
        squares = sum((v * v for v in ordered), 0)
        stddev = math.sqrt(max(squares - total * total / n, 0.0) / (n - 1))
    return n, total, avg, med, ordered[0], ordered[-1], stddev


def _pct(part: float, whole: float) -> float | None:
    return round(100.0 * part / whole, 1) if whole > 0 else None


# The note for an export without NVTX_EVENTS.
NO_NVTX = "no NVTX in this report (it has no NVTX_EVENTS table: trace with `-t cuda,nvtx`)"


def build_report(trace: SqliteTrace) -> NsysReport:
    """Every summary report the export has data for; see the module docstring."""
    db = trace.db
    cols = trace.gpu_columns()
    report = NsysReport(nsys_version=db.product_version)
    source = db.source
    if db.has(KERNEL, "start"):
        report.kernels = _kernel_sum(trace)
        report.sources["cuda_gpu_kern_sum"] = source
    if db.has(RUNTIME, "start", "end", "nameId"):
        report.cuda_api = _api_sum(trace)
        report.sources["cuda_api_sum"] = source
    if db.has(MEMCPY, "start") or db.has(MEMSET, "start"):
        report.mem_time, report.mem_size = _memop_sums(trace)
        report.sources["cuda_gpu_mem_time_sum"] = report.sources["cuda_gpu_mem_size_sum"] = source
    if db.has(NVTX, "start", "end", "eventType"):
        ranges = trace.ranges()
        report.nvtx = _nvtx_sum(trace)
        report.nvtx_kernels = _nvtx_kern_sum(trace) if db.has(KERNEL, "start") else []
        report.nvtx_gpu_proj = _nvtx_proj_sum(trace) if len(cols.start) else []
        for rid in ("nvtx_sum", "nvtx_kern_sum", "nvtx_gpu_proj_sum"):
            report.sources[rid] = source
        if ranges.unclosed:
            report.skipped.append(f"{ranges.unclosed} NVTX range(s) never ended (no end time): left out")
    else:
        report.skipped.append(NO_NVTX)
    # (with no CUDA table at all, the caller says so once: no CUDA traced)
    if not db.has(RUNTIME, "start") and any(db.has(t, "start") for t in (KERNEL, MEMCPY, MEMSET)):
        report.skipped.append("no CUDA API calls in this report (no CUPTI_ACTIVITY_KIND_RUNTIME table)")
    if db.dangling:
        shown = ", ".join(str(i) for i in sorted(db.dangling)[:5])
        report.skipped.append(
            f"{len(db.dangling)} name(s) point to string ids missing from StringIds ({shown}): the export is "
            "damaged; they read `<string id N>`"
        )
    report.skipped[:0] = db.notes
    trace.release_operations()
    return report


def _kernel_sum(trace: SqliteTrace) -> list[KernelSummaryRow]:
    cols = trace.gpu_columns()
    rows = [(cols.names[nid], stats(d)) for nid, d in enumerate(trace.kernel_durations()) if len(d)]
    whole = sum(s[1] for _, s in rows)
    out = [
        KernelSummaryRow(
            name=name,
            time_pct=_pct(s[1], whole),
            total_ns=float(s[1]),
            instances=s[0],
            avg_ns=s[2],
            med_ns=s[3],
            min_ns=float(s[4]),
            max_ns=float(s[5]),
            stddev_ns=s[6],
        )
        for name, s in rows
    ]
    return sorted(out, key=lambda k: (-k.total_ns, k.name))


def _api_sum(trace: SqliteTrace) -> list[ApiCallRow]:
    db = trace.db
    merged: dict[str, list[float]] = {}
    rows: Iterable[Any] = db.api_summary()
    for name_id, calls, total, low, high, squares in rows:
        name = api_name(db.string(name_id))
        if not all(type(v) is int for v in (calls, total, low, high)):  # a REAL or text cell
            raise db.not_whole("a CUDA API call's start or end")
        acc = merged.get(name)
        if acc is None:
            merged[name] = [calls, total, low, high, float(squares)]
        else:
            acc[0] += calls
            acc[1] += total
            acc[2] = min(acc[2], low)
            acc[3] = max(acc[3], high)
            acc[4] += float(squares)
    whole = sum(a[1] for a in merged.values())
    trace.launch_calls = sum(int(a[0]) for name, a in merged.items() if is_kernel_launch(name))
    out = []
    for name, (calls, total, low, high, squares) in merged.items():
        n = int(calls)
        var = max(squares - total * total / n, 0.0) / (n - 1) if n > 1 else 0.0
        out.append(
            ApiCallRow(
                name=name,
                time_pct=_pct(total, whole),
                total_ns=float(total),
                num_calls=n,
                avg_ns=total / n,
                med_ns=None,
                min_ns=float(low),
                max_ns=float(high),
                stddev_ns=math.sqrt(var) if math.isfinite(var) else None,
            )
        )
    return sorted(out, key=lambda a: (-a.total_ns, a.name))


def _memop_sums(trace: SqliteTrace) -> tuple[list[MemOpRow], list[MemOpRow]]:
    db = trace.db
    groups: dict[tuple[int, int], tuple[array[int], array[int]]] = {}
    rows: Iterable[Any] = db.memop_rows()
    for kind, copy_kind, duration, nbytes in rows:
        if not all(type(v) is int for v in (kind, copy_kind, duration, nbytes)):
            raise db.not_whole("a memory operation's time, kind or size")
        durs, sizes = groups.setdefault((kind, copy_kind), (array("q"), array("q")))
        durs.append(max(duration, 0))
        sizes.append(nbytes)
    whole = sum(sum(d) for d, _ in groups.values())
    times: list[MemOpRow] = []
    sizes_out: list[MemOpRow] = []
    for (kind, copy_kind), (durs, sizes) in groups.items():
        raw = db.copy_label(copy_kind) if kind == 1 else MEMSET_NAME
        t = stats(durs)
        times.append(
            MemOpRow(
                operation=_mem_kind(raw),
                raw_operation=raw,
                count=t[0],
                time_pct=_pct(t[1], whole),
                total_ns=float(t[1]),
                avg_ns=t[2],
                med_ns=t[3],
                min_ns=float(t[4]),
                max_ns=float(t[5]),
                stddev_ns=t[6],
            )
        )
        b = stats(sizes)
        sizes_out.append(
            MemOpRow(
                operation=_mem_kind(raw),
                raw_operation=raw,
                count=b[0],
                total_mb=b[1] / 1e6,
                avg_mb=b[2] / 1e6,
                med_mb=b[3] / 1e6,
                min_mb=b[4] / 1e6,
                max_mb=b[5] / 1e6,
                stddev_mb=b[6] / 1e6,
            )
        )
    times.sort(key=lambda m: (-(m.total_ns or 0.0), m.raw_operation))
    sizes_out.sort(key=lambda m: (-(m.total_mb or 0.0), m.raw_operation))
    return times, sizes_out


def _nvtx_sum(trace: SqliteTrace) -> list[NvtxRangeRow]:
    ranges = trace.ranges()
    groups: dict[tuple[str, str], array[int]] = {}
    spans: Iterable[tuple[str, str, int, int]] = [
        *(("PushPop", r.raw_name, r.start_ns, r.end_ns) for r in ranges.records),
        *(("StartEnd", raw, a, b) for raw, a, b in ranges.start_end),
    ]
    for style, raw, a, b in spans:
        groups.setdefault((style, raw), array("q")).append(b - a)
    whole = sum(sum(d) for d in groups.values())
    out = []
    for (style, raw), durs in groups.items():
        s = stats(durs)
        out.append(
            NvtxRangeRow(
                name=raw,
                style=style,
                time_pct=_pct(s[1], whole),
                total_ns=float(s[1]),
                instances=s[0],
                avg_ns=s[2],
                med_ns=s[3],
                min_ns=float(s[4]),
                max_ns=float(s[5]),
                stddev_ns=s[6],
            )
        )
    return sorted(out, key=lambda r: (-r.total_ns, r.name))


def _chains(trace: SqliteTrace) -> list[list[int]]:
    """For each range, itself and the ranges that enclose it on its thread (innermost first)."""
    records = trace.ranges().records
    index = {r.range_id: i for i, r in enumerate(records)}
    chains: list[list[int]] = []
    for i, r in enumerate(records):
        parent = index.get(r.parent_id, -1) if r.parent_id is not None else -1
        chains.append([i, *(chains[parent] if parent >= 0 else [])])
    return chains


def _nvtx_kern_sum(trace: SqliteTrace) -> list[NvtxKernelRow]:
    cols = trace.gpu_columns()
    records = trace.ranges().records
    chains = _chains(trace)
    # per (innermost range, kernel name): count, total, min, max, sum of squares
    per: dict[tuple[int, int], list[int]] = {}
    owner = trace.attributed().owner
    if owner is None:
        raise RuntimeError("nvtx_kern_sum after release_operations")
    for r, kind, nid, a, b in zip(owner, cols.kind, cols.name, cols.start, cols.end, strict=True):
        if r < 0 or kind != 0:
            continue
        d = b - a
        acc = per.get((r, nid))
        if acc is None:
            per[(r, nid)] = [1, d, d, d, d * d]
        else:
            acc[0] += 1
            acc[1] += d
            if d < acc[2]:
                acc[2] = d
            if d > acc[3]:
                acc[3] = d
            acc[4] += d * d
    # then to every range that encloses it, grouped by range name
    named: dict[tuple[str, int], list[int]] = {}
    instances: dict[tuple[str, int], set[int]] = {}
    first: dict[tuple[str, int], int] = {}
    for (r, nid), (n, total, low, high, squares) in per.items():
        for k in chains[r]:
            key = (records[k].raw_name, nid)
            acc = named.get(key)
            if acc is None:
                named[key] = [n, total, low, high, squares]
                instances[key] = {k}
                first[key] = k
            else:
                acc[0] += n
                acc[1] += total
                acc[2] = min(acc[2], low)
                acc[3] = max(acc[3], high)
                acc[4] += squares
                instances[key].add(k)
    out = []
    for key, (n, total, low, high, squares) in named.items():
        rec = records[first[key]]
        out.append(
            NvtxKernelRow(
                range_name=key[0],
                kernel_name=cols.names[key[1]],
                style="PushPop",
                pid=rec.pid,
                tid=rec.tid,
                range_instances=len(instances[key]),
                kernel_instances=n,
                time_pct=None,
                total_ns=float(total),
                avg_ns=total / n,
                med_ns=None,
                min_ns=float(low),
                max_ns=float(high),
                stddev_ns=math.sqrt(max(squares - total * total / n, 0) / (n - 1)) if n > 1 else 0.0,
            )
        )
    return sorted(out, key=lambda r: (r.range_name, -r.total_ns, r.kernel_name))


def _nvtx_proj_sum(trace: SqliteTrace) -> list[NvtxGpuProjRow]:
    groups: dict[str, list[tuple[int, int, int, int]]] = {}  # name -> (projected, range, ops, level)
    for p in trace.projections():
        assert p.orig_start_ns is not None and p.orig_end_ns is not None
        groups.setdefault(p.raw_name, []).append(
            (p.proj_end_ns - p.proj_start_ns, p.orig_end_ns - p.orig_start_ns, p.gpu_ops or 0, p.level or 0)
        )
    out = []
    for raw, items in groups.items():
        s = stats([x[0] for x in items])
        ops = sum(x[2] for x in items)
        out.append(
            NvtxGpuProjRow(
                range_name=raw,
                style="PushPop",
                total_proj_ns=float(s[1]),
                total_range_ns=float(sum(x[1] for x in items)),
                range_instances=s[0],
                proj_avg_ns=s[2],
                proj_med_ns=s[3],
                proj_min_ns=float(s[4]),
                proj_max_ns=float(s[5]),
                proj_stddev_ns=s[6],
                total_gpu_ops=ops,
                avg_gpu_ops=ops / s[0],
                avg_range_level=sum(x[3] for x in items) / s[0],
                avg_num_child=None,
            )
        )
    return sorted(out, key=lambda r: (-r.total_proj_ns, r.range_name))
