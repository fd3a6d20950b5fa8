"""Drawing typed results for people. Rich on a terminal; plain, stable columns otherwise.

Every function takes the `Env` and a result model; none computes anything.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from datetime import timezone
from typing import TYPE_CHECKING, Any

import yaml

from nsightlab.analysis import units
from nsightlab.analysis.decode import DecodeResult, GroupSteps, TraceResult
from nsightlab.analysis.fleet import FleetResult
from nsightlab.analysis.ncu import NcuResult
from nsightlab.analysis.pods import human_duration
from nsightlab.analysis.profile import ProfileResult, ops_label
from nsightlab.analysis.sweep import SweepResult
from nsightlab.configure import ConfigView
from nsightlab.parse.names import distinct_short_names
from nsightlab.present import decodedoc as dd
from nsightlab.present.doc import Bullets, Para, Table
from nsightlab.present.fleetview import fleet_tables, log_tails
from nsightlab.present.reportsections import floor_table
from nsightlab.present.safe import rich_text, terminal_safe
from nsightlab.present.text import (
    SPREAD_NOTE,
    compare_heading,
    compare_lines,
    compare_table,
    impls_heading,
    impls_lines,
    impls_table,
    ncu_table,
    sweep_heading,
    sweep_summary_lines,
    sweep_table,
)

if TYPE_CHECKING:
    from nsightlab.analysis.doctor import DoctorReport
    from nsightlab.analysis.fleet import FleetStatusReport
    from nsightlab.analysis.inventory import NodeDetail, NodesReport, PodDetail, PodsReport
    from nsightlab.analysis.labpod import (
        CleanupReport,
        CopyResult,
        EventsReport,
        LabPod,
        StatusReport,
    )

    # the result models load only when a stored result is read, not for every store access
    from nsightlab.analysis.ncu import NcuResult
    from nsightlab.analysis.profile import KernelLine, ProfileResult
    from nsightlab.analysis.rates import Rates
    from nsightlab.analysis.roofline import DecodeFloor
    from nsightlab.analysis.sweep import SweepCompare, SweepImpls, SweepResult
    from nsightlab.present.console import Env
    from nsightlab.present.doc import ReportDoc, ReportFiles
    from nsightlab.present.doc import Table as ReportTable
    from nsightlab.runs.listing import RemovedRuns, RunDetail, RunLine, RunsList


class Column:
    def __init__(
        self, header: str, *, justify: str = "left", style: str | None = None, max_width: int | None = None
    ) -> None:
        self.header = header
        self.justify = justify
        self.style = style
        self.max_width = max_width


def table(env: Env, columns: Sequence[Column], rows: Sequence[Sequence[Any]], *, title: str | None = None) -> None:
    """A table on stdout: a Rich table on a terminal, aligned plain text otherwise. Every
    cell and the title are shown through `terminal_safe` (names in them come from traces
    and clusters), and Rich reads no markup in them."""
    cells = [["" if v is None else terminal_safe(v) for v in row] for row in rows]
    if env.out_tty:
        # Rich loads only when something is drawn on a terminal
        from rich.table import Table
        from rich.text import Text

        t = Table(
            title=rich_text(title) if title else None,
            title_justify="left",
            header_style="bold",
            box=None,
            pad_edge=False,
        )
        for c in columns:
            t.add_column(Text(c.header), justify=c.justify, style=c.style, max_width=c.max_width, overflow="fold")  # type: ignore[arg-type]
        for row in cells:
            t.add_row(*(Text(cell) for cell in row))
        env.out.print(t)
        return
    env.write(plain_table(columns, cells, title=terminal_safe(title) if title else None))


def plain_table(columns: Sequence[Column], cells: Sequence[Sequence[str]], *, title: str | None = None) -> str:
    """Aligned columns, two spaces apart, no trailing blanks (like kubectl's output)."""
    widths = [len(c.header) for c in columns]
    for row in cells:
        for i, v in enumerate(row):
            if len(v) > widths[i]:
                widths[i] = len(v)
    last = len(columns) - 1
    # one format string for every row: formatting runs in C, not per cell in Python
    spec = "  ".join(
        f"{{:>{w}}}" if c.justify == "right" else ("{}" if i == last else f"{{:<{w}}}")
        for i, (c, w) in enumerate(zip(columns, widths, strict=True))
    )
    lines = [title] if title else []
    lines.append(spec.format(*(c.header for c in columns)).rstrip())
    lines.extend(spec.format(*row).rstrip() for row in cells)
    return "\n".join(lines) + "\n"


def heading(env: Env, text: str) -> None:
    if env.out_tty:
        env.out.print(rich_text(text, style="bold"))
    else:
        env.write(terminal_safe(text) + "\n")


def lines(env: Env, items: Sequence[str], *, bullet: str = "- ") -> None:
    for item in items:
        if env.out_tty:
            env.out.print(rich_text(bullet + item), highlight=False)
        else:
            env.write(bullet + terminal_safe(item) + "\n")


def blank(env: Env) -> None:
    env.write("\n")


# ---------------------------------------------------------------------------- explore


def nodes(env: Env, report: NodesReport) -> None:
    cols = [
        Column("NAME"),
        Column("INSTANCE-TYPE"),
        Column("GPU"),
        Column("PRODUCT"),
        Column("ALLOC", justify="right"),
        Column("USED", justify="right"),
        Column("FREE", justify="right"),
        Column("STATUS"),
        Column("AGE", justify="right"),
    ]
    rows = [
        [
            n.name,
            n.instance_type or "<none>",
            "yes" if n.gpu else "",
            n.gpu_product or "",
            n.gpu_allocatable if n.gpu else "",
            n.gpu_requested if n.gpu else "",
            n.gpu_free if n.gpu else "",
            n.status,
            n.age,
        ]
        for n in report.nodes
    ]
    table(env, cols, rows)
    blank(env)
    type_cols = [
        Column("NODES", justify="right"),
        Column("INSTANCE-TYPE"),
        Column("GPU PRODUCT"),
        Column("GPUS", justify="right"),
        Column("USED", justify="right"),
        Column("FREE", justify="right"),
    ]
    type_rows = [
        [
            t.nodes,
            t.instance_type,
            t.gpu_product or "",
            t.gpu_allocatable or "",
            t.gpu_requested if t.gpu_allocatable else "",
            t.gpu_free if t.gpu_allocatable else "",
        ]
        for t in report.instance_types
    ]
    table(env, type_cols, type_rows, title="Nodes per instance type")
    blank(env)
    total = len(report.nodes)
    summary = f"{total} nodes, {report.gpu_nodes} with GPUs. "
    if report.lab_nodes:
        summary += (
            f"{report.lab_gpus_free} GPU{'s' if report.lab_gpus_free != 1 else ''} of the lab's instance type "
            f"{report.lab_instance_type} free right now (on {report.lab_nodes} "
            f"node{'s' if report.lab_nodes != 1 else ''})."
        )
    else:
        summary += (
            f"No node of the lab's instance type {report.lab_instance_type} in this cluster (set lab.instance_type "
            "in config.yaml)."
        )
    lines(env, [summary], bullet="")


def pods(env: Env, report: PodsReport) -> None:
    cols = [
        Column("NAMESPACE"),
        Column("NAME"),
        Column("READY"),
        Column("STATUS"),
        Column("RESTARTS", justify="right"),
        Column("AGE", justify="right"),
        Column("NODE"),
        Column("GPUS", justify="right"),
    ]
    rows = [
        [p.namespace, p.name, p.ready, p.status, p.restarts, p.age, p.node or "<none>", p.gpus or ""]
        for p in report.pods
    ]
    if report.namespace is not None:
        cols = cols[1:]
        rows = [row[1:] for row in rows]
    table(env, cols, rows)
    if not report.pods:
        where = f"namespace {report.namespace}" if report.namespace else "any namespace"
        what = f" matching '{report.match}'" if report.match else ""
        env.note(f"No pods{what} in {where}.")


def _resources(d: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items()) or "-"


def pod_detail(env: Env, d: PodDetail) -> None:
    heading(env, f"Pod {d.namespace}/{d.name}: {d.status}, ready {d.ready}")
    where = d.node or "<not scheduled>"
    if d.instance_type:
        where += f" ({d.instance_type}{', ' + d.gpu_product if d.gpu_product else ''})"
    lines(env, [f"node: {where}", f"GPUs held: {d.gpus}"])
    blank(env)
    cols = [
        Column("CONTAINER"),
        Column("KIND"),
        Column("RESTART-POLICY"),
        Column("GPU", justify="right"),
        Column("LIMITS"),
        Column("REQUESTS"),
    ]
    rows = [
        [
            c.name + (" *" if c.holds_gpu else ""),
            c.kind,
            c.restart_policy or "",
            c.gpus or "",
            _resources(c.limits),
            _resources(c.requests),
        ]
        for c in d.init_containers + d.containers
    ]
    table(env, cols, rows)
    if any(c.holds_gpu for c in d.init_containers + d.containers):
        lines(env, ["* holds a GPU"], bullet="")
    blank(env)
    heading(env, "What to notice")
    lines(env, d.notes)


def node_detail(env: Env, d: NodeDetail) -> None:
    heading(env, f"Node {d.name}: {d.instance_type or '<no instance type>'}, {d.status}")
    facts = [
        f"GPU: {d.gpu_product or 'none'}; allocatable {d.gpu_allocatable}, requested {d.gpu_requested}, free "
        f"{d.gpu_free}"
    ]
    facts.append("taints: " + (", ".join(d.taints) or "none"))
    facts.append("allocatable: " + _resources(d.allocatable))
    lines(env, facts)
    if d.gpu_labels:
        blank(env)
        heading(env, "GPU labels")
        lines(env, [f"{k}={v}" for k, v in sorted(d.gpu_labels.items())])
    blank(env)
    cols = [
        Column("NAMESPACE"),
        Column("POD"),
        Column("READY"),
        Column("STATUS"),
        Column("GPUS", justify="right"),
        Column("AGE", justify="right"),
    ]
    if d.pods:
        table(
            env,
            cols,
            [[p.namespace, p.name, p.ready, p.status, p.gpus or "", p.age] for p in d.pods],
            title=f"Pods on {d.name}",
        )
    else:
        lines(env, [f"no pods on {d.name}"], bullet="")
    blank(env)
    heading(env, "What to notice")
    lines(env, d.notes)


# ---------------------------------------------------------------------------- lab pod


def _left(seconds: int | None) -> str:
    if seconds is None:
        return "?"

    return human_duration(seconds)


def lab_pod(env: Env, lab: LabPod, *, title: str) -> None:
    heading(env, title)
    facts = [
        f"context: {lab.context} ({lab.server or '?'}), namespace {lab.namespace}",
        f"pod: {lab.pod}: {lab.status}{', ready' if lab.ready else ''}",
        f"node: {lab.node or '<not scheduled>'}" + (f", {lab.instance_type}" if lab.instance_type else ""),
        f"GPU: {lab.gpu_product or ('model not known' if lab.node else 'none yet')}",
    ]
    if lab.scheduler:  # the scheduler's words: shown escaped, as every fact line is
        facts.append(f"scheduler: {lab.scheduler}")
    if lab.clock_ahead_s is not None:
        start = lab.started or lab.created
        life = f" {human_duration((lab.deadline - start).total_seconds())}" if lab.deadline and start else ""
        facts.append(
            f"deletes itself{life} after it started (activeDeadlineSeconds); the server's clock is ahead of this "
            f"machine's by {human_duration(lab.clock_ahead_s)}, so how long is left cannot be told from here"
        )
    elif lab.deadline:
        facts.append(
            f"deletes itself in {_left(lab.seconds_left)} (activeDeadlineSeconds, at {lab.deadline:%H:%M} UTC)"
        )
    lines(env, facts)
    if lab.next_steps:
        blank(env)
        heading(env, "Next")
        lines(env, lab.next_steps, bullet="  ")


def status(env: Env, report: StatusReport) -> None:
    if report.gone or report.lab is None:
        if report.note:
            lines(env, [f"{report.note}; the session was cleared (context {report.context})."], bullet="")
            return
        lines(
            env,
            [
                f"lab pod {report.pod} is gone (context {report.context}, namespace {report.namespace}); the "
                "session was cleared."
            ],
            bullet="",
        )
        if report.next_steps:
            lines(env, [f"start a new one with `{step}`" for step in report.next_steps], bullet="")
        return
    lab_pod(env, report.lab, title="Lab pod")


def cleanup(env: Env, report: CleanupReport) -> None:
    if report.context is None:
        return  # nothing was looked for: the note on stderr said so
    out = [f"deleted {name}" for name in report.deleted]
    if report.all_mine and not report.deleted:
        out.append(f"there were no lab pods of {report.owner} in {report.namespace}")
    else:
        out += [f"{name} was already gone" for name in report.already_gone]
    out += [f"left {name} alone (not yours)" for name in report.skipped]
    f = report.fleets
    if f is not None:
        out += [f"deleted fleet {fid}" for fid in f.fleets]
        out += [
            f"deleted {kind} {name}" for kind, names in (("job", f.jobs), ("configmap", f.configmaps)) for name in names
        ]
        out += [f"left {name} alone (not yours)" for name in f.skipped]
    lines(env, out or ["nothing to delete"], bullet="")


def events(env: Env, report: EventsReport) -> None:
    """The pod's Events as `kubectl describe pod` lists them."""
    where = f"pod {report.pod} (context {report.context}, namespace {report.namespace})"
    if report.gone:
        lines(env, [f"{where} is gone; the events still kept about that name:"], bullet="")
    if not report.events:
        lines(env, [f"no events for {where} (the API server keeps them about an hour)"], bullet="")
        return
    cols = [Column("TYPE"), Column("REASON"), Column("AGE"), Column("FROM"), Column("MESSAGE")]
    table(
        env, cols, [[e.type, e.reason, e.age, e.source, e.message] for e in report.events], title=f"Events of {where}"
    )


def doctor(env: Env, report: DoctorReport) -> None:
    heading(env, f"doctor: context {report.context}, server {report.server or '?'}, namespace {report.namespace}")
    for c in report.checks:
        mark = {True: "pass", False: "FAIL", None: "info"}[c.ok]
        style = {True: "green", False: "bold red", None: "dim"}[c.ok]
        text = terminal_safe(f"{c.name}: {c.detail}")  # the details quote the server's answers
        if env.out_tty:
            from rich.text import Text

            env.out.print(Text.assemble((f"{mark:4}", style), "  ", text), highlight=False)
        else:
            env.write(f"{mark:4}  {text}\n")
        if c.fix and c.ok is not True:
            lines(env, [f"fix: {c.fix}"], bullet="      ")


def copy_result(env: Env, result: CopyResult) -> None:
    """'copied 3 files, 1.50 MiB to :/tmp/ in 0.250 s (6.00 MiB/s)': nsightlab.analysis.units."""
    rate = f" ({units.size(result.bytes / result.seconds)}/s)" if result.seconds > 0 else ""
    lines(
        env,
        [
            f"copied {result.files} file{'s' if result.files != 1 else ''}, {units.size(result.bytes)} to "
            f"{result.destination} in {units.duration(result.seconds)}{rate}, sha256 verified"
        ],
        bullet="",
    )


# ---------------------------------------------------------------------------- profile


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
    if result.kernels or result.profiler != "none":
        kernel_table(env, result.kernels, top=top, title=title, what=what)
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
            cols += [
                Column("Op" if cpu else "Kernel"),
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
        lines(env, [f"note: {n}" for n in result.trace_notes or []], bullet="")
        blank(env)
    if result.lesson:
        heading(env, "The lesson")
        lines(env, result.lesson)
    if result.notes:
        blank(env)
        lines(env, [f"note: {n}" for n in result.notes], bullet="")
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


# ---------------------------------------------------------------------------- ncu


def ncu(env: Env, result: NcuResult) -> None:
    heading(env, f"Nsight Compute on {result.source}")
    report_table(env, ncu_table(result))
    blank(env)
    heading(env, "Verdict")
    named = zip(distinct_short_names([k.name for k in result.kernels]), result.kernels, strict=True)
    lines(env, [f"{name}: {k.verdict}" for name, k in named])
    if result.notes:
        blank(env)
        lines(env, [f"note: {n}" for n in result.notes], bullet="")
    if result.run_id:
        blank(env)
        lines(env, [f"run {result.run_id} stored"], bullet="")


# ---------------------------------------------------------------------------- sweep

#: Width of the bar column, in character cells, for the largest TB/s.
BAR_WIDTH = 24
_EIGHTHS = " ▏▎▍▌▋▊▉█"


def bar(value: float, top: float, *, width: int = BAR_WIDTH, unicode: bool = True) -> str:
    """A horizontal bar, `width` cells at `top`: eighth blocks, or '#' without Unicode."""
    if top <= 0 or value <= 0:
        return ""
    cells = max(0.0, min(1.0, value / top)) * width
    if not unicode:
        return "#" * max(1, round(cells))
    full, part = int(cells), int((cells - int(cells)) * 8)
    text = "█" * full + (_EIGHTHS[part] if part else "")
    return text or "▏"


def _unicode_ok(env: Env) -> bool:
    return (env.out.encoding or "").lower().replace("-", "").startswith("utf")


def sweep(env: Env, result: SweepResult) -> None:
    """The sweep table (size, tensor, time per call and its spread, TB/s, % of spec,
    regime, bar), summary and lesson: the report's own table (`present.text`)."""
    s = result.summary
    heading(env, sweep_heading(result))
    blank(env)
    if result.rows:
        report_table(env, sweep_table(result))
        lines(env, [SPREAD_NOTE], bullet="")
    else:
        lines(env, ["no size was measured"], bullet="")
    blank(env)
    heading(env, "Summary")
    lines(env, sweep_summary_lines(result))
    if s.lesson:
        blank(env)
        heading(env, "What it means")
        lines(env, s.lesson)
    if s.notes:
        blank(env)
        heading(env, "Notes")
        lines(env, s.notes)
    if result.compare is not None:
        blank(env)
        sweep_compare(env, result.compare)
    if result.run_id:
        blank(env)
        lines(env, [f"stored as run {result.run_id} ({result.run_dir})"], bullet="")


def sweep_compare(env: Env, cmp: SweepCompare) -> None:
    """The float16 vs float32 check: sizes side by side, ratios, spreads, and the verdict."""
    heading(env, compare_heading(cmp))
    lines(env, [cmp.prediction], bullet="")
    if cmp.pairs:
        blank(env)
        report_table(env, compare_table(cmp))
        blank(env)
    lines(env, compare_lines(cmp))


def sweep_impls(env: Env, impls: SweepImpls) -> None:
    """torch and Triton side by side: each run's table is stored; here the pair per size,
    the launch floors and plateaus, what it teaches, and the verdict."""
    heading(env, impls_heading(impls))
    blank(env)
    report_table(env, impls_table(impls))
    lines(env, [SPREAD_NOTE, "TRITON/TORCH: Triton's time per call / torch's (below 1x: Triton is faster)."], bullet="")
    for run in impls.runs:
        blank(env)
        heading(env, f"{run.impl}, run {run.run_id or '-'}")
        lines(env, sweep_summary_lines(run))
    blank(env)
    heading(env, "What it means")
    lines(env, impls_lines(impls))
    notes = [n for run in impls.runs for n in run.summary.notes]
    if notes:
        blank(env)
        heading(env, "Notes")
        lines(env, list(dict.fromkeys(notes)))
    blank(env)
    lines(env, [f"stored as runs {', '.join(f'{r.run_id} ({r.impl})' for r in impls.runs)}"], bullet="")


# ---------------------------------------------------------------------------- decode, step anatomy


def decode(env: Env, result: DecodeResult) -> None:
    """Where a token's time goes: per mode and batch, the top kernels, the verdicts, the
    batch sweep against the roofline, what it means, and the notes."""
    heading(env, f"Decode: {dd.decode_heading(result)}")
    lines(env, dd.decode_facts(result), bullet="")
    blank(env)
    report_table(env, dd.decode_modes_table(result, title="Per mode and batch (each row its median step)"))
    lines(env, dd.decode_step_lines(result), bullet="")
    for t in dd.decode_kernel_tables(result):
        blank(env)
        report_table(env, t)
    blank(env)
    heading(env, "Verdict")
    lines(env, dd.decode_verdicts(result))
    if result.batch_sweep:
        blank(env)
        report_table(
            env,
            dd.batch_sweep_table(result.batch_sweep, title="Batch sweep: tokens/s against the roofline's prediction"),
        )
    if result.lesson:
        blank(env)
        heading(env, "What it means")
        lines(env, result.lesson)
    if result.notes:
        blank(env)
        lines(env, [f"note: {n}" for n in result.notes], bullet="")
    if result.run_id:
        blank(env)
        lines(env, [f"run {result.run_id} stored"], bullet="")


def step_groups(env: Env, groups: Sequence[GroupSteps], *, cpu: bool, title: str = "Steps") -> None:
    """`analyze`'s step anatomy: a row per group of steps (its median step), what the row
    does not hold, their top kernels, verdicts."""
    if not groups:
        lines(env, ["no steps found in the trace (the notes say why)"], bullet="")
        return
    report_table(
        env,
        dd.steps_table(
            ["GROUP", "PHASE"],
            [[g.group or "(all steps)", g.phase] for g in groups],
            list(groups),
            None,
            cpu=cpu,
            title=f"{title} (each row its median step)",
        ),
    )
    lines(env, [x for g in groups for x in dd.step_lines(dd.group_name(g), g, cpu=cpu)], bullet="")
    for g in groups[:4]:
        t = dd.top_kernels_table(
            g, cpu=cpu, title=f"Top {'CPU ops' if cpu else 'kernels'} of the median step, by kind: {dd.group_name(g)}"
        )
        if t is not None:
            blank(env)
            report_table(env, t)
    if len(groups) > 4:
        lines(env, [f"... and {len(groups) - 4} more groups (all of them in --json)"], bullet="")
    blank(env)
    heading(env, "Verdict")
    lines(env, [f"{dd.group_name(g)}: {g.verdict.text}. Next: {g.verdict.next_step}." for g in groups])


def trace_result(env: Env, result: TraceResult) -> None:
    """`analyze` on a trace alone."""
    cpu = dd.is_cpu(result.device)
    heading(
        env,
        f"Trace {result.source} ({'Kineto' if result.input == 'kineto' else 'nsys exports'}): "
        f"{result.device or 'unknown device'}",
    )
    lines(env, [dd.trace_line(result.trace, cpu)], bullet="")
    blank(env)
    step_groups(env, result.steps, cpu=cpu)
    if not result.steps and result.kernels:  # no steps: the trace's kernels, as a kernel summary lists them
        blank(env)
        report_table(env, dd.trace_kernels_table(result.kernels, cpu=cpu))
    if result.notes:
        blank(env)
        lines(env, [f"note: {n}" for n in result.notes], bullet="")


# ---------------------------------------------------------------------------- runs, report, roofline


def _when(dt: Any) -> str:

    return f"{dt.astimezone(timezone.utc):%Y-%m-%d %H:%M}"


def runs_list(env: Env, listing: RunsList) -> None:
    """Stored runs, oldest first: id, kind, name, when (UTC), where, node, device, dtype, headline."""
    cols = [
        Column("ID"),
        Column("KIND"),
        Column("NAME"),
        Column("WHEN (UTC)"),
        Column("WHERE"),
        Column("NODE"),
        Column("DEVICE"),
        Column("DTYPE"),
        Column("HEADLINE"),
    ]
    rows = [
        [r.id, r.kind, r.name, _when(r.created), r.where, r.node or "", r.device or "", r.dtype or "", _state(r)]
        for r in listing.runs
    ]
    if not rows:
        lines(
            env,
            [f"no runs yet in {listing.runs_dir} (make one with `nsightlab profile lesson1` or `nsightlab sweep`)"],
            bullet="",
        )
        return
    table(env, cols, rows)


def _state(r: RunLine) -> str:
    """The headline of a complete run, else what is wrong with it."""
    if r.complete:
        return r.headline or ""
    if r.damaged:
        return f"(damaged: {r.problem})"
    return "(did not finish)" if r.problem in (None, "did not finish") else f"({r.problem})"


def run_detail(env: Env, detail: RunDetail) -> None:
    """One run: where and how it ran, its files, then its result as the live command shows it."""
    m = detail.meta
    heading(env, f"Run {m.id}: {m.kind} {m.name}, {_when(m.created)} UTC")
    facts = [
        f"folder: {detail.path}",
        f"target: {m.target}" + (f" (context {m.context}, namespace {m.namespace})" if m.context else ""),
    ]
    for label, value in (
        ("node", m.node),
        ("instance type", m.instance_type),
        ("node's GPU (its label)", m.node_gpu),
        ("device", detail.run.device),
        ("--device", m.device_requested),
        ("image", m.image),
        ("dtype", m.dtype),
        ("headline", m.headline),
        ("lab session (pod uid)", m.session_uid),
    ):
        if value:
            facts.append(f"{label}: {value}")
    versions = ", ".join(f"{k} {v}" for k, v in m.versions.items() if v)
    if versions:
        facts.append(f"versions: {versions}")
    if m.command:
        facts.append(f"command: {shlex.join(m.command)}")
    lines(env, facts)
    blank(env)
    table(
        env,
        [Column("FILE"), Column("BYTES", justify="right")],
        [[f.path, f"{f.bytes:,}"] for f in detail.files],
        title="Files",
    )
    if detail.result is None:
        blank(env)
        lines(env, ["no result.json: the run did not finish"], bullet="")
        return

    blank(env)
    kind = detail.result.get("kind")
    if kind == "profile":
        profile(env, ProfileResult.model_validate(detail.result))
    elif kind == "sweep":
        sweep(env, SweepResult.model_validate(detail.result))
    elif kind == "ncu":
        ncu(env, NcuResult.model_validate(detail.result))
    elif kind == "fleet":
        fleet(env, FleetResult.model_validate(detail.result))
    elif kind == "decode":
        decode(env, DecodeResult.model_validate(detail.result))


def runs_removed(env: Env, removed: RemovedRuns) -> None:
    lines(
        env,
        [f"removed run {r.id} ({r.kind} {r.name}, {r.folder})" for r in removed.removed] or ["nothing removed"],
        bullet="",
    )


def decode_floor(env: Env, floor: DecodeFloor) -> None:
    """The per-token floor, measured and spec side by side."""

    heading(env, f"Decode floor for {floor.weights_gb:g} GB of weights (one token, batch 1: weight bytes / bandwidth)")
    report_table(env, floor_table(floor))
    blank(env)
    lines(env, floor.summary)
    if floor.notes:
        lines(env, [f"note: {n}" for n in floor.notes])


def report_table(env: Env, t: ReportTable) -> None:
    """A report table; with bars (sweeps), a BAR column scaled to the largest value."""
    cols = [Column(c, justify="right" if r else "left") for c, r in zip(t.columns, t.right, strict=True)]
    rows: list[list[Any]] = [list(row) for row in t.rows]
    if t.bars is not None:
        cols.append(Column("BAR"))
        top = max(t.bars, default=0.0)
        uni = _unicode_ok(env)
        for row, value in zip(rows, t.bars, strict=True):
            row.append(bar(value, top, unicode=uni))
    table(env, cols, rows, title=t.title)


def report_doc(env: Env, doc: ReportDoc) -> None:
    """The report in the terminal: the same sections as the HTML, bars instead of figures."""

    heading(env, doc.title)
    lines(env, [f"made {_when(doc.created)} UTC"], bullet="")
    for sec in doc.sections:
        blank(env)
        heading(env, sec.heading if sec.level == 2 else f"· {sec.heading}")
        for item in sec.items:
            if isinstance(item, Para):
                lines(env, [item.text], bullet="")
            elif isinstance(item, Bullets):
                lines(env, item.items)
            elif isinstance(item, Table):
                report_table(env, item)
                blank(env)
    if doc.notes:
        blank(env)
        heading(env, "Notes")
        lines(env, doc.notes)


def report_files(env: Env, files: ReportFiles) -> None:
    out = [f"report: {files.html}", f"markdown: {files.markdown}"]
    for f in files.figures:
        out.append(f"figure: {f.png} (and .svg)")
    lines(env, out, bullet="")
    if files.notes:
        lines(env, [f"note: {n}" for n in files.notes], bullet="")


# ---------------------------------------------------------------------------- fleet


def fleet(env: Env, result: FleetResult) -> None:
    """A fleet's result: its Jobs, its types, the notes, the failed Jobs' last log lines."""
    n = len(result.types)
    heading(
        env,
        f"Fleet {result.fleet_id}: {result.dtype} bandwidth sweep on {n} instance type{'s' if n != 1 else ''} "
        f"(context {result.context}, namespace {result.namespace})",
    )
    for t in fleet_tables(result):
        blank(env)
        report_table(env, t)
    if result.notes:
        blank(env)
        heading(env, "Notes")
        lines(env, result.notes)
    tails = log_tails(result)
    if tails:
        blank(env)
        heading(env, "The failed Jobs' last log lines")
        lines(env, tails, bullet="")
    blank(env)
    lines(
        env,
        [
            f"stored as run {result.fleet_id} (`nsightlab runs show {result.fleet_id}`; `nsightlab report "
            f"{result.fleet_id}` draws the curves)"
        ],
        bullet="",
    )


def fleet_status(env: Env, report: FleetStatusReport, *, where: str = "") -> None:
    """`fleet status`: this owner's fleets, their age and Jobs by phase; `where` is the
    context options its commands need (`--context stg -n serving`)."""
    if not report.fleets:
        lines(
            env, [f"no fleet of {report.owner} in namespace {report.namespace} (context {report.context})"], bullet=""
        )
        return
    cols = [
        Column(c, justify="left" if c == "FLEET" else "right")
        for c in ("FLEET", "AGE", "WAITING", "PENDING", "RUNNING", "SUCCEEDED", "FAILED")
    ]
    rows = [
        [
            f.fleet_id,
            f.age,
            str(f.jobs.waiting) if f.planned is not None else "?",
            str(f.jobs.pending),
            str(f.jobs.running),
            str(f.jobs.succeeded),
            str(f.jobs.failed),
        ]
        for f in report.fleets
    ]
    table(env, cols, rows)
    blank(env)
    first = report.fleets[0].fleet_id
    opts = f" {where}" if where else ""
    lines(
        env,
        [
            f"collect {'it' if len(report.fleets) == 1 else first} with `nsightlab fleet collect {first}{opts}`, "
            f"remove it with `nsightlab cleanup --fleet {first}{opts}`"
            + ("" if len(report.fleets) == 1 else " (the same for the others, by their id)")
        ],
        bullet="",
    )


# ---------------------------------------------------------------------------- config


def config_view(env: Env, view: ConfigView) -> None:
    state = "" if view.exists else " (does not exist: all defaults; create it with `nsightlab init`)"
    lines(env, [f"config file: {view.path}{state}", f"home: {view.home}"], bullet="")
    blank(env)
    cols = [Column("KEY"), Column("VALUE"), Column("FROM")]
    table(env, cols, [[v.key, _config_value(v.value), v.source] for v in view.values])
    blank(env)
    lines(env, ["protected context patterns: " + ", ".join(view.protected_patterns)], bullet="")
    if view.placeholders:
        lines(env, [f"still to fill in: {', '.join(view.placeholders)}"], bullet="")


def _config_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):  # YAML's words, as a person writes them in config.yaml
        return "yes" if value else "no"
    if isinstance(value, (dict, list)):
        return (
            yaml.safe_dump(value, default_flow_style=True).strip()
            if value
            else ("{}" if isinstance(value, dict) else "[]")
        )
    return str(value)
