"""Tar streams for `copy`, on both ends: read safely, write, hash on the way, place.

This file also runs in the lab pod, as `python3 -c <this file> unpack|pack ...`, so it
uses the standard library only (Python 3.8 and later), imports nothing from nsightlab and
relies on no tarfile extraction filter. In the pod it saves a pass over the data each
way: `unpack` hashes each file as it writes it (instead of `tar` then `sha256sum` reading
it back), `pack` hashes each file as it streams it out. Digests and the other facts the
two ends exchange are NUL-framed records (`record`), so that any file name, newlines
included, comes through whole.

What comes from the other end is untrusted. The reader (`extract`) places members in a
staging folder and refuses, before anything leaves it:
- names that are absolute, hold `..` or NUL, lie outside the top folder, have a part
  longer than NAME_MAX bytes, or appear twice;
- anything written through a symlink: every folder on a member's way is checked to be a
  real folder (on the real filesystem, so case- and Unicode-insensitive lookups are
  covered), and files are created with O_EXCL | O_NOFOLLOW;
- symlinks that could lead out, followed or chained (`link_problem`): a target must be
  relative, may climb (`..`) only at its start and no higher than the top folder, and
  only descends after that. Every link placed thus starts from a real folder inside the
  top and climbs through real folders (`..` of a real folder is its real parent), then
  descends by names; a name that is itself such a link resolves inside the top again,
  so, by induction, no chain of links placed by copies leads out;
- hard links to anything but an earlier regular file of the same archive;
- devices, FIFOs, sparse files, unknown member types, malformed headers and streams
  that end without the end-of-archive block.

`merge_plan` and `place` then put the staged tree at its destination as scp does: into
an existing folder, merging; a file of the copy replaces a file of the same path (by
rename: never half-written under its final name); nothing else there is deleted; a
file where the copy brings a folder, a folder where it brings a file, or a symlink
where it brings a folder is a clash, and all clashes are found before anything moves.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import queue
import shutil
import signal
import stat
import sys
import tarfile
import tempfile
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (annotations only: the pod's python3 may be older than nsightlab's)
    from collections.abc import Callable, Iterable, Iterator

    Source = Callable[[], "bytes | memoryview"]
    Sink = Callable[[memoryview], None]
    from typing import NoReturn

    Digests = dict[str, tuple[int, str]]
    Plan = list[tuple[str, bool]] | None

BLOCK = 512
CHUNK = 1 << 20
NAME_MAX = 255  # bytes in one part of a path: the limit of common filesystems
PATH_MAX = 4095  # bytes in a whole member name
HEADER_MAX = 1 << 20  # the most a PAX header or a GNU long name may hold
# Hard links: at most LINKS_MAX to one file (ext4's own limit is 65,000), and where the
# filesystem makes none (and copies stand in for them), the copies may write at most
# COPY_FACTOR times the bytes the archive brought: a 1 MiB file and 70,000 link headers
# (36 MB of tar) must not fill a disk.
LINKS_MAX = 65000
COPY_FACTOR = 2
# exit codes in the pod (not tar's)
E_MISSING, E_NODIR, E_TMP, E_TAR, E_MOVE, E_CLASH = 44, 46, 47, 48, 49, 50


class Unsafe(Exception):
    """An archive member that would land outside its destination, or a kind refused."""


class Damaged(Exception):
    """The stream is not a whole, well-formed tar archive."""


class Clash(Exception):
    """Placing the copy would put a folder where a file is, or the other way round."""


class Changed(Exception):
    """A file changed size while it was being packed."""


def shown(text: str, limit: int = 160) -> str:
    """`text` for a message of one line: as it is when printable, else quoted with its
    control characters (newlines, escapes, bytes that are not UTF-8) escaped; long
    names are cut in the middle."""
    out = text if text.isprintable() else repr(text)
    if len(out) > limit:
        out = out[: limit - 40] + "..." + out[-37:]
    return out


def _discard(_: memoryview) -> None:
    pass


# ---------------------------------------------------------------------------- names and links


def safe_parts(name: str, top: str) -> list[str]:
    """The parts of a member's name, refusing any that could lead outside `top`."""
    if "\0" in name:
        raise Unsafe(f"refusing archive member with a NUL in its name: {shown(name)}")
    if name.startswith("/"):
        raise Unsafe(f"refusing archive member with an absolute path: {shown(name)}")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Unsafe(f"refusing archive member with '..': {shown(name)}")
    if not parts or parts[0] != top:
        raise Unsafe(f"refusing archive member outside {shown(top)}: {shown(name)}")
    if len(name.encode("utf-8", "surrogateescape")) > PATH_MAX or any(
        len(p.encode("utf-8", "surrogateescape")) > NAME_MAX for p in parts
    ):
        raise Unsafe(f"refusing archive member with a name too long for a filesystem: {shown(name)}")
    return parts


