"""Doctor's checks through the API: read-only, so they run on protected contexts too.
(The in-pod checks and the whole list: `nsightlab.measure.doctor`.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from nsightlab.analysis import pods as r
from nsightlab.analysis.doctor import Check
from nsightlab.cluster.lab import check_lab_pod, check_pin, free_gpus, session_for
from nsightlab.errors import ClusterError, SafetyError

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube
    from nsightlab.cluster.safety import ResolvedContext
    from nsightlab.config import Config, Session


PERMISSIONS = [
    ("create", "pods", None),
    ("get", "pods", None),
    ("watch", "pods", None),
    ("delete", "pods", None),
    ("create", "pods", "exec"),
    ("list", "events", None),
]


def _try(checks: list[Check], name: str, fn: Callable[[], bool], detail: str, fix: str) -> bool:
    try:
        ok = fn()
    except ClusterError as e:
        checks.append(Check(name=name, ok=False, detail=e.message, fix=e.hint))
        return False
    checks.append(Check(name=name, ok=ok, detail=detail if ok else f"{detail} does not exist", fix=None if ok else fix))
    return ok


def api_checks(kube: Kube, ctx: ResolvedContext, config: Config) -> tuple[list[Check], bool]:
    """The read-only checks through the API: kubeconfig, server, namespace, permissions,
    GPUs of the lab's type, the image. Also says whether the server answered at all."""
    checks: list[Check] = []
    kc = ctx.kubeconfig
    checks.append(
        Check(
            name="kubeconfig and context",
            ok=True,
            detail=f"context {ctx.label} from {kc.path_arg()}, user {kc.user_of(ctx.name) or '?'}" + (f"; protected ({ctx.protected_reason}): read-only" if ctx.protected_reason else ""),
        )
    )
    try:
        version = kube.version()
    except ClusterError as e:
        checks.append(Check(name="API server reachable", ok=False, detail=e.message, fix=e.hint))
        return checks, False
    checks.append(Check(name="API server reachable", ok=True, detail=f"{kube.server}, Kubernetes {version.get('gitVersion', '?')}"))
    ns_ok = _try(checks, "namespace exists", lambda: kube.namespace_exists(ctx.namespace), ctx.namespace, f"Pass --namespace, or set clusters.<alias>.namespace in config.yaml (now: {ctx.namespace}).")
    if ns_ok:
        for verb, resource, sub in PERMISSIONS:
            label = f"{resource}/{sub}" if sub else resource
            try:
                allowed, reason = kube.access_review(verb, resource, ctx.namespace, subresource=sub)
            except ClusterError as e:
                checks.append(Check(name=f"may {verb} {label}", ok=False, detail=e.message))
                continue
            checks.append(Check(name=f"may {verb} {label}", ok=allowed, detail=f"in {ctx.namespace}" + (f" ({reason})" if reason else ""), fix=None if allowed else f"Ask for RBAC: {verb} {label} in namespace {ctx.namespace}."))
    itype = config.lab.instance_type
    try:

        free = free_gpus(kube, itype)
        if free:
            g = free[0]
            checks.append(Check(name=f"nodes of {itype}", ok=True, detail=f"{g.nodes} node(s), {g.gpu_allocatable} GPU(s), {g.gpu_free} free now"))
            if g.gpu_free < config.lab.gpus:
                checks.append(Check(name=f"a free GPU on {itype}", ok=False, detail="all GPUs of this type are in use", fix="Wait, or ask for one; `nsightlab explore nodes` shows who holds them."))
        else:
            checks.append(Check(name=f"nodes of {itype}", ok=False, detail="none in this cluster", fix="Set lab.instance_type in config.yaml to a GPU type `nsightlab explore nodes` lists."))
    except ClusterError as e:
        checks.append(Check(name=f"nodes of {itype}", ok=False, detail=e.message, fix=e.hint))
    image = config.lab.image
    image_ok = bool(image) and "CHANGE-ME" not in (image or "")
    checks.append(Check(name="lab image configured", ok=image_ok, detail=image or "lab.image is not set", fix=None if image_ok else "Set lab.image in config.yaml (the image with nsys, ncu and PyTorch)."))
    return checks, True


def probe_pod(kube: Kube, ctx: ResolvedContext, config: Config, session: Session | None) -> tuple[str, str | None, Check | None]:
    """The lab pod the in-pod checks would exec into and its node, or the note saying why
    they are skipped."""
    s = session_for(ctx, session)
    name = s.pod if s is not None else config.pod_name()
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
        return name, None, Check(name="lab pod", ok=None, detail=f"no lab pod {name} up: in-pod checks skipped (run `nsightlab create`)")
    if not r.pod_is_ready(pod):
        return name, None, Check(name="lab pod", ok=None, detail=f"{name} is {r.pod_status(pod)}: in-pod checks skipped")
    if ctx.protected_reason:
        return name, None, Check(name="lab pod", ok=None, detail=f"{name} is up, but this context is protected: nsightlab does not exec here")
    return name, (pod.get("spec") or {}).get("nodeName"), None
