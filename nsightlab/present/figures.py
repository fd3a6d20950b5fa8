"""The report's figures, drawn with matplotlib (the only module that imports it).

matplotlib is optional (`pip install 'nsightlab[report]'`) and imported inside the
functions, on the headless Agg backend. Each function takes typed results and returns a
`Plot` holding a matplotlib Figure (not yet saved), so its content can be checked before
`save()` writes PNG and SVG.

The figures try to be honest: every axis names its unit; regimes are shaded and named in
the legend; the DRAM spec is a horizontal line that names its source; the L2 (or a CPU's
last-level cache) is a vertical line at log2(cache bytes / element size) for each element
size, since the x axis counts elements. The bandwidth-sweep figure, with its panels, is
in `sweepfigure.py`.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nsightlab import units
from nsightlab.errors import UsageError
from nsightlab.parse.names import distinct_short_names
from nsightlab.present.safe import terminal_safe
from nsightlab.units import time_unit

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    # the result models load only when a stored result is read, not for every store access
    from nsightlab.analysis.decode_models import DecodeResult, DecodeTimelines, ModeTimeline
    from nsightlab.analysis.profile_models import ProfileResult
    from nsightlab.analysis.sweep_result import SweepResult

MISSING = "plotting needs matplotlib: pip install 'nsightlab[report]'"

#: Series colours (colour-blind safe, Okabe-Ito), in order.
SERIES = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
SPEC_COLOR = "#b2182b"
REFERENCE_COLOR = "0.35"
#: A linear TB/s axis becomes logarithmic past this ratio of largest to smallest value.
LOG_Y_RATIO = 30.0
#: Kernels shown in the kernels figure.
TOP_KERNELS = 10
DPI = 110
# Characters of a remark line above a 10-inch plot in the small font, before it wraps.
REMARK_WIDTH = 110


@dataclass
class Plot:
    """A drawn figure and what the report says about it."""

    key: str  # file stem: sweep, roofline, kernels-<run id>
    title: str
    caption: str
    figure: Figure


def new_figure(width: float, height: float) -> Figure:
    try:
        # matplotlib is optional ([report]) and slow to import: only figures load it
        import matplotlib
    except ImportError:
        raise UsageError(MISSING) from None
    matplotlib.use("Agg")
    # matplotlib is optional ([report]) and slow to import: only figures load it
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def literal_text(s: str) -> str:
    """Text as matplotlib shows it literally ($ would start mathtext), names from outside
    with their control characters shown as escapes (an SVG may not hold them)."""
    return terminal_safe(s).replace("$", r"\$")


def device_label(s: SweepResult) -> str:
    """'NVIDIA H200' for a GPU, 'cpu (AMD EPYC)' for a CPU."""
    name = s.summary.device_name
    if s.summary.device_type == "cpu":
        return f"cpu ({name})" if name else "cpu"
    return name or s.summary.device_type


def fleet_figure(fleet_id: str, curves: Sequence[tuple[str, SweepResult]]) -> Plot:
    """A fleet's sweeps on one figure: TB/s by size, one colour per instance type (one
    curve per node with --every-node), each type's DRAM spec as a dashed line of its colour."""
    if not curves:
        raise ValueError("no sweep to plot")
    fig = new_figure(10.0, 7.0)
    ax = fig.add_subplot()
    types = list(dict.fromkeys(label.split(" ", 1)[0] for label, _ in curves))
    colour = {t: SERIES[i % len(SERIES)] for i, t in enumerate(types)}
    values: list[float] = []
    specs: dict[str, tuple[float, str]] = {}
    for i, (label, s) in enumerate(curves):
        itype = label.split(" ", 1)[0]
        rows = sorted(s.rows, key=lambda r: r.log2)
        ys = [r.tbps for r in rows]
        values += ys
        ax.plot(
            [r.log2 for r in rows],
            ys,
            marker="o",
            lw=1.8,
            color=colour[itype],
            label=literal_text(f"{label}: {device_label(s)}"),
            gid=f"fleet-series-{i}",
            zorder=3,
        )
        if s.summary.spec_dram_tbps is not None and itype not in specs:
            specs[itype] = (s.summary.spec_dram_tbps, s.summary.spec_label or f"{s.summary.spec_dram_tbps:.4g} TB/s")
    for itype, (value, label) in specs.items():
        values.append(value)
        ax.axhline(
            value,
            color=colour[itype],
            ls="--",
            lw=1.2,
            label=literal_text(f"DRAM spec of {itype}: {label}"),
            gid=f"fleet-spec-{itype}",
        )
    positive = [v for v in values if v > 0]
    if positive and max(positive) / min(positive) > LOG_Y_RATIO:
        ax.set_yscale("log")
        ax.set_ylabel("TB/s, log scale (bytes read + written / time per call)")
    else:
        ax.set_ylim(bottom=0)
        ax.set_ylabel("TB/s (bytes read + written / time per call)")
    all_x = sorted({r.log2 for _, s in curves for r in s.rows})
    ax.set_xticks(all_x, [f"$2^{{{n}}}$" for n in all_x])
    ax.set_xlabel("tensor size, log2(elements)")
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(
        literal_text(f"Fleet {fleet_id}: the same sweep on {len(types)} instance type{'s' if len(types) != 1 else ''}"),
        loc="left",
    )
    fig.legend(loc="outside lower center", ncols=2, fontsize="small")
    caption = (
        f"Fleet {fleet_id}: TB/s by size on {', '.join(types)}. Where the curves flatten at the largest sizes is each "
        "GPU's DRAM plateau, the figure that sets its decode speed; above its dashed spec line the data came "
        "from cache."
    )
    return Plot(key=f"fleet-{fleet_id}", title=f"Fleet {fleet_id}", caption=caption, figure=fig)


