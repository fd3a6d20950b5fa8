"""A streaming reader of Chrome-trace JSON as torch.profiler (Kineto) and vLLM write it.

The file (`.json`, or gzipped `.json.gz` / `.pt.trace.json.gz`, told by its first bytes)
is an object whose `traceEvents` array holds the events, next to metadata
(`deviceProperties`, `schemaVersion`, `distributedInfo`); the bare-array form of the
Chrome trace format (`[{...}, ...]`, closing bracket optional) is read too.

Nothing is loaded whole: the text is decoded in 1 MiB chunks and each element of
`traceEvents` is parsed on its own with `json.JSONDecoder.raw_decode` (the stdlib's C
scanner) over a sliding buffer, so memory holds one chunk plus the event being read.
Every other top-level value is parsed whole (they are small).

`KinetoReader(path)` yields, in file order:

- `GpuEvent`: complete events (`ph: X`) of cat `kernel`, `gpu_memcpy`, `gpu_memset`
  (and the older `Kernel`, `Memcpy`, `Memset`); `device` is `args.device` (else `pid`),
  `stream` is `args.stream` (else `tid`), `correlation` is `args.correlation`.
- `LaunchCall`: CPU calls of cat `cuda_runtime` / `cuda_driver` (older: `Runtime`,
  `Driver`; HIP's calls on AMD GPUs carry the same categories): `cudaLaunchKernel`,
  `cudaLaunchKernelExC`, `cuLaunchKernel`, `hipLaunchKernel`, `cudaMemcpyAsync`,
  `cudaMemsetAsync`, `cudaGraphLaunch`, `hipGraphLaunch`, `cudaStreamSynchronize`, ...
  with their correlation id, process and thread. Every call is yielded, or with
  `launches_only=True` only the calls that put work on the GPU (`names.puts_work_on_gpu`)
  or hold the host until the GPU catches up (`apicalls.is_sync_call`): a trace's runtime
  calls are mostly `cudaEventQuery` and the like.
- `TraceRange`: `user_annotation` (record_function ranges, `ProfilerStep#N`) and
  `gpu_user_annotation` ranges.
- `CpuOp`: only with `KinetoReader(path, cpu_ops=True)`, the `cpu_op` events (`aten::mm`,
  ...), nested as the profiler recorded them: what stands in for kernels in a trace of
  a script that ran on the CPU. Off by default: a GPU trace holds millions of them.

After iteration `reader.metadata` holds the device names (`deviceProperties[].name`),
the schema version and the distributed rank, wherever in the file they were.

Timestamps are microseconds, often with fractions (`1712195495537248.2`). Floats are
kept as their JSON text (the decoder's `parse_float=str`) and converted to integer
nanoseconds by decimal arithmetic: exact for up to three decimals (all that Kineto
writes), rounded half-to-even to the nanosecond beyond that. Converting through a
binary float instead would be off by up to 125 ns at today's epoch values (a double
holds 1.7e15 us to a quarter of a microsecond). (`batches()` takes doubles only where
that cannot happen: below 2**41 us, where each double reads back as its text's ns,
`kineto_batch.ns_column`.) A negative duration is read as zero.

Any input that is not such a trace raises `ParseError` naming the file and the line.

Two ways of reading. Iteration reads the events one by one with the standard library's
decoder, except in Kineto's own layout. libkineto writes each event on lines of its own:

    [ ... ,
      {
        "ph": "X", "cat": "kernel", "name": "...", "pid": 0, "tid": 7,
        "ts": 1683564902133360, "dur": 3,
        "args": {
          ...
        }
      },
      {
        ...

A JSON string cannot hold a newline, so `\n  },\n  {` is always structure: in this
layout, the boundary between two events, and each event begins with its `ph` and `cat`.
Over a buffer of events in that form, two regular-expression scans (in C) find the events
to decode (the layout scan): the ones read here, and the X events the scan cannot judge by
their first line (an unknown or escaped `cat`, a runtime call whose `name` does not
follow its `cat`), which decoded are judged the general way. The events the reader would
drop (flow arrows, `cpu_op`s, runtime calls that launch nothing: four in five of a typical
trace's events) are passed over undecoded. An event whose first key is not `ph` ends the
buffer's block, and a file not in that form (written on one line, say) is read the
general way, event by event; the two ways yield the same events. The difference: an event
passed over is not checked to be well-formed JSON (it is not used).

`batches()`, what `analyze` reads, decodes a run of events at a time: from the current
event to the last whole one in the buffer, cut at Kineto's boundary, or in any other
layout (one line, as vLLM and SGLang write their traces; `json.dump`'s indentation) before
an event whose first key is the one the first event began with (`}, {"ph"`, searched back
from the buffer's end: if the run decodes, the cut was between two events, as JSON parses
from the left). msgspec's C decoder builds only the keys read here
(`kineto_batch.decode_batch`) and the run is judged all at once into columns
(`kineto_batch.EventBatch`), as iteration judges each event. A run that does not decode
(an event that is not well-formed, a NaN, a lone surrogate) or holds an unusual value is
read as iteration reads it (the layout scan, or the general way): batches hold what the
records hold, or raise the same error. They count no lines; an error is found again by
iteration, which names the line.
"""

