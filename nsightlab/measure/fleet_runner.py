"""`nsightlab fleet`: the bandwidth sweep on every GPU type (or node) at once, as Jobs.

Kubernetes does the distributing: one batch/v1 Job per target (cluster/fleetjobs.py), at
most `max_parallel` at a time, followed by watches on the fleet's Jobs and pods. A Job's
result comes back in its log (the wrapper prints the sweep's JSON between markers); it is
validated and stored as a sweep run as soon as it arrives. A Job still unscheduled after
`schedule_timeout` is deleted and reported `not-scheduled` with the scheduler's words;
a failed Job keeps its log's last lines. When every target is in, a fleet run ties the
sweeps together (`analysis.fleet_result.build_fleet_result`) and the Jobs and the ConfigMap are
deleted (unless kept).

Ctrl-C leaves the Jobs running: the plan travels in the fleet's ConfigMap and its run
folder, so `fleet collect ID` picks up where the fleet was (Jobs not created yet are
created then, results already stored are not fetched twice).
"""

from __future__ import annotations

import contextlib
import queue
import secrets
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol, cast

from nsightlab import __version__, assets
from nsightlab.analysis.fleet_models import Device, FleetEntry, FleetPlan, FleetResult, FleetTarget, JobRow
from nsightlab.analysis.fleet_result import CONFIRM_ABOVE, build_fleet_result, outcome_entry
from nsightlab.analysis.sweep_options import DEFAULT_DTYPE, canonical_dtype, dtype_choices
from nsightlab.cluster import fleetjobs as fj
from nsightlab.cluster.answers import Conflict, Forbidden
from nsightlab.cluster.kube import Kube
from nsightlab.cluster.safety import ResolvedContext
from nsightlab.env import Env
from nsightlab.errors import (
    ClusterError,
    Interrupted,
    NsightlabError,
    PodNotReadyError,
    RemoteCommandError,
    UsageError,
)
from nsightlab.measure.bandwidth_sweep import parse_sizes
from nsightlab.measure.fleetjob import fleet_command, job_entry
from nsightlab.models import loads
from nsightlab.runs import store
from nsightlab.runs.store import Run, RunMeta
from nsightlab.userconfig import Config, atomic_write_json, check_price

RAW_PLAN = "plan.json"
RAW_ENTRIES = "entries.json"
TICK = 1.0  # seconds between redraws of the elapsed times while no event arrives


class Progress(Protocol):
    """Where the live table goes (present/fleetview.py: Rich Live, or plain lines)."""

    def update(self, rows: Sequence[JobRow]) -> None: ...


# ---------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class Place:
    """Where a fleet runs: the kubeconfig context, what to type for it (its alias, else
    its name) and the namespace."""

    context: str
    label: str
    namespace: str

    @classmethod
    def of(cls, ctx: ResolvedContext) -> Place:
        return cls(context=ctx.name, label=ctx.alias or ctx.name, namespace=ctx.namespace)

    def options(self) -> str:
        return f"--context {shlex.quote(self.label)} --namespace {shlex.quote(self.namespace)}"


@dataclass
class FleetOptions:
    """`fleet sweep`'s options, as given."""

    types: list[str] | None = None
    every_node: bool = False
    dtype: str | None = None
    sizes: str | None = None
    iters: int | None = None
    warmup: int | None = None
    device: str = "auto"
    max_parallel: int = 4
    schedule_timeout: float = 120.0
    job_deadline: int = 1800
    weights_gb: float | None = None
    prices: dict[str, float] = field(default_factory=dict)
    target_tokens_per_s: float | None = None


def parse_prices(values: Sequence[str]) -> dict[str, float]:
    """`--price g7e.8xlarge=3.14` (repeatable): USD per hour by instance type."""

    out: dict[str, float] = {}
    for text in values:
        itype, sep, amount = (part.strip() for part in text.partition("="))
        try:
            if not sep or not itype:
                raise ValueError
            price = float(amount)
        except ValueError:
            raise UsageError(f"--price wants TYPE=USD per hour, e.g. g7e.8xlarge=3.14, got '{text}'") from None
        try:
            check_price(itype, price)
        except ValueError as e:
            raise UsageError(f"--price: {e}") from None
        out[itype] = price
    return out


