"""A fleet's notes: what did not measure and why, the nodes that fall below their type,
and what the decode figures say (the cheapest type for the target, weights that do not
fit, memory a small model leaves idle)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from nsightlab.analysis.fleet_models import FleetEntry, FleetPlan, FleetType
from nsightlab.units import gigabytes, percent, sig, size, usd

GB = 1e9


#: Weights filling less than this share of a GPU's memory leave most of it idle.
IDLE_MEMORY_SHARE = 0.10


def decode_notes(
    types: Sequence[FleetType],
    entries: Sequence[FleetEntry],
    *,
    weights_gb: float,
    target_tokens_per_s: float | None,
    best: FleetType | None,
) -> list[str]:
    """What the decode figures say: the cheapest type for the target (`best`, chosen by
    `fleet_result.cheapest`), types the weights do not fit, and memory a small model leaves
    idle."""
    notes: list[str] = []
    w = gigabytes(weights_gb * GB)
    memory = {e.instance_type: e.memory_bytes for e in entries if e.memory_bytes}
    for t in types:
        d = t.decode
        if d is None:
            continue
        if d.fits is False:
            notes.append(f"{t.instance_type}: {w} of weights do not fit in its {size(memory[t.instance_type])} GPU")
        elif (
            d.fits
            and t.measured
            and t.instance_type in memory
            and weights_gb * GB < IDLE_MEMORY_SHARE * memory[t.instance_type]
        ):
            share = 100.0 * weights_gb * GB / memory[t.instance_type]
            notes.append(
                f"{t.instance_type}: the weights fill {percent(share)} of its {size(memory[t.instance_type])}; "
                "decode speed comes "
                "from bandwidth, not capacity, so most of that memory sits idle (room for a larger batch's KV "
                "cache, or a smaller GPU)"
            )
        if t.measured and d.ms_per_token is None:
            notes.append(f"{t.instance_type}: no DRAM plateau was measured, so no decode floor (sweep larger sizes)")
    if not any(t.decode is not None and t.decode.tokens_per_s is not None for t in types):
        return notes  # no floor anywhere: nothing to price (the notes above say why)
    priced = [t for t in types if t.decode is not None and t.decode.usd_per_hour is not None]
    if not priced:
        if any(t.decode is not None for t in types):
            notes.append(
                "no prices: set `prices: {g7e.8xlarge: 3.14}` (USD per hour) in config.yaml or pass --price "
                "TYPE=USD for the cost per million tokens"
            )
        return notes
    goal = f", at least {sig(target_tokens_per_s)} tokens/s" if target_tokens_per_s is not None else ""
    if best is not None and best.decode is not None:
        d = best.decode
        assert d.usd_per_million_tokens is not None and d.tokens_per_s is not None and d.usd_per_hour is not None
        notes.append(
            f"cheapest per million tokens at the decode floor ({w} fit{goal}): {best.instance_type}, "
            f"{usd(d.usd_per_million_tokens)} per million tokens ({sig(d.tokens_per_s)} tokens/s at "
            f"{usd(d.usd_per_hour)}/h)"
        )
    else:
        fastest = max(
            (t for t in types if t.decode is not None and t.decode.tokens_per_s is not None),
            key=lambda t: t.decode.tokens_per_s or 0.0,  # type: ignore[union-attr]
            default=None,
        )
        best_text = (
            f" (fastest: {fastest.instance_type} at {sig(fastest.decode.tokens_per_s)} tokens/s)"
            if fastest is not None and fastest.decode and fastest.decode.tokens_per_s
            else ""
        )
        reach = f" and reaches {sig(target_tokens_per_s)} tokens/s" if target_tokens_per_s is not None else ""
        notes.append(f"no priced type fits {w}{reach}{best_text}")
    return notes


def entry_notes(plan: FleetPlan, rows: Sequence[FleetEntry], type_dram: Mapping[str, list[float]]) -> list[str]:
    """What each Job came to when it did not simply measure (not scheduled, failed, a device
    that contradicts its node), each outlier against the plateaus of its type's measured
    nodes (`type_dram`), and why no node could be compared."""
    notes: list[str] = []
    for e in rows:
        where = e.node if plan.every_node and e.node else e.instance_type
        if e.status == "not-scheduled":
            notes.append(
                f"{where}: not scheduled within {sig(plan.schedule_timeout)} s "
                f"({e.reason or 'no reason given'}); its Job was deleted"
            )
        elif e.status in ("failed", "timeout"):
            notes.append(f"{where}: {e.status}: {e.reason or 'no reason given'}")
        elif e.reason:  # measured, with a device its log names against the node's label or --device
            notes.append(f"{where}: {e.reason}")
        if e.outlier:
            group = type_dram[e.instance_type]
            median = statistics.median(group)
            assert e.dram_tbps is not None
            notes.append(
                f"{e.node}: DRAM plateau {sig(e.dram_tbps)} TB/s, {percent(100 * (1 - e.dram_tbps / median))} "
                "below the median of "
                f"its {len(group)} {e.instance_type} nodes ({sig(median)} TB/s): an outlier (check its clocks, "
                "temperature and ECC errors)"
            )
    if plan.every_node and any(e.status == "measured" for e in rows) and all(e.outlier is None for e in rows):
        notes.append("no node reached a DRAM plateau, so none could be compared with its siblings (sweep larger sizes)")
    return notes
