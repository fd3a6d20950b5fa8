"""Names that keep their identity in a table, memory operations as people say them, and
counts written as counts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from clirun import run_cli
from tracebuild import kernel, launch, write_kineto

from nsightlab import units
from nsightlab.parse import nsys
from nsightlab.parse.names import distinct_short_names, memory_operation_name, short_kernel_name

HERE = Path(__file__).parent
F03 = HERE / "fixtures" / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv"
HTA = HERE / "data" / "traces" / "hta_negative_queue_length_rank0.json.gz"
CORPUS = [
    line.split("\t", 2)[2]
    for line in (HERE / "data" / "kernel_names" / "kernels.tsv").read_text(encoding="utf-8").splitlines()
    if line and not line.startswith("#")
]


@pytest.mark.parametrize(
    ("name", "readable"),
    [
        ("Memcpy DtoD (Device -> Device)", "memcpy DtoD"),
        ("Memcpy HtoD (Pinned -> Device)", "memcpy HtoD (pinned)"),
        ("Memcpy HtoD (Pageable -> Device)", "memcpy HtoD (pageable)"),
        ("Memcpy DtoH (Device -> Pinned)", "memcpy DtoH (pinned)"),
        ("Memcpy DtoH (Device -> Pageable)", "memcpy DtoH (pageable)"),
        ("Memcpy HtoD (Host -> Device)", "memcpy HtoD"),  # ROCm's spelling
        ("Memcpy DtoH (Device -> Host)", "memcpy DtoH"),
        ("Memset (Device)", "memset"),
        ("Memset (Unknown)", "memset (unknown)"),
        ("[CUDA memcpy Host-to-Device]", "memcpy HtoD"),  # nsys
        ("[CUDA memcpy Device-to-Host]", "memcpy DtoH"),
        ("[CUDA memcpy Device-to-Device]", "memcpy DtoD"),
        ("[CUDA memcpy Peer-to-Peer]", "memcpy PtoP"),
        ("[CUDA memset]", "memset"),
    ],
)
def test_memory_operations_get_readable_names(name: str, readable: str) -> None:
    assert memory_operation_name(name) == readable
    assert short_kernel_name(name) == readable


def test_the_reported_pair_no_longer_reads_device() -> None:
    pair = ["Memcpy DtoD (Device -> Device)", "Memcpy HtoD (Pinned -> Device)"]
    assert distinct_short_names(pair) == ["memcpy DtoD", "memcpy HtoD (pinned)"]


def test_two_gemv_kernels_keep_the_part_that_tells_them_apart() -> None:
    gemv = [k.name for k in nsys.parse_file(F03).kernels or [] if "gemvx::kernel<" in k.name]
    assert len(gemv) == 2 and short_kernel_name(gemv[0]) == short_kernel_name(gemv[1])  # as they were shown
    a, b = distinct_short_names(gemv)
    assert a != b and len(a) <= 60 and len(b) <= 60
    # The kernel's name, then the template argument they differ in (7 and 6) onwards.
    assert a.startswith("gemvx::kernel<…7, 0, cublasGemvParamsEx<") and b.startswith("gemvx::kernel<…6, 0, ")


@pytest.mark.parametrize("width", [8, 12, 20, 40, 60, 100])
def test_a_column_of_real_names_stays_distinct_at_any_width(width: int) -> None:
    names = [*CORPUS, CORPUS[0], CORPUS[5]]  # a name twice shows the same text twice
    shown = distinct_short_names(names, width)
    assert all(0 < len(s) <= width for s in shown)
    assert len(set(shown)) == len(set(names)) == len(CORPUS)
    assert shown[-2] == shown[0] and shown[-1] == shown[5]


def test_names_that_differ_only_in_spelling_are_numbered() -> None:
    one = "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)"
    other = "void at::native::vectorized_gather_kernel<16, long>(char *, char *, long *, int, long, long)"
    assert distinct_short_names([one, other]) == [
        "at::native::vectorized_gather_kernel<16, long> #1",
        "at::native::vectorized_gather_kernel<16, long> #2",
    ]


def test_a_range_without_a_kernel_is_an_empty_cell() -> None:
    assert distinct_short_names([None, "", "Memset (Device)", None]) == ["", "", "memset", ""]


@pytest.mark.parametrize(
    ("n", "text"), [(1375, "1375"), (1375.0, "1375"), (1, "1"), (1.0, "1"), (0, "0"), (4.5, "4.5")]
)
def test_counts_are_written_as_counts(n: float, text: str) -> None:
    assert units.count(n) == text


def test_analyze_shows_every_kernel_of_a_summary_apart(capsys: pytest.CaptureFixture[str], nsl_home: Path) -> None:
    r = run_cli(capsys, "analyze", str(F03))
    assert r.code == 0, r
    rows = [line for line in r.out.splitlines() if re.match(r"^\s*\d+(?:\.\d)?%\s", line)]
    names = [re.split(r"\s{2,}", row.strip())[-1] for row in rows]
    assert len(names) >= 10 and len(set(names)) == len(names), names


def test_analyze_writes_kernels_per_step_as_a_count(capsys: pytest.CaptureFixture[str], nsl_home: Path) -> None:
    data = json.loads(run_cli(capsys, "analyze", str(HTA), "--json").out)
    per_step = data["steps"][0]["kernels_per_step"]
    r = run_cli(capsys, "analyze", str(HTA))
    assert r.code == 0, r
    header, row = next(
        (line, r.out.splitlines()[i + 1]) for i, line in enumerate(r.out.splitlines()) if "KERNELS/STEP" in line
    )
    cell = row[header.index("STEP (ms)") + len("STEP (ms)") :].split()[1]  # STEP, P90, then KERNELS/STEP
    assert cell == units.count(per_step) and "." not in cell
    assert "Device)" not in r.out


# Two Tensile GEMMs of a real torch.compile trace on an MI300X (AMD-AGI/TraceLens's
# tests/traces/torch_compile_triton): the same 478-character name but for one flag at
# character 411, `ULSGRO1` against `ULSGRO0`.
_TENSILE = (
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_"
    "CADS0_EPS0_GRVWA8_GRVWB2_GSUAMB_IU1_K1_LBSPPA512_LBSPPB128_LBSPPM0_LPA16_LPB8_LPM0_LRVW16_LWPMn1_MIAV1_"
    "MIWT8_6_MO40_NTn1_NTA0_NTB0_NTC0_NTD4_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_"
    "SSO0_SVW1_SK0_SKXCCM0_TLDS1_ULSGRO{}_USL1_UIOFGRO0_USFGROn1_VSn1_VWA8_VWB2_WSGRA0_WSGRB0_WS64_WG32_8_1"
)


def test_the_whole_traces_kernel_table_never_shows_two_kernels_alike(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a, b = _TENSILE.format(1), _TENSILE.format(0)
    assert short_kernel_name(a) == short_kernel_name(b)  # what the table used to show for both
    events = [
        launch("hipLaunchKernel", 0, 5, 1),
        kernel(a, 10, 3_000, 1),
        launch("hipLaunchKernel", 20, 5, 2),
        kernel(b, 3_100, 2_000, 2),
    ]
    r = run_cli(capsys, "analyze", str(write_kineto(tmp_path / "t.json", events, device="AMD Instinct MI300X")))
    assert r.code == 0
    rows = [line for line in r.out.splitlines() if line.rstrip().endswith("_VW…")]
    assert len(rows) == 2 and "ULSGRO1" in rows[0] and "ULSGRO0" in rows[1], r.out
