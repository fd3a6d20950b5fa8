"""`lab_scripts/sweep.py --json`: one in-place elementwise op timed at many sizes.

`record_from_json` validates the script's JSON (or the record inside a stored sweep's
`result.json`) and refuses figures outside the physical bounds. Bytes moved per call are
2 x kernels x elements x element size: each kernel reads and writes the same buffer once
(the in-place scale is one kernel; torch's scale-add is two, `x.mul_` then `x.add_`; a
fused Triton scale-add is one). Nothing here assumes an element size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, model_validator

from nsightlab.errors import ParseError, validation_message
from nsightlab.models import Model
from nsightlab.parse.records.device_info import DeviceInfo
from nsightlab.specs import bounds

#: Kernels one call launches, per (implementation, op): torch runs scale-add as x.mul_
#: then x.add_; the Triton kernel fuses it.
SWEEP_KERNELS: dict[tuple[str, str], int] = {
    ("torch", "scale"): 1,
    ("torch", "scale-add"): 2,
    ("triton", "scale"): 1,
    ("triton", "scale-add"): 1,
}


def bytes_moved(elements: int, element_size: int, kernels: int = 1) -> int:
    """Bytes one call moves: each of its `kernels` reads every element once and writes it
    once (the in-place scale: one kernel)."""
    return 2 * kernels * elements * element_size


class SweepRow(Model):
    model_config = ConfigDict(extra="allow")

    log2: int
    elements: int = Field(gt=0)
    bytes_per_call: int = Field(gt=0)
    seconds_per_call: float = Field(gt=0)
    tensor_bytes: int | None = None
    # the spread over the batches of timed calls (older recordings have only the batches)
    seconds_min: float | None = None
    seconds_median: float | None = None
    seconds_max: float | None = None
    batch_seconds_per_call: list[float] | None = None
    op: str | None = None
    impl: str | None = None
    kernels_per_call: int | None = None
    interpreted: bool = False
    # under --impl triton: the check against torch, and the config that ran
    max_abs_error: float | None = None
    max_error_ulps: float | None = None
    tolerance: str | None = None
    triton_config: dict[str, int] | None = None
    autotuned: bool | None = None

    def spread_seconds(self) -> tuple[float, float] | None:
        """(fastest, slowest) batch's time per call, where the recording has them."""
        if self.seconds_min is not None and self.seconds_max is not None:
            return self.seconds_min, self.seconds_max
        if self.batch_seconds_per_call:
            return min(self.batch_seconds_per_call), max(self.batch_seconds_per_call)
        return None


class SweepSkip(Model):
    model_config = ConfigDict(extra="allow")

    log2: int
    reason: str


class SweepRecord(Model):
    """`lab_scripts/sweep.py --json`: one in-place elementwise op timed at many sizes."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    kind: Literal["sweep"]
    schema_version: int = Field(alias="schema")
    op: Literal["scale", "scale-add"] = "scale"
    impl: Literal["torch", "triton"] = "torch"
    kernels_per_call: int | None = None
    dtype: str
    element_size: int = Field(gt=0)
    iters: int
    warmup: int
    interpreted: bool = False
    notes: list[str] = Field(default_factory=list)
    triton: str | None = None  # its version, under --impl triton
    device: DeviceInfo
    rows: list[SweepRow]
    skipped: list[SweepSkip] = Field(default_factory=list)

    @property
    def kernels(self) -> int:
        """Kernels one call launches (torch's scale-add: 2)."""
        return SWEEP_KERNELS[(self.impl, self.op)]

    @model_validator(mode="after")
    def _bytes_follow_the_kernels(self) -> SweepRecord:
        """The accounting, checked exactly: 2 x kernels x elements x element size."""
        kernels = self.kernels
        what = f"{self.impl} {self.op}"
        if self.kernels_per_call is not None and self.kernels_per_call != kernels:
            raise ValueError(f"kernels_per_call is {self.kernels_per_call}, but {what} launches {kernels}")
        for row in self.rows:
            for field, value in (("impl", row.impl), ("op", row.op)):
                if value is not None and value != getattr(self, field):
                    raise ValueError(f"row 2^{row.log2}: {field} is {value}, but the sweep's is {getattr(self, field)}")
            if row.kernels_per_call is not None and row.kernels_per_call != kernels:
                raise ValueError(
                    f"row 2^{row.log2}: kernels_per_call is {row.kernels_per_call}, but {what} launches {kernels}"
                )
            expected = bytes_moved(row.elements, self.element_size, kernels)
            if row.bytes_per_call != expected:
                factor = "2 x" if kernels == 1 else f"2 x {kernels} kernels x"
                raise ValueError(
                    f"row 2^{row.log2}: bytes_per_call is {row.bytes_per_call}, but {factor} "
                    f"{row.elements} elements x {self.element_size} B is {expected} ({what})"
                )
        return self

    @property
    def is_interpreted(self) -> bool:
        """Triton ran in its interpreter: the times measure it, not the device."""
        return self.interpreted or any(r.interpreted for r in self.rows)


def record_from_json(data: Any, *, source: str | Path) -> SweepRecord:
    """Validate parsed JSON as a sweep record; errors name `source` (ParseError, exit 2)."""
    if isinstance(data, dict) and data.get("kind") == "sweep" and isinstance(data.get("record"), dict):
        data = data["record"]  # a stored result.json
    if not isinstance(data, dict) or data.get("kind") != "sweep":
        kind = data.get("kind") if isinstance(data, dict) else type(data).__name__
        raise ParseError(
            f"not a sweep JSON (kind: {kind})", source=source, hint="Give the file `lab_scripts/sweep.py --json` wrote."
        )
    try:
        record = SweepRecord.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ParseError(
            f"bad sweep JSON: {where + ': ' if where else ''}{validation_message(err)}", source=source
        ) from None
    bounds.refuse(
        (
            bounds.check_call(
                f"size 2^{row.log2}",
                seconds=min([row.seconds_per_call, *(row.batch_seconds_per_call or [])]),
                bytes_moved=row.bytes_per_call,
            )
            for row in record.rows
        ),
        source=source,
    )
    return record
