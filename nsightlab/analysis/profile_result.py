"""A profile's result built: the kernel table, the timed ranges with their rates, the
CUDA API calls and memory operations, the lesson and the notes.

`build_profile()` is pure: parsed tables (from nsys or torch.profiler) plus the lab
script's description of its work in, a `ProfileResult` (`profile_models`) out; the
sentences are `explain.profile_words`. Running the profiler and storing the run is
`nsightlab.measure.profile`.
"""

from __future__ import annotations

import re

from nsightlab.analysis.explain.profile_words import instances_lesson, memory_note, no_rates
from nsightlab.analysis.lesson1_rates import analyze_lesson1
from nsightlab.analysis.profile_models import ApiLine, KernelLine, MemOpLine, Profiler, ProfileResult, RangeLine
from nsightlab.parse import names, nsys
from nsightlab.parse.nsys import clean_range_name, without_ranges
from nsightlab.parse.records.lesson1_record import Lesson1Record
from nsightlab.parse.records.torchprof_record import TorchInfo
from nsightlab.specs import gpus


def kernel_lines(report: nsys.NsysReport, self_ns: dict[str, float] | None = None) -> list[KernelLine]:
    rows = sorted(report.kernels or [], key=lambda k: -k.total_ns)
    own = self_ns or {}
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
            self_ns=own.get(k.name),
        )
        for k in rows
    ]


def range_gpu_time(
    report: nsys.NsysReport, profiler: Profiler = "nsys"
) -> tuple[dict[str, tuple[float, int, str | None]], str]:
    """GPU time of each range's kernels: {range: (total ns, launches, main kernel)}, source."""
    out: dict[str, tuple[float, int, str | None]] = {}
    if report.nvtx_kernels:
        by_range: dict[str, list[nsys.NvtxKernelRow]] = {}
        for row in report.nvtx_kernels:
            by_range.setdefault(clean_range_name(row.range_name), []).append(row)
        for rname, rows in by_range.items():
            main = max(rows, key=lambda r: r.total_ns)
            out[rname] = (sum(r.total_ns for r in rows), sum(r.kernel_instances for r in rows), main.kernel_name)
        if profiler == "torch":
            return out, "ops inside each labelled range (torch.profiler)"
        return out, "kernels inside each NVTX range (nvtx_kern_sum)"
    if report.nvtx_gpu_proj:
        for proj in report.nvtx_gpu_proj:
            out[clean_range_name(proj.range_name)] = (proj.total_proj_ns, proj.total_gpu_ops or 0, None)
        return out, "GPU projection of each NVTX range (nvtx_gpu_proj_sum)"
    return out, ""


_TRACE_DEVICE = re.compile(r"\s*\(\d+\)\s*$")


def nsys_device(report: nsys.NsysReport) -> str | None:
    """The GPU the kernels ran on, from the GPU trace's Device column (`NVIDIA A100 (0)`)."""
    for row in report.gpu_trace or []:
        if row.device:
            return _TRACE_DEVICE.sub("", row.device).strip() or None
    return None


def api_lines(report: nsys.NsysReport) -> list[ApiLine]:
    """cuda_api_sum, largest total first."""
    rows = sorted(report.cuda_api or [], key=lambda a: -a.total_ns)
    return [ApiLine(name=a.name, calls=a.num_calls, total_ns=a.total_ns, pct=a.time_pct, avg_ns=a.avg_ns) for a in rows]


def memory_op_lines(report: nsys.NsysReport) -> list[MemOpLine]:
    """cuda_gpu_mem_time_sum with the bytes of cuda_gpu_mem_size_sum where it has them."""
    sizes = {(m.operation, m.raw_operation): m for m in report.mem_size or []}
    out: list[MemOpLine] = []
    seen: set[tuple[str, str]] = set()
    for m in sorted(report.mem_time or [], key=lambda x: -(x.total_ns or 0.0)):
        key = (m.operation, m.raw_operation)
        seen.add(key)
        size = sizes.get(key)
        out.append(
            MemOpLine(
                operation=m.raw_operation,
                kind=m.operation,
                count=m.count,
                total_ns=m.total_ns,
                bytes=size.total_mb * 1e6 if size is not None and size.total_mb is not None else None,
            )
        )
    for key, size in sizes.items():
        if key not in seen:
            out.append(
                MemOpLine(
                    operation=size.raw_operation,
                    kind=size.operation,
                    count=size.count,
                    total_ns=None,
                    bytes=size.total_mb * 1e6 if size.total_mb is not None else None,
                )
            )
    return out


