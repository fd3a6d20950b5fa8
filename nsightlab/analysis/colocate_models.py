"""What `pack colocate` shows: per sharing mode and K copies, the step times and the
aggregate tokens/s and TB/s against the device's plateau, the K where it flattens, the
lesson (`ColocateResult`, stored as a run of kind `pack`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from nsightlab.models import Model
from nsightlab.units import sig


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
