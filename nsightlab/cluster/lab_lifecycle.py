"""The lab pod: create it (or reuse it) and wait until Ready, its status, cleanup, and
the lab session's pin that every command working in the pod checks first.

The manifest and the labels that mark a pod as the lab's are in `labmanifest`; waiting
on the pod in `labwait`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from nsightlab.cluster.labgpus import check_gpus
from nsightlab.cluster.labmanifest import MANAGED_BY, OWNER, is_ours, owner_label, selector
from nsightlab.cluster.labwait import PodWaiter, not_ready, wait_gone
from nsightlab.cluster.permissions import optional
from nsightlab.errors import ClusterError, Interrupted, OnInterrupt, SafetyError, UsageError
from nsightlab.k8s import pods as r
from nsightlab.k8s.labmatch import differences, mismatch_error
from nsightlab.k8s.labpod import CleanupReport, LabPod, StatusReport, lab_pod, unscheduled_reason
from nsightlab.userconfig import Config, Session, end_session, load_session, save_session, session_path

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube
    from nsightlab.cluster.safety import ResolvedContext
    from nsightlab.env import Env

# ---------------------------------------------------------------------------- the session's pin


def session_for(ctx: ResolvedContext, session: Session | None) -> Session | None:
    """The lab session when it is about this context (the one `create` recorded), else None.

    Another context is another choice of cluster: the session does not apply there, and
    only the lab's labels vouch for a pod."""
    return session if session is not None and session.context == ctx.name else None


def _server(url: str | None) -> str:
    return (url or "").rstrip("/")


def _short(uid: str) -> str:
    return f"{uid[:8]}..." if len(uid) > 8 else uid or "?"


def check_pin(ctx: ResolvedContext, session: Session) -> None:
    """Refuse (exit 3) when this context no longer leads where `create` recorded: another
    API server behind the same context name, or another namespace (from -n, or an edited
    alias). Sends no request: an answer from elsewhere must never speak for the session."""
    if _server(ctx.server) != _server(session.server):
        raise SafetyError(
            f"the lab session was created on server {session.server or '?'} (context {session.context}, "
            f"namespace {session.namespace}), "
            f"but context {ctx.name} now points at server {ctx.server or '?'}",
            hint=f"Check that context's server in {ctx.kubeconfig.path_arg()}; if the lab pod on "
            f"{session.server or '?'} is gone for good, delete {session_path()}.",
        )
    if ctx.namespace != session.namespace:
        raise SafetyError(
            f"the lab session's pod {session.pod} is in namespace {session.namespace} (context {session.context}), "
            f"but this command would use namespace {ctx.namespace}",
            hint=f"Pass --namespace {session.namespace} (or fix the alias's namespace in config.yaml) to work with "
            "the lab session; "
            f"`nsightlab cleanup --namespace {session.namespace}` ends it.",
        )


def _label_problems(pod: dict[str, Any], owner: str) -> list[str]:
    labels = r.labels(pod)
    problems = []
    for key, want in ((MANAGED_BY, "nsightlab"), (OWNER, owner_label(owner))):
        have = labels.get(key)
        if have is None:
            problems.append(f"label {key} is missing")
        elif have != want:
            problems.append(f"label {key} is '{have}'")
    return problems


def check_lab_pod(pod: dict[str, Any], *, ctx: ResolvedContext, owner: str, session: Session | None) -> None:
    """Refuse (exit 3) to work in a pod that is not the lab pod: with a lab session, one
    whose context, server, namespace or uid differ from what `create` recorded; always, one
    without both lab labels (managed-by nsightlab, this owner). Every command that execs
    into or copies to or from the lab pod, or deletes it, comes through here first."""
    meta = pod.get("metadata") or {}
    name = str(meta.get("name") or "?")
    ns = str(meta.get("namespace") or ctx.namespace)
    if session is not None:
        check_pin(ctx, session)
        uid = str(meta.get("uid") or "")
        if ns != session.namespace or uid != session.uid:
            raise SafetyError(
                f"the lab session's pod {session.pod} has uid {_short(session.uid)}, but pod {name} in {ns} has "
                f"uid {_short(uid)}: "
                "it is not the pod nsightlab created",
                hint="Run `nsightlab status`.",
            )
    problems = _label_problems(pod, owner)
    if problems:
        raise SafetyError(
            f"pod {name} in {ns} is not a lab pod of {owner} ({', '.join(problems)}): nsightlab works only in "
            "the lab pods it creates",
            hint="Create yours with `nsightlab create`, or set lab.pod_name in config.yaml to a name of your own.",
        )


# ---------------------------------------------------------------------------- helpers


def next_steps(ctx: ResolvedContext) -> list[str]:
    return [
        "nsightlab shell                      # a shell in the pod (try nvidia-smi)",
        "nsightlab profile lesson1            # nsys: kernel table, TB/s and TFLOPS",
        "nsightlab sweep                      # bandwidth sweep: launch / cache / DRAM",
        "nsightlab cleanup                    # give the GPU back when done",
    ]


