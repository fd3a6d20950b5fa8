"""A profile's result: kernel table, timed ranges with their rates, and the lesson.

`build_profile()` is pure: parsed tables (from nsys or torch.profiler) plus the lab
script's description of its work in, a `ProfileResult` out. Running the profiler and
storing the run is `nsightlab.measure.profile`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, ValidationError

from nsightlab import units
from nsightlab.analysis import lesson1, roofline
from nsightlab.analysis.decode_result import GroupSteps
from nsightlab.analysis.steps import TraceSummary
from nsightlab.errors import ParseError, validation_message
from nsightlab.models import Model
from nsightlab.parse import names, nsys
from nsightlab.parse.records import lesson1_record
from nsightlab.specs import gpus

Profiler = Literal["nsys", "torch", "none"]  # "none": the lab script's own record, read alone
# torch.profiler names its steps ProfilerStep#N (torchprof lists them as "ProfilerStep*")
TORCH_STEP_PREFIX = "ProfilerStep"


class KernelLine(Model):
    name: str
    short_name: str
    kind: str
    origin: str | None = None  # "triton": a kernel Triton compiled (its kind is beside it)
    instances: int
    total_ns: float
    avg_ns: float | None
    time_pct: float | None
    self_ns: float | None = None  # a CPU op's own time, without its callees (torch.profiler)


class RangeLine(Model):
    """One timed NVTX range of the script: its kernels, and its rates."""

    name: str
    calls: int | None
    kernel: str | None  # the kernel that takes most of the range's GPU time (short name)
    kernel_full: str | None
    kernel_instances: int | None  # launches inside the timed range
    gpu_ns: float | None  # GPU time of the range's kernels, all calls
    rates: roofline.Rates | None
    range_ns: float | None = None  # the range's own time, all calls (nvtx_sum)


class ApiLine(Model):
    """One CUDA API function of nsys's cuda_api_sum: what the CPU spent calling it."""

    name: str
    calls: int
    total_ns: float
    pct: float | None
    avg_ns: float | None = None


class MemOpLine(Model):
    """One kind of memory operation (copies, sets) on the GPU timeline."""

    operation: str  # as nsys prints it: "[CUDA memcpy Device-to-Host]"
    kind: str  # htod, dtoh, dtod, htoh, ptop, memset, other
    count: int
    total_ns: float | None  # cuda_gpu_mem_time_sum
    bytes: float | None  # cuda_gpu_mem_size_sum (MB = 10^6 bytes there), else None


class TorchInfo(Model):
    """What torchprof.py's JSON says beyond the tables: where the ops ran, and more."""

    device_type: str | None = None  # "cuda" or "cpu": where the ops ran (from the events)
    device_name: str | None = None
    kernels_are: str | None = None  # "cuda kernels" | "cpu ops"
    activities: list[str] | None = None  # what the profiler recorded
    self_ns: dict[str, float] = Field(default_factory=dict)
    trace: str | None = None  # the Chrome trace's file name, when one was kept
    device: dict[str, Any] | None = None  # labcommon's description of the device
    ranges_among_kernels: list[str] = Field(default_factory=list)  # an older torchprof listed these as ops


class ProfileResult(Model):
    kind: Literal["profile"] = "profile"
    run_id: str | None = None
    run_dir: str | None = None
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
    kernels_are: str | None = None  # "cuda kernels" | "cpu ops"
    activities: list[str] | None = None  # what torch.profiler recorded
    device_requested: str | None = None  # --device as asked: auto, cuda, cpu
    cuda_api: list[ApiLine] = Field(default_factory=list)
    memory_ops: list[MemOpLine] = Field(default_factory=list)
    trace: str | None = None  # the profiler's own trace in the run, e.g. raw/trace.json.gz
    warnings: list[str] = Field(default_factory=list)
    # `analyze`: the step anatomy, when a GPU timeline (a cuda_gpu_trace export, the
    # profiler's trace) came with the tables; `trace` already names the trace's file, so
    # the whole timeline's figures are `trace_summary`
    steps: list[GroupSteps] | None = None
    trace_summary: TraceSummary | None = None
    trace_notes: list[str] | None = None  # how the trace's kernels were given to steps, ...
    # nsys: what the tables were read from, "sqlite" (the report's SQLite export) or "stats"
    # (`nsys stats` CSV or console output); and how the kernel table groups kernels where
    # that is known: "demangled" (a row per demangled name, cuda_gpu_kern_sum's default)
    nsys_input: Literal["sqlite", "stats"] | None = None
    kernel_grouping: Literal["demangled", "base", "mangled"] | None = None


