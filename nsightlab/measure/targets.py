"""Where lab work runs: the lab pod (exec + tar over the API) or this machine.

profile, ncu and sweep are written against the `Target` protocol, so everything they do
also works on a GPU workstation with no cluster (`--local`).
"""

from __future__ import annotations

import os
import secrets
import selectors
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from nsightlab.cluster.connect import connect, lab_pod_name, note_session
from nsightlab.cluster.kube import Kube
from nsightlab.cluster.lab_lifecycle import lab_node
from nsightlab.cluster.safety import Intent
from nsightlab.cluster.transfer import copy_in, copy_out
from nsightlab.env import Env
from nsightlab.errors import ClusterError, RemoteCommandError
from nsightlab.k8s import pods as r
from nsightlab.k8s.inventory import gpu_product
from nsightlab.k8s.labpod import selected_instance_type
from nsightlab.userconfig import ensure_home

Sink = Callable[[bytes], None]


@dataclass
class Completed:
    """What a finished command gave back (like subprocess.CompletedProcess)."""

    argv: list[str]
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace")


def _failed(target: str, argv: Sequence[str], code: int, stderr: bytes, what: str | None = None) -> RemoteCommandError:
    tail = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    label = what or " ".join(argv[:3])
    detail = f": {tail[0][:300]}" if tail[0] else ""
    return RemoteCommandError(f"{label} failed on {target} (exit {code}){detail}", returncode=code)


class Target(Protocol):
    label: str  # "pod ml-lab/nsight-lab-me" or "this machine"
    python: str  # the interpreter to run lab scripts with

    def run(self, argv: Sequence[str], *, check: bool = True, what: str | None = None) -> Completed: ...

    def stream(
        self, argv: Sequence[str], *, on_stdout: Sink, on_stderr: Sink, env: dict[str, str] | None = None
    ) -> int: ...

    def which(self, name: str) -> str | None: ...

    def workdir(self) -> str: ...

    def put(self, local: Path, remote: str) -> None: ...

    def get(self, remote: str, local: Path) -> None: ...

    def made_workdir(self) -> str | None:
        """The work folder, if one was made and is still there."""
        ...


class LocalTarget:
    """This machine: subprocesses and file copies."""

    label = "this machine"

    def __init__(self, python: str | None = None) -> None:
        self.python = python or sys.executable
        self._workdir: str | None = None

    def run(self, argv: Sequence[str], *, check: bool = True, what: str | None = None) -> Completed:
        try:
            proc = subprocess.run(list(argv), capture_output=True, check=False)
        except FileNotFoundError:
            raise RemoteCommandError(f"{argv[0]} is not installed on {self.label}", returncode=127) from None
        done = Completed(list(argv), proc.returncode, proc.stdout, proc.stderr)
        if check and proc.returncode != 0:
            raise _failed(self.label, argv, proc.returncode, proc.stderr, what)
        return done

    def stream(
        self, argv: Sequence[str], *, on_stdout: Sink, on_stderr: Sink, env: dict[str, str] | None = None
    ) -> int:

        try:
            proc = subprocess.Popen(
                list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **(env or {})}
            )
        except FileNotFoundError:
            raise RemoteCommandError(f"{argv[0]} is not installed on {self.label}", returncode=127) from None
        assert proc.stdout is not None and proc.stderr is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ, on_stdout)
        sel.register(proc.stderr, selectors.EVENT_READ, on_stderr)
        try:
            open_streams = 2
            while open_streams:
                for key, _ in sel.select():
                    data = os.read(key.fd, 65536)
                    if not data:
                        sel.unregister(key.fileobj)
                        open_streams -= 1
                    else:
                        key.data(data)
            return proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            sel.close()

    def which(self, name: str) -> str | None:
        return shutil.which(name)

    def workdir(self) -> str:
        if self._workdir is None:
            self._workdir = tempfile.mkdtemp(prefix="nsightlab-")
        return self._workdir

    def close(self) -> None:
        """Remove the work folder: what a run needs was copied into the run store, and a
        failed run's leftovers are of no use to anyone."""
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def made_workdir(self) -> str | None:
        return None  # nothing stays here: open_target removes the work folder (close)

    def put(self, local: Path, remote: str) -> None:
        dest = Path(remote)
        if local.is_dir():
            shutil.copytree(local, dest, dirs_exist_ok=True)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(local, dest)

    def get(self, remote: str, local: Path) -> None:
        src = Path(remote)
        if not src.exists():
            raise RemoteCommandError(f"{remote} does not exist on {self.label}")
        if src.is_dir():
            shutil.copytree(src, local, dirs_exist_ok=True)
        else:
            local.parent.mkdir(parents=True, exist_ok=True)
            tmp = local.with_name(f".{local.name}.part")
            shutil.copy2(src, tmp)
            os.replace(tmp, local)


