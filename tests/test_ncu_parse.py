"""Nsight Compute parsers: golden parses of real `ncu --csv` outputs, key values read off
the fixture text, and constructed edge cases (marked as such)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden.regen import golden_path, ncu_fixtures, parse_fixture

from nsightlab.errors import ParseError
from nsightlab.parse import ncu_csv as ncu_parse
from nsightlab.parse.ncu_csv import NcuReport, detect_counter_permission_error, parse_ncu_csv, parse_ncu_version

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"
F04 = FIXTURES / "04_ncu_csv_section_SpeedOfLight_cutlass_gemm_rtx5090.csv"
F05 = FIXTURES / "05_ncu_csv_page_details_vectorized_elementwise_rtx5090.csv"

SOL = "GPU Speed Of Light Throughput"


def _parse(path: Path) -> NcuReport:
    return parse_ncu_csv(path.read_text(encoding="utf-8"), source=path.name)


def test_every_ncu_fixture_has_a_golden_file() -> None:
    fixtures = ncu_fixtures()
    assert len(fixtures) == 2
    for fixture in fixtures:
        assert golden_path(fixture).is_file(), f"no golden parse for {fixture.name}"


@pytest.mark.parametrize("fixture", ncu_fixtures(), ids=lambda p: p.name)
def test_parse_matches_golden(fixture: Path) -> None:
    expected = json.loads(golden_path(fixture).read_text(encoding="utf-8"))
    assert parse_fixture(fixture) == expected


# ------------------------------------------------- key values read off the fixtures


def test_fixture04_speed_of_light_section() -> None:
    report = _parse(F04)
    assert report.warnings == []
    assert len(report.kernels) == 1
    k = report.kernels[0]
    assert k.id == 0
    assert k.name == "void Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8>(Params)"
    assert (k.process_id, k.process_name, k.host) == (1704452, "python3.12", "127.0.0.1")
    assert (k.context, k.stream, k.device, k.cc) == (1, 7, 0, "12.0")
    assert k.block == (256, 1, 1) and k.grid == (312, 2, 1)
    assert k.duration_ns == 165_090.0  # "Duration","us","165.09"
    assert k.sm_throughput_pct == 30.71
    assert k.memory_throughput_pct == 25.96
    assert k.dram_throughput_pct == 3.82
    assert k.l1_throughput_pct == 16.56
    assert k.l2_throughput_pct == 25.96
    # Not in a SpeedOfLight-only export:
    assert k.l2_hit_rate_pct is None and k.dram_bytes_read is None and k.dram_bytes_write is None
    assert list(k.metrics) == [SOL]
    assert len(k.metrics[SOL]) == 10
    elapsed = k.metric(SOL, "Elapsed Cycles")
    assert elapsed is not None
    assert (elapsed.value, elapsed.unit, elapsed.raw) == (331_724.0, "cycle", "331,724")
    sm_active = k.metric(SOL, "SM Active Cycles")
    assert sm_active is not None and sm_active.value == 228_656.66
    dram_freq = k.metric(SOL, "DRAM Frequency")
    assert dram_freq is not None
    assert (dram_freq.value, dram_freq.unit, dram_freq.raw_unit) == (13.78e9, "Hz", "Ghz")
    assert len(k.rules) == 1
    rule = k.rules[0]
    assert (rule.section, rule.name, rule.type) == ("SpeedOfLight", "SOLBottleneck", "OPT")
    assert rule.description.startswith("This workload exhibits low compute throughput")
    assert rule.speedup_type is None and rule.estimated_speedup is None


def test_fixture05_details_page() -> None:
    report = _parse(F05)
    assert len(report.kernels) == 1
    k = report.kernels[0]
    assert k.name.startswith("void vectorized_elementwise_kernel<4, BinaryFunctor<BFloat16,")
    assert k.block == (128, 1, 1) and k.grid == (77, 1, 1)
    assert k.dram_throughput_pct == 6.26
    assert k.duration_ns == 2940.0  # 2.94 us
    assert k.l2_hit_rate_pct == 16.82  # "Memory Workload Analysis","L2 Hit Rate","%","16.82"
    assert k.sm_throughput_pct == 0.47
    assert k.memory_throughput_pct == 10.17  # the SOL percentage, not MWA's Gbyte/s
    assert k.l1_throughput_pct == 4.44 and k.l2_throughput_pct == 3.62
    assert k.dram_bytes_read == 322_050.0  # 322.05 Kbyte
    assert k.dram_bytes_write == 0.0
    assert {s: len(m) for s, m in k.metrics.items()} == {
        "Command line profiler metrics": 9,
        SOL: 10,
        "Memory Workload Analysis": 7,
        "Scheduler Statistics": 5,
        "Occupancy": 13,
    }
    mwa = k.metric("Memory Workload Analysis", "Memory Throughput")
    assert mwa is not None
    assert (mwa.value, mwa.unit, mwa.raw_unit, mwa.raw) == (109.39e9, "byte/s", "Gbyte/s", "109.39")
    flops = k.metric("Command line profiler metrics", "flop_count_hp.sum")
    assert flops is not None and flops.value is None and flops.raw == "n/a"
    raw_duration = k.find_metric("gpu__time_duration.sum")
    assert raw_duration is not None and raw_duration.value == 2940.0
    assert [r.name for r in k.rules] == [
        "SOLBottleneck",
        "SOLFPRoofline",
        "IssueSlotUtilization",
        "AchievedOccupancy",
    ]
    issue = k.rules[2]
    assert (issue.section, issue.speedup_type, issue.estimated_speedup) == (
        "SchedulerStats",
        "local",
        89.83,
    )
    assert k.rules[3].speedup_type == "global"
    assert k.rules[1].type == "INF"


def test_parse_file() -> None:
    report = ncu_parse.parse_file(F04)
    assert report.kernels[0].sm_throughput_pct == 30.71


# ------------------------------------------------------------ constructed variants

_HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
    '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value",'
    '"Rule Name","Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"'
)


def _metric_row(kid: int, name: str, section: str, metric: str, unit: str, value: str) -> str:
    return (
        f'"{kid}","77","python3","host","{name}","1","7","(256, 1, 1)","(1024, 1, 1)","0","8.9",'
        f'"{section}","{metric}","{unit}","{value}",'
    )


def test_chatter_program_output_and_several_kernels() -> None:
    # CONSTRUCTED: ncu chatter before the CSV, program output mixed in, two kernel IDs,
    # raw metric names only (`--metrics`), other units.
    text = "\n".join(
        [
            "==PROF== Connected to process 77 (/usr/bin/python3.12)",
            '==PROF== Profiling "vectorized_elementwise_kernel" - 0: 0%....50%....100% - 9 passes',
            "tensor(1.0001, device='cuda:0')",
            "==PROF== Disconnected from process 77",
            "==WARNING== Found outstanding GPU clock reset, trying to revert...Success.",
            _HEADER,
            _metric_row(
                0,
                "void k1<4>(int)",
                "Command line profiler metrics",
                "gpu__time_duration.sum",
                "msecond",
                "1.5",
            ),
            "step 1 done",
            _metric_row(
                0,
                "void k1<4>(int)",
                "Command line profiler metrics",
                "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                "%",
                "91.02",
            ),
            _metric_row(
                0,
                "void k1<4>(int)",
                "Command line profiler metrics",
                "dram__bytes_read.sum",
                "Mbyte",
                "1,073.74",
            ),
            _metric_row(
                0,
                "void k1<4>(int)",
                "Command line profiler metrics",
                "lts__t_sector_hit_rate.pct",
                "%",
                "0.31",
            ),
            _metric_row(
                1,
                "void k2(float *)",
                "Command line profiler metrics",
                "gpu__time_duration.sum",
                "nsecond",
                "5,824",
            ),
            _metric_row(
                1,
                "void k2(float *)",
                "Command line profiler metrics",
                "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                "%",
                "12.5",
            ),
            _metric_row(
                1,
                "void k2(float *)",
                "Command line profiler metrics",
                "sm__cycles_elapsed.avg.per_second",
                "cycle/nsecond",
                "1.41",
            ),
        ]
    )
    report = parse_ncu_csv(text, source="ncu.csv")
    assert report.warnings == ["==WARNING== Found outstanding GPU clock reset, trying to revert...Success."]
    assert [k.id for k in report.kernels] == [0, 1]
    k1, k2 = report.kernels
    assert k1.duration_ns == 1_500_000.0
    assert k1.dram_throughput_pct == 91.02
    assert k1.dram_bytes_read == 1_073_740_000.0
    assert k1.l2_hit_rate_pct == 0.31
    assert k1.sm_throughput_pct is None
    assert (k2.duration_ns, k2.sm_throughput_pct, k2.grid, k2.cc) == (
        5824.0,
        12.5,
        (1024, 1, 1),
        "8.9",
    )
    freq = k2.find_metric("sm__cycles_elapsed.avg.per_second")
    assert freq is not None and freq.value == 1.41e9 and freq.unit == "Hz"


def test_pre_2023_names_and_kernel_time_column() -> None:
    # CONSTRUCTED: older ncu had a "Kernel Time" column and no Block/Grid/Device/CC,
    # and Speed Of Light rows named `Memory [%]` / `Compute (SM) [%]`.
    header = (
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context",'
        '"Stream","Section Name","Metric Name","Metric Unit","Metric Value"'
    )
    prefix = '"3","12","a.out","h","axpy(float, float *, float *)","2021-Mar-01 10:00:00","1","7","GPU Speed Of Light"'
    text = "\n".join(
        [
            header,
            prefix + ',"Memory [%]","%","88.50"',
            prefix + ',"Compute (SM) [%]","%","14.20"',
            prefix + ',"Duration","usecond","12.32"',
            prefix + ',"DRAM Throughput","%","88.50"',
        ]
    )
    report = parse_ncu_csv(text)
    k = report.kernels[0]
    assert (k.id, k.kernel_time, k.block, k.grid, k.device, k.cc) == (
        3,
        "2021-Mar-01 10:00:00",
        None,
        None,
        None,
        None,
    )
    assert (k.memory_throughput_pct, k.sm_throughput_pct, k.duration_ns, k.dram_throughput_pct) == (
        88.5,
        14.2,
        12_320.0,
        88.5,
    )


def test_row_with_too_many_fields_names_the_line() -> None:
    lines = F04.read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3] + '"x","y","z","w","v",'
    with pytest.raises(ParseError, match="fields, the header has 20") as caught:
        parse_ncu_csv("\n".join(lines), source=F04.name)
    assert caught.value.lineno == 4 and caught.value.source == F04.name


def test_truncated_row_names_the_line() -> None:
    text = F04.read_text(encoding="utf-8")
    lines = text.splitlines()
    # Cut inside a quoted field, and cut at a field boundary before the value.
    for cut_line, message in (
        (lines[5][:120], "malformed CSV line"),
        (lines[5][: lines[5].index('"%","3.82"')], "row too short"),
    ):
        cut = "\n".join(lines[:5]) + "\n" + cut_line
        with pytest.raises(ParseError, match=message) as caught:
            parse_ncu_csv(cut, source=F04.name)
        assert caught.value.lineno == 6


def test_kernel_id_whose_name_changes() -> None:
    lines = F04.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].replace("void Kernel2<", "void Kernel3<")
    with pytest.raises(ParseError, match="changes name") as caught:
        parse_ncu_csv("\n".join(lines), source=F04.name)
    assert caught.value.lineno == 3


def test_bad_block_size() -> None:
    lines = F04.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace('"(256, 1, 1)"', '"(256, 1)"')
    with pytest.raises(ParseError, match="Block Size") as caught:
        parse_ncu_csv("\n".join(lines), source=F04.name)
    assert caught.value.lineno == 2


def test_no_csv_at_all() -> None:
    with pytest.raises(ParseError, match="no ncu CSV header"):
        parse_ncu_csv("Traceback (most recent call last):\n  boom\n", source="out.txt")


def test_no_kernels_profiled_is_an_empty_report() -> None:
    # CONSTRUCTED: ncu ran but matched no kernel (e.g. a wrong -k regex).
    text = "==PROF== Connected to process 5\n==WARNING== No kernels were profiled.\n"
    report = parse_ncu_csv(text)
    assert report.kernels == [] and report.warnings == ["==WARNING== No kernels were profiled."]


# ----------------------------------------------------- permission error, version

PERM_LINE = (
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
    "Performance Counters on the target device 0. For instructions on enabling permissions "
    "and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM"
)


def test_detect_counter_permission_error_returns_the_verbatim_line() -> None:
    text = (
        "==PROF== Connected to process 4242 (/usr/bin/python3.12)\n"
        + PERM_LINE
        + "\n==PROF== Disconnected from process 4242\n"
    )
    assert detect_counter_permission_error(text) == PERM_LINE
    assert detect_counter_permission_error(text.replace("\n", "\r\n")) == PERM_LINE
    assert detect_counter_permission_error(F05.read_text(encoding="utf-8")) is None


def test_ncu_version() -> None:
    text = (
        "NVIDIA (R) Nsight Compute Command Line Profiler\n"
        "Copyright (c) 2018-2024 NVIDIA Corporation\n"
        "Version 2024.3.2.0 (build 34861637) (public-release)\n"
    )
    assert parse_ncu_version(text) == "2024.3.2.0"
    with pytest.raises(ParseError, match="Version"):
        parse_ncu_version("ncu: command not found\n", source="ncu-version.txt")