from __future__ import annotations

import codecs
import gzip
import json
import math
import re
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import Any, BinaryIO

from nsightlab.errors import ParseError
from nsightlab.parse.apicalls import SYNC_CALL_MARKS, is_sync_call
from nsightlab.parse.kineto_batch import (
    CPU_OP_CAT,
    GPU_CATS,
    LAUNCH_CATS,
    LAUNCH_SPELLINGS,
    NS_MAX,
    RANGE_CATS,
    US_MAX,
    EventBatch,
    GpuKind,
    Judged,
    RangeCat,
    decode_batch,
    ident,
)
from nsightlab.parse.names import GPU_WORK_CALL_MARKS, puts_work_on_gpu

_CHUNK = 1 << 20
# The largest single event we accept before calling the file malformed.
_MAX_EVENT_CHARS = 64 << 20

# Other categories libkineto writes, none of them read here.
_OTHER_CATS = (
    "python_function", "Trace", "overhead", "cuda_sync", "cpu_instant_event", "external_correlation",
    "cuda_profiler_range", "collective_comm", "fwdbwd", "xpu_runtime", "xpu_driver", "mtia_runtime",
    "privateuse1_runtime", "privateuse1_driver",
)  # fmt: skip
# The spellings of the categories above as Kineto writes them (the general way compares
# lower-cased; the layout scan takes these exact spellings and leaves others to it).
_GPU_SPELLINGS = ("kernel", "Kernel", "gpu_memcpy", "gpu_memset", "memcpy", "Memcpy", "memset", "Memset")
_RANGE_SPELLINGS = tuple(RANGE_CATS)

_CLOSE = "\n  }"  # the line that closes an event
_SEP = _CLOSE + ",\n  {"
_PH_FIRST = r'\n    "ph": "[^"\\]*"'  # an event's first line begins with a plain `ph`
_FIRST = re.compile(r"\{" + _PH_FIRST)
# An event (after a boundary) whose first key is not a plain `ph`.
_ODD_START = re.compile(r"\n  \},\n  \{(?!" + _PH_FIRST + ")")


def _alternatives(words: tuple[str, ...]) -> str:
    return "|".join(re.escape(w) for w in words)