def link_problem(parts: list[str], link: str) -> str | None:
    """Why a symlink at `parts` (top folder first) pointing at `link` could lead out of
    the top folder, followed or chained with others; None when it cannot (see the
    module's docstring for the rule and why it holds)."""
    if not link or "\0" in link:
        return "it has no target"
    if link.startswith("/"):
        return "it points outside the destination"
    steps = [p for p in link.split("/") if p not in ("", ".")]
    climbs = 0
    while climbs < len(steps) and steps[climbs] == "..":
        climbs += 1
    if ".." in steps[climbs:]:
        return "it climbs ('..') after a name, which another link could lead out"
    if climbs > len(parts) - 2:  # its folder is len(parts) - 2 levels below the top
        return "it points outside the destination"
    return None


def inside(top: str, parts: list[str], link: str) -> bool:
    """Would a symlink at `parts`, pointing at `link`, stay inside `top`?"""
    return bool(parts) and parts[0] == top and link_problem(parts, link) is None


# ---------------------------------------------------------------------------- reading


class Reader:
    """Members of a tar stream fed by `source()` (bytes; b"" at the end).

    File contents are handed on as views of the chunks as they arrive: no copy, no
    fixed-size record reads. Headers are decoded by tarfile's `TarInfo.frombuf` (one
    block at a time); PAX and GNU long names are applied here, strictly.
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
            self._chunk = self._chunk[len(piece) :]
            parts.append(bytes(piece))
            n -= len(piece)
        return b"".join(parts)

    def pipe(self, n: int, sink: Sink) -> None:
        while n:
            if not self._chunk:
                self._more()
            piece = self._chunk[:n]
            self._chunk = self._chunk[len(piece) :]
            sink(piece)
            n -= len(piece)

    def _data(self, info: tarfile.TarInfo) -> bytes:
        if info.size > HEADER_MAX:
            raise Damaged(f"an extended header of {info.size} bytes")
        return self.take(info.size + (-info.size % BLOCK))[: info.size]

    def next(self) -> tarfile.TarInfo | None:
        """The next member as a TarInfo (with the PAX and GNU long names applied), or None
        at the end-of-archive block. A stream that ends without one is damaged."""
        self.pipe(self._left, _discard)
        self._left = 0
        pax: dict[str, str] = {}
        long_name: str | None = None
        long_link: str | None = None
        extended = False
        while True:
            block = self.take(BLOCK)
            if block.count(0) == BLOCK:
                if extended:
                    raise Damaged("an extended header without its member")
                return None
            try:
                info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
            except Exception as e:  # HeaderError, or whatever a crafted block makes of it
                raise Damaged(f"bad header ({e})") from None
            if info.size < 0:
                raise Damaged(f"negative size for {shown(info.name)}")
            if info.type == tarfile.GNUTYPE_LONGNAME:
                long_name = _name(self._data(info))
            elif info.type == tarfile.GNUTYPE_LONGLINK:
                long_link = _name(self._data(info))
            elif info.type in (tarfile.XHDTYPE, tarfile.SOLARIS_XHDTYPE):
                pax.update(_pax(self._data(info)))
            elif info.type == tarfile.XGLTYPE:  # defaults for all that follow: none that matter here
                changes = sorted(
                    k for k in _pax(self._data(info)) if k in ("path", "linkpath", "size") or k.startswith("GNU.sparse")
                )
                if changes:
                    raise Unsafe(f"refusing a global PAX header that sets {', '.join(changes)}")
                continue
            else:
                break
            extended = True
        info.name = pax.get("path", long_name if long_name is not None else info.name)
        info.linkname = pax.get("linkpath", long_link if long_link is not None else info.linkname)
        if "size" in pax:
            info.size = _decimal(pax["size"], "size")
        if info.type == tarfile.GNUTYPE_SPARSE or any(k.startswith("GNU.sparse") for k in pax):
            raise Unsafe(f"refusing sparse file {shown(info.name)} in the archive")
        has_data = info.type in tarfile.REGULAR_TYPES or info.type not in tarfile.SUPPORTED_TYPES
        self._left = info.size + (-info.size % BLOCK) if has_data else 0
        return info

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
        self.pipe(-size % BLOCK, _discard)
        self._left = 0


def _name(data: bytes) -> str:
    return data.rstrip(b"\0").decode("utf-8", "surrogateescape")


def _decimal(text: str, what: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 20:
        raise Damaged(f"bad {what} in a PAX header: {shown(text)}")
    return int(text)


def _pax(data: bytes) -> dict[str, str]:
    """The records of a PAX header ("<length> <key>=<value>\\n" each), strictly."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data) and data[pos] != 0:
        space = data.find(b" ", pos)
        digits = data[pos:space]
        if space < 0 or not digits.isdigit() or len(digits) > 8:
            raise Damaged("bad PAX header: a record without a valid length")
        end = pos + int(digits)
        if end <= space + 1 or end > len(data) or data[end - 1] != 0x0A:
            raise Damaged("bad PAX header: a record length that does not fit")
        key, eq, value = data[space + 1 : end - 1].partition(b"=")
        if not eq or not key:
            raise Damaged("bad PAX header: a record without a key")
        out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        pos = end
    return out


