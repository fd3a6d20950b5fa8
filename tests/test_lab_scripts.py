"""The lab scripts, run for real on this machine's CPU as the pod would run them."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "lab_scripts"
SWEEP = SCRIPTS / "sweep.py"
LESSON1 = SCRIPTS / "lesson1.py"
ELEMENT_SIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
ROW_LINE = re.compile(r"^2\^(\d+)\s+elems\s+([\d.]+) MiB\s+([\d.]+) us\s+([\d.]+) TB/s$")


def _run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def _sysfs_last_level_cache() -> int | None:
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    best: tuple[int, int] | None = None
    for d in sorted(base.glob("index*")) if base.is_dir() else []:
        if (d / "type").read_text().strip() == "Instruction":
            continue
        level = int((d / "level").read_text())
        size = (d / "size").read_text().strip()
        unit = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1], 1)
        value = int(size.rstrip("KMG")) * unit
        if best is None or (level, value) > best:
            best = (level, value)
    return best[1] if best else None


# --- no torch needed ---


@pytest.mark.parametrize("script", [SWEEP, LESSON1], ids=lambda p: p.name)
def test_help_works_without_importing_torch(script: Path) -> None:
    proc = _run(script, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: {script.name}")
    assert "--device" in proc.stdout and "--json" in proc.stdout and "--dtype" in proc.stdout
    assert "--max-bytes" not in proc.stdout  # a testing aid, hidden from users
    code = (
        "import runpy, sys\n"
        f"sys.argv = [{str(script)!r}, '--help']\n"
        "try:\n"
        f"    runpy.run_path({str(script)!r}, run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write('torch' in sys.modules and 'TORCH' or 'NO-TORCH')\n"
    )
    probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert probe.stderr.endswith("NO-TORCH")


@pytest.mark.parametrize("script", [SWEEP, LESSON1, SCRIPTS / "labcommon.py"], ids=lambda p: p.name)
def test_scripts_parse_as_python_38_and_need_only_torch_and_labcommon(script: Path) -> None:
    source = script.read_text()
    tree = ast.parse(source, feature_version=(3, 8))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert "nsightlab" not in imported
    stdlib = set(sys.stdlib_module_names)
    # labcommon itself imports no torch: the functions that need it are handed the module
    assert imported - stdlib == ({"torch", "labcommon"} if script.name != "labcommon.py" else set())
    assert source.startswith("#!/usr/bin/env python3\n")
    assert "from __future__ import annotations" in source  # keeps X | None legal on 3.8


@pytest.mark.parametrize("script", [SWEEP, LESSON1], ids=lambda p: p.name)
def test_a_script_copied_alone_stops_with_one_line_naming_labcommon(script: Path, tmp_path: Path) -> None:
    alone = tmp_path / script.name
    alone.write_bytes(script.read_bytes())
    proc = subprocess.run([sys.executable, str(alone), "--help"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == f"{script.name}: needs labcommon.py in the same folder as this script (copy lab_scripts/labcommon.py beside it)\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sizes", "10,abc"], "expected comma-separated powers of two"),
        (["--sizes", "41"], "out of range"),
        (["--iters", "0"], "--iters must be at least 1"),
        (["--dtype", "int8"], "invalid choice"),
    ],
)
def test_sweep_rejects_bad_options(args: list[str], message: str) -> None:
    proc = _run(SWEEP, *args)
    assert proc.returncode == 2
    assert message in proc.stderr


# --- real runs on the CPU ---


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Start every CPU run at once (each pays for importing torch), then collect them."""
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("lab")
    small = ["--device", "cpu", "--sizes", "10,12,14", "--iters", "4", "--warmup", "1"]
    plans: dict[str, list[str]] = {
        f"sweep-{dt}": [str(SWEEP), *small, "--dtype", dt, "--json", str(tmp / f"{dt}.json")]
        for dt in ELEMENT_SIZE
    }
    plans["sweep-skip"] = [
        str(SWEEP), "--device", "cpu", "--dtype", "float16", "--sizes", "10,12,24",
        "--iters", "2", "--warmup", "0", "--max-bytes", "20000", "--json", str(tmp / "skip.json"),
    ]  # fmt: skip
    plans["lesson1"] = [str(LESSON1), "--device", "cpu", "--iters", "3", "--json", str(tmp / "l1.json")]
    # no --json: the default is lesson1.json in the working directory
    plans["lesson1-cwd"] = [
        str(LESSON1), "--device", "cpu", "--scale-log2", "10", "--gemm-n", "16", "--iters", "1",
        "--warmup", "0", "--dtype", "float64",
    ]  # fmt: skip
    plans["sweep-cuda"] = [str(SWEEP), "--device", "cuda", "--sizes", "10"]
    cwd = {"lesson1-cwd": tmp / "cwd"}
    cwd["lesson1-cwd"].mkdir()
    # one thread each: the runs share the machine, and only their output is checked here
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = {
        name: subprocess.Popen(
            [sys.executable, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd.get(name, tmp),
            env=env,
        )
        for name, argv in plans.items()
    }
    out: dict[str, Any] = {"tmp": tmp}
    try:
        for name, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=180)
            out[name] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    yield out


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.mark.parametrize("dtype", list(ELEMENT_SIZE))
def test_sweep_cpu_every_dtype(runs: dict[str, Any], dtype: str) -> None:
    proc = runs[f"sweep-{dtype}"]
    assert proc.returncode == 0, proc.stderr
    doc = _load(runs["tmp"] / f"{dtype}.json")
    assert doc["kind"] == "sweep" and doc["schema"] == 1 and doc["op"] == "scale"
    assert doc["dtype"] == dtype and doc["element_size"] == ELEMENT_SIZE[dtype]
    assert (doc["iters"], doc["warmup"]) == (4, 1)
    assert sum(doc["batches"]) == 4
    dev = doc["device"]
    assert dev["type"] == "cpu" and dev["cuda"] is None
    assert {"name", "l2_bytes", "memory_bytes", "sm_count", "torch", "cuda"} <= set(dev)
    assert dev["l2_bytes"] == _sysfs_last_level_cache()
    assert [r["log2"] for r in doc["rows"]] == [10, 12, 14]
    assert doc["skipped"] == []
    previous = 0
    for row in doc["rows"]:
        assert row["elements"] == 1 << row["log2"] > previous
        previous = row["elements"]
        assert row["bytes_per_call"] == 2 * row["elements"] * ELEMENT_SIZE[dtype]
        assert row["tensor_bytes"] == row["elements"] * ELEMENT_SIZE[dtype]
        assert row["seconds_per_call"] > 0
        assert len(row["batch_seconds_per_call"]) == len(doc["batches"])
        assert min(row["batch_seconds_per_call"]) <= row["seconds_per_call"]
        assert row["seconds_per_call"] <= max(row["batch_seconds_per_call"])
    # the streamed table says the same as the JSON, one line per size
    lines = [ROW_LINE.match(line) for line in proc.stdout.splitlines()]
    assert all(lines) and len(lines) == 3
    for m, row in zip(lines, doc["rows"], strict=True):
        assert m is not None
        assert int(m.group(1)) == row["log2"]
        assert float(m.group(3)) == pytest.approx(row["seconds_per_call"] * 1e6, abs=0.06)
        tbps = row["bytes_per_call"] / row["seconds_per_call"] / 1e12
        assert float(m.group(4)) == pytest.approx(tbps, abs=6e-4)
    assert "no GPU" not in proc.stderr  # sizes were given, so no default to announce
    assert f"2 x elements x {ELEMENT_SIZE[dtype]}" in proc.stderr


