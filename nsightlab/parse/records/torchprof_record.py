"""`lab_scripts/torchprof.py`'s JSON: torch.profiler's tables as the same tables nsys
gives (`report_from_torch`), and what else the record says (`torch_info`: where the ops
ran, the profiler's activities, each op's own time)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

from nsightlab.errors import ParseError, validation_message
from nsightlab.models import Model
from nsightlab.parse import nsys


class TorchInfo(Model):
    """What torchprof.py's JSON says beyond the tables: where the ops ran, and more."""

    device_type: str | None = None  # "cuda" or "cpu": where the ops ran (from the events)
    device_name: str | None = None
    kernels_are: str | None = None  # "cuda kernels" | "cpu ops"
    activities: list[str] | None = None  # what the profiler recorded
    self_ns: dict[str, float] = Field(default_factory=dict)
    trace: str | None = None  # the Chrome trace's file name, when one was kept
    device: dict[str, Any] | None = None  # labcommon's description of the device
    ranges_among_kernels: list[str] = Field(default_factory=list)  # an older torchprof listed these as ops


def _torch_ranges_among_kernels(data: dict[str, Any]) -> list[str]:
    """Kernel rows that an older torchprof.py (before `kernels_are`) wrote but are ranges.

    It listed every top-level CPU event as an op, so a `record_function` range that was
    not in its --ranges (a user's own `step`) sat among the ops, its time holding theirs.
    On a CPU, torch's ops are named `namespace::op` (`aten::mul_`); a top-level event
    without `::` is a range (`step`, `Optimizer.step#SGD.step`). A GPU kernel table
    cannot be told apart this way: only names a range table gives are moved there.
    """
    if "kernels_are" in data:  # today's torchprof keeps ranges out itself
        return []
    old_device = data.get("device")
    on_cpu = old_device == "cpu" or data.get("device_type") == "cpu"
    if not on_cpu:
        return []
    return [
        str(k.get("name")) for k in data.get("kernels") or [] if isinstance(k, dict) and "::" not in str(k.get("name"))
    ]


def torch_info(data: dict[str, Any]) -> TorchInfo:
    """Where the ops of a torchprof.py run ran, and what else its JSON holds beyond the tables.

    Older torchprof JSON has `device: "cuda" | "cpu"` (whether torch saw a GPU) and no
    `device_type`: that string stands in for it.
    """
    device = data.get("device")
    dev = device if isinstance(device, dict) else None
    dtype = data.get("device_type") or (dev or {}).get("type") or (device if isinstance(device, str) else None)
    self_ns = data.get("self_ns") or {}
    return TorchInfo(
        device_type=str(dtype) if dtype else None,
        device_name=(dev or {}).get("name"),
        kernels_are=data.get("kernels_are"),
        activities=data.get("activities"),
        self_ns={str(k): float(v) for k, v in self_ns.items()} if isinstance(self_ns, dict) else {},
        trace=data.get("trace"),
        device=dev,
        ranges_among_kernels=_torch_ranges_among_kernels(data),
    )


def report_from_torch(data: dict[str, Any], source: str) -> nsys.NsysReport:
    """torchprof.py's JSON as the same tables nsys gives; a range is never a kernel there."""
    try:
        report = nsys.NsysReport(
            kernels=[nsys.KernelSummaryRow.model_validate(k) for k in data.get("kernels") or []],
            nvtx=[nsys.NvtxRangeRow.model_validate(r) for r in data.get("nvtx") or []],
            nvtx_kernels=[nsys.NvtxKernelRow.model_validate(r) for r in data.get("nvtx_kernels") or []],
            sources={"torch.profiler": source},
        )
    except ValidationError as e:
        err = e.errors()[0]
        raise ParseError(
            f"bad torch.profiler table at {'.'.join(str(p) for p in err['loc'])}: {validation_message(err)}",
            source=source,
        ) from None
    return nsys.without_ranges(report, set(_torch_ranges_among_kernels(data)))[0]
