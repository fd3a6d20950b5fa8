"""A fleet: the same bandwidth sweep on every GPU type (or every GPU node) of a cluster,
compared. Pure functions over the models of `fleet_models`:

- `measured_entry` / `outcome_entry`: one Job's outcome; `flag_outliers`: nodes more than
  OUTLIER_FRACTION below the median DRAM plateau of their type; `summarize_types`: one
  line per type; `decode_economics` and `cheapest`: the per-token decode floor of a model
  on each type, and what a million tokens cost there (the tutorial's L4-vs-RTX PRO story
  from measurements); `build_fleet_result`: all of it, with the notes
  (`explain.fleet_words`).

A Job's log is read by `parse.records.fleetrun_log`. Pure: no I/O.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence

from nsightlab.analysis.explain.fleet_words import decode_notes, entry_notes
from nsightlab.analysis.fleet_models import (
    DecodeEconomics,
    FleetEntry,
    FleetPlan,
    FleetResult,
    FleetTarget,
    FleetType,
    Status,
)
from nsightlab.analysis.sweep_result import SweepResult
from nsightlab.specs.gpus import for_instance_type, lookup

#: A node whose DRAM plateau is more than this fraction below its type's median is flagged.
OUTLIER_FRACTION = 0.10
#: Above this many Jobs (one per node), `fleet sweep --every-node` asks first.
CONFIRM_ABOVE = 16
GB = 1e9


# ---------------------------------------------------------------------------- entries


def _memory(result: SweepResult | None, target: FleetTarget) -> int | None:
    """The GPU's memory: as torch reported it on a GPU, else the spec table's."""
    if result is not None and result.summary.device_type == "cuda":
        reported = result.record.device.model_dump().get("memory_bytes")
        if isinstance(reported, int) and reported > 0:
            return reported
    spec = lookup(target.gpu_product) or for_instance_type(target.instance_type)
    return spec.memory_bytes if spec is not None else None


def _spec_tbps(product: str | None, instance_type: str) -> float | None:
    spec = lookup(product) or for_instance_type(instance_type)
    return spec.dram_bw_bytes_per_s / 1e12 if spec is not None and spec.dram_bw_bytes_per_s else None


def measured_entry(target: FleetTarget, result: SweepResult, *, node: str | None) -> FleetEntry:
    """A Job that measured: its sweep's figures. The GPU is the one torch named, when the
    sweep ran on it; else the node's (a `--device cpu` run measured the node's CPU)."""
    s = result.summary
    product = s.device_name if s.device_type == "cuda" and s.device_name else target.gpu_product
    return FleetEntry(
        instance_type=target.instance_type,
        node=node or target.node,
        gpu_product=product,
        status="measured",
        run_id=result.run_id,
        launch_floor_us=s.launch_floor_us,
        cache_peak_tbps=s.cache_peak_tbps,
        dram_tbps=s.dram_tbps,
        dram_pct_of_spec=s.dram_pct_of_spec,
        memory_bytes=_memory(result, target),
        spec_dram_tbps=s.spec_dram_tbps if s.device_type == "cuda" else _spec_tbps(product, target.instance_type),
    )


def outcome_entry(
    target: FleetTarget, status: Status, reason: str | None, *, node: str | None = None, log_tail: Sequence[str] = ()
) -> FleetEntry:
    """A Job that did not measure: not scheduled, failed, or past its deadline."""
    return FleetEntry(
        instance_type=target.instance_type,
        node=node or target.node,
        gpu_product=target.gpu_product,
        status=status,
        reason=reason,
        log_tail=list(log_tail),
        memory_bytes=_memory(None, target),
        spec_dram_tbps=_spec_tbps(target.gpu_product, target.instance_type),
    )


def flag_outliers(entries: Sequence[FleetEntry], *, fraction: float = OUTLIER_FRACTION) -> list[FleetEntry]:
    """Per instance type, nodes whose DRAM plateau is more than `fraction` below the
    type's median plateau are outliers. Entries without a plateau stay None."""
    out = [e.model_copy() for e in entries]
    by_type: dict[str, list[FleetEntry]] = {}
    for e in out:
        if e.status == "measured" and e.dram_tbps is not None:
            by_type.setdefault(e.instance_type, []).append(e)
    for group in by_type.values():
        median = statistics.median(e.dram_tbps for e in group if e.dram_tbps is not None)
        for e in group:
            assert e.dram_tbps is not None
            e.outlier = e.dram_tbps < (1 - fraction) * median
    return out


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def decode_economics(
    weights_gb: float, *, dram_tbps: float | None, memory_bytes: int | None, usd_per_hour: float | None
) -> DecodeEconomics:
    """The decode floor of `weights_gb` on a measured plateau: ms per token, tokens/s
    (batch 1), whether the weights fit, and with a price the cost of a million tokens
    at that rate."""
    weight_bytes = weights_gb * GB
    ms = tokens = per_million = None
    if dram_tbps is not None and dram_tbps > 0:
        seconds = weight_bytes / (dram_tbps * 1e12)
        ms, tokens = seconds * 1e3, 1.0 / seconds
        if usd_per_hour is not None:
            per_million = usd_per_hour / (tokens * 3600.0) * 1e6
    return DecodeEconomics(
        weights_gb=weights_gb,
        fits=None if memory_bytes is None else weight_bytes <= memory_bytes,
        ms_per_token=ms,
        tokens_per_s=tokens,
        usd_per_hour=usd_per_hour,
        usd_per_million_tokens=per_million,
    )


