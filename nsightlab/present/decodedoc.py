"""A decode run and a trace's steps as the report's tables and paragraphs, every number
written by `nsightlab.units`. The terminal (`decodeview.decode`, `decodeview.step_groups`)
and the report (`report._decode_sections`) draw the same tables."""

from __future__ import annotations

from collections.abc import Sequence

from nsightlab import units
from nsightlab.analysis.decode_models import BatchPoint, DecodeResult, DecodeSteps, GroupSteps
from nsightlab.analysis.steps import TraceKernel, TraceSummary
from nsightlab.parse.names import distinct_short_names
from nsightlab.present.docblocks import Table

SOURCE_WORDS = {
    "nvtx": "NVTX decode_step ranges (Nsight Systems)",
    "record_function": "record_function ranges (torch.profiler)",
    "repeating-sequence": "inferred from a repeating kernel sequence",
    "script": "the script's own step timing (no trace)",
    "engine-range": "the serving engine's own step ranges",
    "step-range": "the ranges --step-range named",
}
#: Kernels listed per step in the top-kernel tables.
TOP_KERNELS = 8


def _time_cells(values_ms: Sequence[float | None]) -> tuple[str, list[str]]:
    """One unit for a column of milliseconds (units.time_unit): its name and the cells."""
    unit = units.time_unit([v / 1e3 for v in values_ms if v is not None])
    return unit.name, ["" if v is None else unit.value(v / 1e3) for v in values_ms]


def is_cpu(device: str | None) -> bool:
    return (device or "").startswith("cpu")


def steps_table(
    label_columns: Sequence[str],
    labels: Sequence[Sequence[str]],
    steps: Sequence[DecodeSteps],
    tokens_per_s: Sequence[float | None] | None,
    *,
    cpu: bool,
    title: str | None = None,
) -> Table:
    """Step objects side by side, each row one step (the group's median step) with its own
    time, kernels, busy share and idle split, beside the P90 of the step times and the
    floor. Columns with nothing in them (no trace, no floor, no wait) are left out."""
    med_u, med = _time_cells([s.step_ms.median for s in steps])
    p90_u, p90 = _time_cells([s.step_ms.p90 for s in steps])
    idle = [s.idle_ms_per_step for s in steps]
    gap = units.time_unit(
        [x / 1e3 for i in idle if i for x in (i.between_kernels, i.before_first, i.after_last, i.waiting_for_host)]
    )
    floor_u, floors = _time_cells([s.floor.floor_ms if s.floor else None for s in steps])
    traced = any(i is not None for i in idle)
    waited = any(i is not None and i.waiting_for_host > 0 for i in idle)
    floored = any(s.floor is not None for s in steps)
    columns = [*label_columns, f"STEP ({med_u})", f"P90 ({p90_u})"]
    if tokens_per_s is not None:
        columns.append("TOKENS/S")
    if traced:
        columns += ["OPS/STEP" if cpu else "KERNELS/STEP", "CPU BUSY" if cpu else "GPU BUSY"]
        if waited:
            columns.append(f"WAITING FOR HOST ({gap.name})")
        columns += [f"IDLE BETWEEN ({gap.name})", f"QUEUED BEFORE FIRST ({gap.name})", f"AFTER LAST ({gap.name})"]
    if floored:
        columns += [f"FLOOR ({floor_u})", "x FLOOR"]
    columns.append("VERDICT")
    rows = []
    for k, s in enumerate(steps):
        i = s.idle_ms_per_step
        row = [*labels[k], med[k], p90[k]]
        if tokens_per_s is not None:
            tps = tokens_per_s[k]
            row.append("" if tps is None else units.sig(tps))
        if traced:
            row += [
                "" if s.kernels_per_step is None else units.count(s.kernels_per_step),
                "" if s.gpu_busy_pct is None else units.percent(s.gpu_busy_pct),
            ]
            if waited:
                row.append("" if i is None else _gap_cell(gap, i.waiting_for_host))
            row += [
                "" if i is None else _gap_cell(gap, i.between_kernels),
                "" if i is None else _gap_cell(gap, i.before_first),
                "" if i is None else _gap_cell(gap, i.after_last),
            ]
        if floored:
            ratio = units.ratio(s.step_ms.median / s.floor.floor_ms) if s.floor and s.floor.floor_ms > 0 else ""
            row += [floors[k], ratio]
        row.append(s.verdict.kind)
        rows.append(row)
    right = [False] * len(label_columns) + [True] * (len(columns) - len(label_columns) - 1) + [False]
    return Table(title=title, columns=columns, right=right, rows=rows)


