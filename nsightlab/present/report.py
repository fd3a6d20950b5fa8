"""`report`: the runs so far as a report a person would rather look at.

Three steps, each testable alone:

1. `select_runs`: which runs (given ones; else the current lab session's; else the latest
   of each kind), loaded from the store.
2. `build_report`: a `ReportDoc`, a document model made of sections (paragraphs, bullet
   lists, tables, figure references) with every number already formatted. It needs no
   matplotlib: `--terminal` renders it with Rich (render.report_doc).
3. `write_report`: the figures (nsightlab.present.figures), `report.md` (which references the
   PNGs beside it) and a self-contained `report.html` (images embedded as data: URIs, CSS
   inline, a Content-Security-Policy that forbids any fetch), written into a temporary
   folder beside DIR and moved into place, the HTML last.

`decode_floor_for` gathers what `nsightlab roofline` needs from the store.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import webbrowser
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from nsightlab import units
from nsightlab.analysis.colocate_models import ColocateResult
from nsightlab.analysis.decode_models import DecodeResult, DecodeTimelines
from nsightlab.analysis.explain.profile_words import ops_label
from nsightlab.analysis.fleet_models import FleetResult
from nsightlab.analysis.ncu_result import NcuResult
from nsightlab.analysis.profile_models import ProfileResult
from nsightlab.analysis.roofline import DecodeFloor, decode_floor
from nsightlab.analysis.sweep_impls import SweepImpls, compare_impls
from nsightlab.analysis.sweep_result import SweepResult, compare_results, plateau_source
from nsightlab.analysis.tokenizer_result import TokenizerResult
from nsightlab.errors import Interrupted, UsageError
from nsightlab.parse.names import distinct_short_names
from nsightlab.present import decodedoc as dd
from nsightlab.present import figures, packfigure, sweepfigure
from nsightlab.present import figures as figs
from nsightlab.present.doc import (
    Bullets,
    FigureFile,
    FigureRef,
    Para,
    ReportDoc,
    ReportFiles,
    Section,
    Table,
)
from nsightlab.present.figures import device_label
from nsightlab.present.fleetview import member_sweeps, report_sections
from nsightlab.present.packdoc import colocate_section, tokenizer_section
from nsightlab.present.text import (
    SPREAD_NOTE,
    compare_lines,
    compare_table,
    impls_heading,
    impls_lines,
    impls_table,
    ncu_table,
    roofline_remarks,
    series_name,
    sweep_summary_lines,
    sweep_table,
    tbps_text,
    what_ran,
    when_text,
)
from nsightlab.present.writers import render_html, render_markdown
from nsightlab.runs import store
from nsightlab.runs.listing import RunLine, line, resolve_all
from nsightlab.runs.store import Run, RunMeta, RunStatus
from nsightlab.runs.trace_files import load_timelines
from nsightlab.specs.gpus import lookup
from nsightlab.userconfig import ensure_home, load_session

if TYPE_CHECKING:
    from nsightlab.analysis.ncu_result import NcuResult
    from nsightlab.analysis.profile_models import ProfileResult, RangeLine
    from nsightlab.analysis.sweep_result import SweepResult
    from nsightlab.present.figures import Plot

#: Kernels listed per profile in the report's table.
TOP_KERNELS = 15


# ---------------------------------------------------------------------------- the document model


# ---------------------------------------------------------------------------- choosing runs


@dataclass
class Loaded:
    """One run and its parsed result."""

    run: Run
    meta: RunMeta
    line: RunLine
    result: BaseModel


@dataclass
class Selection:
    runs: list[Loaded]
    how: str
    notes: list[str] = field(default_factory=list)


def _load(status: RunStatus, notes: list[str]) -> Loaded | None:
    """A run to report, or None with a note saying why it is left out."""
    if status.meta is None or status.result is None:
        label = (
            f"run {status.meta.id} ({status.meta.kind} {status.meta.name})" if status.meta else f"run {status.run.id}"
        )
        if status.state == "damaged":
            notes.append(f"left out {label}: it is damaged ({status.problem})")
        else:
            notes.append(f"left out {label}: it did not finish (no result.json)")
        return None
    return Loaded(run=status.run, meta=status.meta, line=line(status), result=status.result)


def _latest(statuses: list[RunStatus], notes: list[str]) -> list[RunStatus]:
    """The latest complete run of each kind; for sweeps, the latest of each name. A
    damaged run that would have been chosen is named in a note."""

    def key(status: RunStatus) -> tuple[str, str]:
        if status.meta is not None:
            kind, name, dtype = status.meta.kind, status.meta.name, status.meta.dtype
        else:
            kind, name, _ = store.folder_facts(status.run)
            dtype = None
        # sweeps: the latest of each name (dtype, and the implementation and op where they
        # are not the default)
        return (kind, name or dtype or "") if kind == "sweep" else (kind, "")

    picked: dict[tuple[str, str], RunStatus] = {}
    for status in statuses:
        if status.complete:
            picked[key(status)] = status  # oldest first, so the last one wins
    for status in statuses:
        best = picked.get(key(status))
        if status.state == "damaged" and (best is None or status.run.folder > best.run.folder):
            notes.append(f"left out run {status.run.id}: it is damaged ({status.problem})")
    return sorted(picked.values(), key=lambda s: s.run.folder)


def select_runs(refs: Sequence[str]) -> Selection:
    """The runs to report: `refs` if given, else the current lab session's runs, else the
    latest finished run of each kind (of each dtype for sweeps). Damaged runs are left
    out with a note; when the only run asked for is damaged, that is the error (exit 2,
    naming the file)."""

    notes: list[str] = []
    if refs:
        chosen = [store.inspect(r) for r in resolve_all(list(refs))]
        how = "the runs given: " + ", ".join(refs)
    else:
        every = [store.inspect(r) for r in store.all_runs()]
        if not every:
            raise UsageError(
                "there are no runs yet", hint="Make one with `nsightlab profile lesson1` or `nsightlab sweep`."
            )
        session = load_session()
        chosen = []
        how = ""
        if session is not None:
            chosen = [s for s in every if s.meta is not None and s.meta.session_uid == session.uid]
            if chosen:
                how = f"the runs of the current lab session (pod {session.pod}, context {session.context})"
            else:
                notes.append(
                    f"the current lab session (pod {session.pod}) has no runs yet; showing the latest runs instead"
                )
        if not chosen:
            chosen = _latest(every, notes)
            how = "the latest run of each kind (of each dtype for sweeps)"
    chosen = sorted(chosen, key=lambda s: s.run.folder)  # in the order they ran
    loaded = [x for x in (_load(s, notes) for s in chosen) if x is not None]
    if not loaded:
        if len(chosen) == 1 and chosen[0].state == "damaged" and chosen[0].error is not None:
            raise chosen[0].error  # the file that cannot be read, named
        raise UsageError("none of the chosen runs has a result to report", hint="; ".join(notes) or None)
    return Selection(runs=loaded, how=how, notes=notes)


# ---------------------------------------------------------------------------- formatting


def _compute_like(r: RangeLine) -> bool:
    rates = r.rates
    return rates is not None and ("gemm" in r.name or (rates.intensity is not None and rates.intensity > 10))


def _range_row(r: RangeLine, per_call: units.Unit, kernel: str) -> list[str]:
    """A timed range as the terminal's profile shows it: nsightlab.units; `kernel`
    its kernel's name as the column shows it (distinct_short_names)."""
    rates = r.rates
    assert rates is not None
    if _compute_like(r):
        f = rates.flops_per_call
        work = f"{units.sig(f / 1e12)} TFLOP" if f >= 1e11 else f"{units.sig(f / 1e9)} GFLOP"
        rate = units.tflops(rates.flops_per_s)
        pct = (
            f"{units.percent(rates.pct_of_flops_peak)} of {rates.flops_label}"
            if rates.pct_of_flops_peak is not None
            else "-"
        )
    else:
        work = units.size(rates.bytes_per_call)
        rate = units.tbps(rates.bytes_per_s)
        pct = f"{units.percent(rates.pct_of_bw_peak)} of {rates.bw_label}" if rates.pct_of_bw_peak is not None else "-"
    roof = rates.roofline.bound if rates.roofline else "-"
    intensity = units.sig(rates.intensity) if rates.intensity is not None else ""
    return [r.name, kernel or r.kernel or "", work, per_call.value(rates.seconds_per_call), rate, pct, intensity, roof]