# ---------------------------------------------------------------------------- extracting


class _Tree:
    """Where one archive's members go: under `root`, inside `top`, each path once, and
    only ever through real folders."""

    def __init__(self, root: str, top: str) -> None:
        self.root = root
        self.top = top
        self.seen: set[str] = set()

    def claim(self, name: str) -> list[str]:
        parts = safe_parts(name, self.top)
        rel = "/".join(parts)
        if rel in self.seen:
            raise Unsafe(f"refusing archive: {shown(rel)} appears twice")
        self.seen.add(rel)
        return parts

    def folder(self, parts: list[str], rel: str) -> str:
        """The real folder at `parts` (made as needed); refuses to pass through a link."""
        here = self.root
        for i, part in enumerate(parts):
            here = os.path.join(here, part)
            try:
                mode = os.lstat(here).st_mode
            except FileNotFoundError:
                os.mkdir(here)
                continue
            if stat.S_ISDIR(mode):
                continue
            where = shown("/".join(parts[: i + 1]))
            if stat.S_ISLNK(mode):
                raise Unsafe(f"refusing {shown(rel)}: it would be written through the symlink {where}")
            raise Unsafe(f"refusing {shown(rel)}: {where} is a file in this archive, not a folder")
        return here


def extract(source: Source, staging: str, top: str, *, readinto: Callable[[memoryview], int] | None = None) -> Digests:
    """Extract the tar stream from `source` under `staging`; {path: (size, sha256)} per
    regular file. Refuses anything unsafe (see the module's docstring): Unsafe or
    Damaged, and nothing is ever written outside `staging`.

    `readinto` (the stream's own, e.g. a BufferedReader's): file contents are read with it
    into whole 1 MiB buffers, each hashed and written on a second thread while the next
    is read (hashlib and os.write release the GIL). It pays where reading is a plain pipe
    read (in the pod: the pipe brings 64 KiB or less at a time, and a hand-off per read
    cost more than the thread saved); where each chunk is decrypted in small records by
    Python code (the client), the chunks as they come are hashed and written in turn."""
    reader = Reader(source)
    return place_members(iter(reader.next, None), staging, top, lambda info, dest: _write(reader, info, dest, readinto))