def build_profile(
    report: nsys.NsysReport,
    record: Lesson1Record | None,
    *,
    script: str,
    profiler: Profiler,
    target: str,
    versions: dict[str, str | None] | None = None,
    device_name: str | None = None,
    torch: TorchInfo | None = None,
) -> ProfileResult:
    """Kernel table + per-range rates from the parsed tables and the script's JSON.

    Where the work ran comes from the run itself: the script's JSON, torch.profiler's
    events (`torch`), or the GPU trace of nsys; `device_name` is a last resort for a
    GPU that nsys's kernels ran on but which no table names, or the GPU a report without
    kernels names (its memory operations', or its only GPU).
    """
    report, moved = without_ranges(report, set(torch.ranges_among_kernels) if torch else None)
    kernels = kernel_lines(report, torch.self_ns if torch else None)
    per_range, source = range_gpu_time(report, profiler)
    notes: list[str] = []
    lesson: list[str] = []
    ranges: list[RangeLine] = []
    # report_from_torch has moved an older torchprof's ranges already: say so all the same
    moved = list(dict.fromkeys([*(torch.ranges_among_kernels if torch else []), *moved]))
    if moved:
        notes.append(
            f"{', '.join(moved)}: a range, not a kernel (the profile listed it among the kernels): shown as a "
            "range, and the Time (%) of the rest recomputed without it"
        )
    # where the work ran: never from the node's labels or nvidia-smi
    device_type: str | None = None
    if torch is not None and torch.device_type:
        device_type, device_name = torch.device_type, torch.device_name
    elif profiler == "nsys" and (report.kernels or device_name):
        device_type, device_name = "cuda", nsys_device(report) or device_name
    else:
        device_name = None
    spec = gpus.lookup(record.device.name if record else device_name) if (record or device_type == "cuda") else None
    timing_source = (source if profiler == "torch" else f"nsys: {source}") if source else "the script's own timing"
    seconds: dict[str, float] = {}
    nvtx_rows = {clean_range_name(r.name): r for r in report.nvtx or []}
    if record is not None:
        for work in record.ranges:
            got = per_range.get(work.name)
            if got and got[0] > 0 and work.calls:
                seconds[work.name] = got[0] / 1e9 / work.calls
        if record.ranges and not seconds:
            on_gpu = record.device.type == "cuda"
            clock = "CUDA events" if on_gpu else "its clock, time.perf_counter"
            what = "GPU times" if on_gpu else "times"
            notes.append(f"no per-range {what} in the profile: rates use the script's own timing ({clock})")
            timing_source = "the script's own timing"
        analysed = analyze_lesson1(record, spec, seconds_per_call=seconds or None, timing_source=timing_source)
        by_name = {r.name: r for r in analysed.ranges}
        for work in record.ranges:
            got = per_range.get(work.name)
            row = nvtx_rows.get(work.name)
            ranges.append(
                RangeLine(
                    name=work.name,
                    calls=work.calls,
                    kernel=names.short_kernel_name(got[2]) if got and got[2] else None,
                    kernel_full=got[2] if got else None,
                    kernel_instances=got[1] if got else None,
                    gpu_ns=got[0] if got else None,
                    rates=by_name.get(work.name),
                    range_ns=row.total_ns if row else None,
                )
            )
        lesson.extend(analysed.lesson)
        notes.extend(analysed.notes)
        device_type = analysed.device_type
        spec_name = analysed.spec_name
        device_name = analysed.device_name
        if record.scaled_down:
            notes.append("the script ran scaled down (no GPU): sizes are smaller than the tutorial's")
        cpu_ops = _kernels_are(profiler, torch, device_type, bool(kernels)) == "cpu ops"
        lesson.extend(instances_lesson(kernels, record, per_range, cpu_ops=cpu_ops))
    else:
        # every range the profile names, largest first; the kernels inside where known
        order = [n for n, _ in sorted(nvtx_rows.items(), key=lambda kv: -kv[1].total_ns)]
        order += sorted(n for n in per_range if n not in nvtx_rows)
        for rname in order:
            total, launches, main = per_range.get(rname, (None, None, None))
            row = nvtx_rows.get(rname)
            ranges.append(
                RangeLine(
                    name=rname,
                    calls=row.instances if row else None,
                    kernel=names.short_kernel_name(main) if main else None,
                    kernel_full=main,
                    kernel_instances=launches,
                    gpu_ns=total,
                    rates=None,
                    range_ns=row.total_ns if row else None,
                )
            )
        if per_range:
            notes.append(
                "no work description (the bytes and FLOPs of one call, which the lab scripts write beside their "
                "profile) came with this profile: ranges are shown without rates"
            )
        else:
            timing_source, why = no_rates(report, profiler)
            notes.append(why)
        spec_name = spec.name if spec else None
    memory_ops = memory_op_lines(report)
    memory = memory_note(memory_ops, kernels)
    if memory:
        notes.append(memory)
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
        kernels_are=_kernels_are(profiler, torch, device_type, bool(kernels)),
        activities=torch.activities if torch else None,
        cuda_api=api_lines(report),
        memory_ops=memory_ops,
    )


def _kernels_are(profiler: Profiler, torch: TorchInfo | None, device_type: str | None, any_kernels: bool) -> str | None:
    """What the kernel table holds: "cuda kernels" or "cpu ops" (None: nothing, or not known)."""
    if torch is not None and torch.kernels_are:
        return torch.kernels_are
    if not any_kernels:
        return None
    if profiler == "nsys":
        return "cuda kernels"  # nsys's kernel summary holds GPU kernels only
    return {"cpu": "cpu ops", "cuda": "cuda kernels"}.get(device_type or "")
