"""Which device lab work measures, decided once for profile, sweep and ncu.

`--device auto|cuda|cpu`:
- `auto` (the default): the GPU where the target requests one (a lab pod with
  `nvidia.com/gpu`), else whatever torch sees there (this machine: its GPU, or its CPU);
- `cuda`: the GPU, always;
- `cpu`: the CPU, on purpose, even on a GPU target (said in a note, and recorded).

A target that should have a GPU and a torch that cannot see it is an error (exit 6),
never a quiet CPU run: the built-in lab scripts get `--device cuda` there, stop with
their exit code 3 and one line (`torch cannot see the GPU: <reason>`), and `no_gpu_error`
turns that into nsightlab's one line. A user's own script gets no `--device`: the
profile's record of where its ops ran is checked afterwards (`ran_on_cpu_warning`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, get_args

from nsightlab.errors import RemoteCommandError, UsageError
from nsightlab.measure.targets import Where

DeviceChoice = Literal["auto", "cuda", "cpu"]
DEVICE_CHOICES: tuple[DeviceChoice, ...] = get_args(DeviceChoice)

# labcommon.NO_GPU_EXIT and labcommon.NO_GPU_PREFIX: the lab scripts' way of saying it
SCRIPT_NO_GPU_EXIT = 3
SCRIPT_NO_GPU_PREFIX = "torch cannot see the GPU: "


@dataclass(frozen=True)
class DevicePlan:
    """The device decision for one command on one target."""

    requested: DeviceChoice  # what the person asked for
    script_arg: DeviceChoice  # what the built-in lab scripts get as --device
    wants_gpu: bool  # the target requests a GPU
    place: str  # "in the pod", "on this machine": for messages

    @property
    def on_purpose_cpu(self) -> bool:
        """`--device cpu` on a target that has a GPU: the CPU is measured on purpose."""
        return self.requested == "cpu" and self.wants_gpu

    def note(self) -> str | None:
        """The line that says the CPU is measured on purpose, or None."""
        if not self.on_purpose_cpu:
            return None
        return f"--device cpu: measuring the CPU {self.place} on purpose, not its GPU"


def plan_device(where: Where, requested: str | None) -> DevicePlan:
    """The decision for `--device REQUESTED` (None: auto) on `where`."""
    choice = requested or "auto"
    chosen = next((c for c in DEVICE_CHOICES if c == choice), None)
    if chosen is None:
        raise UsageError(f"--device must be one of {', '.join(DEVICE_CHOICES)}, got '{choice}'")
    script: DeviceChoice = "cuda" if chosen == "auto" and where.wants_gpu else chosen
    return DevicePlan(requested=chosen, script_arg=script, wants_gpu=where.wants_gpu, place=where.place)


def no_gpu_error(plan: DevicePlan, returncode: int, stderr_lines: Iterable[str]) -> RemoteCommandError | None:
    """nsightlab's exit-6 error when a lab script stopped because torch saw no GPU, else None.

    The script's last stderr line holds `torch cannot see the GPU: <reason>` (after the
    script's own name), e.g. `CPU-only build 2.13.0+cpu`.
    """
    if returncode == 0:
        return None
    reason = None
    for line in stderr_lines:
        text = line.strip()
        if SCRIPT_NO_GPU_PREFIX in text:
            reason = text.split(SCRIPT_NO_GPU_PREFIX, 1)[1].strip()
    if reason is None:
        return None
    remedy = "use an image with CUDA torch" if plan.place != "on this machine" else "install a CUDA build of torch here"
    return RemoteCommandError(
        f"torch {plan.place} cannot see the GPU: {reason}; {remedy}, or --device cpu", returncode=returncode
    )


def ran_on_cpu_warning(plan: DevicePlan, device_type: str | None, script: str) -> str | None:
    """The warning for a target that requests a GPU on which the ops ran on the CPU
    (a user's own script, which gets no --device), or None."""
    if device_type != "cpu" or not plan.wants_gpu or plan.requested == "cpu":
        return None
    return (
        f"{script} ran only CPU ops {plan.place}, which requests a GPU: torch there cannot see it, "
        "or the script never moved its work to it (`.to('cuda')`); this run is recorded as a CPU run"
    )
