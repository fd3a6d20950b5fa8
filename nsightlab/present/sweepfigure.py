"""The report's bandwidth-sweep figure: one panel per dtype and implementation, each
run's regimes shown as that run measured them.

A panel holds the runs of one dtype and one implementation (`x.mul_`, `x.mul_ + x.add_`,
Triton's kernel), on whatever devices they ran: those curves answer the same question.
Its background shows the regimes of its run when it holds one run; with several, a strip
under it shows each run's regimes on its own row, so no run's regimes stand for another's.
A run that is not a bandwidth test (a low-precision dtype on a CPU, where the times
measure the conversion; Triton's interpreter) is left out, with a note under the panels
and in the caption, unless no run is a bandwidth test: then they are drawn, and each
panel says what they are not. Titles, legend labels and notes are wrapped to the figure's
width, so nothing is cut off.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nsightlab import units
from nsightlab.present.figures import (
    LOG_Y_RATIO,
    REFERENCE_COLOR,
    SERIES,
    SPEC_COLOR,
    Plot,
    device_label,
    literal_text,
    new_figure,
)
from nsightlab.present.text import series_name as run_name
from nsightlab.present.text import sweep_caption, tbps_text, what_ran

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import SubFigure

    from nsightlab.analysis.sweep_result import SweepResult

REGIME_COLORS = {
    "launch": "#d9d9d9",
    "cache": "#c6dbef",
    "transition": "#fdd0a2",
    "dram": "#c7e9c0",
    "interpreted": "#f0f0f0",
}
REGIME_NAMES = {
    "launch": "launch-bound",
    "cache": "cache-resident",
    "transition": "transition",
    "dram": "DRAM-bound",
    "interpreted": "interpreted (correctness only)",
}
WIDTH = 10.0  # inches
#: Characters per line that fit the figure's width: titles at their size, the legend's
#: labels in its two columns (at the legend's small size).
TITLE_CHARS = 88
LABEL_CHARS = 58
NOTE_CHARS = 120


def _exponent(x: float) -> str:
    """log2 of a size: 26 when whole, else three significant figures (26.9)."""
    return f"{x:.0f}" if x.is_integer() else units.sig(x)


def series_label(s: SweepResult) -> str:
    run = f", run {s.run_id}" if s.run_id else ""
    return f"{run_name(s)}, {device_label(s)}{run}"


def is_bandwidth_test(s: SweepResult) -> bool:
    """Whether the run's TB/s are memory bandwidth (not an interpreter's, not a conversion's)."""
    return s.summary.bandwidth_test and not s.interpreted


def _why_not(s: SweepResult) -> str:
    if s.interpreted:
        return "Triton's interpreter: correctness only"
    return s.summary.plateau_reason or "not a bandwidth test"


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False)) or text


def _spans(xs: Sequence[float]) -> list[tuple[float, float]]:
    """Each point's stretch of the axis: halfway to its neighbours; at the ends, as far
    out as in, but no more than one step of log2 (nothing was measured beyond)."""
    if not xs:
        return []
    if len(xs) == 1:
        return [(xs[0] - 0.5, xs[0] + 0.5)]
    mids = [(a + b) / 2 for a, b in itertools.pairwise(xs)]
    first = xs[0] - min(mids[0] - xs[0], 1.0)
    last = xs[-1] + min(xs[-1] - mids[-1], 1.0)
    bounds = [first, *mids, last]
    return list(itertools.pairwise(bounds))


def regime_runs(rows: Sequence[Any]) -> list[tuple[float, float, str]]:
    """Consecutive sizes of one regime merged: (x0, x1, regime)."""
    xs = [float(r.log2) for r in rows]
    out: list[tuple[float, float, str]] = []
    for (x0, x1), r in zip(_spans(xs), rows, strict=True):
        if out and out[-1][2] == r.regime and math.isclose(out[-1][1], x0):
            out[-1] = (out[-1][0], x1, r.regime)
        else:
            out.append((x0, x1, r.regime))
    return out


def panels(sweeps: Sequence[SweepResult]) -> tuple[list[list[SweepResult]], list[SweepResult]]:
    """The runs of each panel (one per dtype and implementation, in the order the runs
    come), and the runs left out (not bandwidth tests, when some run is one)."""
    measured = [s for s in sweeps if is_bandwidth_test(s)]
    drawn = measured or list(sweeps)
    left_out = [s for s in sweeps if s not in drawn]
    groups: dict[tuple[str, str], list[SweepResult]] = {}
    for s in drawn:
        groups.setdefault((s.dtype, what_ran(s)), []).append(s)
    return list(groups.values()), left_out


