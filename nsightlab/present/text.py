"""Text made from results that the terminal and the report both show, worded once.

Every number goes through `nsightlab.units`: three significant figures, one unit
per column, TB/s for bandwidth, binary sizes for tensors. The terminal (the `*view`
modules) and the report (`report.py`) draw the same tables from here, so the same figure
reads the same in both. Every sentence about a result is made from its measured values.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from nsightlab import units
from nsightlab.analysis.ncu_result import NcuResult
from nsightlab.analysis.sweep_impls import SweepImpls
from nsightlab.analysis.sweep_result import SweepCompare, SweepResult
from nsightlab.parse.names import distinct_short_names
from nsightlab.present.docblocks import Table

if TYPE_CHECKING:
    from nsightlab.analysis.profile_models import ProfileResult

#: lesson1's in-place scale range.
LESSON1_SCALE = "memory_bound_scale"
#: What the SPREAD columns hold, said under each table that has one.
SPREAD_NOTE = "SPREAD: (slowest - fastest batch of timed calls) / median batch, per size."


def tbps_text(tbps: float) -> str:
    """A bandwidth already in TB/s, with its unit: 1.46 TB/s, 0.0536 TB/s."""
    return units.tbps(tbps * 1e12)


def size_text(n: float) -> str:
    """A tensor or cache size, binary units: 16.0 MiB."""
    return units.size(n)


def us_text(us: float) -> str:
    """A duration given in microseconds, in the unit that suits it: 5.70 us, 2.38 ms."""
    return units.duration(us * 1e-6)


def log2s_text(values: Sequence[int]) -> str:
    if not values:
        return ""
    return f"2^{values[0]}" if len(values) == 1 else f"2^{values[0]}..2^{values[-1]}"


def _spread(x: float | None) -> str:
    return "" if x is None else units.percent(100 * x)


def _pct(x: float | None) -> str:
    return "" if x is None else units.percent(x)


def what_ran(result: SweepResult) -> str:
    """'x.mul_', 'x.mul_ + x.add_ (2 kernels)', 'Triton scale-add (1 fused kernel)'."""
    if result.impl == "triton":
        return f"Triton {result.op} ({'1 fused kernel' if result.op == 'scale-add' else '1 kernel'})"
    return "x.mul_ + x.add_ (2 kernels)" if result.op == "scale-add" else "x.mul_"


def sweep_heading(result: SweepResult) -> str:
    s = result.summary
    device = s.device_name or s.device_type
    return (
        f"Bandwidth sweep: {result.dtype} {what_ran(result)} ({result.element_size} B/element) on {device}, "
        f"{result.target}; {result.warmup} warm-up + {result.iters} timed calls per size"
        + ("; Triton's interpreter: correctness only" if result.interpreted else "")
    )


def sweep_table(result: SweepResult) -> Table:
    """Size, tensor, time per call and its spread, TB/s, % of the DRAM spec, regime (and the
    tutorial's TB/s on its GPU); bars of TB/s. An interpreted run has no TB/s to show."""
    rows = result.rows
    size = units.size_unit(r.tensor_bytes for r in rows)
    per_call = units.time_unit(r.seconds_per_call for r in rows)
    bandwidth = not result.interpreted
    with_spec = any(r.pct_of_dram_spec is not None for r in rows)
    with_ref = any(r.reference_tbps is not None for r in rows)
    columns = ["SIZE", f"TENSOR ({size.name})", f"TIME/CALL ({per_call.name})", "SPREAD"]
    right = [False, True, True, True]
    if bandwidth:
        columns.append("TB/S")
        right.append(True)
    if with_spec:
        columns.append("% SPEC")
        right.append(True)
    columns.append("REGIME")
    right.append(False)
    if with_ref:
        columns.append("REF TB/S")
        right.append(True)
    cells: list[list[str]] = []
    for r in rows:
        row = [f"2^{r.log2}", size.value(r.tensor_bytes), per_call.value(r.seconds_per_call), _spread(r.spread)]
        if bandwidth:
            row.append(units.tbps_value(r.tbps))
        if with_spec:
            row.append(_pct(r.pct_of_dram_spec))
        row.append(r.regime)
        if with_ref:
            row.append(units.tbps_value(r.reference_tbps) if r.reference_tbps is not None else "")
        cells.append(row)
    return Table(
        columns=columns,
        right=right,
        rows=cells,
        bars=[r.tbps for r in rows] if bandwidth else None,
        bar_label="TB/s" if bandwidth else None,
    )


def sweep_summary_lines(result: SweepResult) -> list[str]:
    s = result.summary
    out: list[str] = []
    if s.interpreted:
        out.append(
            "interpreted: correctness only (Triton's interpreter was timed, not the device): no launch floor, "
            "cache peak or plateau"
        )
        return out
    if s.launch_floor_us is not None:
        launch = [r.log2 for r in result.rows if r.regime == "launch"]
        kernels = f", {s.kernels_per_call} kernels per call" if s.kernels_per_call > 1 else ""
        out.append(
            f"launch floor: {us_text(s.launch_floor_us)} per call ({log2s_text(launch)}: fixed cost, not data{kernels})"
        )
    else:
        out.append("launch floor: none seen (no size sat at a floor; add smaller --sizes)")
    if not s.bandwidth_test:
        out.append(f"cache peak and DRAM plateau: {s.plateau_reason or 'not a bandwidth test'}")
    else:
        if s.cache_peak_tbps is not None and s.cache_peak_log2 is not None:
            line = f"cache peak: {tbps_text(s.cache_peak_tbps)} at 2^{s.cache_peak_log2}"
            if s.spec_dram_tbps and s.cache_peak_tbps > s.spec_dram_tbps:
                line += f" ({units.ratio(s.cache_peak_tbps / s.spec_dram_tbps)} the DRAM spec: served from cache)"
            elif s.dram_tbps:
                line += f" ({units.ratio(s.cache_peak_tbps / s.dram_tbps)} the DRAM plateau)"
            out.append(line)
        elif result.rows and all(r.regime == "launch" for r in result.rows):
            out.append("cache peak: none (every size sat at the launch floor)")
        else:
            out.append("cache peak: none (no size ran from the cache)")
        if s.dram_tbps is not None:
            agree = (
                f", within {units.percent(100 * s.plateau_spread)} of each other"
                if s.plateau_spread is not None
                else ""
            )
            line = (
                f"DRAM plateau: {'~' if s.dram_is_estimate else ''}{tbps_text(s.dram_tbps)} "
                f"({log2s_text(s.dram_from_log2)}{agree})"
            )
            if s.dram_pct_of_spec is not None:
                line += f", {units.percent(s.dram_pct_of_spec)} of the DRAM spec {s.spec_label}"
            elif s.device_type == "cuda":
                line += f"; no spec for {s.device_name or 'this GPU'} in the table"
            else:
                line += "; a CPU has no spec in the table: the figure is this machine's own"
            out.append(line)
        elif s.plateau_reason is not None:
            out.append(f"DRAM plateau: {s.plateau_reason}")
        else:
            out.append("DRAM plateau: not reached (add larger --sizes)")
    infinity = "Infinity Cache" in (s.l2_source or "")  # an AMD Instinct GPU's last level
    cache_name = "Infinity Cache" if infinity else "L2" if s.device_type == "cuda" else "last-level cache"
    if s.l2_bytes:
        out.append(f"{cache_name} used for the regimes: {size_text(s.l2_bytes)} ({s.l2_source or 'unknown source'})")
    else:
        out.append(f"{cache_name}: size unknown; regimes inferred from the shape of the curve")
    ref = result.reference
    if ref is not None and s.bandwidth_test:
        figures = []
        if ref.launch_floor_us is not None:
            figures.append(f"launch floor {us_text(ref.launch_floor_us)}")
        if ref.cache_peak_tbps is not None:
            figures.append(f"L2 peak {tbps_text(ref.cache_peak_tbps)}")
        if ref.dram_tbps is not None:
            pct = (
                f" ({units.percent(ref.dram_pct_of_spec)} of {ref.spec_label})"
                if ref.dram_pct_of_spec is not None
                else ""
            )
            figures.append(f"DRAM {tbps_text(ref.dram_tbps)}{pct}")
        if ref.matches_device:
            out.append(f"reference (REF TB/S column): the same GPU in the tutorial, {ref.dtype}: " + ", ".join(figures))
        else:
            mine = f"; this device's DRAM spec: {s.spec_label}" if s.spec_label else ""
            out.append(f"reference: the tutorial's {ref.gpu}, {ref.dtype}: " + ", ".join(figures) + mine)
    return out


def verdict_line(verdict: str, reason: str | None) -> str:
    return f"verdict: {verdict}" + (f" ({reason})" if reason else "")


def compare_heading(cmp: SweepCompare) -> str:
    a, b = cmp.a, cmp.b
    return f"Predict, then measure: {b.dtype} (run {b.run_id or '-'}) vs {a.dtype} (run {a.run_id or '-'})"


def compare_table(cmp: SweepCompare) -> Table:
    """The two runs size by size: regimes, times (one unit), ratios, TB/s, spreads, and
    whether each size meets the prediction where it is sharp."""
    a, b = cmp.a.dtype, cmp.b.dtype
    per_call = units.time_unit([x for p in cmp.pairs for x in (p.us_a * 1e-6, p.us_b * 1e-6)])
    rows = []
    for p in cmp.pairs:
        expected = ""
        if p.expected_time_ratio is not None:
            expected = f"time x{p.expected_time_ratio:g}" + (
                "" if p.agrees is None else (" yes" if p.agrees else " NO")
            )
        rows.append([
            f"2^{p.log2}", p.regime_a, p.regime_b, per_call.value(p.us_a * 1e-6), per_call.value(p.us_b * 1e-6),
            units.ratio(p.time_ratio), units.tbps_value(p.tbps_a), units.tbps_value(p.tbps_b), units.ratio(p.tbps_ratio),  # noqa: E501
            _spread(p.spread_a), _spread(p.spread_b), expected,
        ])  # fmt: skip
    return Table(
        columns=[
            "SIZE", f"REGIME {a}", f"REGIME {b}", f"TIME {a} ({per_call.name})", f"TIME {b} ({per_call.name})", "TIME x",  # noqa: E501
            f"TB/S {a}", f"TB/S {b}", "TB/S x", f"SPREAD {a}", f"SPREAD {b}", "AS PREDICTED",
        ],
        right=[False, False, False, True, True, True, True, True, True, True, True, False],
        rows=rows,
    )  # fmt: skip


def compare_lines(cmp: SweepCompare) -> list[str]:
    return [*cmp.lines, verdict_line(cmp.verdict, cmp.reason), *(f"note: {n}" for n in cmp.notes)]


def impls_heading(impls: SweepImpls) -> str:
    device = impls.device or impls.device_type
    ids = ", ".join(f"{side.impl} run {side.run_id or '-'}" for side in (impls.torch, impls.triton))
    return f"torch vs Triton: {impls.dtype} {impls.op} on {device}, {impls.target} ({ids})"


def impls_table(impls: SweepImpls) -> Table:
    """torch and Triton size by size: time of each (one unit), ratio, TB/s and regime of
    each, and the spreads."""
    size_rows = {r.log2: r for r in impls.runs[0].rows}
    size = units.size_unit(size_rows[p.log2].tensor_bytes for p in impls.pairs if p.log2 in size_rows)
    per_call = units.time_unit([x for p in impls.pairs for x in (p.us_torch * 1e-6, p.us_triton * 1e-6)])
    bandwidth = not impls.interpreted
    columns = ["SIZE", f"TENSOR ({size.name})", f"TORCH ({per_call.name})", f"TRITON ({per_call.name})", "TRITON/TORCH"]
    if bandwidth:
        columns += ["TB/S TORCH", "TB/S TRITON"]
    columns += ["REGIME TORCH", "REGIME TRITON", "SPREAD TORCH", "SPREAD TRITON"]
    rows = []
    for p in impls.pairs:
        tensor = size_rows[p.log2].tensor_bytes if p.log2 in size_rows else None
        row = [
            f"2^{p.log2}", size.value(tensor) if tensor is not None else "",
            per_call.value(p.us_torch * 1e-6), per_call.value(p.us_triton * 1e-6), units.ratio(p.ratio),
        ]  # fmt: skip
        if bandwidth:
            row += [units.tbps_value(p.tbps_torch), units.tbps_value(p.tbps_triton)]
        row += [p.regime_torch, p.regime_triton, _spread(p.spread_torch), _spread(p.spread_triton)]
        rows.append(row)
    right = [False, True, True, True, True] + ([True, True] if bandwidth else []) + [False, False, True, True]
    return Table(columns=columns, right=right, rows=rows)


def impls_lines(impls: SweepImpls) -> list[str]:
    return [*impls.lesson, verdict_line(impls.verdict, impls.reason), *(f"note: {n}" for n in impls.notes)]


def series_name(result: SweepResult) -> str:
    """How a run is named in a figure's legend and strip: its dtype, and what is not the
    default (the implementation, the op)."""
    extra = [x for x in (result.impl if result.impl != "torch" else "", result.op if result.op != "scale" else "") if x]
    return " ".join([result.dtype, *extra])


def sweep_caption(sweeps: Sequence[SweepResult], devices: str) -> str:
    """The sweep figure's caption, from each run's measured figures."""
    parts = []
    for s in sweeps:
        sm = s.summary
        who = f"{series_name(s)}" + (f" (run {s.run_id})" if s.run_id else "")
        if s.interpreted:
            parts.append(f"{who}: Triton's interpreter, correctness only (no bandwidth)")
            continue
        if not sm.bandwidth_test:
            parts.append(f"{who}: {sm.plateau_reason or 'not a bandwidth test'}")
            continue
        figures = []
        if sm.launch_floor_us is not None:
            figures.append(f"launch floor {us_text(sm.launch_floor_us)}")
        if sm.cache_peak_tbps is not None and sm.cache_peak_log2 is not None:
            figures.append(f"cache peak {tbps_text(sm.cache_peak_tbps)} at 2^{sm.cache_peak_log2}")
        if sm.dram_tbps is not None:
            pct = f", {units.percent(sm.dram_pct_of_spec)} of spec" if sm.dram_pct_of_spec is not None else ""
            figures.append(f"DRAM plateau {tbps_text(sm.dram_tbps)} ({log2s_text(sm.dram_from_log2)}{pct})")
        elif sm.plateau_reason:
            figures.append(f"DRAM plateau {sm.plateau_reason.split(' (')[0]}")
        parts.append(f"{who}: " + ", ".join(figures))
    return f"Bandwidth sweep on {devices}: TB/s by size, regimes shaded. " + "; ".join(parts) + "."


def roofline_remarks(profiles: Sequence[ProfileResult], sweeps: Sequence[SweepResult]) -> list[str]:
    """For each memory-bound range (a streaming op: FLOP per byte under 1), where it sits
    against a DRAM plateau measured on the same device: near it (memory-bound), far above
    it (it ran from the cache), or well below (something else limits it). Made from the
    numbers, never assumed."""
    out: list[str] = []
    for p in profiles:
        cpu = p.device_type == "cpu"
        device = "this CPU" if cpu else f"this GPU ({p.device_name or 'unnamed'})"
        plateaus = [
            s
            for s in sweeps
            if s.summary.dram_tbps is not None
            and (s.summary.device_name, s.summary.device_type)
            == (p.device_name, p.device_type or s.summary.device_type)
        ]
        for r in p.ranges:
            rates = r.rates
            if rates is None or rates.intensity is None or rates.intensity >= 1:
                continue
            who = f"{r.name}" + (f" (run {p.run_id})" if p.run_id else "")
            achieved = units.tbps(rates.bytes_per_s)
            if not plateaus:
                spec = (
                    f", {units.percent(rates.pct_of_bw_peak)} of the DRAM spec ({rates.bw_label})"
                    if rates.pct_of_bw_peak is not None
                    else ""
                )
                out.append(
                    f"{who} at {achieved}{spec}; no sweep measured a DRAM plateau on this device to compare it with."
                )
                continue
            best = plateaus[-1]
            assert best.summary.dram_tbps is not None
            plateau = best.summary.dram_tbps * 1e12
            ratio = rates.bytes_per_s / plateau
            sweep_run = f"{series_name(best)} sweep" + (f", run {best.run_id}" if best.run_id else "")
            against = f"the DRAM plateau measured on {device} ({units.tbps(plateau)}, {sweep_run})"
            if ratio > 1.25:
                cache = best.summary.l2_bytes
                name = "L2" if not cpu else "last-level cache"
                # lesson1's scale is in place: it reads and writes one buffer of half its bytes
                ws = rates.bytes_per_call / 2 if r.name == LESSON1_SCALE else None
                fits = (
                    f" (working set {units.size(ws)} < {units.size(cache)} {name})"
                    if cache and ws is not None and ws < cache
                    else ""
                )
                out.append(
                    f"{who} at {achieved}, {units.ratio(ratio)} {against}: it ran from the cache{fits}, not from "
                    "memory."
                )
            elif ratio >= 0.8:
                out.append(f"{who} at {achieved}, {units.percent(100 * ratio)} of {against}: memory-bound.")
            else:
                out.append(
                    f"{who} at {achieved}, {units.percent(100 * ratio)} of {against}: below the memory roof, so "
                    "something else limits it."
                )
    return out


def ncu_table(result: NcuResult) -> Table:
    """Speed Of Light per kernel: duration (one unit) and ncu's percentages."""
    duration = units.time_unit(k.duration_ns * 1e-9 if k.duration_ns is not None else None for k in result.kernels)
    rows = [
        [
            name,
            duration.value(k.duration_ns * 1e-9) if k.duration_ns is not None else "",
            _pct(k.dram_throughput_pct),
            _pct(k.memory_throughput_pct),
            _pct(k.l2_throughput_pct),
            _pct(k.l2_hit_rate_pct),
            _pct(k.sm_throughput_pct),
            k.bound,
        ]
        for k, name in zip(result.kernels, distinct_short_names([k.name for k in result.kernels]), strict=True)
    ]
    return Table(
        columns=["KERNEL", f"DURATION ({duration.name})", "DRAM", "MEMORY", "L2", "L2 HIT", "SM", "BOUND"],
        right=[False, True, True, True, True, True, True, False],
        rows=rows,
    )


def when_text(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