# The share of a step that other work must take to be said in its line (JSON always has it).
OTHER_WORK_SHOWN = 0.01


def _gap_cell(gap: units.Unit, ms: float) -> str:
    """An idle time in its column's unit; under a thousandth of that unit (a nanosecond
    in a column of milliseconds), `<0.001` rather than a string of zeros."""
    if 0 < ms / 1e3 < gap.size / 1000:
        return "<0.001"
    return gap.value(ms / 1e3)


def step_lines(label: str, s: DecodeSteps, *, cpu: bool) -> list[str]:
    """What the table's row does not hold: the host range and GPU span beside the step
    time, graph replays, memory operations, synchronisations, the inferred periods."""
    parts = []
    if s.host_ms is not None and s.gpu_span_ms is not None:
        parts.append(
            f"host range {units.duration(s.host_ms.median / 1e3)}, {'CPU' if cpu else 'GPU'} span "
            f"{units.duration(s.gpu_span_ms.median / 1e3)} (medians over {s.count} step{'s' if s.count != 1 else ''})"
        )
    if s.graph_replays_per_step:
        parts.append(f"graph replays: {s.graph_replays_per_step} per step")
    if s.memops_per_step:
        copying = s.memops_ms_per_step or 0
        # their durations added up: on several streams at once they can outlast the step
        overlap = "; their durations added up, on several streams at once" if copying > s.step_ms.median else ""
        parts.append(
            f"memory copies and sets: {s.memops_per_step} per step, {units.duration(copying / 1e3)} "
            f"(not kernels{overlap})"
        )
    if s.syncs_per_step:
        parts.append(
            f"synchronisations: {s.syncs_per_step} per step, the host blocked "
            f"{units.duration((s.syncs_ms_per_step or 0) / 1e3)}"
        )
    if s.other_busy_ms_per_step and s.other_busy_ms_per_step >= OTHER_WORK_SHOWN * s.step_ms.median:
        other = units.duration(s.other_busy_ms_per_step / 1e3)
        parts.append(
            f"other work: for {other} of the step the {'CPU' if cpu else 'GPU'} ran only operations not its own "
            "(another step's, or launched before the profile began)"
        )
    if s.step_period is not None and s.layer_period is not None:
        parts.append(f"a step is {s.step_period} GPU operations, a layer {s.layer_period}")
    return [f"{label}: " + "; ".join(parts)] if parts else []


def top_kernels_table(
    steps: DecodeSteps, *, cpu: bool, title: str | None = None, top: int = TOP_KERNELS
) -> Table | None:
    """A step's top kernels grouped by kind (the kinds by their time), each with its
    share of the step; None without kernels."""
    kernels = steps.top_kernels[:top]
    if not kernels:
        return None
    totals: dict[str, float] = {}
    for k in kernels:
        totals[k.kind] = totals.get(k.kind, 0.0) + k.ms_per_step
    ordered = sorted(kernels, key=lambda k: (-totals[k.kind], k.kind, -k.ms_per_step))
    unit_name, times = _time_cells([k.ms_per_step for k in ordered])
    shown = distinct_short_names([k.name for k in ordered])
    rows = []
    last_kind = None
    for k, t, name in zip(ordered, times, shown, strict=True):
        rows.append([k.kind if k.kind != last_kind else "", t, units.percent(k.pct), name])
        last_kind = k.kind
    return Table(
        title=title,
        columns=["KIND", f"PER STEP ({unit_name})", "SHARE", "OP" if cpu else "KERNEL"],
        right=[False, True, True, False],
        rows=rows,
        tooltips=[k.name for k in ordered],
    )


def group_name(g: GroupSteps) -> str:
    """A group's name for the text: its enclosing ranges (or `steps`) and its phase."""
    name = g.group or "steps"  # shown escaped where drawn
    return f"{name} ({g.phase})" if g.phase != "unknown" else name


def trace_kernels_table(kernels: Sequence[TraceKernel], *, cpu: bool, top: int = 10) -> Table:
    """The trace's top kernels by total time (memory operations are not kernels)."""
    shown = list(kernels[:top])
    unit_name, totals = _time_cells([k.total_ns / 1e6 for k in shown])
    avg_name, avgs = _time_cells([k.avg_ns / 1e6 for k in shown])
    rows = [
        [t, units.percent(k.time_pct), str(k.instances), a, k.kind, name]
        for k, t, a, name in zip(shown, totals, avgs, distinct_short_names([k.name for k in shown]), strict=True)
    ]
    return Table(
        title=f"Top {'CPU ops' if cpu else 'kernels'} of the whole trace (memory operations are not kernels)",
        columns=[f"TOTAL ({unit_name})", "TIME", "CALLS", f"AVG ({avg_name})", "KIND", "OP" if cpu else "KERNEL"],
        right=[True, True, True, True, False, False],
        rows=rows,
        tooltips=[k.name for k in shown],
    )


