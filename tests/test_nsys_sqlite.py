"""`analyze` of nsys's own database (the report's SQLite export) and of a `.nsys-rep`: the
same figures as the CSV exports of the same capture, in every schema era, read-only, and
bad input as one line.

The exports here are written by tests/nsys_sqlite_build.py in the exporter's own schema,
from real CSV exports where there are some (the vernier captures) and from hand-built
captures whose answer is known. Two real exports (nsys 2022.2 and 2024.5) are read in
tests/test_nsys_sqlite_real.py."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from nsys_sqlite_build import ERAS, TID, ExportWriter, api_name, from_csv_exports
from test_decode_analysis import _two_modes
from tracebuild import decode_exports

from nsightlab.parse.gputrace import read_nvtx_gpu_proj
from nsightlab.parse.nsys_sqlite_trace import SqliteTrace

HERE = Path(__file__).resolve().parent
TRACES = HERE / "data" / "traces"
RECORDED = HERE / "data" / "decode_cpu_tiny_xeon-2c.json"
H100 = "NVIDIA H100 80GB HBM3"
KERNELS = ["void gemv<float>(float const*, float*)", "void rms_norm<float>(float*)", "flash_fwd_kernel"]
DURATIONS = [7_000, 2_000, 5_000]


def analyze(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    r = run_cli(capsys, "analyze", *args, "--json")
    assert r.code == 0, r
    data: dict[str, Any] = json.loads(r.out)
    return data


def listing(folder: Path) -> list[tuple[str, int, float]]:
    """What a folder holds, to the byte and the modification time."""
    return sorted((p.name, p.stat().st_size, p.stat().st_mtime) for p in folder.iterdir())


def capture(path: Path, era: str = "2026.1", *, steps: int = 6, registered: bool = False) -> Path:
    """Six `decode_step` ranges inside a `mode:eager` range; each step launches the three
    kernels (7, 2 and 5 us) with cudaLaunchKernel, 1 us apart, then copies 4 MiB to the
    host (3 us, cudaMemcpyAsync) and sets 1 MiB (1 us, cudaMemsetAsync)."""
    kernels: list[tuple[object, ...]] = []
    copies: list[tuple[object, ...]] = []
    sets: list[tuple[object, ...]] = []
    calls: list[tuple[object, ...]] = []
    ranges: list[tuple[object, ...]] = []
    t, corr = 1_000_000, 0
    outer = t
    for _ in range(steps):
        begin = t
        for name, dur in zip(KERNELS, DURATIONS, strict=True):
            corr += 1
            calls.append((t, t + 500, api_name("cudaLaunchKernel"), corr))
            kernels.append((t + 1_000, t + 1_000 + dur, name, 0, 7, corr))
            t += 1_000 + dur
        corr += 1
        calls.append((t, t + 500, api_name("cudaMemcpyAsync"), corr))
        copies.append((t + 1_000, t + 4_000, 4 << 20, 2, 2, 1, 0, 7, corr))
        t += 4_000
        corr += 1
        calls.append((t, t + 500, api_name("cudaMemsetAsync"), corr))
        sets.append((t + 1_000, t + 2_000, 1 << 20, 0, 7, corr))
        t += 2_000
        calls.append((t, t + 10_000, api_name("cudaStreamSynchronize"), None))
        t += 10_000
        ranges.append((begin, t, "decode_step", 4242))
        t += 500
    ranges.append((outer - 100, t, "mode:eager", 4242))
    with ExportWriter(path, era, registered_nvtx=registered) as w:
        w.gpu(0, H100)
        w.kernels(kernels)
        w.memcpys(copies)
        w.memsets(sets)
        w.api(calls)
        w.nvtx(ranges)
    return path


# ------------------------------------------------------------------ the tables


@pytest.mark.parametrize("era", ERAS)
def test_every_schema_era_gives_the_same_tables_and_steps(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, era: str
) -> None:
    data = analyze(capsys, str(capture(tmp_path / f"{era}.sqlite", era, registered=era != "2021.1")))
    assert data["nsys_input"] == "sqlite" and data["kernel_grouping"] == "demangled"
    assert data["device_name"] == H100 and data["device_type"] == "cuda"
    assert [(k["name"], k["instances"], k["total_ns"], k["avg_ns"]) for k in data["kernels"]] == [
        (KERNELS[0], 6, 42_000.0, 7_000.0),
        (KERNELS[2], 6, 30_000.0, 5_000.0),
        (KERNELS[1], 6, 12_000.0, 2_000.0),
    ]
    assert [k["time_pct"] for k in data["kernels"]] == [50.0, 35.7, 14.3]
    copy = "[CUDA memcpy DtoH]" if era == "2021.1" else "[CUDA memcpy Device-to-Host]"
    assert data["memory_ops"] == [
        {"operation": copy, "kind": "dtoh", "count": 6, "total_ns": 18_000.0, "bytes": 6.0 * (4 << 20)},
        {"operation": "[CUDA memset]", "kind": "memset", "count": 6, "total_ns": 6_000.0, "bytes": 6.0 * (1 << 20)},
    ]
    api = {a["name"]: (a["calls"], a["total_ns"]) for a in data["cuda_api"]}
    assert api == {  # without nsys's version suffix (cudaLaunchKernel_v7000)
        "cudaStreamSynchronize": (6, 60_000.0),
        "cudaLaunchKernel": (18, 9_000.0),
        "cudaMemcpyAsync": (6, 3_000.0),
        "cudaMemsetAsync": (6, 3_000.0),
    }
    ranges = {r["name"]: r for r in data["ranges"]}
    assert ranges["decode_step"]["calls"] == 6 and ranges["decode_step"]["range_ns"] == 6 * 33_000
    # the kernels launched inside each range, nested ranges counting them too
    assert ranges["decode_step"]["kernel_instances"] == 18 and ranges["decode_step"]["gpu_ns"] == 84_000
    assert ranges["mode:eager"]["kernel_instances"] == 18 and ranges["decode_step"]["kernel_full"] == KERNELS[0]
    (group,) = data["steps"]
    assert (group["group"], group["count"], group["source"], group["step_range"]) == (
        "mode:eager",
        6,
        "nvtx",
        "decode_step",
    )
    # three kernels, and a copy and a set counted apart (as cuda_gpu_kern_sum and cuda_gpu_mem_time_sum keep them)
    assert (group["kernels_per_step"], group["memops_per_step"], group["memops_ms_per_step"]) == (3, 2, 0.004)
    assert group["step_ms"]["median"] == 0.033 and group["syncs_per_step"] == 1  # the step's cudaStreamSynchronize
    # the first operation at 1.001 ms, the last set ending at 1.1905 ms; 18 us busy a step, 14 us of it kernels
    assert data["trace_summary"] == {
        "span_ms": 0.1895,
        "gpu_busy_pct": 56.992,
        "kernels": 18,
        "streams": 1,
        "kernel_busy_pct": 44.327,
        "memops": 12,
    }
    assert any("by their launch" in n for n in data["trace_notes"])
    assert data["versions"]["nsys"] == {"2026.1": "2026.1.3.425", "2023.1": "2023.1.2.43", "2021.1": None}[era]


def test_the_kernel_summary_matches_nsys_stats_csv_of_the_same_kernels(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Kernels of irregular durations: instances, total, average, median, minimum,
    maximum and the sample standard deviation as `cuda_gpu_kern_sum` computes them."""
    durations = {"void a_kernel<float>(float*)": [5, 9, 9, 120, 7], "b_kernel": [4, 10], "c_kernel": [33]}
    rows, t, corr = [], 1_000, 0
    for name, durs in durations.items():
        for d in durs:
            corr += 1
            rows.append((t, t + d, name, 0, 7, corr))
            t += d + 3
    with ExportWriter(tmp_path / "k.sqlite") as w:
        w.gpu(0, H100)
        w.kernels(rows)
    csv_dir = tmp_path / "csv"
    csv_dir.mkdir()
    header = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
    total_all = sum(sum(d) for d in durations.values())
    lines = [
        f"{100 * sum(d) / total_all:.1f},{sum(d)},{len(d)},{statistics.mean(d):.1f},{statistics.median(d):.1f},"
        f"{min(d)},{max(d)},{statistics.stdev(d) if len(d) > 1 else 0.0:.1f},{name}\n"
        for name, d in sorted(durations.items(), key=lambda kv: -sum(kv[1]))
    ]
    (csv_dir / "k_cuda_gpu_kern_sum.csv").write_text(header + "".join(lines))
    from_csv = analyze(capsys, str(csv_dir))
    from_db = analyze(capsys, str(tmp_path / "k.sqlite"))
    assert from_csv["nsys_input"] == "stats" and from_db["nsys_input"] == "sqlite"
    for a, b in zip(from_csv["kernels"], from_db["kernels"], strict=True):
        assert (a["name"], a["instances"], a["total_ns"], a["time_pct"]) == (
            b["name"],
            b["instances"],
            b["total_ns"],
            b["time_pct"],
        )
        assert b["avg_ns"] == pytest.approx(a["avg_ns"], abs=0.05)  # nsys prints one decimal
    with SqliteTrace.open(tmp_path / "k.sqlite") as trace:
        from nsightlab.parse.nsys_sqlite_report import build_report

        report = build_report(trace)
    assert report.kernels is not None
    a_row = next(k for k in report.kernels if k.name.startswith("void a_kernel"))
    assert (a_row.med_ns, a_row.min_ns, a_row.max_ns) == (9.0, 5.0, 120.0)
    assert a_row.stddev_ns == pytest.approx(statistics.stdev(durations["void a_kernel<float>(float*)"]))


