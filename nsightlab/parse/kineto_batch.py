"""Kineto events decoded many at a time, into columns.

`decode_events(text)` decodes a run of trace events (`{...}, {...}`, the text between two
event boundaries of `traceEvents`) in one call of msgspec's C decoder. Only the keys the
reader uses become Python objects (`RawEvent`: `ph`, `cat`, `name`, `pid`, `tid`, `ts`,
`dur`, and `args`' `correlation`, `device`, `stream`); every other key is skipped as it is
parsed. A key that is absent is `UNSET` where the reader tells absent from null. Times
are decoded as numbers (`numbers=True`: doubles, exact in ns while below 2**41 us,
`ns_column`), or else as their JSON text, as the stdlib decoder's `parse_float=str` gives
them (converted to nanoseconds exactly); `decode_batch` takes numbers until a run's times
are not exact as doubles, and text from then on. Anything msgspec refuses (a value that is
not an object, `args` that is not an object, NaN, a lone surrogate) raises
`BlockError`: the reader then decodes those events one at a time, the general way.

`EventBatch.of(events, launches_only)` judges decoded events as the reader judges each
event it decodes (`kineto.KinetoReader`) and keeps what a step's anatomy needs in
parallel lists: the GPU operations, the runtime calls, the ranges. The common case is
done by C loops over the whole batch (`map`, `compress`); a batch holding anything
unusual (a time that is not a number, a string where a number belongs, a name that is
not a string) gives None, and its events are judged one at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import add, attrgetter, eq, mul, sub, truediv
from typing import Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from nsightlab.parse.apicalls import is_sync_call
from nsightlab.parse.names import puts_work_on_gpu

GpuKind = Literal["kernel", "memcpy", "memset"]
RangeCat = Literal["user_annotation", "gpu_user_annotation"]

# The widest time a trace holds: int64 nanoseconds (in microseconds for whole numbers).
NS_MAX = 2**63 - 1
US_MAX = NS_MAX // 1000

GPU_CATS: dict[str, GpuKind] = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "gpu_memset": "memset",
    "memcpy": "memcpy",
    "memset": "memset",
}
# Launch categories as Kineto spells them (the layout scan takes these exact spellings);
# everywhere else they are compared lower-cased.
LAUNCH_SPELLINGS = ("cuda_runtime", "cuda_driver", "runtime", "Runtime", "driver", "Driver")
LAUNCH_CATS = frozenset(s.lower() for s in LAUNCH_SPELLINGS)
CPU_OP_CAT = "cpu_op"
RANGE_CATS: dict[str, RangeCat] = {
    "user_annotation": "user_annotation",
    "gpu_user_annotation": "gpu_user_annotation",
}


class BlockError(Exception):
    """The events of a block cannot be decoded in one call (see the module docstring)."""


class RawArgs(msgspec.Struct, frozen=True, gc=False):
    correlation: int | UnsetType = UNSET
    device: int | UnsetType = UNSET
    stream: int | UnsetType = UNSET


_NO_ARGS = RawArgs()


class RawEvent(msgspec.Struct, gc=False):
    """The keys of one trace event the reader uses, of the types Kineto writes (the
    decoder refuses others: their events are judged one at a time); defaults as
    `dict.get` gives them to the reader."""

    ph: str = "X"
    cat: str | None = None
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    ts: Any = UNSET
    dur: Any = 0
    args: RawArgs = _NO_ARGS


class NumberEvent(RawEvent, gc=False):
    """A `RawEvent` whose times are decoded as numbers (floats by msgspec's own parser)."""

    ts: int | float | UnsetType = UNSET
    dur: int | float = 0


# Floats as their JSON text, exactly as written (`us_to_ns` reads them).
_TEXT_DECODER = msgspec.json.Decoder(list[RawEvent], float_hook=str)
# Floats as floats: exact when small enough (`ns_column`), and no string per time.
_NUMBER_DECODER = msgspec.json.Decoder(list[NumberEvent])


def decode_events(text: str, *, numbers: bool = False) -> list[RawEvent]:
    """The events of `text`, a JSON array of trace events, in one call (module docstring);
    with `numbers`, times that are floats come as floats, not as their text."""
    try:
        events: list[Any] = (_NUMBER_DECODER if numbers else _TEXT_DECODER).decode(text)
        return events
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeEncodeError) as exc:
        raise BlockError(str(exc)) from None


