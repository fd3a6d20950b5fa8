"""`cleanup` from its options: the lab pod (or every lab pod and fleet of yours, or one
fleet) deleted through `cluster.lab_lifecycle.cleanup` and `cluster.fleetjobs.delete_fleets`.

Plain `cleanup` with neither a lab session nor `--context` has nothing to delete: it says
so and contacts no cluster (exit 0), so that cleaning up twice is not an error."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nsightlab.cluster import lab_lifecycle
from nsightlab.cluster.connect import connect, lab_pod_name, note_session
from nsightlab.cluster.fleetjobs import delete_fleets
from nsightlab.cluster.safety import Intent, confirm_change
from nsightlab.k8s.labpod import CleanupReport
from nsightlab.measure.fleet_runner import stored_place
from nsightlab.userconfig import load_session

if TYPE_CHECKING:
    from nsightlab.env import Env

NOTHING = "no lab session: nothing to delete"


@dataclass(frozen=True)
class CleanupOptions:
    """What `nsightlab cleanup` was given."""

    context: str | None
    kubeconfig: Path | None
    namespace: str | None
    config_path: Path | None
    all_mine: bool = False
    fleet: str | None = None
    yes: bool = False


def run_cleanup(env: Env, opts: CleanupOptions) -> CleanupReport:
    """Delete what the options name; see the module's docstring."""
    context, namespace = opts.context, opts.namespace
    if context is None and opts.fleet is None and not opts.all_mine and load_session() is None:
        env.note(NOTHING)
        return CleanupReport(context=None, namespace=None, deleted=[], already_gone=[], skipped=[], note=NOTHING)
    if opts.fleet is not None and context is None:
        found = stored_place(opts.fleet)
        if found is not None:
            context, namespace = found[0], namespace or found[1]
            env.note(
                f"using the context of fleet {opts.fleet} as it was started here: {context}, namespace {namespace}"
            )
    with connect(
        context,
        opts.kubeconfig,
        config_path=opts.config_path,
        intent=Intent.CHANGE,
        namespace=namespace,
        use_session=True,
        action="delete pods",
    ) as c:
        note_session(env, c)
        owner = c.config.owner()
        if opts.fleet is not None:
            confirm_change(env, c.ctx, f"delete the Jobs and the ConfigMap of fleet {opts.fleet}", yes=opts.yes)
            report = CleanupReport(
                context=c.ctx.name, namespace=c.ctx.namespace, deleted=[], already_gone=[], skipped=[]
            )
            report.fleets = delete_fleets(env, c.kube, c.ctx.namespace, owner, [opts.fleet])
            return report
        name = lab_pod_name(c, require_ready=False)
        what = f"delete every lab pod and fleet of {owner}" if opts.all_mine else f"delete lab pod {name}"
        confirm_change(env, c.ctx, what, yes=opts.yes)
        report = lab_lifecycle.cleanup(env, c.kube, c.ctx, owner=owner, names=[name], all_mine=opts.all_mine)
        if opts.all_mine:
            report.fleets = delete_fleets(env, c.kube, c.ctx.namespace, owner, None)
        return report
