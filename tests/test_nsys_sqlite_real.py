"""`analyze` of two real nsys SQLite exports (tests/data/nsys_sqlite/SOURCES.md), against
what another reader made of the same report and against plain SQL over the file.

- CloverLeaf on an A100-SXM4-80GB, exported by nsys 2024.5.1 (schema 3.13.2): every kernel,
  copy and CUDA call as pipit's own SQLite reader listed them (its golden CSVs), and the
  GPU's busy time from those intervals.
- An MPI saxpy on an A100-SXM4-40GB, exported by nsys 2022.2.1 (schema 2.9.1): NVTX ranges in
  the `MPI` domain, and a CUDA API table that holds each call twice, once as the call and
  once as the backtrace nsys recorded for it, with the same correlation id. Each kernel is
  counted once, and each call.

The exports are kept without the environment nsys recorded (tests/nsys_sqlite_redact.py);
the first test checks that none is left."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import shutil
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from nsys_sqlite_build import ExportWriter
from nsys_sqlite_redact import REMOVED, environment_values, redact

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "nsys_sqlite"
CLOVERLEAF = "pipit_cloverleaf_nsys2024.5.1_a100-80gb.sqlite"
SAXPY = "pipit_saxpy-mpi_nsys2022.2.1_a100-40gb.sqlite"


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two exports, unpacked once, read-only, each alone in its folder."""
    out = {}
    for name in (CLOVERLEAF, SAXPY):
        folder = tmp_path_factory.mktemp(name.split("_")[1])
        path = folder / name
        with gzip.open(DATA / f"{name}.gz") as src, path.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        path.chmod(0o444)
        out[name] = path
    return out