class PodTarget:
    """The lab pod: commands over exec, files over tar (verified)."""

    python = "python3"

    def __init__(self, kube: Kube, namespace: str, pod: str, *, container: str | None = None) -> None:
        self.kube = kube
        self.namespace = namespace
        self.pod = pod
        self.container = container
        self.label = f"pod {namespace}/{pod}"
        self._workdir: str | None = None

    def stream(
        self, argv: Sequence[str], *, on_stdout: Sink, on_stderr: Sink, env: dict[str, str] | None = None
    ) -> int:
        full = list(argv)
        if env:
            full = ["env", *(f"{k}={v}" for k, v in env.items()), *full]
        session = self.kube.exec(self.namespace, self.pod, full, container=self.container)
        try:
            while (frame := session.read()) is not None:
                (on_stdout if frame[0] == 1 else on_stderr)(frame[1])
        finally:
            session.close()
        code = session.returncode()
        if code is None:
            failure = session.failure_message()
            if failure and ("executable file not found" in failure or "no such file" in failure.lower()):
                return 127
            if failure:
                raise RemoteCommandError(f"{argv[0]} could not run in {self.label}: {failure}")
            raise ClusterError(
                f"the connection to {self.label} dropped while running {argv[0]}",
                hint=f"Check the pod with `nsightlab status {self.kube.ctx.cli_args}`.",
            )
        return code

    def run(self, argv: Sequence[str], *, check: bool = True, what: str | None = None) -> Completed:
        out, err = bytearray(), bytearray()
        code = self.stream(argv, on_stdout=out.extend, on_stderr=err.extend)
        done = Completed(list(argv), code, bytes(out), bytes(err))
        if check and code != 0:
            if code == 127:
                raise RemoteCommandError(f"{argv[0]} is not installed in {self.label}", returncode=127)
            raise _failed(self.label, argv, code, bytes(err), what)
        return done

    def which(self, name: str) -> str | None:
        done = self.run(["sh", "-c", 'command -v "$1"', "which", name], check=False)
        path = done.out.strip()
        return path or None

    def workdir(self) -> str:
        if self._workdir is None:
            path = f"/tmp/nsightlab/run-{secrets.token_hex(4)}"
            self.run(["mkdir", "-p", path], what="making a work folder")
            self._workdir = path
        return self._workdir

    def made_workdir(self) -> str | None:
        return self._workdir

    def put(self, local: Path, remote: str) -> None:
        copy_in(self.kube, self.namespace, self.pod, local, remote, container=self.container)

    def get(self, remote: str, local: Path) -> None:
        copy_out(self.kube, self.namespace, self.pod, remote, local, container=self.container)


@dataclass
class Where:
    """Where lab work runs, and what a run's meta.json should say about it.

    `wants_gpu`: the target requests a GPU (the lab pod asks for `nvidia.com/gpu`), so
    torch must see one there unless `--device cpu` is asked for
    (`nsightlab.measure.device.plan_device`). `place` names it in messages.
    """

    target: Target
    meta: dict[str, object]
    wants_gpu: bool = False
    place: str = "on this machine"


@contextmanager
def open_target(
    env: Env,
    *,
    local: bool,
    context: str | None,
    kubeconfig: Path | None,
    namespace: str | None,
    config_path: Path | None,
    action: str,
) -> Iterator[Where]:
    """The lab pod (from the session or --context) or, with --local, this machine.

    Checks first that the run store can be written (a run must not be lost at its end),
    and that the lab pod is the one `create` made (see connect.lab_pod_name)."""
    ensure_home()
    if local:
        here = LocalTarget()
        try:
            yield Where(here, {"target": "this machine"})
        finally:
            here.close()
        return
    with connect(
        context,
        kubeconfig,
        config_path=config_path,
        intent=Intent.CHANGE,
        namespace=namespace,
        use_session=True,
        action=action,
    ) as c:
        note_session(env, c)
        pod_name = lab_pod_name(c)
        pod = c.pod or {}
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = lab_node(c.kube, pod, note=env.note, consequence="the node's GPU label is not recorded with the run")
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        meta: dict[str, object] = {
            "target": f"pod {c.ctx.namespace}/{pod_name}",
            "context": c.ctx.name,
            "namespace": c.ctx.namespace,
            "pod": pod_name,
            "node": node_name,
            "instance_type": r.instance_type(node) if node else selected_instance_type(pod),
            # the node's label, not what the work runs on: that comes from the run itself
            "node_gpu": gpu_product(node) if node else None,
            "image": containers[0].get("image"),
            "session_uid": (pod.get("metadata") or {}).get("uid"),
        }
        yield Where(
            PodTarget(c.kube, c.ctx.namespace, pod_name), meta, wants_gpu=r.pod_gpus(pod) > 0, place="in the pod"
        )
