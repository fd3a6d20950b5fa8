"""The `device` object every lab script writes (labcommon's description of the device
the script ran on), read leniently: unknown keys are kept."""

from __future__ import annotations

from pydantic import ConfigDict

from nsightlab.models import Model


class DeviceInfo(Model):
    """The `device` object of a lab script's JSON: what the device says about itself."""

    model_config = ConfigDict(extra="allow")

    type: str = "cuda"
    name: str | None = None
    memory_bytes: int | None = None
    l2_bytes: int | None = None
    l2_source: str | None = None
    sm_count: int | None = None
    cc: str | None = None
    arch: str | None = None  # ROCm's LLVM target (gfx942), where torch reports one
    torch: str | None = None
    cuda: str | None = None
    driver: str | None = None
    python: str | None = None
