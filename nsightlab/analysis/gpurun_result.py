"""A device run of `bench/gpu_run.sh`, read back: its steps, its records analysed as the
lab analyses them, and the sanity table.

The script leaves, under its OUTDIR, `steps.log` (one tab-separated line per step:
step, status, seconds, budget, exit code, detail; `# key: value` header lines and
`# note: ...` lines) and `gpu-run.tar.gz` (the machine's facts, each step's records and
log). This module holds the result's models; the steps log's reader is
`nsightlab.parse.records.gpurun_steps`, reading the folder `nsightlab.runs.gpurun`, the
physical bounds and their checks `nsightlab.analysis.sanity`. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from nsightlab.analysis.colocate_models import ColocateResult
from nsightlab.analysis.decode_models import DecodeResult
from nsightlab.analysis.ncu_result import NcuResult
from nsightlab.analysis.profile_models import ProfileResult
from nsightlab.analysis.sanity import SanityRow
from nsightlab.analysis.sweep_impls import SweepImpls
from nsightlab.analysis.sweep_result import SweepResult
from nsightlab.models import Model
from nsightlab.parse.records.gpurun_steps import RunStep


class RunFile(Model):
    name: str
    bytes: int


RecordResult = SweepResult | DecodeResult | ProfileResult | NcuResult | ColocateResult | SweepImpls


class RunRecord(Model):
    """One record of the run (or one comparison of two), analysed as the lab would."""

    step: str
    file: str  # inside the archive: records/STEP/FILE (a comparison: both files)
    kind: str  # profile, sweep, decode, ncu, pack (colocate), sweep-impls
    headline: str
    result: RecordResult


class GpuRunResult(Model):
    """`nsightlab analyze OUTDIR --json` for a folder `bench/gpu_run.sh` wrote."""

    kind: Literal["gpu-run"] = "gpu-run"
    source: str
    device: str  # what the run asked for: cuda or cpu
    tiny: bool
    machine: str | None  # the facts in one line: GPU, driver, torch, Triton, CPU, memory
    started: str | None
    finished: str | None
    budget_s: int | None
    facts: dict[str, Any] = Field(default_factory=dict)
    steps: list[RunStep]
    files: list[RunFile]
    records: list[RunRecord]
    sanity: list[SanityRow]
    notes: list[str]