def test_sweep_output_validates_as_the_tools_record(runs: dict[str, Any]) -> None:
    from nsightlab.analysis.rates import SweepRecord, analyze_sweep

    for dtype in ELEMENT_SIZE:
        record = SweepRecord.model_validate(_load(runs["tmp"] / f"{dtype}.json"))
        analysis = analyze_sweep(record)
        assert [p.log2 for p in analysis.rows] == [10, 12, 14]
        assert analysis.summary.spec_name is None  # a CPU is not in the GPU table


def test_sweep_skips_what_does_not_fit(runs: dict[str, Any]) -> None:
    proc = runs["sweep-skip"]
    assert proc.returncode == 0, proc.stderr
    doc = _load(runs["tmp"] / "skip.json")
    assert [r["log2"] for r in doc["rows"]] == [10, 12]  # 2 KiB and 8 KiB fit in 20000 B
    assert len(doc["skipped"]) == 1
    skip = doc["skipped"][0]
    assert skip["log2"] == 24
    assert "needs 32.0 MiB" in skip["reason"] and "--max-bytes" in skip["reason"]
    assert "skipping 2^24" in proc.stderr
    assert len(proc.stdout.splitlines()) == 2


def test_lesson1_cpu_run(runs: dict[str, Any]) -> None:
    proc = runs["lesson1"]
    assert proc.returncode == 0, proc.stderr
    assert "no GPU: running on the CPU, scaled down" in proc.stderr
    assert "2^22 elements" in proc.stderr and "512^3 GEMM" in proc.stderr
    doc = _load(runs["tmp"] / "l1.json")
    assert doc["kind"] == "lesson1" and doc["schema"] == 1
    assert doc["scaled_down"] is True and doc["matches_tutorial"] is False
    assert doc["device"]["type"] == "cpu"
    scale, gemm = doc["ranges"]
    assert scale["name"] == "memory_bound_scale" and gemm["name"] == "compute_bound_gemm"
    assert (scale["calls"], scale["warmup"], gemm["calls"], gemm["warmup"]) == (3, 3, 3, 3)
    assert scale["dtype"] == gemm["dtype"] == "float32"
    assert scale["elements"] == 1 << 22 and scale["element_size"] == 4
    assert scale["bytes_per_call"] == 2 * scale["elements"] * 4
    assert scale["flops_per_call"] == scale["elements"]
    assert (gemm["m"], gemm["n"], gemm["k"]) == (512, 512, 512)
    assert gemm["flops_per_call"] == 2 * 512**3
    assert gemm["bytes_per_call"] == 3 * 512 * 512 * 4
    assert scale["seconds_per_call"] > 0 and gemm["seconds_per_call"] > 0
    assert "memory_bound_scale" in proc.stdout and "compute_bound_gemm" in proc.stdout
    # the JSON landed where asked, with no temporary file left beside it
    assert sorted(p.name for p in runs["tmp"].iterdir() if p.name.startswith(".")) == []


