"""`profile` and `ncu` drawn: the kernel table, the timed ranges and their rates, the
CUDA API calls, the memory operations, the steps of the trace, the lesson; ncu's Speed
Of Light table and verdicts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nsightlab import units
from nsightlab.analysis.explain.profile_words import ops_label
from nsightlab.parse.names import distinct_short_names
from nsightlab.present import decodedoc as dd
from nsightlab.present.decodeview import step_groups
from nsightlab.present.render import Column, blank, heading, lines, note_lines, report_table, table
from nsightlab.present.text import ncu_table

if TYPE_CHECKING:
    from nsightlab.analysis.ncu_result import NcuResult
    from nsightlab.analysis.profile_models import KernelLine, ProfileResult
    from nsightlab.analysis.roofline import Rates
    from nsightlab.present.console import Env


def _secs(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e9


def _cell(unit: units.Unit, ns: float | None) -> str:
    return "" if ns is None else unit.value(ns / 1e9)


def _pct_cell(pct: float | None) -> str:
    return "" if pct is None else units.percent(pct)


def _is_compute(r: Rates, kind: str) -> bool:
    return kind == "gemm" or (r.intensity is not None and r.intensity > 10)


def _work(r: Rates, kind: str) -> str:
    if _is_compute(r, kind):
        f = r.flops_per_call
        return f"{units.sig(f / 1e12)} TFLOP" if f >= 1e11 else f"{units.sig(f / 1e9)} GFLOP"
    return units.size(r.bytes_per_call)


def _rate(r: Rates, kind: str) -> str:
    return units.tflops(r.flops_per_s) if _is_compute(r, kind) else units.tbps(r.bytes_per_s)


def _pct(r: Rates, kind: str) -> str:
    pct, label = (r.pct_of_flops_peak, r.flops_label) if _is_compute(r, kind) else (r.pct_of_bw_peak, r.bw_label)
    return f"{units.percent(pct)} of {label}" if pct is not None and label else "-"


def kernel_table(env: Env, kernels: Sequence[KernelLine], *, top: int, title: str, what: str = "kernels") -> None:
    shown = list(kernels)[:top]
    total = units.time_unit(_secs(k.total_ns) for k in shown)
    avg = units.time_unit(_secs(k.avg_ns) for k in shown)
    with_self = any(k.self_ns is not None for k in shown)
    cols = [Column("Time", justify="right"), Column(f"Total ({total.name})", justify="right")]
    if with_self:
        cols.append(Column(f"Self ({total.name})", justify="right"))
    cols += [Column("Instances", justify="right"), Column(f"Avg ({avg.name})", justify="right"), Column("Name")]
    rows = []
    for k, name in zip(shown, distinct_short_names([k.name for k in shown]), strict=True):
        row: list[Any] = [_pct_cell(k.time_pct), _cell(total, k.total_ns)]
        if with_self:
            row.append(_cell(total, k.self_ns))
        row += [k.instances, _cell(avg, k.avg_ns), name]
        rows.append(row)
    table(env, cols, rows, title=title)
    if len(kernels) > top:
        lines(env, [f"... and {len(kernels) - top} more {what} (all of them, with full names, in --json)"], bullet="")
    if with_self:
        lines(env, ["Self: an op's own time, without the ops it called (they are in its Total)."], bullet="")


def _device_words(result: ProfileResult) -> str:
    name = result.device_name or "unknown device"
    if result.device_type == "cpu":
        return f"cpu ({name})" if result.device_name else "cpu"
    return name + (
        f" (spec: {result.spec_name})" if result.spec_name and result.spec_name != result.device_name else ""
    )


def profile(env: Env, result: ProfileResult, *, top: int = 15) -> None:
    how = {
        "nsys": "under Nsight Systems",
        "torch": "under torch.profiler (no nsys: the same tables, from PyTorch's profiler)",
        "none": "as its own record tells (no profiler: no kernel table, the script's own timing)",
    }[result.profiler]
    heading(env, f"{result.script} {how} on {result.target}: {_device_words(result)}")
    if result.warnings:
        lines(env, [f"warning: {w}" for w in result.warnings], bullet="")
    blank(env)
    what = ops_label(result)
    grouped = {"demangled": " (a row per demangled name, as cuda_gpu_kern_sum)", "base": " (a row per base name)"}
    title = f"{what}{grouped.get(result.kernel_grouping or '', '')}, by total time"
    if result.kernels:
        kernel_table(env, result.kernels, top=top, title=title, what=what)
    elif result.profiler != "none":
        lines(env, [f"{what}: none in this profile"], bullet="")
    blank(env)
    cpu = result.device_type == "cpu"
    timed = [r for r in result.ranges if r.rates is not None]
    if timed:
        per_call = units.time_unit(r.rates.seconds_per_call for r in timed if r.rates is not None)
        cols = [
            Column("Range"),
            Column("Kernel" if not cpu else "Op"),
            Column("Work/call", justify="right"),
            Column(f"Time/call ({per_call.name})", justify="right"),
            Column("Rate", justify="right"),
            Column("% of spec peak"),
            Column("FLOP/B", justify="right"),
            Column("Roof"),
        ]
        rows = []
        kernels = distinct_short_names([r.kernel_full for r in timed])
        for r, kernel in zip(timed, kernels, strict=True):
            assert r.rates is not None
            kind = "gemm" if "gemm" in r.name else "elementwise"
            roof = r.rates.roofline.bound if r.rates.roofline else "-"
            rows.append(
                [
                    r.name,
                    kernel or r.kernel or "",
                    _work(r.rates, kind),
                    per_call.value(r.rates.seconds_per_call),
                    _rate(r.rates, kind),
                    _pct(r.rates, kind),
                    units.sig(r.rates.intensity) if r.rates.intensity else "",
                    roof,
                ]
            )
        table(env, cols, rows, title=f"Timed ranges (times: {result.timing_source})")
        blank(env)
    elif result.ranges:
        own = units.time_unit(_secs(r.range_ns) for r in result.ranges)
        inside = units.time_unit(_secs(r.gpu_ns) for r in result.ranges)
        inner = "Op time" if cpu else "Kernel time"
        cols = [Column("Range"), Column("Calls", justify="right"), Column(f"Time ({own.name})", justify="right")]
        # the kernels inside each range, where the profile has them
        with_kernels = any(r.gpu_ns is not None for r in result.ranges)
        if with_kernels:
            # the range's longest-running kernel is named; its launches and time are all kernels'
            cols += [
                Column("Top op" if cpu else "Top kernel"),
                Column("Launches" if not cpu else "Ops", justify="right"),
                Column(f"{inner} ({inside.name})", justify="right"),
            ]
        range_rows: list[list[Any]] = []
        range_kernels = distinct_short_names([r.kernel_full for r in result.ranges])
        for r, kernel in zip(result.ranges, range_kernels, strict=True):
            row: list[Any] = [r.name, r.calls if r.calls is not None else "", _cell(own, r.range_ns)]
            if with_kernels:
                row += [
                    kernel or r.kernel or "",
                    r.kernel_instances if r.kernel_instances is not None else "",
                    _cell(inside, r.gpu_ns),
                ]
            range_rows.append(row)
        table(
            env,
            cols,
            range_rows,
            title="NVTX ranges" if result.profiler == "nsys" else "Labelled ranges (record_function)",
        )
        blank(env)
    if result.cuda_api:
        shown = result.cuda_api[:top]
        total = units.time_unit(_secs(a.total_ns) for a in shown)
        avg = units.time_unit(_secs(a.avg_ns) for a in shown)
        cols = [
            Column("Time", justify="right"),
            Column(f"Total ({total.name})", justify="right"),
            Column("Calls", justify="right"),
            Column(f"Avg ({avg.name})", justify="right"),
            Column("Name"),
        ]
        api_rows: list[list[Any]] = [
            [_pct_cell(a.pct), _cell(total, a.total_ns), a.calls, _cell(avg, a.avg_ns), a.name] for a in shown
        ]
        table(env, cols, api_rows, title="CUDA API calls (time on the CPU), by total time")
        if len(result.cuda_api) > top:
            lines(env, [f"... and {len(result.cuda_api) - top} more calls (in --json)"], bullet="")
        blank(env)
    if result.memory_ops:
        total = units.time_unit(_secs(m.total_ns) for m in result.memory_ops)
        size = units.size_unit(m.bytes for m in result.memory_ops)
        cols = [
            Column("Operation"),
            Column("Count", justify="right"),
            Column(f"Total ({total.name})", justify="right"),
            Column(f"Size ({size.name})", justify="right"),
        ]
        # nsys prints sizes in MB with three decimals: 0.000 is under 500 bytes, not none
        mem_rows: list[list[Any]] = [
            [
                m.operation,
                m.count,
                _cell(total, m.total_ns),
                "" if m.bytes is None else ("~0" if m.bytes == 0 and m.count else size.value(m.bytes)),
            ]
            for m in result.memory_ops
        ]
        table(env, cols, mem_rows, title="Memory operations on the GPU")
        blank(env)
    if result.steps is not None:
        if result.trace_summary is not None:
            lines(env, [dd.trace_line(result.trace_summary, result.device_type == "cpu")], bullet="")
        step_groups(env, result.steps, cpu=result.device_type == "cpu", title="Steps (from the GPU trace)")
        note_lines(env, result.trace_notes or [])
        blank(env)
    if result.lesson:
        heading(env, "The lesson")
        lines(env, result.lesson)
    if result.notes:
        blank(env)
        note_lines(env, result.notes)
    if result.trace:
        blank(env)
        where = f"{result.run_dir}/{result.trace}" if result.run_dir else result.trace
        lines(
            env,
            [f"profiler trace: {where} (open it in Perfetto, https://ui.perfetto.dev, or chrome://tracing)"],
            bullet="",
        )
    if result.run_id:
        blank(env)
        lines(
            env, [f"run {result.run_id} stored" + (f": {', '.join(result.files)}" if result.files else "")], bullet=""
        )


def ncu(env: Env, result: NcuResult) -> None:
    heading(env, f"Nsight Compute on {result.source}")
    report_table(env, ncu_table(result))
    blank(env)
    heading(env, "Verdict")
    named = zip(distinct_short_names([k.name for k in result.kernels]), result.kernels, strict=True)
    lines(env, [f"{name}: {k.verdict}" for name, k in named])
    if result.notes:
        blank(env)
        note_lines(env, result.notes)
    if result.run_id:
        blank(env)
        lines(env, [f"run {result.run_id} stored"], bullet="")
