"""`pack colocate`: K copies of the decode loop at once on one device, and what it shows.

`lab_scripts/colocate.py` writes one record (`kind: colocate`, read by
`parse.records.colocate_record`): per K, each copy's step times and the aggregate tokens/s
and bytes/s. `build_colocate` turns it into the result (`colocate_models`): the aggregate
against the device's DRAM plateau, and the K where it flattens (once the copies together
saturate its memory bandwidth, or on a CPU its cores and memory bandwidth); the lesson's
sentences are `explain.pack_words`. Stored as a run of kind `pack`. Pure.
"""

from __future__ import annotations

import itertools

from nsightlab.analysis.colocate_models import ColocateLine, ColocateResult, StepMs
from nsightlab.analysis.explain.pack_words import colocate_lesson
from nsightlab.parse.records.colocate_record import ColocateRecord

#: Going from K copies to the next K adds less than this share of aggregate tokens/s: flat.
FLAT_GAIN = 0.15


def flattens_at(lines: list[ColocateLine]) -> int | None:
    """The first K from which one more step of K adds less than FLAT_GAIN of aggregate tokens/s."""
    rows = sorted(lines, key=lambda x: x.copies)
    for a, b in itertools.pairwise(rows):
        if b.aggregate_tokens_per_s < a.aggregate_tokens_per_s * (1 + FLAT_GAIN):
            return a.copies
    return None


def build_colocate(
    record: ColocateRecord, *, plateau_tbps: float | None, basis: str | None, label: str | None
) -> ColocateResult:
    cpu = record.device_type == "cpu"
    name = record.device_name
    lines = []
    for run in record.runs:
        tbps = run.aggregate_bytes_per_s / 1e12
        lines.append(
            ColocateLine(
                sharing=run.sharing,
                copies=run.copies,
                step_ms=StepMs(median=run.median_step_s * 1e3, p90=run.p90_step_s * 1e3),
                per_copy=[StepMs(median=c.median_step_s * 1e3, p90=c.p90_step_s * 1e3) for c in run.per_copy],
                aggregate_tokens_per_s=run.aggregate_tokens_per_s,
                aggregate_tbps=tbps,
                pct_of_plateau=100.0 * tbps / plateau_tbps if plateau_tbps else None,
            )
        )
    flats: dict[str, int | None] = {}
    lesson: list[str] = []
    for sharing in dict.fromkeys(x.sharing for x in lines):
        rows = [x for x in lines if x.sharing == sharing]
        flats[sharing] = flattens_at(rows)
        lesson += colocate_lesson(sharing, rows, flats[sharing], cpu)
    notes = list(record.notes)
    if plateau_tbps is None:
        notes.append(
            "no DRAM plateau of this device is stored: "
            + ("`nsightlab sweep --local --device cpu` measures this CPU's" if cpu else "`nsightlab sweep` measures it")
        )
    elif label:
        notes.append(f"the plateau: {label}")
    if cpu:
        notes.append("measured on a CPU: the copies share its cores and memory bandwidth, the same curve a GPU shows")
    mps_reason = record.mps.get("reason") if not record.mps.get("used") else None
    return ColocateResult(
        device=f"cpu ({name})" if cpu else (name or "cuda"),
        preset=record.model.get("preset"),
        batch=record.batch,
        tokens=record.tokens,
        results=lines,
        plateau_tbps=plateau_tbps,
        plateau_basis=basis if basis in ("measured", "spec") else None,  # type: ignore[arg-type]
        plateau_label=label,
        flattens_at=flats,
        mps=str(mps_reason) if mps_reason else None,
        lesson=lesson,
        notes=notes,
    )
