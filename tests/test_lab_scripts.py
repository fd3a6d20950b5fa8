"""The lab scripts, run for real on this machine's CPU as the pod would run them.

Triton's kernel itself (in-process, in its interpreter) and the pure sizing rules are in
test_lab_scripts_triton.py; the runs here are whole scripts in subprocesses.
"""

from __future__ import annotations

import ast
import gzip
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from scriptrun import run_together

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "lab_scripts"
SWEEP = SCRIPTS / "sweep.py"
LESSON1 = SCRIPTS / "lesson1.py"
TORCHPROF = SCRIPTS / "torchprof.py"
ELEMENT_SIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
ROW_LINE = re.compile(r"^2\^(\d+)\s+elems\s+([\d.]+) MiB\s+([\d.]+) us\s+([\d.]+) TB/s$")
SIXTEEN_BIT_NOTE = (
    "{} on a CPU is converted element by element: its time measures arithmetic, not memory "
    "bandwidth; use float32 for a bandwidth test"
)
# The two lines kineto's C++ library prints to stderr around every profile (documented
# in lab_scripts/README.md for callers to filter).
USDT_LINE = re.compile(
    r"^USDT:\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \d+:\d+ "
    r"SyncActivityProfilerHandler\.cpp:\d+\] profiler_(start|stop)$"
)
# A script with a user's own range around a few ops, for torchprof.
STEP_SCRIPT = """\
import torch
from torch.profiler import record_function

x = torch.ones(4096)
w = torch.ones(32, 32)
for _ in range(3):
    with record_function("step"):
        x.mul_(1.5)
        w @ w
        torch.relu(x)
"""
# Runs a script (argv[1:]) as __main__, then says on stderr whether triton was imported.
REPORT_TRITON_IMPORT = """\
import runpy, sys
script = sys.argv[1]
sys.argv = sys.argv[1:]
try:
    runpy.run_path(script, run_name="__main__")
    code = 0
except SystemExit as e:
    code = e.code
sys.stderr.write("TRITON-IMPORTED\\n" if "triton" in sys.modules else "NO-TRITON\\n")
sys.exit(code)
"""


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


def _imports(nodes: list[ast.AST]) -> set[str]:
    imported = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    return imported


