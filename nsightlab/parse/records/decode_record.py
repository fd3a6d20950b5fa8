"""`lab_scripts/decode.py`'s JSON (`kind: decode`), read leniently: the model, and per
mode and batch its own step times and the bytes and FLOPs one step must move and do.
`load_decode_record` refuses non-finite numbers and figures outside the physical bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from nsightlab.models import Model
from nsightlab.parse.records.script_json import read_script_json, validate_record
from nsightlab.specs import bounds


class _Lenient(Model):
    model_config = ConfigDict(extra="ignore")


class RecordModel(_Lenient):
    preset: str | None = None
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    tied: bool
    params: int
    matmul_params: int
    weight_bytes: int
    dtype: str
    element_size: int


class RecordEntry(_Lenient):
    """One mode at one batch size, as decode.py writes it."""

    mode: str
    batch: int
    step_seconds: list[float]
    median_step_s: float
    p90_step_s: float
    tokens_per_s: float
    kv_cache_bytes_per_step: int
    weight_bytes_per_step: int
    bytes_per_step_floor: int
    flops_per_step: float
    ranges: dict[str, str | None] = Field(default_factory=dict)


class DecodeRecord(_Lenient):
    """What nsightlab reads of decode.py's JSON (`kind: decode`)."""

    kind: Literal["decode"]
    device: dict[str, Any] = Field(default_factory=dict)
    model: RecordModel
    prompt_len: int
    tokens: int
    warmup: int
    batches: list[int]
    modes: list[RecordEntry]
    notes: list[str] = Field(default_factory=list)

    @property
    def device_type(self) -> str:
        return str(self.device.get("type") or "cuda")

    @property
    def device_name(self) -> str | None:
        name = self.device.get("name")
        return str(name) if name else None


def load_decode_record(path: Path) -> DecodeRecord | None:
    """decode.py's JSON, or None when `path` is no such file (another script's JSON)."""
    if not path.is_file():
        return None
    data = read_script_json(path)
    if not isinstance(data, dict) or data.get("kind") != "decode":
        return None
    record = validate_record(DecodeRecord, data, what="decode JSON", source=path)
    bounds.refuse(
        (
            bounds.check_call(
                f"{m.mode} at batch {m.batch}",
                seconds=min([m.median_step_s, *m.step_seconds]),
                bytes_moved=m.bytes_per_step_floor,
                flops=m.flops_per_step,
            )
            for m in record.modes
        ),
        source=path,
    )
    return record
