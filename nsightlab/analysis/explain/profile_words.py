"""A profile in words: why the kernel summary's count is not the timed calls', what the
memory operations cost beside the kernels, why a profile has no rates (and how to get
them), what the kernel table holds, and the headline."""

from __future__ import annotations

from nsightlab import units
from nsightlab.analysis.profile_models import KernelLine, MemOpLine, Profiler, ProfileResult
from nsightlab.parse import nsys
from nsightlab.parse.nsys import clean_range_name
from nsightlab.parse.records.lesson1_record import Lesson1Record

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


def memory_note(memory_ops: list[MemOpLine], kernels: list[KernelLine]) -> str | None:
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
    '(or `torch.cuda.nvtx.range_push("step")` ... `torch.cuda.nvtx.range_pop()`; from C or C++, '
    '`nvtxRangePushA("step")` ... `nvtxRangePop()`), and trace it with `-t cuda,nvtx`'
)
TORCH_RANGE_HOWTO = 'wrap the code to measure in `with torch.profiler.record_function("step"):`'


def no_rates(report: nsys.NsysReport, profiler: Profiler) -> tuple[str, str]:
    """(timing source, the note saying why) when the profile has no per-range times."""
    if profiler == "torch" and not report.nvtx:
        return (
            "none: no labelled ranges",
            f"no labelled ranges in this profile, so no per-range times or rates: {TORCH_RANGE_HOWTO}",
        )
    if not report.nvtx:
        return "none: no NVTX ranges", f"no NVTX ranges in this profile, so no per-range times or rates: {NVTX_HOWTO}"
    listed = ", ".join(clean_range_name(r.name) for r in report.nvtx[:4]) + (", ..." if len(report.nvtx) > 4 else "")
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


def ops_label(result: ProfileResult) -> str:
    """What the kernel table holds, in words: "GPU kernels" or "CPU ops", from where they ran."""
    if result.kernels_are is not None:
        return "CPU ops" if result.kernels_are == "cpu ops" else "GPU kernels"
    if result.device_type == "cpu":
        return "CPU ops"
    if result.device_type == "cuda" or result.profiler == "nsys":
        return "GPU kernels"
    return "ops"


def instances_lesson(
    kernels: list[KernelLine],
    record: Lesson1Record,
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
