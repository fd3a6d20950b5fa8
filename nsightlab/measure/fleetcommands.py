"""`fleet sweep` and `fleet collect`, each the one call of its command: the request
checked, the plan made (or read back from the cluster), the change confirmed, the Jobs
followed with a live table until each has a result (`nsightlab.measure.fleet_runner`); and
`fleet sweep --dry-run`'s manifests.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsightlab import assets, configure
from nsightlab.analysis.fleet_models import FleetResult
from nsightlab.cluster import fleetjobs as fj
from nsightlab.cluster.connect import connect
from nsightlab.cluster.safety import Intent, confirm_change
from nsightlab.errors import UsageError
from nsightlab.measure import fleet_runner as fl
from nsightlab.present import fleetview
from nsightlab.userconfig import ensure_home, load_config

if TYPE_CHECKING:
    from nsightlab.present.console import Env


@dataclass(frozen=True)
class FleetPlace:
    """The context and namespace a fleet command was given (None: the alias's, the
    context's, or where this machine started the fleet)."""

    context: str | None = None
    kubeconfig: Path | None = None
    namespace: str | None = None
    config_path: Path | None = None


def options(*, types: str | None, prices: list[str], **given: Any) -> fl.FleetOptions:
    """`fleet sweep`'s options checked: --types and --price parsed, the rest as given
    (`FleetOptions`' fields)."""
    if given.get("target_tokens_per_s") is not None and given.get("weights_gb") is None:
        raise UsageError("--target-tokens-per-s needs --weights-gb (the model's weights set its tokens/s)")
    return fl.FleetOptions(types=fl.parse_types(types), prices=fl.parse_prices(prices), **given)


def start(env: Env, place: FleetPlace, opts: fl.FleetOptions, *, keep: bool, yes: bool) -> FleetResult:
    """A new fleet: planned, confirmed, its Jobs created and followed, each result stored."""
    _refuse_placeholders(place)
    template = fj.load_job_template(assets.fleet_job_template())
    ensure_home()  # the results must be storable before any Job holds a GPU
    with connect(
        place.context,
        place.kubeconfig,
        config_path=place.config_path,
        intent=Intent.CHANGE,
        namespace=place.namespace,
        action="start a fleet of Jobs",
    ) as c:
        where = fl.Place.of(c.ctx)
        plan = fl.plan_fleet(c.kube, where, c.config, opts)
        fl.manifests(template, c.config, plan)  # a config that cannot make them fails here, before any change
        fl.check_size(env, plan, yes=yes)
        per = "GPU node" if plan.every_node else "instance type"
        confirm_change(
            env,
            c.ctx,
            f"start fleet {plan.fleet_id}: {len(plan.targets)} Job{'s' if len(plan.targets) != 1 else ''} (one "
            f"per {per}, 1 GPU each, at most {plan.max_parallel} at once)",
            yes=yes,
        )
        env.note(fl.status_note(plan))
        with fleetview.progress(env) as live:
            return fl.run_fleet(env, c.kube, where, c.config, plan, template, live, keep=keep, create=True)


def dry_run(place: FleetPlace, opts: fl.FleetOptions) -> list[dict[str, Any]]:
    """The ConfigMap and the Jobs as `start` would create them; reads the nodes at most
    (none without a context: every instance type must then be given)."""
    _refuse_placeholders(place)
    template = fj.load_job_template(assets.fleet_job_template())
    if place.context is None:
        cfg = load_config(place.config_path).config
        where = fl.Place(context="", label="CONTEXT", namespace=place.namespace or "default")
        return fl.manifests(template, cfg, fl.plan_fleet(None, where, cfg, opts))
    with connect(
        place.context, place.kubeconfig, config_path=place.config_path, intent=Intent.READ, namespace=place.namespace
    ) as c:
        return fl.manifests(template, c.config, fl.plan_fleet(c.kube, fl.Place.of(c.ctx), c.config, opts))


def collect(
    env: Env,
    place: FleetPlace,
    fleet_id: str,
    *,
    max_parallel: int | None,
    schedule_timeout: float | None,
    keep: bool,
    yes: bool,
) -> FleetResult:
    """A fleet left running followed to its end: the Jobs not created yet created, the
    results stored, then its Jobs and ConfigMap deleted (unless `keep`)."""
    ensure_home()
    place = _started_here(env, place, fleet_id)
    _refuse_placeholders(place)
    template = fj.load_job_template(assets.fleet_job_template())
    with connect(
        place.context,
        place.kubeconfig,
        config_path=place.config_path,
        intent=Intent.CHANGE,
        namespace=place.namespace,
        action="collect a fleet",
    ) as c:
        where = fl.Place.of(c.ctx)
        plan, has_configmap = fl.running_fleet_plan(
            c.kube, where, c.config, fleet_id, max_parallel=max_parallel, schedule_timeout=schedule_timeout
        )
        confirm_change(
            env,
            c.ctx,
            f"collect fleet {fleet_id} ({len(plan.targets)} Jobs), then delete its Jobs"
            + ("" if keep else " and ConfigMap"),
            yes=yes,
        )
        env.note(fl.status_note(plan))
        with fleetview.progress(env) as live:
            return fl.run_fleet(env, c.kube, where, c.config, plan, template, live, keep=keep, create=not has_configmap)


def _refuse_placeholders(place: FleetPlace) -> None:
    """A placeholder from the starter config must not reach a Job, printed or sent (as for create)."""
    loaded = load_config(place.config_path)
    alias = place.context if place.context in loaded.config.clusters else None
    configure.refuse_placeholders(loaded, alias=alias, namespace_given=place.namespace is not None)


def _started_here(env: Env, place: FleetPlace, fleet_id: str) -> FleetPlace:
    """--context as given, else where this machine started the fleet (said so)."""
    if place.context is not None:
        return place
    found = fl.stored_place(fleet_id)
    if found is None:
        return place
    namespace = place.namespace or found[1]
    env.note(f"using the context of fleet {fleet_id} as it was started here: {found[0]}, namespace {namespace}")
    return FleetPlace(found[0], place.kubeconfig, namespace, place.config_path)
