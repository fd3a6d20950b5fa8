"""`lab_scripts/lesson1.py --json`: the work each timed NVTX range does per call (bytes,
FLOPs, its own time), read from the file a profile brought back."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field

from nsightlab.models import Model
from nsightlab.parse.records.device_info import DeviceInfo
from nsightlab.parse.records.script_json import read_script_json, validate_record
from nsightlab.specs import bounds


class RangeWork(Model):
    """One timed NVTX range of `lab_scripts/lesson1.py`: the work of one call, and its time."""

    model_config = ConfigDict(extra="allow")

    name: str
    op: str
    kernel_kind: str
    calls: int
    warmup: int = 0
    dtype: str
    element_size: int
    bytes_per_call: int = Field(gt=0)
    flops_per_call: int = Field(ge=0)
    seconds_per_call: float | None = Field(default=None, gt=0)
    elements: int | None = None
    m: int | None = None
    n: int | None = None
    k: int | None = None


class Lesson1Record(Model):
    """`lab_scripts/lesson1.py --json`."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    kind: Literal["lesson1"]
    schema_version: int = Field(alias="schema")
    device: DeviceInfo
    scaled_down: bool = False
    ranges: list[RangeWork]


def load_record(path: Path) -> Lesson1Record | None:
    """The script's work description (lesson1 JSON), or None for a script that wrote none."""
    if not path.is_file():
        return None
    data = read_script_json(path)
    if not isinstance(data, dict) or data.get("kind") != "lesson1":
        return None
    record = validate_record(Lesson1Record, data, what="work description", source=path)
    bounds.refuse(
        (
            bounds.check_call(
                f"range {w.name}", seconds=w.seconds_per_call, bytes_moved=w.bytes_per_call, flops=w.flops_per_call
            )
            for w in record.ranges
            if w.seconds_per_call is not None
        ),
        source=path,
    )
    return record
