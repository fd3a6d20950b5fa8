"""How many copies of a model one GPU holds under each way of sharing it, and what binds.

The arithmetic of `nsightlab pack`, pure and small enough to check by hand:

- **Memory.** A copy needs `need_gib` (weights + activations + CUDA graphs + memory
  outside torch + its KV cache at the target concurrency and length). A card offers
  `USABLE_FRACTION` of its memory to copies (vLLM's own default share of a card; the rest
  is headroom for CUDA contexts and fragmentation). Time-slicing and MPS put
  floor(usable / need) copies on a card; a MIG slice holds one copy when the need fits
  its share of the card's memory.
- **Bandwidth.** A decode step reads the weights and the live KV cache once: its floor is
  bytes / DRAM bandwidth. Copies that share a card share its bandwidth, so K copies each
  keeping a step time of `target_step_ms` need K x floor <= target_step_ms. A MIG slice
  has its own memory controllers: its floor is the card's divided by its bandwidth
  fraction (its memory fraction).
- **CPU.** Each copy is a pod asking for the same CPU as today; a node's allocatable CPU
  over that, over the node's GPUs, is the copies per GPU the CPU allows.
- **The binding constraint** of a mode is the smallest of these; its name says which.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from nsightlab.models import Model
from nsightlab.specs.mig import MigProfile

#: The share of a card's memory copies may fill (vLLM's default --gpu-memory-utilization).
USABLE_FRACTION = 0.9
#: MPS clients per GPU (NVIDIA MPS documentation: at most 48 client contexts per device).
MPS_MAX_CLIENTS = 48

ModeName = Literal["whole", "time-slicing", "mps", "mig"]
Binding = Literal["memory", "bandwidth", "cpu", "instances", "clients", "whole-gpu"]
#: The order of preference between modes that fit as many copies: isolation first.
_PREFERENCE: dict[str, int] = {"mig": 0, "mps": 1, "time-slicing": 2, "whole": 3}


class ModeCopies(Model):
    """One sharing mode on one GPU type."""

    mode: ModeName
    profile: str | None = None  # the MIG profile (1g.24gb), else None
    copies: int  # copies of the model per GPU
    binding: Binding  # what limits `copies`
    floor_ms: float | None = None  # a decode step's floor on what one copy gets (a slice: the slice's)
    memory_gib: float | None = None  # memory one copy may use there (a slice: the slice's)
    layout: str | None = None  # the MIG layout label value
    limits: dict[str, int | None] = Field(default_factory=dict)  # copies each constraint allows (None: unknown)


def copies_by_memory(usable_gib: float, need_gib: float) -> int:
    """Copies whose need fits in `usable_gib` together."""
    if need_gib <= 0 or not math.isfinite(need_gib) or usable_gib <= 0:
        return 0
    return int(usable_gib // need_gib)


def copies_by_bandwidth(floor_ms: float | None, target_step_ms: float | None) -> int | None:
    """Copies that share the bandwidth with each still stepping within `target_step_ms`
    (K x floor <= target); None when either is unknown."""
    if floor_ms is None or target_step_ms is None or floor_ms <= 0:
        return None
    return int(target_step_ms // floor_ms)


def copies_by_cpu(node_cpu: float | None, cpu_per_copy: float | None, gpus_per_node: int | None) -> int | None:
    """Copies per GPU a node's allocatable CPU allows, each asking for `cpu_per_copy`."""
    if not node_cpu or not cpu_per_copy or not gpus_per_node or cpu_per_copy <= 0 or gpus_per_node <= 0:
        return None
    return int(node_cpu // cpu_per_copy) // gpus_per_node


def slice_floor(card_floor_ms: float | None, profile: MigProfile) -> float | None:
    """A step's floor on a MIG slice: the card's over the slice's share of its bandwidth."""
    return None if card_floor_ms is None else card_floor_ms / profile.bandwidth


def _binding(limits: dict[str, int | None]) -> tuple[int, Binding]:
    """The smallest known limit and its name (the first of equals, in the order given)."""
    known = [(n, v) for n, v in limits.items() if v is not None]
    name, value = min(known, key=lambda kv: kv[1])
    return max(0, value), name  # type: ignore[return-value]


def modes_for(
    *,
    memory_gib: float,
    need_gib: float,
    floor_ms: float | None,
    target_step_ms: float | None,
    cpu_copies: int | None,
    mig: Sequence[MigProfile] | None,
) -> list[ModeCopies]:
    """Copies per GPU under each mode the GPU type supports (MIG where `mig` lists profiles)."""
    usable = memory_gib * USABLE_FRACTION
    out: list[ModeCopies] = []
    whole: dict[str, int | None] = {"whole-gpu": 1, "memory": 1 if need_gib <= usable else 0}
    copies, binding = _binding(whole)
    out.append(
        ModeCopies(mode="whole", copies=copies, binding=binding, floor_ms=floor_ms, memory_gib=usable, limits=whole)
    )
    shared: dict[str, int | None] = {
        "memory": copies_by_memory(usable, need_gib),
        "bandwidth": copies_by_bandwidth(floor_ms, target_step_ms),
        "cpu": cpu_copies,
    }
    copies, binding = _binding(shared)
    out.append(
        ModeCopies(
            mode="time-slicing", copies=copies, binding=binding, floor_ms=floor_ms, memory_gib=usable, limits=shared
        )
    )
    mps: dict[str, int | None] = {"clients": MPS_MAX_CLIENTS, **shared}
    copies, binding = _binding(mps)
    share = usable / copies if copies else usable
    out.append(ModeCopies(mode="mps", copies=copies, binding=binding, floor_ms=floor_ms, memory_gib=share, limits=mps))
    for p in mig or ():
        slice_gib = memory_gib * p.memory * USABLE_FRACTION
        floor = slice_floor(floor_ms, p)
        meets = target_step_ms is None or floor is None or floor <= target_step_ms
        limits: dict[str, int | None] = {
            "instances": p.instances,
            "memory": p.instances if need_gib <= slice_gib else 0,
            "bandwidth": None if floor is None or target_step_ms is None else (p.instances if meets else 0),
            "cpu": cpu_copies,
        }
        copies, binding = _binding(limits)
        out.append(
            ModeCopies(
                mode="mig",
                profile=p.name,
                copies=copies,
                binding=binding,
                floor_ms=floor,
                memory_gib=slice_gib,
                layout=p.layout,
                limits=limits,
            )
        )
    return out


def best_mode(modes: Sequence[ModeCopies]) -> ModeCopies | None:
    """The mode with the most copies; between equals the more isolated (MIG, then MPS,
    then time-slicing, then the whole GPU), and between MIG profiles the larger slice."""
    if not modes:
        return None
    return max(modes, key=lambda m: (m.copies, -_PREFERENCE[m.mode], m.memory_gib or 0.0))


def gpus_needed(replicas: int, copies_per_gpu: int) -> int | None:
    """GPUs for `replicas` copies at `copies_per_gpu` each (None: they do not fit)."""
    if copies_per_gpu <= 0:
        return None
    return -(-replicas // copies_per_gpu)
