"""Doctor's checks through the API: read-only, so they run on protected contexts too.
(The in-pod checks and the whole list: `nsightlab.measure.pod_checks`.)

What the lab needs is reviewed permission by permission (`permissions.LAB_PERMISSIONS`,
SelfSubjectAccessReview): a denial there is a failure. Cluster-wide reads (the
Namespace object, nodes, pods of every namespace) are tried, and one the account may not
do is shown as `info`: the lab runs without them. No fix sends the user back to doctor.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from nsightlab.cluster.answers import Forbidden
from nsightlab.cluster.lab_lifecycle import check_lab_pod, check_pin, create_command, session_for
from nsightlab.cluster.labgpus import free_gpus
from nsightlab.cluster.permissions import (
    FLEET_PERMISSIONS,
    LAB_PERMISSIONS,
    Permission,
    rules,
    skipped_note,
)
from nsightlab.errors import ClusterError, SafetyError
from nsightlab.k8s import pods as r
from nsightlab.k8s.doctor import Check

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube
    from nsightlab.cluster.safety import ResolvedContext
    from nsightlab.userconfig import Config, Session


def api_checks(kube: Kube, ctx: ResolvedContext, config: Config) -> tuple[list[Check], bool]:
    """The read-only checks through the API: kubeconfig, server, namespace, permissions,
    GPUs of the lab's type, the image. Also says whether the server answered at all.

    On a protected context it says first that every change is refused there, and sends
    only reads (GET, list): no access review (each is a POST, a `create` in the audit
    log), so the permission checks are skipped, and what only a lab pod would need (free
    GPUs, the image) is information, not a failure."""
    checks: list[Check] = [_protected(ctx)] if ctx.protected_reason else []
    kc = ctx.kubeconfig
    checks.append(
        Check(
            name="kubeconfig and context",
            ok=True,
            detail=f"context {ctx.label} from {kc.path_arg()}, user {kc.user_of(ctx.name) or '?'}",
        )
    )
    try:
        version = kube.version()
    except ClusterError as e:
        checks.append(Check(name="API server reachable", ok=False, detail=e.message, fix=_fix(e)))
        return checks, False
    checks.append(
        Check(
            name="API server reachable", ok=True, detail=f"{kube.server}, Kubernetes {version.get('gitVersion', '?')}"
        )
    )
    namespace = _namespace_check(kube, ctx)
    checks.append(namespace)
    if ctx.protected_reason:
        detail = "skipped: each access review is a POST request, and doctor sends none on a protected context"
        checks.append(Check(name="permissions", ok=None, detail=detail))
    elif namespace.ok is not False:
        checks += permission_checks(kube, ctx, LAB_PERMISSIONS, needed=True, role="the lab's Role")
        extra = [p for p in FLEET_PERMISSIONS if p not in LAB_PERMISSIONS]
        checks += permission_checks(kube, ctx, extra, needed=False, label="fleet: ", role="the fleet's Role")
    checks += _gpu_checks(kube, ctx, config)
    image = config.lab.image
    image_ok = bool(image) and "CHANGE-ME" not in (image or "")
    fix = "Set lab.image in the config file (`nsightlab config` shows which) to the image with nsys, ncu and PyTorch."
    detail = image or "lab.image is not set"
    checks.append(
        Check(name="lab image configured", ok=image_ok or _lab_need(ctx), detail=detail, fix=None if image_ok else fix)
    )
    return checks, True


def _lab_need(ctx: ResolvedContext) -> bool | None:
    """What a failed check of something only a lab pod needs is: a failure, or (on a
    protected context, where no lab pod is made) information."""
    return None if ctx.protected_reason else False


def _protected(ctx: ResolvedContext) -> Check:
    return Check(
        name="protected context",
        ok=None,
        detail=f"{ctx.protected_reason}: nsightlab refuses every change here (create, shell, copy, profile, sweep, "
        "ncu, cleanup); doctor only reads (GET and list requests, no access review)",
    )


def _fix(e: ClusterError) -> str | None:
    """The error's own hint, unless it would send the user to doctor (a 403's does)."""
    if isinstance(e, Forbidden):
        return "Ask the cluster admins for that permission."
    return e.hint


def _namespace_check(kube: Kube, ctx: ResolvedContext) -> Check:
    """Whether the namespace exists, when the account may read Namespace objects (most
    lab users may not, and need not: creating the pod says when it is missing)."""
    ns = ctx.namespace
    try:
        exists = kube.namespace_exists(ns)
    except Forbidden as e:
        return Check(
            name="namespace", ok=None, detail=skipped_note(e.what, f"not needed; the checks below are for {ns}")
        )
    except ClusterError as e:
        return Check(name="namespace", ok=False, detail=e.message, fix=_fix(e))
    if exists:
        return Check(name="namespace", ok=True, detail=f"{ns} exists")
    return Check(
        name="namespace",
        ok=False,
        detail=f"{ns} does not exist on context {ctx.name}",
        fix=f"Pass -n NAMESPACE, or set clusters.{ctx.alias or '<alias>'}.namespace in config.yaml (now: {ns}).",
    )


def _review(kube: Kube, ns: str, p: Permission) -> tuple[bool | None, str]:
    """(allowed, the reviewer's reason), or (None, why the review itself failed)."""
    try:
        return kube.access_review(p.verb, p.resource, ns, subresource=p.subresource, group=p.group)
    except ClusterError as e:
        return None, e.message


def permission_checks(
    kube: Kube,
    ctx: ResolvedContext,
    permissions: list[Permission] | tuple[Permission, ...],
    *,
    needed: bool,
    role: str,
    label: str = "",
) -> list[Check]:
    """One check per resource, each verb reviewed with a SelfSubjectAccessReview.

    `needed`: a denial fails the check (the lab's own permissions); otherwise it is
    information (what only another command needs). `role`: which of the Roles of docs/permissions.md
    grants them, for the fix."""
    ns = ctx.namespace
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = dict(zip(permissions, pool.map(lambda p: _review(kube, ns, p), permissions), strict=True))
    none_granted = needed and not any(allowed for allowed, _ in answers.values())
    checks: list[Check] = []
    for rule in rules(permissions):
        mine = [(p, answers[p]) for p in permissions if (p.group, p.label) == (rule.group, rule.resource)]
        failed = [f"{p.verb} ({reason})" for p, (allowed, reason) in mine if allowed is None]
        denied = [p.verb for p, (allowed, _) in mine if allowed is False]
        name = f"{label}may {'/'.join(rule.verbs)} {rule.name}"
        if failed:
            checks.append(Check(name=name, ok=None, detail="could not review: " + "; ".join(failed)))
        elif denied:
            ask = f"Ask for {', '.join(denied)} on {rule.name} in namespace {ns}: docs/permissions.md has {role}."
            if none_granted:
                ask += f" Nothing is granted in {ns}: if it is not your team's namespace, pass -n NAMESPACE."
            detail = f"in {ns}: denied {', '.join(denied)}"
            if not needed:
                detail += " (only nsightlab fleet needs it)"
            checks.append(Check(name=name, ok=False if needed else None, detail=detail, fix=ask))
        else:
            reasons = {reason for _, (_, reason) in mine if reason}
            checks.append(
                Check(name=name, ok=True, detail=f"in {ns}" + (f" ({reasons.pop()})" if len(reasons) == 1 else ""))
            )
    return checks


def _gpu_checks(kube: Kube, ctx: ResolvedContext, config: Config) -> list[Check]:
    """Nodes and free GPUs of the lab's instance type: a cluster-wide view, information
    only where this account may not read it."""
    itype = config.lab.instance_type
    name = f"nodes of {itype}"
    explore = f"`nsightlab explore nodes --context {ctx.alias or ctx.name}`"
    try:
        free = free_gpus(kube, itype)
    except Forbidden as e:
        return [
            Check(
                name=name,
                ok=None,
                detail=skipped_note(
                    e.what, "no free-GPU count before create, no explore nodes; the lab runs without them"
                ),
                fix="For those, ask for a ClusterRole with get/list on nodes and list on pods.",
            )
        ]
    except ClusterError as e:
        return [Check(name=name, ok=False, detail=e.message, fix=_fix(e))]
    if not free:
        return [
            Check(
                name=name,
                ok=_lab_need(ctx),
                detail="none in this cluster",
                fix=f"Set lab.instance_type in config.yaml to a GPU type that {explore} lists.",
            )
        ]
    g = free[0]
    checks = [Check(name=name, ok=True, detail=f"{g.nodes} node(s), {g.gpu_allocatable} GPU(s), {g.gpu_free} free now")]
    if g.gpu_free < config.lab.gpus:
        checks.append(
            Check(
                name=f"a free GPU on {itype}",
                ok=_lab_need(ctx),
                detail="all GPUs of this type are in use",
                fix=f"Wait, or ask for one; {explore} shows each node's GPUs.",
            )
        )
    return checks


def probe_pod(
    kube: Kube, ctx: ResolvedContext, config: Config, session: Session | None
) -> tuple[str, str | None, Check | None]:
    """The lab pod the in-pod checks would exec into and its node, or the note saying why
    they are skipped."""
    s = session_for(ctx, session)
    name = s.pod if s is not None else config.pod_name()
    if ctx.protected_reason:  # not even looked for: nothing is made or run here
        return name, None, Check(name="lab pod", ok=None, detail="in-pod checks skipped: nsightlab never execs here")
    try:
        if s is not None:
            check_pin(ctx, s)  # the session's pod is not looked for on another server
        pod = kube.get_pod(ctx.namespace, name)
        if pod is not None:
            check_lab_pod(pod, ctx=ctx, owner=s.owner if s is not None else config.owner(), session=s)
    except SafetyError as e:
        return name, None, Check(name="lab pod", ok=False, detail=f"{e.message}: in-pod checks skipped", fix=e.hint)
    except ClusterError as e:
        return name, None, Check(name="lab pod", ok=None, detail=e.message)
    if pod is None:
        return (
            name,
            None,
            Check(
                name="lab pod",
                ok=None,
                detail=f"no lab pod {name} up: in-pod checks skipped (`{create_command(ctx)}` starts one)",
            ),
        )
    if not r.pod_is_ready(pod):
        return (
            name,
            None,
            Check(name="lab pod", ok=None, detail=f"{name} is {r.pod_status(pod)}: in-pod checks skipped"),
        )
    return name, (pod.get("spec") or {}).get("nodeName"), None