def test_both_scripts_describe_the_device_alike(runs: dict[str, Any]) -> None:
    sweep_dev = _load(runs["tmp"] / "float32.json")["device"]
    lesson_dev = _load(runs["tmp"] / "l1.json")["device"]
    assert sweep_dev == lesson_dev


def test_lesson1_default_json_path_is_the_cwd(runs: dict[str, Any]) -> None:
    proc = runs["lesson1-cwd"]
    assert proc.returncode == 0, proc.stderr
    written = runs["tmp"] / "cwd" / "lesson1.json"
    doc = _load(written)
    assert doc["ranges"][0]["element_size"] == 8 and doc["ranges"][0]["dtype"] == "float64"
    assert doc["ranges"][1]["bytes_per_call"] == 3 * 16 * 16 * 8
    assert "scaled down" not in proc.stderr  # every size was given explicitly
    assert oct(os.stat(written).st_mode & 0o777) == oct(0o644)


def test_cuda_requested_without_a_gpu_fails_clearly(runs: dict[str, Any]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    proc = runs["sweep-cuda"]
    assert proc.returncode == 3  # labcommon.NO_GPU_EXIT: the caller tells it from other failures
    assert proc.stderr.splitlines()[-1] == f"sweep.py: torch cannot see the GPU: CPU-only build {torch.__version__}"


def _import_script(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"labscript_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lesson1_ranges_are_visible_to_torch_profiler(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    lesson1 = _import_script(LESSON1)
    args = lesson1.parse_args(
        ["--device", "cpu", "--scale-log2", "12", "--gemm-n", "32", "--iters", "2", "--warmup", "1"]
    )
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        doc = lesson1.run(args)
    names = {event.key for event in prof.key_averages()}
    assert {"memory_bound_scale", "compute_bound_gemm"} <= names
    counts = {e.key: e.count for e in prof.key_averages()}
    assert counts["memory_bound_scale"] == counts["compute_bound_gemm"] == 1
    assert [r["calls"] for r in doc["ranges"]] == [2, 2]