def _layout_pattern(cpu_ops: bool, launches_only: bool) -> re.Pattern[str]:
    """The X events of Kineto's layout that must be decoded: the ones read here, and the
    ones the scan cannot judge by their first line (decoded, they are judged as the
    general way judges them)."""
    head = r'\{\n    "ph": "X"'
    known = _GPU_SPELLINGS + LAUNCH_SPELLINGS + _RANGE_SPELLINGS + (CPU_OP_CAT,) + _OTHER_CATS
    taken = _GPU_SPELLINGS + _RANGE_SPELLINGS + ((CPU_OP_CAT,) if cpu_ops else ())
    odd = rf'(?!, "cat": "(?:{_alternatives(known)})")'
    if launches_only:
        # A call is judged by its name, which must follow `cat` as a plain string.
        calls = rf', "cat": "(?:{_alternatives(LAUNCH_SPELLINGS)})"'
        marks = _alternatives(GPU_WORK_CALL_MARKS + SYNC_CALL_MARKS)
        wanted = rf', "cat": "(?:{_alternatives(taken)})"|{calls}, "name": "[^"\\]*(?:{marks})'
        odd += rf'|{calls}(?!, "name": "[^"\\\n]*")'
    else:
        wanted = rf', "cat": "(?:{_alternatives(taken + LAUNCH_SPELLINGS)})"'
    # One literal head lets the scan jump from X event to X event.
    return re.compile(f"{head}(?:{wanted}|{odd})")


@dataclass(frozen=True, slots=True)
class GpuEvent:
    """A kernel, memcpy or memset on the GPU. Times in ns."""

    start_ns: int
    end_ns: int
    name: str
    kind: GpuKind
    device: int | str | None
    stream: int | str | None
    correlation: int | None
    line: int


@dataclass(frozen=True, slots=True)
class LaunchCall:
    """A CUDA runtime or driver call on a CPU thread (`cudaLaunchKernel`...). Times in ns."""

    start_ns: int
    end_ns: int
    name: str
    correlation: int | None
    pid: int | str | None
    tid: int | str | None
    line: int


@dataclass(frozen=True, slots=True)
class TraceRange:
    """A `user_annotation` (CPU) or `gpu_user_annotation` (GPU) range. Times in ns."""

    start_ns: int
    end_ns: int
    name: str
    cat: RangeCat
    pid: int | str | None
    tid: int | str | None
    line: int


@dataclass(frozen=True, slots=True)
class CpuOp:
    """A `cpu_op` event (an aten operator on a CPU thread). Times in ns."""

    start_ns: int
    end_ns: int
    name: str
    pid: int | str | None
    tid: int | str | None
    line: int


KinetoEvent = GpuEvent | LaunchCall | TraceRange | CpuOp


# The trace's runtime, from the version keys torch.profiler writes beside deviceProperties.
_HIP_KEYS = frozenset(("hip_runtime_version", "hip_driver_version", "roctracer_version"))
_CUDA_KEYS = frozenset(("cuda_runtime_version", "cuda_driver_version", "cupti_version"))

# The first key of other profilers' JSON, and what the file is.
_OTHER_PROFILERS = {"rocprofiler-sdk-tool": "a rocprofv3 (ROCm rocprofiler-sdk) JSON"}


@dataclass
class KinetoMetadata:
    """What the trace says about where it ran."""

    device_names: list[str] = field(default_factory=list)
    # each deviceProperties entry's figures that can name an unnamed GPU: (memory bytes,
    # compute units, compute capability major, minor), None where the trace lacks one
    device_figures: list[tuple[int | None, int | None, int | None, int | None]] = field(default_factory=list)
    # "hip" or "cuda": the runtime whose version the trace records
    runtime: str | None = None
    schema_version: int | str | None = None
    rank: int | None = None
    world_size: int | None = None


# ----------------------------------------------------------------- time conversion

_WHITESPACE = re.compile(r"[ \t\r\n]*")
_PLAIN_DECIMAL = re.compile(r"\d+(?:\.\d{1,3})?")


def us_to_ns(value: object) -> int:
    """Microseconds as JSON gave them (an int, or a float's text) -> integer ns.

    Exact for up to three decimals; more are rounded half-to-even. Raises ValueError for
    anything that is not a number, NaN, an infinity, or a time beyond int64 ns.
    """
    ns = _us_to_ns(value)
    if not -NS_MAX <= ns <= NS_MAX:
        raise ValueError(f"out of range: {value!r}")
    return ns