def _module_level(tree: ast.Module) -> list[ast.AST]:
    """The statements run at import: the module body and the blocks inside it, not
    function or class bodies."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return out


@pytest.mark.parametrize("script", [SWEEP, LESSON1, TORCHPROF, SCRIPTS / "labcommon.py"], ids=lambda p: p.name)
def test_scripts_parse_as_python_38_and_need_only_torch_and_labcommon(script: Path) -> None:
    source = script.read_text()
    tree = ast.parse(source, feature_version=(3, 8))
    imported = _imports(list(ast.walk(tree)))
    assert "nsightlab" not in imported
    stdlib = set(sys.stdlib_module_names)
    # labcommon itself imports no torch: the functions that need it are handed the module;
    # sweep imports triton inside the function that --impl triton calls, never at import
    expected = {
        "labcommon.py": set(),
        "sweep.py": {"torch", "labcommon", "triton"},
    }.get(script.name, {"torch", "labcommon"})
    assert imported - stdlib == expected
    assert "torch" not in _imports(_module_level(tree))
    assert "triton" not in _imports(_module_level(tree))
    assert source.startswith("#!/usr/bin/env python3\n")
    assert "from __future__ import annotations" in source  # keeps X | None legal on 3.8


@pytest.mark.parametrize("script", [SWEEP, LESSON1], ids=lambda p: p.name)
def test_a_script_copied_alone_stops_with_one_line_naming_labcommon(script: Path, tmp_path: Path) -> None:
    alone = tmp_path / script.name
    alone.write_bytes(script.read_bytes())
    proc = subprocess.run([sys.executable, str(alone), "--help"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert (
        proc.stderr
        == f"{script.name}: needs labcommon.py in the same folder as this script (copy lab_scripts/labcommon.py "
        "beside it)\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sizes", "10,abc"], "expected comma-separated powers of two"),
        (["--sizes", "41"], "out of range"),
        (["--iters", "0"], "--iters must be at least 1"),
        (["--dtype", "int8"], "invalid choice"),
        (["--op", "triad"], "invalid choice"),
        (["--impl", "cupy"], "invalid choice"),
        (
            ["--impl", "triton", "--dtype", "float64"],
            "--impl triton takes float16, bfloat16 or float32 (its scalars are 32-bit)",
        ),
    ],
)
def test_sweep_rejects_bad_options(args: list[str], message: str) -> None:
    proc = _run(SWEEP, *args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_torchprof_trace_must_be_gzipped() -> None:
    proc = _run(TORCHPROF, "--out", "p.json", "--trace", "p.json", "x.py")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1].endswith(
        "--trace writes a gzipped trace: give a name ending in .json.gz, not 'p.json'"
    )


def test_triton_on_the_cpu_without_the_interpreter_is_a_usage_error() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run(
        [sys.executable, str(SWEEP), "--impl", "triton", "--device", "cpu", "--sizes", "10"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        "sweep.py: --impl triton on the CPU runs only in Triton's interpreter: set "
        "TRITON_INTERPRET=1 (slow, and no bandwidth figure), or run where torch sees a GPU\n"
    )


def test_sweep_without_triton_stops_with_exit_4() -> None:
    # sys.modules[name] = None is Python's own way to make an import fail
    code = (
        "import runpy, sys\n"
        "sys.modules['triton'] = None\n"
        f"sys.argv = [{str(SWEEP)!r}, '--impl', 'triton', '--device', 'cpu']\n"
        f"runpy.run_path({str(SWEEP)!r}, run_name='__main__')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 4, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("sweep.py: --impl triton needs the triton package")
    assert "install triton or use --impl torch" in proc.stderr


# --- real runs on the CPU ---


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Start every CPU run at once (each pays for importing torch), then collect them."""
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("lab")
    small = ["--device", "cpu", "--sizes", "10,12,14", "--iters", "4", "--warmup", "1"]
    plans: dict[str, list[str]] = {
        f"sweep-{dt}": [str(SWEEP), *small, "--dtype", dt, "--json", str(tmp / f"{dt}.json")] for dt in ELEMENT_SIZE
    }
    # the float32 run also reports whether anything imported triton (--impl torch must not)
    plans["sweep-float32"][:0] = ["-c", REPORT_TRITON_IMPORT]
    # Triton in its interpreter, end to end: its default sizes, iterations and warm-up
    plans["triton-scale-add-f16"] = [
        str(SWEEP), "--impl", "triton", "--op", "scale-add", "--dtype", "float16",
        "--json", str(tmp / "triton-scale-add-f16.json"),
    ]  # fmt: skip
    step = tmp / "step.py"
    step.write_text(STEP_SCRIPT)
    # nsightlab copies torchprof.py alone beside a user's own script
    alone = tmp / "alone"
    alone.mkdir()
    (alone / TORCHPROF.name).write_bytes(TORCHPROF.read_bytes())
    plans["torchprof-alone"] = [str(alone / TORCHPROF.name), "--out", str(alone / "prof.json"), str(step)]
    plans["sweep-skip"] = [
        str(SWEEP), "--device", "cpu", "--dtype", "float16", "--sizes", "10,12,24",
        "--iters", "2", "--warmup", "0", "--max-bytes", "20000", "--json", str(tmp / "skip.json"),
    ]  # fmt: skip
    # no --json: the default is lesson1.json in the working directory
    plans["lesson1-cwd"] = [
        str(LESSON1), "--device", "cpu", "--scale-log2", "10", "--gemm-n", "16", "--iters", "1",
        "--warmup", "0", "--dtype", "float16",
    ]  # fmt: skip
    plans["sweep-cuda"] = [str(SWEEP), "--device", "cuda", "--sizes", "10"]
    cwd = {"lesson1-cwd": tmp / "cwd"}
    cwd["lesson1-cwd"].mkdir()
    # one thread each: the runs share the machine, and only their output is checked here
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["OMP_NUM_THREADS"] = "1"
    interpreted = {**env, "TRITON_INTERPRET": "1"}
    triton = {name: interpreted for name in plans if name.startswith("triton-")}
    out: dict[str, Any] = {"tmp": tmp, **run_together(plans, cwd=tmp, env=env, cwds=cwd, envs=triton)}
    yield out


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.mark.slow
@pytest.mark.parametrize("dtype", list(ELEMENT_SIZE))
def test_sweep_cpu_every_dtype(runs: dict[str, Any], dtype: str) -> None:
    proc = runs[f"sweep-{dtype}"]
    assert proc.returncode == 0, proc.stderr
    doc = _load(runs["tmp"] / f"{dtype}.json")
    assert doc["kind"] == "sweep" and doc["schema"] == 1 and doc["op"] == "scale"
    assert (doc["impl"], doc["kernels_per_call"], doc["interpreted"]) == ("torch", 1, False)
    assert doc["scalars"] == {"a": 1.0001}
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
        assert (row["op"], row["impl"], row["kernels_per_call"]) == ("scale", "torch", 1)
        assert row["interpreted"] is False and "max_abs_error" not in row
        batches = row["batch_seconds_per_call"]
        assert len(batches) == len(doc["batches"])
        # the spread over the batches; the figure itself is their median
        assert row["seconds_min"] == min(batches) and row["seconds_max"] == max(batches)
        assert row["seconds_median"] == row["seconds_per_call"] == statistics.median(batches)
        assert row["seconds_min"] <= row["seconds_median"] <= row["seconds_max"]
    # the streamed table says the same as the JSON, one line per size
    lines = [ROW_LINE.match(line) for line in proc.stdout.splitlines()]
    assert all(lines) and len(lines) == 3
    for m, row in zip(lines, doc["rows"], strict=True):
        assert m is not None
        assert int(m.group(1)) == row["log2"]
        assert float(m.group(3)) == pytest.approx(row["seconds_per_call"] * 1e6, abs=0.06)
        tbps = row["bytes_per_call"] / row["seconds_per_call"] / 1e12
        assert float(m.group(4)) == pytest.approx(tbps, abs=6e-4)
    assert "default sizes" not in proc.stderr  # sizes were given, so no default to announce
    assert f"bytes = 2 x elements x {ELEMENT_SIZE[dtype]} (read + write)" in proc.stderr
    # a 16-bit float on a CPU runs when asked for, with a note in the JSON and on stderr
    if ELEMENT_SIZE[dtype] == 2:
        assert doc["notes"] == [SIXTEEN_BIT_NOTE.format(dtype)]
        assert f"sweep: {SIXTEEN_BIT_NOTE.format(dtype)}\n" in proc.stderr
    else:
        assert doc["notes"] == [] and "converted element by element" not in proc.stderr