@pytest.mark.parametrize("capture_name", ["vernier_nsys2026.3.1_rtx5000ada", "vernier_nsys2025.3.2_thor"])
def test_real_csv_exports_and_an_export_of_the_same_data_give_the_same_figures(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, capture_name: str
) -> None:
    """The vernier captures (real `nsys stats` CSV exports, tests/data/traces): their
    cuda_gpu_trace and nvtx_pushpop_trace put into an export, then both analysed."""
    csv_dir = tmp_path / "csv"
    csv_dir.mkdir()
    files = {}
    for report in ("cuda_gpu_trace", "nvtx_pushpop_trace"):
        files[report] = Path(shutil.copy(TRACES / f"{capture_name}_{report}.csv", csv_dir))
    db = from_csv_exports(files, tmp_path / "capture.sqlite")
    from_csv = analyze(capsys, str(csv_dir))
    from_db = analyze(capsys, str(db))
    assert from_db["trace_summary"] == from_csv["trace"]
    assert from_db["steps"] == from_csv["steps"]
    assert from_db["device_name"] + " (0)" == from_csv["device"] + " (0)"
    # the kernel table: the trace's rows grouped by name
    import csv

    rows = list(csv.DictReader(files["cuda_gpu_trace"].open(encoding="utf-8")))
    kernels = [r for r in rows if not r["Name"].startswith("[CUDA")]
    by_name: dict[str, list[int]] = {}
    for r in kernels:
        by_name.setdefault(r["Name"], []).append(int(r["Duration (ns)"]))
    assert {k["name"]: (k["instances"], k["total_ns"]) for k in from_db["kernels"]} == {
        n: (len(d), float(sum(d))) for n, d in by_name.items()
    }
    copies = [r for r in rows if r["Name"].startswith("[CUDA memcpy")]
    assert sum(m["count"] for m in from_db["memory_ops"]) == len(copies)
    assert sum(m["total_ns"] for m in from_db["memory_ops"]) == sum(int(r["Duration (ns)"]) for r in copies)
    assert sum(m["bytes"] for m in from_db["memory_ops"]) == pytest.approx(
        sum(float(r["Bytes (MB)"]) * 1e6 for r in copies), abs=1
    )
    pushpop = list(csv.DictReader(files["nvtx_pushpop_trace"].open(encoding="utf-8")))
    assert sum(r["calls"] for r in from_db["ranges"]) == len(pushpop)
    # no CUDA API table in these exports: nothing to say where a kernel was launched
    assert any("no CUDA API calls in this report" in n for n in from_db["notes"])
    assert any(
        n.startswith("no kernel was launched inside the NVTX ranges (the report has no CUDA API")
        for n in from_db["notes"]
    )
    assert not any("nvtx_kern_sum" in n for n in from_db["notes"])