def _in(unit: units.Unit, ns: float | None) -> str:
    return "" if ns is None else unit.value(ns / 1e9)


def _share(pct: float | None) -> str:
    return "" if pct is None else units.percent(pct)


# ---------------------------------------------------------------------------- building the document


@dataclass
class ReportBundle:
    """The document and the typed results its figures are drawn from."""

    doc: ReportDoc
    sweeps: list[SweepResult]
    profiles: list[ProfileResult]
    ncus: list[NcuResult]
    figure_keys: list[str]
    # each fleet and its members' sweeps, labelled by instance type (and node)
    fleets: list[tuple[FleetResult, list[tuple[str, SweepResult]]]] = field(default_factory=list)
    decodes: list[DecodeResult] = field(default_factory=list)
    decode_data: dict[str, DecodeTimelines] = field(default_factory=dict)  # by run id: timeline.json
    packs: list[ColocateResult] = field(default_factory=list)  # `pack colocate` runs


def _runs_table(lines: list[RunLine]) -> Table:
    return Table(
        columns=["ID", "KIND", "NAME", "WHEN", "WHERE", "NODE", "DEVICE", "DTYPE", "HEADLINE"],
        right=[False] * 9,
        rows=[
            [
                x.id,
                x.kind,
                x.name,
                when_text(x.created),
                x.where,
                x.node or "",
                x.device or "",
                x.dtype or "",
                x.headline or "",
            ]
            for x in lines
        ],
    )


