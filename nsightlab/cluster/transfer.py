"""Copying files into and out of the lab pod: tar over exec, streamed, verified, safe.

- Streamed in chunks both ways: memory stays flat whatever the size.
- Verified: size and sha256 of every file, computed here while streaming and in the pod;
  a mismatch is an error. In the pod, `podtar.py` runs under python3 and hashes each file
  as it writes it (copy in) or streams it out (copy out): one pass over the data and one
  exec each way. Without python3 in the pod, plain `tar` and then `sha256sum` do it. The
  digests come back as NUL-framed records, so any file name comes through whole.
- Placed as scp does, with one rule both ways (podtar's `merge_plan`): into an existing
  folder, merging; a file the copy brings replaces the file of the same path, and
  nothing else is deleted; a file/folder clash is refused (exit 2) before anything
  moves. A trailing slash on the destination means a folder, which must exist.
- Atomic per file: files land in a hidden staging folder beside the destination and are
  renamed into place only once whole (here: once verified); an interrupted or failed
  copy leaves no partial file under a final name, and Ctrl-C says what was placed.
- What comes back from a pod is untrusted: podtar's reader refuses absolute paths,
  `..`, links that could lead out (followed or chained), hard links to anything but
  an earlier file of the archive, writing through a link, devices, FIFOs, sparse files,
  duplicates and malformed headers. (kubectl cp had five CVEs of exactly this kind.)
- Names in every message are shown escaped when they hold control characters.
- A pod path without a leading `/` is in the pod's working folder, both ways: the
  container's working directory (its `workingDir`, else the image's WORKDIR, else `/`),
  where every exec starts, as with kubectl cp. Both scripts run there and are given
  such a path as it is, never with a `/` put in front.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import queue
import shlex
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from nsightlab.cluster import podtar
from nsightlab.cluster.execstream import STDIN_FRAME
from nsightlab.cluster.podtar import shown as shown  # (used by the copy command too)
from nsightlab.cluster.records import Digest, Spool, Verification
from nsightlab.errors import ClusterError, Interrupted, RemoteCommandError, UsageError
from nsightlab.k8s.labpod import CopyResult

if TYPE_CHECKING:
    from nsightlab.cluster.execstream import ExecSession
    from nsightlab.cluster.kube import Kube

CHUNK = 256 * 1024
STAGING_PREFIX = ".nsightlab-copy-"

Progress = Callable[[int], None]

# Both scripts read podtar.py's source from stdin first (its length on a line, then the
# text; it does not fit in an exec URL), then run it under python3, isolated and without
# site-packages (-I -S: it needs the standard library only, and nothing in the pod's
# environment should change it). Without python3, or with one older than 3.8, they skip
# it, and tar makes or unpacks the archive and sha256sum the digests, written as podtar
# writes them: NUL-framed records (`D size sha256 path`), whatever the names hold.
_DIGESTS_SH = r"""
read -r agent_len
agent() {  # podtar.py under python3 >= 3.8; an older one exits 99 before reading stdin
  python3 -I -S -c 'import sys
if sys.version_info < (3, 8): sys.exit(99)
n = int(sys.argv.pop(1)); exec(compile(sys.stdin.buffer.read(n), "podtar.py", "exec"), {"__name__": "__main__"})' "$agent_len" "$@"
  rc=$?; [ "$rc" = 99 ] || exit "$rc"
}
skip_agent() { dd bs=1 count="$agent_len" of=/dev/null 2>/dev/null; }
digests() {  # regular files under $1/$2: a record "D size sha256 path" each
  ( cd "$1" && find "$2" -type f -exec sh -c 'for f; do
      s=$(wc -c < "$f") && h=$(sha256sum < "$f") || exit 1
      printf "\0D\t%s\t%s\t%s\0" "${s##* }" "${h%% *}" "$f"
    done' sh {} + )
}
need_verify() {
  command -v sha256sum >/dev/null 2>&1 ||
    { echo "neither python3 nor sha256sum in the pod: cannot verify the copy" >&2; exit 45; }
}
"""  # noqa: E501

# stdin: the agent, then a tar of $1; put it at $2 (into $2 when that is a folder;
# $3=1: it must be one), merging into what is there by podtar's rule: every clash is
# looked for before anything moves, then folders are made and files renamed into place.
_UNPACK_SH = (
    _DIGESTS_SH
    + r"""
name="$1"; dst="$2"; want_dir="$3"
if command -v python3 >/dev/null 2>&1; then agent unpack "$name" "$dst" "$want_dir"; fi
skip_agent
need_verify
if [ -d "$dst" ]; then parent="$dst"; final="$dst/$name"; where=into
elif [ "$want_dir" = 1 ]; then echo "no such directory: $dst" >&2; exit 46
else parent="$(dirname "$dst")"; final="$dst"; where=as
  [ -d "$parent" ] || { echo "no such directory: $parent" >&2; exit 46; }
fi
tmp="$(mktemp -d "$parent/.nsightlab-copy-XXXXXX")" || { echo "cannot write to $parent" >&2; exit 47; }
trap 'rm -rf "$tmp"' EXIT
trap 'exit 129' HUP INT TERM
tar -xmf - -C "$tmp" || exit 48
clashes='staged=$1; final=$2; shift 2
for p; do f="$final${p#"$staged"}"
  if [ -d "$p" ] && [ ! -h "$p" ]; then
    if [ -h "$f" ]; then echo "$f is a symlink and the copy brings a folder of that name; nothing is written through a link"; exit 1; fi
    if [ -e "$f" ] && [ ! -d "$f" ]; then echo "$f is a file and the copy brings a folder of that name"; exit 1; fi
  elif [ -d "$f" ]; then echo "$f is a folder and the copy brings a file of that name"; exit 1
  fi
done'
merge='staged=$1; final=$2; shift 2
for p; do f="$final${p#"$staged"}"
  if [ -d "$p" ] && [ ! -h "$p" ]; then [ -d "$f" ] || mkdir "$f" || { echo failed; exit 1; }
  else mv -f "$p" "$f" || { echo failed; exit 1; }
  fi
done'
if [ -e "$final" ] || [ -h "$final" ]; then
  clash="$(find "$tmp/$name" -exec sh -c "$clashes" sh "$tmp/$name" "$final" {} +)"
  [ -z "$clash" ] || { printf '%s; nothing was changed\n' "$clash" >&2; exit 50; }
fi
digests "$tmp" "$name"
trap '' HUP INT TERM  # renames only from here: not to be cut short
if [ -e "$final" ] || [ -h "$final" ]; then
  failed="$(find "$tmp/$name" -exec sh -c "$merge" sh "$tmp/$name" "$final" {} +)"
  [ -z "$failed" ] || exit 49
else mv "$tmp/$name" "$final" || exit 49
fi
printf '\0P\t%s\0' "$where"
"""  # noqa: E501
)

# stdin: the agent. stdout: a tar of $1/$2; stderr at the end: the digests. A relative
# $1 is in the pod's working folder, where the exec starts (see copy_out).
_PACK_SH = (
    _DIGESTS_SH
    + r"""
parent="$1"; name="$2"
case "$parent" in
  /) path="/$name"; here= ;;
  /*) path="$parent/$name"; here= ;;
  .) path="$name"; here=" in the pod's working folder $(pwd)" ;;
  *) path="$parent/$name"; here=" in the pod's working folder $(pwd)" ;;
esac
cd "$parent" 2>/dev/null || { echo "no such directory: $parent$here" >&2; exit 44; }
[ -e "$name" ] || [ -L "$name" ] || { echo "no such file or directory: $path$here" >&2; exit 44; }
if command -v python3 >/dev/null 2>&1; then agent pack . "$name"; fi
skip_agent
need_verify
tar -cf - "$name" || exit $?
digests . "$name" >&2
"""
)


def _agent() -> bytes:
    """What the scripts above read first from stdin: podtar.py's length and source."""
    with open(podtar.__file__, "rb") as fh:
        source = fh.read()
    return b"%d\n" % len(source) + source


class UnsafeArchiveError(RemoteCommandError):
    """The archive from the pod tried to write outside its destination."""


# ---------------------------------------------------------------------------- helpers


def parse_remote(spec: str) -> str | None:
    """`:PATH` (scp style) is a path in the pod; anything else is local."""
    return spec[1:] if spec.startswith(":") else None


def parse_digests(data: bytes | str) -> dict[str, Digest]:
    """The pod's digest records, "D size sha256 path" (anything else is ignored)."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    digests: dict[str, Digest] = {}
    for fields in podtar.read_records(raw)[0]:
        if len(fields) == 4 and fields[0] == "D" and fields[1].isdigit():
            digests[fields[3]] = Digest(int(fields[1]), fields[2])
    return digests


def _names(rels: list[str]) -> str:
    return ", ".join(shown(r) for r in rels[:3]) + (f" and {len(rels) - 3} more" if len(rels) > 3 else "")


# ---------------------------------------------------------------------------- copy in


SEND_CHUNK = 16 * STDIN_FRAME  # bytes of a file read at a time: 16 whole stdin frames (~1 MiB)


def _read_ahead(src: str, h: Any, depth: int = 4) -> Iterator[bytes]:
    """The file's chunks, read and hashed on a second thread (both release the GIL)
    while the caller masks and sends the previous ones; at most `depth` chunks wait."""

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


class _Stopped(Exception):
    """Ctrl-C was pressed while sending; raised where the stream can stop whole."""


class _CtrlC:
    """While a copy in sends its archive (`deferring`), Ctrl-C is noted and acted on
    before the next write (`check`), so that the stream is never cut inside a frame and
    the pod can be told where it ends; a second Ctrl-C, or one at any other time,
    interrupts at once. (Main thread only: elsewhere Ctrl-C is left as it is.)"""

    def __init__(self) -> None:
        self.deferring = False
        self.pressed = False
        self._previous: Any = None

    def __enter__(self) -> _CtrlC:

        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def _on_sigint(self, signum: int, frame: Any) -> None:
        if self.pressed or not self.deferring:
            raise KeyboardInterrupt
        self.pressed = True

    def check(self) -> None:
        if self.pressed:
            raise _Stopped

    def __exit__(self, *exc: object) -> None:

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def _wind_down(session: ExecSession, seconds: float = 2.0) -> None:
    """Close the pod's stdin and give its side a moment to end by itself."""
    deadline = time.monotonic() + seconds
    with contextlib.suppress(TimeoutError, ClusterError):
        session.close_stdin()
        while (left := deadline - time.monotonic()) > 0 and session.read(timeout=left) is not None:
            pass


def _send_tar(
    session: ExecSession,
    src: Path,
    member: str,
    progress: Progress | None,
    hashed: Hashing | None = None,
    ctrl_c: _CtrlC | None = None,
) -> tuple[dict[str, Digest], int]:
    """Write the tar members of `src` (stored as `member`) straight into stdin frames:
    file contents in 1 MiB frames, read (and hashed, unless `hashed` has done it) on a
    second thread. A file that changes after it was hashed fails the verification.
    Returns the digests and the bytes sent; the end-of-archive block is the caller's
    (the pod places nothing without it)."""
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

    def emit(data: bytes | memoryview) -> None:
        if ctrl_c is not None:
            ctrl_c.check()
        session.write_stdin(data)

    digests: dict[str, tuple[int, str]] = {}
    try:
        sent = podtar.pack(str(src), member, emit, digests, chunks)
    except podtar.Changed as e:
        raise UsageError(str(e)) from None
    if hashed is not None:
        known = hashed.result()
        if known is None:
            raise UsageError(f"cannot read {shown(str(src))} to checksum it")
        if {rel: size for rel, (size, _) in known.items()} != {rel: size for rel, (size, _) in digests.items()}:
            raise UsageError(f"{shown(str(src))} changed while it was being copied")
        digests = known
    return {rel: Digest(size, sha) for rel, (size, sha) in digests.items()}, sent


def copy_in(
    kube: Kube,
    ns: str,
    pod: str,
    src: Path,
    dst: str,
    *,
    container: str | None = None,
    progress: Progress | None = None,
    hashed: Hashing | None = None,
) -> CopyResult:
    """Copy a local file or folder to `dst` in the pod (scp semantics for a trailing /),
    merging into a folder that is there (see the module's docstring)."""
    if not src.exists() and not src.is_symlink():
        raise UsageError(f"local source {shown(str(src))} does not exist")
    start = time.monotonic()
    if not dst:
        raise UsageError("give a path in the pod, e.g. :/tmp/")
    # The archive holds src under its own name; the pod moves it to its final place
    # (into dst when dst is a folder, else renamed to dst).
    want_dir = "1" if dst.endswith("/") else "0"
    target = dst.rstrip("/") or "/"
    member = src.resolve().name
    where = f"pod {pod}:{shown(dst)}"
    sent_all = False  # once the end-of-archive block is sent, the pod may place the copy
    local: dict[str, Digest] = {}
    out, err = Spool(), Spool()  # the pod's records and words, whole, however many files
    with _CtrlC() as ctrl_c:
        try:
            session = kube.exec(
                ns,
                pod,
                ["sh", "-c", _UNPACK_SH, "nsightlab", member, target, want_dir],
                container=container,
                stdin=True,
            )
            try:
                try:
                    ctrl_c.deferring = True
                    session.write_stdin(_agent())
                    local, sent = _send_tar(session, src, member, progress, hashed, ctrl_c)
                    ctrl_c.check()
                    sent_all = True
                    session.write_stdin(podtar.end_of_archive(sent))
                except ClusterError:
                    pass  # the remote side stopped reading; its stderr says why
                except OSError as e:
                    raise UsageError(f"cannot read {shown(str(e.filename or src))}: {e.strerror or e}") from None
                except _Stopped:
                    # at a frame boundary: the stream is whole, so the pod can be told that
                    # it ends here, without its end block: it places nothing and removes its
                    # staging folder (given a moment; a second Ctrl-C does not wait)
                    _wind_down(session)
                    raise KeyboardInterrupt from None
                ctrl_c.deferring = False  # from here Ctrl-C interrupts at once
                session.close_stdin()
                while (frame := session.read()) is not None:
                    (out if frame[0] == 1 else err).write(frame[1])
            finally:
                session.close()
        except KeyboardInterrupt:
            if sent_all:
                raise Interrupted(
                    f"interrupted after the whole copy was sent: {where} may hold it, not verified",
                    hint="Copy it again to have it verified.",
                ) from None
            raise Interrupted(f"interrupted: nothing was placed in {where}") from None
    code = session.returncode()
    message = err.text()
    if code is None:
        hint = "It may have been placed, not verified; copy it again." if sent_all else "Nothing was placed; try again."
        raise ClusterError(f"the exec stream dropped while copying {shown(str(src))} to {where}", hint=hint)
    if code == podtar.E_NODIR:
        folder = target if want_dir == "1" else posixpath.dirname(target) or "."
        make = f"nsightlab shell {kube.ctx.cli_args} -- mkdir -p {shlex.quote(folder)}"
        raise RemoteCommandError(
            f"{message} (in pod {pod})", returncode=code, hint=f"Create it first: `{make}`, then copy again."
        )
    if code == podtar.E_CLASH:
        raise UsageError(
            f"cannot copy {shown(str(src))} to {where}: {message} (in pod {pod})",
            hint="Move it away, or copy to another folder.",
        )
    if code != 0:
        if "No space left" in message:
            raise RemoteCommandError(f"no space left in the pod while copying to {shown(dst)}", returncode=code)
        raise RemoteCommandError(f"copy to {where} failed: {message or f'exit {code}'}", returncode=code)
    # the pod says whether dst was a folder (src went into it) or the new name
    verified = Verification(local).read(out)
    placed = next((f[1] for f in verified.others if f[0] == "P" and len(f) == 2), "as")
    final = posixpath.join(target, member) if placed == "into" else target
    verified.check(f"{shown(str(src))} -> {shown(final)}", "It was placed in the pod; copy it again.")
    top = posixpath.basename(final)
    return CopyResult(
        direction="in",
        source=str(src),
        destination=final,
        files=len(local),
        bytes=sum(d.size for d in local.values()),
        seconds=round(time.monotonic() - start, 3),
        verified=True,
        digests={_rebase(k, member, top): v.sha256 for k, v in local.items()},
    )


def _rebase(rel: str, old_top: str, new_top: str) -> str:
    return new_top + rel[len(old_top) :] if rel == old_top or rel.startswith(old_top + "/") else rel


# ---------------------------------------------------------------------------- copy out


def _extract(source: Callable[[], bytes | memoryview], staging: Path, top: str) -> dict[str, Digest]:
    try:
        found = podtar.extract(source, str(staging), top)
    except podtar.Unsafe as e:
        raise UnsafeArchiveError(str(e)) from None
    except podtar.Damaged as e:
        raise RemoteCommandError(f"the archive from the pod is damaged or incomplete: {e}") from None
    except OSError as e:
        if e.errno == 28:
            raise
        raise RemoteCommandError(
            f"cannot write {shown(os.path.basename(str(e.filename or '')))} here: {e.strerror or e}"
        ) from None
    return {rel: Digest(size, sha) for rel, (size, sha) in found.items()}


def extract_stream(stream: BinaryIO, staging: Path, top: str) -> dict[str, Digest]:
    """Extract a tar stream into `staging`, refusing anything unsafe; digests per file.

    Pure of any network: for tests with crafted archives (copy_out feeds frames).
    """
    return _extract(lambda: stream.read(CHUNK), staging, top)


class _Stdout:
    """The stdout frames of an exec, one at a time; stderr spooled whole (the digests of
    every file ride it: records.Spool)."""

    def __init__(self, session: ExecSession, progress: Progress | None) -> None:
        self._session = session
        self._progress = progress
        self.stderr = Spool()
        self.total = 0

    def __call__(self) -> bytes | memoryview:
        while (frame := self._session.read_view()) is not None:
            channel, data = frame
            if channel == 1:
                self.total += len(data)
                if self._progress:
                    self._progress(self.total)
                return data
            self.stderr.write(data)
        return b""

    def drain(self) -> None:
        while self():
            pass


def _placed(staged: Path, plan: list[tuple[str, bool]] | None, files: list[str]) -> list[str]:
    """After a placement that stopped half-way: the files of the copy already in place
    (a placed file has left the staging folder)."""
    if plan is None:  # one rename: all or nothing
        return [] if os.path.lexists(staged) else files
    top = staged.name
    return [
        posixpath.join(top, rel) if rel else top
        for rel, is_dir in plan
        if not is_dir and not os.path.lexists(staged / rel if rel else staged)
    ]


def copy_out(
    kube: Kube,
    ns: str,
    pod: str,
    src: str,
    dst: str | Path,
    *,
    container: str | None = None,
    progress: Progress | None = None,
) -> CopyResult:
    """Copy a file or folder from the pod to `dst` here: into it when it is a folder
    (merging into what is there, see the module's docstring), else as that name. A
    `dst` written with a trailing slash must be an existing folder."""
    start = time.monotonic()
    clean = src.rstrip("/") or "/"
    parent, name = posixpath.split(clean)
    if not name:
        raise UsageError("cannot copy the pod's root folder")
    given = str(dst) if isinstance(dst, Path) else dst
    here = Path(given)
    if given.endswith(("/", os.sep)) and not here.is_dir():
        raise UsageError(f"no such folder {shown(given)}; create it first")
    final = here / name if here.is_dir() else here
    if not final.parent.is_dir():
        raise UsageError(f"local folder {shown(str(final.parent))} does not exist")
    try:
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=final.parent))
    except OSError as e:
        raise UsageError(f"cannot write to {shown(str(final.parent))}: {e.strerror}") from None
    staged = staging / name
    plan: list[tuple[str, bool]] | None = None
    placing = False
    local: dict[str, Digest] = {}
    try:
        try:
            local = _fetch(kube, ns, pod, src, parent, name, staging, final, container, progress)
            try:
                plan = podtar.merge_plan(str(staged), str(final))
            except podtar.Clash as e:
                raise UsageError(
                    f"cannot copy {pod}:{shown(src)} here: {e}; nothing was changed",
                    hint="Move it away, or copy to another folder.",
                ) from None
            placing = True
            podtar.place(str(staged), str(final), plan)
        except KeyboardInterrupt:
            if not placing:
                raise Interrupted(f"interrupted: nothing was placed in {shown(str(final))}") from None
            done = _placed(staged, plan, sorted(local))
            raise Interrupted(
                f"interrupted while placing: {len(done)} of {len(local)} files were placed in "
                f"{shown(str(final))} ({_names(done) or 'none'}); the other {len(local) - len(done)} were not",
                hint="Copy it again to finish.",
            ) from None
        except OSError as e:
            if e.errno == 28:
                raise RemoteCommandError(
                    f"no space left on this machine while copying to {shown(str(final))}"
                ) from None
            what = "place" if placing else "write"
            raise RemoteCommandError(f"cannot {what} {shown(str(e.filename or final))}: {e.strerror or e}") from None
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


def _fetch(
    kube: Kube,
    ns: str,
    pod: str,
    src: str,
    parent: str,
    name: str,
    staging: Path,
    final: Path,
    container: str | None,
    progress: Progress | None,
) -> dict[str, Digest]:
    """The pod's `parent/name` extracted into `staging` and verified; its digests."""
    session = kube.exec(
        ns, pod, ["sh", "-c", _PACK_SH, "nsightlab", parent or ".", name], container=container, stdin=True
    )
    stdout = _Stdout(session, progress)
    failure: RemoteCommandError | None = None
    local: dict[str, Digest] = {}
    try:
        session.write_stdin(_agent())
        session.close_stdin()
        try:
            local = _extract(stdout, staging, name)
        except UnsafeArchiveError:
            raise  # whatever else the pod would send is not wanted
        except RemoteCommandError as e:
            failure = e  # unless the pod says why (e.g. no such file), this is the error
        stdout.drain()
    finally:
        session.close()
    code = session.returncode()
    if code is None:
        raise ClusterError(
            f"the exec stream dropped while copying {shown(src)} from pod {pod}", hint="Nothing was placed; try again."
        )
    message = stdout.stderr.text()
    if code == podtar.E_MISSING:
        raise RemoteCommandError(f"{message or 'no such file'} (in pod {pod})", returncode=code)
    if failure is not None and code == 0:
        raise failure
    if code != 0:
        raise RemoteCommandError(
            f"copying {shown(src)} out of pod {pod} failed: {message or f'exit {code}'}", returncode=code
        )
    Verification(local).read(stdout.stderr).check(
        f"{pod}:{shown(src)} -> {shown(str(final))}", "Nothing was placed; try again."
    )
    return local