def place_members(
    members: Iterable[tarfile.TarInfo], staging: str, top: str, write: Callable[[tarfile.TarInfo, str], str]
) -> Digests:
    """Place each member under `staging` as `extract` says; `write(info, dest)` writes a
    regular member's contents into a new file at `dest` and returns its sha256."""
    tree = _Tree(staging, top)
    digests: Digests = {}
    links = _Links()
    for info in members:
        links.brought += BLOCK + (info.size if info.isreg() else 0)
        parts = tree.claim(info.name)
        rel = "/".join(parts)
        if info.isdir():
            tree.folder(parts, rel)
            continue
        if not (info.isreg() or info.issym() or info.islnk()):
            kind = "device" if (info.ischr() or info.isblk()) else "FIFO" if info.isfifo() else "member of unknown type"
            raise Unsafe(f"refusing {kind} {shown(rel)} in the archive")
        dest = os.path.join(tree.folder(parts[:-1], rel), parts[-1])
        try:
            if info.isreg():
                digests[rel] = (info.size, write(info, dest))
            elif info.issym():
                problem = link_problem(parts, info.linkname)
                if problem:
                    raise Unsafe(f"refusing symlink {shown(rel)} -> {shown(info.linkname)}: {problem}")
                os.symlink(info.linkname, dest)
            else:
                target = "/".join(safe_parts(info.linkname, top))
                if target not in digests:
                    raise Unsafe(
                        f"refusing hard link {shown(rel)} -> {shown(info.linkname)}: not a file of this archive"
                    )
                links.make(os.path.join(staging, *target.split("/")), dest, rel, target, digests[target][0])
                digests[rel] = digests[target]
        except FileExistsError:  # a name that differs only in case, on a filesystem that ignores it
            raise Unsafe(f"refusing {shown(rel)}: another member of the archive already took its place") from None
    return digests


def new_file(dest: str) -> int:
    """A new file at `dest`, never through a link, never over anything."""
    return os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)


def _write(reader: Reader, info: tarfile.TarInfo, dest: str, readinto: Callable[[memoryview], int] | None) -> str:
    """Write the current member into a new file at `dest`; its sha256."""
    h = hashlib.sha256()
    fd = new_file(dest)
    try:
        if readinto is not None:
            _content_threaded(reader, info, fd, h, readinto)
        else:
            reader.content(info, functools.partial(_hash_write, fd, h))
        os.fchmod(fd, (info.mode & 0o777) | 0o600)
    finally:
        os.close(fd)
    return h.hexdigest()


class _Links:
    """The hard links of one archive: counted per file, and copied (where the filesystem
    makes none) only within COPY_FACTOR times the bytes the archive brought."""

    def __init__(self) -> None:
        self.per_file: dict[str, int] = {}
        self.brought = 0  # bytes of the archive so far (headers and contents)
        self.copied = 0

    def make(self, source: str, dest: str, rel: str, target: str, size: int) -> None:
        count = self.per_file[target] = self.per_file.get(target, 0) + 1
        if count > LINKS_MAX:
            raise Unsafe(f"refusing archive: more than {LINKS_MAX} hard links to {shown(target)}")
        try:
            os.link(source, dest, follow_symlinks=False)
            return
        except FileExistsError:
            raise
        except OSError as e:
            if e.errno == errno.EMLINK:
                raise Unsafe(
                    f"refusing hard link {shown(rel)} -> {shown(target)}: the filesystem allows no more links to it "
                    f"({count} so far)"
                ) from None
        # a filesystem without hard links: a copy stands in, within the budget
        self.copied += size
        if self.copied > COPY_FACTOR * self.brought:
            raise Unsafe(
                f"refusing hard link {shown(rel)} -> {shown(target)}: this filesystem cannot link, and the copies "
                f"would write more than {COPY_FACTOR}x the {self.brought} bytes the archive brought"
            )
        with open(source, "rb") as src, os.fdopen(new_file(dest), "wb") as out:
            while chunk := src.read(CHUNK):
                out.write(chunk)


def _hash_write(fd: int, h: Any, view: memoryview) -> None:
    h.update(view)
    while view:
        view = view[os.write(fd, view) :]


def _content_threaded(
    reader: Reader, info: tarfile.TarInfo, fd: int, h: Any, readinto: Callable[[memoryview], int]
) -> None:

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


