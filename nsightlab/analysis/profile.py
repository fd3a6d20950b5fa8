"""A profile's result: kernel table, timed ranges with their rates, and the lesson.

`build_profile()` is pure: parsed tables (from nsys or torch.profiler) plus the lab
script's description of its work in, a `ProfileResult` out. Running the profiler and
storing the run is `nsightlab.measure.profile`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from nsightlab.analysis import gpus
from nsightlab.analysis import rates as analysis
from nsightlab.errors import ParseError, validation_message
from nsightlab.parse import names, nsys

Profiler = Literal["nsys", "torch"]


class KernelLine(BaseModel):
    name: str
    short_name: str
    kind: str
    origin: str | None = None  # "triton": a kernel Triton compiled (its kind is beside it)
    instances: int
    total_ns: float
    avg_ns: float | None
    time_pct: float | None


class RangeLine(BaseModel):
    """One timed NVTX range of the script: its kernels, and its rates."""

    name: str
    calls: int | None
    kernel: str | None  # the kernel that takes most of the range's GPU time (short name)
    kernel_full: str | None
    kernel_instances: int | None  # launches inside the timed range
    gpu_ns: float | None  # GPU time of the range's kernels, all calls
    rates: analysis.Rates | None


class ProfileResult(BaseModel):
    kind: Literal["profile"] = "profile"
    run_id: str | None = None
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


def _range_name(name: str) -> str:
    # newer nsys prefixes pushed ranges with ':'
    return name.lstrip(":").strip()


def kernel_lines(report: nsys.NsysReport) -> list[KernelLine]:
    rows = sorted(report.kernels or [], key=lambda k: -k.total_ns)
    return [
        KernelLine(
            name=k.name,
            short_name=names.short_kernel_name(k.name),
            kind=names.kernel_kind(k.name),
            origin=names.kernel_origin(k.name),
            instances=k.instances,
            total_ns=k.total_ns,
            avg_ns=k.avg_ns,
            time_pct=k.time_pct,
        )
        for k in rows
    ]


def range_gpu_time(report: nsys.NsysReport, profiler: Profiler = "nsys") -> tuple[dict[str, tuple[float, int, str | None]], str]:
    """GPU time of each range's kernels: {range: (total ns, launches, main kernel)}, source."""
    out: dict[str, tuple[float, int, str | None]] = {}
    if report.nvtx_kernels:
        by_range: dict[str, list[nsys.NvtxKernelRow]] = {}
        for row in report.nvtx_kernels:
            by_range.setdefault(_range_name(row.range_name), []).append(row)
        for rname, rows in by_range.items():
            main = max(rows, key=lambda r: r.total_ns)
            out[rname] = (sum(r.total_ns for r in rows), sum(r.kernel_instances for r in rows), main.kernel_name)
        if profiler == "torch":
            return out, "ops inside each labelled range (torch.profiler)"
        return out, "kernels inside each NVTX range (nvtx_kern_sum)"
    if report.nvtx_gpu_proj:
        for proj in report.nvtx_gpu_proj:
            out[_range_name(proj.range_name)] = (proj.total_proj_ns, proj.total_gpu_ops or 0, None)
        return out, "GPU projection of each NVTX range (nvtx_gpu_proj_sum)"
    return out, ""