def _panel_title(runs: Sequence[SweepResult], *, name_devices: bool) -> str:
    s = runs[0]
    devices = ", ".join(dict.fromkeys(device_label(r) for r in runs))
    title = f"{s.dtype} {what_ran(s)}" + (f" on {devices}" if name_devices else "")
    if not is_bandwidth_test(s):
        title += f" (not a bandwidth test: {_why_not(s)})"
    return _wrap(literal_text(title), TITLE_CHARS)


def _shade(ax: Axes, run: SweepResult) -> None:
    """The background: the regimes of the panel's one run."""
    named: set[str] = set()
    for x0, x1, regime in regime_runs(sorted(run.rows, key=lambda r: r.log2)):
        label = None if regime in named else REGIME_NAMES.get(regime, regime)
        named.add(regime)
        ax.axvspan(
            x0, x1, color=REGIME_COLORS.get(regime, "#eeeeee"), alpha=0.6, lw=0, label=label, gid=f"regime-{regime}"
        )


def _strip(strip: Axes, ax: Axes, runs: Sequence[SweepResult]) -> None:
    """Each run's regimes on its own row under the panel, each regime named once in the legend."""
    # matplotlib is optional ([report]) and slow to import: only figures load it
    from matplotlib.patches import Rectangle

    seen = {r.regime for s in runs for r in s.rows}
    for k, s in enumerate(runs):
        for x0, x1, regime in regime_runs(sorted(s.rows, key=lambda r: r.log2)):
            strip.broken_barh(
                [(x0, x1 - x0)], (k - 0.4, 0.8), color=REGIME_COLORS.get(regime, "#eeeeee"), edgecolor="white"
            )
    for regime, name in REGIME_NAMES.items():
        if regime in seen:
            ax.add_patch(
                Rectangle(
                    (0, 0), 0, 0, color=REGIME_COLORS[regime], alpha=0.6, lw=0, label=name, gid=f"legend-{regime}"
                )
            )
    strip.set_yticks(range(len(runs)), [literal_text(f"{run_name(s)} {s.run_id or ''}".strip()) for s in runs])
    strip.set_ylim(len(runs) - 0.5, -0.5)
    strip.set_title("regimes of each run (the panel's background would show only one)", loc="left", fontsize="small")
    strip.set_xlabel("tensor size, log2(elements)")
    strip.set_gid("strip")


def _curves(ax: Axes, runs: Sequence[SweepResult], colors: dict[int, str]) -> list[float]:
    """The runs' curves, the tutorial's where it matches, the DRAM spec, each plateau and
    cache size; the TB/s values drawn (for the y scale)."""
    values: list[float] = []
    for i, s in enumerate(runs):
        rows = sorted(s.rows, key=lambda r: r.log2)
        values += [r.tbps for r in rows]
        ax.plot(
            [r.log2 for r in rows],
            [r.tbps for r in rows],
            marker="o",
            lw=2,
            color=colors[id(s)],
            label=_wrap(literal_text(series_label(s)), LABEL_CHARS),
            gid=f"series-{i}",
            zorder=3,
            ls="-" if is_bandwidth_test(s) else ":",
        )
    ref = next((s.reference for s in runs if s.reference is not None and s.reference.matches_device), None)
    if ref is not None:
        values += [r.tbps for r in ref.rows]
        ax.plot(
            [r.log2 for r in ref.rows],
            [r.tbps for r in ref.rows],
            ls="--",
            marker="x",
            color=REFERENCE_COLOR,
            label=_wrap(literal_text(f"tutorial's sweep: {ref.gpu}, {ref.dtype}"), LABEL_CHARS),
            gid="reference",
            zorder=2,
        )
    specs: dict[float, str] = {}
    for s in runs:
        if s.summary.spec_dram_tbps is not None:
            specs.setdefault(s.summary.spec_dram_tbps, s.summary.spec_label or tbps_text(s.summary.spec_dram_tbps))
    for value, label in specs.items():
        values.append(value)
        ax.axhline(
            value,
            color=SPEC_COLOR,
            ls="-.",
            lw=1.5,
            label=_wrap(literal_text(f"DRAM spec: {label}"), LABEL_CHARS),
            gid="dram-spec",
            zorder=2,
        )
    caches: set[tuple[int, int]] = set()
    for i, s in enumerate(runs):
        color = colors[id(s)]
        if s.summary.dram_tbps is not None:
            est = "~" if s.summary.dram_is_estimate else ""
            text = f"measured DRAM plateau {est}{tbps_text(s.summary.dram_tbps)} ({run_name(s)})"
            ax.axhline(
                s.summary.dram_tbps,
                color=color,
                ls=":",
                lw=1.2,
                label=_wrap(literal_text(text), LABEL_CHARS),
                gid=f"plateau-{i}",
            )
        l2 = s.summary.l2_bytes
        if l2 and (l2, s.element_size) not in caches:
            caches.add((l2, s.element_size))
            x = math.log2(l2 / s.element_size)
            name = "L2" if s.summary.device_type == "cuda" else "last-level cache"
            text = f"{name} {units.size(l2)} = 2^{_exponent(x)} {s.dtype} elements"
            ax.axvline(
                x,
                color=color,
                ls="--",
                lw=1.2,
                alpha=0.8,
                label=_wrap(literal_text(text), LABEL_CHARS),
                gid=f"cache-{i}",
            )
    return values