def parse_types(text: str | None) -> list[str] | None:
    if text is None:
        return None
    types = [t.strip() for t in text.split(",") if t.strip()]
    if not types:
        raise UsageError(f"--types wants comma-separated instance types such as g7e.8xlarge,g6.2xlarge, got '{text}'")
    return list(dict.fromkeys(types))


def types_hint(place: Place, opts: FleetOptions, example: str) -> str:
    """The command to run instead, naming the type(s) (a hint that runs as printed)."""
    cmd = [
        "nsightlab",
        "fleet",
        "sweep",
        "--context",
        place.label,
        "--namespace",
        place.namespace,
        "--types",
        ",".join(opts.types or [example]),
    ]
    if opts.dtype:
        cmd += ["--dtype", opts.dtype]
    if opts.sizes:
        cmd += ["--sizes", opts.sizes]
    if opts.iters is not None:
        cmd += ["--iters", str(opts.iters)]
    if opts.warmup is not None:
        cmd += ["--warmup", str(opts.warmup)]
    if opts.device != "auto":
        cmd += ["--device", opts.device]
    return shlex.join(cmd)


def plan_fleet(
    kube: Kube | None, place: Place, config: Config, opts: FleetOptions, *, fleet_id: str | None = None
) -> FleetPlan:
    """The targets (from --types alone, or from the nodes) and the sweep's options.
    `kube` may be None when --types names everything and nothing is to be read."""
    dtype = None
    if opts.dtype is not None:
        dtype = canonical_dtype(opts.dtype)
        if dtype is None:
            raise UsageError(
                f"--dtype '{opts.dtype}' is not an element type the sweep knows", hint=f"Use one of {dtype_choices()}."
            )
    sizes = parse_sizes(opts.sizes) if opts.sizes is not None else None
    if opts.max_parallel < 1:
        raise UsageError("--max-parallel must be at least 1")
    if opts.device not in ("auto", "cuda", "cpu"):
        raise UsageError(f"--device must be auto, cuda or cpu, got '{opts.device}'")
    fleet_id = fleet_id or secrets.token_hex(3)
    notes: list[str] = []
    if opts.types and not opts.every_node:
        found = fj.named_targets(opts.types)
    else:
        if kube is None:
            raise UsageError(
                "finding the GPU types needs the cluster", hint="Pass --context, or name the types with --types."
            )
        try:
            found, notes = fj.discover_targets(kube, types=opts.types, every_node=opts.every_node, config=config)
        except Forbidden as e:
            if opts.every_node:
                raise ClusterError(
                    f"cannot list the nodes to find the GPU nodes ({e.message})",
                    hint="--every-node needs `list nodes`; without it, measure per type with `"
                    + types_hint(place, opts, config.lab.instance_type)
                    + "`.",
                ) from None
            raise ClusterError(
                f"cannot list the nodes to find the GPU instance types ({e.message})",
                hint="Name the types yourself: `" + types_hint(place, opts, config.lab.instance_type) + "`.",
            ) from None
        if not found:
            which = f" of type {', '.join(opts.types)}" if opts.types else ""
            raise ClusterError(
                f"no GPU node{which} on context '{place.context}'",
                hint=f"See them with `nsightlab explore nodes --context {place.label}`.",
            )
    prices = {**config.prices, **opts.prices}
    return FleetPlan(
        fleet_id=fleet_id,
        context=place.context,
        namespace=place.namespace,
        owner=config.owner(),
        created=datetime.now(timezone.utc),
        every_node=opts.every_node,
        dtype=dtype or ("float32" if opts.device == "cpu" else DEFAULT_DTYPE),
        sizes=sizes,
        iters=opts.iters,
        warmup=opts.warmup,
        device=cast(Device, opts.device),
        max_parallel=opts.max_parallel,
        schedule_timeout=opts.schedule_timeout,
        job_deadline=opts.job_deadline,
        weights_gb=opts.weights_gb,
        prices=prices,
        target_tokens_per_s=opts.target_tokens_per_s,
        targets=fj.make_targets(fleet_id, found),
        notes=notes,
    )


