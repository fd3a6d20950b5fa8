"""The lab pod: build its manifest, create it and wait until Ready, status, cleanup.

Every pod nsightlab creates carries `app.kubernetes.io/managed-by: nsightlab` and
`nsightlab/owner: <owner>`; cleanup touches nothing without both.
"""

from __future__ import annotations

import copy
import queue
import re
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nsightlab import userfiles
from nsightlab.cluster.answers import Forbidden, Gone
from nsightlab.cluster.labgpus import check_gpus, free_gpus
from nsightlab.cluster.outage import Outage
from nsightlab.cluster.permissions import optional, skipped_note
from nsightlab.errors import (
    ClusterError,
    Interrupted,
    OnInterrupt,
    PodNotReadyError,
    SafetyError,
    UsageError,
    validation_message,
)
from nsightlab.k8s import pods as r
from nsightlab.k8s.labmatch import differences, mismatch_error
from nsightlab.k8s.labpod import CleanupReport, LabPod, StatusReport, lab_pod, unscheduled_reason
from nsightlab.models import Model
from nsightlab.userconfig import Config, Session, end_session, load_session, save_session, session_path

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube
    from nsightlab.cluster.safety import ResolvedContext
    from nsightlab.env import Env

MANAGED_BY = "app.kubernetes.io/managed-by"
OWNER = "nsightlab/owner"
PLACEHOLDER = "CHANGE-ME"
# Waiting reasons that will not fix themselves: stop waiting at once.
FATAL_WAITING = {
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
}


def owner_label(owner: str) -> str:
    """A valid label value for the owner (<= 63 chars of [A-Za-z0-9_.-])."""
    value = re.sub(r"[^A-Za-z0-9_.-]", "-", owner).strip("-_.")[:63].strip("-_.")
    return value or "unknown"


def selector(owner: str) -> str:
    return f"{MANAGED_BY}=nsightlab,{OWNER}={owner_label(owner)}"


def is_ours(pod: dict[str, Any], owner: str) -> bool:
    labels = r.labels(pod)
    return labels.get(MANAGED_BY) == "nsightlab" and labels.get(OWNER) == owner_label(owner)


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


# ---------------------------------------------------------------------------- manifest


class _K8s(Model):
    model_config = ConfigDict(extra="allow")


class _Container(_K8s):
    name: str
    image: str | None = None


class _Spec(_K8s):
    containers: list[_Container] = Field(min_length=1)


class _Meta(_K8s):
    name: str | None = None


class PodTemplate(_K8s):
    """The minimum a pod template must be; everything else is passed through."""

    apiVersion: str
    kind: str
    metadata: _Meta = Field(default_factory=_Meta)
    spec: _Spec


def load_template(path: Path) -> dict[str, Any]:
    """The lab pod template (`manifests/pod.yaml` or `--manifest FILE`), checked."""
    return load_manifest(path, PodTemplate, api_version="v1", kind="Pod", what="pod template")


def load_manifest(path: Path, model: type[BaseModel], *, api_version: str, kind: str, what: str) -> dict[str, Any]:
    """A YAML manifest template, checked against the minimum `model` asks of it and its
    apiVersion/kind; everything else is passed through as written. Every problem is one
    usage error naming the file (and the line, for YAML)."""
    text = userfiles.read_text(path, what=what, error=UsageError, limit=userfiles.MANIFEST_MAX_BYTES)
    userfiles.check_yaml_aliases(text, path=path, what=what, error=UsageError, hint="Write the repeated values out.")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise UsageError(f"{where}: not valid YAML") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a {what} must be a mapping")
    try:
        model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise UsageError(f"{path}: bad {what} at '{key}': {validation_message(err)}") from None
    if data.get("apiVersion") != api_version or data.get("kind") != kind:
        raise UsageError(
            f"{path}: the template must be apiVersion {api_version}, kind {kind} (got "
            f"{data.get('apiVersion')}/{data.get('kind')})"
        )
    return data