def decode_batch(text: str, judged: Judged) -> EventBatch | None:
    """The batch of the events of `text` (`EventBatch.of`), None where they need the
    event-at-a-time path. Times are decoded as numbers first, while the reader's times
    have all been exact as floats (`ns_column`); from the first run where one is not (a
    trace whose times since its clock's origin pass 2**41 us, 25 days), as text."""
    if judged.float_times:
        try:
            batch = EventBatch.of(decode_events(text, numbers=True), judged)
        except BlockError:
            batch = None
        if batch is not None:
            return batch
        judged.float_times = False
    try:
        return EventBatch.of(decode_events(text), judged)
    except BlockError:
        return None


# ------------------------------------------------------------------------ times

# Digits after the point -> the factor from the digits without the point to ns; the
# key is the text's length less the point's index (1 + the number of decimals).
_SCALE = {2: 100, 3: 10, 4: 1}
_NUMERIC = b"-0123456789."


def ns_column(values: Sequence[Any]) -> list[int] | None:
    """Microseconds as the decoder gave them -> integer ns, all at once: whole numbers
    within int64 ns, doubles below 2**41 us (`_ns_of_floats`), or float texts of one to
    three decimals (`-?digits.digits`). None when any value is something else (the text,
    or the event-at-a-time path, then reads it)."""
    if not values:
        return []
    kinds = set(map(type, values))
    if kinds == {int}:
        if min(values) < -US_MAX or max(values) > US_MAX:
            return None
        return list(map(mul, values, repeat(1000)))
    if float in kinds and kinds <= {int, float}:
        return _ns_of_floats(values)
    if kinds != {str}:
        return None
    points = list(map(str.find, values, repeat(".")))
    joined = "".join(values)
    # digits, one point each, a sign only in front (int() would take `.-5` as `-5`)
    if -1 in points or joined.count(".") != len(values) or ".-" in joined:
        return None
    try:
        if joined.encode("utf-8").translate(None, _NUMERIC):
            return None
        scale = list(map(_SCALE.__getitem__, map(sub, map(len, values), points)))
        ns = list(map(mul, map(int, map(str.replace, values, repeat("."), repeat(""))), scale))
    except (KeyError, ValueError, UnicodeEncodeError):
        return None
    if min(ns) < -NS_MAX or max(ns) > NS_MAX:
        return None
    return ns


# Below 2**41 us a double's spacing is at most 2**-12 us (0.24 ns): of the numbers of
# whole ns, only the text's own is read as its double, and the nearest whole ns to the
# double is it.
_FLOAT_EXACT = 2**41


def _ns_of_floats(values: Sequence[float]) -> list[int] | None:
    """Microseconds decoded as doubles (and ints) -> integer ns, exactly `us_to_ns` of the
    text each was decoded from: the nearest whole ns, kept only where that ns in us is
    read as the same double and the times are below 2**41 us, where any text read as that
    double rounds to that ns (more decimals included). None otherwise: read the text."""
    if min(values) <= -_FLOAT_EXACT or max(values) >= _FLOAT_EXACT:
        return None
    ns = list(map(float.__round__, map(mul, values, repeat(1000.0))))  # round(), without its dispatch
    if list(map(truediv, ns, repeat(1000))) != values:
        return None
    return ns


def _ends(starts: list[int], durs: list[int]) -> list[int] | None:
    """start + dur (a negative duration reads as zero); None past int64 ns."""
    if not durs:
        return []
    positive = durs if min(durs) >= 0 else map(max, durs, repeat(0))
    ends = list(map(add, starts, positive))
    return None if max(ends) > NS_MAX else ends


# ---------------------------------------------------------------------- batches

