"""profile: lesson1 for real on the CPU under torch.profiler, and the nsys command sequence
driven through a clearly named stand-in for the nsys binary (tests/standins/nsys)."""

from __future__ import annotations

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


def test_nsys_command_sequence_copy_back_and_store(capsys: pytest.CaptureFixture[str], nsl_home: Path, nsys_standin: None, scratch: Path) -> None:
    r = run_cli(capsys, "profile", "lesson1", "--local", "--json", *SMALL)
    assert r.code == 0, r
    assert list(scratch.iterdir()) == []  # the work folder went once the run was stored
    data = json.loads(r.out)
    assert data["profiler"] == "nsys" and data["versions"]["nsys"].startswith("2024.6.1")
    run = _run_dir(nsl_home)
    raw = run / "raw"
    # the replayed real kernel summary came back byte for byte
    assert (raw / "nsightlab_cuda_gpu_kern_sum.csv").read_bytes() == FIXTURE03.read_bytes()
    assert (raw / "nsightlab.nsys-rep").is_file() and (raw / "lesson1.json").is_file()
    assert len(data["kernels"]) == 113
    ranges = {x["name"]: x for x in data["ranges"]}
    assert "nvtx_kern_sum" in data["timing_source"]
    assert "vectorized_elementwise_kernel" in ranges["memory_bound_scale"]["kernel_full"]
    assert "cutlass" in ranges["compute_bound_gemm"]["kernel_full"]
    work = json.loads((raw / "lesson1.json").read_text())
    scale_work = next(w for w in work["ranges"] if w["name"] == "memory_bound_scale")
    assert ranges["memory_bound_scale"]["rates"]["seconds_per_call"] == pytest.approx(scale_work["seconds_per_call"], rel=1e-6)
    assert "raw/nsightlab.nsys-rep" in data["files"]


def test_nsys_missing_is_exit_6_with_the_way_forward(capsys: pytest.CaptureFixture[str], no_nsys: None) -> None:
    r = run_cli(capsys, "profile", "lesson1", "--local")
    assert r.code == 6
    assert "nsys (Nsight Systems) is not installed on this machine" in r.err and "--profiler torch" in r.err
    assert r.err.count("\n") == 1


def test_stale_export_warning_is_an_error(capsys: pytest.CaptureFixture[str], nsys_standin: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NSIGHTLAB_TEST_NSYS", "stale")
    r = run_cli(capsys, "profile", "lesson1", "--local", *SMALL)
    assert r.code == 6, r
    assert "older" in r.err.lower() or "stale" in r.err.lower()


def test_qdstrm_only_install_is_explained(capsys: pytest.CaptureFixture[str], nsys_standin: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NSIGHTLAB_TEST_NSYS", "qdstrm")
    r = run_cli(capsys, "profile", "lesson1", "--local", *SMALL)
    assert r.code == 6, r
    assert "nsys-rep" in r.err and "importer" in r.err.lower()


def test_failing_script_is_exit_6(capsys: pytest.CaptureFixture[str], tmp_path: Path, nsys_standin: None, scratch: Path) -> None:
    script = tmp_path / "boom.py"
    script.write_text("import sys\nprint('about to fail', file=sys.stderr)\nsys.exit(3)\n")
    r = run_cli(capsys, "profile", str(script), "--local")
    assert r.code == 6 and "exit 3" in r.err and "about to fail" in r.err
    assert list(scratch.iterdir()) == []  # a failed run leaves no work folder either


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
        (["profile", "--serving", "--local", "vllm", "--", "serve", "m"], "the server's command goes after --, and nothing else"),
        (["profile", "--serving", "--local", "--delay", "5", "--", "vllm", "serve"], "--delay needs --duration"),
        (["profile", "--local", "--duration", "5", "lesson1"], "--delay and --duration go with --serving"),
        (["profile", "--serving", "--local", "--duration", "0", "--", "vllm", "serve"], "--duration '0' must be at least 1"),
        (["profile", "--serving", "--local", "--profiler", "torch", "--", "vllm", "serve"], "--serving profiles under nsys only"),
    ],
)
def test_serving_arguments_are_unambiguous(capsys: pytest.CaptureFixture[str], argv: list[str], words: str) -> None:
    r = run_cli(capsys, *argv)
    assert r.code == 2, r
    assert words in r.err.strip().splitlines()[-1]