ENV_FIELDS = (
    ("where", "context"),
    ("target", "target"),
    ("node", "node"),
    ("instance_type", "instance type"),
    ("device", "GPU / device"),
    ("driver", "driver"),
    ("cuda", "CUDA"),
    ("torch", "torch"),
    ("nsys", "nsys"),
    ("ncu", "ncu"),
    ("image", "image"),
    ("python", "python"),
)


def _environment(loaded: list[Loaded]) -> Table:
    """One column per distinct environment, one row per fact that any of them has."""
    envs: list[tuple[dict[str, str], list[str]]] = []
    for x in loaded:
        versions: dict[str, str | None] = dict(x.meta.versions)
        extra = getattr(x.result, "versions", None)
        if isinstance(extra, dict):
            versions.update({k: v for k, v in extra.items() if v})
        facts = {
            "where": x.line.where,
            "target": x.meta.target,
            "node": x.meta.node or "",
            "instance_type": x.meta.instance_type or "",
            "device": x.line.device or "",
            "image": x.meta.image or "",
        }
        for key in ("driver", "cuda", "torch", "nsys", "ncu", "python"):
            facts[key] = versions.get(key) or ""
        ident = {k: facts[k] for k in ("where", "target", "node", "device", "image")}
        for known, ids in envs:
            if all(known[k] == v for k, v in ident.items()):
                for k, v in facts.items():
                    if v and not known[k]:
                        known[k] = v
                    elif v and v not in known[k].split(" / "):
                        known[k] += f" / {v}"
                ids.append(x.meta.id)
                break
        else:
            envs.append((facts, [x.meta.id]))
    rows = []
    for key, label in ENV_FIELDS:
        values = [facts.get(key, "") for facts, _ in envs]
        if any(values):
            rows.append([label, *values])
    return Table(
        columns=["", *(f"runs {', '.join(ids)}" for _, ids in envs)], right=[False] * (len(envs) + 1), rows=rows
    )


