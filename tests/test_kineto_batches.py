"""`KinetoReader.batches()`, the columns `analyze` reads a Kineto trace as, against the
reader's own records (`iter(KinetoReader)`), which test_trace_readers.py checks event by
event: the same GPU operations, calls and ranges in the same order, or the same error
naming the same line, on the real traces and on any events in any layout, read in chunks
of any size; the column conversion of times against `us_to_ns`; and times no int64
nanosecond holds, refused in one line through `analyze`."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from clirun import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tracebuild import kernel, kineto_layout, launch

from nsightlab.errors import ParseError
from nsightlab.parse import kineto
from nsightlab.parse.kineto_batch import ns_column

HERE = Path(__file__).resolve().parent
TRACES = HERE / "data" / "traces"
REAL = sorted(TRACES.glob("hta_*.json.gz")) + sorted((TRACES / "engines").glob("*.json.gz"))

Rows = dict[str, list[Any]]


def _rows_of_records(reader: kineto.KinetoReader) -> Rows:
    rows: Rows = {"gpu": [], "calls": [], "ranges": []}
    for e in reader:
        if isinstance(e, kineto.GpuEvent):
            corr = -1 if e.correlation is None else e.correlation
            rows["gpu"].append((e.start_ns, e.end_ns, e.name, e.kind, (e.device, e.stream), corr))
        elif isinstance(e, kineto.LaunchCall):
            rows["calls"].append((e.name, e.start_ns, e.end_ns, e.correlation, e.pid))
        elif isinstance(e, kineto.TraceRange):
            rows["ranges"].append((e.name, e.start_ns, e.end_ns, e.cat, e.pid, e.tid))
    return rows


def _rows_of_batches(reader: kineto.KinetoReader) -> Rows:
    rows: Rows = {"gpu": [], "calls": [], "ranges": []}
    for b in reader.batches():
        cols = (b.gpu_start, b.gpu_end, b.gpu_name, b.gpu_kind, b.gpu_stream, b.gpu_corr)
        assert len(set(map(len, cols))) == 1
        rows["gpu"].extend(zip(*cols, strict=True))
        calls = (b.call_name, b.call_start, b.call_end, b.call_corr, b.call_pid)
        rows["calls"].extend(zip(*calls, strict=True))
        rows["ranges"].extend(b.ranges)
    return rows


def _read(path: Path, how: str, **flags: Any) -> Rows | tuple[str, int | None]:
    reader = kineto.KinetoReader(path, **flags)
    try:
        return _rows_of_batches(reader) if how == "batches" else _rows_of_records(reader)
    except ParseError as exc:
        return str(exc), exc.lineno


@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
@pytest.mark.parametrize("launches_only", [False, True])
def test_batches_read_the_real_traces_as_iteration_does(path: Path, launches_only: bool) -> None:
    got = _read(path, "batches", launches_only=launches_only)
    assert isinstance(got, dict) and got["gpu"]
    assert got == _read(path, "records", launches_only=launches_only)


# ------------------------------------------------------------ any events, any layout

_VALUE = st.one_of(
    st.integers(-5, 10**6),
    st.decimals(-10, 10**6, places=3).map(float),
    st.sampled_from([None, True, "12.5", " 7.25 ", "x", 1e20, 1.5e3, 0.0005, [1], {"a": 1}, 10**40]),
)
_ID = st.one_of(st.integers(0, 3), st.sampled_from(["Spans", None, 1.5, True, [0]]))
_CATS = ["kernel", "Kernel", "KERNEL", "gpu_memcpy", "Memset", "cuda_runtime", "Runtime", "cuda_driver",
         "user_annotation", "gpu_user_annotation", "cpu_op", "ac2g", "python_function", None, 7]  # fmt: skip
_NAMES = ["cudaLaunchKernel", "cudaEventQuery", "cudaStreamSynchronize", "cudaGraphLaunch", "k<float>(int)",
          'q"uote', "a\nb", "ProfilerStep#3", "", None, 5]  # fmt: skip
_ARGS = st.fixed_dictionaries(
    {},
    optional={
        "correlation": st.one_of(st.integers(-2, 9), st.sampled_from([None, "3", True, 2.5])),
        "device": _ID,
        "stream": _ID,
        "grid": st.just([1, 1, 1]),
    },
)
_EVENT = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "X", "X", "f", "i", 5]), "cat": st.sampled_from(_CATS)},
    optional={
        "name": st.sampled_from(_NAMES),
        "pid": _ID,
        "tid": _ID,
        "ts": _VALUE,
        "dur": _VALUE,
        "args": st.one_of(_ARGS, st.sampled_from([None, [], "x"])),
    },
)
_LAYOUTS = {
    "kineto": lambda doc: kineto_layout(doc),
    "one line": lambda doc: json.dumps(doc),
    "indent": lambda doc: json.dumps(doc, indent=4),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    events=st.lists(_EVENT, max_size=30),
    layout=st.sampled_from(sorted(_LAYOUTS)),
    chunk=st.integers(16, 700),
    launches_only=st.booleans(),
)
def test_batches_property(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    events: list[dict[str, Any]],
    layout: str,
    chunk: int,
    launches_only: bool,
) -> None:
    """Any events in any layout, read in chunks of any size: the batches hold what the
    records hold, or raise the same error naming the same line."""
    monkeypatch.setattr(kineto, "_CHUNK", chunk)
    if layout == "kineto":  # its writer puts each arg on a line of its own: args are an object
        events = [e if isinstance(e.get("args", {}), dict) else {**e, "args": {}} for e in events]
    path = tmp_path / "trace.json"
    path.write_text(_LAYOUTS[layout]({"schemaVersion": 1, "traceEvents": events}), encoding="utf-8")
    assert _read(path, "batches", launches_only=launches_only) == _read(path, "records", launches_only=launches_only)


def test_a_run_that_does_not_decode_is_read_event_by_event(tmp_path: Path) -> None:
    # One line, as engines write their traces: a NaN (the stdlib reads it, msgspec does
    # not) and an escaped cat in the middle of ordinary events.
    events = [launch("cudaLaunchKernel", 1, 1, 1), kernel("a", 10, 2, 1)] * 50
    events[40] = {"ph": "X", "cat": "ker\\u006eel", "name": "escaped", "ts": 5, "dur": 1, "args": {"correlation": 9}}
    text = json.dumps({"traceEvents": events}).replace("ker\\\\u006eel", "ker\\u006eel")
    text = text.replace('"ts": 1, "dur": 1', '"ts": 1, "dur": 1, "x": NaN', 1)
    path = tmp_path / "odd.json"
    path.write_text(text, encoding="utf-8")
    got = _read(path, "batches")
    assert got == _read(path, "records")
    assert isinstance(got, dict) and [g[2] for g in got["gpu"]].count("escaped") == 1


# ------------------------------------------------------------------------- times


_TEXT = st.one_of(
    st.builds(
        lambda sign, whole, frac: f"{sign}{whole}.{frac}",
        st.sampled_from(["", "-", "+"]),
        st.integers(0, 10**19).map(str) | st.sampled_from(["00", "0", "007"]),
        st.text("0123456789", min_size=1, max_size=5),
    ),
    st.text("0123456789.-e+E _", min_size=1, max_size=8),
    st.integers(-(10**17), 10**17),
)


@given(values=st.lists(_TEXT, min_size=1, max_size=8), same=st.booleans())
def test_times_a_column_at_a_time_are_us_to_ns(values: list[Any], same: bool) -> None:
    """`ns_column` gives exactly `us_to_ns` of every value, or leaves the column to it
    (None); never a different number."""
    if same:  # one shape of text for all, as a writer prints them: the array path
        values = [v for v in values if isinstance(v, str)] or ["1.5"]
    try:
        expected: list[int] | None = [kineto.us_to_ns(v) for v in values]
    except ValueError:
        expected = None
    got = ns_column(values)
    assert got is None or got == expected
    if all(isinstance(v, int) and abs(v) <= kineto.US_MAX for v in values):
        assert got == expected


# Times as msgspec decodes JSON numbers (`decode_events(numbers=True)`): doubles of every
# magnitude around 2**41 us, where the column stops taking them, and texts of more
# decimals than whole ns, which must come out as us_to_ns rounds their text.
_NUMBER_TEXT = st.builds(
    lambda sign, whole, frac, exp: f"{sign}{whole}{'.' + frac if frac else ''}{exp}",
    st.sampled_from(["", "-"]),
    st.one_of(st.integers(0, 10**7), st.integers(2**40, 2**43), st.integers(0, 10**16)).map(str),
    st.text("0123456789", max_size=7) | st.sampled_from(["5", "0005", "9995", "4999999", "5000001"]),
    st.sampled_from(["", "", "", "e0", "e-3", "e2"]),
)


@given(texts=st.lists(_NUMBER_TEXT, min_size=1, max_size=8))
def test_times_decoded_as_numbers_are_us_to_ns_of_their_text(texts: list[str]) -> None:
    """The column of doubles (and ints) msgspec decodes from JSON numbers gives exactly
    `us_to_ns` of each number's text, or None (the text is then read); times of three
    decimals or fewer below 2**40 us are taken."""
    values = msgspec.json.decode(f"[{', '.join(texts)}]")
    expected = [kineto.us_to_ns(t) for t in texts]
    got = ns_column(values)
    assert got is None or got == expected
    plain = all("e" not in t and len(t.partition(".")[2]) <= 3 and abs(float(t)) < 2**40 for t in texts)
    if plain:
        assert got == expected


def test_a_trace_whose_times_pass_float_precision_is_read_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Times of 2**41 us and more, with decimals a double does not hold (a Kineto clock
    since boot, 25 days on), after runs of times it holds: every ns as the text says."""
    monkeypatch.setattr(kineto, "_CHUNK", 4096)  # many runs
    small = [launch("cudaLaunchKernel", 1.5, 1.25, 1), kernel("a", 10.125, 2.5, 1)] * 200
    big = [launch("cudaLaunchKernel", 1.5, 1.25, 2), kernel("b", 6520618853487.683, 2.5, 2)] * 200
    text = kineto_layout({"traceEvents": small + big})
    text = text.replace('"ts": 10.125, "dur": 2.5', '"ts": 10.125, "dur": 2.5001', 1)
    assert '"dur": 2.5001' in text
    path = tmp_path / "trace.json"
    path.write_text(text, encoding="utf-8")
    got = _read(path, "batches")
    assert got == _read(path, "records")
    assert isinstance(got, dict)
    assert {g[0] for g in got["gpu"]} == {10_125, 6_520_618_853_487_683}
    assert {g[1] - g[0] for g in got["gpu"]} == {2_500}


