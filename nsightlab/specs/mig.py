"""MIG profiles per GPU, as data: `nsightlab/data/mig-profiles.yaml` (its sources are
cited in the file), read here into typed records.

A MIG slice has its own memory controllers and L2 slices: its DRAM bandwidth is its
memory fraction of the card's, so a decode step's floor on a slice is the card's floor
divided by that fraction. `parse_profiles` is pure; `builtin_profiles` reads the file
shipped in the package (once).
"""

from __future__ import annotations

import functools
from importlib import resources

import yaml
from pydantic import ValidationError

from nsightlab.errors import ParseError
from nsightlab.models import Model

DATA_FILE = "data/mig-profiles.yaml"


class MigProfile(Model):
    """One MIG profile: `instances` of it fit on a GPU, each with these fractions of the card."""

    name: str  # e.g. 1g.24gb
    instances: int
    memory: float  # fraction of the card's memory (and so of its DRAM bandwidth)
    sms: float  # fraction of its SMs
    layout: str  # the nvidia.com/mig.config label value that makes every slice this profile

    @property
    def bandwidth(self) -> float:
        """The slice's share of the card's DRAM bandwidth: its memory fraction."""
        return self.memory


class MigGpu(Model):
    gpu: str  # the spec table's key (specs/gpus.py)
    source: str
    profiles: list[MigProfile]


class MigTable(Model):
    version: int
    gpus: list[MigGpu]

    def for_gpu(self, key: str | None) -> MigGpu | None:
        """The GPU's profiles (an empty list: it has no MIG), or None when the table does not know it."""
        return next((g for g in self.gpus if g.gpu == key), None)


def parse_profiles(text: str, *, source: str = DATA_FILE) -> MigTable:
    """The table from the YAML text; ParseError naming `source` when it is not one."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ParseError(f"not valid YAML ({e})", source=source) from None
    try:
        table = MigTable.model_validate(data)
    except ValidationError as e:
        raise ParseError(f"not a MIG profile table ({e.error_count()} problems)", source=source) from None
    for gpu in table.gpus:
        for p in gpu.profiles:
            if not (0 < p.memory <= 1 and 0 < p.sms <= 1 and p.instances >= 1):
                raise ParseError(
                    f"{gpu.gpu} {p.name}: fractions must be in (0, 1], instances at least 1", source=source
                )
    return table


@functools.lru_cache(maxsize=1)
def builtin_profiles() -> MigTable:
    """The table shipped with nsightlab."""
    text = resources.files("nsightlab").joinpath(DATA_FILE).read_text(encoding="utf-8")
    return parse_profiles(text)
