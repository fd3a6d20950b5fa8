"""KubeSim: the emulated API server on 127.0.0.1, in a thread with its own event loop."""

from __future__ import annotations

import asyncio
import base64
import builtins
import concurrent.futures
import contextlib
import copy
import os
import shutil
import socket
import ssl
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

import yaml
from aiohttp import web
from aiohttp.web_request import BaseRequest

from . import _defaults, _faults, _rbac
from ._api import DenyRule, Recorded, SimEmulator
from ._containers import ContainerRuntime
from ._exec import DropRule, ExecServer
from ._gc import GarbageCollector
from ._jobs import JobController, controller_of
from ._kubelet import Kubelet
from ._resources import ResourceType, lookup
from ._sandbox import SANDBOX_ROOTS, Sandbox

Obj = dict[str, Any]
T = TypeVar("T")

EXEC_PLUGIN = Path(__file__).with_name("exec_credential.py")


class Faults(_faults.ResponseFaults):
    """Server-side faults a test can trigger (broken HTTP answers: see ``_faults``)."""

    def __init__(self, sim: KubeSim):
        super().__init__(sim)

    def close_watches(self) -> int:
        """Close every open watch stream now (the client sees a clean end of stream)."""
        return self._sim._call(self._sim.emulator.store.close_watches)

    def expire_continue_tokens(self) -> None:
        """Forget list snapshots: the next ``continue`` gets 410 Expired."""
        self._sim._call(self._sim.emulator.store.expire_snapshots)

    def drop_exec(self) -> int:
        """Drop every open exec connection now (no status, no close frame); kill the commands."""
        return self._sim._call(self._sim.exec_server.drop_all)

    def drop_exec_after(self, after_bytes: int, *, nth: int = 1, direction: str = "out") -> None:
        """Make the ``nth`` exec from now drop its socket after ``after_bytes`` of output
        (``direction="out"``: stdout and stderr sent) or of input (``"in"``: stdin received)."""
        if direction not in ("out", "in"):
            raise ValueError("direction must be 'out' or 'in'")
        rule = DropRule(after=after_bytes, nth=nth, direction=direction)
        self._sim._call(self._sim.exec_server.drop_rules.append, rule)

    def compact(self) -> int:
        """Drop the watch history: resuming from any older resourceVersion gets 410 Expired."""

        def compact() -> int:
            store = self._sim.emulator.store
            store.log.clear()
            store.log_floor = store.rv
            return store.rv

        return self._sim._call(compact)