@pytest.mark.slow
def test_sweep_with_impl_torch_never_imports_triton(runs: dict[str, Any]) -> None:
    proc = runs["sweep-float32"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.endswith("NO-TRITON\n")


def triton_rows_agree_with_torch(doc: dict[str, Any], op: str, dtype: str) -> None:
    assert (doc["impl"], doc["op"], doc["dtype"], doc["kernels_per_call"]) == ("triton", op, dtype, 1)
    assert doc["interpreted"] is True
    assert any("no bandwidth claim can be made" in n for n in doc["notes"])
    assert doc["triton"] and doc["triton_configs"] == [{"BLOCK_SIZE": 1024, "num_warps": 4}]
    assert doc["rows"]
    for row in doc["rows"]:
        assert row["interpreted"] is True and row["impl"] == "triton"
        # one fused kernel: one read and one write of every element, whatever the op
        assert row["bytes_per_call"] == 2 * row["elements"] * ELEMENT_SIZE[dtype]
        assert row["triton_config"] == {"BLOCK_SIZE": 1024, "num_warps": 4}
        assert row["autotuned"] is False
        assert row["seconds_min"] <= row["seconds_median"] <= row["seconds_max"]
        if op == "scale":
            assert row["max_abs_error"] == 0.0 and row["tolerance"] == "exact"
        else:
            assert 0.0 <= row["max_error_ulps"] <= 2.0 and row["tolerance"] == "2 ulp"


@pytest.mark.slow
def test_triton_scale_add_float16_in_the_interpreter(runs: dict[str, Any]) -> None:
    proc = runs["triton-scale-add-f16"]
    assert proc.returncode == 0, proc.stderr
    doc = _load(runs["tmp"] / "triton-scale-add-f16.json")
    triton_rows_agree_with_torch(doc, "scale-add", "float16")
    # the interpreter's small default sizes and the CPU's call counts
    assert [r["log2"] for r in doc["rows"]] == [10, 12, 14, 16]
    assert (doc["warmup"], doc["iters"]) == (2, 10)
    assert SIXTEEN_BIT_NOTE.format("float16") in doc["notes"]
    assert "bytes = 2 x elements x 2 (one fused kernel: read + write)" in proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 4 and all(line.endswith("[interpreted]") for line in lines)
    assert "Triton ran in its interpreter (TRITON_INTERPRET=1)" in proc.stderr


@pytest.mark.slow
def test_sweep_output_validates_as_the_tools_record(runs: dict[str, Any]) -> None:
    from nsightlab.analysis.sweep_analysis import analyze_sweep
    from nsightlab.parse.records.sweep_record import SweepRecord

    for dtype in ELEMENT_SIZE:
        record = SweepRecord.model_validate(_load(runs["tmp"] / f"{dtype}.json"))
        analysis = analyze_sweep(record)
        assert [p.log2 for p in analysis.rows] == [10, 12, 14]
        assert analysis.summary.spec_name is None  # a CPU is not in the GPU table


@pytest.mark.slow
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


@pytest.fixture(scope="module")
def lesson1_default(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """lesson1 at its default scale size on the CPU: past the last-level cache, so gigabytes
    of memory and seconds of time on a machine with a large cache (2 GiB for 480 MiB)."""
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("lesson1")
    plan = [str(LESSON1), "--device", "cpu", "--iters", "1", "--warmup", "0", "--json", str(tmp / "l1.json")]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["OMP_NUM_THREADS"] = "1"
    return {"tmp": tmp, **run_together({"lesson1": plan}, cwd=tmp, env=env)}


@pytest.mark.slow
def test_lesson1_cpu_run(lesson1_default: dict[str, Any]) -> None:
    runs = lesson1_default
    proc = runs["lesson1"]
    assert proc.returncode == 0, proc.stderr
    assert "no GPU: running on the CPU, scaled down" in proc.stderr and "512^3 GEMM" in proc.stderr
    doc = _load(runs["tmp"] / "l1.json")
    assert doc["kind"] == "lesson1" and doc["schema"] == 1
    assert doc["scaled_down"] is True and doc["matches_tutorial"] is False
    assert doc["device"]["type"] == "cpu"
    scale, gemm = doc["ranges"]
    assert scale["name"] == "memory_bound_scale" and gemm["name"] == "compute_bound_gemm"
    assert (scale["calls"], scale["warmup"], gemm["calls"], gemm["warmup"]) == (1, 0, 1, 0)
    assert scale["dtype"] == gemm["dtype"] == "float32"
    assert scale["element_size"] == 4 and doc["notes"] == []
    # the scale leaves the cache: the smallest 2^N >= 2^24 whose tensor is at least 4x the
    # last-level cache (read here from sysfs as the script does; 32 MiB when sysfs has none)
    llc = _sysfs_last_level_cache() or 32 << 20
    assert scale["llc_bytes"] == llc
    assert scale["working_set_bytes"] == scale["elements"] * 4
    log2 = scale["elements"].bit_length() - 1
    assert scale["elements"] == 1 << log2
    assert f"scale: 2^{log2} elements = " in proc.stderr
    if scale["past_llc"]:
        assert scale["working_set_bytes"] >= 4 * llc and log2 >= 24
        assert log2 == 24 or (1 << (log2 - 1)) * 4 < 4 * llc  # the smallest such size
        assert "it streams from memory" in proc.stderr
    else:  # only when that size does not fit in half the available memory
        assert "does not fit in 50% of available RAM" in proc.stderr
    assert scale["bytes_per_call"] == 2 * scale["elements"] * 4
    assert scale["flops_per_call"] == scale["elements"]
    assert (gemm["m"], gemm["n"], gemm["k"]) == (512, 512, 512)
    assert gemm["flops_per_call"] == 2 * 512**3
    assert gemm["bytes_per_call"] == 3 * 512 * 512 * 4
    assert scale["seconds_per_call"] > 0 and gemm["seconds_per_call"] > 0
    assert "memory_bound_scale" in proc.stdout and "compute_bound_gemm" in proc.stdout
    # the JSON landed where asked, with no temporary file left beside it
    assert sorted(p.name for p in runs["tmp"].iterdir() if p.name.startswith(".")) == []


@pytest.mark.slow
def test_both_scripts_describe_the_device_alike(runs: dict[str, Any]) -> None:
    sweep_dev = _load(runs["tmp"] / "float32.json")["device"]
    lesson_dev = _load(runs["tmp"] / "cwd" / "lesson1.json")["device"]
    assert sweep_dev == lesson_dev


@pytest.mark.slow
def test_lesson1_default_json_path_is_the_cwd(runs: dict[str, Any]) -> None:
    proc = runs["lesson1-cwd"]
    assert proc.returncode == 0, proc.stderr
    written = runs["tmp"] / "cwd" / "lesson1.json"
    doc = _load(written)
    scale = doc["ranges"][0]
    assert scale["element_size"] == 2 and scale["dtype"] == "float16"
    assert doc["ranges"][1]["bytes_per_call"] == 3 * 16 * 16 * 2
    assert "scaled down" not in proc.stderr  # every size was given explicitly
    assert oct(os.stat(written).st_mode & 0o777) == oct(0o644)
    # an explicit size is honoured, and recorded truthfully as inside the cache
    assert scale["elements"] == 1 << 10 and scale["working_set_bytes"] == 2048
    assert scale["past_llc"] is False
    assert "partly served from the cache, so it is no memory-bandwidth figure" in proc.stderr
    # float16 on a CPU runs when asked for, with the note
    assert SIXTEEN_BIT_NOTE.format("float16") in doc["notes"]
    assert f"lesson1: {SIXTEEN_BIT_NOTE.format('float16')}\n" in proc.stderr


@pytest.mark.slow
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


def test_sweep_scale_add_with_torch_is_two_kernels_and_four_passes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("torch")
    sweep = _import_script(SWEEP)
    # no --dtype: float32 on a CPU
    args = ["--device", "cpu", "--op", "scale-add", "--sizes", "10,12", "--iters", "2", "--warmup", "1"]
    doc = sweep.run(sweep.parse_args(args))
    assert doc["dtype"] == "float32" and doc["element_size"] == 4 and doc["notes"] == []
    assert (doc["op"], doc["impl"], doc["kernels_per_call"]) == ("scale-add", "torch", 2)
    assert doc["scalars"] == {"a": 0.999, "b": 0.001}
    assert [r["log2"] for r in doc["rows"]] == [10, 12]
    for row in doc["rows"]:
        # x.mul_ reads and writes x, then x.add_ reads and writes it again
        assert row["bytes_per_call"] == 4 * row["elements"] * 4
        assert (row["op"], row["kernels_per_call"]) == ("scale-add", 2)
    out, err = capsys.readouterr()
    assert "bytes = 4 x elements x 4 (x.mul_ then x.add_: two kernels" in err
    assert len(out.splitlines()) == 2


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


# --- torchprof ---


def _without_usdt(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not USDT_LINE.match(line)]


def test_torchprof_ranges_are_ranges_and_ops_are_kernels(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    from nsightlab.parse.records.torchprof_record import report_from_torch

    torchprof = _import_script(TORCHPROF)
    step = tmp_path / "step.py"
    step.write_text(STEP_SCRIPT)
    out, trace = tmp_path / "prof.json", tmp_path / "prof.json.gz"
    argv = list(sys.argv)
    code = torchprof.main(["--out", str(out), "--trace", str(trace), str(step)])
    assert code == 0
    assert sys.argv == argv  # the script's argv was put back
    # kineto's own two lines (from C++, on fd 2), in the documented shape, and one line more
    err = capfd.readouterr().err
    usdt = [line for line in err.splitlines() if USDT_LINE.match(line)]
    assert [line.rsplit(" ", 1)[1] for line in usdt] == ["profiler_start", "profiler_stop"]
    assert _without_usdt(err) == [f"torchprof: 4 CPU ops, 1 ranges -> {out} (trace: {trace})"]

    doc = _load(out)
    assert doc["device_type"] == "cpu" and doc["kernels_are"] == "cpu ops"
    assert doc["activities"] == ["cpu"]  # this machine's torch sees no GPU
    dev = doc["device"]  # labcommon's description, as the other scripts give it
    assert dev["type"] == "cpu" and dev["l2_bytes"] == _sysfs_last_level_cache()
    kernels = {k["name"]: k for k in doc["kernels"]}
    # the user's range is a range only; the ops it holds are kernels, counted once each
    # (aten::matmul's callees, aten::mm and the like, are not listed again)
    assert set(kernels) == {"aten::ones", "aten::mul_", "aten::matmul", "aten::relu"}
    assert kernels["aten::ones"]["instances"] == 2  # outside the range
    assert all(kernels[k]["instances"] == 3 for k in ("aten::mul_", "aten::matmul", "aten::relu"))
    assert [r["name"] for r in doc["nvtx"]] == ["step"]
    assert doc["nvtx"][0]["instances"] == 3
    inside = {r["kernel_name"]: r for r in doc["nvtx_kernels"] if r["range_name"] == "step"}
    assert set(inside) == {"aten::mul_", "aten::matmul", "aten::relu"}
    assert all(r["kernel_instances"] == 3 and r["range_instances"] == 3 for r in inside.values())
    # self time beside total time: an op's own time, without its callees
    assert set(doc["self_ns"]) == set(kernels)
    for name, row in kernels.items():
        assert 0 < doc["self_ns"][name] <= row["total_ns"] + 1.0
    assert doc["self_ns"]["aten::matmul"] < kernels["aten::matmul"]["total_ns"]  # mm is a callee
    # the tables are what nsightlab reads as nsys's
    report = report_from_torch(doc, str(out))
    assert {k.name for k in report.kernels} == set(kernels)
    assert [r.name for r in report.nvtx] == ["step"]

    # the profiler's own trace, gzipped, for Perfetto
    assert doc["trace"] == "prof.json.gz"
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    cats = {e["name"]: e.get("cat") for e in events if e.get("name") in ("step", "aten::mul_")}
    assert cats == {"step": "user_annotation", "aten::mul_": "cpu_op"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prof.json", "prof.json.gz", "step.py"]


def test_torchprof_profiler_steps_are_ranges() -> None:
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, schedule

    torchprof = _import_script(TORCHPROF)
    with (
        pytest.warns(UserWarning),  # torch warns about a schedule without warm-up
        profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=0, warmup=0, active=2, repeat=1),
            acc_events=True,
        ) as prof,
    ):
        for _ in range(2):
            torch.ones(64).mul_(2.0)
            prof.step()
    events = list(prof.events())
    kernels, ranges, nvtx_kernels, self_ns = torchprof.collect(events, set(), False)
    assert [r["name"] for r in ranges] == ["ProfilerStep*"]
    assert ranges[0]["instances"] == 2
    assert {k["name"] for k in kernels} == {"aten::ones", "aten::mul_"} == set(self_ns)
    assert {(r["range_name"], r["kernel_name"]) for r in nvtx_kernels} == {
        ("ProfilerStep*", "aten::ones"),
        ("ProfilerStep*", "aten::mul_"),
    }
    assert torchprof.ran_on(events, set()) == "cpu"


@pytest.mark.slow
def test_torchprof_copied_alone_describes_the_device_itself(runs: dict[str, Any]) -> None:
    proc = runs["torchprof-alone"]
    assert proc.returncode == 0, proc.stderr
    doc = _load(runs["tmp"] / "alone" / "prof.json")
    assert doc["device_type"] == "cpu" and doc["trace"] is None
    dev = doc["device"]
    assert dev["type"] == "cpu" and dev["cuda"] is None and dev["torch"]
    assert dev["described_by"] == "torchprof.py alone (labcommon.py was not beside it)"
    assert [r["name"] for r in doc["nvtx"]] == ["step"]
