"""What the other end of a copy sends back beside the archive: NUL-framed records (the
digest of every file, where the copy was placed; podtar.record) and whatever else it
printed. They are spooled to a temporary file as they come, with no cap that could drop
one (a tree of a million files sends a million records), and read back one at a time;
each digest is checked against ours as it is read, so that nothing per file is held
beyond our own digests (a flag on each).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from nsightlab.cluster import podtar
from nsightlab.cluster.podtar import shown
from nsightlab.errors import RemoteCommandError

CHUNK = 1 << 20
IN_MEMORY = 1 << 20  # records spill to disk past this
RECORD_MAX = 4 * podtar.PATH_MAX  # a digest record: tag, size, sha256 and a path
TEXT_KEPT = 4096  # what is kept of the other end's own words (error messages)
NAMES_SHOWN = 3


@dataclass
class Digest:
    size: int = 0
    sha256: str = ""
    seen: bool = False  # the other end sent a record for it (a match, or the mismatch said)


class Spool:
    """One channel of an exec (the pod's stderr of a copy out; stdout and stderr of a
    copy in), kept whole in a temporary file."""

    def __init__(self) -> None:
        # no name on disk (an unlinked temporary file past IN_MEMORY): gone when closed or
        # collected, whatever ends the copy
        self._file: Any = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY)  # noqa: SIM115
        self.size = 0
        self.literal_text: bytearray | None = None

    def write(self, data: bytes | memoryview) -> None:
        self._file.write(data)
        self.size += len(data)

    def close(self) -> None:
        self._file.close()

    def records(self) -> Iterator[list[str]]:
        """Every record, in order (fields: the tag, then its own); a piece between NULs
        that is too long to be a record, or not shaped like one, counts as text (as
        podtar.read_records reads them). Reading them keeps the text's first bytes."""
        self.literal_text = bytearray()
        for odd, piece, whole in self._pieces():
            if odd and whole and piece[1:2] == b"\t":
                text = piece.decode("utf-8", "surrogateescape")
                yield text.split("\t", 3 if piece[:1] == b"D" else 1)
            elif len(self.literal_text) < TEXT_KEPT:
                self.literal_text += piece[: TEXT_KEPT - len(self.literal_text)]

    def text(self) -> str:
        """What the other end printed besides its records, as one line: control
        characters escaped, cut when long."""
        if self.literal_text is None:
            for _ in self.records():
                pass
        raw = bytes(self.literal_text or b"").decode("utf-8", "replace").strip()
        line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in raw)
        return line if len(line) <= 500 else line[:500] + "..."

    def _pieces(self) -> Iterator[tuple[bool, bytes, bool]]:
        """(between an odd number of NULs, the piece, whole) for each piece between NULs;
        a piece is kept up to RECORD_MAX bytes (`whole` False beyond)."""
        self._file.seek(0)
        odd, buf, whole = False, bytearray(), True
        while chunk := self._file.read(CHUNK):
            start = 0
            while True:
                end = chunk.find(b"\0", start)
                piece = chunk[start:] if end < 0 else chunk[start:end]
                room = RECORD_MAX - len(buf)
                if len(piece) > room:
                    whole = False
                buf += piece[: max(room, 0)]
                if end < 0:
                    break
                yield odd, bytes(buf), whole
                odd, buf, whole = not odd, bytearray(), True
                start = end + 1
        yield odd, bytes(buf), whole


@dataclass
class Verification:
    """The other end's digest records checked against ours as they are read."""

    local: dict[str, Digest]
    missing: list[str] = field(default_factory=list)  # records of files we do not have (the first few)
    missing_count: int = 0
    mismatch: str | None = None  # the first file whose size or sha256 differs
    others: list[list[str]] = field(default_factory=list)  # records other than digests (the first few)

    def read(self, spool: Spool) -> Verification:
        for fields in spool.records():
            if len(fields) == 4 and fields[0] == "D" and fields[1].isdigit():
                self._digest(fields[3], int(fields[1]), fields[2])
            elif len(self.others) < 16:
                self.others.append(fields)
        return self

    def _digest(self, rel: str, size: int, sha256: str) -> None:
        mine = self.local.get(rel)
        if mine is None:
            self.missing_count += 1
            if len(self.missing) < NAMES_SHOWN:
                self.missing.append(rel)
            return
        mine.seen = True
        if (mine.size != size or mine.sha256 != sha256) and self.mismatch is None:
            self.mismatch = (
                f"copy verification failed for {shown(rel)}: {mine.size} bytes sha256 {mine.sha256[:12]} here, "
                f"{size} bytes sha256 {sha256[:12]} in the pod"
            )

    def check(self, where: str, hint: str) -> None:
        """RemoteCommandError when the file lists differ or a file's digest does."""
        unexpected = [rel for rel, d in self.local.items() if not d.seen]
        if self.missing_count or unexpected:
            raise RemoteCommandError(
                f"copy verification failed ({where}): file lists differ (missing here: "
                f"{_names(self.missing, self.missing_count) or 'none'}; unexpected: "
                f"{_names(sorted(unexpected)[:NAMES_SHOWN], len(unexpected)) or 'none'})",
                hint=hint,
            )
        if self.mismatch is not None:
            raise RemoteCommandError(self.mismatch, hint=hint)


def _names(shown_names: list[str], count: int) -> str:
    text = ", ".join(shown(r) for r in sorted(shown_names))
    return text + (f" and {count - len(shown_names)} more" if count > len(shown_names) else "")