def check_lab_values(config: Config, *, needs: str) -> None:
    """lab.image set, and no placeholder left in lab.node_selector: what every manifest made
    from the lab's settings (the lab pod, a fleet's Jobs) needs; `needs` says what the
    image must have."""
    lab = config.lab
    if not lab.image or PLACEHOLDER in lab.image:
        raise UsageError(
            "lab.image is not set in config.yaml",
            hint=f"Set it (`nsightlab config` shows the file) to the image with {needs}: the serving sidecar's image, "
            "e.g. registry.example.com/triton-vllm-container:1.0-1.",
        )
    for key, value in lab.node_selector.items():
        if PLACEHOLDER in key or PLACEHOLDER in value:
            raise UsageError(
                f"lab.node_selector still holds a placeholder ({key}: {value})",
                hint="Fill it in config.yaml or remove it.",
            )


def build_manifest(
    template: dict[str, Any], config: Config, *, namespace: str, profiling_caps: bool = False
) -> dict[str, Any]:
    """Fill the template from the config; pure."""
    lab = config.lab
    check_lab_values(config, needs="nsys, ncu and PyTorch")
    m = copy.deepcopy(template)
    meta = m.setdefault("metadata", {})
    meta["name"] = config.pod_name()
    meta["namespace"] = namespace
    labels = dict(meta.get("labels") or {})
    labels.pop("owner", None)
    labels.update({MANAGED_BY: "nsightlab", OWNER: owner_label(config.owner()), "app.kubernetes.io/name": "nsight-lab"})
    meta["labels"] = labels
    spec = m["spec"]
    spec["restartPolicy"] = "Never"
    spec["activeDeadlineSeconds"] = lab.deadline_seconds
    selector_labels = dict(spec.get("nodeSelector") or {})
    selector_labels["node.kubernetes.io/instance-type"] = lab.instance_type
    selector_labels.update(lab.node_selector)
    spec["nodeSelector"] = selector_labels
    tolerations = list(spec.get("tolerations") or [])
    if not any(t.get("key") == r.GPU for t in tolerations):
        tolerations.append({"key": r.GPU, "operator": "Exists"})
    spec["tolerations"] = tolerations
    main = spec["containers"][0]
    main["image"] = lab.image
    amounts = {"cpu": lab.cpu, "memory": lab.memory}
    if lab.gpus:
        amounts[r.GPU] = str(lab.gpus)
    main["resources"] = {"limits": dict(amounts), "requests": dict(amounts)}
    sc = main.setdefault("securityContext", {})
    sc.setdefault("allowPrivilegeEscalation", False)
    caps = sc.setdefault("capabilities", {})
    caps.setdefault("drop", ["ALL"])
    sc.setdefault("seccompProfile", {"type": "RuntimeDefault"})
    if profiling_caps:
        added = list(caps.get("add") or [])
        if "SYS_ADMIN" not in added:
            added.append("SYS_ADMIN")
        caps["add"] = added
    return m


def manifest_yaml(manifest: dict[str, Any]) -> str:
    return yaml.safe_dump(manifest, sort_keys=False, default_flow_style=False)


# ---------------------------------------------------------------------------- results


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


