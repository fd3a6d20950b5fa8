"""`copy`: files or folders into or out of the lab pod, verified by sha256
(`nsightlab.cluster.transfer`), a byte counter on a terminal's stderr meanwhile.

Exactly one side is in the pod, written :PATH. A local source is checked before any
request, and its checksums are worked out while the client starts and connects.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nsightlab import userfiles
from nsightlab.cluster import transfer
from nsightlab.cluster.connect import connect, lab_pod_name, note_session
from nsightlab.cluster.safety import Intent
from nsightlab.errors import OnInterrupt, UsageError
from nsightlab.k8s.labpod import CopyResult
from nsightlab.present.labview import transfer_progress

if TYPE_CHECKING:
    from nsightlab.present.console import Env


@dataclass(frozen=True)
class CopyRequest:
    """What `nsightlab copy` was given: SRC and DST as typed (a trailing slash on DST
    means a folder), and the lab pod's context."""

    src: str
    dst: str
    context: str | None = None
    kubeconfig: Path | None = None
    namespace: str | None = None
    config_path: Path | None = None


def copy(env: Env, request: CopyRequest) -> CopyResult:
    """The copy made, whole and verified, or nothing put in place."""
    src, dst = request.src, request.dst
    remote_src, remote_dst = transfer.parse_remote(src), transfer.parse_remote(dst)
    if (remote_src is None) == (remote_dst is None):
        raise UsageError(
            "exactly one of SRC and DST must be in the pod, written :PATH",
            hint="e.g. `nsightlab copy lesson1.py :/tmp/`",
        )
    hashing: list[transfer.Hashing] = []

    def allowed() -> None:
        if remote_dst is not None:
            if not Path(src).exists() and not Path(src).is_symlink():
                raise UsageError(f"local source {transfer.shown(src)} does not exist")  # before any request
            mode = Path(src).stat().st_mode if Path(src).exists() else stat.S_IFLNK
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                raise UsageError(
                    f"local source {transfer.shown(src)} is {userfiles.kind_words(mode)}: copy sends files and folders"
                )
            hashing.append(transfer.Hashing(Path(src)))

    with connect(
        request.context,
        request.kubeconfig,
        config_path=request.config_path,
        intent=Intent.CHANGE,
        namespace=request.namespace,
        use_session=True,
        action="copy files to or from a pod",
        allowed=allowed,
    ) as c:
        note_session(env, c)
        pod = lab_pod_name(c)
        # (the copy itself may say more precisely what it left: its Interrupted passes through)
        with (
            OnInterrupt("the copy was stopped before it finished; files are put in place only once whole and verified"),
            transfer_progress(env, "copying") as progress,
        ):
            if remote_dst is not None:
                return transfer.copy_in(
                    c.kube, c.ctx.namespace, pod, Path(src), remote_dst, progress=progress, hashed=hashing[0]
                )
            assert remote_src is not None
            return transfer.copy_out(c.kube, c.ctx.namespace, pod, remote_src, dst, progress=progress)
