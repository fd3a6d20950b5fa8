"""`lab_scripts/colocate.py`'s JSON (`kind: colocate`): per K copies of the decode loop
run at once, each copy's step times and the aggregate tokens/s and bytes/s. Read
leniently; non-finite numbers and figures outside the physical bounds are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from nsightlab.errors import ParseError
from nsightlab.models import Model
from nsightlab.parse.records.script_json import read_script_json, validate_record
from nsightlab.specs import bounds


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
    data = read_script_json(path)
    if not isinstance(data, dict) or data.get("kind") != "colocate":
        raise ParseError("not colocate.py's JSON (kind is not 'colocate')", source=path)
    record = validate_record(ColocateRecord, data, what="colocate JSON", source=path)
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
