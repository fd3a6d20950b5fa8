"""`pack` as the report's document model: the namespace's workloads (held, needed, copies
per mode, the plan), a colocate run and a tokenizer measurement, as tables, paragraphs and
sections (`packview` draws them on the terminal, the report writers in files). Every
string from the cluster or a log is shown with its control characters escaped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nsightlab.analysis.colocate_models import ColocateResult
from nsightlab.analysis.pack_plan import PackReport, PackWorkload
from nsightlab.analysis.sharing import USABLE_FRACTION
from nsightlab.analysis.tokenizer_result import TokenizerResult
from nsightlab.present.docblocks import Bullets, FigureRef, Para, Section, Table
from nsightlab.present.safe import terminal_safe as escape_controls
from nsightlab.units import percent, sig, usd

CHANGED_NOTHING = "nsightlab only read the cluster here: it changed no node, pod or deployment"


def esc(text: Any) -> str:
    return "" if text is None else escape_controls(str(text))


def _n(v: float | None) -> str:
    return "" if v is None else sig(v)


def _i(v: int | None) -> str:
    return "" if v is None else str(v)


def _money(v: float | None) -> str:
    return "" if v is None else usd(v)


def held_table(report: PackReport) -> Table:
    rows = []
    for w in report.workloads:
        rows.append(
            [
                esc(w.name),
                esc(w.owner_kind),
                str(w.pods),
                str(w.gpus),
                esc(w.gpu_type),
                _n(w.held_gib),
                _n(w.reserved_gib),
                _n(w.needed.total_gib),
                "" if w.needed_pct_of_held is None else percent(w.needed_pct_of_held),
                w.needed.source,
            ]
        )
    return Table(
        title="Held vs needed, per GPU (GiB): the pod holds the whole card; the engine reserves part of it",
        columns=["WORKLOAD", "KIND", "PODS", "GPUS", "GPU", "HELD", "RESERVED", "NEEDED", "OF HELD", "NEEDS FROM"],
        right=[False, False, True, True, False, True, True, True, True, False],
        rows=rows,
    )


def needed_table(report: PackReport) -> Table:
    rows = []
    for w in report.workloads:
        n = w.needed
        rows.append(
            [
                esc(w.name),
                _n(n.weights_gib),
                _n(n.activation_gib),
                _n(n.graphs_gib),
                _n(n.other_gib),
                _n(n.kv_gib),
                "" if n.kv_bytes_per_token is None else sig(n.kv_bytes_per_token / 1024),
                _i(n.concurrency),
                _i(n.max_len),
            ]
        )
    return Table(
        title="Needed, per GPU (GiB): weights + activations + CUDA graphs + outside torch + KV at the target",
        columns=["WORKLOAD", "WEIGHTS", "ACTIVATIONS", "GRAPHS", "OTHER", "KV", "KV KiB/TOKEN", "CONCURRENCY", "LEN"],
        right=[False, True, True, True, True, True, True, True, True],
        rows=rows,
    )


def limits_table(report: PackReport) -> Table:
    rows = []
    for w in report.workloads:
        bw = w.bandwidth
        rows.append(
            [
                esc(w.name),
                _n(w.floor_ms),
                _n(w.step_ms),
                _n(w.target_step_ms),
                "" if bw is None else sig(bw.tbps),
                "" if bw is None else bw.basis,
                _n(w.cpu.requested),
                _i(w.cpu.engine_minimum),
                _n(w.cpu.node_allocatable),
                _i(w.cpu.copies_per_gpu),
            ]
        )
    return Table(
        title="Bandwidth (a step's floor = bytes it reads / DRAM bandwidth) and CPU",
        columns=[
            "WORKLOAD",
            "FLOOR (ms)",
            "STEP (ms)",
            "KEEP (ms)",
            "TB/s",
            "BASIS",
            "CPU/POD",
            "ENGINE MIN",
            "NODE CPU",
            "CPU COPIES/GPU",
        ],
        right=[False, True, True, True, True, False, True, True, True, True],
        rows=rows,
    )


def modes_table(workloads: Sequence[PackWorkload]) -> Table:
    rows = []
    for w in workloads:
        for m in w.modes:
            best = w.best is not None and m.mode == w.best.mode and m.profile == w.best.profile
            rows.append(
                [
                    esc(w.name),
                    m.mode + (" *" if best else ""),
                    m.profile or "",
                    str(m.copies),
                    m.binding,
                    _n(m.floor_ms),
                    _n(m.memory_gib),
                ]
            )
    return Table(
        title=f"Copies per GPU by sharing mode (* best; memory: {USABLE_FRACTION:.0%} of the card or slice)",
        columns=["WORKLOAD", "MODE", "PROFILE", "COPIES", "BINDING", "FLOOR (ms)", "MEMORY/COPY (GiB)"],
        right=[False, False, False, True, False, True, True],
        rows=rows,
    )


def plan_table(report: PackReport) -> Table:
    p = report.plan
    rows = [
        [
            esc(x.workload),
            str(x.gpus_now),
            str(x.gpus_needed),
            (x.mode or "") + (f" {x.profile}" if x.profile else ""),
            _money(x.usd_per_gpu_hour),
            _money(x.usd_per_hour_saved),
        ]
        for x in p.workloads
    ]
    rows.append(["namespace", str(p.gpus_now), str(p.gpus_needed), "", "", _money(p.usd_per_hour_saved)])
    return Table(
        title="Plan: GPUs held now and needed with the best mode",
        columns=["WORKLOAD", "GPUS NOW", "GPUS NEEDED", "MODE", "USD/GPU-HOUR", "USD/HOUR SAVED"],
        right=[False, True, True, False, True, True],
        rows=rows,
    )


def what_if_table(report: PackReport) -> Table | None:
    if not report.what_if:
        return None
    rows = []
    for x in report.what_if:
        b = x.best
        rows.append(
            [
                esc(x.workload),
                esc(x.instance_type),
                esc(x.gpu_type),
                _n(x.gpu_memory_gib),
                "" if x.bandwidth is None else f"{sig(x.bandwidth.tbps)} ({x.bandwidth.basis})",
                "" if b is None else b.mode + (f" {b.profile}" if b.profile else ""),
                "" if b is None else str(b.copies),
                "" if b is None else b.binding,
                _i(x.gpus_needed),
                _money(x.usd_per_hour),
            ]
        )
    return Table(
        title="What if: the same needs on other instance types",
        columns=["WORKLOAD", "TYPE", "GPU", "GiB", "TB/s", "BEST", "COPIES", "BINDING", "GPUS", "USD/HOUR"],
        right=[False, False, False, True, True, False, True, False, True, True],
        rows=rows,
    )


def pack_tables(report: PackReport) -> list[Table]:
    tables = [held_table(report), needed_table(report), limits_table(report), modes_table(report.workloads)]
    tables.append(plan_table(report))
    extra = what_if_table(report)
    if extra is not None:
        tables.append(extra)
    return tables


def settings_lines(report: PackReport) -> list[str]:
    out = []
    for w in report.workloads:
        out += [f"{esc(w.name)}: {esc(s)}" for s in w.settings]
    return out


def pack_heading(report: PackReport) -> str:
    n = len(report.workloads)
    what = f" matching '{esc(report.match)}'" if report.match else ""
    return (
        f"{n} GPU workload{'s' if n != 1 else ''}{what} in namespace {esc(report.namespace)} "
        f"(context {esc(report.context)}): {report.plan.gpus_now} GPUs held, {report.plan.gpus_needed} needed"
    )


# ---------------------------------------------------------------------------- colocate


def colocate_table(result: ColocateResult) -> Table:
    rows = []
    for x in result.results:
        rows.append(
            [
                x.sharing,
                str(x.copies),
                sig(x.step_ms.median),
                sig(x.step_ms.p90),
                " ".join(sig(c.median) for c in x.per_copy),
                sig(x.aggregate_tokens_per_s),
                sig(x.aggregate_tbps),
                "" if x.pct_of_plateau is None else percent(x.pct_of_plateau),
            ]
        )
    return Table(
        title="Per number of copies at once (step times over every copy's steps)",
        columns=["SHARING", "COPIES", "STEP (ms)", "P90 (ms)", "EACH COPY (ms)", "TOKENS/S", "TB/s", "OF PLATEAU"],
        right=[False, True, True, True, False, True, True, True],
        rows=rows,
        bars=[x.aggregate_tokens_per_s for x in result.results],
        bar_label="aggregate tokens/s",
    )


def colocate_heading(result: ColocateResult) -> str:
    plateau = f"; DRAM plateau {sig(result.plateau_tbps)} TB/s ({result.plateau_basis})" if result.plateau_tbps else ""
    return (
        f"{esc(result.preset or 'decode')} x K copies at once on {esc(result.device)}, batch {result.batch} each, "
        f"{result.tokens} timed steps{plateau}"
    )


def colocate_section(result: ColocateResult, figure_key: str | None) -> Section:
    items: list[Any] = [Para(text=colocate_heading(result))]
    if figure_key is not None:
        items.append(FigureRef(key=figure_key))
    items.append(colocate_table(result))
    items.append(Bullets(items=[esc(x) for x in result.lesson]))
    if result.notes:
        items.append(Bullets(items=[f"note: {esc(n)}" for n in result.notes]))
    return Section(level=2, heading=f"Packing: copies at once, run {result.run_id or ''}".strip(), items=items)


# ---------------------------------------------------------------------------- tokenizer


def tokenizer_table(result: TokenizerResult) -> Table:
    return Table(
        title="Tokenizer CPU (one request at a time, one thread)",
        columns=[
            "PROMPTS",
            "MEAN TOKENS",
            "CPU ms/REQUEST",
            "REQUESTS/S/vCPU",
            "TOKENS/S/vCPU",
            "POD CPU",
            "TOKENS/S/POD",
        ],
        right=[True] * 7,
        rows=[
            [
                f"{result.prompts} ({result.prompt_source})",
                sig(result.mean_prompt_tokens),
                sig(result.ms_per_request),
                sig(result.requests_per_s_per_vcpu),
                sig(result.tokens_per_s_per_vcpu),
                _n(result.pod_cpu),
                _n(result.tokens_per_s_per_pod),
            ]
        ],
    )


def tokenizer_section(result: TokenizerResult) -> Section:
    items: list[Any] = [
        Para(text=f"Tokenizer {esc(result.tokenizer)} on {esc(result.device)}."),
        tokenizer_table(result),
        Bullets(items=[esc(x) for x in result.lesson]),
    ]
    if result.notes:
        items.append(Bullets(items=[f"note: {esc(n)}" for n in result.notes]))
    return Section(level=2, heading=f"Tokenizer CPU, run {result.run_id or ''}".strip(), items=items)
