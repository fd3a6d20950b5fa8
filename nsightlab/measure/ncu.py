"""`ncu`: Nsight Compute on one kernel -> DRAM / memory / L2 / SM throughput and a verdict.

The tutorial's step 13, which is often blocked: ERR_NVGPUCTRPERM is detected and turned
into exit 7 with the two ways forward.
"""

from __future__ import annotations

import posixpath
import shlex
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from nsightlab import assets
from nsightlab.analysis.ncu_result import NcuResult, from_report
from nsightlab.errors import CountersNotPermittedError, ParseError, RemoteCommandError
from nsightlab.measure.device import DevicePlan, no_gpu_error
from nsightlab.measure.profile import BUILTIN, last_error, resolve_script, streamer
from nsightlab.measure.work import LabWork
from nsightlab.parse import ncu_csv as ncu_parse
from nsightlab.parse.records.lesson1_record import load_record
from nsightlab.runs.store import RunMeta

if TYPE_CHECKING:
    from nsightlab.env import Env
    from nsightlab.measure.targets import Target

DEFAULT_KERNEL = "vectorized_elementwise"  # the scale kernel of lesson1


def counters_hint(target: Target) -> str:
    """The two ways forward when ncu may not read the counters, as commands for this target
    (the lab pod is made anew: `create --recreate` replaces the one without the capability)."""
    kube = getattr(target, "kube", None)
    if kube is None:
        doctor = "`grep RmProfilingAdminOnly /proc/driver/nvidia/params`"
        recreate = "run it in a lab pod made with `nsightlab create --context stg --profiling-caps`"
    else:
        args = kube.ctx.cli_args
        doctor = f"`nsightlab doctor {args}`"
        recreate = f"make the lab pod anew with `nsightlab create {args} --profiling-caps --recreate`"
    return (
        "ncu needs the GPU's performance counters. Two ways forward: ask the platform team for a "
        f"profiling-enabled node (driver option NVreg_RestrictProfilingToAdminUsers=0; {doctor} "
        f"shows RmProfilingAdminOnly: 0 there), or, only with their OK, {recreate} "
        "(adds CAP_SYS_ADMIN, which weakens isolation)."
    )


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
    device: DevicePlan | None = None,
) -> NcuResult:
    """ncu on the kernels matching `kernel` while `script` runs on `target`; the run is
    stored before the result is returned (Ctrl-C: no run is stored).

    A built-in lab script gets `--device` from `device` (cuda where the target requests a
    GPU): ncu measures GPU kernels only.
    """
    plan = device or DevicePlan(requested="auto", script_arg="auto", wants_gpu=False, place=f"on {target.label}")
    with LabWork("ncu run", target) as work:
        return _ncu(
            work,
            env,
            target,
            meta_fields,
            script=script,
            script_args=script_args,
            kernel=kernel,
            sections=sections,
            count=count,
            plan=plan,
        )


def _ncu(
    work: LabWork,
    env: Env,
    target: Target,
    meta_fields: dict[str, Any],
    *,
    script: str,
    script_args: list[str],
    kernel: str,
    sections: list[str],
    count: int,
    plan: DevicePlan,
) -> NcuResult:
    local_script, name = resolve_script(script)
    if target.which("ncu") is None:
        raise RemoteCommandError(
            f"ncu (Nsight Compute) is not installed on {target.label}",
            returncode=127,
            hint="Install Nsight Compute here (`ncu` on PATH)."
            if getattr(target, "kube", None) is None
            else "Use an image that ships Nsight Compute (lab.image).",
        )
    version = target.run(["ncu", "--version"], check=False).out
    run, run_id = work.new_run("ncu", name)
    wd = target.workdir()
    remote_script = posixpath.join(wd, local_script.name)
    target.put(local_script, remote_script)
    if script in BUILTIN:
        target.put(assets.lab_script(assets.LAB_COMMON), posixpath.join(wd, assets.LAB_COMMON))
    work_json = posixpath.join(wd, f"{name}.json")
    extra = ["--json", work_json, "--device", plan.script_arg] if script in BUILTIN else []
    argv = ["ncu", "--csv", "-k", f"regex:{kernel}", "-c", str(count)]
    for section in sections:
        argv += ["--section", section]
    argv += ["--metrics", "lts__t_sector_hit_rate.pct", target.python, remote_script, *extra, *script_args]
    env.note(f"running on {target.label}: {shlex.join(argv)}")
    out = bytearray()
    _, err_cb, tail = streamer(env)
    code = target.stream(argv, on_stdout=out.extend, on_stderr=err_cb, env={"TMPDIR": wd})
    text = out.decode("utf-8", "replace")
    raw = run.raw / "ncu.csv"
    raw.write_text(text, encoding="utf-8")
    blocked = ncu_parse.detect_counter_permission_error(text + "\n" + "\n".join(tail))
    if blocked:
        raise CountersNotPermittedError(
            f"ncu cannot read GPU counters on {target.label}: {blocked.split(' - ')[0].strip('= ')}",
            hint=counters_hint(target),
        )
    if code != 0:
        no_gpu = no_gpu_error(plan, code, tail)
        if no_gpu is not None:
            raise no_gpu
        raise RemoteCommandError(f"ncu failed on {target.label} (exit {code}): {last_error(tail)}", returncode=code)
    report = ncu_parse.parse_ncu_csv(text, source=str(raw))
    if not report.kernels:
        raise RemoteCommandError(
            f"ncu profiled no kernel matching regex:{kernel} on {target.label}",
            hint="Check --kernel against the names `nsightlab profile "
            f"{shlex.quote(script)}{' --local' if target.label == 'this machine' else ''}` shows.",
        )
    result = from_report(report, target.label)
    result.run_id = run_id
    try:
        result.versions["ncu"] = ncu_parse.parse_ncu_version(version)
    except ParseError:
        result.versions["ncu"] = None
    first = result.kernels[0]
    # the GPU the kernels ran on, as the lab script saw it (never the node's label)
    gpu = None
    if script in BUILTIN and posixpath.basename(work_json) in target.run(["ls", "-1", wd], check=False).out.split():
        target.get(work_json, run.raw / posixpath.basename(work_json))
        record = load_record(run.raw / posixpath.basename(work_json))
        gpu = record.device.name if record is not None and record.device.type == "cuda" else None
    run.write_meta(
        RunMeta(
            id=run_id,
            kind="ncu",
            name=name,
            created=datetime.now(timezone.utc),
            versions=result.versions,
            command=["nsightlab", "ncu", script, "--kernel", kernel],
            headline=f"{first.short_name}: {first.bound}",
            gpu=gpu,
            device=gpu,
            device_type="cuda",  # ncu measures GPU kernels only
            device_requested=plan.requested,
            **{
                k: v
                for k, v in meta_fields.items()
                if k in RunMeta.model_fields and k not in ("gpu", "device", "device_type", "device_requested")
            },
        )
    )
    run.write_result(result)
    return result
