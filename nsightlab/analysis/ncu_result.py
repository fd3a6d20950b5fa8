"""An ncu result: per kernel DRAM / memory / L2 / SM throughput and a verdict on what
limits it. Pure: parsed ncu tables in, `NcuResult` out (running ncu is
`nsightlab.measure.ncu`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from nsightlab import units
from nsightlab.models import Model
from nsightlab.parse import names
from nsightlab.parse import ncu_csv as ncu_parse

L2_SERVED = 50.0  # L2 hit rate (%) above which the data mostly comes from L2
HIGH = 60.0  # % of peak above which a unit is the limiter (ncu's own SOL guidance)


Bound = Literal["memory", "cache", "compute", "latency", "unknown"]


class NcuLine(Model):
    name: str
    short_name: str
    duration_ns: float | None
    dram_throughput_pct: float | None
    memory_throughput_pct: float | None
    l2_throughput_pct: float | None
    sm_throughput_pct: float | None
    l2_hit_rate_pct: float | None
    bound: Bound
    verdict: str
    rules: list[str] = Field(default_factory=list)


class NcuResult(Model):
    kind: Literal["ncu"] = "ncu"
    run_id: str | None = None
    source: str
    kernels: list[NcuLine]
    notes: list[str] = Field(default_factory=list)
    versions: dict[str, str | None] = Field(default_factory=dict)


def _p(value: float | None) -> str:
    """A percentage as the table writes it (units: 3.8%, 92%), or n/a."""
    return units.percent(value) if value is not None else "n/a"


def verdict(k: ncu_parse.NcuKernel) -> tuple[Bound, str]:
    """(bound, a plain sentence) from the Speed Of Light figures. Pure."""
    dram, mem, sm = k.dram_throughput_pct, k.memory_throughput_pct, k.sm_throughput_pct
    l2, hit = k.l2_throughput_pct, k.l2_hit_rate_pct
    if dram is None and mem is None and sm is None:
        return "unknown", "no Speed Of Light figures in this output (profile with --section SpeedOfLight)"
    if dram is not None and dram >= HIGH:
        return (
            "memory",
            f"memory-bound: DRAM throughput at {_p(dram)} of peak. Only moving fewer bytes makes it faster.",
        )
    cache_busy = max(v for v in (mem, l2, 0.0) if v is not None)
    if cache_busy >= HIGH and (hit is None or hit >= L2_SERVED) and (dram is None or dram < HIGH):
        hit_text = f"{_p(hit)} L2 hit rate, " if hit is not None else ""
        return (
            "cache",
            f"the data is served from L2 ({hit_text}memory throughput {_p(mem)}, DRAM only {_p(dram)}): "
            "this confirms the sweep's cache regime, where apparent bandwidth can exceed the DRAM spec.",
        )
    if sm is not None and sm >= HIGH:
        return "compute", f"compute-bound: SM throughput at {_p(sm)} of peak (memory {_p(mem)})."
    return (
        "latency",
        f"neither memory ({_p(mem)}, DRAM {_p(dram)}) nor compute ({_p(sm)}) is near its peak: "
        "the kernel is latency-bound or too small to fill the GPU (see the launch regime of the sweep).",
    )


def from_report(report: ncu_parse.NcuReport, source: str) -> NcuResult:
    lines = []
    for k in report.kernels:
        bound, text = verdict(k)
        lines.append(
            NcuLine(
                name=k.name,
                short_name=names.short_kernel_name(k.name),
                duration_ns=k.duration_ns,
                dram_throughput_pct=k.dram_throughput_pct,
                memory_throughput_pct=k.memory_throughput_pct,
                l2_throughput_pct=k.l2_throughput_pct,
                sm_throughput_pct=k.sm_throughput_pct,
                l2_hit_rate_pct=k.l2_hit_rate_pct,
                bound=bound,
                verdict=text,
                rules=[f"{r.name}: {r.description}" for r in k.rules if r.description],
            )
        )
    return NcuResult(source=source, kernels=lines, notes=list(report.warnings))