def follow_steps(ctx: ResolvedContext) -> list[str]:
    """How to follow a pod that was created without waiting for it."""
    steps = [
        ("nsightlab status", "phase, node, conditions"),
        ("nsightlab events", "what the scheduler and the kubelet say"),
        ("nsightlab logs -f", "the container's output, once it runs"),
        (create_command(ctx), "wait until it is Ready"),
    ]
    width = max(len(cmd) for cmd, _ in steps) + 2
    return [f"{cmd:<{width}}# {why}" for cmd, why in steps]


def cleanup_command(ctx: ResolvedContext) -> str:
    return f"nsightlab cleanup --context {ctx.alias or ctx.name} --namespace {ctx.namespace}"


def create_command(ctx: ResolvedContext) -> str:
    return f"nsightlab create {ctx.cli_args}"


def record_session(ctx: ResolvedContext, pod: dict[str, Any], lab: LabPod, owner: str) -> Session:
    session = Session(
        context=ctx.name,
        alias=ctx.alias,
        kubeconfig=ctx.kubeconfig.path_arg(),
        server=ctx.server or "",
        namespace=lab.namespace,
        pod=lab.pod,
        uid=lab.uid or "",
        node=lab.node,
        instance_type=lab.instance_type,
        gpu_product=lab.gpu_product,
        owner=owner,
        created=lab.created or datetime.now(timezone.utc),
        deadline=lab.deadline,
    )
    save_session(session)
    return session


# ---------------------------------------------------------------------------- create


def find_existing(kube: Kube, namespace: str, name: str, owner: str) -> dict[str, Any] | None:
    """This owner's lab pod, by name or by labels; a foreign pod with our name is an error."""
    pod = kube.get_pod(namespace, name)
    if pod is not None:
        if not is_ours(pod, owner):
            raise ClusterError(
                f"a pod named {name} already exists in namespace {namespace} and is not an nsightlab lab pod of "
                f"{owner}",
                hint="Set lab.pod_name in config.yaml to another name.",
            )
        return pod
    mine, _ = kube.list_pods(namespace, label_selector=selector(owner))
    live = [p for p in mine if not r.is_terminal(p) and not (p.get("metadata") or {}).get("deletionTimestamp")]
    return live[0] if live else None


def create(
    env: Env,
    kube: Kube,
    ctx: ResolvedContext,
    config: Config,
    manifest: dict[str, Any],
    *,
    timeout: float,
    wait: bool = True,
    recreate: bool = False,
    again: tuple[str, str] | None = None,
) -> LabPod:
    """Create (or reuse) this owner's lab pod and wait until it is Ready (with `wait`
    False: return the pod as it is).

    A lab pod of this owner is reused only when it is the one the config asks for
    (`k8s.labmatch.differences`); else this is exit 2 naming what differs, with
    `again` (the cleanup and create commands as typed, global options kept) in the ways
    out. With `recreate` it is deleted first, checked as cleanup checks it. A pod that
    could never be scheduled is exit 2 before anything is deleted or created
    (`labgpus.check_gpus`).

    The lab session is recorded as soon as the pod exists (and again once it is Ready),
    so that a wait cut short by Ctrl-C or the timeout leaves a pod that `nsightlab status`
    and `nsightlab cleanup` know."""
    with OnInterrupt("nothing was created") as progress:
        return _create(
            progress, env, kube, ctx, config, manifest, timeout=timeout, wait=wait, recreate=recreate, again=again
        )


