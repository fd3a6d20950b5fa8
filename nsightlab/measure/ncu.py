"""`ncu`: Nsight Compute on one kernel -> DRAM / memory / L2 / SM throughput and a verdict.

The tutorial's step 13, which is often blocked: ERR_NVGPUCTRPERM is detected and turned
into exit 7 with the two ways forward.
"""

from __future__ import annotations

import posixpath
import shlex
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from nsightlab.errors import CountersNotPermittedError, ParseError, RemoteCommandError
from nsightlab.parse import names
from nsightlab.parse import ncu as ncu_parse
from nsightlab.runs.store import RunMeta, new_run

if TYPE_CHECKING:
    from nsightlab.measure.targets import Target
    from nsightlab.present.console import Env

DEFAULT_KERNEL = "vectorized_elementwise"  # the scale kernel of lesson1
HIGH = 60.0  # % of peak above which a unit is the limiter (ncu's own SOL guidance)
L2_SERVED = 50.0  # L2 hit rate (%) above which the data mostly comes from L2

COUNTERS_HINT = (
    "ncu needs the GPU's performance counters. Two ways forward: ask the platform team for a "
    "profiling-enabled node (driver option NVreg_RestrictProfilingToAdminUsers=0; `nsightlab doctor` "
    "shows RmProfilingAdminOnly: 0 there), or, only with their OK, recreate the lab pod with "
    "`nsightlab create --profiling-caps` (adds CAP_SYS_ADMIN, which weakens isolation)."
)


Bound = Literal["memory", "cache", "compute", "latency", "unknown"]


class NcuLine(BaseModel):
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


class NcuResult(BaseModel):
    kind: Literal["ncu"] = "ncu"
    run_id: str | None = None
    source: str
    kernels: list[NcuLine]
    notes: list[str] = Field(default_factory=list)
    versions: dict[str, str | None] = Field(default_factory=dict)


def _p(value: float | None) -> str:
    return f"{value:.0f}%" if value is not None else "n/a"


def verdict(k: ncu_parse.NcuKernel) -> tuple[Bound, str]:
    """(bound, a plain sentence) from the Speed Of Light figures. Pure."""
    dram, mem, sm = k.dram_throughput_pct, k.memory_throughput_pct, k.sm_throughput_pct
    l2, hit = k.l2_throughput_pct, k.l2_hit_rate_pct
    if dram is None and mem is None and sm is None:
        return "unknown", "no Speed Of Light figures in this output (profile with --section SpeedOfLight)"
    if dram is not None and dram >= HIGH:
        return "memory", f"memory-bound: DRAM throughput at {dram:.0f}% of peak. Only moving fewer bytes makes it faster."
    cache_busy = max(v for v in (mem, l2, 0.0) if v is not None)
    if cache_busy >= HIGH and (hit is None or hit >= L2_SERVED) and (dram is None or dram < HIGH):
        hit_text = f"{hit:.0f}% L2 hit rate, " if hit is not None else ""
        return (
            "cache",
            f"the data is served from L2 ({hit_text}memory throughput {_p(mem)}, DRAM only {_p(dram)}): "
            "this confirms the sweep's cache regime, where apparent bandwidth can exceed the DRAM spec.",
        )
    if sm is not None and sm >= HIGH:
        return "compute", f"compute-bound: SM throughput at {sm:.0f}% of peak (memory {_p(mem)})."
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


def run_ncu(
    env: Env,
    target: Target,
    meta_fields: dict[str, Any],
    *,
    script: str,
    script_args: list[str],
    kernel: str,
    sections: list[str],
    count: int,
) -> NcuResult:
    from nsightlab.measure.profile import BUILTIN, _last_error, _streamer, resolve_script

    local_script, name = resolve_script(script)
    if target.which("ncu") is None:
        raise RemoteCommandError(f"ncu (Nsight Compute) is not installed on {target.label}", returncode=127, hint="Use an image that ships Nsight Compute.")
    version = target.run(["ncu", "--version"], check=False).out
    run, run_id = new_run("ncu", name)
    wd = target.workdir()
    remote_script = posixpath.join(wd, local_script.name)
    target.put(local_script, remote_script)
    if script in BUILTIN:
        from nsightlab import assets

        target.put(assets.lab_script(assets.LAB_COMMON), posixpath.join(wd, assets.LAB_COMMON))
    extra = ["--json", posixpath.join(wd, f"{name}.json")] if script in BUILTIN else []
    argv = ["ncu", "--csv", "-k", f"regex:{kernel}", "-c", str(count)]
    for section in sections:
        argv += ["--section", section]
    argv += ["--metrics", "lts__t_sector_hit_rate.pct", target.python, remote_script, *extra, *script_args]
    env.note(f"running on {target.label}: {shlex.join(argv)}")
    out = bytearray()
    _, err_cb, tail = _streamer(env)
    code = target.stream(argv, on_stdout=out.extend, on_stderr=err_cb, env={"TMPDIR": wd})
    text = out.decode("utf-8", "replace")
    raw = run.raw / "ncu.csv"
    raw.write_text(text, encoding="utf-8")
    blocked = ncu_parse.detect_counter_permission_error(text + "\n" + b"\n".join(tail).decode("utf-8", "replace"))
    if blocked:
        raise CountersNotPermittedError(f"ncu cannot read GPU counters on {target.label}: {blocked.split(' - ')[0].strip('= ')}", hint=COUNTERS_HINT)
    if code != 0:
        raise RemoteCommandError(f"ncu failed on {target.label} (exit {code}): {_last_error(tail)}", returncode=code)
    report = ncu_parse.parse_ncu_csv(text, source=str(raw))
    if not report.kernels:
        raise RemoteCommandError(f"ncu profiled no kernel matching regex:{kernel} on {target.label}", hint="Check --kernel against the names `nsightlab profile` shows.")
    result = from_report(report, target.label)
    result.run_id = run_id
    try:
        result.versions["ncu"] = ncu_parse.parse_ncu_version(version)
    except ParseError:
        result.versions["ncu"] = None
    first = result.kernels[0]
    run.write_meta(
        RunMeta(
            id=run_id,
            kind="ncu",
            name=name,
            created=datetime.now(timezone.utc),
            versions=result.versions,
            command=["nsightlab", "ncu", script, "--kernel", kernel],
            headline=f"{first.short_name}: {first.bound}",
            **{k: v for k, v in meta_fields.items() if k in RunMeta.model_fields},
        )
    )
    run.write_result(result)
    return result
