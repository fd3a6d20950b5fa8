"""Nsight Systems parsers: golden parses of real outputs, key values read off the fixture
text, and malformed/edge inputs (constructed inline, and marked as such)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from golden.regen import golden_path, nsys_fixtures, parse_fixture

from nsightlab.errors import ParseError
from nsightlab.parse import nsys
from nsightlab.parse.nsys import (
    ImporterMissingError,
    NsysReport,
    StaleExportError,
    available_reports,
    canonical_report_name,
    check_stats_output,
    detect_importer_error,
    merge_reports,
    nsys_version_tuple,
    parse_nsys_version,
    parse_stats_console,
    parse_stats_csv,
)

FIXTURES = Path(__file__).parent / "fixtures" / "nsys"
F01 = FIXTURES / "01_nsys2024.2.3_stats_console_babelstream_a100.txt"
F02 = FIXTURES / "02_nsys2022.4.2_stats_console_oldnames_babelstream_a100.txt"
F03 = FIXTURES / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv"
F06 = FIXTURES / "06_nsys_stats_console_nvtx_osrt_api_kern_mem_a100.txt"


def _console(path: Path) -> NsysReport:
    return parse_stats_console(path.read_text(encoding="utf-8"), source=path.name)


def _csv(path: Path) -> NsysReport:
    return parse_stats_csv(path.read_text(encoding="utf-8"), source=path.name)


# ------------------------------------------------------------------ golden files


def test_every_nsys_fixture_has_a_golden_file() -> None:
    fixtures = nsys_fixtures()
    assert len(fixtures) == 4
    for fixture in fixtures:
        assert golden_path(fixture).is_file(), f"no golden parse for {fixture.name}"


@pytest.mark.parametrize("fixture", nsys_fixtures(), ids=lambda p: p.name)
def test_parse_matches_golden(fixture: Path) -> None:
    expected = json.loads(golden_path(fixture).read_text(encoding="utf-8"))
    assert parse_fixture(fixture) == expected


# ------------------------------------------------- key values read off the fixtures


def test_fixture02_old_gpukernsum_grid_and_block_cells_with_spaces() -> None:
    report = _console(F02)
    assert report.kernels is not None
    first = report.kernels[0]
    assert first.name == "void add_kernel<double>(const T1 *, const T1 *, T1 *)"
    assert first.instances == 100
    assert first.total_ns == 58_455_846
    assert first.time_pct == 24.5
    assert first.avg_ns == 584_558.5
    assert first.med_ns == 584_109.0
    assert first.stddev_ns == 2_238.9
    assert first.grid == (32768, 1, 1)
    assert first.block == (1024, 1, 1)
    # The one kernel whose grid is narrower than the column: `   256    1    1 `.
    dot = next(k for k in report.kernels if k.name.startswith("void dot_kernel"))
    assert dot.grid == (256, 1, 1)
    assert dot.name == "void dot_kernel<double>(const T1 *, const T1 *, T1 *, int)"
    assert [len(report.kernels), len(report.osrt or []), len(report.cuda_api or [])] == [6, 22, 5]
    assert report.mem_time is not None and report.mem_size is not None
    assert report.mem_time[0].operation == "dtoh"
    assert report.mem_time[0].raw_operation == "[CUDA memcpy DtoH]"
    assert report.mem_time[0].count == 103
    assert report.mem_size[0].total_mb == 805.511
    assert report.mem_size[0].max_mb == 268.435
    assert report.nvtx is None
    assert len(report.skipped) == 1 and "NV Tools Extension (NVTX)" in report.skipped[0]
    # Old names were canonicalised.
    assert set(report.sources) == {
        "osrt_sum",
        "cuda_api_sum",
        "cuda_gpu_kern_sum",
        "cuda_gpu_mem_time_sum",
        "cuda_gpu_mem_size_sum",
    }


def test_fixture01_every_table_with_row_counts_and_nvtx_skipped() -> None:
    report = _console(F01)
    assert report.nvtx is None
    assert report.skipped == [
        "SKIPPED: /home/jkwack/ALCFBeginnersGuide/polaris/examples/BabelStream/build_polaris/"
        "nsys-BableStream.sqlite does not contain NV Tools Extension (NVTX) data."
    ]
    counts = {
        "osrt": len(report.osrt or []),
        "cuda_api": len(report.cuda_api or []),
        "kernels": len(report.kernels or []),
        "mem_time": len(report.mem_time or []),
        "mem_size": len(report.mem_size or []),
    }
    assert counts == {"osrt": 24, "cuda_api": 6, "kernels": 6, "mem_time": 1, "mem_size": 1}
    assert report.gpu_trace is None and report.nvtx_kernels is None and report.nvtx_gpu_proj is None
    assert report.osrt is not None and report.cuda_api is not None and report.kernels is not None
    assert report.osrt[0].name == "poll"
    assert report.osrt[0].num_calls == 19
    assert report.osrt[0].total_ns == 601_029_880
    assert report.osrt[1].num_calls == 1_055  # thousands separator
    assert report.cuda_api[0].name == "cudaDeviceSynchronize"
    assert report.cuda_api[-1].name == "cuModuleGetLoadingMode"
    assert report.kernels[0].name == "void add_kernel<double>(const T1 *, const T1 *, T1 *)"
    assert report.kernels[0].total_ns == 58_234_880
    assert report.kernels[0].grid is None  # the new report has no GridXYZ column
    assert report.kernels[-1].name == "void init_kernel<double>(T1 *, T1 *, T1 *, T1, T1, T1)"
    assert report.kernels[-1].instances == 1
    assert report.mem_time is not None and report.mem_size is not None
    assert report.mem_time[0].operation == "dtoh"
    assert report.mem_time[0].raw_operation == "[CUDA memcpy Device-to-Host]"
    assert report.mem_time[0].max_ns == 22_998_241
    assert report.mem_size[0].total_mb == 805.652
    assert report.mem_size[0].stddev_mb == 45.360


def test_fixture06_nvtx_osrt_api_kernels_and_memops() -> None:
    report = _console(F06)
    assert report.skipped == []
    assert report.nvtx is not None
    assert [(r.name, r.style, r.instances, r.total_ns) for r in report.nvtx] == [
        ("Profile_Loop", "PushPop", 1, 3_481_709),
        ("Warmup", "PushPop", 1, 182_472),
    ]
    assert len(report.osrt or []) == 27
    assert len(report.cuda_api or []) == 6
    assert report.kernels is not None and len(report.kernels) == 1
    kernel = report.kernels[0]
    assert kernel.name == "vectorAdd(const float *, const float *, float *, int)"
    assert (kernel.instances, kernel.total_ns, kernel.avg_ns, kernel.max_ns) == (
        1_010,
        1_831_281,
        1_813.1,
        4_705,
    )
    assert report.mem_time is not None and report.mem_size is not None
    assert [(m.operation, m.count, m.total_ns) for m in report.mem_time] == [
        ("htod", 2, 2_432),
        ("dtoh", 1, 2_336),
    ]
    assert [(m.operation, m.count, m.total_mb) for m in report.mem_size] == [
        ("htod", 2, 0.0),
        ("dtoh", 1, 0.0),
    ]
    assert report.osrt is not None
    assert report.osrt[-1].name == "listen" and report.osrt[-1].total_ns == 0


def test_fixture03_csv_rows_and_kernel_families() -> None:
    report = _csv(F03)
    assert report.kernels is not None
    kernels = report.kernels
    assert len(kernels) == 113
    assert sum("cutlass" in k.name for k in kernels) == 25
    assert sum(k.name.startswith("void cutlass::Kernel2<") for k in kernels) == 16
    assert sum("vectorized_elementwise_kernel" in k.name for k in kernels) == 23
    first = kernels[0]
    assert first.name.startswith("std::enable_if<!T7, void>::type internal::gemvx::kernel<int, int,")
    assert first.name.endswith("float>>(T13)")  # the quoted name with commas is whole
    assert (first.time_pct, first.total_ns, first.instances) == (24.9, 1_231_822_285, 329_035)
    assert (first.avg_ns, first.med_ns, first.min_ns, first.max_ns, first.stddev_ns) == (
        3743.7,
        3712.0,
        2079,
        5856,
        416.2,
    )
    gemm = next(
        k
        for k in kernels
        if k.name
        == "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8>(T1::Params)"
    )
    assert (gemm.instances, gemm.total_ns) == (1180, 196_522_013)
    assert not any(k.truncated for k in kernels)
    assert report.sources == {"cuda_gpu_kern_sum": F03.name}


def test_fixture03_properties_percentages_and_totals() -> None:
    kernels = _csv(F03).kernels
    assert kernels is not None
    # Each Time (%) is rounded to 0.1: the sum is 100 within 0.05 per row, and each row's
    # share of the summed total time agrees with its Time (%) within that rounding.
    pcts = [k.time_pct for k in kernels]
    assert all(p is not None for p in pcts)
    total_pct = math.fsum(p for p in pcts if p is not None)
    assert abs(total_pct - 100.0) <= 0.05 * len(kernels)
    grand_total = math.fsum(k.total_ns for k in kernels)
    for k in kernels:
        assert k.time_pct is not None
        assert abs(100.0 * k.total_ns / grand_total - k.time_pct) <= 0.05 + 1e-9, k.name
    # Avg (ns) is rounded to 0.1 ns: total = avg x instances within 0.05 ns per instance.
    for k in kernels:
        assert k.avg_ns is not None
        assert abs(k.total_ns - k.avg_ns * k.instances) <= 0.05 * k.instances + 1e-6, k.name
        assert k.min_ns is not None and k.max_ns is not None
        assert k.min_ns <= k.avg_ns <= k.max_ns, k.name


def test_parse_file_dispatches_on_suffix() -> None:
    csv_report = nsys.parse_file(F03)
    assert csv_report.kernels is not None and len(csv_report.kernels) == 113
    assert csv_report.sources["cuda_gpu_kern_sum"] == str(F03)
    console_report = nsys.parse_file(F06)
    assert console_report.nvtx is not None and len(console_report.nvtx) == 2


# ------------------------------------------------------------------ report names


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("gpukernsum", "cuda_gpu_kern_sum"),
        ("cuda_gpu_kern_sum", "cuda_gpu_kern_sum"),
        ("gputrace", "cuda_gpu_trace"),
        ("gpumemtimesum", "cuda_gpu_mem_time_sum"),
        ("gpumemsizesum", "cuda_gpu_mem_size_sum"),
        ("cudaapisum", "cuda_api_sum"),
        ("nvtxsum", "nvtx_sum"),
        ("nvtxppsum", "nvtx_sum"),
        ("nvtxkernsum", "nvtx_kern_sum"),
        ("nvtx_gpu_proj_sum", "nvtx_gpu_proj_sum"),
        ("osrtsum", "osrt_sum"),
        ("gpukernsum:base", "cuda_gpu_kern_sum"),
        ("cuda_gpu_kern_sum[:nvtx-name][:base|:mangled]", "cuda_gpu_kern_sum"),
        (
            "/opt/nvidia/nsight-systems/2024.6.1/host-linux-x64/reports/cuda_gpu_kern_sum.py",
            "cuda_gpu_kern_sum",
        ),
        ("cuda_gpu_kern_gb_sum", None),
        ("um_sum", None),
    ],
)
def test_canonical_report_name(name: str, canonical: str | None) -> None:
    assert canonical_report_name(name) == canonical


# CONSTRUCTED: no captured `nsys stats --help-reports` output was available. The layout
# (one report per indented line, options in brackets, ` -- ` then a title) follows nsys'
# documentation; the parser only relies on the report name starting the line.
HELP_REPORTS_NEW_CONSTRUCTED = """\
The following built-in reports are available:

  cuda_api_gpu_sum[:nvtx-name][:base|:mangled] -- CUDA Summary (API/Kernels/MemOps)
  cuda_api_sum -- CUDA API Summary
  cuda_api_trace -- CUDA API Trace
  cuda_gpu_kern_gb_sum[:nvtx-name][:base|:mangled] -- CUDA GPU Kernel/Grid/Block Summary
  cuda_gpu_kern_sum[:nvtx-name][:base|:mangled] -- CUDA GPU Kernel Summary
  cuda_gpu_mem_size_sum -- CUDA GPU MemOps Summary (by Size)
  cuda_gpu_mem_time_sum -- CUDA GPU MemOps Summary (by Time)
  cuda_gpu_trace[:nvtx-name][:base|:mangled] -- CUDA GPU Trace
  nvtx_gpu_proj_sum -- NVTX GPU Projection Summary
  nvtx_kern_sum[:base|:mangled] -- NVTX Range Kernel Summary
  nvtx_pushpop_sum -- NVTX Push/Pop Range Summary
  nvtx_sum -- NVTX Range Summary
  osrt_sum -- OS Runtime Summary