def _sweep_sections(sweeps: list[SweepResult]) -> list[Section]:
    ops = sorted({what_ran(s) for s in sweeps})
    out: list[Section] = [
        Section(
            level=2,
            heading="Bandwidth sweep",
            items=[
                Para(
                    text=f"An in-place elementwise op ({', '.join(ops)}) timed at each size: bytes per call = 2 x "
                    "kernels x elements x element size (each kernel reads and writes every element once). "
                    "Regimes: launch-bound (time at a floor), cache-resident (fits in the cache; TB/s can beat "
                    "the DRAM spec), transition, DRAM-bound (the plateau that governs LLM decode; named only "
                    f"where two DRAM-bound sizes agree within 10%). {SPREAD_NOTE}"
                ),
                FigureRef(key="sweep"),
            ],
        )
    ]
    for s in sweeps:
        items: list[Any] = [
            Para(
                text=f"{s.dtype} {what_ran(s)} ({s.element_size} B per element) on {device_label(s)}, {s.target}; "
                f"{s.warmup} warm-up + {s.iters} timed calls per size. Headline: {s.headline}."
            ),
            sweep_table(s),
            Bullets(items=sweep_summary_lines(s)),
        ]
        if s.summary.lesson:
            items += [Para(text="What it means:"), Bullets(items=s.summary.lesson)]
        if s.summary.notes:
            items.append(Bullets(items=[f"note: {n}" for n in s.summary.notes]))
        if s.compare is not None:
            items += [
                Para(text=s.compare.prediction),
                compare_table(s.compare),
                Bullets(items=compare_lines(s.compare)),
            ]
        out.append(
            Section(
                level=3,
                heading=f"Sweep {series_name(s)} on {device_label(s)}" + (f" (run {s.run_id})" if s.run_id else ""),
                items=items,
            )
        )
    pair = _compare_pair(sweeps)
    if pair is not None:
        cmp = compare_results(*pair)
        a, b = cmp.a, cmp.b
        out.append(
            Section(
                level=3,
                heading=f"Predict, then measure: {b.dtype} vs {a.dtype}",
                items=[Para(text=cmp.prediction), compare_table(cmp), Bullets(items=compare_lines(cmp))],
            )
        )
    for impls in impl_pairs(sweeps):
        out.append(
            Section(
                level=3,
                heading=impls_heading(impls),
                items=[
                    Para(
                        text="The same op, type and sizes with torch and with a Triton kernel on one device; "
                        "TRITON/TORCH is Triton's time per call over torch's (below 1x: Triton is faster)."
                    ),
                    impls_table(impls),
                    Bullets(items=impls_lines(impls)),
                ],
            )
        )
    return out


def _device_key(s: SweepResult) -> tuple[str | None, str]:
    return (s.summary.device_name, s.summary.device_type)


def _compare_pair(sweeps: list[SweepResult]) -> tuple[SweepResult, SweepResult] | None:
    """Two sweeps of one implementation and op on one device with different element
    sizes, not compared yet: the latest of the smallest element size and of the next one."""
    by_device: dict[tuple[str | None, str, str, str], dict[int, SweepResult]] = {}
    for s in sweeps:
        by_device.setdefault((*_device_key(s), s.impl, s.op), {})[s.element_size] = s
    for sizes in by_device.values():
        if len(sizes) >= 2:
            a, b = (sizes[k] for k in sorted(sizes)[:2])
            if a.compare is None and b.compare is None:
                return a, b
    return None


def impl_pairs(sweeps: Sequence[SweepResult]) -> list[SweepImpls]:
    """torch and Triton runs of one op and type on one device with sizes in common: the
    latest of each, compared (what `sweep --impl torch,triton` shows)."""
    groups: dict[tuple[str | None, str, str, str], dict[str, SweepResult]] = {}
    for s in sweeps:
        groups.setdefault((*_device_key(s), s.dtype, s.op), {})[s.impl] = s
    out = []
    for by_impl in groups.values():
        t, k = by_impl.get("torch"), by_impl.get("triton")
        if t is not None and k is not None and {r.log2 for r in t.rows} & {r.log2 for r in k.rows}:
            out.append(compare_impls(t, k))
    return out


