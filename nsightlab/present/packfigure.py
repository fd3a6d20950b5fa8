"""The figure of a `pack colocate` run, drawn with matplotlib (a figure module, like
`figures.py`: the only kind that imports it): aggregate tokens/s and each copy's step
time against the number of copies at once, with the bandwidth ceiling."""

from __future__ import annotations

from nsightlab.analysis.colocate_models import ColocateResult
from nsightlab.present.figures import SERIES, SPEC_COLOR, Plot, literal_text, new_figure


def colocate_figure(result: ColocateResult) -> Plot:
    """Left axis: aggregate tokens/s per sharing mode, and the tokens/s the DRAM plateau
    allows (bytes per step at the plateau); right axis: the median step of a copy."""
    if not result.results:
        raise ValueError("no results to plot")
    fig = new_figure(9.5, 6.0)
    ax = fig.add_subplot()
    step_ax = ax.twinx()
    sharings = list(dict.fromkeys(x.sharing for x in result.results))
    for i, sharing in enumerate(sharings):
        rows = sorted((x for x in result.results if x.sharing == sharing), key=lambda x: x.copies)
        ks = [x.copies for x in rows]
        colour = SERIES[i % len(SERIES)]
        ax.plot(
            ks,
            [x.aggregate_tokens_per_s for x in rows],
            marker="o",
            lw=2,
            color=colour,
            label=literal_text(f"{sharing}: aggregate tokens/s"),
            gid=f"pack-tokens-{sharing}",
        )
        step_ax.plot(
            ks,
            [x.step_ms.median for x in rows],
            marker="s",
            ls="--",
            lw=1.4,
            color=colour,
            label=literal_text(f"{sharing}: a copy's median step (ms)"),
            gid=f"pack-step-{sharing}",
        )
        if result.plateau_tbps:
            # at the plateau, tokens/s = plateau / bytes a token's step reads (per copy, the same model)
            first = rows[0]
            per_token = first.aggregate_tbps / first.aggregate_tokens_per_s if first.aggregate_tokens_per_s else None
            if per_token:
                ceiling = result.plateau_tbps / per_token
                ax.axhline(
                    ceiling,
                    color=SPEC_COLOR,
                    ls=":",
                    lw=1.4,
                    label=literal_text(
                        f"bandwidth ceiling: {ceiling:.3g} tokens/s at the {result.plateau_basis or ''} plateau "
                        f"{result.plateau_tbps:.3g} TB/s"
                    ),
                    gid=f"pack-ceiling-{sharing}",
                )
    ks_all = sorted({x.copies for x in result.results})
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks_all, [str(k) for k in ks_all])
    ax.set_xlabel("copies at once on one device")
    ax.set_ylabel("aggregate tokens/s (all copies)")
    step_ax.set_ylabel("median step of a copy (ms)")
    ax.set_ylim(bottom=0)
    step_ax.set_ylim(0, max(x.step_ms.median for x in result.results) * 1.3)
    ax.grid(True, alpha=0.3)
    ax.set_title(
        literal_text(f"{result.preset or 'decode'} x K copies on {result.device}, batch {result.batch} each"),
        loc="left",
    )
    fig.legend(loc="outside lower center", ncols=2, fontsize="small")
    caption = (
        "Aggregate tokens/s (solid) grows while one copy leaves the device idle and flattens once the copies "
        "together saturate its memory bandwidth (dotted: the tokens/s its DRAM plateau allows); each copy's step "
        "(dashed, right axis) is the price."
    )
    key = f"pack-{result.run_id or 'run'}"
    return Plot(key=key, title="Copies at once", caption=caption, figure=fig)