def _create(
    progress: OnInterrupt,
    env: Env,
    kube: Kube,
    ctx: ResolvedContext,
    config: Config,
    manifest: dict[str, Any],
    *,
    timeout: float,
    wait: bool,
    recreate: bool,
    again: tuple[str, str] | None,
) -> LabPod:
    owner = config.owner()
    ns = ctx.namespace
    existing = find_existing(kube, ns, manifest["metadata"]["name"], owner)
    candidate = existing is not None and not recreate and not r.is_terminal(existing)
    diffs = differences(existing, manifest) if existing is not None and candidate else []
    reused = candidate and not diffs
    if not reused:  # a pod that could never be scheduled: said before any change, and before ways out
        check_gpus(env, kube, config, say_free=not diffs)
    if existing is not None and diffs:
        commands = again or (cleanup_command(ctx), create_command(ctx))
        raise _mismatch(ctx, existing, diffs, commands, manifest["metadata"]["name"])
    if not reused:
        if existing is not None:
            _replace(env, kube, ctx, existing, owner)
        name = manifest["metadata"]["name"]
        progress.state = (
            f"the lab pod {name} may have been created; `nsightlab status --context {ctx.alias or ctx.name} "
            f"--namespace {ns}` shows it, "
            f"`{cleanup_command(ctx)}` removes it"
        )
        pod = kube.create_pod(ns, manifest)
        env.note(f"created pod {name} in {ns}")
    else:
        assert existing is not None
        pod, name = existing, existing["metadata"]["name"]
        env.note(f"reusing your lab pod {name} ({r.pod_status(pod)})")
    uid = pod["metadata"]["uid"]
    early = lab_pod(pod, None, context=ctx.name, server=ctx.server, namespace=ns, reused=reused)
    _record(ctx, pod, early, owner)
    progress.state = (
        f"the lab pod {name} stays in place; `nsightlab status` shows it, `{cleanup_command(ctx)}` removes it"
    )
    if not wait and not r.pod_is_ready(pod):
        early.next_steps = follow_steps(ctx)
        return early
    if not r.pod_is_ready(pod):
        waiter = PodWaiter(
            kube, env, ns, name, uid, pod["metadata"].get("resourceVersion", ""), create_command=create_command(ctx)
        )
        try:
            pod = waiter.wait(timeout)
        except TimeoutError:
            raise not_ready(kube, waiter, timeout, cleanup=cleanup_command(ctx)) from None
        except KeyboardInterrupt:
            state = r.pod_status(waiter.pod or pod)
            raise Interrupted(
                f"interrupted while waiting: the lab pod {name} is still being created ({state}) and stays in place; "
                f"`nsightlab status` shows it, `{cleanup_command(ctx)}` removes it, `{create_command(ctx)}` "
                "waits again",
            ) from None
    node = lab_node(kube, pod, note=env.note)
    result = lab_pod(pod, node, context=ctx.name, server=ctx.server, namespace=ctx.namespace, reused=reused)
    _record(ctx, pod, result, owner)
    progress.state = f"the lab pod {name} is Ready and recorded; `nsightlab status` shows it"
    result.next_steps = next_steps(ctx)
    return result


def _record(ctx: ResolvedContext, pod: dict[str, Any], lab: LabPod, owner: str) -> None:
    try:
        record_session(ctx, pod, lab, owner)
    except OSError as e:  # NSIGHTLAB_HOME was checked first; this is it failing since
        raise UsageError(
            f"the lab pod {lab.pod} exists, but the lab session could not be saved to {session_path()} "
            f"({e.strerror or e})",
            hint="Fix NSIGHTLAB_HOME and run `nsightlab create` again to record it (the pod is reused), or delete it "
            f"with `{cleanup_command(ctx)}`.",
        ) from None


def _mismatch(
    ctx: ResolvedContext, pod: dict[str, Any], diffs: list[str], again: tuple[str, str], configured: str
) -> UsageError:
    """The lab pod there is not the configured one; the ways out name only commands that
    replace that very pod (plain cleanup deletes the session's pod, else the configured
    name)."""
    session = session_for(ctx, load_session())
    target = session.pod if session is not None and session.namespace == ctx.namespace else configured
    cleanup, create = again
    pair = f"`{cleanup}` then `{create}`" if target == pod["metadata"]["name"] else None
    return mismatch_error(pod, diffs, cleanup=pair, recreate=f"{create} --recreate")


def _replace(env: Env, kube: Kube, ctx: ResolvedContext, pod: dict[str, Any], owner: str) -> None:
    """Delete the lab pod a new one replaces: one that has ended, or (--recreate) one that
    is there; the latter as cleanup deletes it, labels and session checked first."""
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    if not r.is_terminal(pod):
        env.note(f"--recreate: deleting your lab pod {name} ({r.pod_status(pod)}) first")
        cleanup(env, kube, ctx, owner=owner, names=[name], all_mine=False)
        return
    env.note(f"your previous lab pod {name} has ended ({(pod.get('status') or {}).get('phase')}); replacing it")
    kube.delete_pod(ctx.namespace, name, uid=uid, grace_seconds=0)
    wait_gone(kube, ctx.namespace, name, uid, timeout=60)


def lab_node(
    kube: Kube,
    pod: dict[str, Any],
    *,
    note: Callable[[str], None] | None,
    consequence: str = "the node's GPU model is not shown",
) -> dict[str, Any] | None:
    """The node the pod runs on (its GPU model and instance type), when this account may
    read nodes; else None and one note (the instance type then comes from the pod's node
    selector, see k8s.labpod.lab_pod)."""
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        return None
    return optional(lambda: kube.get_node(node_name), consequence=consequence, note=note)


# ---------------------------------------------------------------------------- status / cleanup