def _profile_sections(profiles: list[ProfileResult], figure_keys: list[str]) -> list[Section]:
    out = [Section(level=2, heading="Profiles", items=[])]
    if "roofline" in figure_keys:
        out[0].items.append(FigureRef(key="roofline"))
    for p in profiles:
        how = {"nsys": "Nsight Systems", "torch": "torch.profiler", "none": "no profiler (the script's own record)"}[
            p.profiler
        ]
        device = p.device_name or "unknown device"
        if p.device_type == "cpu":
            device = f"cpu ({device})"
        items: list[Any] = [
            Para(
                text=f"{p.script} under {how} on {p.target}: {device}"
                + (f" (spec: {p.spec_name})" if p.spec_name and p.spec_name != p.device_name else "")
                + "."
            )
        ]
        key = f"kernels-{p.run_id}" if p.run_id else f"kernels-{p.script}"
        if key in figure_keys:
            items.append(FigureRef(key=key))
        unit = ops_label(p)
        shown = p.kernels[:TOP_KERNELS]
        total = units.time_unit(k.total_ns / 1e9 for k in shown)
        avg = units.time_unit(k.avg_ns / 1e9 for k in shown if k.avg_ns is not None)
        with_self = any(k.self_ns is not None for k in shown)
        if shown:
            items.append(
                Table(
                    title=f"{unit}, by total time"
                    + (f" (top {TOP_KERNELS} of {len(p.kernels)})" if len(p.kernels) > TOP_KERNELS else ""),
                    # the terminal's figures: nsightlab.units, one unit per column
                    columns=[
                        "TIME",
                        f"TOTAL ({total.name})",
                        *([f"SELF ({total.name})"] if with_self else []),
                        "INSTANCES",
                        f"AVG ({avg.name})",
                        "NAME",
                    ],
                    right=[True, True, *([True] if with_self else []), True, True, False],
                    rows=[
                        [
                            _share(k.time_pct),
                            _in(total, k.total_ns),
                            *([_in(total, k.self_ns)] if with_self else []),
                            str(k.instances),
                            _in(avg, k.avg_ns),
                            name,
                        ]
                        for k, name in zip(shown, distinct_short_names([k.name for k in shown]), strict=True)
                    ],
                    tooltips=[k.name for k in shown],
                )
            )
        timed = [r for r in p.ranges if r.rates is not None]
        if timed:
            per_call = units.time_unit(r.rates.seconds_per_call for r in timed if r.rates is not None)
            items.append(
                Table(
                    title=f"Timed ranges (times: {p.timing_source})",
                    columns=[
                        "RANGE",
                        "OP" if p.device_type == "cpu" else "KERNEL",
                        "WORK/CALL",
                        f"TIME/CALL ({per_call.name})",
                        "RATE",
                        "% OF SPEC PEAK",
                        "FLOP/B",
                        "ROOF",
                    ],
                    right=[False, False, True, True, True, False, True, False],
                    rows=[
                        _range_row(r, per_call, k)
                        for r, k in zip(timed, distinct_short_names([r.kernel_full for r in timed]), strict=True)
                    ],
                )
            )
        elif p.ranges:
            cpu = p.device_type == "cpu"  # a CPU profile's ranges hold ops, not GPU kernels
            inside = units.time_unit(r.gpu_ns / 1e9 for r in p.ranges if r.gpu_ns is not None)
            columns = (
                ["RANGE", "OP", "OPS", f"OP TIME ({inside.name})"]
                if cpu
                else ["RANGE", "KERNEL", "LAUNCHES", f"GPU TIME ({inside.name})"]
            )
            items.append(
                Table(
                    title="NVTX ranges" if p.profiler == "nsys" else "Labelled ranges (record_function)",
                    columns=columns,
                    right=[False, False, True, True],
                    rows=[
                        [r.name, k or r.kernel or "", str(r.kernel_instances or ""), _in(inside, r.gpu_ns)]
                        for r, k in zip(p.ranges, distinct_short_names([r.kernel_full for r in p.ranges]), strict=True)
                    ],
                )
            )
        if p.lesson:
            items += [Para(text="The lesson:"), Bullets(items=p.lesson)]
        if p.notes:
            items.append(Bullets(items=[f"note: {n}" for n in p.notes]))
        out.append(Section(level=3, heading=f"{p.script}" + (f" (run {p.run_id})" if p.run_id else ""), items=items))
    return out


def _ncu_sections(ncus: list[NcuResult]) -> list[Section]:
    out = [
        Section(
            level=2,
            heading="Nsight Compute",
            items=[
                Para(
                    text="Speed Of Light per kernel: how close DRAM, memory, L2 and the SMs came to their peaks, and "
                    "what that says."
                )
            ],
        )
    ]

    for n in ncus:
        items: list[Any] = [
            ncu_table(n),
            Para(text="Verdicts:"),
            Bullets(
                items=[
                    f"{name}: {k.verdict}"
                    for name, k in zip(distinct_short_names([k.name for k in n.kernels]), n.kernels, strict=True)
                ]
            ),
        ]
        if n.notes:
            items.append(Bullets(items=[f"note: {x}" for x in n.notes]))
        out.append(
            Section(level=3, heading=f"ncu on {n.source}" + (f" (run {n.run_id})" if n.run_id else ""), items=items)
        )
    return out