The default reports are: nvtx_sum, osrt_sum, cuda_api_sum, cuda_gpu_kern_sum
"""

# CONSTRUCTED as above, with the pre-2023 names.
HELP_REPORTS_OLD_CONSTRUCTED = """\
The following built-in reports are available:

  cudaapisum       -- CUDA API Summary
  cudaapitrace     -- CUDA API Trace
  gpukernsum[:base|:mangled] -- CUDA GPU Kernel Summary
  gpumemsizesum    -- GPU Memory Operations Summary (by Size)
  gpumemtimesum    -- GPU Memory Operations Summary (by Time)
  gputrace         -- CUDA GPU Trace
  nvtxppsum        -- NVTX Push/Pop Range Summary
  osrtsum          -- OS Runtime Summary
"""


def test_available_reports_new_names() -> None:
    found = available_reports(HELP_REPORTS_NEW_CONSTRUCTED)
    assert found == {
        "cuda_gpu_kern_sum": "cuda_gpu_kern_sum",
        "nvtx_sum": "nvtx_sum",
        "nvtx_kern_sum": "nvtx_kern_sum",
        "nvtx_gpu_proj_sum": "nvtx_gpu_proj_sum",
        "cuda_api_sum": "cuda_api_sum",
        "osrt_sum": "osrt_sum",
        "cuda_gpu_mem_time_sum": "cuda_gpu_mem_time_sum",
        "cuda_gpu_mem_size_sum": "cuda_gpu_mem_size_sum",
        "cuda_gpu_trace": "cuda_gpu_trace",
    }


def test_available_reports_old_names_and_missing_ones() -> None:
    found = available_reports(HELP_REPORTS_OLD_CONSTRUCTED)
    assert found == {
        "cuda_gpu_kern_sum": "gpukernsum",
        "nvtx_sum": "nvtxppsum",
        "cuda_api_sum": "cudaapisum",
        "osrt_sum": "osrtsum",
        "cuda_gpu_mem_time_sum": "gpumemtimesum",
        "cuda_gpu_mem_size_sum": "gpumemsizesum",
        "cuda_gpu_trace": "gputrace",
    }
    assert "nvtx_gpu_proj_sum" not in found and "nvtx_kern_sum" not in found


def test_available_reports_rejects_text_without_reports() -> None:
    with pytest.raises(ParseError, match="no known report names"):
        available_reports("bash: nsys: command not found\n", source="help.txt")


def test_nsys_version() -> None:
    text = "NVIDIA Nsight Systems version 2024.6.1.90-246134905481v0\n"
    version = parse_nsys_version(text)
    assert version == "2024.6.1.90-246134905481v0"
    assert nsys_version_tuple(version) == (2024, 6, 1, 90)
    assert nsys_version_tuple("2022.4.2.1-df9881f") == (2022, 4, 2, 1)
    assert nsys_version_tuple("2022.4.2.1-df9881f") < (2023, 1)
    with pytest.raises(ParseError, match="Nsight Systems version"):
        parse_nsys_version("nsys: not found\n", source="version.txt")


# --------------------------------------------------- CSV: headers by meaning, units

# CONSTRUCTED: a cuda_gpu_kern_sum CSV as `--timeunit usec` would write it, columns
# reordered to prove they are matched by header, one name quoted for its commas.
CSV_TIMEUNIT_US_CONSTRUCTED = """\
Name,Instances,Time (%),Total Time (us),Avg (us),Med (us),Min (us),Max (us),StdDev (us)
"void k<float, 2>(float *, int)",4,75.0,12.5,3.125,3.1,3.0,3.4,0.2
plain_kernel,1,25.0,4.166,4.166,4.166,4.166,4.166,0.0
"""


def test_csv_timeunit_us_and_column_order() -> None:
    report = parse_stats_csv(CSV_TIMEUNIT_US_CONSTRUCTED, source="run_cuda_gpu_kern_sum.csv")
    assert report.kernels is not None
    k0, k1 = report.kernels
    assert k0.name == "void k<float, 2>(float *, int)"
    assert (k0.instances, k0.time_pct) == (4, 75.0)
    assert (k0.total_ns, k0.avg_ns, k0.min_ns, k0.max_ns, k0.stddev_ns) == (
        12_500.0,
        3_125.0,
        3_000.0,
        3_400.0,
        200.0,
    )
    assert k1.total_ns == 4_166.0


def test_csv_other_time_units() -> None:
    # CONSTRUCTED: ms and s headers.
    text = "Time (%),Total Time (ms),Num Calls,Avg (s),Name\n100.0,2.5,2,0.00125,cudaMalloc\n"
    report = parse_stats_csv(text, source="x_cuda_api_sum.csv")
    assert report.cuda_api is not None
    row = report.cuda_api[0]
    assert (row.total_ns, row.avg_ns, row.num_calls, row.med_ns) == (
        2_500_000.0,
        1_250_000.0,
        2,
        None,
    )


# CONSTRUCTED: an API summary; cuda_api_sum and osrt_sum share this header.
CSV_API_CONSTRUCTED = """\
Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
90.0,900,3,300.0,300.0,200,400,100.0,poll
10.0,100,1,100.0,100.0,100,100,0.0,ioctl
"""


def test_csv_api_or_osrt_from_file_name_then_names() -> None:
    by_name = parse_stats_csv(CSV_API_CONSTRUCTED, source="out/run_osrt_sum.csv")
    assert by_name.osrt is not None and by_name.cuda_api is None
    by_old_name = parse_stats_csv(CSV_API_CONSTRUCTED, source="run_osrtsum.csv")
    assert by_old_name.osrt is not None
    forced = parse_stats_csv(CSV_API_CONSTRUCTED, report="cudaapisum")
    assert forced.cuda_api is not None and forced.osrt is None
    guessed = parse_stats_csv(CSV_API_CONSTRUCTED)  # no hint: poll/ioctl are not CUDA calls
    assert guessed.osrt is not None
    assert [r.name for r in guessed.osrt] == ["poll", "ioctl"]


def test_csv_memops_time_and_size() -> None:
    # CONSTRUCTED with the headers in the notes and the new memcpy spellings.
    time_csv = (
        "Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation\n"
        "70.0,700,7,100.0,100.0,90,110,5.0,[CUDA memcpy Host-to-Device]\n"
        "20.0,200,2,100.0,100.0,100,100,0.0,[CUDA memset]\n"
        "10.0,100,1,100.0,100.0,100,100,0.0,[CUDA memcpy Device-to-Device]\n"
    )
    size_csv = (
        "Total (MB),Count,Avg (MB),Med (MB),Min (MB),Max (MB),StdDev (MB),Operation\n"
        "536.871,2,268.435,268.435,268.435,268.435,0.000,[CUDA memcpy Peer-to-Peer]\n"
    )
    t = parse_stats_csv(time_csv, source="r_cuda_gpu_mem_time_sum.csv").mem_time
    s = parse_stats_csv(size_csv, source="r_cuda_gpu_mem_size_sum.csv").mem_size
    assert t is not None and s is not None
    assert [m.operation for m in t] == ["htod", "memset", "dtod"]
    assert t[0].total_ns == 700 and t[0].total_mb is None
    assert (s[0].operation, s[0].total_mb, s[0].count, s[0].total_ns) == ("ptop", 536.871, 2, None)
    # Recognised from the header alone, too.
    assert parse_stats_csv(size_csv).mem_size is not None
    assert parse_stats_csv(time_csv).mem_time is not None


def test_csv_gpu_trace_kernel_and_memcpy_rows() -> None:
    # CONSTRUCTED with the cuda_gpu_trace header in the notes.
    text = (
        "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),"
        "DymSMem (MB),Bytes (MB),Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name\n"
        "1000,725494,118,1048576,1,1,128,1,1,16,0.000,0.000,,,,,NVIDIA L40S (0),1,,7,"
        '"void at::native::vectorized_elementwise_kernel<(int)4, at::native::AUnaryFunctor<c10::Half, c10::Half, '
        "c10::Half, "
        'at::native::binary_internal::MulFunctor<float>>, std::array<char *, (unsigned long)2>>(int, T2, T3)"\n'
        "2000000,41000,120,,,,,,,,,,536.871,13094414.634,Device,Pageable,NVIDIA L40S (0),1,,7,"
        "[CUDA memcpy Device-to-Host]\n"
    )
    report = parse_stats_csv(text, source="l1_cuda_gpu_trace.csv")
    assert report.gpu_trace is not None
    kern, copy = report.gpu_trace
    assert (kern.start_ns, kern.duration_ns, kern.corr_id) == (1000, 725_494, 118)
    assert kern.grid == (1048576, 1, 1) and kern.block == (128, 1, 1)
    assert kern.registers_per_thread == 16 and kern.bytes_mb is None
    assert (kern.device, kern.context, kern.green_context, kern.stream) == (
        "NVIDIA L40S (0)",
        1,
        None,
        7,
    )
    assert kern.name.startswith("void at::native::vectorized_elementwise_kernel<(int)4,")
    assert copy.grid is None and copy.block is None
    assert (copy.bytes_mb, copy.throughput_mb_s) == (536.871, 13_094_414.634)
    assert (copy.src_mem_kind, copy.dst_mem_kind) == ("Device", "Pageable")


def test_csv_gpu_trace_older_throughput_header() -> None:
    # CONSTRUCTED: older nsys spelled the rate `Throughput (MBps)` and had no GreenCtx.
    text = (
        "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),"
        "DymSMem (MB),Bytes (MB),Throughput (MBps),SrcMemKd,DstMemKd,Device,Ctx,Strm,Name\n"
        "5,10,1,,,,,,,,,,1.000,100000.000,Pageable,Device,NVIDIA A100 (0),1,7,[CUDA memcpy HtoD]\n"
    )
    rows = parse_stats_csv(text).gpu_trace
    assert rows is not None
    assert (rows[0].throughput_mb_s, rows[0].green_context, rows[0].stream) == (100_000.0, None, 7)


def test_csv_nvtx_gpu_proj_sum() -> None:
    # CONSTRUCTED with the nvtx_gpu_proj_sum header in the notes; range names as in lesson1.
    text = (
        "Range,Style,Total Proj Time (ns),Total Range Time (ns),Range Instances,Proj Avg (ns),"
        "Proj Med (ns),Proj Min (ns),Proj Max (ns),Proj StdDev (ns),Total GPU Ops,Avg GPU Ops,"
        "Avg Range Lvl,Avg Num Child\n"
        ":compute_bound_gemm,PushPop,54391820,54421003,1,54391820.0,54391820.0,54391820,54391820,0.0,20,20.0,0.0,0.0\n"
        ":memory_bound_scale,PushPop,14509880,14530112,1,14509880.0,14509880.0,14509880,14509880,0.0,20,20.0,0.0,0.0\n"
    )
    report = parse_stats_csv(text)
    assert report.nvtx_gpu_proj is not None
    gemm = report.nvtx_gpu_proj[0]
    assert gemm.range_name == ":compute_bound_gemm" and gemm.style == "PushPop"
    assert (gemm.total_proj_ns, gemm.total_range_ns, gemm.range_instances) == (
        54_391_820,
        54_421_003,
        1,
    )
    assert (gemm.total_gpu_ops, gemm.avg_gpu_ops, gemm.avg_num_child) == (20, 20.0, 0.0)


def test_csv_nvtx_kern_sum_columns_by_name() -> None:
    # CONSTRUCTED: the notes do not confirm nvtx_kern_sum's full header, so this one
    # mixes the documented names; parsing relies only on their meaning.
    text = (
        "NVTX Range,Style,PID,TID,NVTX Inst,Kern Inst,Total Time (ns),Avg (ns),Med (ns),Min (ns),"
        "Max (ns),StdDev (ns),Kernel Name\n"
        ":memory_bound_scale,PushPop,4242,4242,1,20,14500000,725000.0,724990.0,724000,726500,600.5,"
        '"void at::native::vectorized_elementwise_kernel<(int)4, at::native::AUnaryFunctor<c10::Half>>(int, T2, T3)"\n'
    )
    report = parse_stats_csv(text, source="l1_nvtx_kern_sum.csv")
    assert report.nvtx_kernels is not None
    row = report.nvtx_kernels[0]
    assert (row.range_name, row.range_instances, row.kernel_instances, row.total_ns) == (
        ":memory_bound_scale",
        1,
        20,
        14_500_000,
    )
    assert row.kernel_name.endswith("(int, T2, T3)") and row.pid == 4242


# ------------------------------------------------ console: other layouts and chatter


def _column_table(header: list[str], rows: list[list[str]]) -> str:
    """Lay out a table the way nsys' column format does (CONSTRUCTED input for tests):
    numbers right-aligned, the last column left-aligned, a dash run under each title."""
    widths = [max(len(c) for c in col) for col in zip(header, *rows, strict=True)]

    def line(cells: list[str], last_left: bool) -> str:
        out = [c.rjust(w) for c, w in zip(cells[:-1], widths[:-1], strict=True)]
        out.append(cells[-1].ljust(widths[-1]) if last_left else cells[-1].center(widths[-1]))
        return " " + "  ".join(out)

    body = [line(header, False), " " + "  ".join("-" * w for w in widths)]
    body += [line(r, True) for r in rows]
    return "\n".join(body) + "\n"


# CONSTRUCTED after the nsys 2021.3 output cited in the fixtures' SOURCES.md: headings
# `CUDA API Statistics:` / `CUDA Kernel Statistics:` and the `Time(%) ... Average (ns)`
# header with no median.
_OLD_HEADER = [
    "Time(%)",
    "Total Time (ns)",
    "{count}",
    "Average (ns)",
    "Minimum (ns)",
    "Maximum (ns)",
    "StdDev (ns)",
    "Name",
]
CONSOLE_2021_CONSTRUCTED = (
    "Generating CUDA API Statistics...\n"
    "CUDA API Statistics (nanoseconds)\n\n"
    "CUDA API Statistics:\n\n"
    + _column_table(
        [h.format(count="Num Calls") for h in _OLD_HEADER],
        [
            [
                "93.1",
                "402,615,123",
                "3",
                "134,205,041.0",
                "4,128",
                "402,600,313",
                "232,434,541.1",
                "cudaMalloc",
            ],
            [
                "6.9",
                "29,841,904",
                "501",
                "59,564.7",
                "3,380",
                "233,538",
                "90,375.7",
                "cudaLaunchKernel",
            ],
        ],
    )
    + "\nCUDA Kernel Statistics:\n\n"
    + _column_table(
        [h.format(count="Instances") for h in _OLD_HEADER],
        [
            [
                "60.0",
                "58,455,846",
                "100",
                "584,558.5",
                "583,165",
                "595,325",
                "2,238.9",
                "void add_kernel<double>(const T1 *, const T1 *, T1 *)",
            ],
            [
                "40.0",
                "38,970,564",
                "100",
                "389,705.6",
                "379,486",
                "396,862",
                "1,629.7",
                "void copy_kernel<double>(const T1 *, T1 *)",
            ],
        ],
    )
)


def test_console_2021_headings_and_headers() -> None:
    report = parse_stats_console(CONSOLE_2021_CONSTRUCTED, source="old.txt")
    assert report.cuda_api is not None and report.kernels is not None
    assert [r.name for r in report.cuda_api] == ["cudaMalloc", "cudaLaunchKernel"]
    assert report.cuda_api[0].stddev_ns == 232_434_541.1
    assert report.cuda_api[1].num_calls == 501
    k = report.kernels[0]
    assert (k.time_pct, k.total_ns, k.instances, k.avg_ns, k.min_ns, k.max_ns) == (
        60.0,
        58_455_846,
        100,
        584_558.5,
        583_165,
        595_325,
    )
    assert k.med_ns is None  # no median before 2022
    assert k.name == "void add_kernel<double>(const T1 *, const T1 *, T1 *)"


def test_console_2021_memory_size_table_in_kib() -> None:
    # CONSTRUCTED: the 2021 size table put its unit in the heading, not the columns.
    text = "CUDA Memory Operation Statistics (by size in KiB):\n\n" + _column_table(
        ["Total", "Operations", "Average", "Minimum", "Maximum", "Operation"],
        [["262,144.000", "1", "262,144.000", "262,144.000", "262,144.000", "[CUDA memcpy HtoD]"]],
    )
    rows = parse_stats_console(text).mem_size
    assert rows is not None
    assert rows[0].operation == "htod" and rows[0].count == 1
    assert rows[0].total_mb == pytest.approx(268.435456)


# CONSTRUCTED: `nsys stats` (not profile) with the banners it prints, a column-mode
# kernel table with a `…`-truncated name, and a report we do not model.
CONSOLE_STATS_CONSTRUCTED = """\
NOTICE: Existing SQLite export found: l1.sqlite
        It is assumed file was previously exported from: l1.nsys-rep
        Consider using --force-export=true if needed.

