"""ncu and analyze: the command line, the ERR_NVGPUCTRPERM path, offline analysis of fixtures."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from clirun import run_cli

HERE = Path(__file__).resolve().parent
FIX = HERE / "fixtures"
NCU05 = FIX / "ncu" / "05_ncu_csv_page_details_vectorized_elementwise_rtx5090.csv"
NCU04 = FIX / "ncu" / "04_ncu_csv_section_SpeedOfLight_cutlass_gemm_rtx5090.csv"


pytestmark = pytest.mark.usefixtures("nsl_home")


@pytest.fixture
def ncu_standin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{HERE / 'standins'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NSIGHTLAB_TEST_NCU_FIXTURE", str(NCU05))
    monkeypatch.delenv("NSIGHTLAB_TEST_NCU", raising=False)


def test_ncu_local_parses_and_stores(capsys: pytest.CaptureFixture[str], ncu_standin: None, nsl_home: Path) -> None:
    pytest.importorskip("torch")
    r = run_cli(capsys, "ncu", "lesson1", "--local", "--json", "--", "--scale-log2", "14", "--gemm-n", "32")
    assert r.code == 0, r
    data = json.loads(r.out)
    k = data["kernels"][0]
    assert k["dram_throughput_pct"] == 6.26 and k["duration_ns"] == 2940 and k["l2_hit_rate_pct"] == 16.82
    assert k["sm_throughput_pct"] == 0.47 and k["bound"] == "latency"
    assert data["versions"]["ncu"].startswith("2024.3.2")
    run = next((nsl_home / "runs").iterdir())
    assert (run / "raw" / "ncu.csv").read_text().count("dram__throughput") >= 1
    assert json.loads((run / "meta.json").read_text())["kind"] == "ncu"


def test_counters_blocked_is_exit_7_with_both_ways_forward(
    capsys: pytest.CaptureFixture[str], ncu_standin: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    monkeypatch.setenv("NSIGHTLAB_TEST_NCU", "perm")
    r = run_cli(capsys, "ncu", "lesson1", "--local", "--", "--scale-log2", "14", "--gemm-n", "32")
    assert r.code == 7, r
    last = r.err.strip().splitlines()[-1]  # progress notes come before; the error is one line
    assert last.startswith("error: ") and "ERR_NVGPUCTRPERM" in last
    assert "profiling-enabled node" in last and "--profiling-caps" in last and "RmProfilingAdminOnly" in last


def test_ncu_on_the_cpu_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "ncu", "--local", "--device", "cpu")
    assert r.code == 2, r
    assert (
        r.err.strip()
        == "error: ncu profiles GPU kernels: --device cpu leaves it nothing to measure. On the CPU, torch.profiler "
        "times its ops: `nsightlab profile lesson1 --profiler torch --device cpu --local`."
    )


def test_ncu_missing_is_exit_6(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    r = run_cli(capsys, "ncu", "--local")
    assert r.code == 6 and "ncu (Nsight Compute) is not installed" in r.err


@pytest.mark.parametrize(
    "fixture", sorted((FIX / "nsys").glob("*")) + sorted((FIX / "ncu").glob("*.csv")), ids=lambda p: p.name
)
def test_analyze_every_fixture(capsys: pytest.CaptureFixture[str], fixture: Path) -> None:
    r = run_cli(capsys, "analyze", str(fixture), "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    kernels = data["kernels"]
    assert kernels
    if "ncu" in fixture.parts:
        assert {"name", "duration_ns", "dram_throughput_pct", "sm_throughput_pct", "l2_hit_rate_pct"} <= set(kernels[0])
    else:
        assert {"name", "instances", "total_ns", "avg_ns", "time_pct"} <= set(kernels[0])
    text = run_cli(capsys, "analyze", str(fixture))
    assert text.code == 0 and kernels[0]["name"][:10] in json.dumps(data)


def test_analyze_values_from_the_fixtures(capsys: pytest.CaptureFixture[str]) -> None:
    old = json.loads(
        run_cli(
            capsys,
            "analyze",
            str(FIX / "nsys" / "02_nsys2022.4.2_stats_console_oldnames_babelstream_a100.txt"),
            "--json",
        ).out
    )
    add = old["kernels"][0]
    assert add["name"] == "void add_kernel<double>(const T1 *, const T1 *, T1 *)"
    assert (add["instances"], add["total_ns"]) == (100, 58455846)
    gemm = json.loads(run_cli(capsys, "analyze", str(NCU04), "--json").out)["kernels"][0]
    assert gemm["duration_ns"] == 165090 and gemm["sm_throughput_pct"] == 30.71 and gemm["l2_hit_rate_pct"] is None


def test_analyze_folder_of_csv_exports(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    shutil.copy(FIX / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv", folder / "l1_cuda_gpu_kern_sum.csv")
    r = run_cli(capsys, "analyze", str(folder), "--json")
    assert r.code == 0, r
    assert len(json.loads(r.out)["kernels"]) == 113


def test_analyze_bad_file_names_file_and_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n12.5,100,2\n"
    )
    r = run_cli(capsys, "analyze", str(bad))
    assert r.code == 2 and f"{bad}:2" in r.err
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\nworld\n")
    r = run_cli(capsys, "analyze", str(junk))
    assert r.code == 2 and str(junk) in r.err
    r = run_cli(capsys, "analyze", str(tmp_path / "missing.csv"))
    assert r.code == 2 and "does not exist" in r.err


def test_analyze_lesson1_json_and_run_folder(capsys: pytest.CaptureFixture[str]) -> None:
    rec = HERE / "data" / "lesson1_cpu_float32_epyc-2c-l3-32mib.json"
    r = run_cli(capsys, "analyze", str(rec), "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    scale = next(x for x in data["ranges"] if x["name"] == "memory_bound_scale")["rates"]
    assert scale["bytes_per_call"] == 33554432 and data["timing_source"] == "the script's own timing"


def test_the_verdict_quotes_the_table_s_percentages(capsys: pytest.CaptureFixture[str]) -> None:
    """One way to write a percentage (units): the verdict's `DRAM 6.3%` is the
    table's 6.3%, not a `6%` of its own."""
    r = run_cli(capsys, "analyze", str(NCU05))
    assert r.code == 0, r
    header, row = r.out.splitlines()[1:3]
    names = ["DRAM", "MEMORY", "L2", "L2 HIT", "SM"]
    assert header.split("(us)")[1].split() == ["DRAM", "MEMORY", "L2", "L2", "HIT", "SM", "BOUND"]
    cells = dict(zip(names, row.split()[-6:-1], strict=True))
    assert cells["DRAM"] == "6.3%" and cells["SM"] == "0.5%"
    verdict = next(line for line in r.out.splitlines() if "latency-bound" in line)
    assert f"neither memory ({cells['MEMORY']}, DRAM {cells['DRAM']}) nor compute ({cells['SM']})" in verdict