# What an event of a category is: a GPU op's kind, a call, a range, or nothing.
_KERNEL, _MEMCPY, _MEMSET, _CALL, _USER, _GPU_USER, _SKIP = range(7)
_KIND_OF = {"kernel": _KERNEL, "memcpy": _MEMCPY, "memset": _MEMSET}
_KINDS: tuple[GpuKind, GpuKind, GpuKind] = ("kernel", "memcpy", "memset")
# bytes.translate tables: a code -> 1 where an event of it is of the kind, else 0.
_IS_GPU = bytes([1, 1, 1, 0, 0, 0, 0]).ljust(256, b"\0")
_IS_CALL = bytes([0, 0, 0, 1, 0, 0, 0]).ljust(256, b"\0")
_IS_RANGE = bytes([0, 0, 0, 0, 1, 1, 0]).ljust(256, b"\0")
_RANGE_OF: dict[int, RangeCat] = {_USER: "user_annotation", _GPU_USER: "gpu_user_annotation"}

_CAT = attrgetter("cat")
_PH = attrgetter("ph")
_TS = attrgetter("ts")
_DUR = attrgetter("dur")
_NAME = attrgetter("name")
_PID = attrgetter("pid")
_TID = attrgetter("tid")
_ARGS = attrgetter("args")
_CORR = attrgetter("correlation")
_DEVICE = attrgetter("device")
_STREAM = attrgetter("stream")


def _category(cat: str | None) -> int:
    if cat is None:
        return _SKIP
    low = cat.lower()
    if low in GPU_CATS:
        return _KIND_OF[GPU_CATS[low]]
    if low in LAUNCH_CATS:
        return _CALL
    if low in RANGE_CATS:
        return _USER if low == "user_annotation" else _GPU_USER
    return _SKIP


def ident(value: object) -> int | str | None:
    """A device, stream, process or thread id as the reader keeps it."""
    if type(value) is int or type(value) is str:
        return value
    return None if value is None else str(value)


class Judged:
    """What a reader has judged once per distinct value (a trace repeats a few): what an
    event of a category is, a duration in ns, whether a call of a name is kept."""

    def __init__(self, launches_only: bool) -> None:
        self.launches_only = launches_only
        self.categories: dict[object, int] = {}
        self.kept: dict[str, bool] = {}
        self.float_times = True  # times decoded as numbers until one is not exact so