def batch_sweep_table(sweep: Sequence[BatchPoint], title: str | None = None) -> Table:
    """Tokens/s at each batch against the roofline's prediction."""
    unit_name, times = _time_cells([p.step_ms for p in sweep])
    predicted = any(p.predicted_tokens_per_s for p in sweep)
    columns = ["BATCH", f"STEP ({unit_name})", "TOKENS/S"] + (
        ["ROOFLINE TOKENS/S", "OF ROOFLINE", "BOUND"] if predicted else []
    )
    rows = []
    for p, t in zip(sweep, times, strict=True):
        row = [str(p.batch), t, units.sig(p.tokens_per_s)]
        if predicted:
            pred = p.predicted_tokens_per_s
            row += [
                "" if pred is None else units.sig(pred),
                "" if not pred else units.percent(100 * p.tokens_per_s / pred),
                p.bound or "",
            ]
        rows.append(row)
    return Table(title=title, columns=columns, right=[True] * (len(columns) - 1) + [not predicted], rows=rows)


def trace_line(t: TraceSummary, cpu: bool) -> str:
    """The whole timeline in one sentence, each figure saying what it measures."""
    unit = "CPU" if cpu else "GPU"
    what, lanes = ("op", "thread") if cpu else ("kernel", "stream")
    what += "s" if t.kernels != 1 else ""
    busy = f"{unit} busy {units.percent(t.gpu_busy_pct)}"
    if not cpu and t.kernel_busy_pct is not None and t.memops:
        busy += f" ({units.percent(t.kernel_busy_pct)} kernels alone)"
    memops = ""
    if not cpu and t.memops:
        memops = f" and {t.memops:,} memory {'copy or set' if t.memops == 1 else 'copies and sets'}"
    return (
        f"whole trace: its {unit} work spans {units.duration(t.span_ms / 1e3)} (first to last operation), {busy}, "
        f"{t.kernels:,} {what}{memops} on {t.streams} {lanes}{'s' if t.streams != 1 else ''}"
    )


def decode_heading(result: DecodeResult) -> str:
    m = result.model
    params = f"{units.sig(m.params / 1e9)} B" if m.params >= 1e8 else f"{m.params:,}"
    return (
        f"{m.preset or 'custom shape'} ({params} params, {units.gigabytes(m.weight_bytes)} of {m.dtype} weights) on "
        f"{result.device}"
    )


def decode_facts(result: DecodeResult) -> list[str]:
    cpu = is_cpu(result.device)
    sources = sorted({x.steps.source for x in result.modes})
    facts = [
        "steps: "
        + ", ".join(SOURCE_WORDS.get(s, s) for s in sources)
        + ("; CPU ops stand in for kernels" if cpu and result.trace is not None else "")
    ]
    if result.trace is not None:
        facts.append(trace_line(result.trace, cpu))
    return facts


def decode_modes_table(result: DecodeResult, title: str | None = None) -> Table:
    return steps_table(
        ["MODE", "BATCH"],
        [[x.mode, str(x.batch)] for x in result.modes],
        [x.steps for x in result.modes],
        [x.tokens_per_s for x in result.modes],
        cpu=is_cpu(result.device),
        title=title,
    )


def decode_kernel_tables(result: DecodeResult) -> list[Table]:
    """Each mode's top kernels at the smallest batch (all of them are in the JSON)."""
    cpu = is_cpu(result.device)
    smallest = min((x.batch for x in result.modes), default=1)
    out = []
    for x in result.modes:
        if x.batch != smallest:
            continue
        t = top_kernels_table(
            x.steps,
            cpu=cpu,
            title=f"Top {'CPU ops' if cpu else 'kernels'} of the median step, by kind: {x.mode}, batch {x.batch}",
        )
        if t is not None:
            out.append(t)
    return out


def decode_step_lines(result: DecodeResult) -> list[str]:
    """Each mode's host range, GPU span, graph replays, copies and synchronisations."""
    cpu = is_cpu(result.device)
    return [x for m in result.modes for x in step_lines(f"{m.mode}, batch {m.batch}", m.steps, cpu=cpu)]


def decode_verdicts(result: DecodeResult) -> list[str]:
    return [
        f"{x.mode}, batch {x.batch}: {x.steps.verdict.text}. Next: {x.steps.verdict.next_step}." for x in result.modes
    ]
