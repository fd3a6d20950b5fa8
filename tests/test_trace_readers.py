"""Trace readers: real nsys exports and Kineto traces (tests/data/traces, provenance in its
SOURCES.md), hand-built files in the exact formats (tracebuild), and fuzzing: any bytes end
in records or a ParseError naming the file and the line."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tracebuild import (
    API_HEADER,
    GPU_TRACE_HEADER,
    PROJ_HEADER,
    annotation,
    api_row,
    kernel,
    kernel_row,
    kineto_layout,
    launch,
    proj_row,
    write_csv,
    write_kineto,
)

from nsightlab.errors import ParseError
from nsightlab.parse import gputrace, kineto

DATA = Path(__file__).parent / "data" / "traces"
GPU_2026 = DATA / "vernier_nsys2026.3.1_rtx5000ada_cuda_gpu_trace.csv"
PUSHPOP_2026 = DATA / "vernier_nsys2026.3.1_rtx5000ada_nvtx_pushpop_trace.csv"
GPU_2025 = DATA / "vernier_nsys2025.3.2_thor_cuda_gpu_trace.csv"
PUSHPOP_2025 = DATA / "vernier_nsys2025.3.2_thor_nvtx_pushpop_trace.csv"
NEGQ = DATA / "hta_negative_queue_length_rank0.json.gz"
NSRES = DATA / "hta_ns_resolution_rank0.pt.trace.json.gz"
TRITON = DATA / "hta_triton_example.json.gz"
SAXPY = "vernier::bench::demo::<unnamed>::saxpyKernel(float, const float *, float *, unsigned long)"


# ------------------------------------------------------------ real nsys exports


def test_real_gpu_trace_rows_read_by_column_meaning() -> None:
    reader = gputrace.GpuTraceReader(GPU_2026)
    ops = list(reader)
    assert reader.in_start_order
    assert len(ops) == 16
    first = ops[0]
    # `1134711990,661398,123,,,,,,,,,,4.194,6337.593,Pinned,Device,NVIDIA RTX 5000 ... (0),1,,13,[CUDA memcpy
    # Host-to-Device]`
    assert (first.start_ns, first.end_ns, first.corr_id, first.stream) == (1134711990, 1134711990 + 661398, 123, 13)
    assert (first.kind, first.bytes, first.line) == ("memcpy", 4_194_000, 2)
    assert first.device == "NVIDIA RTX 5000 Ada Generation Laptop GPU (0)"
    kernels = [op for op in ops if op.kind == "kernel"]
    # The quoted name holds three commas and stays whole.
    assert [k.name for k in kernels] == [SAXPY] * 4
    assert [(k.start_ns, k.end_ns - k.start_ns, k.corr_id, k.bytes) for k in kernels][2] == (
        1498770795,
        6816,
        153,
        None,
    )
    assert Counter(op.name for op in ops) == Counter(
        {"[CUDA memcpy Host-to-Device]": 8, SAXPY: 4, "[CUDA memcpy Device-to-Host]": 4}
    )
    assert {op.stream for op in ops} == {13, 14}


def test_real_pushpop_trace_names_lose_only_the_empty_domain() -> None:
    ranges = list(gputrace.read_nvtx_pushpop(PUSHPOP_2025))
    assert [r.name for r in ranges] == [
        "NvtxAnnotation.G1", "copy_in", "kernel", "copy_out",
        "NvtxAnnotation.G1Phases", "copy_in", "kernel", "copy_out",
    ]  # fmt: skip
    assert ranges[1].raw_name == ":copy_in"
    phases = ranges[4]
    assert (phases.start_ns, phases.end_ns, phases.level, phases.range_id, phases.parent_id) == (
        291609175, 292598591, 0, 5, None,
    )  # fmt: skip
    assert [(r.level, r.parent_id) for r in ranges[5:]] == [(1, 5)] * 3
    assert {(r.pid, r.tid) for r in ranges} == {(126760, 126760)}
    for r in ranges:  # End - Start is the Duration column, read separately
        assert r.end_ns > r.start_ns


def test_report_told_from_file_name_or_header(tmp_path: Path) -> None:
    assert gputrace.identify_file(GPU_2025) == "cuda_gpu_trace"
    assert gputrace.identify_file(PUSHPOP_2026) == "nvtx_pushpop_trace"
    renamed = tmp_path / "ranges.csv"
    renamed.write_bytes(PUSHPOP_2026.read_bytes())
    assert gputrace.identify_file(renamed) == "nvtx_pushpop_trace"
    proj = write_csv(tmp_path / "p.csv", PROJ_HEADER, [proj_row("decode_step", 10, 20, 1, 30, 2, 1, None, 0)])
    assert gputrace.identify_file(proj) == "nvtx_gpu_proj_trace"
    api = write_csv(tmp_path / "a.csv", API_HEADER, [api_row(1, 2, "cudaLaunchKernel", 7)])
    assert gputrace.identify_file(api) == "cuda_api_trace"
    assert gputrace.report_of_file("run_gputrace.csv") == "cuda_gpu_trace"


# --------------------------------------------------- hand-built, exact formats


def test_timeunit_old_header_preamble_and_memset(tmp_path: Path) -> None:
    # `--timeunit usec`, a 2022-era header (no GreenCtx, `Throughput (MBps)`, sizes in KiB),
    # and nsys chatter before the header as `nsys stats` prints it to stdout.
    text = (
        "Generating SQLite file run.sqlite from run.nsys-rep\n"
        "Processing [run.sqlite] with [/opt/nvidia/nsight-systems/reports/cuda_gpu_trace.py]... \n"
        "Start (us),Duration (us),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),"
        "DymSMem (MB),Bytes (KiB),Throughput (MBps),SrcMemKd,DstMemKd,Device,Ctx,Strm,Name\n"
        '1.5,2.0005,11,1,1,1,32,1,1,16,0.000,0.000,,,,,Quadro (0),1,7,"void k<int, 2>(int*, int)"\n'
        "4.25,0.5,12,,,,,,,,,,2.000,4.096,Device,,Quadro (0),1,7,[CUDA memset]\n"
    )
    path = tmp_path / "old_gputrace.csv"
    path.write_text(text, encoding="utf-8")
    ops = list(gputrace.read_gpu_trace(path))
    assert [r[:4] for r in _columns_as_rows(path)] == [(o.start_ns, o.end_ns, o.name, o.kind) for o in ops]
    assert [(o.start_ns, o.end_ns, o.kind, o.name, o.line) for o in ops] == [
        (1500, 3500, "kernel", "void k<int, 2>(int*, int)", 4),  # 2.0005 us -> 2000.5 ns -> 2000 (half to even)
        (4250, 4750, "memset", "[CUDA memset]", 5),
    ]
    assert ops[1].bytes == 2048


def _columns_as_rows(path: Path) -> list[tuple[object, ...]]:
    cols = gputrace.read_gpu_trace_columns(path)
    return [
        (s, e, cols.names[n], ("kernel", "memcpy", "memset")[k], c if c >= 0 else None, *cols.streams[t])
        for s, e, n, k, t, c in zip(cols.start, cols.end, cols.name, cols.kind, cols.stream, cols.corr, strict=True)
    ]


@pytest.mark.parametrize("path", [GPU_2026, GPU_2025])
def test_columns_hold_what_the_record_reader_yields(path: Path) -> None:
    records = [
        (o.start_ns, o.end_ns, o.name, o.kind, o.corr_id, o.device, o.stream) for o in gputrace.read_gpu_trace(path)
    ]
    assert _columns_as_rows(path) == records
    cols = gputrace.read_gpu_trace_columns(path)
    assert (cols.kernels, cols.in_start_order, len(cols.streams)) == (4, True, 2)


def test_unsorted_rows_are_noticed(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "x_cuda_gpu_trace.csv",
        GPU_TRACE_HEADER,
        [kernel_row(100, 10, 1, "a"), kernel_row(50, 10, 2, "b"), kernel_row(200, 10, 3, "c")],
    )
    reader = gputrace.GpuTraceReader(path)
    assert [o.name for o in reader] == ["a", "b", "c"]  # file order, as promised
    assert reader.in_start_order is False
    assert gputrace.read_gpu_trace_columns(path).in_start_order is False


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        (",".join(GPU_TRACE_HEADER) + "\n1,2,3\n", "row has 3 cells, the header has 21", 2),
        (",".join(GPU_TRACE_HEADER) + "\nx" + ",1" * 20 + "\n", "'Start (ns)' is not a number: 'x'", 2),
        ("just,some,text\nand,more,text\n", "no cuda_gpu_trace CSV header found", 2),
        ('Start (ns),Duration (ns),Name\n1,2,"unterminated\n', "malformed CSV", 3),
        (
            "WARNING: Existing SQLite export found: run.sqlite\n",
            "nsys reused an out-of-date SQLite export",
            1,
        ),
    ],
)
def test_malformed_gpu_trace_names_file_and_line(tmp_path: Path, text: str, message: str, line: int) -> None:
    path = tmp_path / "bad_cuda_gpu_trace.csv"
    path.write_text(text, encoding="utf-8")
    for read in (lambda p: list(gputrace.read_gpu_trace(p)), gputrace.read_gpu_trace_columns):
        with pytest.raises(ParseError) as info:
            read(path)
        assert message in str(info.value)
        assert info.value.source == str(path)
        assert info.value.lineno == line


def test_projection_and_api_rows(tmp_path: Path) -> None:
    proj = write_csv(
        tmp_path / "r_nvtx_gpu_proj_trace.csv",
        PROJ_HEADER,
        [
            proj_row("mode:eager", 1500, 6800, 0, 10000, 6, 1, None, 0),
            proj_row("decode_step", 1500, 2800, 1000, 4000, 3, 2, 1, 1),
        ],
    )
    rows = list(gputrace.read_nvtx_gpu_proj(proj))
    assert [
        (r.name, r.proj_start_ns, r.proj_end_ns, r.orig_start_ns, r.orig_end_ns, r.gpu_ops, r.parent_id) for r in rows
    ] == [
        ("mode:eager", 1500, 6800, 0, 10000, 6, None),
        ("decode_step", 1500, 2800, 1000, 4000, 3, 1),
    ]
    api = write_csv(tmp_path / "r_cuda_api_trace.csv", API_HEADER, [api_row(1100, 40, "cudaLaunchKernel", 10, tid=101)])
    (call,) = gputrace.read_cuda_api(api)
    assert (call.start_ns, call.end_ns, call.name, call.corr_id, call.pid, call.tid) == (
        1100,
        1140,
        "cudaLaunchKernel",
        10,
        100,
        101,
    )


# ------------------------------------------------------------------ real Kineto


@pytest.fixture(scope="module")
def negq() -> tuple[list[kineto.KinetoEvent], kineto.KinetoMetadata]:
    reader = kineto.KinetoReader(NEGQ)
    return list(reader), reader.metadata


def test_real_kineto_events_and_metadata(negq: tuple[list[kineto.KinetoEvent], kineto.KinetoMetadata]) -> None:
    events, meta = negq
    gpu = [e for e in events if isinstance(e, kineto.GpuEvent)]
    assert Counter(e.kind for e in gpu) == {"kernel": 6080, "memcpy": 1390, "memset": 277}
    assert set(meta.device_names) == {"NVIDIA A100-SXM4-80GB"}
    assert (meta.rank, meta.world_size, meta.schema_version) == (0, 16, 1)
    steps = [e for e in events if isinstance(e, kineto.TraceRange) and e.name.startswith("ProfilerStep#")]
    # `"ts": 1683564901548726, "dur": 209748` (line 74 of the unzipped file)
    assert (steps[0].name, steps[0].start_ns, steps[0].end_ns, steps[0].line) == (
        "ProfilerStep#550", 1683564901548726000, 1683564901758474000, 72,
    )  # fmt: skip
    graph = [e for e in events if isinstance(e, kineto.LaunchCall) and e.name == "cudaGraphLaunch"]
    assert len(graph) == 70
    replays = Counter(e.correlation for e in gpu if e.correlation in {g.correlation for g in graph})
    assert max(replays.values()) > 1  # one launch, several kernels under its correlation id
    threads = {e.tid for e in events if isinstance(e, kineto.LaunchCall) and e.name == "cudaLaunchKernel"}
    assert threads == {4515, 25556}


def test_line_numbers_point_at_the_event(negq: tuple[list[kineto.KinetoEvent], kineto.KinetoMetadata]) -> None:
    events, _ = negq
    lines = gzip.decompress(NEGQ.read_bytes()).decode().split("\n")
    for event in events:  # every one: events that straddle two read chunks once got wrong lines
        assert lines[event.line - 1].strip() == "{"
        assert f'"name": {json.dumps(event.name)}' in lines[event.line]


# ------------------------------------------- Kineto's layout: the scan and the general way


def test_layout_scan_reads_the_real_traces_as_the_general_way_does(
    negq: tuple[list[kineto.KinetoEvent], kineto.KinetoMetadata],
) -> None:
    # The fixture read NEGQ with the scan; the general way must give the very same records.
    assert list(kineto.KinetoReader(NEGQ, layout_scan=False)) == negq[0]
    for path, flags in [
        (NSRES, {"launches_only": True, "cpu_ops": True}),
        (TRITON, {}),
        (TRITON, {"launches_only": True}),
    ]:
        scanned = list(kineto.KinetoReader(path, **flags))
        assert scanned and scanned == list(kineto.KinetoReader(path, layout_scan=False, **flags))


def test_launches_only_keeps_the_calls_that_put_work_on_the_gpu_or_block_the_host() -> None:
    every = [e for e in kineto.KinetoReader(NSRES) if isinstance(e, kineto.LaunchCall)]
    launching = [e for e in kineto.KinetoReader(NSRES, launches_only=True) if isinstance(e, kineto.LaunchCall)]
    marks = ("Launch", "Memcpy", "Memset", "memcpy", "Synchronize")
    assert launching == [e for e in every if any(m in e.name for m in marks)]
    assert 0 < len(launching) < len(every)
    assert "cudaEventQuery" in {e.name for e in every} - {e.name for e in launching}
    # the synchronisations a step's anatomy times are kept (the layout scan takes them too)
    assert "cudaDeviceSynchronize" in {e.name for e in launching}


_ODD_EVENTS = [
    kernel("upper", 30, 1, 3, cat="KERNEL"),  # read lower-cased: a kernel, yet not a spelling the scan takes
    {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "python"}},  # `ph` not first
    {
        "ph": "\\u0058",
        "cat": "kernel",
        "name": "escaped ph",
        "pid": 0,
        "tid": 7,
        "ts": 40,
        "dur": 1,
        "args": {"correlation": 4},
    },
    {"ph": "X", "cat": "ker\\u006eel", "name": "escaped cat", "pid": 0, "tid": 7, "ts": 41, "dur": 1},
    launch("cuda\\u004caunchKernel", 42, 1, 5),  # a launch whose name is escaped
    {
        "ph": "X",
        "cat": "cuda_runtime",
        "pid": 1,
        "tid": 1,
        "name": "cudaLaunchKernel",
        "ts": 43,
        "dur": 1,
    },  # name not after cat
    {"ph": "X", "cat": "some_new_category", "name": "n", "pid": 1, "tid": 1, "ts": 44, "dur": 1},
    {"name": "name first", "ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "ts": 45, "dur": 1},
]


@pytest.mark.parametrize("odd", range(len(_ODD_EVENTS)))
@pytest.mark.parametrize("launches_only", [False, True])
def test_events_the_scan_cannot_judge_are_read_the_general_way(tmp_path: Path, odd: int, launches_only: bool) -> None:
    events = [launch("cudaEventQuery", 1, 1, 1), kernel("a", 10, 2, 2), _ODD_EVENTS[odd], kernel("b", 50, 2, 6)] * 3
    text = kineto_layout({"traceEvents": events}).replace("\\\\u", "\\u")  # keep the escapes as escapes
    path = tmp_path / "odd.json"
    path.write_text(text, encoding="utf-8")
    scanned = list(kineto.KinetoReader(path, launches_only=launches_only))
    assert scanned == list(kineto.KinetoReader(path, launches_only=launches_only, layout_scan=False))
    assert [e.name for e in scanned if isinstance(e, kineto.GpuEvent)].count("b") == 3
    if odd in (0, 2, 3, 7):  # upper-cased or escaped, these are kernels too, and are read as such
        assert len([e for e in scanned if isinstance(e, kineto.GpuEvent)]) == 9
    if odd == 4:
        assert [e.name for e in scanned if isinstance(e, kineto.LaunchCall)].count("cudaLaunchKernel") == 3


def test_a_broken_event_is_reported_as_the_general_way_reports_it(tmp_path: Path) -> None:
    text = kineto_layout({"traceEvents": [kernel("a", 10, 2, 2), kernel("b", 20, 2, 3), kernel("c", 30, 2, 4)]})
    broken = text.replace('"correlation": 3', '"correlation": 3,, "x": 1')
    path = tmp_path / "broken.json"
    path.write_text(broken, encoding="utf-8")
    errors = []
    for scan in (True, False):
        with pytest.raises(ParseError) as info:
            list(kineto.KinetoReader(path, layout_scan=scan))
        errors.append((str(info.value), info.value.lineno))
    assert errors[0] == errors[1] and "malformed JSON" in errors[0][0]


def test_an_event_passed_over_is_not_checked(tmp_path: Path) -> None:
    # The documented difference: a flow arrow the reader drops is not decoded, so damage
    # inside it goes unseen by the scan; the general way reports it.
    flow = {"ph": "f", "id": 1, "pid": 0, "tid": 0, "ts": 5, "cat": "ac2g", "name": "ac2g"}
    text = kineto_layout({"traceEvents": [kernel("a", 10, 2, 2), flow, kernel("b", 20, 2, 3), kernel("c", 30, 2, 4)]})
    path = tmp_path / "flow.json"
    path.write_text(text.replace('"id": 1,', '"id": 1,,'), encoding="utf-8")
    assert [e.name for e in kineto.KinetoReader(path)] == ["a", "b", "c"]
    with pytest.raises(ParseError, match="malformed JSON"):
        list(kineto.KinetoReader(path, layout_scan=False))


_CATS = ["kernel", "Kernel", "gpu_memcpy", "Memset", "cuda_runtime", "Runtime", "cuda_driver", "user_annotation",
         "gpu_user_annotation", "cpu_op", "python_function", "ac2g", "KERNEL", "odd\\cat", ""]  # fmt: skip
_NAMES = ["cudaLaunchKernel", "cudaEventQuery", "cuLaunchKernel", "cudaMemcpyAsync", "k<float>(int)", 'q"uote', "a\nb",
          "\\u", "x\n  },\n  {y", ""]  # fmt: skip
_LAYOUT_EVENT = st.fixed_dictionaries(
    {
        "ph": st.sampled_from(["X", "X", "X", "f", "s", "i"]),
        "cat": st.sampled_from(_CATS),
        "name": st.sampled_from(_NAMES),
    },
    optional={
        "pid": st.integers(0, 3) | st.just("Spans"),
        "tid": st.integers(0, 3),
        "ts": st.integers(0, 10**6) | st.decimals(0, 10**6, places=3).map(float),
        "dur": st.integers(0, 100) | st.floats(0, 100, allow_nan=False),
        "args": st.fixed_dictionaries(
            {}, optional={"correlation": st.integers(0, 9), "device": st.integers(0, 1), "stream": st.integers(0, 9)}
        ),
    },
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    events=st.lists(_LAYOUT_EVENT, max_size=25),
    chunk=st.integers(16, 600),
    cpu_ops=st.booleans(),
    launches_only=st.booleans(),
)
def test_layout_scan_property(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    events: list[dict[str, object]],
    chunk: int,
    cpu_ops: bool,
    launches_only: bool,
) -> None:
    """Any events in Kineto's layout, read in chunks of any size: the scan gives what the
    general way gives, records or the same error."""
    monkeypatch.setattr(kineto, "_CHUNK", chunk)
    path = tmp_path / "layout.json"
    path.write_text(kineto_layout({"schemaVersion": 1, "traceEvents": events}), encoding="utf-8")
    got = []
    for scan in (True, False):
        try:
            got.append(list(kineto.KinetoReader(path, cpu_ops=cpu_ops, launches_only=launches_only, layout_scan=scan)))
        except ParseError as exc:
            got.append([str(exc), exc.lineno])
    assert got[0] == got[1]
    lines = path.read_text(encoding="utf-8").split("\n")
    for event in got[0]:
        if isinstance(event, kineto.KinetoEvent):
            assert lines[event.line - 1] == "  {"


def test_fractional_microseconds_become_exact_nanoseconds() -> None:
    events = list(kineto.KinetoReader(NSRES))
    step = next(e for e in events if isinstance(e, kineto.TraceRange) and e.name == "ProfilerStep#102")
    # "ts": 1712195495537248.299, "dur": 72077.474 (line 105204 of the unzipped file); read
    # through a binary float the start would be ...248250 ns (a double holds it to 0.25 us).
    assert (step.start_ns, step.end_ns - step.start_ns) == (1712195495537248299, 72077474)
    assert round(float("1712195495537248.299") * 1000) == 1712195495537248256
    assert kineto.us_to_ns("0.0005") == 0 and kineto.us_to_ns("0.0015") == 2  # half to even
    assert kineto.us_to_ns("1e3") == 1_000_000 and kineto.us_to_ns(7) == 7000


def test_driver_launch_and_legacy_categories(tmp_path: Path) -> None:
    events = list(kineto.KinetoReader(TRITON))
    (call,) = [e for e in events if isinstance(e, kineto.LaunchCall) and e.name == "cuLaunchKernel"]
    (k,) = [e for e in events if isinstance(e, kineto.GpuEvent)]
    assert call.correlation == k.correlation == 35
    legacy = write_kineto(
        tmp_path / "old.json",
        [
            kernel("k", 10, 5, 3, cat="Kernel"),
            launch("cudaLaunchKernel", 8, 1, 3, cat="Runtime"),
            kernel("m", 20, 5, 4, cat="Memcpy"),
        ],
    )
    kinds = [(type(e).__name__, getattr(e, "kind", None)) for e in kineto.read_kineto(legacy)]
    assert kinds == [("GpuEvent", "kernel"), ("LaunchCall", None), ("GpuEvent", "memcpy")]


def test_array_form_without_closing_bracket_and_small_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Chunks of 7 characters put every boundary inside a number, a string or a key.
    monkeypatch.setattr(kineto, "_CHUNK", 7)
    events = [annotation("ProfilerStep#1", 1000.25, 99.5), kernel("void k<float, 4>(float*)", 1010.125, 3.5, 9)]
    path = tmp_path / "array.json"
    path.write_text(json.dumps(events)[:-1] + ",\n", encoding="utf-8")
    got = list(kineto.read_kineto(path))
    assert [(type(e).__name__, e.name, e.start_ns, e.end_ns) for e in got] == [
        ("TraceRange", "ProfilerStep#1", 1000250, 1099750),
        ("GpuEvent", "void k<float, 4>(float*)", 1010125, 1013625),
    ]
    gz = write_kineto(tmp_path / "doc.json.gz", events, gz=True)
    reader = kineto.KinetoReader(gz)
    assert [e.start_ns for e in reader] == [1000250, 1010125]
    assert reader.metadata.device_names == ["NVIDIA H100 80GB HBM3"]


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("", "not a Chrome trace", 1),
        ('{"schemaVersion": 1}', "no `traceEvents`", 1),
        (
            '{"traceEvents": [\n{"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1}\n]}',
            "without a numeric ts/dur",
            2,
        ),
        ('{"traceEvents": [\n{"ph": "X"},\n{"ph": "X"\n', "malformed JSON", 3),
        ('{"traceEvents": [{"ph": "X"}] } trailing', "extra data after the trace", 1),
    ],
)
def test_malformed_kineto_names_file_and_line(tmp_path: Path, text: str, message: str, line: int) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ParseError) as info:
        list(kineto.read_kineto(path))
    assert message in str(info.value)
    assert (info.value.source, info.value.lineno) == (str(path), line)


# ---------------------------------------------------------------------- fuzzing

_FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
_GPU_SAMPLE = GPU_2026.read_bytes()
_KINETO_SAMPLE = json.dumps(
    {
        "traceEvents": [
            annotation("ProfilerStep#1", 1.5, 9),
            launch("cudaLaunchKernel", 2, 1, 5),
            kernel("k", 3.25, 1, 5),
        ]
    }
).encode()


def _mutate(base: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    data = bytearray(base)
    for pos, cut, insert in edits:
        at = pos % (len(data) + 1)
        data[at : at + cut] = insert
    return bytes(data)


_EDITS = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 4), st.binary(max_size=4)), max_size=4)


def _consume(read: object, path: Path) -> None:
    try:
        for _ in read(path):  # type: ignore[operator]
            pass
    except ParseError as exc:
        assert exc.source == str(path)
        assert exc.lineno is not None and exc.lineno >= 1


@_FUZZ
@given(data=st.binary(max_size=300) | _EDITS.map(lambda e: _mutate(_GPU_SAMPLE, e)))
def test_gpu_trace_reader_any_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz_cuda_gpu_trace.csv"
    path.write_bytes(data)
    _consume(gputrace.read_gpu_trace, path)
    _consume(lambda p: [gputrace.read_gpu_trace_columns(p)], path)
    _consume(gputrace.read_nvtx_pushpop, path)


@_FUZZ
@given(data=st.binary(max_size=300) | _EDITS.map(lambda e: _mutate(_KINETO_SAMPLE, e)), gz=st.booleans())
def test_kineto_reader_any_bytes(tmp_path: Path, data: bytes, gz: bool) -> None:
    path = tmp_path / "fuzz.json"
    path.write_bytes(gzip.compress(data)[: max(1, len(data))] if gz else data)
    _consume(kineto.read_kineto, path)
