"""`nsightlab profile decode` for real: lab_scripts/decode.py's tiny preset on this CPU
under torch.profiler (one run, reused by many tests), in the emulated lab pod under the
nsys stand-in (tests/standins/nsys builds the trace exports from the script's own step
times, see tracebuild.decode_exports), then `runs`, `runs show`, `analyze` and `report`
on the stored runs."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from conftest import STG_CONTEXT
from kubesim import KubeSim
from tracebuild import decode_kernels

from nsightlab.cli import main

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

HERE = Path(__file__).resolve().parent
FIXTURE03 = HERE / "fixtures" / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv"
TOKENS, PROMPT = 5, 6
SMALL = [
    "--preset",
    "tiny",
    "--tokens",
    str(TOKENS),
    "--prompt-len",
    str(PROMPT),
    "--batch",
    "1,2",
    "--",
    "--warmup",
    "1",
]
CONTRACT = {"kind", "run_id", "device", "model", "modes", "trace", "batch_sweep", "lesson", "notes"}
MODEL = {"preset", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "tied", "params", "weight_bytes", "dtype"}
STEPS = {
    "source",
    "step_range",
    "count",
    "step_ms",
    "kernels_per_step",
    "gpu_busy_pct",
    "idle_ms_per_step",
    "top_kernels",
    "floor",
    "verdict",
    "phase",
    "host_ms",
    "gpu_span_ms",
    "gpu_busy_ms",
    "kernel_busy_pct",
    "memops_per_step",
    "memops_ms_per_step",
    "graph_replays_per_step",
    "syncs_per_step",
    "syncs_ms_per_step",
    "other_busy_ms_per_step",
    "layer_period",
    "step_period",
}
NS, OWNER = "ml-lab", "ana"
POD = f"nsight-lab-{OWNER}"


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def torch_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One real run: `profile decode --local --profiler torch` of the tiny preset."""
    home = tmp_path_factory.mktemp("decode") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NSIGHTLAB_HOME", str(home))
        mp.setenv("COLUMNS", "200")
        mp.setenv("OMP_NUM_THREADS", "1")  # one thread: a shared 2-core machine stalls with two
        mp.delenv("NSIGHTLAB_CONFIG", raising=False)
        code, out, err = _cli("profile", "decode", "--local", "--profiler", "torch", "--json", *SMALL)
        assert code == 0, err[-3000:]
        (run,) = sorted((home / "runs").iterdir())
        yield {"home": home, "data": json.loads(out), "err": err, "run": run, "mp": mp}