def analyze(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    before = sorted(p.name for p in path.parent.iterdir())
    r = run_cli(capsys, "analyze", str(path), "--json")
    assert r.code == 0, r
    assert sorted(p.name for p in path.parent.iterdir()) == before  # nothing written beside it
    data: dict[str, Any] = json.loads(r.out)
    return data


def sql(path: Path, query: str) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    db.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        return db.execute(query).fetchall()
    finally:
        db.close()


def pipit_events(name: str) -> list[dict[str, str]]:
    """The `Enter` rows of one of pipit's golden CSVs, each with its `Leave` time."""
    with gzip.open(DATA / name, "rt", newline="") as f:
        return [row for row in csv.DictReader(io.StringIO(f.read())) if row["Event Type"] == "Enter"]


def _span(row: dict[str, str]) -> tuple[int, int]:
    return int(row["Timestamp (ns)"]), int(row["_matching_timestamp"])


def test_the_kept_exports_hold_no_environment(exports: dict[str, Path]) -> None:
    for path in exports.values():
        assert environment_values(path) == []
        raw = path.read_bytes()
        for secret in (b"PMI_SHARED_SECRET", b"SSH_AUTH_SOCK", b"SLURM_JOB_USER="):
            assert secret not in raw, (path.name, secret)
        assert REMOVED.encode() in raw  # the values were there, and were removed


def test_the_redaction_keeps_every_name_the_analysis_reads(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "with_env" / "r.sqlite"
    source.parent.mkdir()
    w = ExportWriter(source, "2026.1")
    w.kernels([(1_000, 3_000, "void k<A=1>(int)", 0, 7, 1)])
    w.api([(900, 950, "cudaLaunchKernel", 1)])
    secret = "HOME=/u\x00PMI_SHARED_SECRET=123\x00PATH=/bin\x00USER=me"
    w.string(secret)
    w.close()
    out = tmp_path / "kept" / "r.sqlite"
    out.parent.mkdir()
    assert redact(source, out) == 1
    assert environment_values(out) == [] and environment_values(source) != []
    assert b"PMI_SHARED_SECRET" not in out.read_bytes()
    assert analyze(capsys, out)["kernels"] == analyze(capsys, source)["kernels"]


def test_cloverleaf_matches_pipits_reading_of_the_same_report(
    capsys: pytest.CaptureFixture[str], exports: dict[str, Path]
) -> None:
    path = exports[CLOVERLEAF]
    data = analyze(capsys, path)
    assert data["device_name"] == "NVIDIA A100-SXM4-80GB"
    assert data["versions"] == {"nsys": "2024.5.1.113"}
    assert data["nsys_input"] == "sqlite"

    gpu = pipit_events("pipit_cloverleaf_gpu_trace.csv.gz")
    # pipit names a kernel by nsys's short name: group ours the same way, through the export
    short = dict(
        sql(
            path,
            "SELECT DISTINCT d.value, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds d ON d.id = k.demangledName JOIN StringIds s ON s.id = k.shortName",
        )
    )
    theirs: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in gpu:
        if row["type"] == "kernel":
            start, end = _span(row)
            theirs[row["Name"]][0] += 1
            theirs[row["Name"]][1] += end - start
    ours: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for k in data["kernels"]:
        ours[short[k["name"]]][0] += k["instances"]
        ours[short[k["name"]]][1] += int(k["total_ns"])
    assert ours == theirs and sum(n for n, _ in ours.values()) == 1312

    copies: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in gpu:
        if row["type"].startswith("CUDA_MEMCPY_KIND_"):
            start, end = _span(row)
            kind = row["type"].removeprefix("CUDA_MEMCPY_KIND_").lower()
            copies[kind][0] += 1
            copies[kind][1] += end - start
    assert {m["kind"]: [m["count"], int(m["total_ns"])] for m in data["memory_ops"]} == copies

    calls: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in pipit_events("pipit_cloverleaf_cuda_api_trace.csv.gz"):
        start, end = _span(row)
        name = re.sub(r"_v\d{4}$", "", row["Name"])
        calls[name][0] += 1
        calls[name][1] += end - start
    assert {c["name"]: [c["calls"], int(c["total_ns"])] for c in data["cuda_api"]} == calls

    # the whole trace: its span and the union of pipit's intervals
    spans = sorted(_span(row) for row in gpu)
    busy, reach = 0, spans[0][0]
    for start, end in spans:
        busy += max(0, end - max(start, reach))
        reach = max(reach, end)
    summary = data["trace_summary"]
    assert summary["kernels"] == 1312 and summary["memops"] == 279 and summary["streams"] == 1
    assert summary["span_ms"] == pytest.approx((reach - spans[0][0]) / 1e6, abs=1e-6)
    assert summary["gpu_busy_pct"] == pytest.approx(100 * busy / (reach - spans[0][0]), abs=1e-3)


def test_an_nsys_2022_export_counts_each_launch_once_beside_its_backtrace(
    capsys: pytest.CaptureFixture[str], exports: dict[str, Path]
) -> None:
    path = exports[SAXPY]
    rows = sql(path, "SELECT eventClass, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1 ORDER BY 1")
    assert rows == [(0, 56), (1, 1), (67, 38)]  # 57 calls, and the backtraces of 38 of them

    data = analyze(capsys, path)
    assert data["device_name"] == "NVIDIA A100-SXM4-40GB"
    assert data["versions"] == {"nsys": "2022.2.1.31"}
    ((count, total),) = sql(path, 'SELECT count(*), sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL')
    assert [(k["instances"], k["total_ns"]) for k in data["kernels"]] == [(count, total)] == [(5, 88_573_480)]
    assert data["trace_summary"]["kernels"] == 5 and data["trace_summary"]["memops"] == 15

    calls = sql(
        path,
        "SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
        "WHERE r.eventClass IN (0, 1) GROUP BY 1",
    )
    assert {c["name"]: c["calls"] for c in data["cuda_api"]} == {re.sub(r"_v\d{4}$", "", n): c for n, c in calls}
    assert {c["name"]: c["calls"] for c in data["cuda_api"]}["cudaLaunchKernel"] == 5

    # NVTX ranges, named `domain:text` as nsys's reports name them
    expected = dict(
        sql(
            path,
            "SELECT coalesce(d.text || ':', '') || coalesce(e.text, s.value), count(*) FROM NVTX_EVENTS e "
            "LEFT JOIN StringIds s ON s.id = e.textId "
            "LEFT JOIN NVTX_EVENTS d ON d.eventType = 75 AND d.domainId = e.domainId AND e.domainId != 0 "
            "WHERE e.eventType IN (59, 60) GROUP BY 1",
        )
    )
    ranges = {r["name"]: r for r in data["ranges"]}
    assert {name: r["calls"] for name, r in ranges.items()} == expected
    assert expected["MPI:MPI_Send"] == 10 and expected["saxpy"] == 5
    # each saxpy range launches one kernel: the projection counts five, not ten
    assert ranges["saxpy"]["kernel_instances"] == 5 and ranges["saxpy"]["gpu_ns"] == 88_573_480
    # no step ranges: steps from the repeating sequence, each followed by ~177 ms with nothing
    # queued while the host does MPI; that is the host's time, not the launches'
    (group,) = data["steps"]
    assert (group["source"], group["count"], group["verdict"]["kind"]) == ("repeating-sequence", 5, "host-bound")
    assert "between steps" in group["verdict"]["next_step"] and "CUDA graph" not in group["verdict"]["next_step"]


def test_the_tables_of_both_exports(capsys: pytest.CaptureFixture[str], exports: dict[str, Path]) -> None:
    r = run_cli(capsys, "analyze", str(exports[CLOVERLEAF]))
    assert r.code == 0, r
    assert "NVIDIA A100-SXM4-80GB" in r.out and "1,312 kernels" in r.out
    # the missing NVTX table is one note, with how to add ranges
    assert [n for n in r.out.splitlines() if "NVTX" in n and n.startswith("note:")] == [
        "note: no NVTX in this report (it has no NVTX_EVENTS table), so no per-range times or rates: wrap the code "
        'to measure in an NVTX range, `with torch.cuda.nvtx.range("step"):` (or `torch.cuda.nvtx.range_push("step")` '
        '... `torch.cuda.nvtx.range_pop()`; from C or C++, `nvtxRangePushA("step")` ... `nvtxRangePop()`), and trace '
        "it with `-t cuda,nvtx`"
    ]
    r = run_cli(capsys, "analyze", str(exports[SAXPY]))
    assert r.code == 0, r
    assert "MPI:MPI_Send" in r.out and "5 kernels and 15 memory copies" in r.out