def check_size(env: Env, plan: FleetPlan, *, yes: bool) -> None:
    """More than CONFIRM_ABOVE Jobs (one per node) need a yes: asked on a terminal, else
    `--yes` (exit 2 without it). Before anything is created."""
    n = len(plan.targets)
    if not plan.every_node or n <= CONFIRM_ABOVE or yes:
        return
    if not env.stdin_tty:
        raise UsageError(
            f"--every-node would start {n} Jobs (one per GPU node, each holding a GPU while it runs); refusing "
            "without confirmation",
            hint="Pass --yes to start them, or measure one per type without --every-node.",
        )
    if not env.confirm(f"Start {n} Jobs, one per GPU node (at most {plan.max_parallel} at once)?"):
        raise Interrupted("cancelled; nothing was changed")


def fleet_scripts() -> dict[str, str]:
    """What the Jobs run, as the ConfigMap's data: the wrapper, the sweep and its module."""
    return {
        name: assets.lab_script(name).read_text(encoding="utf-8") for name in (fj.WRAPPER, fj.SCRIPT, assets.LAB_COMMON)
    }


def manifests(template: dict[str, Any], config: Config, plan: FleetPlan) -> list[dict[str, Any]]:
    """The ConfigMap, then one Job per target: what `--dry-run` prints and the fleet creates."""
    return [fj.build_configmap(plan, fleet_scripts()), *(fj.build_job(template, config, plan, t) for t in plan.targets)]


def collect_command(place: Place, fleet_id: str) -> str:
    return f"nsightlab fleet collect {fleet_id} {place.options()}"


def cleanup_command(place: Place, fleet_id: str) -> str:
    return f"nsightlab cleanup --fleet {fleet_id} {place.options()}"


# ---------------------------------------------------------------------------- the fleet's run folder


def find_fleet_run(fleet_id: str) -> Run | None:
    """The fleet's own run folder in the store, if this machine started or collected it."""
    for run in store.all_runs():
        with contextlib.suppress(UsageError):
            meta = run.meta()
            if meta.kind == "fleet" and meta.id == fleet_id:
                return run
    return None


def _fleet_meta(plan: FleetPlan, result: FleetResult | None) -> RunMeta:
    return RunMeta(
        id=plan.fleet_id,
        kind="fleet",
        name=plan.dtype,
        created=plan.created,
        target=f"fleet {plan.namespace}/{plan.fleet_id} ({len(plan.targets)} Jobs)",
        context=plan.context,
        namespace=plan.namespace,
        versions={"nsightlab": __version__},
        command=fleet_command(plan),
        dtype=plan.dtype,
        headline=result.headline if result is not None else None,
        fleet_id=plan.fleet_id,
    )


