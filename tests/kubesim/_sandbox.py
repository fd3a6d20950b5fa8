"""Per-pod sandboxes: where an exec'd "container" command really runs, on this machine.

Each pod gets a folder ``S`` that stands for the container's ``/``. A command runs as a
local subprocess with ``S`` as its working directory (the container's ``workingDir`` when it
sets one under a virtual root, as a runtime starts an exec there), and with these rules:

* **Paths.** Absolute paths under the virtual roots (:data:`SANDBOX_ROOTS`: ``/tmp``,
  ``/workspace``, ``/root``, ``/proc/driver/nvidia`` ..., and the pod's volume mount paths
  once the kubelet has written them, see :meth:`Sandbox.add_roots`) are rewritten to ``S + path`` in
  every argv string and container environment value, wherever they start a path (at the
  start of the string or after whitespace, a quote, ``=``, ``:``, ``,``, ``(``, ``<`` or
  ``>``). ``/tmp/x`` becomes ``S/tmp/x``; ``/usr/bin/env`` and ``foo/tmp`` are untouched.
  Paths a program opens by itself are not rewritten (use relative paths, ``$TMPDIR`` or
  ``$HOME``), and output shows real sandbox paths. The host's GNU ``tar`` also gets a
  ``--transform`` so member names read as in a pod (``tar cf - /tmp/x`` stores ``tmp/x``).
* **Environment.** ``HOME=S/root``, ``TMPDIR=S/tmp``, ``HOSTNAME=<pod>``, ``KUBESIM_SANDBOX=S``,
  the container's literal ``env`` values, and ``PATH=S/bin:<host PATH>``.
* **Tools.** ``S/bin`` holds ``python3``/``python`` wrappers that run this test's
  ``sys.executable``; tests drop stand-ins there (``nvidia-smi``, ``nsys``, ``ncu``, even a
  ``tar`` that writes a crafted archive) with ``sim.put_tool(ns, pod, name, text)``.
  Everything else (``sh``, ``bash``, ``tar``, ``sha256sum`` ...) is the host's.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

SANDBOX_ROOTS: tuple[str, ...] = (
    "/tmp",
    "/var/tmp",
    "/workspace",
    "/root",
    "/home",
    "/models",
    "/data",
    "/opt/lab",
    "/proc/driver/nvidia",
    "/dev/shm",
)
_BOUNDARY = r"(?:^|(?<=[\s\"'=:,(<>]))"


def _roots_pattern(roots: Iterable[str]) -> re.Pattern[str]:
    alts = "|".join(re.escape(r.rstrip("/")) for r in sorted(roots, key=len, reverse=True))
    return re.compile(rf"{_BOUNDARY}(?P<root>{alts})(?=/|$|[\s\"':;,)<>|&])")


class Sandbox:
    """The folder standing for one pod's filesystem, and how commands see it."""

    def __init__(self, path: Path, pod: str, roots: Iterable[str] = SANDBOX_ROOTS):
        self.path = path
        self.pod = pod
        self.roots = tuple(roots)
        self._pattern = _roots_pattern(self.roots)
        self.ensure()

    def ensure(self) -> None:
        for sub in ("bin", "tmp", "workspace", "root", "proc/driver/nvidia"):
            (self.path / sub).mkdir(parents=True, exist_ok=True)
        for name in ("python3", "python"):
            wrapper = self.path / "bin" / name
            if not wrapper.exists():
                wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
                wrapper.chmod(0o755)

    def add_roots(self, roots: Iterable[str]) -> None:
        """Rewrite these paths too (a pod's volume mount paths, such as ``/lab``)."""
        extra = [r.rstrip("/") for r in roots if r.rstrip("/") and r.rstrip("/") not in self.roots]
        if extra:
            self.roots = (*self.roots, *extra)
            self._pattern = _roots_pattern(self.roots)

    @property
    def bin(self) -> Path:
        return self.path / "bin"

    def host_path(self, virtual: str) -> Path:
        """Where a path inside the pod (``/tmp/x``) lives on this machine."""
        return Path(self.rewrite(virtual)) if virtual.startswith("/") else self.path / virtual

    def workdir(self, container: Mapping[str, Any] | None) -> Path:
        """Where the container's commands start (made if missing, as runtimes do): its
        ``workingDir`` when that is under a virtual root, else the sandbox's ``/``."""
        virtual = str((container or {}).get("workingDir") or "")
        path = self.host_path(virtual) if virtual.startswith("/") else self.path
        if path != self.path and not path.is_relative_to(self.path):
            return self.path
        path.mkdir(parents=True, exist_ok=True)
        return path

    def rewrite(self, text: str) -> str:
        """Rewrite virtual absolute paths in one argv string (see the module rules)."""
        base = str(self.path)
        return self._pattern.sub(lambda m: base + m.group("root"), text)

    def argv(self, command: list[str]) -> list[str]:
        """The command with virtual paths rewritten.

        For the host's GNU ``tar`` with rewritten paths, a ``--transform`` strips the sandbox
        prefix from member names, so ``tar cf - /tmp/x`` archives ``tmp/x`` as in a pod.
        """
        argv = [self.rewrite(arg) for arg in command]
        if argv and argv[0].rsplit("/", 1)[-1] == "tar" and argv != command and not (self.bin / "tar").exists():
            prefix = str(self.path).lstrip("/") + "/"
            escaped = re.sub(r"([.\[\]*^$\\|])", r"\\\1", prefix)
            argv.append(f"--transform=s|^{escaped}||")
        return argv

    def env(self, container: Mapping[str, Any] | None, tty: bool) -> dict[str, str]:
        host_path = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        env = {
            "PATH": f"{self.bin}{os.pathsep}{host_path}",
            "HOME": str(self.path / "root"),
            "TMPDIR": str(self.path / "tmp"),
            "HOSTNAME": self.pod,
            "KUBESIM_SANDBOX": str(self.path),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "PWD": str(self.path),
        }
        if tty:
            env["TERM"] = "xterm"
        for var in (container or {}).get("env") or []:
            if isinstance(var, Mapping) and var.get("name") and isinstance(var.get("value"), str):
                env[str(var["name"])] = self.rewrite(var["value"])
        return env

    def put_tool(self, name: str, text: str | bytes) -> Path:
        path = self.bin / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        path.chmod(0o755)
        return path

    def remove(self) -> None:
        # Read-only volume folders (configMap mounts) must be writable again to be emptied.
        for folder, dirs, _ in os.walk(self.path):
            for d in dirs:
                sub = Path(folder) / d
                if not sub.is_symlink():
                    with contextlib.suppress(OSError):
                        sub.chmod(0o755)
        shutil.rmtree(self.path, ignore_errors=True)