def _us_to_ns(value: object) -> int:
    if type(value) is int:
        return value * 1000
    if type(value) is str:
        if _PLAIN_DECIMAL.fullmatch(value):
            whole, _, frac = value.partition(".")
            return int(whole) * 1000 + (int(frac.ljust(3, "0")) if frac else 0)
        try:
            exact = Decimal(value)
        except (InvalidOperation, ValueError):
            raise ValueError(f"not a number: {value!r}") from None
        if not exact.is_finite():
            raise ValueError(f"not a number: {value!r}")
        # 1e19 us and more is past int64 ns: refused before the integer is built (1e99999
        # would take a second, 1e999999 overflow the decimal context)
        if exact.adjusted() > 18:
            raise ValueError(f"out of range: {value!r}")
        return int((exact * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))
    if type(value) is float:  # only when a caller decoded floats itself
        if not math.isfinite(value):
            raise ValueError(f"not a finite number: {value!r}")
        return round(value * 1000)
    raise ValueError(f"not a number: {value!r}")


# ------------------------------------------------------------------- JSON stream


class _JsonStream:
    """Values parsed one by one from a text stream through a sliding buffer."""

    def __init__(self, read: Any, source: str, *, count_lines: bool = True) -> None:
        self._read = read
        self.source = source
        self.count_lines = count_lines  # off: every line number is 0
        self.buf = ""
        self.pos = 0
        self.base = 0  # characters of the text before `buf`
        self.eof = False
        # Line numbers are counted incrementally from a mark: counting from the start
        # of the buffer at every event would cost a buffer's length per event.
        self._mark = 0
        self._mark_line = 1
        # floats and the constants (NaN, Infinity) as text: us_to_ns reads them exactly, or refuses
        self.decoder = json.JSONDecoder(parse_float=str, parse_constant=str)

    def line_at(self, pos: int) -> int:
        """The 1-based line of buffer position `pos`."""
        if not self.count_lines:
            return 0
        if pos >= self._mark:
            self._mark_line += self.buf.count("\n", self._mark, pos)
        else:
            self._mark_line -= self.buf.count("\n", pos, self._mark)
        self._mark = pos
        return self._mark_line

    def fail(self, message: str, pos: int | None = None) -> ParseError:
        return ParseError(message, source=self.source, line=self.line_at(self.pos if pos is None else pos))

    def fill(self) -> bool:
        """Append the next chunk (dropping what was consumed); False at the end."""
        if self.eof:
            return False
        chunk = self._read(_CHUNK)
        if self.pos:
            if self.count_lines:
                self.line_at(self.pos)
            self.buf = self.buf[self.pos :]
            self.base += self.pos
            self._mark = 0
            self.pos = 0
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def skip_ws(self) -> str:
        """Skip whitespace; the next character, or '' at the end."""
        while True:
            buf = self.buf
            pos = _WHITESPACE.match(buf, self.pos).end()  # type: ignore[union-attr]
            self.pos = pos
            if pos < len(buf):
                return buf[pos]
            if not self.fill():
                return ""

    def value(self) -> Any:
        """Decode the JSON value that starts at the current position."""
        while True:
            try:
                obj, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                # An error at (or just before) the end of the buffer, or inside a string
                # that runs to it, may only mean the value continues in the next chunk.
                near_end = exc.pos >= len(self.buf) - 16 or exc.msg.startswith("Unterminated string")
                if near_end and len(self.buf) - self.pos < _MAX_EVENT_CHARS and self.fill():
                    continue
                # A value cut short by the end of the file is named by the line it starts on.
                where = self.pos if near_end else exc.pos
                raise self.fail(f"malformed JSON: {exc.msg}", where) from None
            except RecursionError:
                raise self.fail("malformed JSON: nested too deeply") from None
            except ValueError:  # an integer of more digits than int() takes
                raise self.fail(
                    f"malformed JSON: an integer of more than {sys.get_int_max_str_digits()} digits"
                ) from None
            if end >= len(self.buf) and not self.eof and self.fill():
                # A number cut at the chunk's end parses as a shorter number: re-read.
                continue
            self.pos = end
            return obj

    def expect(self, char: str, what: str) -> None:
        got = self.skip_ws()
        if got != char:
            found = repr(got) if got else "the end of the file"
            raise self.fail(f"malformed JSON: expected {char!r} {what}, found {found}")
        self.pos += 1


