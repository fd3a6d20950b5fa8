"""Tar streams for `copy`, on both ends: read safely, write, hash on the way.

This file also runs in the lab pod, as `python3 -c <this file> unpack|pack ...`, so it
uses the standard library only and imports nothing from nsightlab. In the pod it saves a
pass over the data each way: `unpack` hashes each file as it writes it (instead of `tar`
then `sha256sum` reading it back), `pack` hashes each file as it streams it out. Digests
are reported as lines `=S <size> <path>` and `=H <sha256>  <path>`.

The reader refuses members with absolute paths or `..`, members outside the top folder,
links leading outside it, devices and FIFOs, and never writes through a symlink: what
comes back from a pod is untrusted.
"""

from __future__ import annotations

import functools
import hashlib
import os
import posixpath
import stat
import sys
import tarfile
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (annotations only: the pod's python3 may be older than nsightlab's)
    from collections.abc import Callable, Iterator

    Source = Callable[[], "bytes | memoryview"]
    Sink = Callable[[memoryview], None]
    Digests = dict[str, tuple[int, str]]

BLOCK = 512
CHUNK = 1 << 20
# exit codes in the pod (not tar's)
E_MISSING, E_NODIR, E_TMP, E_TAR, E_MOVE = 44, 46, 47, 48, 49


class Unsafe(Exception):
    """An archive member that would land outside its destination."""


class Damaged(Exception):
    """The stream is not a whole, well-formed tar archive."""


class Changed(Exception):
    """A file changed size while it was being packed."""


def safe_parts(name: str, top: str) -> list[str]:
    if name.startswith("/"):
        raise Unsafe(f"refusing archive member with an absolute path: {name!r}")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Unsafe(f"refusing archive member with '..': {name!r}")
    if not parts or parts[0] != top:
        raise Unsafe(f"refusing archive member outside {top!r}: {name!r}")
    return parts


def inside(root: str, parts: list[str], link: str) -> bool:
    """Would a symlink at `parts`, pointing at `link`, stay inside root?"""
    if link.startswith("/"):
        return False
    base = posixpath.join(*parts[:-1]) if len(parts) > 1 else ""
    target = posixpath.normpath(posixpath.join(base, link))
    return target == root or target.startswith(root + "/")


def no_symlink_on_path(root: str, parts: list[str]) -> str:
    """The path for `parts` under root, refusing to pass through any symlink."""
    here = root
    for p in parts[:-1]:
        here = os.path.join(here, p)
        if os.path.islink(here):
            raise Unsafe(f"refusing to write through the symlink {'/'.join(parts)!r}")
    final = os.path.join(here, parts[-1])
    if os.path.islink(final):
        raise Unsafe(f"refusing to overwrite the symlink {'/'.join(parts)!r}")
    return final