def test_steps_and_projections_match_the_four_trace_exports(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A decode run's four trace exports (tests/tracebuild.py: launches with correlation
    ids, nested ranges, graph replays whose kernels share the replay's correlation id)
    against an export of the same calls and operations, whose projections nsightlab
    computes itself."""
    csv_dir = tmp_path / "csv"
    csv_dir.mkdir()
    reports = ["cuda_gpu_trace", "nvtx_pushpop_trace", "nvtx_gpu_proj_trace", "cuda_api_trace"]
    paths = decode_exports(_two_modes(), str(csv_dir / "run"), reports)
    files = dict(zip(reports, paths, strict=True))
    db = from_csv_exports({k: v for k, v in files.items() if k != "nvtx_gpu_proj_trace"}, tmp_path / "run.sqlite")
    from_csv = analyze(capsys, str(csv_dir))
    from_db = analyze(capsys, str(db))
    assert from_db["steps"] == from_csv["steps"] and from_db["trace_summary"] == from_csv["trace"]
    assert [g["group"] for g in from_db["steps"]] == [
        "mode:eager > batch:1",
        "mode:eager > batch:2",
        "mode:graphs > batch:1",
        "mode:graphs > batch:2",
    ]
    expected = {
        (p.raw_name, p.orig_start_ns): (p.proj_start_ns, p.proj_end_ns, p.gpu_ops)
        for p in read_nvtx_gpu_proj(files["nvtx_gpu_proj_trace"])
    }
    with SqliteTrace.open(db) as trace:
        got = {(p.raw_name, p.orig_start_ns): (p.proj_start_ns, p.proj_end_ns, p.gpu_ops) for p in trace.projections()}
        calls = list(trace.api_calls())
        launch = trace.gpu_columns().launch
    assert got == expected
    # the launches are joined to their operations already: of the calls, only the graph
    # launches are read again (no cudaLaunchKernel: a million of them cost 2 s and 100 MiB)
    assert launch is not None and -1 not in launch
    # named as nsys's reports name it: the five-digit version stays (`cudaGraphLaunch_v10000`)
    assert {c.name for c in calls} == {"cudaGraphLaunch_v10000"}


def test_a_decode_runs_json_beside_an_export_makes_a_decode_result(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = json.loads(RECORDED.read_text())
    paths = decode_exports(doc, str(tmp_path / "t"), ["cuda_gpu_trace", "nvtx_pushpop_trace", "cuda_api_trace"])
    folder = tmp_path / "run"
    folder.mkdir()
    from_csv_exports(
        dict(zip(["cuda_gpu_trace", "nvtx_pushpop_trace", "cuda_api_trace"], paths, strict=True)), folder / "run.sqlite"
    )
    shutil.copy(RECORDED, folder / "decode.json")
    data = analyze(capsys, str(folder))
    assert data["kind"] == "decode" and {m["steps"]["source"] for m in data["modes"]} == {"nvtx"}


def test_registered_strings_named_domains_and_unclosed_ranges(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "nvtx.sqlite"
    with ExportWriter(path, registered_nvtx=True) as w:
        w.gpu(0, H100)
        w.kernels([(2_000, 3_000, "k", 0, 7, 1)])
        w.api([(1_500, 1_600, api_name("cudaLaunchKernel"), 1)])
        w.domain(3, "mylib")
        w.nvtx([(1_000, 5_000, "forward", 4242, 59, 3), (1_100, None, "never ends", 4242)])
    data = analyze(capsys, str(path))
    assert [(r["name"], r["kernel_instances"]) for r in data["ranges"]] == [("mylib:forward", 1)]
    assert any("1 NVTX range(s) never ended" in n for n in data["notes"])


def test_two_processes_reusing_correlation_ids_are_told_apart(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """CUPTI numbers correlation ids per process: a kernel's launch is the call with its
    id in its own process (here process 2's kernel ran when process 1's step was open)."""
    path = tmp_path / "two.sqlite"
    with ExportWriter(path) as w:
        w.gpu(0, H100, pids=(1, 2))
        w.kernels([(2_000, 3_000, "one", 0, 7, 5, 1), (2_500, 3_500, "two", 0, 8, 5, 2)])
        w.api(
            [
                (1_000, 1_100, api_name("cudaLaunchKernel"), 5, 1, 1),
                (9_000, 9_100, api_name("cudaLaunchKernel"), 5, 2, 2),
            ]
        )
        w.nvtx([(900, 4_000, "decode_step", 1, 59, 0, 1), (8_000, 10_000, "decode_step", 2, 59, 0, 2)])
    data = analyze(capsys, str(path))
    (steps,) = data["steps"]
    assert steps["count"] == 2 and steps["kernels_per_step"] == 1
    ranges = {r["name"]: r for r in data["ranges"]}
    assert ranges["decode_step"]["kernel_instances"] == 2


def test_the_gpu_is_named_through_the_cuda_device_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """nsys 2025+: a process's CUDA device 0 is the report's GPU 3 (CUDA_VISIBLE_DEVICES)."""
    path = tmp_path / "gpu3.sqlite"
    with ExportWriter(path) as w:
        w.gpu(0, "NVIDIA A100-SXM4-80GB", pids=(99,), cuda_id=5)
        w.gpu(3, H100, cuda_id=0)
        w.kernels([(2_000, 3_000, "k", 0, 7, 1)])
    assert analyze(capsys, str(path))["device_name"] == H100


def test_step_range_and_a_folder_holding_an_export(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    capture(tmp_path / "report.sqlite")
    data = analyze(capsys, str(tmp_path), "--step-range", "mode:eager")
    assert data["steps"][0]["count"] == 1 and data["steps"][0]["step_range"] == "mode:eager"
    r = run_cli(capsys, "analyze", str(tmp_path / "report.sqlite"), "--step-range", "prefill")
    assert r.code == 2 and "no range named 'prefill'" in r.err and "decode_step (6)" in r.err
    capture(tmp_path / "other.sqlite")
    r = run_cli(capsys, "analyze", str(tmp_path))
    assert r.code == 2 and "holds 2 nsys SQLite exports" in r.err and r.err.count("\n") == 1
    assert r.err.strip().endswith(f"Give one of them: `nsightlab analyze {tmp_path / 'other.sqlite'}`.")


def test_an_export_older_than_the_report_beside_it_is_said(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = capture(tmp_path / "run.sqlite")
    rep = tmp_path / "run.nsys-rep"
    rep.write_text("a report\n")
    os.utime(db, (time.time() - 3600, time.time() - 3600))
    notes = analyze(capsys, str(db))["notes"]
    assert any(
        n.startswith("run.sqlite is older than run.nsys-rep beside it")
        and f"nsys export --type sqlite --output {db} --force-overwrite true {rep}" in n
        for n in notes
    )


# ------------------------------------------------------------------ a .nsys-rep


@pytest.fixture
def nsys_standin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("PATH", f"{HERE / 'standins'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(
        "NSIGHTLAB_TEST_NSYS_FIXTURE", str(HERE / "fixtures" / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv")
    )
    monkeypatch.delenv("NSIGHTLAB_TEST_NSYS", raising=False)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return scratch


def test_a_report_is_exported_to_sqlite_in_a_temporary_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nsys_standin: Path
) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    rep = folder / "capture.nsys-rep"
    rep.write_text("nsys test stand-in: not a real report\n")
    shutil.copy(HERE / "data" / "lesson1_cpu_float32_epyc-2c-l3-32mib.json", folder / "lesson1.json")
    before = listing(folder)
    data = analyze(capsys, str(rep))
    assert data["nsys_input"] == "sqlite" and len(data["kernels"]) == 113
    assert data["notes"][0] == f"exported from {rep} with this machine's nsys"
    assert {r["name"] for r in data["ranges"]} == {"memory_bound_scale", "compute_bound_gemm"}
    assert all(r["rates"] is not None for r in data["ranges"])  # lesson1's JSON beside it
    assert listing(folder) == before  # nothing beside the report
    assert list(nsys_standin.iterdir()) == []  # the temporary export is gone


def test_an_nsys_that_cannot_export_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nsys_standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSIGHTLAB_TEST_NSYS", "noexport")
    rep = tmp_path / "capture.nsys-rep"
    rep.write_text("x\n")
    r = run_cli(capsys, "analyze", str(rep))
    assert r.code == 2 and r.err.count("\n") == 1
    assert "nsys export could not export" in r.err and "Unknown command: export" in r.err
    assert list(nsys_standin.iterdir()) == []


# ------------------------------------------------------------------ read only


def _beside_unchanged(capsys: pytest.CaptureFixture[str], path: Path, code: int) -> str:
    before = listing(path.parent)
    r = run_cli(capsys, "analyze", str(path))
    assert r.code == code, r
    assert listing(path.parent) == before  # no -journal, -wal or -shm, and the file untouched
    return r.out if code == 0 else r.err


def test_a_read_only_file_in_a_read_only_folder_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    db = capture(folder / "report.sqlite")
    db.chmod(0o444)
    folder.chmod(0o555)
    try:
        out = _beside_unchanged(capsys, db, 0)
    finally:
        folder.chmod(0o755)
    assert "gemv<float>" in out


@contextmanager
def writer_holding_a_lock(db: Path, *, write: bool) -> Iterator[None]:
    """Another process with an exclusive lock on `db`: idle (no write begun) or halfway
    through a write (its -journal beside the file)."""
    code = (
        "import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA cache_size=1')\n"
        "c.execute('BEGIN EXCLUSIVE')\n"
        + ("c.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 1')\n" if write else "")
        + "print('locked', flush=True)\n"
        "time.sleep(120)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield
    finally:
        proc.kill()
        proc.wait()


def test_a_file_locked_by_a_writer_that_has_not_written_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = capture(tmp_path / "report.sqlite")
    with writer_holding_a_lock(db, write=False):
        out = _beside_unchanged(capsys, db, 0)
    assert "note: report.sqlite is locked by another process: read as it is on disk" in out
    assert "gemv<float>" in out


def test_a_file_halfway_through_a_write_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = capture(tmp_path / "report.sqlite", steps=400)
    with writer_holding_a_lock(db, write=True):
        assert (tmp_path / "report.sqlite-journal").exists()
        err = _beside_unchanged(capsys, db, 2)
        assert "another process is writing this file" in err and err.count("\n") == 1
    # the writer died: its journal is hot, the file may be half-written
    err = _beside_unchanged(capsys, db, 2)
    assert "a write to this file did not finish (report.sqlite-journal is beside it)" in err
    assert err.strip().endswith(
        f"`nsys export --type sqlite --output {db} --force-overwrite true {tmp_path}/report.nsys-rep`."
    )


def test_a_wal_database_is_read_without_creating_its_side_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = capture(tmp_path / "report.sqlite")
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    conn.close()
    assert not (tmp_path / "report.sqlite-wal").exists()
    assert "gemv<float>" in _beside_unchanged(capsys, db, 0)
    wal = tmp_path / "report.sqlite-wal"
    wal.write_bytes(b"\0" * 64)  # a log with changes the file lacks
    err = _beside_unchanged(capsys, db, 2)
    assert "report.sqlite-wal beside it holds changes the file does not have" in err


# ------------------------------------------------------------------ bad input


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncated":
        path.write_bytes(bytes(data[: len(data) // 2]))
    elif how == "corrupted":
        for offset in range(4096 * 2, len(data), 4096):  # every page but the first two
            data[offset : offset + 64] = b"\xa5" * 64
        path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("truncated", "the database is damaged or cut short"),
        ("corrupted", "the database is damaged or cut short"),
        ("text", "not an SQLite database: an Nsight Systems export (.sqlite) starts with SQLite's header"),
        ("empty", "an empty file"),
        ("other-sqlite", "an SQLite database, but not an Nsight Systems export"),
        ("cpu-only", "holds no CUDA and no NVTX data: a capture of CPU activity only"),
        ("schema-4", "unknown export schema version '4.0.1'"),
        ("real-start", "CUPTI_ACTIVITY_KIND_KERNEL.start of row 3 is not a whole number in range (real)"),
        ("text-launch", "CUPTI_ACTIVITY_KIND_RUNTIME.start of row 2 is not a whole number in range (text)"),
        ("real-sync", "CUPTI_ACTIVITY_KIND_RUNTIME.end of row 6 is not a whole number in range (real)"),
        ("huge-copy", "CUPTI_ACTIVITY_KIND_MEMCPY.bytes of row 2 is not a whole number in range (real)"),
        ("infinite-end", "CUPTI_ACTIVITY_KIND_KERNEL.end of row 1 is not a whole number in range (real)"),
        ("fifo", "not a regular file"),
    ],
)
def test_bad_input_is_one_line_and_nothing_is_written_beside_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, setup: str, message: str
) -> None:
    path = tmp_path / "report.sqlite"
    if setup in ("truncated", "corrupted"):
        capture(path, steps=200)
        _damage(path, setup)
    elif setup == "text":
        path.write_text("Time (%),Total Time (ns)\n")
    elif setup == "empty":
        path.write_bytes(b"")
    elif setup == "other-sqlite":
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE notes (id INTEGER, text TEXT)")
        conn.commit()
        conn.close()
    elif setup == "cpu-only":
        with ExportWriter(path) as w:
            w.execute("CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER, nameId INTEGER NOT NULL)")
            w.execute("INSERT INTO OSRT_API VALUES (1, 2, ?)", (w.string("read"),))
    elif setup == "schema-4":
        with ExportWriter(path) as w:
            w.execute("UPDATE META_DATA_EXPORT SET value = '4.0.1' WHERE name = 'EXPORT_SCHEMA_VERSION'")
    elif setup == "fifo":
        os.mkfifo(path)  # opening it would block: it must not be opened
    else:
        capture(path)
        with sqlite3.connect(path) as conn:
            if setup == "real-start":
                conn.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 1e6 + 0.5 WHERE rowid = 3")
            elif setup == "text-launch":
                conn.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 'soon' WHERE rowid = 2")
            elif setup == "real-sync":  # a call that launched nothing: read only by the API summary
                conn.execute('UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET "end" = 9e999 WHERE rowid = 6')
            elif setup == "huge-copy":
                conn.execute("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = 1e300 WHERE rowid = 2")
            else:
                conn.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = 9e999 WHERE rowid = 1')
        conn.close()
    before = sorted(p.name for p in tmp_path.iterdir())
    r = run_cli(capsys, "analyze", str(path))
    assert r.code == 2, r
    assert r.err.count("\n") == 1 and message in r.err and str(path) in r.err, r.err
    assert "Traceback" not in r.err and r.out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_api_names_are_those_nsys_prints(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """nsys's `cuda_api_sum` drops a last `_v` and four digits (the CUDA version a runtime
    call came with) and nothing else: a driver call's own `_v2` names another function
    (`cuGetProcAddress_v2` beside `cuGetProcAddress`, as in real CUDA 12 captures), and a
    five-digit version stays, as nsys prints `cudaLaunchKernelExC_v11060`."""
    stored = [
        ("cudaLaunchKernel_v7000", 3),
        ("cudaLaunchKernelExC_v11060", 2),
        ("cudaGetDeviceProperties_v2_v12000", 1),
        ("cuGetProcAddress", 4),
        ("cuGetProcAddress_v2", 5),
        ("cuMemAlloc_v2", 1),
    ]
    rows: list[tuple[object, ...]] = []
    t = 1_000
    for name, calls in stored:
        for _ in range(calls):
            rows.append((t, t + 100, name, len(rows) + 1))
            t += 1_000
    with ExportWriter(tmp_path / "api.sqlite") as w:
        w.gpu(0, H100)
        w.kernels([(500, 900, KERNELS[0], 0, 7, 10_000)])
        w.api(rows)
    data = analyze(capsys, str(tmp_path / "api.sqlite"))
    assert {a["name"]: a["calls"] for a in data["cuda_api"]} == {
        "cudaLaunchKernel": 3,
        "cudaLaunchKernelExC_v11060": 2,
        "cudaGetDeviceProperties_v2_v12000": 1,
        "cuGetProcAddress": 4,
        "cuGetProcAddress_v2": 5,
        "cuMemAlloc_v2": 1,
    }


def test_launches_without_kernel_records_are_said_and_the_gpu_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """As real WSL 2 captures come: kernel launches in the CUDA API table, no kernel table;
    the GPU is named from the report's own GPU table, and no empty kernel table is drawn."""
    path = tmp_path / "no-kernels.sqlite"
    with ExportWriter(path) as w:
        w.gpu(0, "NVIDIA GeForce RTX 3060 Laptop GPU")
        w.api([(1_000 * i, 1_000 * i + 300, api_name("cudaLaunchKernel"), i) for i in range(1, 193)])
    data = analyze(capsys, str(path))
    assert data["kernels"] == [] and data["device_name"] == "NVIDIA GeForce RTX 3060 Laptop GPU"
    (said,) = [n for n in data["notes"] if "kernel launches" in n]
    assert said.startswith("the CUDA API table holds 192 kernel launches (cudaLaunchKernel)")
    assert "no kernel records" in said
    r = run_cli(capsys, "analyze", str(path))
    assert r.code == 0 and "GPU kernels: none in this profile" in r.out and "Total (ns)" not in r.out
    assert "RTX 3060 Laptop GPU" in r.out.splitlines()[0]


