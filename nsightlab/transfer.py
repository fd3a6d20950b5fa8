"""Copying files into and out of the lab pod: tar over exec, streamed, verified, safe.

- Streamed in chunks both ways: memory stays flat whatever the size.
- Verified: size and sha256 of every file, computed here while streaming and in the pod
  (sha256sum, else python3); a mismatch is an error.
- Atomic here: files land in a hidden staging folder beside the destination and are
  renamed into place only after verification; an interrupted copy leaves no partial file
  under the final name.
- What comes back from a pod is untrusted: archive members with absolute paths, `..`,
  links leading outside the destination, devices and FIFOs are refused, and nothing is
  written through a symlink. (kubectl cp had five CVEs of exactly this kind.)
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import posixpath
import shutil
import stat
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from pydantic import BaseModel

from nsightlab.errors import ClusterError, RemoteCommandError, UsageError

if TYPE_CHECKING:
    from nsightlab.kube import ExecSession, Kube

CHUNK = 256 * 1024
STAGING_PREFIX = ".nsightlab-copy-"

Progress = Callable[[int], None]

# Exit codes of the remote scripts below (chosen to not collide with tar's).
_E_MISSING, _E_NODIR, _E_TMP, _E_TAR, _E_MOVE = 44, 46, 47, 48, 49

# Lists "size sha256 path" for every regular file under $2 (relative to $1).
_DIGEST_SH = r"""
cd "$1" 2>/dev/null || { echo "no such directory: $1" >&2; exit 44; }
n="$2"
[ -e "$n" ] || [ -L "$n" ] || { echo "no such file or directory: $1/$n" >&2; exit 44; }
if command -v sha256sum >/dev/null 2>&1 && command -v stat >/dev/null 2>&1; then
  find "$n" -type f -exec stat -c 'S %s %n' {} + && find "$n" -type f -exec sha256sum {} +
elif command -v python3 >/dev/null 2>&1; then
  python3 -c '
import hashlib, os, sys
top = sys.argv[1]
paths = [top] if os.path.isfile(top) else [os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs]
for p in paths:
    if os.path.islink(p) or not os.path.isfile(p):
        continue
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for b in iter(lambda: fh.read(1 << 20), b""):
            h.update(b)
    print("S %d %s" % (os.path.getsize(p), p))
    print("%s  %s" % (h.hexdigest(), p))
' "$n"
else
  echo "neither sha256sum nor python3 in the pod: cannot verify the copy" >&2; exit 45
fi
"""

# Extracts the tar on stdin as $1 (a file or folder name) into $2, atomically.
_UNPACK_SH = r"""
name="$1"; dst="$2"; want_dir="$3"
if [ -d "$dst" ]; then parent="$dst"; final="$dst/$name"
elif [ "$want_dir" = 1 ]; then echo "no such directory: $dst" >&2; exit 46
else parent="$(dirname "$dst")"; final="$dst"
  [ -d "$parent" ] || { echo "no such directory: $parent" >&2; exit 46; }