def open_fleet_run(plan: FleetPlan) -> Run:
    """The fleet's run folder (made now, or the one an earlier start left): meta.json and
    raw/plan.json at once; result.json only when every target is in."""
    run = find_fleet_run(plan.fleet_id)
    if run is None:
        run, _ = store.new_run("fleet", plan.dtype, now=plan.created, run_id=plan.fleet_id)
        run.write_meta(_fleet_meta(plan, None))
        (run.raw / RAW_PLAN).write_text(plan.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return run


def _saved_entries(run: Run) -> dict[str, FleetEntry]:
    path = run.raw / RAW_ENTRIES
    try:
        data = loads(path.read_text(encoding="utf-8"))
        return {key: FleetEntry.model_validate(e) for key, e in data.items()}
    except (OSError, ValueError):
        return {}


def _save_entries(run: Run, entries: dict[str, FleetEntry]) -> None:
    """The targets finished so far (a later `collect` does not measure them again), with
    what the JSON leaves out (the GPU's memory and spec, the log's last lines)."""
    atomic_write_json(
        run.raw / RAW_ENTRIES,
        {
            k: {
                **e.model_dump(mode="json"),
                "memory_bytes": e.memory_bytes,
                "spec_dram_tbps": e.spec_dram_tbps,
                "log_tail": e.log_tail,
            }
            for k, e in entries.items()
        },
    )


# ---------------------------------------------------------------------------- running it


@dataclass
class _Slot:
    target: FleetTarget
    job: dict[str, Any] | None = None
    pod: dict[str, Any] | None = None
    started: float | None = None  # monotonic: when this process created (or first saw) the Job
    ended: float | None = None
    entry: FleetEntry | None = None


class _Runner:
    """Follows one fleet to its end: creates its Jobs (at most max_parallel alive), reads
    the watch events of its Jobs and pods, deletes what waits past the schedule timeout,
    and turns each finished Job into an entry (storing its sweep)."""

    def __init__(
        self,
        env: Env,
        kube: Kube,
        place: Place,
        config: Config,
        plan: FleetPlan,
        template: dict[str, Any],
        progress: Progress,
        run: Run,
    ) -> None:
        self.env = env
        self.kube = kube
        self.place = place
        self.config = config
        self.plan = plan
        self.template = template
        self.progress = progress
        self.run_folder = run
        self.ns = plan.namespace
        self.slots = [_Slot(t) for t in plan.targets]
        self.by_job = {s.target.job: s for s in self.slots}
        self.by_key = {s.target.key: s for s in self.slots}
        self.done: dict[str, FleetEntry] = {}
        self.created = 0  # Jobs this run created

    # -- the loop

    def run(self) -> list[FleetEntry]:
        sel = fj.selector(self.plan.owner, self.plan.fleet_id)
        self.done = {k: e for k, e in _saved_entries(self.run_folder).items() if k in self.by_key}
        for key, entry in self.done.items():
            self.by_key[key].entry = entry
        jobs, jobs_rv = self.kube.list_jobs(self.ns, label_selector=sel)
        pods, pods_rv = self.kube.list_pods(self.ns, label_selector=sel)
        now = time.monotonic()
        for job in jobs:
            slot = self.by_key.get(fj.job_target(job) or "")
            if slot is not None and slot.entry is None and fj.is_ours(job, self.plan.owner, self.plan.fleet_id):
                slot.job, slot.started = job, now
        for pod in pods:
            self._pod_event("ADDED", pod)
        watch = fj.FleetWatch(self.kube, self.ns, sel)
        watch.start(jobs_rv, pods_rv)
        try:
            for slot in self.slots:
                if slot.job is not None and slot.entry is None:
                    self._job_event("MODIFIED", slot.job)
            while True:
                self._launch()
                if all(s.entry is not None for s in self.slots):
                    break
                try:
                    kind, etype, obj = watch.events.get(timeout=max(0.05, min(TICK, self._next_deadline())))
                except queue.Empty:
                    pass
                else:
                    self._event(kind, etype, obj)
                    while True:  # everything that arrived meanwhile, before drawing
                        try:
                            kind, etype, obj = watch.events.get_nowait()
                        except queue.Empty:
                            break
                        self._event(kind, etype, obj)
                self._expire()
                self.progress.update(self.rows())
        finally:
            watch.stop()
        self.progress.update(self.rows())
        return [s.entry for s in self.slots if s.entry is not None]

    def _event(self, kind: str, etype: str, obj: dict[str, Any]) -> None:
        if kind == "error":
            raise ClusterError(
                f"lost the watch on fleet {self.plan.fleet_id}'s Jobs: {obj.get('message')}",
                hint=f"The Jobs go on; collect them later with `{collect_command(self.place, self.plan.fleet_id)}`.",
            )
        if kind == "job":
            self._job_event(etype, obj)
        else:
            self._pod_event(etype, obj)

    def _launch(self) -> None:
        active = sum(1 for s in self.slots if s.job is not None and s.entry is None)
        for slot in self.slots:
            if active >= self.plan.max_parallel:
                return
            if slot.job is not None or slot.entry is not None:
                continue
            manifest = fj.build_job(self.template, self.config, self.plan, slot.target)
            try:
                slot.job = self.kube.create_job(self.ns, manifest)
            except Conflict:
                found = self.kube.get_job(self.ns, slot.target.job)
                if found is None or not fj.is_ours(found, self.plan.owner, self.plan.fleet_id):
                    self._finish(
                        slot,
                        outcome_entry(
                            slot.target, "failed", f"a Job named {slot.target.job} exists and is not this fleet's"
                        ),
                    )
                    continue
                slot.job = found
            else:
                self.created += 1
            slot.started = time.monotonic()
            active += 1

    def _next_deadline(self) -> float:
        """Seconds until the next Job would be past --schedule-timeout."""
        now = time.monotonic()
        waits = [
            s.started + self.plan.schedule_timeout - now
            for s in self.slots
            if s.entry is None and s.started is not None and not self._scheduled(s)
        ]
        return min(waits, default=TICK)

    @staticmethod
    def _scheduled(slot: _Slot) -> bool:
        return bool(slot.pod is not None and (slot.pod.get("spec") or {}).get("nodeName"))

    def _expire(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            if slot.entry is not None or slot.started is None or self._scheduled(slot):
                continue
            if now - slot.started < self.plan.schedule_timeout:
                continue
            reason = (fj.pending_reason(slot.pod) if slot.pod is not None else None) or "the Job made no pod"
            job = slot.job or {}
            self.kube.delete_job(self.ns, slot.target.job, uid=(job.get("metadata") or {}).get("uid"))
            self._finish(slot, outcome_entry(slot.target, "not-scheduled", reason))

    # -- events

    def _job_event(self, etype: str, job: dict[str, Any]) -> None:
        slot = self.by_job.get(job["metadata"]["name"])
        if slot is None or slot.entry is not None or slot.job is None:
            return
        uid = (slot.job.get("metadata") or {}).get("uid")
        if uid and job["metadata"].get("uid") != uid:
            return  # an older Job of the same name
        if etype == "DELETED":
            self._finish(
                slot,
                outcome_entry(slot.target, "failed", "its Job was deleted before it finished", node=self._node(slot)),
            )
            return
        slot.job = job
        done = fj.job_finished(job)
        if done is not None:
            self._collect(slot, *done)

    def _pod_event(self, etype: str, pod: dict[str, Any]) -> None:
        slot = self.by_job.get(fj.job_of_pod(pod) or "")
        if slot is None or slot.entry is not None or slot.job is None or etype == "DELETED":
            return
        owner = next(
            (o.get("uid") for o in (pod.get("metadata") or {}).get("ownerReferences") or [] if o.get("controller")),
            None,
        )
        if owner != (slot.job.get("metadata") or {}).get("uid"):
            return  # a pod of an earlier Job of that name, still going away
        slot.pod = pod
        fatal = fj.fatal_waiting(pod)
        if fatal is not None:
            self.kube.delete_job(self.ns, slot.target.job, uid=((slot.job or {}).get("metadata") or {}).get("uid"))
            self._finish(
                slot,
                outcome_entry(slot.target, "failed", f"its container cannot start ({fatal})", node=self._node(slot)),
            )

    def _node(self, slot: _Slot) -> str | None:
        return ((slot.pod or {}).get("spec") or {}).get("nodeName") or slot.target.node

    def _find_pod(self, slot: _Slot) -> dict[str, Any] | None:
        """The finished Job's pod as it is now (the pods' watch may not have told its end yet)."""
        if slot.pod is not None:
            return self.kube.get_pod(self.ns, slot.pod["metadata"]["name"])  # None: gone (a deadline deletes it)
        pods, _ = self.kube.list_pods(
            self.ns, label_selector=f"{fj.FLEET}={self.plan.fleet_id},job-name={slot.target.job}"
        )
        uid = ((slot.job or {}).get("metadata") or {}).get("uid")
        mine = [
            p for p in pods if uid in (o.get("uid") for o in (p.get("metadata") or {}).get("ownerReferences") or [])
        ]
        return mine[-1] if mine else None

    def _collect(self, slot: _Slot, outcome: str, reason: str, message: str) -> None:
        """A finished Job: its log, then its result (stored as a sweep run) or why it failed."""
        pod = self._find_pod(slot)
        if pod is not None:
            slot.pod = pod
        entry = job_entry(
            self.kube, self.plan, self.run_folder, slot.target, pod, self._node(slot), (outcome, reason, message)
        )
        self._finish(slot, entry)

    def _finish(self, slot: _Slot, entry: FleetEntry) -> None:
        slot.entry = entry
        slot.ended = time.monotonic()
        self.done[slot.target.key] = entry
        _save_entries(self.run_folder, self.done)

    # -- the table

    def rows(self) -> list[JobRow]:
        now = time.monotonic()
        out = []
        for s in self.slots:
            elapsed = None if s.started is None else (s.ended or now) - s.started
            if s.entry is not None:
                out.append(
                    JobRow(
                        key=s.target.key,
                        instance_type=s.target.instance_type,
                        phase=s.entry.status,
                        node=s.entry.node,
                        reason=s.entry.reason,
                        elapsed_s=elapsed,
                        log_tail=s.entry.log_tail,
                    )
                )
            elif s.job is None:
                out.append(
                    JobRow(key=s.target.key, instance_type=s.target.instance_type, phase="waiting", node=s.target.node)
                )
            else:
                pod = s.pod or {}
                phase = (pod.get("status") or {}).get("phase") or "Pending"
                reason = fj.pending_reason(pod) if phase == "Pending" and pod else None
                out.append(
                    JobRow(
                        key=s.target.key,
                        instance_type=s.target.instance_type,
                        phase=phase,
                        node=self._node(s),
                        reason=reason,
                        elapsed_s=elapsed,
                    )
                )
        return out


def run_fleet(
    env: Env,
    kube: Kube,
    place: Place,
    config: Config,
    plan: FleetPlan,
    template: dict[str, Any],
    progress: Progress,
    *,
    keep: bool,
    create: bool,
) -> FleetResult:
    """Create the fleet's ConfigMap (when `create`), run and follow its Jobs to the end,
    store the fleet run, then delete the Jobs and the ConfigMap unless `keep`. Ctrl-C
    leaves everything running and says how to collect it (exit 130); so does a run store
    that cannot be written any more (a full disk: exit 2 naming the folder)."""
    try:
        run = open_fleet_run(plan)
    except OSError as e:
        raise UsageError(
            f"cannot store fleet {plan.fleet_id} in {store.runs_dir()} ({e.strerror or e}); nothing was created",
            hint="Free some space there, or point NSIGHTLAB_HOME at a folder you can write in.",
        ) from None
    runner = _Runner(env, kube, place, config, plan, template, progress, run)
    try:
        if create:
            try:
                kube.create_configmap(plan.namespace, fj.build_configmap(plan, fleet_scripts()))
            except BaseException as e:
                if not isinstance(e, KeyboardInterrupt):
                    store.remove(run)  # nothing was started
                raise
        try:
            entries = runner.run()
        except ClusterError as e:
            if create and runner.created == 0 and not any(s.job for s in runner.slots):
                # nothing started: take the ConfigMap back, leave no run behind
                with contextlib.suppress(ClusterError):
                    fj.delete_fleets(env, kube, plan.namespace, plan.owner, [plan.fleet_id])
                store.remove(run)
                raise
            raise ClusterError(
                e.message,
                hint=" ".join(
                    x
                    for x in (
                        e.hint,
                        f"The Jobs already started go on: collect them with `{collect_command(place, plan.fleet_id)}`.",
                    )
                    if x
                ),
            ) from None
        result = build_fleet_result(plan, entries)
        run.write_meta(_fleet_meta(plan, result))
        run.write_result(result)
    except OSError as e:
        raise UsageError(
            f"cannot store the results of fleet {plan.fleet_id} in {store.runs_dir()} ({e.strerror or e}): its Jobs "
            "and ConfigMap are left as they are",
            hint=f"Free some space there (or fix NSIGHTLAB_HOME), then collect the fleet with "
            f"`{collect_command(place, plan.fleet_id)}`, or remove it with `{cleanup_command(place, plan.fleet_id)}`.",
        ) from None
    except KeyboardInterrupt:
        started = sum(1 for s in runner.slots if s.job is not None)
        left = (
            f"the Jobs of fleet {plan.fleet_id} are left running ({started} of {len(plan.targets)} created)"
            if started
            else f"fleet {plan.fleet_id} created no Job yet (its ConfigMap is left)"
        )
        raise Interrupted(
            f"interrupted: {left}",
            hint=f"Collect the fleet with `{collect_command(place, plan.fleet_id)}` (or remove it with "
            f"`{cleanup_command(place, plan.fleet_id)}`).",
        ) from None
    except Exception as e:
        if not isinstance(e, NsightlabError):  # a bug: say what it leaves on the cluster
            env.warn(
                f"fleet {plan.fleet_id} stopped: its Jobs and ConfigMap are left; remove them with "
                f"`{cleanup_command(place, plan.fleet_id)}`"
            )
        raise
    if keep:
        env.note(
            f"the Jobs and the ConfigMap of fleet {plan.fleet_id} are kept; remove them with "
            f"`{cleanup_command(place, plan.fleet_id)}`"
        )
    else:
        gone = fj.delete_fleets(env, kube, plan.namespace, plan.owner, [plan.fleet_id])
        env.note(
            f"deleted {len(gone.jobs)} Job{'s' if len(gone.jobs) != 1 else ''} and {len(gone.configmaps)} "
            f"ConfigMap of fleet {plan.fleet_id}"
        )
    return result


def load_plan(kube: Kube, place: Place, owner: str, fleet_id: str) -> tuple[FleetPlan, bool]:
    """A fleet's plan: from its ConfigMap, else from this machine's run folder. Also
    whether the ConfigMap is still there."""
    try:
        cm = kube.get_configmap(place.namespace, fj.configmap_name(fleet_id))
    except Forbidden:
        cm = None
    if cm is not None and not fj.is_ours(cm, owner, fleet_id):
        raise ClusterError(
            f"configmap {fj.configmap_name(fleet_id)} in namespace {place.namespace} is not a fleet of {owner}",
            hint=f"See your fleets with `nsightlab fleet status {place.options()}`.",
        )
    plan = fj.plan_of(cm) if cm is not None else None
    if plan is None:
        run = find_fleet_run(fleet_id)
        if run is not None:
            with contextlib.suppress(OSError, ValueError):
                plan = FleetPlan.model_validate_json((run.raw / RAW_PLAN).read_text(encoding="utf-8"))
    if plan is None:
        raise ClusterError(
            f"no fleet {fleet_id} in namespace {place.namespace} of context '{place.context}'",
            hint=f"See your fleets with `nsightlab fleet status {place.options()}`.",
        )
    return plan, cm is not None


def failure(result: FleetResult) -> NsightlabError | None:
    """The exit a finished fleet deserves: 6 when a measurement failed or timed out, 5 when
    no Job could be scheduled, else none (some not scheduled is a note)."""
    bad = [e for e in result.entries if e.status in ("failed", "timeout")]
    if bad:
        names = ", ".join(e.instance_type + (f" on {e.node}" if e.node else "") for e in bad)
        return RemoteCommandError(
            f"{len(bad)} Job{'s' if len(bad) != 1 else ''} of fleet {result.fleet_id} failed or timed out ({names})",
            hint="The reasons and the logs' last lines are above.",
        )
    if result.entries and all(e.status == "not-scheduled" for e in result.entries):
        return PodNotReadyError(
            f"no Job of fleet {result.fleet_id} could be scheduled: no free GPU of "
            f"{', '.join(sorted({e.instance_type for e in result.entries}))}",
            hint=f"See the free GPUs with `nsightlab explore nodes --context {result.context}`, then try again later "
            "or raise --schedule-timeout.",
        )
    return None


def running_fleet_plan(
    kube: Kube, place: Place, config: Config, fleet_id: str, *, max_parallel: int | None, schedule_timeout: float | None
) -> tuple[FleetPlan, bool]:
    """The plan `fleet collect` follows, with the options given to it."""
    plan, has_configmap = load_plan(kube, place, config.owner(), fleet_id)
    update: dict[str, Any] = {}
    if max_parallel is not None:
        update["max_parallel"] = max_parallel
    if schedule_timeout is not None:
        update["schedule_timeout"] = schedule_timeout
    return plan.model_copy(update=update), has_configmap


def status_note(plan: FleetPlan) -> str:
    what = "GPU node" if plan.every_node else "instance type"
    return (
        f"fleet {plan.fleet_id}: {len(plan.targets)} Job{'s' if len(plan.targets) != 1 else ''}, one per {what}, at "
        f"most {plan.max_parallel} at once, {plan.dtype} on "
        f"{'the CPU (--device cpu)' if plan.device == 'cpu' else 'the GPU'}"
    )


def stored_place(fleet_id: str) -> tuple[str, str] | None:
    """(context, namespace) a fleet of this machine ran in, from its run folder."""
    run = find_fleet_run(fleet_id)
    if run is None:
        return None
    meta = run.meta()
    return (meta.context, meta.namespace) if meta.context and meta.namespace else None