class Reader:
    """Members of a tar stream fed by `source()` (bytes; b"" at the end).

    File contents are handed on as views of the chunks as they arrive: no copy, no
    fixed-size record reads.
    """

    def __init__(self, source: Source) -> None:
        self._source = source
        self._chunk = memoryview(b"")
        self._left = 0  # bytes of the current member's data (and padding) not yet read

    def _more(self) -> None:
        data = self._source()
        if not data:
            raise Damaged("unexpected end of data")
        self._chunk = memoryview(data)

    def take(self, n: int) -> bytes:
        parts: list[bytes] = []
        while n:
            if not self._chunk:
                self._more()
            piece = self._chunk[:n]
            self._chunk = self._chunk[len(piece):]
            parts.append(bytes(piece))
            n -= len(piece)
        return b"".join(parts)

    def pipe(self, n: int, sink: Sink) -> None:
        while n:
            if not self._chunk:
                self._more()
            piece = self._chunk[:n]
            self._chunk = self._chunk[len(piece):]
            sink(piece)
            n -= len(piece)

    def _data(self, size: int) -> bytes:
        return self.take(size + (-size % BLOCK))[:size]

    def next(self) -> tarfile.TarInfo | None:
        """The next member as a TarInfo (with the PAX and GNU long names applied), or None
        at the end of the archive."""
        self.pipe(self._left, lambda _: None)
        self._left = 0
        pax: dict[str, str] = {}
        long_name: str | None = None
        long_link: str | None = None
        while True:
            if not self._chunk:
                data = self._source()
                if not data:
                    return None  # no end-of-archive blocks: take the end of data as the end
                self._chunk = memoryview(data)
            block = self.take(BLOCK)
            if block.count(0) == BLOCK:
                return None
            try:
                info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
            except tarfile.HeaderError as e:
                raise Damaged(str(e)) from None
            if info.type == tarfile.GNUTYPE_LONGNAME:
                long_name = self._data(info.size).rstrip(b"\0").decode("utf-8", "surrogateescape")
            elif info.type == tarfile.GNUTYPE_LONGLINK:
                long_link = self._data(info.size).rstrip(b"\0").decode("utf-8", "surrogateescape")
            elif info.type in (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE):
                records = self._pax(self._data(info.size))
                if info.type != tarfile.XGLTYPE:
                    pax.update(records)
            else:
                break
        info.name = pax.get("path", long_name or info.name)
        info.linkname = pax.get("linkpath", long_link or info.linkname)
        if "size" in pax:
            info.size = int(pax["size"])
        if info.type == tarfile.GNUTYPE_SPARSE:
            raise Unsafe(f"refusing sparse file {info.name!r} in the archive")
        has_data = info.type in tarfile.REGULAR_TYPES or info.type not in tarfile.SUPPORTED_TYPES
        self._left = info.size + (-info.size % BLOCK) if has_data else 0
        return info

    @staticmethod
    def _pax(data: bytes) -> dict[str, str]:
        out: dict[str, str] = {}
        pos = 0
        while pos < len(data) and data[pos] != 0:
            space = data.index(b" ", pos)
            length = int(data[pos:space])
            if length <= 0:
                raise Damaged("bad PAX header")
            key, _, value = data[space + 1 : pos + length - 1].partition(b"=")
            out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
            pos += length
        return out

    def content(self, info: tarfile.TarInfo, sink: Sink) -> None:
        """Hand the current regular member's bytes to `sink`, then skip its padding."""
        self.pipe(info.size, sink)
        self.skip_padding(info.size)

    def held(self, n: int) -> memoryview:
        """Up to n bytes of the current member that were read already: the caller reads
        the rest of its `n` bytes from the stream itself, then calls skip_padding."""
        piece = self._chunk[:n]
        self._chunk = self._chunk[len(piece) :]
        return piece

    def skip_padding(self, size: int) -> None:
        """After a member of `size` bytes: skip its padding to a whole block."""
        self.pipe(-size % BLOCK, lambda _: None)
        self._left = 0


