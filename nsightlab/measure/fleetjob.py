"""A fleet's finished Job, turned into its entry.

Its log streams into the fleet run's `raw/logs/<job>.log` (cluster/podlogs.save_log),
once: nothing holds it whole, and the sweep run does not copy it. What is kept in memory
is the log's result block and its last lines (parse.records.fleetrun_log.LogScan). The result must be
a sweep record of finite numbers within the physical bounds (specs/bounds.py): else
the entry fails ("not a plausible measurement") and no sweep run is stored. A device the
log names that contradicts the node's GPU label or `--device` is said in the entry's
reason, and the node's label is kept as the sweep run's `node_gpu`.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from nsightlab import __version__
from nsightlab.analysis.fleet_models import FleetEntry, FleetPlan, FleetTarget
from nsightlab.analysis.fleet_result import measured_entry, outcome_entry
from nsightlab.analysis.sweep_result import SweepResult, build_result
from nsightlab.cluster.podlogs import save_log
from nsightlab.errors import ClusterError, ParseError
from nsightlab.parse.records.fleetrun_log import LogScan
from nsightlab.parse.records.sweep_record import SweepRecord, record_from_json
from nsightlab.runs import store
from nsightlab.runs.store import Run, RunMeta
from nsightlab.specs.bounds import ImplausibleMeasurement
from nsightlab.specs.gpus import same_product

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube

LOG_TAIL = 5
LOGS = "logs"  # raw/logs/<job>.log in the fleet's run folder


def fleet_command(plan: FleetPlan, target: FleetTarget | None = None) -> list[str]:
    """The command that measures this fleet (or one of its targets) again."""
    cmd = ["nsightlab", "fleet", "sweep", "--context", plan.context, "--namespace", plan.namespace]
    if target is not None:
        cmd += ["--types", target.instance_type]
    elif not plan.every_node:
        cmd += ["--types", ",".join(t.instance_type for t in plan.targets)]
    if plan.every_node:
        cmd.append("--every-node")
    cmd += ["--dtype", plan.dtype, "--device", plan.device]
    if plan.sizes:
        cmd += ["--sizes", ",".join(str(n) for n in plan.sizes)]
    if plan.iters is not None:
        cmd += ["--iters", str(plan.iters)]
    if plan.warmup is not None:
        cmd += ["--warmup", str(plan.warmup)]
    return cmd


def device_conflict(plan: FleetPlan, target: FleetTarget, record: SweepRecord) -> str | None:
    """What the device the log names contradicts (the node's GPU label, `--device`), or None."""
    dev = record.device
    against = []
    if plan.device == "cpu" and dev.type == "cuda":
        against.append("--device cpu was asked")
    elif plan.device != "cpu" and dev.type != "cuda":
        against.append(f"--device {plan.device} asked for its GPU")
    if dev.type == "cuda" and dev.name and target.gpu_product and not same_product(dev.name, target.gpu_product):
        against.append(f"the node's label says {target.gpu_product}")
    if not against:
        return None
    ran = f"{dev.name} ({dev.type})" if dev.name else dev.type
    return f"its log says it ran on {ran}, but {' and '.join(against)}; the node's GPU is kept as node_gpu"


def store_sweep(
    plan: FleetPlan, target: FleetTarget, *, data: Any, pod: dict[str, Any], node: str | None
) -> SweepResult:
    """A sweep run from the result a Job's log carried: raw/sweep.json, meta.json (fleet
    id, context, instance type, node, the GPU the record names and the node's label),
    result.json last. Raises ParseError (ImplausibleMeasurement for figures out of
    bounds) before any folder is made when it is not a plausible sweep record."""
    source = f"the log of job {target.job}"
    record = record_from_json(data, source=source)
    started = datetime.now(timezone.utc)
    pod_name = (pod.get("metadata") or {}).get("name") or target.job
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    where = {
        "target": f"pod {plan.namespace}/{pod_name}",
        "context": plan.context,
        "namespace": plan.namespace,
        "pod": pod_name,
        "node": node,
        "instance_type": target.instance_type,
        "gpu": target.gpu_product,
        "node_gpu": target.gpu_product,
        "image": containers[0].get("image"),
        "fleet_id": plan.fleet_id,
    }
    run, run_id = store.new_run("sweep", record.dtype, now=started)
    try:
        (run.raw / "sweep.json").write_text(json.dumps(data), encoding="utf-8")
        command = fleet_command(plan, target)
        result = build_result(
            record,
            target=str(where["target"]),
            where=where,
            run_id=run_id,
            run_dir=str(run.path),
            created=started,
            command=command,
            script_argv=list(containers[0].get("command") or []) + list(containers[0].get("args") or []),
        )
        dev = record.device
        run.write_meta(
            RunMeta(
                id=run_id,
                kind="sweep",
                name=record.dtype,
                created=started,
                target=result.target,
                context=plan.context,
                namespace=plan.namespace,
                pod=pod_name,
                node=node,
                instance_type=target.instance_type,
                gpu=dev.name if dev.type == "cuda" else target.gpu_product,
                node_gpu=target.gpu_product,
                device=dev.name,
                device_type=dev.type,
                device_requested=plan.device,
                image=containers[0].get("image"),
                versions={
                    "torch": dev.torch,
                    "cuda": dev.cuda,
                    "python": dev.python,
                    "driver": dev.driver,
                    "nsightlab": __version__,
                },
                command=command,
                dtype=record.dtype,
                headline=result.headline,
                fleet_id=plan.fleet_id,
            )
        )
        run.write_result(result)
    except BaseException:
        store.remove(run)
        raise
    return result


def _exit_code(pod: dict[str, Any] | None) -> int | None:
    for cs in ((pod or {}).get("status") or {}).get("containerStatuses") or []:
        term = (cs.get("state") or {}).get("terminated") or {}
        if "exitCode" in term:
            return int(term["exitCode"])
    return None


def job_entry(
    kube: Kube,
    plan: FleetPlan,
    fleet_run: Run,
    target: FleetTarget,
    pod: dict[str, Any] | None,
    node: str | None,
    finished: tuple[str, str, str],
) -> FleetEntry:
    """The entry of a finished Job (`finished`: Complete|Failed, reason, message): its
    log saved and scanned, then its result stored as a sweep run, or why it failed."""
    outcome, reason, message = finished
    scan = LogScan(LOG_TAIL)
    if pod is not None:
        logs = fleet_run.raw / LOGS
        logs.mkdir(exist_ok=True)
        try:
            save_log(kube, plan.namespace, pod["metadata"]["name"], logs / f"{target.job}.log", feed=scan.feed)
        except ClusterError as e:
            message = f"{message}; its log could not be read whole ({e.message})"
    scan.close()
    last = scan.tail
    if outcome == "Complete":
        data, why = scan.result()
        if data is None:
            return outcome_entry(target, "failed", why, node=node, log_tail=last)
        try:
            result = store_sweep(plan, target, data=data, pod=pod or {}, node=node)
        except ImplausibleMeasurement as e:
            return outcome_entry(target, "failed", e.problem, node=node, log_tail=last)
        except ParseError as e:
            return outcome_entry(
                target, "failed", f"the result in its log is not a sweep: {e.message}", node=node, log_tail=last
            )
        entry = measured_entry(target, result, node=node)
        entry.reason = device_conflict(plan, target, result.record)
        return entry
    if reason == "DeadlineExceeded":
        text = f"not done within --job-deadline {plan.job_deadline} s ({message or reason})"
        return outcome_entry(target, "timeout", text, node=node, log_tail=last)
    code = _exit_code(pod)
    why = last[-1] if last else (message or reason or "the Job failed")
    return outcome_entry(
        target, "failed", (f"exit {code}: " if code is not None else "") + why, node=node, log_tail=last
    )