# ---------------------------------------------------------------------------- placing


def merge_plan(staged: str, final: str) -> Plan:
    """How to put the staged file or tree at `final`: None when nothing is there (one
    rename places it all), else every path of the copy (relative, pre-order) and
    whether it is a folder. Raises Clash, before anything moves, where the copy brings a
    folder and a file (or a symlink to a folder) is there, or the reverse, or a folder
    would have to be written through a symlink."""
    if not os.path.lexists(final):
        return None
    entries: list[tuple[str, bool]] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        src = os.path.join(staged, rel) if rel else staged
        dst = os.path.join(final, rel) if rel else final
        is_dir = stat.S_ISDIR(os.lstat(src).st_mode)
        try:
            there = os.lstat(dst).st_mode
        except FileNotFoundError:
            there = None
        if there is not None:
            if is_dir and stat.S_ISLNK(there):
                raise Clash(
                    f"{shown(dst)} is a symlink and the copy brings a folder of that name; nothing is written "
                    "through a link"
                )
            if is_dir and not stat.S_ISDIR(there):
                raise Clash(f"{shown(dst)} is a file and the copy brings a folder of that name")
            if not is_dir and (stat.S_ISDIR(there) or (stat.S_ISLNK(there) and os.path.isdir(dst))):
                raise Clash(f"{shown(dst)} is a folder and the copy brings a file of that name")
        entries.append((rel, is_dir))
        if is_dir:
            stack.extend(os.path.join(rel, c) if rel else c for c in sorted(os.listdir(src), reverse=True))
    return entries


def place(staged: str, final: str, plan: Plan) -> None:
    """Put the staged copy at `final` as `merge_plan` planned it: folders made where
    missing, each file (or link) renamed into place whole; nothing else is touched."""
    if plan is None:
        os.rename(staged, final)
        return
    for rel, is_dir in plan:
        src = os.path.join(staged, rel) if rel else staged
        dst = os.path.join(final, rel) if rel else final
        if not is_dir:
            os.replace(src, dst)
        elif not os.path.isdir(dst):
            os.mkdir(dst, stat.S_IMODE(os.lstat(src).st_mode))


# ---------------------------------------------------------------------------- writing


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


def pack(
    path: str,
    arcname: str,
    emit: Callable[[Any], Any],
    digests: Digests,
    chunks: Callable[[str, Any], Iterator[Any]] = _chunks,
) -> int:
    """Write `path` (file or folder) as tar members to `emit`, recording
    {arcname path: (size, sha256)} of every regular file in `digests`. Returns the bytes
    emitted. `chunks(path, hash)` yields a file's contents, hashed."""
    sent = 0
    todo = [(path, arcname)]
    while todo:
        path, arcname = todo.pop()
        head, st = header(path, arcname)
        if head is None:
            continue
        emit(head)
        sent += len(head)
        if stat.S_ISREG(st.st_mode):
            h = hashlib.sha256()
            size = 0
            for chunk in chunks(path, h):
                size += len(chunk)
                emit(chunk)
            if size != st.st_size:
                raise Changed(f"{shown(path)} changed size while it was being copied")
            digests[arcname] = (size, h.hexdigest())
            sent += size
            if size % BLOCK:
                emit(bytes(BLOCK - size % BLOCK))
                sent += BLOCK - size % BLOCK
        elif stat.S_ISDIR(st.st_mode):
            todo.extend((os.path.join(path, c), f"{arcname}/{c}") for c in sorted(os.listdir(path), reverse=True))
    return sent


def end_of_archive(sent: int) -> bytes:
    """Two zero blocks, padded to a whole 10 KiB record as tar writes it."""
    tail = 2 * BLOCK
    tail += -(sent + tail) % tarfile.RECORDSIZE
    return bytes(tail)


# ---------------------------------------------------------------------------- records


def record(tag: str, *fields: str) -> bytes:
    """One fact for the other end, framed by NULs (no file name holds one): the tag and
    its fields, tab-separated, the last field free to hold tabs and newlines."""
    return ("\0" + "\t".join((tag, *fields)) + "\0").encode("utf-8", "surrogateescape")


