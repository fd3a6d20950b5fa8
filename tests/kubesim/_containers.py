"""The kubelet's work on this machine: pod volumes written into the sandbox, and containers
run as local processes whose output is the pod log.

**Volumes.** Before a bound pod's containers start, every volume in its spec is resolved
and written at each of its ``volumeMounts`` (init containers included), inside the pod's
sandbox ``S`` (see :mod:`._sandbox`): ``configMap`` (``data`` as text files, ``binaryData``
decoded, ``items`` with ``key``/``path``/``mode``, ``defaultMode``, ``optional``), ``secret``
(the same, base64-decoded), ``projected`` (its configMap and secret sources), and an empty
folder for ``emptyDir`` and every other kind; ``subPath`` mounts one entry of the volume.
configMap, secret and projected mounts are written read-only (root can still write).
Each mount path is added to the sandbox's rewritten roots, so ``/lab/sweep.py`` in a
command reads ``S/lab/sweep.py``. A missing ConfigMap or Secret (or key) raises
:class:`MountError` worded as the kubelet's ``FailedMount`` event.

**Containers** (pods for which :func:`runs_for_real` holds): ``command`` + ``args`` run as
a local subprocess in ``S``, with the sandbox's path rewriting and base environment, then
the container's ``envFrom`` and ``env`` (literal values, ``$(VAR)`` references, and
``valueFrom`` field, ConfigMap and Secret references), in ``workingDir`` when given. stdout
and stderr are appended to the pod log line by line as they come. The process has its own
process group; when it exits, what it left running in that group is killed (a container's
processes end with it). A program that cannot be started raises :class:`StartError` with
containerd's words.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import errno
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._exec import _reset_child_signals
from ._resources import lookup

if TYPE_CHECKING:
    from ._api import SimEmulator
    from ._sandbox import Sandbox

Obj = dict[str, Any]

RUN_ANNOTATION = "kubesim/run"
CONFIGMAPS = lookup("configmaps")
SECRETS = lookup("secrets")
READ_ONLY_KINDS = ("configMap", "secret", "projected")
_VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_CHUNK = 64 * 1024


def _ts() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class MountError(Exception):
    """A volume that cannot be set up; the message is the FailedMount event's."""


class StartError(Exception):
    """A container whose program cannot be started; the message is containerd's."""


class ConfigError(Exception):
    """A container whose environment names a missing ConfigMap, Secret or key."""


def runs_for_real(pod: Obj) -> bool:
    """Whether the kubelet runs this pod's commands as processes.

    Pods controlled by a Job do, unless they carry a ``kubesim/exit-code`` annotation (then
    the scripted behaviour of :mod:`._kubelet` applies); ``kubesim/run: "true"`` or
    ``"false"`` decides for any pod.
    """
    meta = pod.get("metadata") or {}
    ann = meta.get("annotations") or {}
    if ann.get(RUN_ANNOTATION) in ("true", "false"):
        return bool(ann[RUN_ANNOTATION] == "true")
    if any(k.startswith("kubesim/exit-code") for k in ann):
        return False
    return any(ref.get("kind") == "Job" and ref.get("controller") for ref in meta.get("ownerReferences") or [])


def container_argv(container: Obj) -> list[str]:
    return [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]


# ---- volumes -------------------------------------------------------------------------------------

Files = dict[str, tuple[bytes, int]]  # path inside the volume -> (content, mode)


def _source_files(em: SimEmulator, ns: str, volume: str, kind: str, source: Obj) -> Files:
    """The files of one configMap or secret source; raise MountError as the kubelet words it."""
    rt = CONFIGMAPS if kind == "configMap" else SECRETS
    ref = str(source.get("name") or (source.get("secretName") if kind == "secret" else "") or "")
    entry = em.store.get(rt, ns, ref)
    word = "configmap" if kind == "configMap" else "secret"
    if entry is None:
        if source.get("optional"):
            return {}
        raise MountError(f'MountVolume.SetUp failed for volume "{volume}" : {word} "{ref}" not found')
    obj = entry.obj
    values: dict[str, bytes] = {}
    if kind == "configMap":
        values.update({k: str(v).encode() for k, v in (obj.get("data") or {}).items()})
        values.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    else:
        values.update({k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()})
        values.update({k: str(v).encode() for k, v in (obj.get("stringData") or {}).items()})
    mode = int(source.get("defaultMode", 0o644))
    items = source.get("items")
    if not items:
        return {k: (v, mode) for k, v in values.items()}
    files: Files = {}
    for item in items:
        key = str(item.get("key", ""))
        if key not in values:
            if source.get("optional"):
                continue
            raise MountError(
                f'MountVolume.SetUp failed for volume "{volume}" : {word} references non-existent config key: {key}'
            )
        files[str(item.get("path") or key)] = (values[key], int(item.get("mode", mode)))
    return files


