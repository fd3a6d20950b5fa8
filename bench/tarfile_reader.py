"""`nsightlab copy` with the standard library's tarfile reading the stream, on both
ends, instead of podtar's own reader: the alternative that bench/copy_files.py
--readers times side by side with the reader nsightlab ships.

    python bench/tarfile_reader.py copy SRC DST [options]   # as `nsightlab copy`

Only the reading changes: tarfile (stream mode, `r|`, 1 MiB buffer) parses the headers
(PAX, GNU long names) and hands each file's bytes over through `extractfile`; the
placing and every safety check stay podtar's (`place_members`), so both versions refuse
the same things. It runs in the pod too: its source is appended to podtar's, where the
pod's python3 runs it. (For a benchmark: tarfile's stream mode takes a header cut short
for the end of the archive, which podtar's reader does not; a shipped version would
need a check of its own there.)
"""

from __future__ import annotations

import sys
from pathlib import Path

# Defined in podtar's namespace (on this side by exec into the module, in the pod by
# appending it to the source the pod runs): it replaces `extract`.
VARIANT = r'''
import io as _io


class _SourceFile(_io.RawIOBase):
    """The chunks from source() as a readable file, for tarfile."""

    def __init__(self, source):
        self._source = source
        self._buf = memoryview(b"")

    def readable(self):
        return True

    def readinto(self, b):
        if not self._buf:
            data = self._source()
            if not data:
                return 0
            self._buf = memoryview(data)
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def extract(source, staging, top, *, readinto=None):
    """podtar.extract, with tarfile reading the stream."""
    try:
        tar = tarfile.open(fileobj=_SourceFile(source), mode="r|", bufsize=CHUNK, encoding="utf-8", errors="surrogateescape")
    except Exception as e:
        raise Damaged(str(e)) from None

    def members():
        while True:
            try:
                info = tar.next()
            except Exception as e:
                raise Damaged(str(e)) from None
            if info is None:
                return
            if info.size < 0:
                raise Damaged("negative size")
            if info.issparse() or any(k.startswith("GNU.sparse") for k in info.pax_headers):
                raise Unsafe(f"refusing sparse file {shown(info.name)} in the archive")
            yield info

    def write(info, dest):
        h = hashlib.sha256()
        fd = new_file(dest)
        try:
            fh = tar.extractfile(info)
            done = 0
            while chunk := fh.read(CHUNK):
                h.update(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
                done += len(chunk)
            if done != info.size:
                raise Damaged("unexpected end of data")
            os.fchmod(fd, (info.mode & 0o777) | 0o600)
        except tarfile.ReadError as e:
            raise Damaged(str(e)) from None
        finally:
            os.close(fd)
        return h.hexdigest()

    return place_members(members(), staging, top, write)
'''  # noqa: E501


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from nsightlab.cluster import podtar, transfer

    exec(compile(VARIANT, "tarfile_reader", "exec"), vars(podtar))  # this side
    source = Path(podtar.__file__).read_text()
    marker = '\nif __name__ == "__main__":'
    patched = source.replace(marker, "\n" + VARIANT + marker).encode()  # the pod's side

    def agent() -> bytes:
        return b"%d\n" % len(patched) + patched

    transfer._agent = agent
    from nsightlab.cli import entry

    sys.argv = ["nsightlab", *sys.argv[1:]]
    entry()


if __name__ == "__main__":
    main()
