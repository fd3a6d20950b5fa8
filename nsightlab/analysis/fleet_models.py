"""A fleet's shapes: its plan (one target per instance type, or per node, and how each is
measured: it travels with the fleet, in its ConfigMap and its run folder, so that `fleet
collect` can finish a fleet that was interrupted), each Job's outcome, one line per type
with the decode figures, the result `fleet sweep --json` prints, and `fleet status`'s
report."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from nsightlab.models import Model
from nsightlab.units import sig

Status = Literal["measured", "not-scheduled", "failed", "timeout"]
Device = Literal["auto", "cuda", "cpu"]


class FleetTarget(Model):
    """One Job of a fleet: an instance type, or one node of it (`--every-node`)."""

    key: str  # the instance type, or the node's name
    instance_type: str
    node: str | None = None  # the node it is pinned to
    job: str  # the Job's name
    gpu_product: str | None = None  # from the node's labels or the spec table


class FleetPlan(Model):
    """What a fleet measures and how."""

    kind: Literal["fleet-plan"] = "fleet-plan"
    fleet_id: str
    context: str
    namespace: str
    owner: str
    created: datetime
    every_node: bool = False
    dtype: str
    sizes: list[int] | None = None
    iters: int | None = None
    warmup: int | None = None
    device: Device = "auto"
    max_parallel: int = 4
    schedule_timeout: float = 120.0
    job_deadline: int = 1800
    weights_gb: float | None = None
    prices: dict[str, float] = Field(default_factory=dict)
    target_tokens_per_s: float | None = None
    targets: list[FleetTarget]
    notes: list[str] = Field(
        default_factory=list
    )  # found while planning (e.g. a type too small for the lab's requests)

    def script_args(self) -> list[str]:
        """The sweep script's options. The Job asks for a GPU, so `auto` insists on one
        (`--device cuda`: torch must see it, or the Job fails with the script's reason);
        only `--device cpu` measures the node's CPU on purpose."""
        args = ["--dtype", self.dtype, "--device", "cpu" if self.device == "cpu" else "cuda"]
        if self.sizes:
            args += ["--sizes", ",".join(str(n) for n in self.sizes)]
        if self.iters is not None:
            args += ["--iters", str(self.iters)]
        if self.warmup is not None:
            args += ["--warmup", str(self.warmup)]
        return args


class DecodeEconomics(Model):
    """One decode step reads every weight once: its floor on one type, and its price."""

    weights_gb: float
    fits: bool | None  # the weights fit in the GPU's memory (None: memory unknown)
    ms_per_token: float | None  # None without a measured DRAM plateau
    tokens_per_s: float | None  # one sequence, batch 1, at the floor
    usd_per_hour: float | None
    usd_per_million_tokens: float | None


class FleetEntry(Model):
    """One Job's outcome."""

    instance_type: str
    node: str | None
    gpu_product: str | None
    status: Status
    reason: str | None = None  # why it did not measure; for a measured one, a device that contradicts
    run_id: str | None = None
    launch_floor_us: float | None = None
    cache_peak_tbps: float | None = None
    dram_tbps: float | None = None
    dram_pct_of_spec: float | None = None
    outlier: bool | None = None  # with --every-node: > OUTLIER_FRACTION below its type's median
    # kept for the terminal, not in the JSON (the logs are in the fleet's run folder)
    log_tail: list[str] = Field(default_factory=list, exclude=True)
    memory_bytes: int | None = Field(default=None, exclude=True)
    spec_dram_tbps: float | None = Field(default=None, exclude=True)


class FleetType(Model):
    """One instance type: the median over its measured nodes."""

    instance_type: str
    gpu_product: str | None
    measured: int  # nodes measured
    launch_floor_us: float | None
    cache_peak_tbps: float | None
    dram_tbps: float | None
    dram_pct_of_spec: float | None
    decode: DecodeEconomics | None = None


class FleetResult(Model):
    """`nsightlab fleet sweep --json` (and the fleet run's result.json)."""

    kind: Literal["fleet"] = "fleet"
    fleet_id: str
    context: str
    namespace: str
    dtype: str
    entries: list[FleetEntry]
    types: list[FleetType]
    notes: list[str] = Field(default_factory=list)

    @property
    def headline(self) -> str:
        """One line for run lists: each type's plateau, and what did not measure."""
        parts = []
        for t in self.types:
            if t.dram_tbps is not None:
                parts.append(f"{t.instance_type} {sig(t.dram_tbps)} TB/s")
            elif t.measured:
                parts.append(f"{t.instance_type} no DRAM plateau")
        counts = {s: sum(1 for e in self.entries if e.status == s) for s in ("not-scheduled", "failed", "timeout")}
        parts += [f"{n} {s}" for s, n in counts.items() if n]
        return ", ".join(parts) or "nothing measured"


class JobRow(Model):
    """A line of the live table while a fleet runs."""

    key: str
    instance_type: str
    phase: str  # waiting, Pending, Running, measured, failed, not-scheduled, timeout
    node: str | None = None
    reason: str | None = None  # the scheduler's message while Pending; why it failed
    elapsed_s: float | None = None
    log_tail: list[str] = Field(default_factory=list)


class FleetJobs(Model):
    """A fleet's Jobs by phase (`fleet status`)."""

    waiting: int = 0  # planned, not created yet (the fleet was interrupted before)
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class FleetStatusLine(Model):
    fleet_id: str
    created: datetime | None
    age: str
    jobs: FleetJobs
    planned: int | None  # targets in its plan (None: the plan could not be read)


class FleetStatusReport(Model):
    """`nsightlab fleet status --json`."""

    context: str
    namespace: str
    owner: str
    fleets: list[FleetStatusLine]