def volume_files(em: SimEmulator, pod: Obj) -> dict[str, tuple[str, Files]]:
    """Every volume of the pod: name -> (kind, files); raise MountError for the first that fails."""
    ns = pod["metadata"].get("namespace", "")
    out: dict[str, tuple[str, Files]] = {}
    for vol in (pod.get("spec") or {}).get("volumes") or []:
        name = str(vol.get("name", ""))
        if isinstance(vol.get("configMap"), dict):
            out[name] = ("configMap", _source_files(em, ns, name, "configMap", vol["configMap"]))
        elif isinstance(vol.get("secret"), dict):
            out[name] = ("secret", _source_files(em, ns, name, "secret", vol["secret"]))
        elif isinstance(vol.get("projected"), dict):
            files: Files = {}
            mode = int(vol["projected"].get("defaultMode", 0o644))
            for src in vol["projected"].get("sources") or []:
                for kind in ("configMap", "secret"):
                    if isinstance(src.get(kind), dict):
                        files.update(_source_files(em, ns, name, kind, {"defaultMode": mode, **src[kind]}))
            out[name] = ("projected", files)
        else:
            out[name] = (next((k for k in vol if k != "name"), "emptyDir"), {})
    return out


def _write_volume(target: Path, files: Files, read_only: bool) -> None:
    made = not target.exists()
    target.mkdir(parents=True, exist_ok=True)
    dirs = {target} if made else set()
    for rel, (data, mode) in sorted(files.items()):
        path = target / rel
        for parent in reversed(path.parents):
            if parent.is_relative_to(target) and parent != target and not parent.exists():
                parent.mkdir()
                dirs.add(parent)
        if path.exists():
            path.chmod(0o644)
        path.write_bytes(data)
        path.chmod((mode & ~0o222) if read_only else mode)
    if read_only:
        for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
            d.chmod(0o555)


def mount_volumes(em: SimEmulator, sandbox: Sandbox, pod: Obj) -> list[str]:
    """Write the pod's volumes at their mount paths in the sandbox; returns the mount paths.

    Raises :class:`MountError` (nothing is written then) when a volume cannot be set up.
    """
    volumes = volume_files(em, pod)
    spec = pod.get("spec") or {}
    done: list[str] = []
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        for mount in c.get("volumeMounts") or []:
            path = str(mount.get("mountPath") or "").rstrip("/")
            if not path.startswith("/") or path in done or mount.get("name") not in volumes:
                continue
            kind, files = volumes[str(mount["name"])]
            sub = str(mount.get("subPath") or "").strip("/")
            target = sandbox.path / path.lstrip("/")
            read_only = kind in READ_ONLY_KINDS or bool(mount.get("readOnly"))
            if sub and sub in files:  # one file of the volume, at the mount path itself
                data, mode = files[sub]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                target.chmod((mode & ~0o222) if read_only else mode)
            else:
                if sub:
                    files = {k[len(sub) + 1 :]: v for k, v in files.items() if k.startswith(sub + "/")}
                _write_volume(target, files, read_only)
            done.append(path)
    sandbox.add_roots(done)
    return done


# ---- environment ---------------------------------------------------------------------------------


def _expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: defined names are replaced, ``$$`` is a ``$``."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return _VAR_REF.sub(sub, text)


def _field_ref(pod: Obj, path: str) -> str:
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']*)'\]", path)
    if m:
        return str((meta.get(m.group(1)) or {}).get(m.group(2), ""))
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
    }
    return str(simple.get(path) or "")