def _range_name(name: str) -> str:
    # newer nsys prefixes pushed ranges with ':'
    return name.lstrip(":").strip()


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


def range_names(report: nsys.NsysReport) -> set[str]:
    """Every range the tables name (nvtx_sum, nvtx_kern_sum, nvtx_gpu_proj_sum)."""
    found = {_range_name(r.name) for r in report.nvtx or []}
    found |= {_range_name(r.range_name) for r in report.nvtx_kernels or []}
    found |= {_range_name(r.range_name) for r in report.nvtx_gpu_proj or []}
    return found


def _as_range(row: nsys.KernelSummaryRow) -> nsys.NvtxRangeRow:
    return nsys.NvtxRangeRow(
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


def without_ranges(report: nsys.NsysReport, extra: set[str] | None = None) -> tuple[nsys.NsysReport, list[str]]:
    """The report with no range in its kernel table, and the names taken out.

    A kernel row is a range when a range table names it, when it is a profiler step
    (`ProfilerStep*`), or when `extra` names it. Such a row is moved to the range table
    (unless it is there already) and the kernels' Time (%) is recomputed without it: a
    range's time holds its kernels' time, which would otherwise count twice.
    """
    if not report.kernels:
        return report, []
    known = range_names(report) | (extra or set())
    moved = [k for k in report.kernels if _range_name(k.name) in known or k.name.startswith(TORCH_STEP_PREFIX)]
    if not moved:
        return report, []
    kept = [k for k in report.kernels if k not in moved]
    total = sum(k.total_ns for k in kept) or 1.0
    kept = [k.model_copy(update={"time_pct": round(100.0 * k.total_ns / total, 1)}) for k in kept]
    listed = {_range_name(r.name) for r in report.nvtx or []}
    ranges = list(report.nvtx or []) + [_as_range(k) for k in moved if _range_name(k.name) not in listed]
    return report.model_copy(update={"kernels": kept, "nvtx": ranges}), [k.name for k in moved]


def range_gpu_time(
    report: nsys.NsysReport, profiler: Profiler = "nsys"
) -> tuple[dict[str, tuple[float, int, str | None]], str]:
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


_MEM_WORDS = {
    "htod": ("host-to-device copy", "host-to-device copies"),
    "dtoh": ("device-to-host copy", "device-to-host copies"),
    "dtod": ("device-to-device copy", "device-to-device copies"),
    "htoh": ("host-to-host copy", "host-to-host copies"),
    "ptop": ("peer copy", "peer copies"),
    "memset": ("memset", "memsets"),
}
# below this share of the largest kernel's time, the memory operations are not worth a line
MEMORY_NOTE_SHARE = 0.1


def _memory_note(memory_ops: list[MemOpLine], kernels: list[KernelLine]) -> str | None:
    """How the memory operations' time compares with the largest kernel's, when it matters."""
    timed = [m for m in memory_ops if m.total_ns]
    if not timed or not kernels or kernels[0].total_ns <= 0:
        return None
    total = sum(m.total_ns or 0.0 for m in timed)
    top = kernels[0]
    if total < MEMORY_NOTE_SHARE * top.total_ns:
        return None
    what = ", ".join(f"{m.count} {_MEM_WORDS.get(m.kind, (m.operation, m.operation))[m.count != 1]}" for m in timed)
    return (
        f"memory operations ({what}) took {units.duration(total / 1e9)} on the GPU: "
        f"{units.ratio(total / top.total_ns)} the time of the largest kernel ({top.short_name}, "
        f"{units.duration(top.total_ns / 1e9)}); "
        "copies between host and device are time the kernels do not use"
    )


NVTX_HOWTO = (
    'wrap the code to measure in an NVTX range, `with torch.cuda.nvtx.range("step"):` '
    '(or `torch.cuda.nvtx.range_push("step")` ... `torch.cuda.nvtx.range_pop()`), and trace it with `-t cuda,nvtx`'
)
TORCH_RANGE_HOWTO = 'wrap the code to measure in `with torch.profiler.record_function("step"):`'


def _no_rates(report: nsys.NsysReport, profiler: Profiler) -> tuple[str, str]:
    """(timing source, the note saying why) when the profile has no per-range times."""
    if profiler == "torch" and not report.nvtx:
        return (
            "none: no labelled ranges",
            f"no labelled ranges in this profile, so no per-range times or rates: {TORCH_RANGE_HOWTO}",
        )
    if not report.nvtx:
        return "none: no NVTX ranges", f"no NVTX ranges in this profile, so no per-range times or rates: {NVTX_HOWTO}"
    listed = ", ".join(_range_name(r.name) for r in report.nvtx[:4]) + (", ..." if len(report.nvtx) > 4 else "")
    if profiler == "torch":
        return (
            "none: no op times per labelled range",
            f"the labelled ranges ({listed}) come without the ops inside them, so no per-range times or rates",
        )
    return (
        "none: no kernel times per NVTX range",
        f"the NVTX ranges ({listed}) come without the kernels inside them, so no rates: "
        "export nvtx_kern_sum too (`nsys stats -r nvtx_kern_sum,cuda_gpu_kern_sum REPORT.nsys-rep`)",
    )


def build_profile(
    report: nsys.NsysReport,
    record: lesson1_record.Lesson1Record | None,
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
    GPU that nsys's kernels ran on but which no table names.
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
    elif profiler == "nsys" and report.kernels:
        device_type, device_name = "cuda", nsys_device(report) or device_name
    else:
        device_name = None
    spec = gpus.lookup(record.device.name if record else device_name) if (record or device_type == "cuda") else None
    timing_source = (source if profiler == "torch" else f"nsys: {source}") if source else "the script's own timing"
    seconds: dict[str, float] = {}
    nvtx_rows = {_range_name(r.name): r for r in report.nvtx or []}
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
        analysed = lesson1.analyze_lesson1(record, spec, seconds_per_call=seconds or None, timing_source=timing_source)
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
        lesson.extend(_instances_lesson(kernels, record, per_range, cpu_ops=cpu_ops))
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
            notes.append("the script wrote no work description (bytes, FLOPs per call): ranges are shown without rates")
        else:
            timing_source, why = _no_rates(report, profiler)
            notes.append(why)
        spec_name = spec.name if spec else None
    memory_ops = memory_op_lines(report)
    memory = _memory_note(memory_ops, kernels)
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


def ops_label(result: ProfileResult) -> str:
    """What the kernel table holds, in words: "GPU kernels" or "CPU ops", from where they ran."""
    if result.kernels_are is not None:
        return "CPU ops" if result.kernels_are == "cpu ops" else "GPU kernels"
    if result.device_type == "cpu":
        return "CPU ops"
    if result.device_type == "cuda" or result.profiler == "nsys":
        return "GPU kernels"
    return "ops"


def _instances_lesson(
    kernels: list[KernelLine],
    record: lesson1_record.Lesson1Record,
    per_range: dict[str, tuple[float, int, str | None]],
    *,
    cpu_ops: bool = False,
) -> list[str]:
    """Why the kernel summary says 23 and the rates use 20: in the words of what the
    table holds (GPU kernels are launched; CPU ops are called, with no CUDA to start)."""
    out: list[str] = []
    for work in record.ranges:
        got = per_range.get(work.name)
        if not got or not got[2]:
            continue
        summary = next((k for k in kernels if k.name == got[2]), None)
        if summary is None:
            continue
        if summary.instances > got[1]:
            table, events = ("The op table", "calls") if cpu_ops else ("The kernel summary", "launches")
            first_use = (
                "memory allocation, starting the thread pool, choosing a kernel"
                if cpu_ops
                else "CUDA init, kernel selection"
            )
            out.append(
                f"{table} counts {summary.instances} {events} of {summary.short_name}: "
                f"{work.warmup} warm-up{'s' if work.warmup != 1 else ''} + {work.calls} timed (and any other use). "
                f"The rates use only the {got[1]} inside the timed range {work.name}, "
                f"so first-use costs ({first_use}) do not pollute them."
            )
    return out


def _torch_ranges_among_kernels(data: dict[str, Any]) -> list[str]:
    """Kernel rows that an older torchprof.py (before `kernels_are`) wrote but are ranges.

    It listed every top-level CPU event as an op, so a `record_function` range that was
    not in its --ranges (a user's own `step`) sat among the ops, its time holding theirs.
    On a CPU, torch's ops are named `namespace::op` (`aten::mul_`); a top-level event
    without `::` is a range (`step`, `Optimizer.step#SGD.step`). A GPU kernel table
    cannot be told apart this way: only names a range table gives are moved there.
    """
    if "kernels_are" in data:  # today's torchprof keeps ranges out itself
        return []
    old_device = data.get("device")
    on_cpu = old_device == "cpu" or data.get("device_type") == "cpu"
    if not on_cpu:
        return []
    return [
        str(k.get("name")) for k in data.get("kernels") or [] if isinstance(k, dict) and "::" not in str(k.get("name"))
    ]


def torch_info(data: dict[str, Any]) -> TorchInfo:
    """Where the ops of a torchprof.py run ran, and what else its JSON holds beyond the tables.

    Older torchprof JSON has `device: "cuda" | "cpu"` (whether torch saw a GPU) and no
    `device_type`: that string stands in for it.
    """
    device = data.get("device")
    dev = device if isinstance(device, dict) else None
    dtype = data.get("device_type") or (dev or {}).get("type") or (device if isinstance(device, str) else None)
    self_ns = data.get("self_ns") or {}
    return TorchInfo(
        device_type=str(dtype) if dtype else None,
        device_name=(dev or {}).get("name"),
        kernels_are=data.get("kernels_are"),
        activities=data.get("activities"),
        self_ns={str(k): float(v) for k, v in self_ns.items()} if isinstance(self_ns, dict) else {},
        trace=data.get("trace"),
        device=dev,
        ranges_among_kernels=_torch_ranges_among_kernels(data),
    )


def report_from_torch(data: dict[str, Any], source: str) -> nsys.NsysReport:
    """torchprof.py's JSON as the same tables nsys gives; a range is never a kernel there."""
    try:
        report = nsys.NsysReport(
            kernels=[nsys.KernelSummaryRow.model_validate(k) for k in data.get("kernels") or []],
            nvtx=[nsys.NvtxRangeRow.model_validate(r) for r in data.get("nvtx") or []],
            nvtx_kernels=[nsys.NvtxKernelRow.model_validate(r) for r in data.get("nvtx_kernels") or []],
            sources={"torch.profiler": source},
        )
    except ValidationError as e:
        err = e.errors()[0]
        raise ParseError(
            f"bad torch.profiler table at {'.'.join(str(p) for p in err['loc'])}: {validation_message(err)}",
            source=source,
        ) from None
    return without_ranges(report, set(_torch_ranges_among_kernels(data)))[0]


def headline(result: ProfileResult) -> str | None:
    parts = []
    for r in result.ranges:
        if r.rates is None:
            continue
        if r.rates.flops_per_call and r.rates.intensity and r.rates.intensity > 10:
            parts.append(f"{r.name} {units.tflops(r.rates.flops_per_s)}")
        else:
            parts.append(f"{r.name} {units.tbps(r.rates.bytes_per_s)}")
    return ", ".join(parts) or None
