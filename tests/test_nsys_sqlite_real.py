"""`analyze` of five real nsys SQLite exports (tests/data/nsys_sqlite/SOURCES.md), against
what another reader made of the same report and against plain SQL over the file.

- CloverLeaf on an A100-SXM4-80GB, exported by nsys 2024.5.1 (schema 3.13.2): every kernel,
  copy and CUDA call as pipit's own SQLite reader listed them (its golden CSVs), and the
  GPU's busy time from those intervals.
- An MPI saxpy on an A100-SXM4-40GB, exported by nsys 2022.2.1 (schema 2.9.1): NVTX ranges in
  the `MPI` domain, and a CUDA API table that holds each call twice, once as the call and
  once as the backtrace nsys recorded for it, with the same correlation id. Each kernel is
  counted once, and each call.
- A GPU database's hash-join query (Mordred) on a Quadro RTX 6000, nsys 2021.2.1 (no export
  meta-data table): its GPU idles for seconds while the host works, and it records a 4 GB
  memset in 1.12 us.
- nvFuser's cross-entropy benchmark on an H200, nsys 2025.1.1 (schema 3.17.1): 13,513 NVTX
  ranges on nine threads, and kernels launched through the driver API inside them.
- A Julia program (JACC.jl) on a two-A100 box, nsys 2026.2.1 (schema 3.25.0): CUDA was asked
  for and nothing of it recorded.

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
MORDRED = "mordred_gpudb-testqo_nsys2021.2.1_quadro-rtx-6000.sqlite"
FUSER = "nvfuser_cross-entropy-bench_nsys2025.1.1_h200.sqlite"
JACC = "jacc-jl_cg_nsys2026.2.1_a100-80gb-pcie.sqlite"
KERNEL, MEMCPY, MEMSET = "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"
# CUPTI's CUpti_ActivityMemcpyKind, as the 2025 export's own ENUM_CUDA_MEMCPY_OPER names them
COPY_KINDS = {1: "htod", 2: "dtoh", 8: "dtod"}


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The five exports, unpacked once, read-only, each alone in its folder."""
    out = {}
    for name in (CLOVERLEAF, SAXPY, MORDRED, FUSER, JACC):
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


