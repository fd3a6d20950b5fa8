"""A fleet Job's log: the sweep script's JSON that `lab_scripts/fleetrun.py` prints
between two marker lines, and the log's last lines, kept while the log streams past
(`LogScan`: its memory is bounded whatever the log's size). The JSON is read with
non-finite numbers refused; the record itself is checked by `sweep_record`."""

from __future__ import annotations

from collections import deque
from typing import Any

from nsightlab.models import NonFiniteError, loads
from nsightlab.units import size

#: The lines `lab_scripts/fleetrun.py` prints around the script's JSON in the pod's log.
RESULT_BEGIN = "==nsightlab-result-begin=="
RESULT_END = "==nsightlab-result-end=="
_BEGIN = RESULT_BEGIN.encode()
_END = RESULT_END.encode()
#: What a fleet keeps of a Job's log in memory (the log itself streams to a file): the
#: result block, at most RESULT_MAX bytes (a sweep's JSON is tens of KiB), and the last
#: lines, each cut at LINE_MAX characters.
RESULT_MAX = 16 << 20
LINE_MAX = 1000


class LogScan:
    """What a fleet keeps of a Job's log while the log streams past it (into a file): the
    last result block (at most RESULT_MAX bytes) and the last `lines` non-blank lines
    outside any block, each cut at LINE_MAX characters. Fed the log in pieces (`feed`),
    then `close()`; its memory is bounded whatever the log's size."""

    def __init__(self, lines: int = 5) -> None:
        self.line_max = LINE_MAX  # read when made: a test may lower them
        self.result_max = RESULT_MAX
        self._partial = bytearray()
        self._partial_over = False  # the line being read is longer than it may be kept
        self._tail: deque[str] = deque(maxlen=lines)
        self._block: list[bytes] | None = None  # inside a block: its lines so far
        self._block_size = 0
        self._block_over = False
        self._last: bytes | None = None  # the last whole block
        self._last_over = False  # ... which was larger than result_max

    def feed(self, data: bytes) -> None:
        start = 0
        while (nl := data.find(b"\n", start)) >= 0:
            self._keep(data[start:nl])
            self._line()
            start = nl + 1
        self._keep(data[start:])

    def close(self) -> None:
        if self._partial or self._partial_over:
            self._line()

    @property
    def tail(self) -> list[str]:
        return list(self._tail)

    def result(self) -> tuple[Any, str | None]:
        """The JSON of the last block, or (None, why not)."""
        if self._block is not None:
            return None, "the result in the Job's log is cut short (no end marker)"
        if self._last_over:
            return None, f"the result in the Job's log is larger than {size(self.result_max)}: no sweep's is"
        if self._last is None:
            return None, "no result in the Job's log (the script did not finish)"
        try:
            return loads(self._last), None
        except NonFiniteError as e:
            return None, f"the result in the Job's log holds a number no measurement has ({e.msg})"
        except ValueError as e:
            return None, f"the result in the Job's log is not valid JSON ({e})"

    def _keep(self, piece: bytes) -> None:
        room = (self.result_max if self._block is not None else self.line_max) - len(self._partial)
        if len(piece) > room:
            self._partial_over = True
            piece = piece[: max(room, 0)]
        self._partial += piece

    def _line(self) -> None:
        text, over = bytes(self._partial), self._partial_over
        self._partial.clear()
        self._partial_over = False
        marker = text.strip()
        if marker == _BEGIN:
            self._block, self._block_size, self._block_over = [], 0, False
        elif self._block is not None and marker == _END:
            self._last = None if self._block_over else b"\n".join(self._block)
            self._last_over = self._block_over
            self._block = None
        elif self._block is not None:
            self._block_size += len(text) + 1
            if over or self._block_size > self.result_max:
                self._block_over = True
                self._block.clear()
            if not self._block_over:
                self._block.append(text)
        elif marker:
            shown = text.decode("utf-8", "replace").rstrip()
            self._tail.append(shown[: self.line_max] + ("..." if over or len(shown) > self.line_max else ""))


def extract_result(log: str) -> tuple[Any, str | None]:
    """The JSON the wrapper printed between RESULT_BEGIN and RESULT_END (the last such
    block), or (None, why not)."""
    scan = LogScan()
    scan.feed(log.encode("utf-8", "surrogateescape"))
    scan.close()
    return scan.result()


def tail(log: str, n: int = 5) -> list[str]:
    """The last `n` non-blank lines of a log, outside its result blocks."""
    scan = LogScan(n)
    scan.feed(log.encode("utf-8", "surrogateescape"))
    scan.close()
    return scan.tail
