"""`pack colocate`: K copies of the decode loop at once on one device, and what it shows.

`lab_scripts/colocate.py` writes one record (`kind: colocate`): per K, each copy's
step times and the aggregate tokens/s and bytes/s. This module reads it and writes the
lesson from the numbers: aggregate tokens/s grows while one copy leaves the device idle
and flattens once the copies together saturate its memory bandwidth (or, on a CPU, its
cores and memory bandwidth); the K where it flattens, and what each copy's step pays
there. The result is stored as a run of kind `pack`. Pure.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from nsightlab.errors import ParseError
from nsightlab.models import Model, loads
from nsightlab.specs import bounds
from nsightlab.units import percent, sig

#: Going from K copies to the next K adds less than this share of aggregate tokens/s: flat.
FLAT_GAIN = 0.15


class _Lenient(Model):
    model_config = ConfigDict(extra="ignore")


class RecordCopy(_Lenient):
    copy_: int = Field(alias="copy")
    median_step_s: float
    p90_step_s: float
    tokens_per_s: float
    bytes_per_step: int


class RecordRun(_Lenient):
    sharing: str
    copies: int
    memory_fraction: float | None = None
    per_copy: list[RecordCopy]
    median_step_s: float
    p90_step_s: float
    aggregate_tokens_per_s: float
    aggregate_bytes_per_s: float


class ColocateRecord(_Lenient):
    """What nsightlab reads of colocate.py's JSON."""

    kind: Literal["colocate"]
    device: dict[str, Any] = Field(default_factory=dict)
    model: dict[str, Any] = Field(default_factory=dict)
    batch: int
    tokens: int
    prompt_len: int
    threads_per_copy: int | None = None
    mps: dict[str, Any] = Field(default_factory=dict)
    runs: list[RecordRun]
    skipped: list[dict[str, Any]] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    @property
    def device_type(self) -> str:
        return str(self.device.get("type") or "cuda")

    @property
    def device_name(self) -> str | None:
        name = self.device.get("name")
        return str(name) if name else None


def load_colocate_record(path: Path) -> ColocateRecord:
    """colocate.py's JSON, or ParseError naming the file."""
    try:
        data = loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ParseError(f"not valid JSON ({e.msg})", source=path, line=e.lineno) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ParseError(f"cannot read the file: {e}", source=path) from None
    if not isinstance(data, dict) or data.get("kind") != "colocate":
        raise ParseError("not colocate.py's JSON (kind is not 'colocate')", source=path)
    try:
        record = ColocateRecord.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ParseError(
            f"bad colocate JSON at {'.'.join(str(p) for p in err['loc'])}: {err['msg']}", source=path
        ) from None
    bounds.refuse(
        (
            bounds.check_call(
                f"{run.copies} copies, copy {copy.copy_}", seconds=copy.median_step_s, bytes_moved=copy.bytes_per_step
            )
            for run in record.runs
            for copy in run.per_copy
        ),
        source=path,
    )
    return record


class StepMs(Model):
    median: float
    p90: float


class ColocateLine(Model):
    sharing: str  # time-slicing, mps (GPU) or processes (CPU)
    copies: int
    step_ms: StepMs  # over every step of every copy
    per_copy: list[StepMs]
    aggregate_tokens_per_s: float
    aggregate_tbps: float
    pct_of_plateau: float | None


class ColocateResult(Model):
    """`nsightlab pack colocate --json` (and the run's result.json)."""

    kind: Literal["pack"] = "pack"
    run_id: str | None = None
    device: str  # the GPU's name, or "cpu (NAME)"
    preset: str | None
    batch: int
    tokens: int
    results: list[ColocateLine]
    plateau_tbps: float | None
    plateau_basis: Literal["measured", "spec"] | None = None
    plateau_label: str | None = None
    flattens_at: dict[str, int | None] = Field(default_factory=dict)  # per sharing: the K where it flattens
    mps: str | None = None  # why MPS was not measured, or None when it was
    lesson: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    @property
    def headline(self) -> str:
        parts = []
        for sharing in dict.fromkeys(x.sharing for x in self.results):
            rows = [x for x in self.results if x.sharing == sharing]
            best = max(rows, key=lambda x: x.aggregate_tokens_per_s)
            parts.append(f"{sharing}: {sig(best.aggregate_tokens_per_s)} tokens/s at {best.copies} copies")
        return "; ".join(parts)


def flattens_at(lines: list[ColocateLine]) -> int | None:
    """The first K from which one more step of K adds less than FLAT_GAIN of aggregate tokens/s."""
    rows = sorted(lines, key=lambda x: x.copies)
    for a, b in itertools.pairwise(rows):
        if b.aggregate_tokens_per_s < a.aggregate_tokens_per_s * (1 + FLAT_GAIN):
            return a.copies
    return None


def _copies(k: int) -> str:
    return f"{k} cop{'y' if k == 1 else 'ies'}"


def _lesson(sharing: str, rows: list[ColocateLine], flat: int | None, cpu: bool) -> list[str]:
    rows = sorted(rows, key=lambda x: x.copies)
    one, last = rows[0], rows[-1]
    what = "the CPU's cores and memory bandwidth" if cpu else "the GPU's memory bandwidth"
    out = [
        f"{sharing}: {_copies(one.copies)} -> {last.copies}: aggregate "
        f"{sig(one.aggregate_tokens_per_s)} -> {sig(last.aggregate_tokens_per_s)} tokens/s "
        f"({sig(last.aggregate_tokens_per_s / one.aggregate_tokens_per_s)}x) while each copy's median step goes "
        f"{sig(one.step_ms.median)} -> {sig(last.step_ms.median)} ms ({sig(last.step_ms.median / one.step_ms.median)}x)"
    ]
    if flat is None:
        out.append(
            f"{sharing}: aggregate tokens/s still grows at {_copies(last.copies)}: one copy leaves {what} idle, and "
            "more copies fill it; try more copies to find where it flattens"
        )
    else:
        at = next(x for x in rows if x.copies == flat)
        plateau = f" ({percent(at.pct_of_plateau)} of the plateau)" if at.pct_of_plateau is not None else ""
        out.append(
            f"{sharing}: it flattens at {_copies(flat)}, {sig(at.aggregate_tbps)} TB/s together{plateau}: the copies "
            f"together saturate {what}; past that a copy only waits longer, each step there costing "
            f"{sig(at.step_ms.median / one.step_ms.median)}x its time alone"
        )
    return out


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
        lesson += _lesson(sharing, rows, flats[sharing], cpu)
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