# ------------------------------------------------------------- refused, in one line


@pytest.fixture
def _home(nsl_home: Path) -> Path:
    return nsl_home


@pytest.mark.usefixtures("_home")
@pytest.mark.parametrize(
    ("ts", "dur", "message"),
    [
        ("1e999999", "1", "without a numeric ts/dur (out of range: '1e999999')"),
        ("1e2000000", "1", "without a numeric ts/dur (out of range: '1e2000000')"),
        ("9223372036854775", "9223372036854775", "ends past the int64 nanosecond range"),
        ("1" * 5000, "1", "malformed JSON: an integer of more than 4300 digits"),
    ],
    ids=["exponent", "larger-exponent", "end", "digits"],
)
@pytest.mark.parametrize("gz", [False, True])
def test_a_time_past_int64_ns_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, ts: str, dur: str, message: str, gz: bool
) -> None:
    events = [launch("cudaLaunchKernel", 1, 1, 1), kernel("a", 10, 2, 1)] * 20
    text = kineto_layout({"traceEvents": events}).replace('"ts": 10, "dur": 2', f'"ts": {ts}, "dur": {dur}', 1)
    path = tmp_path / ("trace.json.gz" if gz else "trace.json")
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    r = run_cli(capsys, "analyze", str(path), "--json")
    assert r.code == 2, r
    assert r.out == "" and "Traceback" not in r.err and "This is a bug" not in r.err, r
    [line] = r.err.strip().splitlines()
    assert line.startswith(f"error: {path}:10: "), line  # the line of its `{`
    assert message in line, line