def summarize_types(
    entries: Sequence[FleetEntry], *, weights_gb: float | None = None, prices: Mapping[str, float] | None = None
) -> list[FleetType]:
    """One line per instance type (in the entries' order): the median of its measured nodes."""
    order: list[str] = []
    for e in entries:
        if e.instance_type not in order:
            order.append(e.instance_type)
    out = []
    for itype in order:
        group = [e for e in entries if e.instance_type == itype]
        measured = [e for e in group if e.status == "measured"]
        product = next((e.gpu_product for e in measured if e.gpu_product), None) or next(
            (e.gpu_product for e in group if e.gpu_product), None
        )
        dram = _median(e.dram_tbps for e in measured)
        decode = None
        if weights_gb is not None:
            memory = next((e.memory_bytes for e in measured if e.memory_bytes), None) or next(
                (e.memory_bytes for e in group if e.memory_bytes), None
            )
            decode = decode_economics(
                weights_gb, dram_tbps=dram, memory_bytes=memory, usd_per_hour=(prices or {}).get(itype)
            )
        out.append(
            FleetType(
                instance_type=itype,
                gpu_product=product,
                measured=len(measured),
                launch_floor_us=_median(e.launch_floor_us for e in measured),
                cache_peak_tbps=_median(e.cache_peak_tbps for e in measured),
                dram_tbps=dram,
                dram_pct_of_spec=_median(e.dram_pct_of_spec for e in measured),
                decode=decode,
            )
        )
    return out


def cheapest(types: Sequence[FleetType], target_tokens_per_s: float | None = None) -> FleetType | None:
    """The type whose million tokens cost least at the decode floor, among those whose
    weights fit and that reach `target_tokens_per_s` (one sequence, batch 1); ties go to
    the lower hourly price. None when no priced type qualifies."""
    ok = [
        t
        for t in types
        if t.decode is not None
        and t.decode.fits is True
        and t.decode.usd_per_million_tokens is not None
        and t.decode.tokens_per_s is not None
        and (target_tokens_per_s is None or t.decode.tokens_per_s >= target_tokens_per_s)
    ]
    return min(ok, key=lambda t: (t.decode.usd_per_million_tokens, t.decode.usd_per_hour or 0.0)) if ok else None  # type: ignore[union-attr]


def build_fleet_result(plan: FleetPlan, entries: Sequence[FleetEntry]) -> FleetResult:
    """The fleet's result: entries (outliers flagged with --every-node), one line per type
    with the decode figures when asked, and the notes."""
    rows = flag_outliers(entries) if plan.every_node else [e.model_copy() for e in entries]
    types = summarize_types(rows, weights_gb=plan.weights_gb, prices=plan.prices)
    notes: list[str] = list(plan.notes)
    if plan.device == "cpu":
        notes.append("measured with --device cpu: these figures are the nodes' CPUs, not their GPUs")
    type_dram: dict[str, list[float]] = {}
    for e in rows:
        if e.status == "measured" and e.dram_tbps is not None:
            type_dram.setdefault(e.instance_type, []).append(e.dram_tbps)
    notes += entry_notes(plan, rows, type_dram)
    if plan.weights_gb is not None:
        notes += decode_notes(
            types,
            rows,
            weights_gb=plan.weights_gb,
            target_tokens_per_s=plan.target_tokens_per_s,
            best=cheapest(types, plan.target_tokens_per_s),
        )
    return FleetResult(
        fleet_id=plan.fleet_id,
        context=plan.context,
        namespace=plan.namespace,
        dtype=plan.dtype,
        entries=rows,
        types=types,
        notes=notes,
    )