# --------------------------------------------------------------------------- reader


class KinetoReader:
    """Iterate the GPU ops, launch calls and ranges of a Kineto trace (see module doc)."""

    def __init__(
        self, path: str | Path, *, cpu_ops: bool = False, launches_only: bool = False, layout_scan: bool = True
    ) -> None:
        self.path = Path(path)
        self.source = str(path)
        self.cpu_ops = cpu_ops
        self.launches_only = launches_only
        # Off only to compare the ways of reading (see the module docstring).
        self.layout_scan = layout_scan
        self.metadata = KinetoMetadata()
        self._scan: re.Pattern[str] | None = None  # the older layout scan's pattern, made on first use
        self._general_until = 0  # where the stream may be read a run at a time again
        self._first_key: str | None = None  # the first key of the first event (`"ph"`), quoted
        self._judged = Judged(launches_only)

    def __iter__(self) -> Iterator[KinetoEvent]:
        for item in self._read(batching=False):
            assert not isinstance(item, EventBatch)
            yield item

    def batches(self) -> Iterator[EventBatch]:
        """The same events as iteration yields (without `cpu_ops`), as columns: many
        events at a time, in file order, whatever the file's layout."""
        if self.cpu_ops:
            raise ValueError("cpu_op events are read by iterating the reader")
        pending = EventBatch()
        try:
            for item in self._read(batching=True):
                if isinstance(item, EventBatch):
                    if len(pending):
                        yield pending
                        pending = EventBatch()
                    yield item
                else:
                    _add_record(pending, item)
        except ParseError as exc:
            raise self._with_line(exc) from None
        if len(pending):
            yield pending

    def _with_line(self, exc: ParseError) -> ParseError:
        """`batches()` counts no lines (a tenth of a large trace's reading): the error
        read again event by event, which names the line."""
        try:
            for _ in self._read(batching=False):
                pass
        except ParseError as named:
            return named
        return exc

    def _read(self, *, batching: bool) -> Iterator[KinetoEvent | EventBatch]:
        self._general_until, self._first_key = 0, None
        try:
            raw: BinaryIO = open(self.path, "rb")  # noqa: SIM115
        except OSError as exc:
            raise ParseError(f"cannot read the file: {exc.strerror or exc}", source=self.source) from None
        with raw:
            magic = raw.read(2)
            raw.seek(0)
            binary: BinaryIO | gzip.GzipFile = gzip.GzipFile(fileobj=raw, mode="rb") if magic == b"\x1f\x8b" else raw
            decoder = codecs.getincrementaldecoder("utf-8")("strict")
            first = [True]

            def read(size: int) -> str:
                data = binary.read(size)
                text = decoder.decode(data, final=not data)
                if first[0]:
                    first[0] = False
                    text = text.removeprefix("\ufeff")
                return text

            stream = _JsonStream(read, self.source, count_lines=not batching)
            try:
                yield from self._document(stream, batching)
            except UnicodeDecodeError as exc:
                raise stream.fail(f"not UTF-8 text ({exc.reason})", len(stream.buf)) from None
            except (OSError, EOFError, zlib.error) as exc:
                raise stream.fail(f"cannot decompress: {exc}", len(stream.buf)) from None

    def _document(self, stream: _JsonStream, batching: bool) -> Iterator[KinetoEvent | EventBatch]:
        first = stream.skip_ws()
        if first == "[":
            stream.pos += 1
            yield from self._events(stream, batching, top_level=True)
        elif first == "{":
            stream.pos += 1
            yield from self._object(stream, batching)
        else:
            found = repr(first) if first else "an empty file"
            raise stream.fail(f"not a Chrome trace (JSON object or array expected, found {found})")
        if stream.skip_ws():
            raise stream.fail("malformed JSON: extra data after the trace")

    def _object(self, stream: _JsonStream, batching: bool) -> Iterator[KinetoEvent | EventBatch]:
        seen_events = False
        first_key = True
        if stream.skip_ws() == "}":
            stream.pos += 1
        else:
            while True:
                if stream.skip_ws() != '"':
                    raise stream.fail("malformed JSON: expected a key")
                key = stream.value()
                stream.expect(":", "after a key")
                stream.skip_ws()
                if first_key and key in _OTHER_PROFILERS:
                    raise ParseError(
                        f"{_OTHER_PROFILERS[key]}, not a Chrome trace",
                        source=stream.source,
                        hint="nsightlab reads torch.profiler's traces: profile the run with torch.profiler "
                        "(ProfilerActivity.CUDA records HIP kernels too on ROCm) and give its .json",
                    )
                first_key = False
                if key == "traceEvents":
                    if stream.skip_ws() != "[":
                        raise stream.fail("`traceEvents` is not an array")
                    stream.pos += 1
                    seen_events = True
                    yield from self._events(stream, batching, top_level=False)
                else:
                    self._metadata(key, stream.value())
                sep = stream.skip_ws()
                if sep == ",":
                    stream.pos += 1
                    continue
                if sep == "}":
                    stream.pos += 1
                    break
                found = repr(sep) if sep else "the end of the file"
                raise stream.fail(f"malformed JSON: expected ',' or '}}' after a value, found {found}")
        if not seen_events:
            raise stream.fail("no `traceEvents` in this JSON: not a Chrome trace")

    def _metadata(self, key: str, value: Any) -> None:
        meta = self.metadata
        if key == "deviceProperties" and isinstance(value, list):
            meta.device_names = [str(d["name"]) for d in value if isinstance(d, dict) and "name" in d]
            meta.device_figures = [
                tuple(  # type: ignore[misc]
                    v if type(v) is int else None
                    for v in (d.get("totalGlobalMem"), d.get("numSms"), d.get("computeMajor"), d.get("computeMinor"))
                )
                for d in value
                if isinstance(d, dict)
            ]
        elif key in _HIP_KEYS:
            meta.runtime = "hip"
        elif key in _CUDA_KEYS and meta.runtime is None:
            meta.runtime = "cuda"
        elif key == "schemaVersion" and isinstance(value, int | str):
            meta.schema_version = value
        elif key == "distributedInfo" and isinstance(value, dict):
            rank, world = value.get("rank"), value.get("world_size")
            meta.rank = rank if type(rank) is int else None
            meta.world_size = world if type(world) is int else None

    def _events(self, stream: _JsonStream, batching: bool, *, top_level: bool) -> Iterator[KinetoEvent | EventBatch]:
        if stream.skip_ws() == "]":
            stream.pos += 1
            return
        while True:
            stream.skip_ws()
            run = self._run(stream, batching)
            if run is not None:
                yield from run
            else:
                start = stream.base + stream.pos  # reading the value may move the buffer
                event = stream.value()
                item = self._item(event, stream, start - stream.base)
                if item is not None:
                    yield item
            sep = stream.skip_ws()
            if sep == ",":
                stream.pos += 1
                if top_level and stream.skip_ws() in ("", "]"):
                    # The array format allows a trailing comma and no closing bracket.
                    if stream.skip_ws() == "]":
                        stream.pos += 1
                    return
                continue
            if sep == "]":
                stream.pos += 1
                return
            if sep == "" and top_level:
                return
            found = repr(sep) if sep else "the end of the file"
            raise stream.fail(f"malformed JSON: expected ',' or ']' in traceEvents, found {found}")

    def _item(self, event: object, stream: _JsonStream, pos: int) -> KinetoEvent | None:
        """The record of one decoded event, or None for an event not read here."""
        if type(event) is not dict:
            return None
        cat = event.get("cat")
        if type(cat) is not str:
            return None
        low = cat.lower()
        if low in GPU_CATS or low in LAUNCH_CATS or low in RANGE_CATS or (low == CPU_OP_CAT and self.cpu_ops):
            return self._event(event, low, stream, pos)
        return None

    # ------------------------------------------------------------- runs of events

    def _run(self, stream: _JsonStream, batching: bool) -> list[KinetoEvent] | list[EventBatch] | None:
        """The events from the current one to the last whole one in the buffer: for
        `batches()`, decoded in one call into one batch (module docstring); else, in
        Kineto's layout, the layout scan's records. The stream is then left after the
        last. None, with nothing consumed, where they are to be read the general way."""
        if stream.base + stream.pos < self._general_until:
            return None
        layout = self.layout_scan and _FIRST.match(stream.buf, stream.pos) is not None
        if not batching:
            return self._layout_block(stream) if layout else None
        end = _layout_end(stream) if layout else self._cut(stream)
        if end < 0:
            return None
        batch = decode_batch("".join(("[", stream.buf[stream.pos : end], "]")), self._judged)
        if batch is not None:
            stream.pos = end
            return [batch]
        if layout:  # something unusual: the layout scan reads them, as iteration does
            return self._layout_block(stream)
        self._general_until = stream.base + end  # the general way, event by event
        return None

    def _cut(self, stream: _JsonStream) -> int:
        """Where the last whole event in the buffer ends, if one begins with the key the
        first event began with (`}, {"ph"`); -1 if none does."""
        key = self._first_key
        if key is None:
            m = _FIRST_KEY.match(stream.buf, stream.pos)
            if m is None:
                return -1
            key = self._first_key = m.group(1)
        for _ in range(2):  # once more after reading another chunk
            buf, pos = stream.buf, stream.pos
            at = len(buf)
            for _ in range(_CUT_TRIES):
                at = buf.rfind(key, pos, at)
                close = buf.rfind("}", pos, at) if at > pos else -1
                if close < 0:
                    break
                if _BETWEEN.fullmatch(buf, close, at):
                    return close + 1
            if not stream.fill():
                break
        return -1

    def _layout_block(self, stream: _JsonStream) -> list[KinetoEvent] | None:
        """The layout scan (module docstring): the records of the events from the current
        one to the last whole one in the buffer; the stream is then left after the last.
        None, with nothing consumed, when they are not all in that layout: the general way
        then reads them, and reports any error in them."""
        buf, pos = stream.buf, stream.pos
        last = buf.rfind(_SEP, pos)
        if last < 0 and stream.fill():
            buf, pos = stream.buf, stream.pos
            last = buf.rfind(_SEP, pos)
        if last < 0:
            return None
        # End the block before the first event whose first key is not `ph`.
        odd = _ODD_START.search(buf, pos, last)
        if odd is not None:
            last = odd.start()
        end = last + len(_CLOSE)
        out: list[KinetoEvent] = []
        decode = stream.decoder.raw_decode
        if self._scan is None:
            self._scan = _layout_pattern(self.cpu_ops, self.launches_only)
        for match in self._scan.finditer(buf, pos, end):
            at = match.start()
            try:
                event, stop = decode(buf, at)
            except (json.JSONDecodeError, RecursionError, ValueError):
                event, stop = None, -1
            if buf[stop - len(_CLOSE) : stop] != _CLOSE:
                # Not one whole event: leave the block to the general way.
                self._general_until = stream.base + end
                return None
            item = self._item(event, stream, at)
            if item is not None:
                out.append(item)
        stream.pos = end
        return out

    def _event(self, event: dict[str, Any], cat: str, stream: _JsonStream, pos: int) -> KinetoEvent | None:
        get = event.get
        if get("ph", "X") != "X":
            return None
        ts, dur = get("ts"), get("dur", 0)
        if type(ts) is int and type(dur) is int and -US_MAX <= ts <= US_MAX and -US_MAX <= dur <= US_MAX:
            # most traces: whole microseconds
            start, dur = ts * 1000, dur * 1000
        else:
            try:
                start = us_to_ns(event["ts"])
                dur = us_to_ns(dur)
            except (KeyError, ValueError) as exc:
                raise stream.fail(f"a {cat} event without a numeric ts/dur ({exc})", pos) from None
        end = start + dur if dur > 0 else start
        if end > NS_MAX:
            raise stream.fail(f"a {cat} event that ends past the int64 nanosecond range ({end} ns)", pos)
        name = get("name")
        if type(name) is not str:
            name = "" if name is None else str(name)
        args = get("args")
        if type(args) is not dict:
            args = {}
        corr = args.get("correlation")
        if type(corr) is not int:
            corr = None
        kind = GPU_CATS.get(cat)
        if kind is not None:
            device = args.get("device", get("pid"))
            stream_id = args.get("stream", get("tid"))
            line = stream.line_at(pos)
            return GpuEvent(start, end, name, kind, ident(device), ident(stream_id), corr, line)
        if cat in LAUNCH_CATS and self.launches_only and not (puts_work_on_gpu(name) or is_sync_call(name)):
            return None
        pid, tid = get("pid"), get("tid")
        if type(pid) is not int:
            pid = ident(pid)
        if type(tid) is not int:
            tid = ident(tid)
        line = stream.line_at(pos)
        if cat in LAUNCH_CATS:
            return LaunchCall(start, end, name, corr, pid, tid, line)
        if cat == CPU_OP_CAT:
            return CpuOp(start, end, name, pid, tid, line)
        return TraceRange(start, end, name, RANGE_CATS[cat], pid, tid, line)