def build_profile(
    report: nsys.NsysReport,
    record: analysis.Lesson1Record | None,
    *,
    script: str,
    profiler: Profiler,
    target: str,
    versions: dict[str, str | None] | None = None,
    device_name: str | None = None,
) -> ProfileResult:
    """Kernel table + per-range rates from the parsed tables and the script's JSON."""
    kernels = kernel_lines(report)
    per_range, source = range_gpu_time(report, profiler)
    notes: list[str] = []
    lesson: list[str] = []
    ranges: list[RangeLine] = []
    spec = gpus.lookup(record.device.name if record else device_name)
    timing_source = (source if profiler == "torch" else f"nsys: {source}") if source else "the script's own timing"
    seconds: dict[str, float] = {}
    if record is not None:
        for work in record.ranges:
            got = per_range.get(work.name)
            if got and got[0] > 0 and work.calls:
                seconds[work.name] = got[0] / 1e9 / work.calls
        if record.ranges and not seconds:
            notes.append("no per-range GPU times in the profile: rates use the script's own timing (CUDA events)")
            timing_source = "the script's own timing"
        analysed = analysis.analyze_lesson1(record, spec, seconds_per_call=seconds or None, timing_source=timing_source)
        by_name = {r.name: r for r in analysed.ranges}
        for work in record.ranges:
            got = per_range.get(work.name)
            ranges.append(
                RangeLine(
                    name=work.name,
                    calls=work.calls,
                    kernel=names.short_kernel_name(got[2]) if got and got[2] else None,
                    kernel_full=got[2] if got else None,
                    kernel_instances=got[1] if got else None,
                    gpu_ns=got[0] if got else None,
                    rates=by_name.get(work.name),
                )
            )
        lesson.extend(analysed.lesson)
        notes.extend(analysed.notes)
        device_type: str | None = analysed.device_type
        spec_name = analysed.spec_name
        device_name = analysed.device_name
        if record.scaled_down:
            notes.append("the script ran scaled down (no GPU): sizes are smaller than the tutorial's")
        lesson.extend(_instances_lesson(kernels, record, per_range))
    else:
        for rname, (total, launches, main) in sorted(per_range.items()):
            ranges.append(RangeLine(name=rname, calls=None, kernel=names.short_kernel_name(main) if main else None, kernel_full=main, kernel_instances=launches, gpu_ns=total, rates=None))
        if per_range:
            notes.append("the script wrote no work description (bytes, FLOPs per call): ranges are shown without rates")
        device_type = None
        spec_name = spec.name if spec else None
    return ProfileResult(
        script=script,
        profiler=profiler,
        target=target,
        device_name=device_name,
        device_type=device_type,
        spec_name=spec_name,
        versions=versions or {},
        kernels=kernels,
        ranges=ranges,
        timing_source=timing_source,
        lesson=lesson,
        notes=notes,
    )


def _instances_lesson(kernels: list[KernelLine], record: analysis.Lesson1Record, per_range: dict[str, tuple[float, int, str | None]]) -> list[str]:
    """Why the kernel summary says 23 and the rates use 20."""
    out: list[str] = []
    for work in record.ranges:
        got = per_range.get(work.name)
        if not got or not got[2]:
            continue
        summary = next((k for k in kernels if k.name == got[2]), None)
        if summary is None:
            continue
        if summary.instances > got[1]:
            out.append(
                f"The kernel summary counts {summary.instances} launches of {summary.short_name}: "
                f"{work.warmup} warm-up{'s' if work.warmup != 1 else ''} + {work.calls} timed (and any other use). "
                f"The rates use only the {got[1]} inside the timed range {work.name}, "
                "so first-use costs (CUDA init, kernel selection) do not pollute them."
            )
    return out


def load_record(path: Path) -> analysis.Lesson1Record | None:
    """The script's work description (lesson1 JSON), or None for a script that wrote none."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ParseError(f"not valid JSON ({e.msg})", source=path, line=e.lineno) from None
    if not isinstance(data, dict) or data.get("kind") != "lesson1":
        return None
    try:
        return analysis.Lesson1Record.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ParseError(f"bad work description at {'.'.join(str(p) for p in err['loc'])}: {validation_message(err)}", source=path) from None


def report_from_torch(data: dict[str, Any], source: str) -> nsys.NsysReport:
    """torchprof.py's JSON as the same tables nsys gives."""
    try:
        return nsys.NsysReport(
            kernels=[nsys.KernelSummaryRow.model_validate(k) for k in data.get("kernels") or []],
            nvtx=[nsys.NvtxRangeRow.model_validate(r) for r in data.get("nvtx") or []],
            nvtx_kernels=[nsys.NvtxKernelRow.model_validate(r) for r in data.get("nvtx_kernels") or []],
            sources={"torch.profiler": source},
        )
    except ValidationError as e:
        err = e.errors()[0]
        raise ParseError(f"bad torch.profiler table at {'.'.join(str(p) for p in err['loc'])}: {validation_message(err)}", source=source) from None


def headline(result: ProfileResult) -> str | None:
    parts = []
    for r in result.ranges:
        if r.rates is None:
            continue
        if r.rates.flops_per_call and r.rates.intensity and r.rates.intensity > 10:
            parts.append(f"{r.name} {r.rates.tflops:.1f} TFLOPS")
        else:
            parts.append(f"{r.name} {r.rates.tbps:.2f} TB/s")
    return ", ".join(parts) or None