def digest_records(digests: Digests) -> bytes:
    """`D size sha256 path` for every file."""
    return b"".join(record("D", str(size), sha, rel) for rel, (size, sha) in digests.items())


def read_records(data: bytes) -> tuple[list[list[str]], str]:
    """The records in `data` and the text around them (what else the pod printed)."""
    records: list[list[str]] = []
    text: list[bytes] = []
    for i, piece in enumerate(data.split(b"\0")):
        if i % 2 and piece[1:2] == b"\t":
            fields = piece.decode("utf-8", "surrogateescape").split("\t", 3 if piece[:1] == b"D" else 1)
            records.append(fields)
        else:
            text.append(piece)
    return records, b"".join(text).decode("utf-8", "replace")


# ---------------------------------------------------------------------------- in the pod


def _fail(code: int, message: str) -> NoReturn:
    sys.stderr.write(message + "\n")
    sys.exit(code)


def _big_pipe(fd: int) -> None:
    """Ask for a 1 MiB pipe buffer (Linux; the default 64 KiB means four times the reads
    and wake-ups on a big copy). Anything else is left as it is."""
    try:
        # POSIX only, and only for the pod's side of a copy
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), CHUNK)
    except (ImportError, OSError, ValueError):
        pass


def _unpack(name: str, dst: str, want_dir: str) -> None:
    """stdin: a tar of `name`; put it at dst (into dst when it is a folder), merging into
    what is there. stdout: where it went and the digests."""

    if os.path.isdir(dst):
        parent, final, where = dst, os.path.join(dst, name), "into"
    elif want_dir == "1":
        _fail(E_NODIR, f"no such directory: {shown(dst)}")
    else:
        parent, final, where = os.path.dirname(dst) or ".", dst, "as"
        if not os.path.isdir(parent):
            _fail(E_NODIR, f"no such directory: {shown(parent)}")
    try:
        tmp = tempfile.mkdtemp(prefix=".nsightlab-copy-", dir=parent)
    except OSError as e:
        _fail(E_TMP, f"cannot write to {shown(parent)}: {e.strerror}")

    def hung_up(signum: int, frame: Any) -> None:  # the client went away: `finally` cleans up
        raise SystemExit(128 + signum)

    signals = [getattr(signal, s) for s in ("SIGHUP", "SIGTERM", "SIGINT") if hasattr(signal, s)]
    for sig in signals:
        signal.signal(sig, hung_up)
    stdin: Any = sys.stdin.buffer  # a BufferedReader: its readinto fills the buffer
    _big_pipe(0)
    placing = False
    try:
        read = getattr(stdin, "read1", stdin.read)
        digests = extract(lambda: read(CHUNK), tmp, name, readinto=stdin.readinto)
        staged = os.path.join(tmp, name)
        plan = merge_plan(staged, final)
        for sig in signals:  # renames only from here: not to be cut short
            signal.signal(sig, signal.SIG_IGN)
        placing = True
        place(staged, final, plan)
    except Clash as e:
        _fail(E_CLASH, f"{e}; nothing was changed")
    except (Unsafe, Damaged) as e:
        _fail(E_TAR, f"tar stream: {e}")
    except OSError as e:
        _fail(E_MOVE if placing else E_TAR, f"{e.strerror or e}: {shown(str(e.filename or final))}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.stdout.buffer.write(record("P", where) + digest_records(digests))


def _pack(parent: str, name: str) -> None:
    """stdout: a tar of parent/name; stderr at the end: its digests."""
    path = os.path.join(parent, name)
    if not os.path.lexists(path):
        _fail(E_MISSING, f"no such file or directory: {shown(path)}")
    out = sys.stdout.buffer
    _big_pipe(1)
    digests: Digests = {}
    sent = pack(path, name, out.write, digests)
    out.write(end_of_archive(sent))
    out.flush()
    sys.stderr.buffer.write(digest_records(digests))


if __name__ == "__main__":
    if sys.argv[1] == "unpack":
        _unpack(*sys.argv[2:5])
    elif sys.argv[1] == "pack":
        _pack(*sys.argv[2:4])