fi
tmp="$(mktemp -d "$parent/.nsightlab-copy-XXXXXX")" || { echo "cannot write to $parent" >&2; exit 47; }
if ! tar -xmf - -C "$tmp"; then rm -rf "$tmp"; exit 48; fi
if [ -d "$final" ] && [ ! -d "$tmp/$name" ]; then rm -rf "$tmp"; echo "$final is a directory" >&2; exit 49; fi
rm -rf "$final" && mv "$tmp/$name" "$final" && rmdir "$tmp" || { rm -rf "$tmp"; exit 49; }
if [ "$final" = "$dst/$name" ]; then echo into; else echo as; fi
"""


class UnsafeArchiveError(RemoteCommandError):
    """The archive from the pod tried to write outside its destination."""


class CopyResult(BaseModel):
    direction: str  # "in" (to the pod) or "out"
    source: str
    destination: str
    files: int
    bytes: int
    seconds: float
    verified: bool
    digests: dict[str, str]  # relative path -> sha256


@dataclass
class Digest:
    size: int = 0
    sha256: str = ""


@dataclass
class _Tally:
    files: dict[str, Digest] = field(default_factory=dict)
    total: int = 0


# ---------------------------------------------------------------------------- helpers


def parse_remote(spec: str) -> str | None:
    """`:PATH` (scp style) is a path in the pod; anything else is local."""
    return spec[1:] if spec.startswith(":") else None


def _run_script(kube: Kube, ns: str, pod: str, script: str, args: list[str], *, container: str | None = None) -> tuple[int, bytes, bytes]:
    session = kube.exec(ns, pod, ["sh", "-c", script, "nsightlab", *args], container=container)
    out, err = bytearray(), bytearray()
    try:
        while (frame := session.read()) is not None:
            (out if frame[0] == 1 else err).extend(frame[1])
    finally:
        session.close()
    code = session.returncode()
    if code is None:
        failure = session.failure_message()
        if failure:
            raise RemoteCommandError(f"{session.what}: {failure}")
        raise ClusterError(f"the exec stream ended without an exit status ({session.what})", hint="The connection dropped; try again.")
    return code, bytes(out), bytes(err)


def remote_digests(kube: Kube, ns: str, pod: str, path: str, *, container: str | None = None) -> dict[str, Digest]:
    """size and sha256 of every regular file at `path` in the pod, keyed by path relative to its parent."""
    parent, name = posixpath.split(path.rstrip("/") or "/")
    code, out, err = _run_script(kube, ns, pod, _DIGEST_SH, [parent or "/", name], container=container)
    if code == _E_MISSING:
        raise RemoteCommandError(f"{err.decode(errors='replace').strip() or 'no such file'} (in pod {pod})", returncode=code)
    if code != 0:
        raise RemoteCommandError(f"cannot checksum {path} in pod {pod}: {err.decode(errors='replace').strip()}", returncode=code)
    digests: dict[str, Digest] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        if line.startswith("S "):
            _, size, rel = line.split(" ", 2)
            digests.setdefault(rel, Digest()).size = int(size)
        elif "  " in line:
            sha, rel = line.split("  ", 1)
            digests.setdefault(rel, Digest()).sha256 = sha
    return digests


def _compare(local: dict[str, Digest], remote: dict[str, Digest], where: str) -> None:
    missing = sorted(set(remote) - set(local))
    extra = sorted(set(local) - set(remote))
    if missing or extra:
        raise RemoteCommandError(
            f"copy verification failed ({where}): file lists differ (missing here: {missing[:3]}, unexpected: {extra[:3]})",
            hint="Nothing was put in place; try again.",
        )
    for rel, d in local.items():
        r = remote[rel]
        if d.size != r.size or d.sha256 != r.sha256:
            raise RemoteCommandError(
                f"copy verification failed for {rel}: {d.size} bytes sha256 {d.sha256[:12]} here, {r.size} bytes sha256 {r.sha256[:12]} in the pod",
                hint="Nothing was put in place; try again.",
            )


# ---------------------------------------------------------------------------- copy in


SEND_CHUNK = 1 << 20  # bytes of a file per stdin frame
_BLOCK = 512


def _read_ahead(src: Path, h: Any, depth: int = 4) -> Iterator[bytes]:
    """The file's chunks, read and hashed on a second thread (both release the GIL)
    while the caller masks and sends the previous ones; at most `depth` chunks wait."""
    import queue
    import threading

    chunks: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            with src.open("rb") as fh:
                while not stop.is_set() and (chunk := fh.read(SEND_CHUNK)):
                    h.update(chunk)
                    chunks.put(chunk)
            chunks.put(None)
        except BaseException as e:  # handed to the consumer
            chunks.put(e)

    worker = threading.Thread(target=produce, daemon=True, name="nsightlab-read")
    worker.start()
    try:
        while (item := chunks.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while worker.is_alive():  # unblock a producer waiting on a full queue
            with contextlib.suppress(queue.Empty):
                chunks.get_nowait()
            worker.join(0.01)


class _TarSender:
    """Writes a tar stream straight into stdin frames: headers from TarInfo, file
    contents in 1 MiB frames hashed on the way (no intermediate buffering copies)."""

    def __init__(self, session: ExecSession, tally: _Tally, progress: Progress | None) -> None:
        self._session = session
        self._tally = tally
        self._progress = progress
        self.sent = 0

    def _send(self, data: bytes) -> None:
        self._session.write_stdin(data)
        self.sent += len(data)

    def add(self, src: Path, arcname: str) -> None:
        st = os.lstat(src)
        info = tarfile.TarInfo(arcname)
        info.mode = stat.S_IMODE(st.st_mode)
        info.mtime = int(st.st_mtime)
        info.uid, info.gid = st.st_uid, st.st_gid
        if stat.S_ISREG(st.st_mode):
            info.size = st.st_size
            digest = self._tally.files.setdefault(arcname, Digest())
            self._send(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
            h = hashlib.sha256()
            for chunk in _read_ahead(src, h):
                digest.size += len(chunk)
                self._tally.total += len(chunk)
                self._send(chunk)
                if self._progress:
                    self._progress(self._tally.total)
            if digest.size != info.size:
                raise UsageError(f"{src} changed size while it was being copied")
            digest.sha256 = h.hexdigest()
            if info.size % _BLOCK:
                self._send(bytes(_BLOCK - info.size % _BLOCK))
        elif stat.S_ISDIR(st.st_mode):
            info.type = tarfile.DIRTYPE
            self._send(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
            for child in sorted(src.iterdir()):
                self.add(child, f"{arcname}/{child.name}")
        elif stat.S_ISLNK(st.st_mode):
            info.type = tarfile.SYMTYPE
            info.linkname = os.readlink(src)
            self._send(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
        # sockets, devices and FIFOs on this side are skipped

    def finish(self) -> None:
        """The end-of-archive marker, padded to a whole 10 KiB record as tar writes it."""
        tail = 2 * _BLOCK
        record = tarfile.RECORDSIZE
        tail += (record - (self.sent + tail) % record) % record
        self._send(bytes(tail))


def copy_in(kube: Kube, ns: str, pod: str, src: Path, dst: str, *, container: str | None = None, progress: Progress | None = None) -> CopyResult:
    """Copy a local file or folder to `dst` in the pod (scp semantics for a trailing /)."""
    if not src.exists() and not src.is_symlink():
        raise UsageError(f"local source {src} does not exist")
    start = time.monotonic()
    if not dst:
        raise UsageError("give a path in the pod, e.g. :/tmp/")
    # The archive holds src under its own name; the remote script moves it to its final
    # place (into dst when dst is a folder, else renamed to dst).
    want_dir = "1" if dst.endswith("/") else "0"
    target = dst.rstrip("/") or "/"
    member = src.resolve().name
    session = kube.exec(ns, pod, ["sh", "-c", _UNPACK_SH, "nsightlab", member, target, want_dir], container=container, stdin=True)
    tally = _Tally()
    out, err = bytearray(), bytearray()
    try:
        sender = _TarSender(session, tally, progress)
        try:
            sender.add(src, member)
            sender.finish()
        except ClusterError:
            pass  # the remote side stopped reading; its stderr says why
        except OSError as e:
            raise UsageError(f"cannot read {src}: {e.strerror}") from None
        session.close_stdin()
        while (frame := session.read()) is not None:
            (out if frame[0] == 1 else err).extend(frame[1])
    finally:
        session.close()
    code = session.returncode()
    message = err.decode("utf-8", "replace").strip()
    if code is None:
        raise ClusterError(f"the exec stream dropped while copying {src} to pod {pod}", hint="Nothing was put in place; try again.")
    if code == _E_NODIR:
        raise RemoteCommandError(f"{message} (in pod {pod})", returncode=code, hint="Create it first, e.g. `nsightlab shell -- mkdir -p DIR`.")
    if code != 0:
        if "No space left" in message:
            raise RemoteCommandError(f"no space left in the pod while copying to {dst}", returncode=code)
        raise RemoteCommandError(f"copy to pod {pod}:{dst} failed: {message or f'exit {code}'}", returncode=code)
    # the script says whether dst was a folder (src went into it) or the new name
    placed = (out.decode("utf-8", "replace").strip().splitlines() or ["as"])[-1]
    final = posixpath.join(target, member) if placed == "into" else target
    remote = remote_digests(kube, ns, pod, final, container=container)
    _compare({_rebase(k, member, posixpath.basename(final)): v for k, v in tally.files.items()}, remote, f"{src} -> {final}")
    return CopyResult(
        direction="in",
        source=str(src),
        destination=final,
        files=len(tally.files),
        bytes=tally.total,
        seconds=round(time.monotonic() - start, 3),
        verified=True,
        digests={k: v.sha256 for k, v in remote.items()},
    )


def _rebase(rel: str, old_top: str, new_top: str) -> str:
    return new_top + rel[len(old_top) :] if rel == old_top or rel.startswith(old_top + "/") else rel


# ---------------------------------------------------------------------------- copy out


class _FrameReader(io.RawIOBase):
    """stdout frames of an exec as a readable stream; stderr kept (bounded)."""

    def __init__(self, session: ExecSession, progress: Progress | None) -> None:
        self._session = session
        self._pending = b""
        self._eof = False
        self.stderr = bytearray()
        self.total = 0
        self._progress = progress

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        while not self._pending and not self._eof:
            frame = self._session.read()
            if frame is None:
                self._eof = True
                break
            channel, data = frame
            if channel == 1:
                self._pending = data
                self.total += len(data)
                if self._progress:
                    self._progress(self.total)
            else:
                self.stderr.extend(data)
                del self.stderr[:-65536]
        n = min(len(buf), len(self._pending))
        buf[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def drain(self) -> None:
        while self.readinto(memoryview(bytearray(CHUNK))):
            pass


def _safe_parts(name: str, top: str) -> list[str]:
    if name.startswith("/"):
        raise UnsafeArchiveError(f"refusing archive member with an absolute path: {name!r}")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise UnsafeArchiveError(f"refusing archive member with '..': {name!r}")
    if not parts or parts[0] != top:
        raise UnsafeArchiveError(f"refusing archive member outside {top!r}: {name!r}")
    return parts


def _inside(root: str, member_parts: list[str], link: str) -> bool:
    """Would a symlink at member_parts, pointing at `link`, stay inside root?"""
    if link.startswith("/"):
        return False
    base = posixpath.join(*member_parts[:-1]) if len(member_parts) > 1 else ""
    target = posixpath.normpath(posixpath.join(base, link))
    return target == root or target.startswith(root + "/")


def _no_symlink_on_path(root: Path, parts: list[str]) -> Path:
    """The path for `parts` under root, refusing to pass through any symlink."""
    here = root
    for p in parts[:-1]:
        here = here / p
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISLNK(os.lstat(here).st_mode):
                raise UnsafeArchiveError(f"refusing to write through the symlink {'/'.join(parts)!r}")
    final = here / parts[-1]
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISLNK(os.lstat(final).st_mode):
            raise UnsafeArchiveError(f"refusing to overwrite the symlink {'/'.join(parts)!r}")
    return final


def extract_stream(stream: BinaryIO, staging: Path, top: str) -> dict[str, Digest]:
    """Extract a tar stream into `staging`, refusing anything unsafe; digests per file.

    Pure of any network: fed by copy_out, and by tests with crafted archives.
    """
    digests: dict[str, Digest] = {}
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                parts = _safe_parts(member.name, top)
                rel = "/".join(parts)
                dest = _no_symlink_on_path(staging, parts)
                if member.isdir():
                    dest.mkdir(parents=True, exist_ok=True)
                    continue
                dest.parent.mkdir(parents=True, exist_ok=True)
                if member.isreg():
                    fh = tar.extractfile(member)
                    assert fh is not None
                    h = hashlib.sha256()
                    size = 0
                    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
                    with os.fdopen(fd, "wb") as out:
                        while chunk := fh.read(CHUNK):
                            out.write(chunk)
                            h.update(chunk)
                            size += len(chunk)
                    os.chmod(dest, (member.mode & 0o777) | 0o600)
                    digests[rel] = Digest(size=size, sha256=h.hexdigest())
                elif member.issym():
                    if not _inside(top, parts, member.linkname):
                        raise UnsafeArchiveError(f"refusing symlink {rel!r} -> {member.linkname!r}: it points outside the destination")
                    os.symlink(member.linkname, dest)
                elif member.islnk():
                    target_parts = _safe_parts(member.linkname, top)
                    target_rel = "/".join(target_parts)
                    if target_rel not in digests:
                        raise UnsafeArchiveError(f"refusing hard link {rel!r} -> {member.linkname!r}: not a file of this archive")
                    shutil.copyfile(_no_symlink_on_path(staging, target_parts), dest)
                    digests[rel] = Digest(digests[target_rel].size, digests[target_rel].sha256)
                else:
                    kind = "device" if (member.ischr() or member.isblk()) else "FIFO" if member.isfifo() else "special file"
                    raise UnsafeArchiveError(f"refusing {kind} {rel!r} in the archive")
    except tarfile.TarError as e:
        raise RemoteCommandError(f"the archive from the pod is damaged or incomplete: {e}") from None
    return digests


def copy_out(kube: Kube, ns: str, pod: str, src: str, dst: Path, *, container: str | None = None, progress: Progress | None = None) -> CopyResult:
    """Copy a file or folder from the pod to `dst` here (into it, when it is a folder)."""
    start = time.monotonic()
    clean = src.rstrip("/") or "/"
    parent, name = posixpath.split(clean)
    if not name:
        raise UsageError("cannot copy the pod's root folder")
    final = dst / name if dst.is_dir() else dst
    if not final.parent.is_dir():
        raise UsageError(f"local folder {final.parent} does not exist")
    from concurrent.futures import ThreadPoolExecutor

    try:
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=final.parent))
    except OSError as e:
        raise UsageError(f"cannot write to {final.parent}: {e.strerror}") from None
    # The pod checksums its files on a second exec while the tar stream comes in.
    pool = ThreadPoolExecutor(max_workers=1)
    remote_f = pool.submit(remote_digests, kube, ns, pod, clean, container=container)
    try:
        session = kube.exec(ns, pod, ["tar", "-cf", "-", "-C", parent or "/", name], container=container)
        reader = _FrameReader(session, progress)
        try:
            try:
                local = extract_stream(io.BufferedReader(reader, CHUNK), staging, name)
            except OSError as e:
                if e.errno == 28:
                    raise RemoteCommandError(f"no space left on this machine while copying to {final}") from None
                raise
            except RemoteCommandError:
                first = remote_f.exception()
                if first is not None and not isinstance(first, UnsafeArchiveError):
                    raise first from None  # e.g. no such file: say that, not "damaged archive"
                raise
            reader.drain()
        finally:
            session.close()
        remote = remote_f.result()  # a missing source is reported from here, first
        code = session.returncode()
        if code is None:
            raise ClusterError(f"the exec stream dropped while copying {src} from pod {pod}", hint="Nothing was written; try again.")
        if code != 0:
            msg = reader.stderr.decode("utf-8", "replace").strip()
            raise RemoteCommandError(f"tar in pod {pod} failed: {msg or f'exit {code}'}", returncode=code)
        _compare(local, remote, f"{pod}:{src} -> {final}")
        placed = staging / name
        if final.is_dir() and not placed.is_dir():
            raise UsageError(f"{final} is a folder; cannot replace it with a file")
        if final.is_dir():
            shutil.rmtree(final)
        os.replace(placed, final)
    finally:
        pool.shutdown(wait=True)
        shutil.rmtree(staging, ignore_errors=True)
    return CopyResult(
        direction="out",
        source=f"{pod}:{src}",
        destination=str(final),
        files=len(local),
        bytes=sum(d.size for d in local.values()),
        seconds=round(time.monotonic() - start, 3),
        verified=True,
        digests={k: v.sha256 for k, v in local.items()},
    )