ROOF_COLORS = ("#b2182b", "#4d4d4d", "#762a83", "#1b7837", "#8c510a")
#: Measured DRAM plateaus as roofs: one colour each, none of the spec roofs' or the points'.
PLATEAU_COLORS = ("#2166ac", "#5aae61", "#c51b7d", "#bf812d", "#35978f")
PLATEAU_DASHES = ("--", (0, (6, 2, 1, 2)), (0, (1, 2)), (0, (8, 3)))


def _device_of(p: ProfileResult) -> str:
    name = p.device_name or "unknown device"
    return f"cpu ({name})" if p.device_type == "cpu" else name


def roofline_figure(
    profiles: Sequence[ProfileResult],
    plateaus: Sequence[tuple[str, str, float]] = (),
    *,
    remarks: Sequence[str] = (),
) -> Plot | None:
    """Each profiled range by arithmetic intensity and achieved rate, under the roofs of
    its GPU's spec (memory: bandwidth x intensity; compute: the peak that applies to the
    range) and, per device, the memory roof of a measured DRAM plateau, given as
    (device name, label, bytes/s). `remarks`: what the measured values say about where
    each range sits (`present.text.roofline_remarks`), for the caption. None when no
    range has rates."""
    points = [(p, r) for p in profiles for r in p.ranges if r.rates is not None and r.rates.intensity]
    if not points:
        return None
    devices: list[str] = []
    for p, _ in points:
        if _device_of(p) not in devices:
            devices.append(_device_of(p))
    # per device: its memory roof (spec) and compute roofs, from the ranges' rates
    mem_roof: dict[str, tuple[float, str]] = {}
    peaks: dict[str, dict[float, str]] = {}
    for p, r in points:
        assert r.rates is not None
        d = _device_of(p)
        if r.rates.peak_bytes_per_s:
            mem_roof.setdefault(d, (r.rates.peak_bytes_per_s, r.rates.bw_label or ""))
            if r.rates.peak_flops_per_s:
                peaks.setdefault(d, {}).setdefault(r.rates.peak_flops_per_s, r.rates.flops_label or "")
    measured = [(d, label, bw) for d, label, bw in plateaus if d in {p.device_name for p, _ in points}]
    intensities = [r.rates.intensity for _, r in points if r.rates and r.rates.intensity]
    ridges = [f / mem_roof[d][0] for d, fs in peaks.items() for f in fs]
    lo = min(intensities) / 8
    hi = max([*intensities, *ridges]) * 16
    rates_seen = [r.rates.flops_per_s for _, r in points if r.rates]
    rates_seen += [f for fs in peaks.values() for f in fs]
    scale, unit = 1e12, "TFLOP/s"  # always, a CPU's rates too (0.174 TFLOP/s), as everywhere else
    xs = [lo * (hi / lo) ** (k / 200) for k in range(201)]
    entries = len(points) + len(mem_roof) + sum(len(v) for v in peaks.values()) + len(measured)
    fig = new_figure(10.0, 6.0 + 0.22 * entries)
    ax = fig.add_subplot()
    for k, d in enumerate(devices):
        color = ROOF_COLORS[k % len(ROOF_COLORS)]
        if d in mem_roof:
            bw, label = mem_roof[d]
            top = max(peaks.get(d, {}), default=None)
            ys = [bw * x / scale for x in xs]
            if top is not None:
                ys = [min(y, top / scale) for y in ys]
            ax.plot(xs, ys, color=color, lw=2, label=literal_text(f"memory roof: {label}"), gid="memory-roof")
        for n, (peak, label) in enumerate(sorted(peaks.get(d, {}).items(), reverse=True)):
            ridge = peak / mem_roof[d][0]
            ax.plot(
                [ridge, hi],
                [peak / scale, peak / scale],
                color=color,
                lw=2 if n == 0 else 1.5,
                ls="-" if n == 0 else "-.",
                label=literal_text(f"compute roof: {label}"),
                gid="compute-roof",
            )
            ax.axvline(ridge, color=color, ls=":", lw=1)
            ax.annotate(
                f"ridge {units.sig(ridge)} FLOP/B",
                (ridge, peak / scale),
                textcoords="offset points",
                xytext=(4, -12),
                fontsize="small",
                color=color,
            )
    for k, (d, label, bw) in enumerate(measured):
        color = PLATEAU_COLORS[k % len(PLATEAU_COLORS)]
        ax.plot(
            xs,
            [bw * x / scale for x in xs],
            color=color,
            ls=PLATEAU_DASHES[k % len(PLATEAU_DASHES)],
            lw=1.5,
            label=literal_text(f"measured DRAM plateau: {label} ({d})"),
            gid=f"measured-roof-{k}",
        )
    markers = ("o", "s", "^", "D", "v", "P")
    for k, p in enumerate(profiles):
        mine = [r for q, r in points if q is p]
        who = f"{p.script} run {p.run_id}" if p.run_id else p.script
        for j, r in enumerate(mine):
            assert r.rates is not None and r.rates.intensity is not None
            y = r.rates.flops_per_s / scale
            ax.scatter(
                [r.rates.intensity],
                [y],
                s=70,
                zorder=4,
                marker=markers[k % len(markers)],
                color=SERIES[j % len(SERIES)],
                label=literal_text(f"{r.name} ({who}, {_device_of(p)})"),
                gid=f"point-{k}-{j}",
            )
            ax.annotate(
                literal_text(r.name),
                (r.rates.intensity, y),
                textcoords="offset points",
                xytext=(6, 6),
                fontsize="small",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ys_seen = [f / scale for f in rates_seen if f > 0]
    ax.set_ylim(min(ys_seen) / 8, max(ys_seen) * 4)
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel(f"achieved rate ({unit}, log scale)")
    ax.grid(True, which="major", alpha=0.3)
    missing = [d for d in devices if d not in mem_roof]
    no_peak = [d for d in devices if d in mem_roof and d not in peaks]
    above: list[str] = []
    if missing:
        above.append(f"no spec roofs for {', '.join(missing)} (a CPU, or a GPU not in the table)")
    if no_peak:
        above.append(f"no compute roof for {', '.join(no_peak)}: its peak TFLOP/s is not in the spec table")
    # the gaps go above the plot, under the title, where no roof or point can run; each
    # escaped on its own (a line break inside a name would be shown as \n) and wrapped to
    # the figure's width, or the layout squeezes the axes to nothing
    gaps = [line for note in above for line in textwrap.wrap(literal_text(note), REMARK_WIDTH)]
    ax.set_title(
        "Roofline: each timed range by arithmetic intensity and achieved rate", loc="left", pad=6 + 13 * len(gaps)
    )
    if gaps:
        ax.annotate(
            "\n".join(gaps),
            xy=(0, 1),
            xycoords="axes fraction",
            xytext=(0, 4),
            textcoords="offset points",
            fontsize="small",
            color="0.3",
            va="bottom",
            gid="remarks",
        )
    fig.legend(loc="outside lower center", ncols=1, fontsize="small")
    placed = "; ".join(
        f"{r.name} at {units.sig(r.rates.intensity)} FLOP/B, {units.tflops(r.rates.flops_per_s)}"
        for _, r in points
        if r.rates is not None and r.rates.intensity is not None
    )
    caption = (
        "Roofline: a range left of its device's ridge is capped by memory bandwidth (the sloped "
        f"roof), right of it by compute (the flat roof). Measured: {placed}."
        + (" " + " ".join(remarks) if remarks else "")
    )
    return Plot(key="roofline", title="Roofline", caption=caption, figure=fig)


def kernels_figure(profile: ProfileResult, *, top: int = TOP_KERNELS) -> Plot | None:
    """The top kernels by total time, as horizontal bars. None without kernels."""
    kernels = sorted(profile.kernels, key=lambda k: -k.total_ns)[:top]
    if not kernels:
        return None
    fig = new_figure(10.0, 1.2 + 0.45 * len(kernels))
    ax = fig.add_subplot()
    unit = units.time_unit(k.total_ns * 1e-9 for k in kernels)
    names = [literal_text(name) for name in distinct_short_names([k.name for k in kernels])]  # two never alike
    values = [k.total_ns * 1e-9 / unit.size for k in kernels]
    ypos = list(range(len(kernels)))
    bars = ax.barh(ypos, values, color=SERIES[0], gid="kernel-bars")
    ax.set_yticks(ypos, names, fontsize="small")
    ax.invert_yaxis()
    for bar, k in zip(bars, kernels, strict=True):
        pct = f"{units.percent(k.time_pct)}, " if k.time_pct is not None else ""
        ax.annotate(
            f"{pct}{k.instances} calls",
            (bar.get_width(), bar.get_y() + bar.get_height() / 2),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize="small",
        )
    ax.set_xlim(0, max(values) * 1.25)
    what = "CPU ops" if profile.device_type == "cpu" else "GPU kernels"
    ax.set_xlabel(f"total time ({unit.name}), all instances")
    run = f", run {profile.run_id}" if profile.run_id else ""
    device = f" on {profile.device_name}" if profile.device_name else ""
    ax.set_title(literal_text(f"Top {what} by total time: {profile.script}{device}{run}"), loc="left")
    ax.grid(True, axis="x", alpha=0.3)
    key = f"kernels-{profile.run_id}" if profile.run_id else f"kernels-{profile.script}"
    caption = (
        f"The {len(kernels)} {what} that took the most time in {profile.script}{run} (warm-up calls included, as in "
        "nsys's kernel summary)."
    )
    return Plot(key=key, title=f"Top {what}: {profile.script}{run}", caption=caption, figure=fig)


# One colour per kind a step's kernel can have (parse.kinds.StepKernelKind; a test keeps them equal),
# from the Okabe-Ito palette, which colour-blind readers can tell apart.
KIND_COLORS = {
    "gemm": "#0072B2",
    "attention": "#D55E00",
    "norm": "#009E73",
    "elementwise": "#E69F00",
    "copy": "#CC79A7",
    "communication": "#56B4E9",
    "memory": "#F0E442",
    "other": "#7f7f7f",
}


def _time_scale(ns_values: Sequence[float]) -> tuple[float, str]:
    """Divisor and name of the unit for a time axis in ns (units.time_unit's choice)."""

    unit = time_unit([v / 1e9 for v in ns_values])
    return unit.size * 1e9, unit.name


def decode_steps_figure(result: DecodeResult, data: DecodeTimelines, run_label: str) -> Plot | None:
    """One decode step of each mode (the median step, at the smallest batch) on one time
    axis: its kernels as bars per stream, coloured by kind, the gaps between them white,
    its range as a line above. None without timelines."""
    smallest = min((t.batch for t in data.timelines if t.batch is not None), default=None)
    shown: list[ModeTimeline] = [t for t in data.timelines if t.batch == smallest] or list(data.timelines)
    shown = shown[:4]
    if not shown:
        return None
    cpu = shown[0].ops_are == "cpu"
    lanes = [max(t.timeline.streams, 1) for t in shown]
    fig = new_figure(11.0, 1.6 + sum(0.55 * n + 1.1 for n in lanes))
    axes = fig.subplots(len(shown), 1, sharex=True, squeeze=False, height_ratios=[n + 1.2 for n in lanes])[:, 0]
    longest = max(t.timeline.window_ns for t in shown)
    scale, unit = _time_scale([longest])
    seen: set[str] = set()
    for ax, mt in zip(axes, shown, strict=True):
        tl = mt.timeline
        by_lane: dict[tuple[int, str, bool], list[tuple[float, float]]] = {}
        for op in tl.ops:
            by_lane.setdefault((op.stream, op.kind, op.own), []).append(
                (op.start_ns / scale, max(op.end_ns - op.start_ns, 1) / scale)
            )
        for (lane, kind, own), bars in sorted(by_lane.items()):
            label = kind if kind not in seen and own else None
            if label:
                seen.add(kind)
            ax.broken_barh(
                bars,
                (lane + 0.1, 0.8),
                facecolors=KIND_COLORS.get(kind, "#7f7f7f"),
                alpha=1.0 if own else 0.35,
                label=label,
                gid=f"ops-{mt.mode}-{kind}",
            )
        top = tl.streams + 0.35
        if tl.cpu_start_ns is not None and tl.cpu_end_ns is not None:
            ax.plot(
                [tl.cpu_start_ns / scale, tl.cpu_end_ns / scale],
                [top, top],
                color="black",
                lw=3,
                solid_capstyle="butt",
                gid=f"range-{mt.mode}",
            )
        ax.axvline(tl.window_ns / scale, color="0.4", ls=":", lw=1)
        ax.set_ylim(-0.1, tl.streams + 0.7)
        lane_name = "thread" if cpu else "stream"
        ax.set_yticks(
            [k + 0.5 for k in range(tl.streams)] + [top],
            [f"{lane_name} {k + 1}" for k in range(tl.streams)] + ["step range"],
            fontsize="small",
        )
        mode = next((x for x in result.modes if x.mode == mt.mode and x.batch == mt.batch), None)
        facts = ""
        if mode is not None and mode.steps.gpu_busy_pct is not None:
            facts = (
                f": median {mode.steps.step_ms.median:.3g} ms, {'CPU' if cpu else 'GPU'} busy "
                f"{mode.steps.gpu_busy_pct:.0f}%, {len([o for o in tl.ops if o.own])} {'ops' if cpu else 'kernels'}"
            )
        ax.set_title(literal_text(f"{mt.mode or 'steps'}, batch {mt.batch}{facts}"), loc="left", fontsize="medium")
        ax.grid(True, axis="x", alpha=0.3)
    axes[-1].set_xlim(0, longest / scale * 1.02)
    axes[-1].set_xlabel(f"time from the step's start ({unit})")
    what = "CPU ops (no GPU: they stand in for kernels)" if cpu else "kernels"
    fig.suptitle(
        literal_text(f"One decode step, {what}: {result.model.preset or 'model'} on {result.device}, {run_label}"),
        x=0.01,
        ha="left",
    )
    fig.legend(
        loc="outside lower center",
        ncols=6,
        fontsize="small",
        title="kind (faint: another step's work)",
        title_fontsize="small",
    )
    caption = (
        f"The median decode step of each mode at batch {shown[0].batch}, {what} as bars on one time axis: white "
        "between the bars is time the device ran nothing. The black line is the step's range on the CPU."
    )
    return Plot(key=f"decode-steps-{result.run_id or 'run'}", title="One decode step", caption=caption, figure=fig)


def decode_batch_figure(result: DecodeResult, data: DecodeTimelines | None, run_label: str) -> Plot | None:
    """Tokens/s against batch for each mode, with the roofline's prediction as a curve
    and the batch where decode stops being memory-bound. None with a single batch."""
    batches = sorted({x.batch for x in result.modes})
    if len(batches) < 2:
        return None
    fig = new_figure(9.0, 6.0)
    ax = fig.add_subplot()
    for k, mode in enumerate(dict.fromkeys(x.mode for x in result.modes)):
        pts = sorted((x.batch, x.tokens_per_s) for x in result.modes if x.mode == mode)
        ax.plot(
            [b for b, _ in pts],
            [t for _, t in pts],
            marker="o",
            lw=2,
            color=SERIES[k % len(SERIES)],
            label=literal_text(f"measured, {mode}"),
            gid=f"measured-{mode}",
            zorder=3,
        )
    if data is not None and data.roofline:
        xs = [p.batch for p in data.roofline]
        ys = [p.tokens_per_s for p in data.roofline]
        what = (
            "roofline"
            if any(p.bound == "compute" for p in data.roofline) or data.crossover_batch
            else "memory floor (no compute peak known)"
        )
        ax.plot(
            xs,
            ys,
            ls="--",
            color=SPEC_COLOR,
            lw=1.8,
            label=literal_text(f"{what}: {data.bandwidth_label}"),
            gid="roofline",
        )
        if data.crossover_batch is not None and data.crossover_batch <= xs[-1]:
            ax.axvline(
                data.crossover_batch,
                color="0.3",
                ls=":",
                lw=1.2,
                label=f"memory-bound below batch {math.ceil(data.crossover_batch)}, compute-bound above",
                gid="crossover",
            )
    # matplotlib is optional ([report]) and slow to import: only figures load it
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("batch (sequences decoded together)")
    ax.set_ylabel("tokens/s, log scale")
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(
        literal_text(f"Tokens/s against batch: {result.model.preset or 'model'} on {result.device}, {run_label}"),
        loc="left",
    )
    fig.legend(loc="outside lower center", ncols=1, fontsize="small")
    caption = (
        "Measured tokens/s at each batch against the roofline's prediction (the larger of bytes / "
        "bandwidth and FLOPs / peak per step): while memory-bound, a larger batch reads the weights once "
        "for more tokens, so tokens/s grows almost in proportion."
    )
    return Plot(
        key=f"decode-batch-{result.run_id or 'run'}", title="Tokens/s against batch", caption=caption, figure=fig
    )


def save(plot: Plot, folder: Path) -> tuple[Path, Path]:
    """Write `<key>.png` and `<key>.svg` into `folder`; return their paths."""
    png = folder / f"{plot.key}.png"
    svg = folder / f"{plot.key}.svg"
    plot.figure.savefig(png, dpi=DPI, metadata={"Software": "nsightlab"})
    plot.figure.savefig(svg, metadata={"Date": None})
    return png, svg
