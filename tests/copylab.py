"""A lab pod for the `nsightlab copy` tests, shared by a module's tests, and what they
need around it: a hostile pod's stand-in, a fingerprint of a whole tree, the checks."""

from __future__ import annotations

import hashlib
import os
import shlex
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from clirun import Result, run_cli
from conftest import CONTEXTS, PRD_CONTEXT, STG_CONTEXT
from kubesim import KubeSim, realistic_cluster

NS = "ml-lab"
POD = "nsight-lab-ana"


@dataclass
class CopyLab:
    sim: KubeSim
    root: Path  # everything the tests make here lives under it

    def pod_path(self, path: str) -> Path:
        return self.sim.pod_path(NS, POD, path)

    def real_python(self) -> None:
        """The pod's python3 is this test's interpreter (podtar runs there)."""
        self.sim.put_tool(NS, POD, "python3", f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')

    def no_python(self) -> None:
        """The pod's python3 is too old for podtar (3.6 exits 99 on the version check):
        the pod's side falls back to tar and sha256sum."""
        self.sim.put_tool(NS, POD, "python3", "#!/bin/sh\nexit 99\n")

    def serve(self, stream: bytes, claims: dict[str, tuple[int, str]]) -> None:
        """Make the pod answer a copy out with `stream`, as a hostile pod that knows the
        protocol would: its python3 takes the podtar source it is sent (reading stdin to
        the end, as podtar does), writes the crafted archive on stdout instead of
        packing anything, the digest records of `claims` on stderr, and exits 0."""
        data = self.root / "served.tar"
        data.write_bytes(stream)
        digests = self.root / "served.digests"
        digests.write_bytes(digest_records(claims))
        script = f"#!/bin/sh\ncat >/dev/null\ncat {shlex.quote(str(data))}\ncat {shlex.quote(str(digests))} >&2\n"
        self.sim.put_tool(NS, POD, "python3", script)


def digest_records(claims: dict[str, tuple[int, str]]) -> bytes:
    """The pod's digests as the wire carries them: a NUL-framed record per file,
    `D<TAB>size<TAB>sha256<TAB>path`."""
    return b"".join(
        f"\0D\t{size}\t{sha}\t{name}\0".encode("utf-8", "surrogateescape") for name, (size, sha) in claims.items()
    )


@contextmanager
def copy_lab(root: Path) -> Iterator[CopyLab]:
    """A kubesim with a Ready lab pod made by `nsightlab create`, and the environment
    that makes later commands use it (for a whole test module: a pod costs ~1 s)."""
    with pytest.MonkeyPatch.context() as mp, KubeSim(tls=True, kubelet_delay=0.05) as sim:
        sim.load(realistic_cluster())
        kubeconfig = sim.write_kubeconfig(root / "kubeconfig", CONTEXTS, current=PRD_CONTEXT)
        config = root / "config.yaml"
        config.write_text(
            f"clusters:\n  stg:\n    context: {STG_CONTEXT}\n    namespace: {NS}\nlab:\n  image: "
            '"registry.example.com/lab:1"\n  owner: "ana"\n'
        )
        for key, value in {
            "NSIGHTLAB_HOME": root / "home",
            "KUBECONFIG": kubeconfig,
            "NSIGHTLAB_CONFIG": config,
            "COLUMNS": "200",
        }.items():
            mp.setenv(key, str(value))
        from nsightlab.cli import main

        try:
            main(["create", "--context", "stg", "--yes"])
        except SystemExit as e:
            assert not e.code, f"create failed: exit {e.code}"
        yield CopyLab(sim, root)


def nsl(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    return run_cli(capsys, *args)


def fingerprint(top: Path, skip: Path | None = None) -> dict[str, tuple[str, str]]:
    """Every path under `top` (but `skip`) with its kind and contents (a file's sha256,
    a link's target, a folder's mode): equal before and after means nothing changed."""
    out: dict[str, tuple[str, str]] = {}
    for folder, dirs, files in os.walk(top):
        here = Path(folder)
        if skip is not None and (here == skip or skip in here.parents):
            dirs[:] = []
            continue
        for name in dirs + files:
            path = here / name
            if skip is not None and path == skip:
                continue
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[str(path)] = ("link", os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                out[str(path)] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                out[str(path)] = ("dir" if stat.S_ISDIR(st.st_mode) else "other", oct(st.st_mode))
    return out


def links_leading_out(top: Path) -> list[str]:
    """Symlinks under `top` that resolve outside it (followed, and chained)."""
    inside = top.resolve()
    out = []
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(folder) / name
            if path.is_symlink():
                real = Path(os.path.realpath(path))
                if real != inside and inside not in real.parents:
                    out.append(f"{path} -> {os.readlink(path)} ({real})")
    return out


def one_error_line(r: Result) -> str:
    """The error line of a failed command, checked to be its only line besides the note
    naming the lab session."""
    lines = [line for line in r.err.splitlines() if not line.startswith("using the lab session")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in r.err, r
    return lines[0]
