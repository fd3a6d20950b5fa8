"""profile: lesson1 for real on the CPU under torch.profiler, and the nsys command sequence
driven through a clearly named stand-in for the nsys binary (tests/standins/nsys)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
from clirun import run_cli

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
FIXTURE03 = HERE / "fixtures" / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv"
SMALL = ["--", "--scale-log2", "16", "--gemm-n", "64"]


pytestmark = pytest.mark.usefixtures("nsl_home")


@pytest.fixture
def nsys_standin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{HERE / 'standins'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NSIGHTLAB_TEST_NSYS_FIXTURE", str(FIXTURE03))
    monkeypatch.delenv("NSIGHTLAB_TEST_NSYS", raising=False)


@pytest.fixture
def no_nsys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # a PATH with the usual tools but certainly no nsys
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("ls", "sh"):
        src = Path("/bin") / tool
        (bindir / tool).symlink_to(src)
    monkeypatch.setenv("PATH", str(bindir))


def _run_dir(home: Path) -> Path:
    runs = sorted((home / "runs").iterdir())
    assert len(runs) == 1
    return runs[0]


@pytest.mark.slow
def test_lesson1_under_torch_profiler_on_cpu(capsys: pytest.CaptureFixture[str], nsl_home: Path) -> None:
    r = run_cli(capsys, "profile", "lesson1", "--local", "--profiler", "torch", "--json", *SMALL)
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["profiler"] == "torch" and data["device_type"] == "cpu"
    by_name = {k["name"]: k for k in data["kernels"]}
    assert {"name", "instances", "total_ns", "avg_ns", "time_pct"} <= set(data["kernels"][0])
    # 3 warm-ups + 20 timed calls of each op in the kernel table ...
    assert by_name["aten::mul_"]["instances"] == 23 and by_name["aten::matmul"]["instances"] == 23
    ranges = {r["name"]: r for r in data["ranges"]}
    # ... but the rates come from the 20 inside the timed ranges
    assert ranges["memory_bound_scale"]["kernel_instances"] == 20
    scale = ranges["memory_bound_scale"]["rates"]
    assert scale["bytes_per_call"] == 2 * (1 << 16) * 4  # float32 on the CPU: read + write
    assert scale["bytes_per_s"] == pytest.approx(scale["bytes_per_call"] / scale["seconds_per_call"])
    gemm = ranges["compute_bound_gemm"]["rates"]
    assert gemm["flops_per_call"] == 2 * 64**3
    assert "torch.profiler" in data["timing_source"]
    assert any("23" in line and "20" in line for line in data["lesson"])
    run = _run_dir(nsl_home)
    assert (run / "raw" / "torchprof.json").is_file() and (run / "raw" / "lesson1.json").is_file()
    stored = json.loads((run / "result.json").read_text())
    assert stored["run_id"] == data["run_id"] == json.loads((run / "meta.json").read_text())["id"]
    # where the ops ran, from the profile; the trace kept; self time beside total time
    assert data["kernels_are"] == "cpu ops" and data["activities"] == ["cpu"] and data["device_requested"] == "auto"
    assert data["trace"] == "raw/trace.json.gz" and (run / "raw" / "trace.json.gz").is_file()
    assert 0 < by_name["aten::matmul"]["self_ns"] < by_name["aten::matmul"]["total_ns"]
    assert "USDT:" not in r.err and "profiler_start" in (run / "raw" / "profile.log").read_text()


@pytest.mark.slow
def test_human_output_marks_torch_profiler(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "profile", "lesson1", "--local", "--profiler", "torch", *SMALL)
    assert r.code == 0, r
    assert "torch.profiler" in r.out and "Timed ranges" in r.out
    assert "memory_bound_scale" in r.out and "aten::mul_" in r.out


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This machine's temporary folder for the test: where a --local run's work folder goes."""
    import tempfile

    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_nsys_command_sequence_copy_back_and_store(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, nsys_standin: None, scratch: Path
) -> None:
    r = run_cli(capsys, "profile", "lesson1", "--local", "--json", *SMALL)
    assert r.code == 0, r
    assert list(scratch.iterdir()) == []  # the work folder went once the run was stored
    data = json.loads(r.out)
    assert data["profiler"] == "nsys" and data["versions"]["nsys"].startswith("2024.6.1")
    # one `nsys export --type sqlite` instead of one `nsys stats` per table
    assert "nsys export --type sqlite --output" in r.err and "nsys stats" not in r.err
    run = _run_dir(nsl_home)
    raw = run / "raw"
    assert sorted(p.name for p in raw.iterdir()) == [
        "lesson1.json",
        "nsightlab.nsys-rep",
        "nsightlab.sqlite",
        "profile.log",
    ]
    assert (raw / "nsightlab.sqlite").read_bytes()[:16] == b"SQLite format 3\x00"
    assert data["nsys_input"] == "sqlite" and data["kernel_grouping"] == "demangled"
    # the stand-in's export holds the real kernel summary's 113 kernels, each its total time
    fixture = {row["Name"]: row for row in csv.DictReader(FIXTURE03.open(encoding="utf-8"))}
    assert len(data["kernels"]) == 113 and {k["name"] for k in data["kernels"]} == set(fixture)
    gemv = data["kernels"][0]
    assert gemv["total_ns"] == float(fixture[gemv["name"]]["Total Time (ns)"])
    ranges = {x["name"]: x for x in data["ranges"]}
    assert "nvtx_kern_sum" in data["timing_source"]
    assert "vectorized_elementwise_kernel" in ranges["memory_bound_scale"]["kernel_full"]
    assert "cutlass" in ranges["compute_bound_gemm"]["kernel_full"]
    work = json.loads((raw / "lesson1.json").read_text())
    scale_work = next(w for w in work["ranges"] if w["name"] == "memory_bound_scale")
    assert ranges["memory_bound_scale"]["kernel_instances"] == 20  # the timed calls, not the warm-ups
    # nsys times in whole nanoseconds: a call's time is the script's to a fraction of one
    assert ranges["memory_bound_scale"]["rates"]["seconds_per_call"] == pytest.approx(
        scale_work["seconds_per_call"], abs=1e-10
    )
    assert data["trace_summary"]["kernels"] == sum(k["instances"] for k in data["kernels"])
    assert data["steps"] is not None
    assert "raw/nsightlab.nsys-rep" in data["files"] and "raw/nsightlab.sqlite" in data["files"]
    # `analyze` takes the run as every command does: its id, a prefix of it, latest
    run_id = data["run_id"]
    for ref in (run_id, run_id[:3], "latest"):
        again = run_cli(capsys, "analyze", ref, "--json")
        assert again.code == 0, again
        stored, fresh = json.loads((run / "result.json").read_text()), json.loads(again.out)
        assert fresh.get("trace_notes") == stored.get("trace_notes"), (
            fresh.get("trace_notes"),
            stored.get("trace_notes"),
        )
        assert fresh == stored
    missing = run_cli(capsys, "analyze", "fedcba")
    assert (
        missing.code == 2
        and missing.err.strip()
        == "error: fedcba is neither a file nor a stored run (no run matches 'fedcba'). List them with `nsightlab "
        "runs`."
    )


