"""Copying files into and out of the lab pod: tar over exec, streamed, verified, safe.

- Streamed in chunks both ways: memory stays flat whatever the size.
- Verified: size and sha256 of every file, computed here while streaming and in the pod;
  a mismatch is an error. In the pod, `podtar.py` runs under python3 and hashes each file
  as it writes it (copy in) or streams it out (copy out): one pass over the data and one
  exec each way. Without python3 in the pod, plain `tar` and then `sha256sum` do it.
- Atomic on both ends: files land in a hidden staging folder beside the destination and
  are renamed into place only when whole; an interrupted copy leaves no partial file
  under the final name.
- What comes back from a pod is untrusted: archive members with absolute paths, `..`,
  links leading outside the destination, devices and FIFOs are refused, and nothing is
  written through a symlink. (kubectl cp had five CVEs of exactly this kind.)
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from nsightlab.analysis.labpod import CopyResult
from nsightlab.cluster import podtar
from nsightlab.cluster.kube import STDIN_FRAME
from nsightlab.errors import ClusterError, RemoteCommandError, UsageError

if TYPE_CHECKING:
    from nsightlab.cluster.kube import ExecSession, Kube

CHUNK = 256 * 1024
STAGING_PREFIX = ".nsightlab-copy-"

Progress = Callable[[int], None]

# Both scripts read podtar.py's source from stdin first (its length on a line, then the
# text; it does not fit in an exec URL), then run it under python3, isolated and without
# site-packages (-I -S: it needs the standard library only, and nothing in the pod's
# environment should change it). Without python3, or with one older than 3.8, they skip
# it, and tar makes or unpacks the archive and sha256sum the digests, printed as podtar
# prints them.
_DIGESTS_SH = r"""
read -r agent_len
agent() {  # podtar.py under python3 >= 3.8; an older one exits 99 before reading stdin
  python3 -I -S -c 'import sys
if sys.version_info < (3, 8): sys.exit(99)
n = int(sys.argv.pop(1)); exec(compile(sys.stdin.buffer.read(n), "podtar.py", "exec"), {"__name__": "__main__"})' "$agent_len" "$@"
  rc=$?; [ "$rc" = 99 ] || exit "$rc"
}
skip_agent() { dd bs=1 count="$agent_len" of=/dev/null 2>/dev/null; }
digests() {  # regular files under $1/$2: "=S size path" and "=H sha256  path"
  ( cd "$1" && find "$2" -type f -exec stat -c '=S %s %n' {} + && find "$2" -type f -exec sha256sum {} + | sed 's/^/=H /' )
}
need_verify() {
  command -v sha256sum >/dev/null 2>&1 && command -v stat >/dev/null 2>&1 ||
    { echo "neither python3 nor sha256sum in the pod: cannot verify the copy" >&2; exit 45; }
}
"""

# stdin: the agent, then a tar of $1; put it at $2 (into $2 when that is a folder;
# $3=1: it must be one).
_UNPACK_SH = _DIGESTS_SH + r"""
name="$1"; dst="$2"; want_dir="$3"
if command -v python3 >/dev/null 2>&1; then agent unpack "$name" "$dst" "$want_dir"; fi
skip_agent
need_verify
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
digests "$(dirname "$final")" "$(basename "$final")"
"""

# stdin: the agent. stdout: a tar of $1/$2; stderr at the end: the digests.
_PACK_SH = _DIGESTS_SH + r"""
parent="$1"; name="$2"
cd "$parent" 2>/dev/null || { echo "no such directory: $parent" >&2; exit 44; }
[ -e "$name" ] || [ -L "$name" ] || { echo "no such file or directory: $parent/$name" >&2; exit 44; }
if command -v python3 >/dev/null 2>&1; then agent pack . "$name"; fi
skip_agent
need_verify
tar -cf - "$name" || exit $?
digests . "$name" >&2
"""


def _agent() -> bytes:
    """What the scripts above read first from stdin: podtar.py's length and source."""
    with open(podtar.__file__, "rb") as fh:
        source = fh.read()
    return b"%d\n" % len(source) + source


class UnsafeArchiveError(RemoteCommandError):
    """The archive from the pod tried to write outside its destination."""


@dataclass
class Digest:
    size: int = 0
    sha256: str = ""


# ---------------------------------------------------------------------------- helpers


def parse_remote(spec: str) -> str | None:
    """`:PATH` (scp style) is a path in the pod; anything else is local."""
    return spec[1:] if spec.startswith(":") else None


def parse_digests(text: str) -> dict[str, Digest]:
    """The pod's "=S size path" and "=H sha256  path" lines (other lines are ignored)."""
    digests: dict[str, Digest] = {}
    for line in text.splitlines():
        if line.startswith("=S "):
            _, size, rel = line.split(" ", 2)
            digests.setdefault(rel, Digest()).size = int(size)
        elif line.startswith("=H ") and "  " in line:
            sha, rel = line[3:].split("  ", 1)
            digests.setdefault(rel, Digest()).sha256 = sha.lstrip("\\")
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