@dataclass
class EventBatch:
    """The GPU operations, runtime calls and ranges of a run of events, as columns.

    GPU op i: `gpu_start[i]`, `gpu_end[i]` (ns), `gpu_name[i]`, `gpu_kind[i]`,
    `gpu_stream[i]` (its (device, stream) pair), `gpu_corr[i]` (-1: none). Call j:
    `call_name[j]`, `call_start[j]`, `call_end[j]`, `call_corr[j]` (None: none),
    `call_pid[j]`. `ranges`: (name, start, end, cat, pid, tid).
    """

    gpu_start: list[int] = field(default_factory=list)
    gpu_end: list[int] = field(default_factory=list)
    gpu_name: list[str] = field(default_factory=list)
    gpu_kind: list[GpuKind] = field(default_factory=list)
    gpu_stream: list[tuple[int | str | None, int | str | None]] = field(default_factory=list)
    gpu_corr: list[int] = field(default_factory=list)
    call_name: list[str] = field(default_factory=list)
    call_start: list[int] = field(default_factory=list)
    call_end: list[int] = field(default_factory=list)
    call_corr: list[int | None] = field(default_factory=list)
    call_pid: list[int | str | None] = field(default_factory=list)
    ranges: list[tuple[str, int, int, RangeCat, int | str | None, int | str | None]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.gpu_start) + len(self.call_start) + len(self.ranges)

    def extend(self, other: EventBatch) -> None:
        """Add `other`'s rows after this batch's."""
        for name in _COLUMNS:
            getattr(self, name).extend(getattr(other, name))

    @classmethod
    def of(cls, events: list[RawEvent], judged: Judged) -> EventBatch | None:
        """The batch of decoded `events` (module docstring); None when one of them needs
        the event-at-a-time path."""
        codes = _lookup(judged.categories, list(map(_CAT, events)), _category)
        if codes is None:  # an unhashable cat
            return None
        batch = cls()
        code_bytes = bytes(codes)  # masks by bytes.translate, in one C pass each
        mask = code_bytes.translate(_IS_GPU)
        if 1 in mask and not batch._gpu(*_x_events(events, codes, mask), judged):
            return None
        mask = code_bytes.translate(_IS_CALL)
        if 1 in mask and not batch._calls(_x_events(events, codes, mask)[0], judged):
            return None
        mask = code_bytes.translate(_IS_RANGE)
        if 1 in mask and not batch._ranges(*_x_events(events, codes, mask), judged):
            return None
        return batch

    @staticmethod
    def _times(events: list[RawEvent]) -> tuple[list[int], list[int]] | None:
        starts = ns_column(list(map(_TS, events)))
        durs = ns_column(list(map(_DUR, events)))
        if starts is None or durs is None:
            return None
        ends = _ends(starts, durs)
        return None if ends is None else (starts, ends)

    def _gpu(self, events: list[RawEvent], codes: list[int], judged: Judged) -> bool:
        times = self._times(events)
        if times is None:
            return False
        args = list(map(_ARGS, events))
        corrs = list(map(_CORR, args))
        if UNSET in corrs:
            corrs = [-1 if c is UNSET else c for c in corrs]
        devices, streams = list(map(_DEVICE, args)), list(map(_STREAM, args))
        if UNSET in devices or UNSET in streams:  # the pid and tid stand in
            keys = list(map(_stream_key, devices, streams, map(_PID, events), map(_TID, events)))
        else:
            keys = list(zip(devices, streams, strict=True))
        self.gpu_start, self.gpu_end = times
        self.gpu_name = list(map(_NAME, events))
        self.gpu_kind = list(map(_KINDS.__getitem__, codes))
        self.gpu_stream = keys
        self.gpu_corr = corrs
        return True

    def _calls(self, events: list[RawEvent], judged: Judged) -> bool:
        times = self._times(events)  # every call's: a bad time is an error whether it is kept or not
        if times is None:
            return False
        names = list(map(_NAME, events))
        starts, ends = times
        if judged.launches_only:
            keep = _lookup(judged.kept, names, _kept_call)
            assert keep is not None  # names are strings
            if not all(keep):
                events, names = list(compress(events, keep)), list(compress(names, keep))
                starts, ends = list(compress(starts, keep)), list(compress(ends, keep))
        corrs = list(map(_CORR, map(_ARGS, events)))
        self.call_name, self.call_start, self.call_end = names, starts, ends
        self.call_corr = [None if c is UNSET else c for c in corrs] if UNSET in corrs else corrs
        self.call_pid = list(map(_PID, events))
        return True

    def _ranges(self, events: list[RawEvent], codes: list[int], judged: Judged) -> bool:
        times = self._times(events)
        if times is None:
            return False
        for e, code, start, end in zip(events, codes, *times, strict=True):
            self.ranges.append((e.name, start, end, _RANGE_OF[code], e.pid, e.tid))
        return True


_COLUMNS = tuple(EventBatch.__dataclass_fields__)

K = TypeVar("K")
V = TypeVar("V")


def _lookup(known: dict[K, V], keys: list[K], judge: Callable[[K], V]) -> list[V] | None:
    """`known[key]` for every key, judging the keys not seen before; None for an
    unhashable key."""
    try:
        values = list(map(known.get, keys))
        if None in values:
            for key in set(keys):
                if key not in known:
                    known[key] = judge(key)
            values = list(map(known.__getitem__, keys))
    except TypeError:
        return None
    return values  # type: ignore[return-value]


def _x_events(events: list[RawEvent], codes: list[int], mask: bytes) -> tuple[list[RawEvent], list[int]]:
    """The events (and their codes) where `mask` is set that are complete events (`ph`
    X): the others are not read."""
    chosen = list(compress(events, mask))
    codes = list(compress(codes, mask))
    phs = list(map(_PH, chosen))
    if set(phs) == {"X"}:
        return chosen, codes
    keep = list(map(eq, phs, repeat("X")))
    return list(compress(chosen, keep)), list(compress(codes, keep))


def _stream_key(
    device: int | UnsetType, stream: int | UnsetType, pid: int | str | None, tid: int | str | None
) -> tuple[int | str | None, int | str | None]:
    return pid if device is UNSET else device, tid if stream is UNSET else stream


def _kept_call(name: str) -> bool:
    return puts_work_on_gpu(name) or is_sync_call(name)