def _key_ref(em: SimEmulator, ns: str, kind: str, ref: Obj) -> str | None:
    rt = CONFIGMAPS if kind == "configMap" else SECRETS
    word = "configmap" if kind == "configMap" else "secret"
    entry = em.store.get(rt, ns, str(ref.get("name", "")))
    if entry is None:
        if ref.get("optional"):
            return None
        raise ConfigError(f'{word} "{ref.get("name", "")}" not found')
    data = entry.obj.get("data") or {}
    key = str(ref.get("key", ""))
    if key not in data:
        if ref.get("optional"):
            return None
        what = "ConfigMap" if kind == "configMap" else "Secret"
        raise ConfigError(f"couldn't find key {key} in {what} {ns}/{ref.get('name', '')}")
    value = data[key]
    return base64.b64decode(value).decode("utf-8", "replace") if kind == "secret" else str(value)


def container_env(em: SimEmulator, pod: Obj, container: Obj, rewrite: Callable[[str], str]) -> dict[str, str]:
    """The container's own variables: ``envFrom``, then ``env`` (literal values go through
    ``rewrite``, the sandbox's path rewriting). ``$(VAR)`` refers to these only, as in
    Kubernetes, not to the image's (here: the sandbox's) environment."""
    ns = pod["metadata"].get("namespace", "")
    env: dict[str, str] = {}
    for src in container.get("envFrom") or []:
        prefix = str(src.get("prefix") or "")
        for kind, key in (("configMap", "configMapRef"), ("secret", "secretRef")):
            ref = src.get(key)
            if not isinstance(ref, dict):
                continue
            rt = CONFIGMAPS if kind == "configMap" else SECRETS
            entry = em.store.get(rt, ns, str(ref.get("name", "")))
            if entry is None:
                if ref.get("optional"):
                    continue
                raise ConfigError(
                    f'{"configmap" if kind == "configMap" else "secret"} "{ref.get("name", "")}" not found'
                )
            for k, v in (entry.obj.get("data") or {}).items():
                env[prefix + k] = base64.b64decode(v).decode("utf-8", "replace") if kind == "secret" else str(v)
    for var in container.get("env") or []:
        name = var.get("name")
        if not name:
            continue
        if isinstance(var.get("value"), str):
            env[str(name)] = rewrite(_expand(var["value"], env))
            continue
        source = var.get("valueFrom") or {}
        value: str | None = None
        if isinstance(source.get("fieldRef"), dict):
            value = _field_ref(pod, str(source["fieldRef"].get("fieldPath", "")))
        elif isinstance(source.get("configMapKeyRef"), dict):
            value = _key_ref(em, ns, "configMap", source["configMapKeyRef"])
        elif isinstance(source.get("secretKeyRef"), dict):
            value = _key_ref(em, ns, "secret", source["secretKeyRef"])
        elif "value" not in var:
            value = ""
        if value is not None:
            env[str(name)] = value
    return env


# ---- processes -----------------------------------------------------------------------------------


@dataclass(eq=False)
class Process:
    """One running container process; its stdout and stderr feed the pod log."""

    namespace: str
    pod: str
    container: str
    proc: asyncio.subprocess.Process
    started_at: str
    pumps: list[asyncio.Task[None]] = field(default_factory=list)
    _closed: bool = False

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def close(self) -> None:
        """Kill what is left and let go of the pipes (no transport left to the garbage collector)."""
        if self._closed:
            return
        self._closed = True
        if self.proc.returncode is None:
            self.kill()
        for task in self.pumps:
            task.cancel()
        transport = getattr(self.proc, "_transport", None)
        if transport is not None:
            transport.close()

    async def wait(self) -> int:
        """Wait for the process to exit and its output to be logged; the exit code as the
        kubelet reports it (128 + signal for a killed process)."""
        try:
            code = await self.proc.wait()
            self.kill()  # the container's other processes end with it
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.gather(*self.pumps, return_exceptions=True), 2.0)
        finally:
            self.close()
        return 128 - code if code < 0 else code