def test_the_range_table_names_its_top_kernel_beside_all_its_launches(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Each decode_step launches three kernels: the row names the longest-running one, and
    its launches and kernel time are all three kernels' (18 launches in 6 steps)."""
    r = run_cli(capsys, "analyze", str(capture(tmp_path / "report.sqlite")))
    assert r.code == 0
    header = next(line for line in r.out.splitlines() if line.startswith("Range"))
    assert header.split()[4:7] == ["Top", "kernel", "Launches"]
    row = next(line for line in r.out.splitlines() if line.startswith("decode_step"))
    assert row.split() == ["decode_step", "6", "198", "gemv<float>", "18", "84.0"]


def test_a_memory_operation_faster_than_any_memory_is_said(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """As a real nsys 2021.2 export holds one: a memset of 4 GB in 1.12 us (3,571 TB/s). The
    export's figures are shown as recorded, with a note that they measure nothing."""
    path = tmp_path / "report.sqlite"
    with ExportWriter(path) as w:
        w.gpu(0, "Quadro RTX 6000")
        w.kernels([(500, 900, KERNELS[0], 0, 7, 1)])
        w.memsets([(1_000, 2_120, 4_000_000_000, 0, 7, 2), (3_000, 4_000, 1 << 20, 0, 7, 3)])
        w.memcpys([(5_000, 6_000, 1 << 20, 1, 0, 2, 0, 7, 4)])
    data = analyze(capsys, str(path))
    (said,) = [n for n in data["notes"] if "more bytes than any memory moves" in n]
    assert said.startswith("1 memory operation(s)") and "3.73 GiB in 1.12 us, 3,571 TB/s" in said
    assert [m["bytes"] for m in data["memory_ops"] if m["kind"] == "memset"] == [4_000_000_000 + (1 << 20)]
    plain = tmp_path / "plain.sqlite"
    with ExportWriter(plain) as w:
        w.memsets([(3_000, 4_000, 1 << 20, 0, 7, 3)])
    assert not any("more bytes" in n for n in analyze(capsys, str(plain))["notes"])


def test_an_export_without_meta_data_has_the_version_of_the_nsys_that_captured_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Exports before 2023 record no export meta-data; the nsys that captured them is named
    by its install folder (TARGET_INFO_SYSTEM_ENV's TargetInstallDir, as a CUDA 11.8 install
    names it)."""
    path = capture(tmp_path / "report.sqlite", "2021.1")
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT, name TEXT, value TEXT)"
        )
        conn.execute(
            "INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES "
            "(0, 'host', 'TargetInstallDir', '/usr/local/cuda-11.8/nsight-systems-2022.4.2/target-linux-x64')"
        )
    conn.close()
    assert analyze(capsys, str(path))["versions"] == {"nsys": "2022.4.2"}


def test_an_export_of_graphs_being_captured_has_no_steps(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The same capture of graphs as a Kineto trace shows it (test_engine_steps.py), as nsys
    records it: 546 kernel launches, of which 2 ran (the others went into the graph)."""
    path = tmp_path / "capture.sqlite"
    with ExportWriter(path) as w:
        w.gpu(0, H100)
        w.api([(10 + 60 * i, 15 + 60 * i, api_name("cudaLaunchKernel"), i) for i in range(1, 547)])
        w.kernels([(100, 105, "fill_kernel", 0, 7, 1), (200, 206, "fill_kernel", 0, 7, 2)])
        w.nvtx([(0, 40_000, "capture_32_DECODE", TID)])
    data = analyze(capsys, str(path))
    assert data["steps"] == []
    assert any(n.startswith("at least 544 of the trace's 546 launch calls put no work") for n in data["trace_notes"])


def test_a_memset_alone_names_its_gpu(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "memset.sqlite"
    with ExportWriter(path) as w:
        w.gpu(0, "NVIDIA GeForce RTX 4060")
        w.gpu(1, H100)
        w.memsets([(2_000, 3_000, 1 << 20, 0, 7, 1)])
    data = analyze(capsys, str(path))
    assert data["kernels"] == [] and data["device_name"] == "NVIDIA GeForce RTX 4060"


def test_an_export_of_cpu_activity_alone_is_said_to_be_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A real nsys 2021.3 export of a capture without CUDA or NVTX has its strings and the
    target's tables, and no export meta-data: it is an export, of CPU activity only."""
    path = tmp_path / "cpu.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT)")
        conn.execute("CREATE TABLE TARGET_INFO_SYSTEM_ENV (name TEXT, value TEXT)")
    conn.close()
    r = run_cli(capsys, "analyze", str(path))
    assert r.code == 2 and "holds no CUDA and no NVTX data: a capture of CPU activity only" in r.err, r.err
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE TARGET_INFO_GPU")
        conn.execute("DROP TABLE TARGET_INFO_SYSTEM_ENV")
    conn.close()
    r = run_cli(capsys, "analyze", str(path))
    assert r.code == 2 and "not an Nsight Systems export (a StringIds table but no CUDA" in r.err, r.err


def test_a_report_without_cuda_says_so_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "nvtx-only.sqlite"
    with ExportWriter(path) as w:
        w.nvtx([(1_000, 5_000, "load", 4242)])
    notes = analyze(capsys, str(path))["notes"]
    assert sum("CUDA" in n for n in notes) == 1, notes


def test_dangling_string_ids_are_named_and_said(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = capture(tmp_path / "report.sqlite")
    with sqlite3.connect(db) as conn:
        gone = conn.execute("SELECT id FROM StringIds WHERE value = ?", (KERNELS[0],)).fetchone()[0]
        conn.execute("DELETE FROM StringIds WHERE id = ?", (gone,))
    conn.close()
    data = analyze(capsys, str(db))
    assert f"<string id {gone}>" in {k["name"] for k in data["kernels"]}
    assert any(f"1 name(s) point to string ids missing from StringIds ({gone})" in n for n in data["notes"])


def test_a_report_with_nvtx_and_no_cuda_shows_its_ranges(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "nvtx-only.sqlite"
    with ExportWriter(path) as w:
        w.nvtx([(1_000, 5_000, "load", 4242), (6_000, 9_000, "load", 4242)])
    data = analyze(capsys, str(path))
    assert data["kernels"] == [] and data["steps"] is None and data["device_type"] is None
    assert [(r["name"], r["calls"], r["range_ns"]) for r in data["ranges"]] == [("load", 2, 7_000.0)]
    assert any(n.startswith("no CUDA in this report") for n in data["notes"])
    r = run_cli(capsys, "analyze", str(path), "--weights-gb", "16")
    assert r.code == 2 and "holds no GPU operation" in r.err


def test_sql_in_the_file_is_never_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A view in place of the kernel table (here one that never ends) and a generated
    column are the file's own SQL: they are not read."""
    path = tmp_path / "report.sqlite"
    with ExportWriter(path) as w:
        w.kernels([(2_000, 3_000, "k", 0, 7, 1)])
        w.execute(
            "CREATE VIEW CUPTI_ACTIVITY_KIND_MEMCPY AS WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) "
            "SELECT x AS start, x AS end, 0 AS deviceId, 0 AS streamId, x AS correlationId, 0 AS bytes, 1 AS copyKind "
            "FROM n"
        )
        w.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, bytes INTEGER, "
            "deviceId INTEGER AS (length(zeroblob(1000000000))))"
        )
    data = analyze(capsys, str(path))
    assert [k["name"] for k in data["kernels"]] == ["k"] and data["memory_ops"] == []
