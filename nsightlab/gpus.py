"""GPU spec table (placeholder until the full table lands)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuSpec:
    name: str


_BY_TYPE = {"g6": "NVIDIA L4", "g7e": "NVIDIA RTX PRO 6000 Blackwell Server Edition"}


def for_instance_type(itype: str) -> GpuSpec | None:
    family = itype.split(".")[0]
    return GpuSpec(_BY_TYPE[family]) if family in _BY_TYPE else None


def lookup(name: str) -> GpuSpec | None:
    return None