# Generic runs (`batches()`): the first key of an event, and what lies between the `}` of
# one event and the first key of the next. The key searched for, back from the buffer's
# end, may also be a value or sit in a nested object: a few candidates are tried.
_FIRST_KEY = re.compile(r'\{[ \t\r\n]*("[A-Za-z_][A-Za-z0-9_]*")[ \t\r\n]*:')
_BETWEEN = re.compile(r"\}[ \t\r\n]*,[ \t\r\n]*\{[ \t\r\n]*")
_CUT_TRIES = 64


def _layout_end(stream: _JsonStream) -> int:
    """Where the last whole event of Kineto's layout in the buffer ends (after its `}`),
    reading another chunk if none does; -1 if none."""
    last = stream.buf.rfind(_SEP, stream.pos)
    if last < 0 and stream.fill():
        last = stream.buf.rfind(_SEP, stream.pos)
    return last + len(_CLOSE) if last >= 0 else -1


def _add_record(batch: EventBatch, event: KinetoEvent) -> None:
    """One record as a row of `batch` (the general way's events, between runs)."""
    if type(event) is GpuEvent:
        batch.gpu_start.append(event.start_ns)
        batch.gpu_end.append(event.end_ns)
        batch.gpu_name.append(event.name)
        batch.gpu_kind.append(event.kind)
        batch.gpu_stream.append((event.device, event.stream))
        batch.gpu_corr.append(-1 if event.correlation is None else event.correlation)
    elif type(event) is LaunchCall:
        batch.call_name.append(event.name)
        batch.call_start.append(event.start_ns)
        batch.call_end.append(event.end_ns)
        batch.call_corr.append(event.correlation)
        batch.call_pid.append(event.pid)
    elif type(event) is TraceRange:
        batch.ranges.append((event.name, event.start_ns, event.end_ns, event.cat, event.pid, event.tid))


def read_kineto(path: str | Path) -> Iterator[KinetoEvent]:
    """The events of a Kineto trace, in file order (see `KinetoReader`)."""
    return iter(KinetoReader(path))