def extract(source: Source, staging: str, top: str, *, readinto: Callable[[memoryview], int] | None = None) -> Digests:
    """Extract the tar stream from `source` under `staging`; {path: (size, sha256)} per
    regular file. Refuses anything unsafe (see the module's docstring).

    `readinto` (the stream's own, e.g. a BufferedReader's): file contents are read with it
    into whole 1 MiB buffers, each hashed and written on a second thread while the next
    is read (hashlib and os.write release the GIL). It pays where reading is a plain pipe
    read (in the pod: the pipe brings 64 KiB or less at a time, and a hand-off per read
    cost more than the thread saved); where each chunk is decrypted in small records by
    Python code (the client), the chunks as they come are hashed and written in turn."""
    reader = Reader(source)
    digests: Digests = {}
    while (info := reader.next()) is not None:
        parts = safe_parts(info.name, top)
        rel = "/".join(parts)
        dest = no_symlink_on_path(staging, parts)
        if info.isdir():
            os.makedirs(dest, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if info.isreg():
            h = hashlib.sha256()
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
            try:

                if readinto is not None:
                    _content_threaded(reader, info, fd, h, readinto)
                else:
                    reader.content(info, functools.partial(_hash_write, fd, h))
            finally:
                os.close(fd)
            os.chmod(dest, (info.mode & 0o777) | 0o600)
            digests[rel] = (info.size, h.hexdigest())
        elif info.issym():
            if not inside(top, parts, info.linkname):
                raise Unsafe(f"refusing symlink {rel!r} -> {info.linkname!r}: it points outside the destination")
            os.symlink(info.linkname, dest)
        elif info.islnk():
            target = "/".join(safe_parts(info.linkname, top))
            if target not in digests:
                raise Unsafe(f"refusing hard link {rel!r} -> {info.linkname!r}: not a file of this archive")
            with open(no_symlink_on_path(staging, target.split("/")), "rb") as src, open(dest, "wb") as out:
                while chunk := src.read(CHUNK):
                    out.write(chunk)
            digests[rel] = digests[target]
        else:
            kind = "device" if (info.ischr() or info.isblk()) else "FIFO" if info.isfifo() else "special file"
            raise Unsafe(f"refusing {kind} {rel!r} in the archive")
    return digests


def _hash_write(fd: int, h: Any, view: memoryview) -> None:
    h.update(view)
    while view:
        view = view[os.write(fd, view) :]


def _content_threaded(reader: Reader, info: tarfile.TarInfo, fd: int, h: Any, readinto: Callable[[memoryview], int]) -> None:
    import queue
    import threading

    free: Any = queue.Queue()  # four 1 MiB buffers, reused: no allocation per read
    for _ in range(4):
        free.put(bytearray(CHUNK))
    full: Any = queue.Queue()
    failed: list[BaseException] = []

    def work() -> None:
        while (item := full.get()) is not None:
            buf, n = item
            if not failed:
                try:
                    _hash_write(fd, h, memoryview(buf)[:n])
                except BaseException as e:  # raised below, in the reading thread
                    failed.append(e)
            if isinstance(buf, bytearray):  # not the header read's leftover
                free.put(buf)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        held = reader.held(info.size)  # what the header's read brought beyond it
        if held:
            full.put((held, len(held)))
        left = info.size - len(held)
        while left and not failed:
            buf = free.get()
            n = readinto(memoryview(buf)[: min(left, CHUNK)])  # fills it, or the data ended
            if not n:
                raise Damaged("unexpected end of data")
            full.put((buf, n))
            left -= n
    finally:
        full.put(None)
        worker.join()
    if failed:
        raise failed[0]
    reader.skip_padding(info.size)


def header(path: str, arcname: str) -> tuple[bytes | None, os.stat_result]:
    """The tar header block(s) for `path` stored as `arcname` (PAX), and its stat."""
    st = os.lstat(path)
    info = tarfile.TarInfo(arcname)
    info.mode = stat.S_IMODE(st.st_mode)
    info.mtime = int(st.st_mtime)
    info.uid, info.gid = st.st_uid, st.st_gid
    if stat.S_ISREG(st.st_mode):
        info.size = st.st_size
    elif stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
    elif stat.S_ISLNK(st.st_mode):
        info.type = tarfile.SYMTYPE
        info.linkname = os.readlink(path)
    else:
        return None, st  # sockets, devices and FIFOs are skipped
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"), st


def _chunks(path: str, h: Any) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
            yield chunk


def pack(path: str, arcname: str, emit: Callable[[Any], Any], digests: Digests, chunks: Callable[[str, Any], Iterator[Any]] = _chunks) -> int:
    """Write `path` (file or folder) as tar members to `emit`, recording
    {arcname path: (size, sha256)} of every regular file in `digests`. Returns the bytes
    emitted. `chunks(path, hash)` yields a file's contents, hashed."""
    head, st = header(path, arcname)
    if head is None:
        return 0
    emit(head)
    sent = len(head)
    if stat.S_ISREG(st.st_mode):
        h = hashlib.sha256()
        size = 0
        for chunk in chunks(path, h):
            size += len(chunk)
            emit(chunk)
        if size != st.st_size:
            raise Changed(f"{path} changed size while it was being copied")
        digests[arcname] = (size, h.hexdigest())
        sent += size
        if size % BLOCK:
            emit(bytes(BLOCK - size % BLOCK))
            sent += BLOCK - size % BLOCK
    elif stat.S_ISDIR(st.st_mode):
        for child in sorted(os.listdir(path)):
            sent += pack(os.path.join(path, child), f"{arcname}/{child}", emit, digests, chunks)
    return sent


def end_of_archive(sent: int) -> bytes:
    """Two zero blocks, padded to a whole 10 KiB record as tar writes it."""
    tail = 2 * BLOCK
    tail += -(sent + tail) % tarfile.RECORDSIZE
    return bytes(tail)


def digest_lines(digests: Digests) -> str:
    return "".join(f"=S {size} {rel}\n=H {sha}  {rel}\n" for rel, (size, sha) in digests.items())


def _fail(code: int, message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.exit(code)


def _big_pipe(fd: int) -> None:
    """Ask for a 1 MiB pipe buffer (Linux; the default 64 KiB means four times the reads
    and wake-ups on a big copy). Anything else is left as it is."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), CHUNK)
    except (ImportError, OSError, ValueError):
        pass


def _unpack(name: str, dst: str, want_dir: str) -> None:
    """stdin: a tar of `name`; put it at dst (into dst when it is a folder), atomically."""
    import shutil
    import tempfile

    if os.path.isdir(dst):
        parent, final = dst, os.path.join(dst, name)
    elif want_dir == "1":
        _fail(E_NODIR, f"no such directory: {dst}")
    else:
        parent, final = os.path.dirname(dst) or ".", dst
        if not os.path.isdir(parent):
            _fail(E_NODIR, f"no such directory: {parent}")
    try:
        tmp = tempfile.mkdtemp(prefix=".nsightlab-copy-", dir=parent)
    except OSError as e:
        _fail(E_TMP, f"cannot write to {parent}: {e.strerror}")
    stdin: Any = sys.stdin.buffer  # a BufferedReader: its readinto fills the buffer
    _big_pipe(0)
    try:
        read = getattr(stdin, "read1", stdin.read)
        digests = extract(lambda: read(CHUNK), tmp, name, readinto=stdin.readinto)
        placed = os.path.join(tmp, name)
        if os.path.isdir(final) and not os.path.isdir(placed):
            _fail(E_MOVE, f"{final} is a directory")
        if os.path.isdir(final) and not os.path.islink(final):
            shutil.rmtree(final)
        elif os.path.lexists(final):
            os.unlink(final)
        os.rename(placed, final)
    except (Unsafe, Damaged) as e:
        _fail(E_TAR, f"tar stream: {e}")
    except OSError as e:
        _fail(E_TAR, f"{e.strerror or e}: {e.filename or final}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    top = os.path.basename(final)
    rebased = {top + rel[len(name):]: d for rel, d in digests.items()}
    sys.stdout.write(("into" if final == os.path.join(dst, name) else "as") + "\n" + digest_lines(rebased))


def _pack(parent: str, name: str) -> None:
    """stdout: a tar of parent/name; stderr at the end: its digests."""
    path = os.path.join(parent, name)
    if not os.path.lexists(path):
        _fail(E_MISSING, f"no such file or directory: {path}")
    out = sys.stdout.buffer
    _big_pipe(1)
    digests: Digests = {}
    sent = pack(path, name, out.write, digests)
    out.write(end_of_archive(sent))
    out.flush()
    sys.stderr.write(digest_lines(digests))


if __name__ == "__main__":
    if sys.argv[1] == "unpack":
        _unpack(*sys.argv[2:5])
    elif sys.argv[1] == "pack":
        _pack(*sys.argv[2:4])