def _draw_panel(
    sub: SubFigure, k: int, runs: Sequence[SweepResult], colors: dict[int, str], *, name_devices: bool
) -> None:
    several = len(runs) > 1
    if several:
        grid = sub.add_gridspec(2, 1, height_ratios=[6.0, 0.35 * len(runs) + 0.5])
        ax = sub.add_subplot(grid[0])
        _strip(sub.add_subplot(grid[1], sharex=ax), ax, runs)
        ax.tick_params(labelbottom=False)
    else:
        ax = sub.add_subplot()
        _shade(ax, runs[0])
        ax.set_xlabel("tensor size, log2(elements)")
    ax.set_gid(f"panel-{k}")
    values = _curves(ax, runs, colors)
    positive = [v for v in values if v > 0]
    if positive and max(positive) / min(positive) > LOG_Y_RATIO:
        ax.set_yscale("log")
        ax.set_ylabel("TB/s, log scale\n(bytes read + written / time per call)")
    else:
        ax.set_ylim(bottom=0)
        ax.set_ylabel("TB/s\n(bytes read + written / time per call)")
    sizes = sorted({r.log2 for s in runs for r in s.rows})
    ax.set_xticks(sizes, [f"$2^{{{n}}}$" for n in sizes])
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(_panel_title(runs, name_devices=name_devices), loc="left")
    sub.legend(loc="outside lower center", ncols=2, fontsize="small")


def _height(runs: Sequence[SweepResult]) -> float:
    """A panel's height in inches: the plot, its strip, its legend's rows."""
    entries = len(runs) * 3 + 4  # curves, plateaus, caches, regimes, spec, the tutorial's
    return 4.6 + (0.3 * len(runs) + 0.5 if len(runs) > 1 else 0.0) + 0.17 * math.ceil(entries / 2)


def sweep_figure(sweeps: Sequence[SweepResult]) -> Plot:
    """log2(elements) vs TB/s: a panel per dtype and implementation (see the module's
    docstring), regimes per run, spec and caches marked."""
    if not sweeps:
        raise ValueError("no sweep to plot")
    groups, left_out = panels(sweeps)
    heights = [_height(g) for g in groups]
    note = ""
    if left_out:
        names = "; ".join(f"{series_label(s)}: {_why_not(s)}" for s in left_out)
        note = _wrap(
            literal_text(f"Not drawn (not bandwidth tests; their tables are in the report): {names}."), NOTE_CHARS
        )
    fig = new_figure(WIDTH, sum(heights) + 0.6 + (0.2 * (note.count("\n") + 1) if note else 0.0))
    devices = ", ".join(dict.fromkeys(device_label(s) for g in groups for s in g))
    fig.suptitle(_wrap(literal_text(f"Bandwidth sweep on {devices}"), TITLE_CHARS), x=0.01, ha="left", fontsize="large")
    if note:
        fig.supxlabel(note, x=0.01, ha="left", fontsize="small")
    colors = {id(s): SERIES[i % len(SERIES)] for i, s in enumerate(itertools.chain(*groups))}
    subs = fig.subfigures(len(groups), 1, height_ratios=heights, squeeze=False)[:, 0]
    several_devices = len({device_label(s) for g in groups for s in g}) > 1
    for k, (sub, runs) in enumerate(zip(subs, groups, strict=True)):
        _draw_panel(sub, k, runs, colors, name_devices=several_devices)
    caption = sweep_caption(sweeps, ", ".join(dict.fromkeys(device_label(s) for s in sweeps)))
    if len(groups) > 1:
        caption += f" One panel per dtype and implementation ({len(groups)})."
    if left_out:
        caption += " Not drawn, as not bandwidth tests: " + ", ".join(
            f"{run_name(s)}" + (f" (run {s.run_id})" if s.run_id else "") for s in left_out
        )
        caption += "."
    return Plot(key="sweep", title="Bandwidth sweep", caption=caption, figure=fig)
