"""The report's sections, one builder per kind of run (sweeps, profiles, ncu runs,
decode runs, the decode floor) and the two every report has (its runs, their
environment): parts of a `ReportDoc`, every number already formatted. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from nsightlab import units
from nsightlab.analysis.decode_models import DecodeResult, DecodeTimelines
from nsightlab.analysis.explain.profile_words import ops_label
from nsightlab.analysis.ncu_result import NcuResult
from nsightlab.analysis.profile_models import ProfileResult
from nsightlab.analysis.roofline import DecodeFloor, decode_floor
from nsightlab.analysis.sweep_impls import SweepImpls, compare_impls
from nsightlab.analysis.sweep_result import SweepResult, compare_results, plateau_source
from nsightlab.parse.names import distinct_short_names
from nsightlab.present import decodedoc as dd
from nsightlab.present.docblocks import Bullets, FigureRef, Para, Section, Table
from nsightlab.present.figures import device_label
from nsightlab.present.text import (
    SPREAD_NOTE,
    compare_lines,
    compare_table,
    impls_heading,
    impls_lines,
    impls_table,
    ncu_table,
    series_name,
    sweep_summary_lines,
    sweep_table,
    what_ran,
    when_text,
)
from nsightlab.runs.listing import RunLine
from nsightlab.runs.store import Run, RunMeta
from nsightlab.specs.gpus import lookup

if TYPE_CHECKING:
    from nsightlab.analysis.profile_models import RangeLine

#: Kernels listed per profile in the report's table.
TOP_KERNELS = 15


@dataclass
class Loaded:
    """One run and its parsed result."""

    run: Run
    meta: RunMeta
    line: RunLine
    result: BaseModel


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


def runs_table(lines: list[RunLine]) -> Table:
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


def environment_table(loaded: Sequence[Loaded]) -> Table:
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


def sweep_sections(sweeps: list[SweepResult]) -> list[Section]:
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


def profile_sections(profiles: list[ProfileResult], figure_keys: list[str]) -> list[Section]:
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


def ncu_sections(ncus: list[NcuResult]) -> list[Section]:
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


def decode_sections(
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


def floor_section(floor: DecodeFloor) -> Section:
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


def report_floor(weights_gb: float, sweeps: list[SweepResult], profiles: list[ProfileResult]) -> DecodeFloor:

    specs = []
    for p in profiles:
        spec = lookup(p.device_name) if p.device_type != "cpu" else None
        if spec is not None and spec not in specs:
            specs.append(spec)
    return decode_floor(weights_gb, sweeps=[plateau_source(s) for s in sweeps], gpus=specs)