SEND_CHUNK = 16 * STDIN_FRAME  # bytes of a file read at a time: 16 whole stdin frames (~1 MiB)


def _read_ahead(src: str, h: Any, depth: int = 4) -> Iterator[bytes]:
    """The file's chunks, read and hashed on a second thread (both release the GIL)
    while the caller masks and sends the previous ones; at most `depth` chunks wait."""
    import queue
    import threading

    chunks: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            with open(src, "rb") as fh:
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


def _read_into(path: str) -> Iterator[memoryview]:
    """The file's chunks as views of one reused buffer: no allocation per chunk."""
    buf = bytearray(SEND_CHUNK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(buf):
            yield view[:n]


class Hashing:
    """The size and sha256 of every file under a local path, worked out on a daemon
    thread (hashlib and file reads release the GIL: this runs beside start-up's imports
    and the connection, on another core). Keyed by path relative to the path's parent."""

    def __init__(self, src: Path) -> None:
        import threading

        self._src = src
        self._done = threading.Event()
        self._result: dict[str, tuple[int, str]] = {}
        self._error: BaseException | None = None
        threading.Thread(target=self._run, daemon=True, name="nsightlab-hash").start()

    def _run(self) -> None:
        try:
            podtar.pack(str(self._src), self._src.resolve().name, lambda _: None, self._result)
        except BaseException as e:  # reported by result(); the copy itself says what failed
            self._error = e
        finally:
            self._done.set()

    def result(self) -> dict[str, tuple[int, str]] | None:
        """The digests, or None when hashing failed."""
        self._done.wait()
        return None if self._error is not None else self._result


def _send_tar(session: ExecSession, src: Path, member: str, progress: Progress | None, hashed: Hashing | None = None) -> dict[str, Digest]:
    """Write the tar stream of `src` (stored as `member`) straight into stdin frames:
    file contents in 1 MiB frames, read (and hashed, unless `hashed` has done it) on a
    second thread. A file that changes after it was hashed fails the verification."""
    done = 0

    def chunks(path: str, h: Any) -> Iterator[bytes | memoryview]:
        # already hashed: read here, into one reused buffer (each chunk is masked into
        # the frames before the next is read); else read and hash on a second thread
        nonlocal done
        for chunk in _read_ahead(path, h) if hashed is None else _read_into(path):
            done += len(chunk)
            yield chunk
            if progress:
                progress(done)

    digests: dict[str, tuple[int, str]] = {}
    try:
        sent = podtar.pack(str(src), member, session.write_stdin, digests, chunks)
    except podtar.Changed as e:
        raise UsageError(str(e)) from None
    session.write_stdin(podtar.end_of_archive(sent))
    if hashed is not None:
        known = hashed.result()
        if known is None:
            raise UsageError(f"cannot read {src} to checksum it")
        if {rel: size for rel, (size, _) in known.items()} != {rel: size for rel, (size, _) in digests.items()}:
            raise UsageError(f"{src} changed while it was being copied")
        digests = known
    return {rel: Digest(size, sha) for rel, (size, sha) in digests.items()}


def copy_in(
    kube: Kube, ns: str, pod: str, src: Path, dst: str, *, container: str | None = None, progress: Progress | None = None, hashed: Hashing | None = None
) -> CopyResult:
    """Copy a local file or folder to `dst` in the pod (scp semantics for a trailing /)."""
    if not src.exists() and not src.is_symlink():
        raise UsageError(f"local source {src} does not exist")
    start = time.monotonic()
    if not dst:
        raise UsageError("give a path in the pod, e.g. :/tmp/")
    # The archive holds src under its own name; the pod moves it to its final place
    # (into dst when dst is a folder, else renamed to dst).
    want_dir = "1" if dst.endswith("/") else "0"
    target = dst.rstrip("/") or "/"
    member = src.resolve().name
    session = kube.exec(ns, pod, ["sh", "-c", _UNPACK_SH, "nsightlab", member, target, want_dir], container=container, stdin=True)
    local: dict[str, Digest] = {}
    out, err = bytearray(), bytearray()
    try:
        try:
            session.write_stdin(_agent())
            local = _send_tar(session, src, member, progress, hashed)
        except ClusterError:
            pass  # the remote side stopped reading; its stderr says why
        except OSError as e:
            raise UsageError(f"cannot read {src}: {e.strerror or e}") from None
        session.close_stdin()
        while (frame := session.read()) is not None:
            (out if frame[0] == 1 else err).extend(frame[1])
    finally:
        session.close()
    code = session.returncode()
    message = err.decode("utf-8", "replace").strip()
    if code is None:
        raise ClusterError(f"the exec stream dropped while copying {src} to pod {pod}", hint="Nothing was put in place; try again.")
    if code == podtar.E_NODIR:
        raise RemoteCommandError(f"{message} (in pod {pod})", returncode=code, hint="Create it first, e.g. `nsightlab shell -- mkdir -p DIR`.")
    if code != 0:
        if "No space left" in message:
            raise RemoteCommandError(f"no space left in the pod while copying to {dst}", returncode=code)
        raise RemoteCommandError(f"copy to pod {pod}:{dst} failed: {message or f'exit {code}'}", returncode=code)
    text = out.decode("utf-8", "replace")
    # the pod says whether dst was a folder (src went into it) or the new name
    placed = next((line for line in text.splitlines() if line in ("into", "as")), "as")
    final = posixpath.join(target, member) if placed == "into" else target
    remote = parse_digests(text)
    _compare({_rebase(k, member, posixpath.basename(final)): v for k, v in local.items()}, remote, f"{src} -> {final}")
    return CopyResult(
        direction="in",
        source=str(src),
        destination=final,
        files=len(local),
        bytes=sum(d.size for d in local.values()),
        seconds=round(time.monotonic() - start, 3),
        verified=True,
        digests={k: v.sha256 for k, v in remote.items()},
    )


def _rebase(rel: str, old_top: str, new_top: str) -> str:
    return new_top + rel[len(old_top) :] if rel == old_top or rel.startswith(old_top + "/") else rel


# ---------------------------------------------------------------------------- copy out


def _inside(root: str, member_parts: list[str], link: str) -> bool:
    """Would a symlink at member_parts, pointing at `link`, stay inside root?"""
    return bool(podtar.inside(root, member_parts, link))


def _extract(source: Callable[[], bytes | memoryview], staging: Path, top: str) -> dict[str, Digest]:
    try:
        found = podtar.extract(source, str(staging), top)
    except podtar.Unsafe as e:
        raise UnsafeArchiveError(str(e)) from None
    except podtar.Damaged as e:
        raise RemoteCommandError(f"the archive from the pod is damaged or incomplete: {e}") from None
    return {rel: Digest(size, sha) for rel, (size, sha) in found.items()}


def extract_stream(stream: BinaryIO, staging: Path, top: str) -> dict[str, Digest]:
    """Extract a tar stream into `staging`, refusing anything unsafe; digests per file.

    Pure of any network: for tests with crafted archives (copy_out feeds frames).
    """
    return _extract(lambda: stream.read(CHUNK), staging, top)


class _Stdout:
    """The stdout frames of an exec, one at a time; stderr kept (its last 64 KiB)."""

    def __init__(self, session: ExecSession, progress: Progress | None) -> None:
        self._session = session
        self._progress = progress
        self.stderr = bytearray()
        self.total = 0

    def __call__(self) -> bytes | memoryview:
        while (frame := self._session.read_view()) is not None:
            channel, data = frame
            if channel == 1:
                self.total += len(data)
                if self._progress:
                    self._progress(self.total)
                return data
            self.stderr.extend(data)
            del self.stderr[:-65536]
        return b""

    def drain(self) -> None:
        while self():
            pass


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
    try:
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=final.parent))
    except OSError as e:
        raise UsageError(f"cannot write to {final.parent}: {e.strerror}") from None
    try:
        session = kube.exec(ns, pod, ["sh", "-c", _PACK_SH, "nsightlab", parent or "/", name], container=container, stdin=True)
        stdout = _Stdout(session, progress)
        failure: RemoteCommandError | None = None
        try:
            try:
                session.write_stdin(_agent())
                session.close_stdin()
                local = _extract(stdout, staging, name)
            except OSError as e:
                if e.errno == 28:
                    raise RemoteCommandError(f"no space left on this machine while copying to {final}") from None
                raise
            except RemoteCommandError as e:
                failure = e  # unless the pod says why (e.g. no such file), this is the error
            stdout.drain()
        finally:
            session.close()
        code = session.returncode()
        message = stdout.stderr.decode("utf-8", "replace")
        if code is None:
            raise ClusterError(f"the exec stream dropped while copying {src} from pod {pod}", hint="Nothing was written; try again.")
        if code == podtar.E_MISSING:
            raise RemoteCommandError(f"{message.strip() or 'no such file'} (in pod {pod})", returncode=code)
        if failure is not None and (isinstance(failure, UnsafeArchiveError) or code == 0):
            raise failure
        if code != 0:
            detail = "\n".join(line for line in message.splitlines() if not line.startswith(("=S ", "=H "))).strip()
            raise RemoteCommandError(f"copying {src} out of pod {pod} failed: {detail or f'exit {code}'}", returncode=code)
        _compare(local, parse_digests(message), f"{pod}:{src} -> {final}")
        placed = staging / name
        if final.is_dir() and not placed.is_dir():
            raise UsageError(f"{final} is a folder; cannot replace it with a file")
        if final.is_dir():
            shutil.rmtree(final)
        os.replace(placed, final)
    finally:
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