def _decode_sections(
    decodes: list[DecodeResult], data: dict[str, DecodeTimelines], figure_keys: list[str]
) -> list[Section]:
    out = [
        Section(
            level=2,
            heading="Decode: where a token's time goes",
            items=[
                Para(
                    text="An LLM decode loop (lab_scripts/decode.py) profiled step by step: the step time, how "
                    "long the GPU sits idle between kernels, the kernels that take the time, and the memory "
                    "floor (the bytes a step must read, weights and KV cache, over DRAM bandwidth)."
                )
            ],
        )
    ]
    for r in decodes:
        items: list[Any] = [Para(text=f"{dd.decode_heading(r)}."), Bullets(items=dd.decode_facts(r))]
        key = f"decode-steps-{r.run_id or 'run'}"
        if key in figure_keys:
            items.append(FigureRef(key=key))
        items.append(dd.decode_modes_table(r, title="Per mode and batch (each row its median step)"))
        items += dd.decode_kernel_tables(r)
        items += [Para(text="Verdict:"), Bullets(items=dd.decode_verdicts(r))]
        if r.batch_sweep:
            items.append(
                dd.batch_sweep_table(r.batch_sweep, title="Batch sweep: tokens/s against the roofline's prediction")
            )
            key = f"decode-batch-{r.run_id or 'run'}"
            if key in figure_keys:
                items.append(FigureRef(key=key))
        if r.lesson:
            items += [Para(text="What it means:"), Bullets(items=r.lesson)]
        if r.notes:
            items.append(Bullets(items=[f"note: {n}" for n in r.notes]))
        out.append(
            Section(
                level=3,
                heading=f"decode {r.model.preset or ''}".rstrip() + (f" (run {r.run_id})" if r.run_id else ""),
                items=items,
            )
        )
    return out


def floor_table(floor: DecodeFloor) -> Table:
    per_token = units.time_unit(x.ms_per_token * 1e-3 for x in floor.lines)
    return Table(
        columns=["BASIS", "TB/S", f"PER TOKEN ({per_token.name})", "TOKENS/S", "SOURCE"],
        right=[False, True, True, True, False],
        # a measured plateau in three figures; a spec as its datasheet gives it (its source beside it)
        rows=[
            [
                x.basis + (" (estimate)" if x.estimate else ""),
                units.tbps_value(x.bandwidth_tbps) if x.basis == "measured" else f"{x.bandwidth_tbps:.4g}",
                per_token.value(x.ms_per_token * 1e-3),
                units.sig(x.tokens_per_s),
                x.source,
            ]
            for x in floor.lines
        ],
    )


def _floor_section(floor: DecodeFloor) -> Section:
    items: list[Any] = [
        Para(
            text=f"Roofline math for a model with {floor.weights_gb:g} GB of weights (10^9 bytes): one decode step "
            "reads every weight once, so it cannot take less than weight bytes / memory bandwidth."
        ),
    ]
    if floor.lines:
        items += [floor_table(floor), Bullets(items=floor.summary)]
    else:
        items.append(
            Para(
                text="No floor from these runs: no sweep reached a DRAM plateau and no GPU of theirs is in the spec "
                "table. Sweep larger sizes, or take the floor of a GPU of the spec table, e.g. `nsightlab roofline "
                f"--weights-gb {floor.weights_gb:g} --gpu g7e.8xlarge`."
            )
        )
    if floor.notes:
        items.append(Bullets(items=[f"note: {n}" for n in floor.notes]))
    return Section(level=2, heading="Decode floor", items=items)


def _report_floor(weights_gb: float, sweeps: list[SweepResult], profiles: list[ProfileResult]) -> DecodeFloor:

    specs = []
    for p in profiles:
        spec = lookup(p.device_name) if p.device_type != "cpu" else None
        if spec is not None and spec not in specs:
            specs.append(spec)
    return decode_floor(weights_gb, sweeps=[plateau_source(s) for s in sweeps], gpus=specs)