def test_an_nsys_without_export_falls_back_to_stats_csv(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, nsys_standin: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSIGHTLAB_TEST_NSYS", "noexport")
    r = run_cli(capsys, "profile", "lesson1", "--local", "--json", *SMALL)
    assert r.code == 0, r
    assert "nsys export to SQLite did not work (Unknown command: export)" in r.err
    data = json.loads(r.out)
    assert data["nsys_input"] == "stats" and data["kernel_grouping"] is None
    raw = _run_dir(nsl_home) / "raw"
    # the replayed real kernel summary came back byte for byte
    assert (raw / "nsightlab_cuda_gpu_kern_sum.csv").read_bytes() == FIXTURE03.read_bytes()
    assert not (raw / "nsightlab.sqlite").exists()
    assert len(data["kernels"]) == 113 and "nvtx_kern_sum" in data["timing_source"]
    work = json.loads((raw / "lesson1.json").read_text())
    scale_work = next(w for w in work["ranges"] if w["name"] == "memory_bound_scale")
    ranges = {x["name"]: x for x in data["ranges"]}
    assert ranges["memory_bound_scale"]["rates"]["seconds_per_call"] == pytest.approx(
        scale_work["seconds_per_call"], rel=1e-6
    )


def test_nsys_missing_is_exit_6_with_the_way_forward(capsys: pytest.CaptureFixture[str], no_nsys: None) -> None:
    r = run_cli(capsys, "profile", "lesson1", "--local")
    assert r.code == 6
    assert r.err.count("\n") == 1
    # what fits this machine: install nsys here, or the same command under torch.profiler;
    # not an image (there is none here)
    assert r.err.strip() == (
        "error: nsys (Nsight Systems) is not installed on this machine. Install Nsight Systems here (`nsys` on "
        "PATH), or run the same tables under torch.profiler: `nsightlab profile lesson1 --local --profiler torch`."
    )
    decode = run_cli(capsys, "profile", "decode", "--local", "--preset", "tiny")
    assert decode.code == 6 and "image" not in decode.err and "Install Nsight Systems here" in decode.err, decode


def test_stale_export_warning_is_an_error(
    capsys: pytest.CaptureFixture[str], nsys_standin: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSIGHTLAB_TEST_NSYS", "noexport,stale")  # only `nsys stats` reuses an export
    r = run_cli(capsys, "profile", "lesson1", "--local", *SMALL)
    assert r.code == 6, r
    assert "older" in r.err.lower() or "stale" in r.err.lower()


def test_qdstrm_only_install_is_explained(
    capsys: pytest.CaptureFixture[str], nsys_standin: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSIGHTLAB_TEST_NSYS", "qdstrm")
    r = run_cli(capsys, "profile", "lesson1", "--local", *SMALL)
    assert r.code == 6, r
    assert "nsys-rep" in r.err and "importer" in r.err.lower()


def test_failing_script_is_exit_6(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nsys_standin: None, scratch: Path
) -> None:
    script = tmp_path / "boom.py"
    script.write_text("import sys\nprint('about to fail', file=sys.stderr)\nsys.exit(3)\n")
    r = run_cli(capsys, "profile", str(script), "--local")
    assert r.code == 6 and "exit 3" in r.err and "about to fail" in r.err
    assert list(scratch.iterdir()) == []  # a failed run leaves no work folder either


@pytest.mark.slow
def test_users_own_script_gets_kernel_table_without_rates(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    script = tmp_path / "mine.py"
    script.write_text(
        "import torch\nfrom torch.profiler import record_function\nx = torch.ones(1000)\n"
        "with record_function('memory_bound_scale'):\n    for _ in range(4):\n        x.add_(1)\n"
    )
    r = run_cli(capsys, "profile", str(script), "--local", "--profiler", "torch", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["script"] == "mine"
    add = next(k for k in data["kernels"] if k["name"] == "aten::add_")
    assert add["instances"] == 4
    assert data["ranges"][0]["rates"] is None and data["ranges"][0]["kernel_instances"] == 4
    assert any("no work description" in n for n in data["notes"])


def test_missing_script_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "profile", "nope.py", "--local")
    assert r.code == 2 and "no script 'nope.py'" in r.err


# ---------------------------------------------------------------------------- a server


def test_serving_options_are_those_vllms_guide_asks_for() -> None:
    from nsightlab.measure.profile import Serving, command_name

    both = ["--trace-fork-before-exec=true", "--cuda-graph-trace=node"]
    # by default the server's cudaProfilerStart/Stop (vLLM's /start_profile, /stop_profile) bound it
    assert Serving().nsys_options() == [*both, "--capture-range=cudaProfilerApi", "--capture-range-end=stop-shutdown"]
    # or a window of time, and no capture range then
    assert Serving(duration=20).nsys_options() == [*both, "--duration=20"]
    assert Serving(delay=60, duration=20).nsys_options() == [*both, "--delay=60", "--duration=20"]
    assert command_name(["vllm", "serve", "Qwen/Qwen2.5-0.5B"]) == "vllm-serve"
    assert command_name(["/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server"]) == "python3"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["profile", "--serving", "--local", "lesson1"], "the server's command goes after --"),
        (
            ["profile", "--serving", "--local", "vllm", "--", "serve", "m"],
            "the server's command goes after --, and nothing else",
        ),
        (["profile", "--serving", "--local", "--delay", "5", "--", "vllm", "serve"], "--delay needs --duration"),
        (["profile", "--local", "--duration", "5", "lesson1"], "--delay and --duration go with --serving"),
        (
            ["profile", "--serving", "--local", "--duration", "0", "--", "vllm", "serve"],
            "--duration '0' must be at least 1",
        ),
        (
            ["profile", "--serving", "--local", "--profiler", "torch", "--", "vllm", "serve"],
            "--serving profiles under nsys only",
        ),
    ],
)
def test_serving_arguments_are_unambiguous(capsys: pytest.CaptureFixture[str], argv: list[str], words: str) -> None:
    r = run_cli(capsys, *argv)
    assert r.code == 2, r
    assert words in r.err.strip().splitlines()[-1]


# ---------------------------------------------------------------------------- analyze: what a real nsys report holds

FIX = HERE / "fixtures" / "nsys"
BABELSTREAM = FIX / "01_nsys2024.2.3_stats_console_babelstream_a100.txt"
VECTOR_ADD = FIX / "06_nsys_stats_console_nvtx_osrt_api_kern_mem_a100.txt"
OLD_TORCHPROF = HERE / "data" / "torchprof_before_ranges_user_step_cpu.json"


def test_analyze_keeps_the_cuda_api_and_the_memory_operations(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "analyze", str(BABELSTREAM), "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    api = {a["name"]: a for a in data["cuda_api"]}
    assert [a["name"] for a in data["cuda_api"]][:2] == ["cudaDeviceSynchronize", "cudaMemcpy"]
    assert api["cudaMemcpy"] == {
        "name": "cudaMemcpy",
        "calls": 103,
        "total_ns": 106875399.0,
        "pct": 34.9,
        "avg_ns": 1037625.2,
    }
    assert len(api) == 6 and api["cudaMalloc"]["calls"] == 4
    # 103 device-to-host copies, with their bytes from the size summary (805.652 MB)
    assert data["memory_ops"] == [
        {
            "operation": "[CUDA memcpy Device-to-Host]",
            "kind": "dtoh",
            "count": 103,
            "total_ns": 66303506.0,
            "bytes": 805652000.0,
        }
    ]
    # there is no script here: no rates, and the reason with the way to get them
    assert data["timing_source"] == "none: no NVTX ranges" and data["ranges"] == []
    assert any('torch.cuda.nvtx.range("step")' in n and "range_push" in n and "range_pop" in n for n in data["notes"])
    assert data["device_type"] == "cuda" and data["kernels_are"] == "cuda kernels"
    text = run_cli(capsys, "analyze", str(BABELSTREAM))
    assert text.code == 0, text
    assert "CUDA API calls (time on the CPU), by total time" in text.out and "cudaDeviceSynchronize" in text.out
    assert (
        "Memory operations on the GPU" in text.out
        and "[CUDA memcpy Device-to-Host]    103        66.3         768" in text.out
    )
    # the copies take as long as the largest kernel, and the output says so
    assert (
        "note: memory operations (103 device-to-host copies) took 66.3 ms on the GPU: 1.14x the time of the "
        "largest kernel (add_kernel<double>, 58.2 ms)" in text.out
    )


def test_analyze_shows_nvtx_ranges_without_kernel_times_as_ranges(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "analyze", str(VECTOR_ADD), "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["cuda_api"][0]["name"] == "cudaMalloc" and data["cuda_api"][0]["pct"] == 96.9
    assert [(m["kind"], m["count"], m["total_ns"], m["bytes"]) for m in data["memory_ops"]] == [
        ("htod", 2, 2432.0, 0.0),
        ("dtoh", 1, 2336.0, 0.0),
    ]
    assert [(x["name"], x["calls"], x["range_ns"], x["gpu_ns"]) for x in data["ranges"]] == [
        ("Profile_Loop", 1, 3481709.0, None),
        ("Warmup", 1, 182472.0, None),
    ]
    assert data["timing_source"] == "none: no kernel times per NVTX range"
    assert any("nvtx_kern_sum" in n and "Profile_Loop, Warmup" in n for n in data["notes"])
    assert not any(n.startswith("memory operations") for n in data["notes"])  # 4.8 us beside a 1.8 ms kernel: no news
    text = run_cli(capsys, "analyze", str(VECTOR_ADD)).out
    assert "NVTX ranges" in text and "Profile_Loop      1       3.48" in text


def test_a_range_is_never_a_kernel_even_in_an_older_torchprof_file(capsys: pytest.CaptureFixture[str]) -> None:
    """torchprof.py before `kernels_are` listed a user's `record_function("step")` among the
    CPU ops, its time holding theirs (47.0%). nsightlab shows it as a range."""
    r = run_cli(capsys, "analyze", str(OLD_TORCHPROF), "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    names = [k["name"] for k in data["kernels"]]
    assert "step" not in names and set(names) == {
        "aten::mul_",
        "aten::matmul",
        "aten::ones",
        "aten::relu",
        "aten::randn",
    }
    assert sum(k["time_pct"] for k in data["kernels"]) == pytest.approx(
        100.0, abs=0.3
    )  # without the range's double count
    old = {k["name"]: k for k in json.loads(OLD_TORCHPROF.read_text())["kernels"]}
    assert [(x["name"], x["calls"], x["range_ns"]) for x in data["ranges"]] == [("step", 3, old["step"]["total_ns"])]
    assert data["device_type"] == "cpu" and data["kernels_are"] == "cpu ops"
    assert any(n.startswith("step: a range, not a kernel") for n in data["notes"])
    assert data["timing_source"] == "none: no op times per labelled range"
    text = run_cli(capsys, "analyze", str(OLD_TORCHPROF)).out
    assert "CPU ops, by total time" in text and "Labelled ranges (record_function)" in text


def test_nsys_device_comes_from_the_gpu_trace(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A folder of `nsys stats` CSV exports: a real kernel summary (fixture 03) beside a real
    GPU trace (tests/data/traces, an RTX 5000 Ada laptop GPU; two runs put side by side):
    the device is the trace's Device column, nothing from outside the report."""
    trace = HERE / "data" / "traces" / "vernier_nsys2026.3.1_rtx5000ada_cuda_gpu_trace.csv"
    (tmp_path / "run_cuda_gpu_kern_sum.csv").write_bytes(FIXTURE03.read_bytes())
    (tmp_path / "run_cuda_gpu_trace.csv").write_bytes(trace.read_bytes())
    r = run_cli(capsys, "analyze", str(tmp_path), "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert (data["device_name"], data["device_type"]) == ("NVIDIA RTX 5000 Ada Generation Laptop GPU", "cuda")


def test_a_lesson1_record_alone_names_no_profiler(capsys: pytest.CaptureFixture[str]) -> None:
    """The script's JSON read alone: no profiler ran, so neither "Nsight Systems" nor an empty
    kernel table is shown; the rates come from the script's own timing."""
    record = Path(__file__).resolve().parent / "data" / "lesson1_cpu_float32_epyc-2c-l3-32mib.json"
    shown = run_cli(capsys, "analyze", str(record))
    assert shown.code == 0, shown
    assert "Nsight Systems" not in shown.out and "by total time" not in shown.out
    assert "no profiler" in shown.out.splitlines()[0] and "memory_bound_scale" in shown.out
    data = json.loads(run_cli(capsys, "analyze", str(record), "--json").out)
    assert data["profiler"] == "none" and data["kernels"] == [] and data["timing_source"] == "the script's own timing"