class ContainerRuntime:
    """Starts and tracks container processes for one emulator; ``sandbox_for(ns, pod)``
    gives a pod's :class:`~._sandbox.Sandbox`."""

    def __init__(self, em: SimEmulator, sandbox_for: Callable[[str, str], Sandbox]):
        self.em = em
        self.sandbox_for = sandbox_for
        self.processes: set[Process] = set()

    def mount(self, pod: Obj) -> list[str]:
        """Write the pod's volumes (see :func:`mount_volumes`); raise :class:`MountError`."""
        meta = pod["metadata"]
        volume_files(self.em, pod)  # fail before making a sandbox for nothing
        return mount_volumes(self.em, self.sandbox_for(meta.get("namespace", ""), meta["name"]), pod)

    async def start(self, pod: Obj, container: Obj) -> Process:
        """Start the container's command; raise :class:`StartError` or :class:`ConfigError`."""
        meta = pod["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        sandbox = self.sandbox_for(ns, name)
        own = container_env(self.em, pod, container, sandbox.rewrite)
        env = {**sandbox.env(None, False), **own}
        argv = sandbox.argv([_expand(a, own) for a in container_argv(container)])
        workdir = container.get("workingDir")
        cwd = sandbox.host_path(str(workdir)) if workdir else sandbox.path
        try:
            if workdir:
                cwd.mkdir(parents=True, exist_ok=True)
            spawn = asyncio.ensure_future(
                asyncio.create_subprocess_exec(
                    *argv,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    cwd=str(cwd),
                    env=env,
                    start_new_session=True,
                    preexec_fn=lambda: _reset_child_signals(False),
                    limit=_CHUNK,
                )
            )
            try:
                proc = await asyncio.shield(spawn)
            except asyncio.CancelledError:
                # The pod went away while the process was starting: do not leave it behind.
                with contextlib.suppress(Exception):
                    started = await spawn
                    os.killpg(started.pid, signal.SIGKILL)
                    transport = getattr(started, "_transport", None)
                    if transport is not None:
                        transport.close()
                raise
        except OSError as e:
            why = (
                "executable file not found in $PATH"
                if e.errno == errno.ENOENT and "/" not in argv[0]
                else (
                    "no such file or directory"
                    if e.errno == errno.ENOENT
                    else "permission denied"
                    if e.errno == errno.EACCES
                    else (e.strerror or str(e)).lower()
                )
            )
            raise StartError(
                "failed to create containerd task: failed to create shim task: OCI runtime create failed: "
                f"runc create failed: unable to start container process: error during container init: "
                f'exec: "{container_argv(container)[0]}": {why}: unknown'
            ) from None
        process = Process(ns, name, str(container["name"]), proc, _ts())
        for reader in (proc.stdout, proc.stderr):
            if reader is not None:
                process.pumps.append(asyncio.create_task(self._pump(reader, process)))
        self.processes.add(process)
        return process

    async def _pump(self, reader: asyncio.StreamReader, process: Process) -> None:
        pending = b""
        try:
            while True:
                data = await reader.read(_CHUNK)
                if not data:
                    break
                pending += data
                cut = pending.rfind(b"\n") + 1
                if cut:
                    self.em.append_log(
                        process.namespace, process.pod, process.container, pending[:cut].decode("utf-8", "replace")
                    )
                    pending = pending[cut:]
        finally:
            if pending:  # a last line without its newline
                self.em.append_log(
                    process.namespace, process.pod, process.container, pending.decode("utf-8", "replace")
                )

    async def wait(self, process: Process) -> int:
        """The exit code of a started process, once its output is in the log."""
        try:
            return await process.wait()
        finally:
            self.processes.discard(process)

    def kill_pod(self, namespace: str, pod: str) -> None:
        """Kill every process of a pod (deleted, or past its deadline)."""
        for process in list(self.processes):
            if process.namespace == namespace and process.pod == pod:
                process.close()
                self.processes.discard(process)

    def kill_all(self) -> None:
        for process in list(self.processes):
            process.close()
        self.processes.clear()

    async def stop(self) -> None:
        """Kill every process and wait (briefly) until each is reaped, before the loop closes."""
        processes = list(self.processes)
        self.kill_all()
        waits = [p.proc.wait() for p in processes]
        if waits:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.gather(*waits, return_exceptions=True), 2.0)