def build_report(selection: Selection, *, weights_gb: float | None = None, now: datetime | None = None) -> ReportBundle:
    """The document for the selected runs. Pure apart from the clock."""

    now = now or datetime.now(timezone.utc)
    sweeps = [x.result for x in selection.runs if isinstance(x.result, SweepResult)]
    profiles = [x.result for x in selection.runs if isinstance(x.result, ProfileResult)]
    ncus = [x.result for x in selection.runs if isinstance(x.result, NcuResult)]
    fleets = [(x.result, member_sweeps(x.result)) for x in selection.runs if isinstance(x.result, FleetResult)]
    decodes = [x.result for x in selection.runs if isinstance(x.result, DecodeResult)]
    decode_data = {}
    for x in selection.runs:
        if isinstance(x.result, DecodeResult):
            loaded = load_timelines(x.run)
            if loaded is not None:
                decode_data[x.meta.id] = loaded
    for x in selection.runs:  # what the store knows fills what a result read from files lacks
        if "run_id" in type(x.result).model_fields and getattr(x.result, "run_id", None) is None:
            x.result.run_id = x.meta.id  # type: ignore[attr-defined]
        if isinstance(x.result, ProfileResult) and x.result.device_name is None and x.meta.gpu:
            x.result.device_name = x.meta.gpu
    keys: list[str] = []
    if sweeps:
        keys.append("sweep")
    if any(r.rates is not None and r.rates.intensity for p in profiles for r in p.ranges):
        keys.append("roofline")
    keys += [f"kernels-{p.run_id}" for p in profiles if p.kernels]
    for d in decodes:
        got = decode_data.get(d.run_id or "")
        if got is not None and got.timelines:
            keys.append(f"decode-steps-{d.run_id}")
        if len({x.batch for x in d.modes}) > 1:
            keys.append(f"decode-batch-{d.run_id}")
    lines = [x.line for x in selection.runs]
    sections = [
        Section(level=2, heading="Runs", items=[Para(text=f"This report shows {selection.how}."), _runs_table(lines)]),
        Section(level=2, heading="Environment", items=[_environment(selection.runs)]),
    ]
    if sweeps:
        sections += _sweep_sections(sweeps)
    if profiles:
        sections += _profile_sections(profiles, keys)
    if ncus:
        sections += _ncu_sections(ncus)
    if decodes:
        sections += _decode_sections(decodes, decode_data, keys)
    for fleet, curves in fleets:
        key = f"fleet-{fleet.fleet_id}" if curves else None
        if key is not None:
            keys.append(key)
        sections.append(report_sections(fleet, key))
    packs = [x.result for x in selection.runs if isinstance(x.result, ColocateResult)]
    keys += [f"pack-{p.run_id}" for p in packs]
    sections += [colocate_section(p, f"pack-{p.run_id}") for p in packs]
    sections += [tokenizer_section(x.result) for x in selection.runs if isinstance(x.result, TokenizerResult)]
    floor = None
    if weights_gb is not None:
        floor = _report_floor(weights_gb, sweeps, profiles)
        sections.append(_floor_section(floor))
    kinds = ", ".join(
        f"{n} {k}{'s' if n != 1 else ''}"
        for k, n in (
            ("sweep", len(sweeps)),
            ("profile", len(profiles)),
            ("ncu run", len(ncus)),
            ("decode run", len(decodes)),
            ("fleet", len(fleets)),
            ("packing run", len(packs)),
        )
        if n
    )
    doc = ReportDoc(
        title=f"nsightlab report: {kinds}",
        created=now,
        selection=selection.how,
        runs=lines,
        sections=sections,
        decode_floor=floor,
        notes=list(selection.notes),
    )
    return ReportBundle(
        doc=doc,
        sweeps=sweeps,
        profiles=profiles,
        ncus=ncus,
        figure_keys=keys,
        fleets=fleets,
        decodes=decodes,
        decode_data=decode_data,
        packs=packs,
    )


# ---------------------------------------------------------------------------- figures