def text_values(path: Path) -> list[tuple[str, str, bytes]]:
    """(table, column, value) of every text or blob cell of every table of the export."""
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    db.text_factory = bytes
    try:
        out: list[tuple[str, str, bytes]] = []
        tables = [t.decode() for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for (column,) in db.execute("SELECT name FROM pragma_table_info(?)", (table,)):
                column = column.decode()
                cells = db.execute(f'SELECT "{column}" FROM "{table}" WHERE typeof("{column}") IN (\'text\', \'blob\')')
                out.extend((table, column, value) for (value,) in cells)
        return out
    finally:
        db.close()


def test_the_kept_exports_hold_no_environment(exports: dict[str, Path]) -> None:
    for path in exports.values():
        assert environment_values(path) == []
        raw = path.read_bytes()
        for secret in (b"PMI_SHARED_SECRET", b"SSH_AUTH_SOCK", b"SLURM_JOB_USER=", b"NV_TPS_LAUNCH_TOKEN"):
            assert secret not in raw, (path.name, secret)
        for marker in (b"TOKEN", b"SECRET", b"KEY=", b"PASSWORD", b"AKIA", b"ghp_", b"sk-"):
            assert marker not in raw, (path.name, marker)
        # `hf_` only as the names of nvFuser's benchmark variations (`variation='hf_phi3'`)
        assert set(re.findall(rb"hf_\w+", raw)) <= {b"hf_phi3", b"hf_qwen2", b"hf_mistral_nemo"}, path.name
        assert REMOVED.encode() in raw  # the values were there, and were removed
        # not one `NAME=` of an environment left in any cell: the tool removes a block of
        # three or more, this looks for one
        assignment = re.compile(rb"(?:^|[\x00;\n ])[A-Z_][A-Z0-9_]*=")
        assert [(t, c) for t, c, v in text_values(path) if assignment.search(v)] == [], path.name


def test_what_was_removed_from_the_new_exports(exports: dict[str, Path]) -> None:
    """The values SOURCES.md says were removed, and where they were: Mordred's environment
    blocks in StringIds only (nsys 2021 has no capture meta-data table); nvFuser's and
    JACC's in META_DATA_CAPTURE's ENVIRONMENT_VARIABLE rows, the DeviceEnvironment row
    and StringIds."""
    removed = {}
    for name in (MORDRED, FUSER, JACC):
        path = exports[name]
        tables = {t for (t,) in sql(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
        counts = {}
        for table, where in (
            ("StringIds", "1"),
            ("META_DATA_CAPTURE", "name LIKE '%ENVIRONMENT_VARIABLE'"),
            ("TARGET_INFO_SYSTEM_ENV", "name = 'DeviceEnvironment'"),
        ):
            if table in tables:
                ((n,),) = sql(path, f"SELECT count(*) FROM {table} WHERE {where} AND value = '{REMOVED}'")
                counts[table] = n
        removed[name] = counts
    assert removed == {
        MORDRED: {"StringIds": 12},
        FUSER: {"StringIds": 33, "META_DATA_CAPTURE": 115, "TARGET_INFO_SYSTEM_ENV": 1},
        JACC: {"StringIds": 5, "META_DATA_CAPTURE": 139, "TARGET_INFO_SYSTEM_ENV": 1},
    }


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


def gpu_spans(path: Path, tables: tuple[str, ...] = (KERNEL, MEMCPY, MEMSET)) -> list[tuple[int, int]]:
    """(start, end) of every operation in the tables, in start order."""
    return sorted(row for table in tables for row in sql(path, f'SELECT start, "end" FROM {table}'))


def union(spans: list[tuple[int, int]]) -> tuple[int, int, list[tuple[int, int]]]:
    """The spans' reach (first start to last end), the time at least one of them runs, and
    the gaps between them, each as (from, to)."""
    busy, reach, gaps = 0, spans[0][0], []
    for start, end in spans:
        if start > reach:
            gaps.append((reach, start))
        busy += max(0, end - max(start, reach))
        reach = max(reach, end)
    return reach - spans[0][0], busy, gaps


def api_name(stored: str) -> str:
    """nsys's `cuda_api_sum` name: a trailing `_v` and four digits dropped, nothing else."""
    return re.sub(r"_v\d{4}$", "", stored)


def assert_figures_match_sql(path: Path, data: dict[str, Any]) -> None:
    """Kernels per name, copies and sets per kind, CUDA calls per name, NVTX ranges per name,
    and the whole trace's span and busy time: each as plain SQL over the same file has it."""
    kernels = sql(
        path,
        f'SELECT s.value, count(*), sum(k."end" - k.start) FROM {KERNEL} k '
        "JOIN StringIds s ON s.id = k.demangledName GROUP BY 1",
    )
    assert {k["name"]: (k["instances"], k["total_ns"]) for k in data["kernels"]} == {n: (c, t) for n, c, t in kernels}

    memory = {
        COPY_KINDS[kind]: (n, t, b)
        for kind, n, t, b in sql(
            path, f'SELECT copyKind, count(*), sum("end" - start), sum(bytes) FROM {MEMCPY} GROUP BY 1'
        )
    }
    memory["memset"] = sql(path, f'SELECT count(*), sum("end" - start), sum(bytes) FROM {MEMSET}')[0]
    assert {m["kind"]: (m["count"], m["total_ns"], m["bytes"]) for m in data["memory_ops"]} == memory

    calls: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name, n, t in sql(
        path,
        'SELECT s.value, count(*), sum(r."end" - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r '
        "JOIN StringIds s ON s.id = r.nameId GROUP BY 1",
    ):
        calls[api_name(name)][0] += n
        calls[api_name(name)][1] += t
    assert {c["name"]: [c["calls"], c["total_ns"]] for c in data["cuda_api"]} == calls

    ranges = {}
    if sql(path, "SELECT name FROM sqlite_master WHERE name = 'NVTX_EVENTS'"):
        query = 'SELECT text, count(*), sum("end" - start) FROM NVTX_EVENTS WHERE eventType IN (59, 60) GROUP BY 1'
        ranges = {n: (c, t) for n, c, t in sql(path, query)}
    assert {r["name"]: (r["calls"], r["range_ns"]) for r in data["ranges"]} == ranges

    span, busy, _ = union(gpu_spans(path))
    _, kernel_busy, _ = union(gpu_spans(path, (KERNEL,)))
    streams = " UNION ".join(f"SELECT globalPid, deviceId, streamId FROM {t}" for t in (KERNEL, MEMCPY, MEMSET))
    summary = data["trace_summary"]
    assert (summary["kernels"], summary["memops"], summary["streams"]) == (
        sum(c for _, c, _ in kernels),
        sum(m[0] for m in memory.values()),
        sql(path, f"SELECT count(*) FROM ({streams})")[0][0],
    )
    assert summary["span_ms"] == pytest.approx(span / 1e6, abs=1e-6)
    assert summary["gpu_busy_pct"] == pytest.approx(100 * busy / span, abs=1e-3)
    assert summary["kernel_busy_pct"] == pytest.approx(100 * kernel_busy / span, abs=1e-3)


def test_an_nsys_2021_export_without_meta_data(capsys: pytest.CaptureFixture[str], exports: dict[str, Path]) -> None:
    """Mordred's hash-join query on a Quadro RTX 6000, exported by nsys 2021.2.1: no export
    meta-data table, copy kinds only as CUPTI's numbers, no NVTX. Every figure as SQL has it;
    the GPU from TARGET_INFO_GPU; the nsys version from the path of the nsys that captured it,
    as no table records one."""
    path = exports[MORDRED]
    tables = {t for (t,) in sql(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert not tables & {"META_DATA_EXPORT", "EXPORT_META_DATA", "NVTX_EVENTS", "ENUM_CUDA_MEMCPY_OPER"}
    data = analyze(capsys, path)
    assert_figures_match_sql(path, data)
    assert (
        data["device_name"]
        == sql(path, f"SELECT DISTINCT g.name FROM {KERNEL} k JOIN TARGET_INFO_GPU g ON g.id = k.deviceId")[0][0]
        == "Quadro RTX 6000"
    )
    # only the injection library's path says which nsys it was
    paths = sql(path, "SELECT value FROM StringIds WHERE value LIKE '%/nsight-systems/2021.2.1/%'")
    assert paths and data["versions"] == {"nsys": "2021.2.1"}
    assert [(k["instances"], k["short_name"]) for k in data["kernels"]] == [
        (3, "probe_GPU2<128, 4>"),
        (9, "build_GPU2<128, 4>"),
    ]
    assert {m["kind"]: m["count"] for m in data["memory_ops"]} == {"htod": 164, "dtoh": 24, "memset": 16}
    # nsys 2021's names for the copies, as its cuda_gpu_mem_time_sum printed them
    assert [m["operation"] for m in data["memory_ops"]] == ["[CUDA memcpy DtoH]", "[CUDA memcpy HtoD]", "[CUDA memset]"]
    assert sum(c["calls"] for c in data["cuda_api"]) == 260 and data["ranges"] == []


def test_a_gpu_idle_for_seconds_while_the_host_works_is_host_bound(
    capsys: pytest.CaptureFixture[str], exports: dict[str, Path]
) -> None:
    """Mordred's GPU does 0.39 s of work in 6.51 s: it idles 4.66 s and 1.24 s between two
    operations while the host runs no CUDA call (its own work). The one step found is
    host-bound, its wait for the host the sum of the gaps of 1 ms or more, not launch-bound."""
    path = exports[MORDRED]
    _, _, gaps = union(gpu_spans(path))
    longest = sorted(gaps, key=lambda g: g[0] - g[1])[:2]
    assert [round((b - a) / 1e9, 2) for a, b in longest] == [4.66, 1.24]
    calls = sql(path, 'SELECT start, "end" FROM CUPTI_ACTIVITY_KIND_RUNTIME')
    for a, b in longest:  # the CUDA calls in flight in each gap cover under 1% of it
        in_flight = sum(max(0, min(end, b) - max(start, a)) for start, end in calls)
        assert in_flight < (b - a) / 100

    data = analyze(capsys, path)
    (group,) = data["steps"]
    assert (group["source"], group["count"], group["verdict"]["kind"]) == ("repeating-sequence", 1, "host-bound")
    gap_ns = group["verdict"]["thresholds"]["host_gap_ms"] * 1e6
    idle = group["idle_ms_per_step"]
    assert idle["waiting_for_host"] == pytest.approx(sum(b - a for a, b in gaps if b - a >= gap_ns) / 1e6, abs=1e-6)
    assert idle["between_kernels"] == pytest.approx(sum(b - a for a, b in gaps if b - a < gap_ns) / 1e6, abs=1e-6)
    assert "CUDA graph" not in group["verdict"]["next_step"]


def test_a_memset_faster_than_any_memory_is_shown_as_recorded_with_a_note(
    capsys: pytest.CaptureFixture[str], exports: dict[str, Path]
) -> None:
    """Mordred's export records a 4,000,000,000-byte memset in 1,120 ns (3.6 PB/s on a GPU
    of 672 GB/s): the memory table keeps it as recorded, and a note says it measures nothing."""
    path = exports[MORDRED]
    ((size, ns),) = sql(
        path, f'SELECT bytes, "end" - start FROM {MEMSET} ORDER BY bytes * 1.0 / ("end" - start) DESC LIMIT 1'
    )
    assert (size, ns) == (4_000_000_000, 1_120)
    data = analyze(capsys, path)
    assert (
        "1 memory operation(s) record more bytes than any memory moves in their time (the fastest, a set: "
        f"{size / 2**30:.2f} GiB in {ns / 1e3:.2f} us, {size / ns / 1e3:,.0f} TB/s, where no memory is faster than "
        "160 TB/s): the export's own figures, shown as recorded, not a measurement"
    ) in data["notes"]
    # and the memory table counts it as recorded: its 16 sets hold 3.75 GiB
    (memset,) = [m for m in data["memory_ops"] if m["kind"] == "memset"]
    assert [memset["count"], memset["bytes"]] == list(sql(path, f"SELECT count(*), sum(bytes) FROM {MEMSET}")[0])
    assert memset["bytes"] - size == 21_651_132


def test_an_nsys_2025_export_of_nvfuser(capsys: pytest.CaptureFixture[str], exports: dict[str, Path]) -> None:
    """nvFuser's cross-entropy benchmark on an H200, nsys 2025.1.1 (schema 3.17.1): calls
    through both the runtime and the driver API, named as nsys's cuda_api_sum names them
    (`cudaLaunchKernel_v7000` as `cudaLaunchKernel`; `cuGetProcAddress_v2` and
    `cudaStreamIsCapturing_v10000` as they are), copy kinds from the export's enum table, and
    13,513 NVTX push/pop ranges; every figure as SQL has it."""
    path = exports[FUSER]
    assert dict(sql(path, "SELECT name, value FROM META_DATA_EXPORT WHERE name LIKE 'EXPORT_%VERSION'")) == {
        "EXPORT_PRODUCT_VERSION": "2025.1.1.110",
        "EXPORT_SCHEMA_VERSION": "3.17.1",
    }
    assert sql(path, "SELECT eventClass, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1 ORDER BY 1") == [
        (0, 91),
        (1, 899),
    ]
    enum = dict(sql(path, "SELECT id, name FROM ENUM_CUDA_MEMCPY_OPER"))
    assert {kind: enum[kind].removeprefix("CUDA_MEMCPY_KIND_").lower() for kind in COPY_KINDS} == COPY_KINDS

    data = analyze(capsys, path)
    assert_figures_match_sql(path, data)
    assert data["device_name"] == "NVIDIA H200" and data["versions"] == {"nsys": "2025.1.1.110"}
    assert sql(path, f"SELECT DISTINCT g.name FROM {KERNEL} k JOIN TARGET_INFO_GPU g ON g.id = k.deviceId") == [
        ("NVIDIA H200",)
    ]
    labels = dict(sql(path, "SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER"))
    assert (
        {m["operation"] for m in data["memory_ops"]}
        == {
            *(f"[CUDA memcpy {labels[k]}]" for (k,) in sql(path, f"SELECT DISTINCT copyKind FROM {MEMCPY}")),
            "[CUDA memset]",
        }
        == {"[CUDA memcpy Host-to-Device]", "[CUDA memcpy Device-to-Device]", "[CUDA memset]"}
    )
    names = {c["name"]: c["calls"] for c in data["cuda_api"]}
    assert names["cudaLaunchKernel"] == 9 and names["cuGetProcAddress_v2"] == 838
    assert "cudaStreamIsCapturing_v10000" in names and "cudaGetDeviceProperties_v2_v12000" in names
    assert sum(k["instances"] for k in data["kernels"]) == 18
    assert sum(r["calls"] for r in data["ranges"]) == 13_513 and len(data["ranges"]) == 188
    assert data["steps"] == []  # no step range, no repeating sequence: the trace notes say so


def test_nvtx_ranges_count_the_kernels_launched_inside_them(
    capsys: pytest.CaptureFixture[str], exports: dict[str, Path]
) -> None:
    """Each of nvFuser's ranges with the kernels launched in it: a kernel belongs to every
    push/pop range, on the thread of the CUDA call that launched it (the same correlation id,
    in the same process), that was open when the call began. The 6 nvFuser kernels are
    launched by the driver's `cuLaunchKernel` inside `ExecutorRunFusion::cuLaunchKernel`, the
    2 fills of its intermediates by `cudaLaunchKernel`; the other 10 kernels (PyTorch's, and
    cuBLAS's through `cuLaunchKernelEx`) were launched outside any range."""
    path = exports[FUSER]
    inside = (
        "FROM NVTX_EVENTS n "
        'JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.globalTid = n.globalTid AND r.start BETWEEN n.start AND n."end" '
        f"JOIN {KERNEL} k ON k.correlationId = r.correlationId AND k.globalPid >> 24 = r.globalTid >> 24 "
        "JOIN StringIds s ON s.id = k.demangledName WHERE n.eventType = 59 "
    )
    per_range = sql(path, f'SELECT n.text, count(*), sum(k."end" - k.start) {inside} GROUP BY 1')
    assert sql(path, f"SELECT count(DISTINCT k.rowid) {inside}") == [(8,)]
    top = {}
    for name, kernel, _total in sql(
        path, f'SELECT n.text, s.value, sum(k."end" - k.start) AS t {inside} GROUP BY 1, 2 ORDER BY t'
    ):
        top[name] = kernel  # the last is the longest
    data = analyze(capsys, path)
    ranges = {r["name"]: r for r in data["ranges"]}
    launched = {
        name: (r["kernel_instances"], r["gpu_ns"], r["kernel_full"])
        for name, r in ranges.items()
        if r["kernel_instances"]
    }
    assert launched == {name: (n, t, top[name]) for name, n, t in per_range}
    assert launched["ExecutorRunFusion::cuLaunchKernel"][:2] == (6, 3_131_549)
    assert launched["KernelExecutor::runFusion::intermediates"][:2] == (2, 2_848)
    assert launched["FusionExecutorCache::runFusionWithInputs"][:2] == (8, 3_134_397)
    assert all(r["gpu_ns"] is None for name, r in ranges.items() if name not in launched)


def test_an_nsys_2026_export_that_recorded_no_cuda(
    capsys: pytest.CaptureFixture[str], exports: dict[str, Path]
) -> None:
    """A Julia program on a box with two A100s, nsys 2026.2.1 (schema 3.25.0, the newest seen):
    CUDA and NVTX were asked for (CAPTURE_EVENT_TYPE), but nsys's diagnostics say it collected
    no CUDA event and one NVTX event, a thread's name. analyze reads it, names the GPU (both
    are the same model), and says in its notes that there is no CUDA and no NVTX range."""
    path = exports[JACC]
    tables = {t for (t,) in sql(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert not {t for t in tables if t.startswith("CUPTI_")}
    assert dict(sql(path, "SELECT name, value FROM META_DATA_EXPORT WHERE name LIKE 'EXPORT_%VERSION'")) == {
        "EXPORT_PRODUCT_VERSION": "2026.2.1.210",
        "EXPORT_SCHEMA_VERSION": "3.25.0",
    }
    assert sql(path, "SELECT eventType, count(*) FROM NVTX_EVENTS GROUP BY 1") == [(39, 1)]  # NvtxThread
    assert {v for (v,) in sql(path, "SELECT value FROM META_DATA_CAPTURE WHERE name = 'CAPTURE_EVENT_TYPE'")} == {
        "Cuda",
        "NvtxEvents",
    }
    assert sql(path, "SELECT text FROM DIAGNOSTIC_EVENT WHERE text LIKE 'No CUDA events%'") == [
        ("No CUDA events collected. Does the process use CUDA?",)
    ]
    assert sql(path, "SELECT name, count(*) FROM TARGET_INFO_GPU GROUP BY 1") == [("NVIDIA A100 80GB PCIe", 2)]

    data = analyze(capsys, path)
    assert data["device_name"] == "NVIDIA A100 80GB PCIe" and data["versions"] == {"nsys": "2026.2.1.210"}
    assert (data["kernels"], data["cuda_api"], data["memory_ops"], data["ranges"]) == ([], [], [], [])
    assert data["trace_summary"] is None and data["steps"] is None
    # CUDA was asked for, and nsys found none (above): the note says so, not "traced without it"
    notes = [
        "no NVTX ranges in this profile, so no per-range times or rates: wrap the code to measure in an NVTX range, "
        '`with torch.cuda.nvtx.range("step"):` (or `torch.cuda.nvtx.range_push("step")` ... '
        '`torch.cuda.nvtx.range_pop()`; from C or C++, `nvtxRangePushA("step")` ... `nvtxRangePop()`), and trace it '
        "with `-t cuda,nvtx`",
        "no CUDA in this report (no kernel, memory or CUDA API table): CUDA was traced, and nsys collected no "
        "CUDA event (the process made no CUDA call nsys saw)",
    ]
    assert data["notes"] == notes
    r = run_cli(capsys, "analyze", str(path))
    assert r.code == 0, r
    assert "GPU kernels: none in this profile" in r.out
    assert [line for line in r.out.splitlines() if line.startswith("note:")] == [f"note: {n}" for n in notes]