Processing [l1.sqlite] with [/opt/nvidia/nsight-systems/2024.6.1/host-linux-x64/reports/cuda_gpu_kern_sum.py]...

 ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):

 Time (%)  Total Time (ns)  Instances   Avg (ns)     Med (ns)    Min (ns)   Max (ns)   StdDev (ns)                        Name
 --------  ---------------  ---------  -----------  -----------  ---------  ---------  -----------  ----------------------------------------------------
     78.4       62,548,294         23  2,719,491.0  2,719,000.0  2,700,112  2,740,001      9,870.2  void cutlass::Kernel2<cutlass_80_tensorop_f16_s1681…
     20.9       16,686,361         23    725,494.0    725,400.0    724,950    727,001        410.7  void at::native::vectorized_elementwise_kernel<(int…

Processing [l1.sqlite] with [/opt/nvidia/nsight-systems/2024.6.1/host-linux-x64/reports/cuda_gpu_kern_gb_sum.py]...

 ** CUDA GPU Kernel/Grid/Block Summary (cuda_gpu_kern_gb_sum):

 Time (%)  Total Time (ns)  Instances  Name
 --------  ---------------  ---------  ----
    100.0               10          1  k
"""  # noqa: E501


def test_console_nsys_stats_banners_truncated_names_and_unknown_reports() -> None:
    report = parse_stats_console(CONSOLE_STATS_CONSTRUCTED, source="stats.txt")
    assert report.kernels is not None and len(report.kernels) == 2
    assert all(k.truncated for k in report.kernels)
    assert report.kernels[0].name == "void cutlass::Kernel2<cutlass_80_tensorop_f16_s1681…"
    assert report.kernels[0].total_ns == 62_548_294
    assert report.ignored_reports == ["cuda_gpu_kern_gb_sum"]


def test_console_csv_blocks_on_stdout() -> None:
    # CONSTRUCTED: `nsys stats --format csv --output - -r nvtx_sum,cuda_gpu_kern_sum`.
    text = (
        "Generating SQLite file l1.sqlite from l1.nsys-rep\n"
        "Processing [l1.sqlite] with [/opt/nsys/reports/nvtx_sum.py]...\n"
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range\n"
        "79.0,54421003,1,54421003.0,54421003.0,54421003,54421003,0.0,PushPop,compute_bound_gemm\n"
        "21.0,14530112,1,14530112.0,14530112.0,14530112,14530112,0.0,PushPop,memory_bound_scale\n"
        "\n"
        "Processing [l1.sqlite] with [/opt/nsys/reports/cuda_gpu_kern_sum.py]...\n"
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        '78.4,62548294,23,2719491.0,2719000.0,2700112,2740001,9870.2,"void k<1, 2>(int)"\n'
    )
    report = parse_stats_console(text)
    assert report.nvtx is not None and report.kernels is not None
    assert [r.name for r in report.nvtx] == ["compute_bound_gemm", "memory_bound_scale"]
    assert report.kernels[0].name == "void k<1, 2>(int)" and report.kernels[0].instances == 23
    assert report.sources == {"nvtx_sum": "<text>", "cuda_gpu_kern_sum": "<text>"}


def test_console_reads_nsys_version_line_when_present() -> None:
    text = "NVIDIA Nsight Systems version 2022.4.2.1-df9881f\n" + F02.read_text(encoding="utf-8")
    assert parse_stats_console(text).nsys_version == "2022.4.2.1-df9881f"


def test_console_program_output_only_gives_empty_report() -> None:
    report = parse_stats_console("hello\nFunction    MBytes/sec\nCopy 1.0\n")
    assert report == NsysReport()


# ------------------------------------------------------------------- malformed input

_F06_LINES = F06.read_text(encoding="utf-8").splitlines()


def test_console_truncated_table_names_the_line() -> None:
    # The fixture cut in the middle of its kernel row (line 62).
    assert _F06_LINES[61].endswith("vectorAdd(const float *, const float *, float *, int)")
    cut = "\n".join(_F06_LINES[:61]) + "\n" + _F06_LINES[61][:60]
    with pytest.raises(ParseError, match="row is cut short") as caught:
        parse_stats_console(cut, source=F06.name)
    assert caught.value.lineno == 62
    assert caught.value.source == F06.name
    assert F06.name + ":62:" in caught.value.line()


def test_console_row_with_an_extra_cell_names_the_line() -> None:
    lines = list(_F06_LINES)
    # Line 68 is the HtoD row of cuda_gpu_mem_time_sum; squeeze in one more number.
    assert lines[67].endswith("[CUDA memcpy HtoD]")
    lines[67] = lines[67].replace("  1,216.0   1,216.0", "  1,216.0 7 1,216.0", 1)
    with pytest.raises(ParseError, match="does not fit the columns") as caught:
        parse_stats_console("\n".join(lines), source=F06.name)
    assert caught.value.lineno == 68


def test_console_non_number_cell_names_the_line() -> None:
    lines = list(_F06_LINES)
    assert lines[61].lstrip().startswith("100.0")
    lines[61] = lines[61].replace("1,831,281", "1,83x,281")
    with pytest.raises(ParseError, match="not a number") as caught:
        parse_stats_console("\n".join(lines), source=F06.name)
    assert caught.value.lineno == 62


def test_console_announced_report_with_wrong_header() -> None:
    # CONSTRUCTED: a kern_sum banner over a table that lacks Total Time.
    text = "[6/8] Executing 'cuda_gpu_kern_sum' stats report\n\n Instances  Name\n ---------  ----\n         1  k   \n"
    with pytest.raises(ParseError, match="lacks column") as caught:
        parse_stats_console(text, source="log.txt")
    assert caught.value.lineno == 3


def test_csv_unknown_header() -> None:
    with pytest.raises(ParseError, match="unrecognised nsys CSV header") as caught:
        parse_stats_csv("\nfoo,bar,baz\n1,2,3\n", source="x.csv")
    assert caught.value.lineno == 2 and caught.value.source == "x.csv"


def test_csv_row_with_wrong_number_of_cells() -> None:
    lines = F03.read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4] + ",extra"
    with pytest.raises(ParseError, match="10 cells, the header has 9") as caught:
        parse_stats_csv("\n".join(lines), source=F03.name)
    assert caught.value.lineno == 5


def test_csv_truncated_mid_row() -> None:
    text = F03.read_text(encoding="utf-8")
    cut = text[: text.index("void at::native::unrolled_elementwise_kernel") + 20]
    with pytest.raises(ParseError) as caught:
        parse_stats_csv(cut, source=F03.name)
    assert caught.value.lineno == 5


def test_csv_empty() -> None:
    with pytest.raises(ParseError, match="empty CSV"):
        parse_stats_csv("\n\n", source="empty.csv")


def test_csv_unknown_report_argument() -> None:
    with pytest.raises(ParseError, match="unknown nsys report name"):
        parse_stats_csv(CSV_API_CONSTRUCTED, report="no_such_report")


# ---------------------------------------------------- stale export, importer errors

# CONSTRUCTED from the WARNING text in the notes (their `...` filled in).
STALE_WARNING_CONSTRUCTED = """\
WARNING: Existing SQLite export found: /tmp/l1.sqlite
         File is older than input file: /tmp/l1.nsys-rep
         Use --force-export=true to update export file.
"""


def test_stale_export_warning_is_an_error_not_an_empty_table() -> None:
    with pytest.raises(StaleExportError) as caught:
        parse_stats_console(STALE_WARNING_CONSTRUCTED, source="stats.txt")
    assert isinstance(caught.value, ParseError)
    assert caught.value.lineno == 1
    assert "--force-export=true" in caught.value.line()
    with pytest.raises(StaleExportError):
        parse_stats_csv(STALE_WARNING_CONSTRUCTED, source="l1_cuda_gpu_kern_sum.csv")
    with pytest.raises(StaleExportError):
        check_stats_output("some output\n" + STALE_WARNING_CONSTRUCTED)


def test_fresh_export_notice_is_fine() -> None:
    check_stats_output(CONSOLE_STATS_CONSTRUCTED)  # NOTICE: ... reused: no error


# CONSTRUCTED from the importer message in the notes.
QDSTRM_ONLY_CONSTRUCTED = """\
Generating '/tmp/nsys-report-1a2b.qdstrm'
Importer error status: The importer binary and its dependencies were not found.
Report file moved to "/tmp/l1.qdstrm"
"""


def test_qdstrm_only_importer_error() -> None:
    line = detect_importer_error(QDSTRM_ONLY_CONSTRUCTED)
    assert line == "Importer error status: The importer binary and its dependencies were not found."
    with pytest.raises(ImporterMissingError) as caught:
        parse_stats_console(QDSTRM_ONLY_CONSTRUCTED, source="profile.log")
    assert caught.value.lineno == 2
    assert detect_importer_error(F01.read_text(encoding="utf-8")) is None


# ---------------------------------------------------------------------- merging


def test_merge_reports_from_separate_csv_files() -> None:
    kern = parse_stats_csv(CSV_TIMEUNIT_US_CONSTRUCTED, source="r_cuda_gpu_kern_sum.csv")
    api = parse_stats_csv(CSV_API_CONSTRUCTED, source="r_cuda_api_sum.csv")
    merged = merge_reports([kern, api])
    assert merged.kernels == kern.kernels and merged.cuda_api == api.cuda_api
    assert merged.sources == {
        "cuda_gpu_kern_sum": "r_cuda_gpu_kern_sum.csv",
        "cuda_api_sum": "r_cuda_api_sum.csv",
    }
    with pytest.raises(ValueError, match="cuda_gpu_kern_sum appears twice"):
        merge_reports([kern, kern])


def test_a_second_table_of_the_same_report_is_an_error() -> None:
    text = F06.read_text(encoding="utf-8")
    with pytest.raises(ParseError, match="a second cuda_gpu_kern_sum table"):
        parse_stats_console(text + "\n" + text.split("[6/8]", 1)[1].split("[7/8]")[0])


def test_csv_file_name_and_header_disagree() -> None:
    with pytest.raises(
        ParseError, match="expected a osrt_sum table, but its header is that of cuda_gpu_kern_sum"
    ) as caught:
        parse_stats_csv(CSV_TIMEUNIT_US_CONSTRUCTED, source="run_osrt_sum.csv")
    assert caught.value.lineno == 1


def test_console_banner_and_header_disagree() -> None:
    text = F06.read_text(encoding="utf-8").replace(
        "[6/8] Executing 'cuda_gpu_kern_sum' stats report",
        "[6/8] Executing 'cuda_gpu_trace' stats report",
    )
    with pytest.raises(ParseError, match="expected a cuda_gpu_trace table") as caught:
        parse_stats_console(text, source=F06.name)
    assert caught.value.lineno == 60


def test_console_tables_recognised_without_banners() -> None:
    lines = F06.read_text(encoding="utf-8").splitlines()
    bare = [line for line in lines if "stats report" not in line]
    assert len(bare) == len(lines) - 6
    report = parse_stats_console("\n".join(bare), source=F06.name)
    # cuda_api_sum and osrt_sum share a header: told apart by their function names.
    assert report == _console(F06)


def test_console_program_tables_that_do_not_fit_are_not_ours() -> None:
    # CONSTRUCTED: the profiled program prints its own dashed table before nsys' output.
    program = "Step   Loss\n----  -----\n  1   0.25\n 10   0.125\n\n"
    report = parse_stats_console(program + F06.read_text(encoding="utf-8"), source=F06.name)
    assert report == _console(F06)