def draw_figures(bundle: ReportBundle) -> list[Plot]:
    """The figures the document refers to (matplotlib needed: UsageError without it)."""

    plots: list[Plot] = []
    if bundle.sweeps:
        plots.append(sweepfigure.sweep_figure(bundle.sweeps))
    plateaus = [
        (
            s.summary.device_name or "",
            f"{tbps_text(s.summary.dram_tbps)}, run {s.run_id} ({series_name(s)})",
            s.summary.dram_tbps * 1e12,
        )
        for s in bundle.sweeps
        if s.summary.dram_tbps is not None
    ]
    roof = figures.roofline_figure(bundle.profiles, plateaus, remarks=roofline_remarks(bundle.profiles, bundle.sweeps))
    if roof is not None:
        plots.append(roof)
    for p in bundle.profiles:
        k = figures.kernels_figure(p)
        if k is not None:
            plots.append(k)
    for fleet, curves in bundle.fleets:
        if curves:
            plots.append(figures.fleet_figure(fleet.fleet_id, curves))
    for d in bundle.decodes:
        data = bundle.decode_data.get(d.run_id or "")
        label = f"run {d.run_id}" if d.run_id else "decode"
        if data is not None and f"decode-steps-{d.run_id}" in bundle.figure_keys:
            step_plot = figures.decode_steps_figure(d, data, label)
            if step_plot is not None:
                plots.append(step_plot)
        if f"decode-batch-{d.run_id}" in bundle.figure_keys:
            batch_plot = figures.decode_batch_figure(d, data, label)
            if batch_plot is not None:
                plots.append(batch_plot)
    plots += [packfigure.colocate_figure(p) for p in bundle.packs if f"pack-{p.run_id}" in bundle.figure_keys]
    return plots


# ---------------------------------------------------------------------------- markdown


# ---------------------------------------------------------------------------- HTML


# ---------------------------------------------------------------------------- writing


def default_out_dir(now: datetime | None = None) -> Path:
    """$NSIGHTLAB_HOME/reports/<time>, the home checked writable first (exit 2 naming it)."""
    now = now or datetime.now(timezone.utc)
    return ensure_home() / "reports" / f"{now:%Y%m%dT%H%M%SZ}"


def _cannot_write(out_dir: Path, e: OSError) -> UsageError:
    return UsageError(
        f"cannot write the report in {out_dir.parent} ({e.strerror or e})",
        hint="Give --out a folder you can write in (or free some space there).",
    )


def write_report(bundle: ReportBundle, out_dir: Path) -> ReportFiles:
    """Figures, report.md and report.html into `out_dir`, all or nothing.

    Everything is written into a fresh folder beside `out_dir`; a new `out_dir` is that
    folder renamed, an existing one receives the files one atomic rename at a time, the
    HTML last. Other files already in `out_dir` are left alone.
    """

    out_dir = out_dir.expanduser().absolute()
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir} exists and is not a folder")
    plots = draw_figures(bundle)  # before touching the disk: a missing matplotlib writes nothing
    tmp = out_dir.parent / f".{out_dir.name}.{secrets.token_hex(4)}.tmp"
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
    except OSError as e:
        raise _cannot_write(out_dir, e) from None
    replacing = False
    try:
        files: list[FigureFile] = []
        images: dict[str, tuple[FigureFile, bytes]] = {}
        for plot in plots:
            png, svg = figs.save(plot, tmp)
            plot.figure.clear()
            f = FigureFile(
                key=plot.key,
                title=plot.title,
                caption=plot.caption,
                png=str(out_dir / png.name),
                svg=str(out_dir / svg.name),
            )
            files.append(f)
            images[plot.key] = (f, png.read_bytes())
        (tmp / "report.md").write_text(render_markdown(bundle.doc, files), encoding="utf-8")
        (tmp / "report.html").write_text(render_html(bundle.doc, images), encoding="utf-8")
        if not out_dir.exists():
            os.replace(tmp, out_dir)
        else:
            replacing = True
            for path in sorted(tmp.iterdir(), key=lambda p: p.name == "report.html"):
                os.replace(path, out_dir / path.name)
            tmp.rmdir()
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, KeyboardInterrupt):
            left = (
                f"some figures in {out_dir} were replaced; its report.html is the one from before"
                if replacing
                else "no report was written"
            )
            raise Interrupted(f"interrupted: {left}") from None
        if isinstance(e, OSError):  # a full disk, a folder made read-only meanwhile
            raise _cannot_write(out_dir, e) from None
        raise
    return ReportFiles(
        out_dir=str(out_dir),
        html=str(out_dir / "report.html"),
        markdown=str(out_dir / "report.md"),
        figures=files,
        runs=[x.id for x in bundle.doc.runs],
        selection=bundle.doc.selection,
        decode_floor=bundle.doc.decode_floor,
        notes=bundle.doc.notes,
    )


def open_in_browser(path: str) -> bool:
    """Open the HTML in the user's browser ($BROWSER is honoured)."""

    with contextlib.suppress(webbrowser.Error):
        return webbrowser.open(Path(path).as_uri())
    return False


# ---------------------------------------------------------------------------- roofline command