class _Waiter:
    """Follows one pod with a watch (resuming after drops) and its events, until Ready."""

    def __init__(
        self,
        kube: Kube,
        env: Env,
        namespace: str,
        name: str,
        uid: str,
        resource_version: str,
        *,
        create_command: str = "nsightlab create",
    ) -> None:
        self.kube = kube
        self.create_command = create_command
        self.env = env
        self.namespace = namespace
        self.name = name
        self.uid = uid
        self.rv = resource_version
        self.pod: dict[str, Any] | None = None
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen_events: list[dict[str, Any]] = []
        self._stop = threading.Event()

    def _event_thread(self) -> None:
        field = f"involvedObject.name={self.name},involvedObject.kind=Pod"
        rv: str | None = None
        while not self._stop.is_set():
            try:
                for etype, ev in self.kube.watch_events(
                    self.namespace, field_selector=field, resource_version=rv, timeout_seconds=30
                ):
                    rv = (ev.get("metadata") or {}).get("resourceVersion") or rv
                    if etype in ("ADDED", "MODIFIED"):
                        self._event(ev)
                    if self._stop.is_set():
                        return
            except Forbidden:
                # the lab needs `list` on events, not `watch`: ask every second instead
                self._poll_events(field)
                return
            except ClusterError:
                if self._stop.wait(1.0):
                    return
                rv = None

    def _event(self, ev: dict[str, Any]) -> None:
        if (ev.get("involvedObject") or {}).get("uid") in (None, "", self.uid):
            self.events.put(ev)

    def _poll_events(self, field: str) -> None:
        """The pod's events by listing them, until the wait ends (events are context:
        a list that is refused too ends this thread quietly)."""
        while not self._stop.is_set():
            try:
                for ev in self.kube.list_events(self.namespace, field_selector=field):
                    self._event(ev)
            except Forbidden:
                return
            except ClusterError:
                pass
            if self._stop.wait(1.0):
                return

    def wait(self, timeout: float) -> dict[str, Any]:
        """The pod once Ready. The watch is resumed where it stopped; through an API
        outage it is tried again with backoff until `timeout` (cluster/outage.py)."""
        deadline = time.monotonic() + timeout
        threading.Thread(target=self._event_thread, daemon=True, name="nsightlab-events").start()
        outage = Outage(self.env.note, f"pod {self.name} to be Ready", deadline, limit=f"--timeout {timeout:g}")
        relist = False
        try:
            with self.env.status(f"waiting for pod {self.name}") as spinner:
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError
                    try:
                        done = self._relist() if relist else None
                        relist = False
                        if done is None:
                            done = self._watch(left, deadline, spinner, outage)
                        outage.answered()
                        if done is not None:
                            return done
                    except Gone:
                        relist = True
                    except ClusterError as e:
                        outage.failed(e)  # waits before the next try; raises when waiting will not help
                    self._drain_events()
        finally:
            self._stop.set()

    def _watch(self, left: float, deadline: float, spinner: Any, outage: Outage) -> dict[str, Any] | None:
        """One watch of the pod, from the last resourceVersion: the pod once Ready, else
        None when the watch ends first."""
        for etype, obj in self.kube.watch_pods(
            self.namespace,
            field_selector=f"metadata.name={self.name}",
            resource_version=self.rv,
            timeout_seconds=max(1, min(60, int(left) + 1)),
        ):
            outage.answered()
            self.rv = (obj.get("metadata") or {}).get("resourceVersion") or self.rv
            if etype == "BOOKMARK" or (obj.get("metadata") or {}).get("uid") != self.uid:
                continue
            if etype == "DELETED":
                raise PodNotReadyError(
                    f"pod {self.name} was deleted while waiting for it",
                    hint=f"Create it again with `{self.create_command}`.",
                )
            self.pod = obj
            self._drain_events()
            spinner.update(self._describe())
            done = self._verdict()
            if done is not None:
                return done
            if time.monotonic() >= deadline:
                raise TimeoutError
        return None

    def _relist(self) -> dict[str, Any] | None:
        """After a 410: the pod as it is now, and the resourceVersion to watch from."""
        fresh = self.kube.get_pod(self.namespace, self.name)
        if fresh is None or (fresh.get("metadata") or {}).get("uid") != self.uid:
            raise PodNotReadyError(
                f"pod {self.name} was deleted while waiting for it",
                hint=f"Create it again with `{self.create_command}`.",
            )
        self.pod = fresh
        self.rv = fresh["metadata"].get("resourceVersion", "")
        return self._verdict()

    def _drain_events(self) -> None:
        while True:
            try:
                ev = self.events.get_nowait()
            except queue.Empty:
                return
            key = (ev.get("reason"), ev.get("message"))
            if any((e.get("reason"), e.get("message")) == key for e in self.seen_events):
                continue
            self.seen_events.append(ev)
            kind = ev.get("type", "Normal")
            self.env.note(
                f"  event {kind}/{ev.get('reason')}: {ev.get('message', '')}",
                style="yellow" if kind == "Warning" else None,
            )

    def _describe(self) -> str:
        """One short line for the spinner: the status, and the conditions not yet true."""
        pod = self.pod or {}
        waiting = [
            str(c.get("type")) for c in (pod.get("status") or {}).get("conditions") or [] if c.get("status") != "True"
        ]
        node = (pod.get("spec") or {}).get("nodeName")
        text = f"pod {self.name}: {r.pod_status(pod)}"
        if node:
            text += f" on {node}"
        if waiting:
            text += f" (waiting for {', '.join(waiting)})"
        return text

    def _verdict(self) -> dict[str, Any] | None:
        pod = self.pod or {}
        phase = (pod.get("status") or {}).get("phase")
        if r.pod_is_ready(pod):
            return pod
        if phase in ("Failed", "Succeeded"):
            reason = (pod.get("status") or {}).get("reason") or r.pod_status(pod)
            message = (pod.get("status") or {}).get("message") or ""
            raise PodNotReadyError(f"pod {self.name} ended ({phase}: {reason}) while waiting for it. {message}".strip())
        for cs in ((pod.get("status") or {}).get("containerStatuses") or []) + (
            (pod.get("status") or {}).get("initContainerStatuses") or []
        ):
            waiting = (cs.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in FATAL_WAITING:
                raise PodNotReadyError(
                    f"pod {self.name}: container {cs.get('name')} is in {waiting['reason']}: "
                    f"{waiting.get('message', '').strip()}".rstrip(": "),
                    hint="Check lab.image in config.yaml (name, tag, registry access)."
                    if "Image" in waiting["reason"]
                    else "The container keeps failing; check the template's command and the image.",
                )
        return None


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
        waiter = _Waiter(
            kube, env, ns, name, uid, pod["metadata"].get("resourceVersion", ""), create_command=create_command(ctx)
        )
        try:
            pod = waiter.wait(timeout)
        except TimeoutError:
            raise _not_ready(kube, ctx, config, waiter, timeout) from None
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
    _wait_gone(kube, ctx.namespace, name, uid, timeout=60)


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


def _not_ready(kube: Kube, ctx: ResolvedContext, config: Config, waiter: _Waiter, timeout: float) -> PodNotReadyError:
    pod = waiter.pod or kube.get_pod(ctx.namespace, waiter.name) or {}
    sched = r.condition(pod, "PodScheduled")
    parts = [f"pod {waiter.name} is not Ready after {int(timeout)} s ({r.pod_status(pod)})"]
    if sched and sched.get("status") == "False":
        parts.append(f"scheduler: {sched.get('message') or sched.get('reason')}")
        try:
            free = free_gpus(kube)
        except Forbidden as e:
            free = []
            parts.append(skipped_note(e.what, "free GPUs per type not shown"))
        except ClusterError:
            free = []
        if free:
            parts.append("free GPUs: " + ", ".join(f"{g.instance_type} {g.gpu_free}/{g.gpu_allocatable}" for g in free))
    failed = [e for e in waiter.seen_events if e.get("reason") == "FailedScheduling"]
    if failed and not sched:
        parts.append(f"FailedScheduling: {failed[-1].get('message')}")
    return PodNotReadyError(
        "; ".join(parts), hint=f"The pod is left in place; delete it with `{cleanup_command(ctx)}`."
    )


def _wait_gone(kube: Kube, namespace: str, name: str, uid: str | None, *, timeout: float) -> bool:
    """Watch until the pod (with that uid) is gone; True if it went."""
    end = time.monotonic() + timeout
    rv: str | None = None
    while time.monotonic() < end:
        pod = kube.get_pod(namespace, name)
        if pod is None or (uid and pod["metadata"].get("uid") != uid):
            return True
        rv = pod["metadata"].get("resourceVersion")
        try:
            for etype, obj in kube.watch_pods(
                namespace,
                field_selector=f"metadata.name={name}",
                resource_version=rv,
                timeout_seconds=max(1, int(end - time.monotonic())),
            ):
                if etype == "DELETED" and (not uid or obj["metadata"].get("uid") == uid):
                    return True
        except ClusterError:
            time.sleep(0.2)
    return False


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
            if _wait_gone(kube, ns, name, uid, timeout=wait):
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
