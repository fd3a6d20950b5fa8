"""From the options a cluster command was given to a client it may use: the context
resolved through the safety guard (never the kubeconfig's current-context), the lab
session when the command acts on the lab pod, and the client for that context."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsightlab.cluster.kube import Kube
from nsightlab.cluster.kubeconfig import load_kubeconfig
from nsightlab.cluster.lab_lifecycle import check_lab_pod, check_pin, forget_session, session_for
from nsightlab.cluster.safety import Intent, ResolvedContext, resolve_context
from nsightlab.env import Env
from nsightlab.errors import PodNotReadyError
from nsightlab.k8s import pods as r
from nsightlab.userconfig import Config, Session, load_config, load_ended_session, load_session


@dataclass
class Cluster:
    """What a cluster command works with: config, checked context, client."""

    config: Config
    ctx: ResolvedContext
    kube: Kube
    session: Session | None
    pod: dict[str, Any] | None = None  # the lab pod, once lab_pod_name has checked it

    @property
    def lab_session(self) -> Session | None:
        """The lab session when it is about this context, else None."""
        return session_for(self.ctx, self.session)


@contextmanager
def connect(
    context: str | None,
    kubeconfig: Path | None,
    *,
    config_path: Path | None,
    intent: Intent,
    namespace: str | None = None,
    use_session: bool = False,
    action: str = "change the cluster",
    allowed: Callable[[], None] | None = None,
    pin_session: bool = True,
) -> Iterator[Cluster]:
    """Resolve the context through the safety guard, then build the client for it
    (`allowed` runs in between: local work that may start once the guard said yes).

    With `use_session`, a lab session about the resolved context pins it: a context that
    now leads to another API server or namespace is refused here, before any request
    (`pin_session=False` leaves that to the caller: doctor reports it as a check)."""
    cfg = load_config(config_path).config
    session = load_session() if use_session else None
    ended = load_ended_session() if use_session and session is None else None
    kc_path = kubeconfig
    if kc_path is None and context is None and session is not None and session.kubeconfig:
        kc_path = Path(session.kubeconfig) if os.pathsep not in session.kubeconfig else None
    kc = load_kubeconfig(kc_path)
    ctx = resolve_context(
        context,
        config=cfg,
        kubeconfig=kc,
        intent=intent,
        session=session,
        namespace=namespace,
        action=action,
        ended=ended,
    )
    pinned = session_for(ctx, session)
    if pinned is not None and pin_session:
        check_pin(ctx, pinned)
    if allowed is not None:
        allowed()
    kube = Kube(ctx)
    try:
        yield Cluster(config=cfg, ctx=ctx, kube=kube, session=session)
    finally:
        kube.close()


def lab_pod_name(c: Cluster, *, require_ready: bool = True) -> str:
    """The lab pod a command acts on: the session's, else the configured name.

    With `require_ready` (every command that execs into it or copies to or from it) the
    pod is read and checked before anything else is sent: its labels always, and with a
    lab session also its uid, namespace, context and server against what `create`
    recorded (refused, exit 3, on any difference); then it must be Ready. The checked pod
    is kept in `c.pod`."""
    s = c.lab_session
    name = s.pod if s is not None else c.config.pod_name()
    if require_ready:
        pod = c.kube.get_pod(c.ctx.namespace, name)
        if pod is None:
            forget_session(c.ctx, [name])
            raise PodNotReadyError(
                f"no lab pod {name} in namespace {c.ctx.namespace} (context {c.ctx.name})",
                hint=f"Create one with `nsightlab create {c.ctx.cli_args}`.",
            )
        check_lab_pod(pod, ctx=c.ctx, owner=s.owner if s is not None else c.config.owner(), session=s)
        if not r.pod_is_ready(pod):
            raise PodNotReadyError(
                f"lab pod {name} is {r.pod_status(pod)}, not Ready",
                hint=f"Wait for it with `nsightlab create {c.ctx.cli_args}`, or see `nsightlab events "
                f"{c.ctx.cli_args}`.",
            )
        c.pod = pod
    return name


def note_session(env: Env, c: Cluster) -> None:
    """Say so when the context came from the lab session rather than --context."""
    if c.ctx.from_session:
        env.note(f"using the lab session: context {c.ctx.label}, namespace {c.ctx.namespace}")