def status(kube: Kube, ctx: ResolvedContext, name: str, *, note: Callable[[str], None] | None = None) -> StatusReport:
    """The lab pod's state. The lab session ends here only when its own server (the
    context is pinned: see check_pin) says its pod is gone: no pod of that name, or one
    with another uid."""
    pod = kube.get_pod(ctx.namespace, name)
    if pod is None:
        forget_session(ctx, [name])
        return StatusReport(
            context=ctx.name, namespace=ctx.namespace, pod=name, gone=True, lab=None, next_steps=[create_command(ctx)]
        )
    session = session_for(ctx, load_session())
    uid = (pod.get("metadata") or {}).get("uid")
    if session is not None and session.pod == name and uid != session.uid:
        forget_session(ctx, [name])
        gone = (
            f"the lab session's pod {name} (uid {session.uid}) is gone; pod {name} in {ctx.namespace} now has "
            f"uid {uid} "
            "and is not the pod nsightlab created"
        )
        return StatusReport(
            context=ctx.name,
            namespace=ctx.namespace,
            pod=name,
            gone=True,
            lab=None,
            note=gone,
            next_steps=[create_command(ctx)],
        )
    node = lab_node(kube, pod, note=note)
    lab = lab_pod(pod, node, context=ctx.name, server=ctx.server, namespace=ctx.namespace)
    if lab.scheduler is None and lab.phase == "Pending" and not lab.node:  # not said on the pod: its Events
        field = f"involvedObject.kind=Pod,involvedObject.name={name}"
        events = optional(lambda: kube.list_events(ctx.namespace, field_selector=field), consequence="", note=None)
        lab.scheduler = unscheduled_reason(pod, events)
    return StatusReport(context=ctx.name, namespace=ctx.namespace, pod=name, gone=False, lab=lab)


def cleanup(
    env: Env, kube: Kube, ctx: ResolvedContext, *, owner: str, names: list[str], all_mine: bool, wait: float = 120
) -> CleanupReport:
    """Delete this owner's lab pod(s); never a pod without both nsightlab labels, nor,
    with a lab session, its pod when the uid is not the one `create` recorded."""
    with OnInterrupt("nothing was deleted") as progress:
        return _cleanup(progress, env, kube, ctx, owner=owner, names=names, all_mine=all_mine, wait=wait)


def _cleanup(
    progress: OnInterrupt,
    env: Env,
    kube: Kube,
    ctx: ResolvedContext,
    *,
    owner: str,
    names: list[str],
    all_mine: bool,
    wait: float,
) -> CleanupReport:
    ns = ctx.namespace
    report = CleanupReport(
        context=ctx.name, namespace=ns, deleted=[], already_gone=[], skipped=[], owner=owner, all_mine=all_mine
    )
    targets: dict[str, dict[str, Any]] = {}
    if all_mine:
        mine, _ = kube.list_pods(ns, label_selector=selector(owner))
        targets.update({p["metadata"]["name"]: p for p in mine})
    for name in names:
        if name in targets:
            continue
        pod = kube.get_pod(ns, name)
        if pod is None:
            report.already_gone.append(name)
        else:
            targets[name] = pod
    session = session_for(ctx, load_session())
    if session is not None and session.pod in targets:
        check_lab_pod(targets[session.pod], ctx=ctx, owner=session.owner, session=session)  # before any delete
    pending: list[tuple[str, str]] = []
    for name, pod in sorted(targets.items()):
        if not is_ours(pod, owner):
            report.skipped.append(name)
            env.warn(f"not deleting pod {name}: it is not an nsightlab lab pod of {owner}")
            continue
        uid = pod["metadata"]["uid"]
        progress.state = (
            f"the deletion of {', '.join([*(n for n, _ in pending), name])} was asked for; it goes on by itself "
            "(`nsightlab status` shows when it is gone)"
        )
        if kube.delete_pod(ns, name, uid=uid):
            pending.append((name, uid))
        else:
            report.already_gone.append(name)
    with env.status(f"waiting for {len(pending)} pod(s) to go"):
        for name, uid in pending:
            if wait_gone(kube, ns, name, uid, timeout=wait):
                report.deleted.append(name)
            else:
                raise ClusterError(
                    f"pod {name} is still terminating after {int(wait)} s",
                    hint=f"It will go on its own; check with `nsightlab status {ctx.cli_args}`.",
                )
    forget_session(ctx, report.deleted, how="deleted")
    forget_session(ctx, report.already_gone, how="gone")
    return report


def forget_session(ctx: ResolvedContext, pods: list[str], *, how: Literal["deleted", "gone"] = "gone") -> None:
    """End the lab session if it is about one of these pods in this context, on the server
    and in the namespace it was recorded for (nothing else may end it): the pod was
    deleted (by cleanup) or found gone. What is left is the record of its end, so that
    the next command can say so (see config.end_session)."""

    session = session_for(ctx, load_session())
    if (
        session
        and _server(session.server) == _server(ctx.server)
        and session.namespace == ctx.namespace
        and session.pod in pods
    ):
        end_session(session, how=how)