class KubeSim:
    """A real HTTP(S) Kubernetes API server on 127.0.0.1 for tests.

    ``token=None`` serves without authentication. ``tls=True`` serves HTTPS with a fresh
    self-signed CA (``ca_file``). Objects persist across ``stop()``/``start()``.
    """

    def __init__(
        self,
        tls: bool = False,
        token: str | None = "sim-token",
        *,
        user: str = "sim-user",
        scheduler: bool = True,
        kubelet_delay: float = 0.2,
        version: str = "v1.31.4",
        port: int = 0,
        exec_token: str | None = None,
        rbac: bool = False,
    ) -> None:
        self.tls = tls
        self.token = token
        self.user = user
        self.scheduler_enabled = scheduler
        self.kubelet_delay = kubelet_delay
        self.version = version
        self.exec_token = exec_token or "k8s-aws-v1." + base64.urlsafe_b64encode(
            b"https://sts.us-east-1.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15"
            b"&X-Amz-Expires=60&X-Amz-Signature=kubesim"
        ).decode().rstrip("=")
        tokens = {self.exec_token: "sim-exec-user"}
        if token is not None:
            tokens[token] = user
        self.emulator = SimEmulator(
            git_version=version,
            tokens=tokens,
            require_auth=token is not None,
            pod_deletion_delay=kubelet_delay,
        )
        self.faults = Faults(self)
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.ServerRunner | None = None
        if rbac:  # from the start, as a cluster comes up with its bootstrap policy
            self.enable_rbac()
        self._tmp = Path(tempfile.mkdtemp(prefix="kubesim-"))
        self._ca_file: Path | None = None
        self._ca: Any = None
        self._ssl: ssl.SSLContext | None = None
        self.exec_log = self._tmp / "exec-plugin.log"
        if tls:
            self._make_tls()
        self._on_start: list[Callable[[], None]] = []
        self._on_stop: list[Callable[[], None]] = []
        self.sandbox_roots: tuple[str, ...] = SANDBOX_ROOTS
        self._sandboxes: dict[tuple[str, str], Sandbox] = {}
        self.exec_server = ExecServer(self.emulator, self._sandbox)
        self.emulator.exec_handler = self.exec_server
        self.emulator.store.listeners.append(self._on_store_event)
        self.kubelet: Kubelet | None = None
        # The controllers (Jobs, garbage collection) run with the scheduler and kubelet.
        self.runtime = ContainerRuntime(self.emulator, self._sandbox)
        self.jobs: JobController | None = None
        self.garbage_collector: GarbageCollector | None = None
        if scheduler:
            self.kubelet = Kubelet(
                self.emulator,
                delay=kubelet_delay,
                record_event=lambda obj, reason, message, type="Normal", source="kubelet", host=None, field_path=None: (
                    record_event(self.emulator, obj, reason, message, type, source, host, field_path)
                ),
                kill_pod=self._kill_pod,
                runtime=self.runtime,
            )
            self.kubelet.attach()
            self.jobs = JobController(self.emulator, delay=kubelet_delay, record_event=self.kubelet.record_event)
            self.jobs.attach()
            self.garbage_collector = GarbageCollector(self.emulator)
            self.garbage_collector.attach()
            self._on_start.append(self.jobs.resync)

    # ---- lifecycle --------------------------------------------------------------------------
    def _make_tls(self) -> None:
        import trustme

        ca = trustme.CA(organization_name="kubesim")
        cert = ca.issue_cert("127.0.0.1", "localhost", "kubernetes.default.svc")
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(ctx)
        # client certificates signed by the same CA authenticate as their CommonName, as
        # with the real API server's --client-ca-file; a client may also send none
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ca.configure_trust(ctx)
        self._ca = ca
        self._ssl = ctx
        self._ca_file = self._tmp / "ca.crt"
        ca.cert_pem.write_to_path(str(self._ca_file))

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> KubeSim:
        if self.running:
            return self
        loop = asyncio.new_event_loop()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._astart())
            except BaseException as e:  # reported to start()
                ready.set_exception(e)
                loop.close()
                return
            ready.set_result(None)
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name=f"kubesim-{id(self):x}", daemon=True)
        self._thread.start()
        try:
            ready.result(timeout=30)
        except BaseException:
            self._thread.join(5)
            self._thread = None
            self._loop = None
            raise
        for hook in self._on_start:
            self._call(hook)
        return self

    async def _astart(self) -> None:
        handler = self.emulator
        handler.loop = asyncio.get_running_loop()
        # kmock's stream feeder queue binds to the loop that first uses it: renew it per start.
        handler._stream_queue = asyncio.Queue()
        await handler.__aenter__()
        loop = asyncio.get_running_loop()

        def make_request(message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> BaseRequest:
            return BaseRequest(message, payload, protocol, writer, task, loop, client_max_size=16 * 1024 * 1024)

        server = web.Server(handler, request_factory=make_request, handler_cancellation=True)
        runner = web.ServerRunner(server, shutdown_timeout=1.0)
        await runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", self._port))
        except OSError:
            if not self._port:
                raise
            sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        site = web.SockSite(runner, sock, ssl_context=self._ssl)
        await site.start()
        self._runner = runner
        handler.server_address = f"127.0.0.1:{self._port}"

    def stop(self) -> None:
        if not self.running:
            return
        for hook in self._on_stop:
            with contextlib.suppress(Exception):
                self._call(hook)
        loop = self._loop
        assert loop is not None and self._thread is not None
        asyncio.run_coroutine_threadsafe(self._astop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=30)
        self._thread = None
        self._loop = None

    async def _astop(self) -> None:
        handler = self.emulator
        self.exec_server.drop_all()
        if self.kubelet is not None:
            self.kubelet.cancel_all()
        await self.runtime.stop()
        handler.store.close_watches()
        handler.cancel_timers()
        handler.wake_log_followers()
        await asyncio.sleep(0)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await handler.__aexit__(None, None, None)
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def close(self) -> None:
        """Stop and remove the temporary files (CA, sandboxes, plugin log)."""
        self.stop()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> KubeSim:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the server loop (store changes must happen there) and wait for it."""
        loop = self._loop
        if loop is None or not self.running or threading.current_thread() is self._thread:
            return fn(*args, **kwargs)

        async def run() -> T:
            return fn(*args, **kwargs)

        return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout=60)

    # ---- addresses ----------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("KubeSim is not started")
        return self._port

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> str | None:
        return str(self._ca_file) if self._ca_file else None

    @property
    def workdir(self) -> Path:
        """A temporary folder owned by this server (removed by ``close()``)."""
        return self._tmp

    # ---- kubeconfig ----------------------------------------------------------------------------
    def write_kubeconfig(
        self,
        path: str | os.PathLike[str],
        contexts: dict[str, dict[str, Any]],
        current: str | None = None,
        auth: Literal["token", "exec", "cert", "none"] = "token",
        exec_command: list[str] | None = None,
    ) -> Path:
        """Write a kubeconfig whose contexts all point at this server.

        ``contexts`` maps a context name to options: ``namespace``, and optionally ``token``
        and ``user``: a per-context bearer token, registered with the server for that user
        name (so ``sim.requests`` tell which context a request came from), and ``groups``
        for that user (see :meth:`add_user`). ``auth="exec"``
        makes the user run an exec credential plugin (by default ``exec_credential.py``,
        printing the context's token or the server's exec token, logging each run to
        ``exec_log``). ``current`` is the kubeconfig's current-context (None: unset).
        """
        clusters = []
        users = []
        ctxs = []
        for name, opts in contexts.items():
            cluster: Obj = {"server": self.url}
            if self._ca_file is not None:
                cluster["certificate-authority"] = str(self._ca_file)
            clusters.append({"name": name, "cluster": cluster})
            user_name = f"{name}-user"
            user: Obj
            if opts.get("token"):
                self.add_token(str(opts["token"]), str(opts.get("user", user_name)))
            if opts.get("groups"):
                self.set_groups(str(opts.get("user", user_name)), opts["groups"])
            if auth == "token":
                token = opts.get("token", self.token or "sim-token")
                user = {"token": token}
            elif auth == "exec":
                cmd: builtins.list[str] = exec_command or [
                    sys.executable,
                    str(EXEC_PLUGIN),
                    "--token",
                    str(opts.get("token", self.exec_token)),
                    "--log",
                    str(self.exec_log),
                    "--cluster-name",
                    name,
                ]
                user = {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": cmd[0],
                        "args": list(cmd[1:]),
                        "env": None,
                        "interactiveMode": "Never",
                        "provideClusterInfo": False,
                    }
                }
            elif auth == "cert":  # inline client certificate and key, CN = the user name
                import base64

                pem, key = self.client_cert(str(opts.get("user", user_name)))
                user = {
                    "client-certificate-data": base64.b64encode(pem).decode(),
                    "client-key-data": base64.b64encode(key).decode(),
                }
            elif auth == "none":
                user = {}
            else:
                raise ValueError(f"unknown auth {auth!r}")
            users.append({"name": user_name, "user": user})
            ctx: Obj = {"cluster": name, "user": user_name}
            if opts.get("namespace"):
                ctx["namespace"] = opts["namespace"]
            ctxs.append({"name": name, "context": ctx})
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "preferences": {},
            "clusters": clusters,
            "users": users,
            "contexts": ctxs,
            "current-context": current or "",
        }
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(yaml.safe_dump(doc, sort_keys=False))
        return out

    def client_cert(self, user: str) -> tuple[bytes, bytes]:
        """A client certificate (PEM) and its key, signed by this server's CA, that
        authenticates as ``user`` (its CommonName). Only with ``tls=True``."""
        if self._ca is None:
            raise RuntimeError("client certificates need KubeSim(tls=True)")
        leaf = self._ca.issue_cert(f"{user}.users.kubesim", common_name=user)
        return leaf.cert_chain_pems[0].bytes(), leaf.private_key_pem.bytes()

    def api_client(self, token: str | None = None) -> Any:
        """A ``kubernetes.client.ApiClient`` for this server (the server's token by default).

        Each call builds a new client: give exec (``kubernetes.stream``) its own.
        """
        from kubernetes import client

        cfg = client.Configuration()
        cfg.host = self.url
        if self._ca_file is not None:
            cfg.ssl_ca_cert = str(self._ca_file)
        bearer = token if token is not None else self.token
        if bearer:
            cfg.api_key = {"authorization": f"Bearer {bearer}"}
        return client.ApiClient(cfg)

    # ---- sandboxes (exec) -------------------------------------------------------------------------
    def _sandbox(self, namespace: str, pod: str) -> Sandbox:
        key = (namespace, pod)
        box = self._sandboxes.get(key)
        if box is None:
            box = Sandbox(self._tmp / "pods" / namespace / pod, pod, self.sandbox_roots)
            self._sandboxes[key] = box
        else:
            box.ensure()
        return box

    def sandbox(self, namespace: str, pod: str) -> Path:
        """The folder standing for the pod's ``/`` (created if needed); see ``_sandbox``."""
        return self._call(self._sandbox, namespace, pod).path

    def put_tool(self, namespace: str, pod: str, name: str, script_text: str | bytes) -> Path:
        """Install an executable ``name`` in the pod's ``bin/`` (first on its PATH)."""
        return self._call(lambda: self._sandbox(namespace, pod).put_tool(name, script_text))

    def pod_path(self, namespace: str, pod: str, path: str) -> Path:
        """Where a path inside the pod (``/tmp/lesson1.py``) lives on this machine."""
        return self._call(lambda: self._sandbox(namespace, pod).host_path(path))

    @property
    def exec_count(self) -> int:
        """How many exec connections were upgraded so far."""
        return self.exec_server.count

    def _kill_pod(self, namespace: str, pod: str) -> None:
        """Stop every process of a pod: exec sessions and containers."""
        self.exec_server.kill_pod(namespace, pod)
        self.runtime.kill_pod(namespace, pod)

    def _on_store_event(self, event: Any) -> None:
        if event.type == "DELETED" and event.rt.plural == "pods":
            meta = event.new["metadata"]
            key = (meta.get("namespace", ""), meta["name"])
            self._kill_pod(*key)
            box = self._sandboxes.pop(key, None)
            if box is not None:
                box.remove()

    # ---- objects --------------------------------------------------------------------------------
    @property
    def objects(self) -> Any:
        """kmock's object store: ``sim.objects['v1/pods', 'serving', 'x']`` (with history)."""
        return self.emulator.objects

    def load(self, objects: Iterable[Obj]) -> int:
        """Seed many objects fast (no watch events; older resourceVersions become too old)."""
        objs = list(objects)
        return self._call(self.emulator.seed, objs)

    def put(self, obj: Obj) -> Obj:
        """Create or replace an object as given (a watch sees ADDED or MODIFIED)."""
        return self._call(self.emulator.put_object, obj)

    def get(self, kind_or_resource: str, namespace: str | None, name: str) -> Obj | None:
        """A copy of the stored object, or None."""
        rt = lookup(kind_or_resource)

        def get() -> Obj | None:
            entry = self.emulator.store.get(rt, namespace if rt.namespaced else None, name)
            return copy.deepcopy(entry.obj) if entry else None

        return self._call(get)

    def list(self, kind_or_resource: str, namespace: str | None = None) -> builtins.list[Obj]:
        """Copies of the stored objects of a kind (one namespace, or all)."""
        rt = lookup(kind_or_resource)
        return self._call(lambda: [copy.deepcopy(e.obj) for e in self.emulator.store.select(rt, namespace, None)])

    def delete(
        self, kind_or_resource: str, namespace: str | None, name: str, *, grace_period: int | None = None
    ) -> Obj | None:
        """Delete as the API would (a bound pod is marked, then removed); None if absent."""
        rt = lookup(kind_or_resource)

        def delete() -> Obj | None:
            if self.emulator.store.get(rt, namespace, name) is None:
                return None
            options: Obj = {} if grace_period is None else {"gracePeriodSeconds": grace_period}
            return self.emulator.delete_object(rt, namespace, name, options, False)[0]

        return self._call(delete)

    def remove(self, kind_or_resource: str, namespace: str | None, name: str) -> Obj | None:
        """Remove an object at once (a watch sees DELETED)."""
        rt = lookup(kind_or_resource)
        return self._call(self.emulator.store.remove, rt, namespace, name)

    def history(self, kind_or_resource: str, namespace: str | None, name: str) -> builtins.list[Obj | None]:
        """Every stored version of an object (None marks a deletion), from kmock's store."""
        rt = lookup(kind_or_resource)
        key = (rt.kmock_resource, namespace if rt.namespaced else None, name)

        def history() -> builtins.list[Obj | None]:
            if key not in self.emulator.objects:
                return []
            return [None if v is None else v.raw for v in self.emulator.objects[key].history]

        return self._call(history)

    def reset(self, objects: Iterable[Obj] = ()) -> None:
        """Forget every object, rule, log and request, then load ``objects``."""
        objs = list(objects)

        def reset() -> None:
            em = self.emulator
            self.exec_server.drop_all()
            self.exec_server.drop_rules.clear()
            if self.kubelet is not None:
                self.kubelet.cancel_all()
            self.runtime.kill_all()
            if self.jobs is not None:
                self.jobs.reset()
            em.cancel_timers()
            em.store.close_watches()
            em.store.clear()
            em.store.log.clear()
            em.store.log_floor = em.store.rv
            em.deny_rules.clear()
            if em.rbac is not None:  # a real cluster always has its bootstrap policy
                _rbac.seed_bootstrap_policy(em)
            em.logs.clear()
            em.recorded.clear()
            em._requests.clear()
            for sandbox in self._sandboxes.values():
                sandbox.remove()
            self._sandboxes.clear()
            em.seed(objs)

        self._call(reset)

    @property
    def resource_version(self) -> int:
        return self.emulator.store.rv

    # ---- requests, access, events, logs ---------------------------------------------------------------
    @property
    def requests(self) -> builtins.list[Recorded]:
        return list(self.emulator.recorded)

    def clear_requests(self) -> None:
        def clear() -> None:
            self.emulator.recorded.clear()
            self.emulator._requests.clear()

        self._call(clear)

    @property
    def server_errors(self) -> builtins.list[Exception]:
        """Unexpected exceptions raised while serving (bugs in the server, not API errors)."""
        errors = self.emulator._errors
        return list(errors[-1]) if errors else []

    def add_token(self, token: str, user: str) -> None:
        """Accept another bearer token, authenticated as ``user``."""
        self._call(self.emulator.tokens.__setitem__, token, user)

    def add_user(self, user: str, token: str | None = None, groups: Iterable[str] = ()) -> str:
        """Accept a bearer token for ``user`` (``"<user>-token"`` by default), in ``groups``
        when given (see :meth:`set_groups`); return the token. A context for it: ``write_kubeconfig(path, {name: {"token": token,
        "user": user, "namespace": ns}})``."""  # noqa: E501
        token = token or f"{user}-token"
        self.add_token(token, user)
        groups = tuple(groups)
        if groups:
            self.set_groups(user, groups)
        return token

    def set_groups(self, user: str, groups: Iterable[str]) -> None:
        """The groups ``user`` belongs to (besides ``system:authenticated``), as RBAC and
        ``kubectl auth whoami`` see them."""
        self._call(self.emulator.user_groups.__setitem__, user, tuple(groups))

    def enable_rbac(self, admins: Iterable[str] | None = None) -> None:
        """Authorise every request from the stored Roles, ClusterRoles and bindings.

        ``admins`` (the server's own user by default) join ``system:masters`` and may do
        anything; everyone else gets what bindings grant, plus the defaults of a real cluster
        (discovery, ``/version``, access reviews). The bootstrap ClusterRoles (``cluster-admin``,
        ``admin``, ``edit``, ``view``, ``system:*``) and their bindings are stored if missing.
        ``deny`` rules still apply on top.
        """
        names = [self.user] if admins is None else list(admins)

        def enable() -> None:
            em = self.emulator
            for name in names:
                groups = em.user_groups.get(name, ())
                if _rbac.SYSTEM_MASTERS not in groups:
                    em.user_groups[name] = (*groups, _rbac.SYSTEM_MASTERS)
            _rbac.seed_bootstrap_policy(em)
            em.rbac = _rbac.Authorizer(em)

        self._call(enable)

    def disable_rbac(self) -> None:
        """Serve everyone again (stored RBAC objects stay; ``deny`` rules still apply)."""
        self._call(setattr, self.emulator, "rbac", None)

    def deny(self, verb: str, resource: str, namespace: str | None = None, subresource: str | None = None) -> None:
        """Answer 403 Forbidden (as RBAC words it) for this verb on this resource.

        ``resource`` may be ``"pods"``, ``"pod"``, ``"pods/exec"`` or ``"*"``; ``verb`` may
        be ``"*"``; ``namespace=None`` denies in every namespace and at the cluster scope.
        """
        if "/" in resource and subresource is None:
            resource, subresource = resource.split("/", 1)
        plural = resource if resource == "*" else lookup(resource).plural
        self._call(self.emulator.deny_rules.append, DenyRule(verb, plural, namespace, subresource))

    def allow_all(self) -> None:
        self._call(self.emulator.deny_rules.clear)

    def append_log(self, namespace: str, pod: str, text: str, container: str | None = None) -> None:
        """Add lines to a container's log (``pods/log``); the pod's only container by default."""

        def append() -> None:
            name = container
            if name is None:
                entry = self.emulator.store.get(lookup("pods"), namespace, pod)
                if entry is None:
                    raise KeyError(f"pod {namespace}/{pod} not found")
                name = entry.obj["spec"]["containers"][0]["name"]
            self.emulator.append_log(namespace, pod, name, text)

        self._call(append)

    def logs(self, namespace: str, pod: str, container: str | None = None) -> str:
        """The text of a container's log (the pod's only container by default), as ``pods/log``
        serves it: what ``append_log`` added and what a container run for real printed."""

        def text() -> str:
            name = container
            if name is None:
                entry = self.emulator.store.get(lookup("pods"), namespace, pod)
                if entry is None:
                    raise KeyError(f"pod {namespace}/{pod} not found")
                name = entry.obj["spec"]["containers"][0]["name"]
            return "".join(line for _, line in self.emulator.logs.get((namespace, pod, name), []))

        return self._call(text)

    def job_pods(self, namespace: str, job: str) -> builtins.list[Obj]:
        """Copies of the pods a Job controls (by their controller ownerReference), oldest first."""
        found = self.get("jobs", namespace, job)
        if found is None:
            return []
        uid = found["metadata"]["uid"]
        pods = [p for p in self.list("pods", namespace) if (controller_of(p) or {}).get("uid") == uid]

        def created(pod: Obj) -> int:  # the resourceVersion it was created with
            first = next((v for v in self.history("pods", namespace, pod["metadata"]["name"]) if v), pod)
            return int(first["metadata"]["resourceVersion"])

        return sorted(pods, key=created)

    def record_event(
        self,
        involved: Obj,
        reason: str,
        message: str,
        *,
        type: str = "Normal",
        source: str = "kubelet",
        host: str | None = None,
        field_path: str | None = None,
    ) -> Obj:
        """Record a core/v1 Event about ``involved`` (repeats bump ``count``), as components do."""
        return self._call(record_event, self.emulator, involved, reason, message, type, source, host, field_path)

    def events_for(self, namespace: str, name: str) -> builtins.list[Obj]:
        return [e for e in self.list("events", namespace) if (e.get("involvedObject") or {}).get("name") == name]

    @property
    def open_watches(self) -> int:
        """How many watch streams are open now."""
        return self._call(lambda: sum(len(w) for w in self.emulator.store.watchers.values()))

    @staticmethod
    def wait_until(condition: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
        """Poll ``condition()`` until true; raise TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not met within {timeout}s")
            time.sleep(0.01)

    def wait_for(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        condition: Callable[[Obj | None], bool],
        timeout: float = 10.0,
    ) -> Obj | None:
        """Poll until ``condition(object)`` holds; raise TimeoutError with the last state."""
        deadline = time.monotonic() + timeout
        obj = self.get(kind, namespace, name)
        while not condition(obj):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{kind} {namespace}/{name} never met the condition; last: {obj!r:.500}")
            time.sleep(0.02)
            obj = self.get(kind, namespace, name)
        return obj


def kubectl(
    kubeconfig: str | os.PathLike[str],
    context: str,
    *args: str,
    timeout: float = 60,
    input: str | None = None,
    check: bool = False,
) -> Any:
    """Run the real kubectl against a kubeconfig, always with an explicit ``--context``.

    Discovery is cached in a folder next to the kubeconfig and HOME points there too, so
    nothing is written to the user's ``~/.kube``. Returns ``subprocess.CompletedProcess``.
    """
    import subprocess

    exe = shutil.which("kubectl")
    if exe is None:
        raise FileNotFoundError("kubectl")
    cfg = Path(kubeconfig)
    home = cfg.parent / ".kubectl-home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "KUBECONFIG": str(cfg)}
    cmd = [exe, "--kubeconfig", str(cfg), "--context", context, "--cache-dir", str(home / "cache"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, input=input, check=check)


def record_event(
    em: SimEmulator,
    involved: Obj,
    reason: str,
    message: str,
    type_: str,
    source: str,
    host: str | None,
    field_path: str | None = None,
) -> Obj:
    """Create or bump a core/v1 Event (must run on the server loop)."""
    rt = lookup("events")
    meta = involved.get("metadata") or {}
    ns = meta.get("namespace") or "default"
    kind = involved.get("kind", "Pod")
    inv: Obj = {
        "kind": kind,
        "name": meta.get("name"),
        "uid": meta.get("uid") if kind != "Node" else meta.get("name"),
        "apiVersion": involved.get("apiVersion", "v1"),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    if kind != "Node":
        inv["namespace"] = ns
    if field_path:
        inv["fieldPath"] = field_path
    now = _defaults.now_rfc3339()
    for entry in em.store.select(rt, ns, None):
        e = entry.obj
        if (
            (e.get("involvedObject") or {}).get("uid") == inv["uid"]
            and e.get("reason") == reason
            and e.get("message") == message
            and e.get("type") == type_
            and (e.get("involvedObject") or {}).get("fieldPath") == inv.get("fieldPath")
        ):
            bumped = dict(e)
            bumped["count"] = int(e.get("count") or 1) + 1
            bumped["lastTimestamp"] = now
            return em.store.put(rt, bumped).obj
    src: Obj = {"component": source}
    if host:
        src["host"] = host
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta.get('name')}.{time.time_ns():x}",
            "namespace": ns,
            "uid": str(uuid.uuid4()),
            "creationTimestamp": now,
        },
        "involvedObject": inv,
        "reason": reason,
        "message": message,
        "type": type_,
        "count": 1,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "source": src,
        "reportingComponent": source,
        "reportingInstance": host or "",
        "eventTime": None,
    }
    return em.store.put(rt, event).obj


__all__ = ["Faults", "KubeSim", "ResourceType", "kubectl"]