@pytest.fixture
def in_home(torch_run: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NSIGHTLAB_HOME", str(torch_run["home"]))
    monkeypatch.setenv("COLUMNS", "200")
    home: Path = torch_run["home"]
    return home


# ------------------------------------------------------------ the torch.profiler run


@pytest.mark.slow
def test_the_json_is_the_contract(torch_run: dict[str, Any]) -> None:
    data = torch_run["data"]
    assert set(data) == CONTRACT and data["kind"] == "decode"
    assert set(data["model"]) == MODEL and data["model"]["preset"] == "tiny" and data["model"]["params"] == 217_664
    assert data["device"].startswith("cpu (")
    assert [(m["mode"], m["batch"]) for m in data["modes"]] == [("eager", 1), ("eager", 2)]
    for m in data["modes"]:
        assert set(m) == {"mode", "batch", "tokens_per_s", "steps"} and set(m["steps"]) == STEPS
        st = m["steps"]
        assert st["source"] == "record_function" and st["step_range"] == "decode_step" and st["count"] == TOKENS
        assert set(st["step_ms"]) == {"median", "p90", "min", "max"}
        assert set(st["idle_ms_per_step"]) == {"between_kernels", "before_first", "after_last", "waiting_for_host"}
        assert st["phase"] == "decode" and st["host_ms"] is not None and st["memops_per_step"] == 0
        assert m["tokens_per_s"] == pytest.approx(m["batch"] * 1000 / st["step_ms"]["median"])
        assert st["top_kernels"] and set(st["top_kernels"][0]) == {"name", "short_name", "kind", "ms_per_step", "pct"}
        assert st["floor"] is None  # no sweep of this CPU in the store, and a CPU has no spec
        assert set(st["verdict"]) == {"kind", "text", "next_step", "thresholds"}
    assert set(data["trace"]) == {"span_ms", "gpu_busy_pct", "kernels", "streams", "kernel_busy_pct", "memops"}
    assert [set(p) for p in data["batch_sweep"]] == [
        {"batch", "step_ms", "tokens_per_s", "predicted_tokens_per_s", "bound"}
    ] * 2
    assert any("no floor" in n and "nsightlab sweep --local --device cpu" in n for n in data["notes"])
    assert "graphs mode skipped: CUDA graphs need a GPU (this run is on the CPU)" in data["notes"]
    assert any("top-level CPU ops" in n for n in data["notes"])


def test_steps_are_the_traces_decode_step_ranges(torch_run: dict[str, Any]) -> None:
    """Read back from the stored Chrome trace: each step's time is its range's duration."""
    run = torch_run["run"]
    events = json.loads(gzip.decompress((run / "raw" / "trace.json.gz").read_bytes()))["traceEvents"]
    steps = sorted(
        (e for e in events if e.get("cat") == "user_annotation" and e["name"] == "decode_step"), key=lambda e: e["ts"]
    )
    assert len(steps) == 2 * TOKENS
    for k, mode in enumerate(torch_run["data"]["modes"]):
        durations = sorted(float(e["dur"]) / 1e3 for e in steps[k * TOKENS : (k + 1) * TOKENS])
        assert mode["steps"]["step_ms"]["median"] == pytest.approx(statistics.median(durations), abs=1e-5)
        assert mode["steps"]["step_ms"]["max"] == pytest.approx(durations[-1], abs=1e-5)


def test_the_run_is_stored(torch_run: dict[str, Any]) -> None:
    run = torch_run["run"]
    assert sorted(p.name for p in (run / "raw").iterdir()) == [
        "decode.json",
        "profile.log",
        "torchprof.json",
        "trace.json.gz",
    ]
    log = (run / "raw" / "profile.log").read_text()
    assert "decode.py: wrote" in log or "decode: wrote" in log  # the output as it came
    assert "profiler_stop" in log  # library noise stays in the raw log, out of the terminal
    assert "profiler_stop" not in torch_run["err"]
    meta = json.loads((run / "meta.json").read_text())
    assert (meta["kind"], meta["name"], meta["dtype"], meta["target"]) == ("decode", "tiny", "float32", "this machine")
    assert (meta["device_type"], meta["device_requested"], meta["gpu"]) == ("cpu", "auto", None)
    assert meta["headline"].startswith("eager ") and "ms/step" in meta["headline"] and "idle" in meta["headline"]
    assert meta["command"][:5] == ["nsightlab", "profile", "decode", "--profiler", "torch"]
    assert json.loads((run / "result.json").read_text()) == torch_run["data"]
    timeline = json.loads((run / "timeline.json").read_text())
    assert [(t["mode"], t["batch"], t["ops_are"]) for t in timeline["timelines"]] == [
        ("eager", 1, "cpu"),
        ("eager", 2, "cpu"),
    ]
    first = timeline["timelines"][0]["timeline"]
    own = [o for o in first["ops"] if o["own"]]
    assert own and all(0 <= o["start_ns"] <= o["end_ns"] <= first["window_ns"] for o in own)
    # the script's own timing went with it
    record = json.loads((run / "raw" / "decode.json").read_text())
    assert [len(m["step_seconds"]) for m in record["modes"]] == [TOKENS, TOKENS]


def test_people_see_cpu_ops(torch_run: dict[str, Any], in_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "runs", "show", torch_run["data"]["run_id"])
    assert r.code == 0, r
    for text in (
        "Decode: tiny",
        "Per mode and batch",
        "OPS/STEP",
        "CPU BUSY",
        "IDLE BETWEEN",
        "Top CPU ops of the median step",
        "Verdict",
        "launch-bound at >= 30% idle",
        "host-bound at >= 30% waiting for the host",
        "Batch sweep",
    ):
        assert text in r.out, text
    listing = run_cli(capsys, "runs", "--json")
    (line,) = json.loads(listing.out)["runs"]
    assert (line["kind"], line["device_type"]) == ("decode", "cpu") and line["device"].startswith("cpu (")
    assert line["headline"].startswith("eager ")
    r = run_cli(capsys, "runs", "--kind", "decode")
    assert "decode" in r.out and "ms/step" in r.out


def test_analyze_the_run_its_raw_folder_and_its_trace(
    torch_run: dict[str, Any], in_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = torch_run["run"]
    stored = json.loads(run_cli(capsys, "analyze", str(run), "--json").out)
    assert stored == torch_run["data"]
    again = json.loads(run_cli(capsys, "analyze", str(run / "raw"), "--json").out)
    assert again["modes"] == torch_run["data"]["modes"] and again["run_id"] is None
    trace = json.loads(run_cli(capsys, "analyze", str(run / "raw" / "trace.json.gz"), "--json").out)
    assert trace["kind"] == "trace" and trace["device"] == "cpu" and trace["trace"] == torch_run["data"]["trace"]
    for g, m in zip(trace["steps"], torch_run["data"]["modes"], strict=True):
        assert g["group"] == f"mode:eager > batch:{m['batch']}"
        assert {
            k: g[k] for k in ("step_ms", "kernels_per_step", "gpu_busy_pct", "idle_ms_per_step", "top_kernels")
        } == {
            k: m["steps"][k] for k in ("step_ms", "kernels_per_step", "gpu_busy_pct", "idle_ms_per_step", "top_kernels")
        }
    r = run_cli(capsys, "analyze", str(run), "--step-range", "decode_step", "--json")
    assert r.code == 0  # re-read from raw/: the same steps, found by the option (`source` says so)
    named = json.loads(r.out)["modes"]
    assert [m["steps"]["source"] for m in named] == ["step-range"] * len(named)
    for m in named:
        m["steps"]["source"] = "record_function"
    assert named == torch_run["data"]["modes"]


def test_report_draws_one_step_and_the_batch_sweep(
    torch_run: dict[str, Any], in_home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run_id = torch_run["data"]["run_id"]
    out = tmp_path / "rep"
    r = run_cli(capsys, "report", run_id, "--out", str(out), "--json")
    assert r.code == 0, r
    files = json.loads(r.out)
    assert [f["key"] for f in files["figures"]] == [f"decode-steps-{run_id}", f"decode-batch-{run_id}"]
    for f in files["figures"]:
        assert Path(f["png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and Path(f["svg"]).is_file()
    md = (out / "report.md").read_text()
    assert "## Decode: where a token's time goes" in md and "| MODE | BATCH | STEP (" in md and "Verdict:" in md
    assert f"](decode-steps-{run_id}.png)" in md and f"](decode-batch-{run_id}.png)" in md
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "Top CPU ops of the median step" in html
    # the timeline figure holds a bar for every op of the median step
    from nsightlab.analysis.decode_models import DecodeResult, DecodeTimelines
    from nsightlab.present.figures import decode_steps_figure

    data = DecodeTimelines.model_validate_json((torch_run["run"] / "timeline.json").read_text())
    plot = decode_steps_figure(DecodeResult.model_validate(torch_run["data"]), data, "run x")
    assert plot is not None
    (ax,) = [a for a in plot.figure.axes if a.get_title(loc="left")]  # one mode at the smallest batch
    bars = sum(len(c.get_paths()) for c in ax.collections if (c.get_gid() or "").startswith("ops-eager"))
    assert bars == len(data.timelines[0].timeline.ops)
    assert "eager, batch 1" in ax.get_title(loc="left")


# ------------------------------------------------------------------ the device rule


def test_a_gpu_asked_for_and_not_seen_is_exit_6(capsys: pytest.CaptureFixture[str], nsl_home: Path) -> None:
    """decode.py stops with its exit code 3 when torch cannot see the GPU asked for; that
    is one line and exit 6 here, and no run is stored. In the lab pod `auto` asks for it."""
    from nsightlab.measure.decode_profile import DecodeOptions
    from nsightlab.measure.device import plan_device
    from nsightlab.measure.targets import LocalTarget, Where

    pod = Where(LocalTarget(), {}, wants_gpu=True, place="in the pod")
    here = Where(LocalTarget(), {})
    assert DecodeOptions(preset="tiny").script_args(plan_device(pod, "auto"))[:4] == [
        "--device",
        "cuda",
        "--preset",
        "tiny",
    ]
    assert DecodeOptions().script_args(plan_device(here, "auto"))[:2] == ["--device", "auto"]
    assert DecodeOptions().script_args(plan_device(pod, "cpu"))[:2] == ["--device", "cpu"]
    r = run_cli(capsys, "profile", "decode", "--local", "--profiler", "none", "--device", "cuda", "--preset", "tiny")
    assert r.code == 6, r
    assert "error: torch on this machine cannot see the GPU: " in r.err and "--device cpu" in r.err
    assert r.err.strip().splitlines()[-1].startswith("error: ") and not (nsl_home / "runs").exists()


# -------------------------------------------------------------- the lab pod, nsys


@pytest.fixture
def pod_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kubeconfig: Path) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("NSIGHTLAB_HOME", str(home))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("COLUMNS", "200")
    config = tmp_path / "config.yaml"
    config.write_text(
        f"clusters:\n  stg:\n    context: {STG_CONTEXT}\n    namespace: {NS}\n"
        f'lab:\n  image: "registry.example.com/triton-vllm-container:1.0-1"\n  owner: "{OWNER}"\n'
    )
    monkeypatch.setenv("NSIGHTLAB_CONFIG", str(config))
    return home


@pytest.mark.slow
def test_in_the_pod_under_nsys(capsys: pytest.CaptureFixture[str], pod_home: Path, sim: KubeSim) -> None:
    r = run_cli(capsys, "create", "--context", "stg", "--yes", "--json")
    assert r.code == 0, r
    standin = (
        (HERE / "standins" / "nsys").read_text().replace("@FIXTURE@", str(FIXTURE03)).replace("@TESTS@", str(HERE))
    )
    sim.put_tool(NS, POD, "nsys", standin)
    # measured on the CPU on purpose (`auto` in the pod would insist on its GPU)
    r = run_cli(capsys, "profile", "decode", "--device", "cpu", "--json", *SMALL)
    assert r.code == 0, r
    data = json.loads(r.out)
    (run,) = sorted((pod_home / "runs").iterdir())
    raw = sorted(p.name for p in (run / "raw").iterdir())
    for report in (
        "cuda_gpu_trace",
        "nvtx_pushpop_trace",
        "nvtx_gpu_proj_trace",
        "cuda_api_trace",
        "cuda_gpu_kern_sum",
    ):
        assert f"nsightlab_{report}.csv" in raw, raw
    assert "nsightlab.nsys-rep" in raw and "decode.json" in raw
    meta = json.loads((run / "meta.json").read_text())
    assert (meta["target"], meta["context"], meta["pod"], meta["kind"]) == (
        f"pod {NS}/{POD}",
        STG_CONTEXT,
        POD,
        "decode",
    )
    assert "--device" in meta["command"] and "cpu" in meta["command"]
    # the stand-in's trace: each step as long as the script timed it, its kernels filling
    # 55% of it (tracebuild.decode_exports), on an H100 whose spec gives the floor
    record = json.loads((run / "raw" / "decode.json").read_text())
    k = len(decode_kernels(record["model"]["layers"]))
    assert data["device"] == "NVIDIA H100 80GB HBM3"
    for m, entry in zip(data["modes"], record["modes"], strict=True):
        st = m["steps"]
        assert st["source"] == "nvtx" and st["count"] == TOKENS and st["kernels_per_step"] == k
        seconds = sorted(entry["step_seconds"])  # the median step: the lower middle one
        assert st["step_ms"]["median"] == pytest.approx(seconds[(len(seconds) - 1) // 2] * 1e3, abs=1e-5)
        assert st["gpu_busy_pct"] == pytest.approx(55.0, abs=0.1)
        assert st["verdict"]["kind"] == "launch-bound" and "idle 45% of the step" in st["verdict"]["text"]
        assert st["floor"]["basis"] == "spec" and st["floor"]["bytes_per_step"] == entry["bytes_per_step_floor"]
    # the batch where decode stops being memory-bound, from two measured batches' figures
    e1, e2 = record["modes"]
    s = (e2["bytes_per_step_floor"] - e1["bytes_per_step_floor"]) / (e2["batch"] - e1["batch"])
    w = e1["bytes_per_step_floor"] - s * e1["batch"]
    f = e1["flops_per_step"] / e1["batch"]
    ridge = 67.0 / 3.35  # the H100's FP32 peak (the run is float32) over its bandwidth
    crossing = ridge * w / (f - ridge * s)
    assert any(f"stops being memory-bound at batch {int(-(-crossing // 1))} " in line for line in data["lesson"]), data[
        "lesson"
    ]
    assert os.environ.get("NSIGHTLAB_TEST_TESTS") is None  # the pod found tracebuild through @TESTS@
