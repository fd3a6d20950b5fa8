"""Where a token's time goes, without running anything: the decode result built from a
recorded run of decode.py on this CPU (its JSON and its real torch.profiler trace) and
from nsys exports built in nsys's exact formats (tracebuild), the floor, the verdict and
the roofline against independent derivations, and `analyze` on every input kind."""

from __future__ import annotations

import gzip
import json
import math
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from tracebuild import (
    API_HEADER,
    DEVICE,
    GEMV,
    GPU_TRACE_HEADER,
    PUSHPOP_HEADER,
    annotation,
    api_row,
    decode_exports,
    decode_kernels,
    kernel_row,
    pushpop_row,
    write_csv,
    write_kineto,
    x_event,
)

from nsightlab.analysis import steps as steps_mod
from nsightlab.analysis.decode_models import (
    Bandwidth,
    DecodeResult,
    GroupSteps,
    device_name_of,
)
from nsightlab.analysis.decode_result import build_decode, crossover_batch, group_key, roofline_curve
from nsightlab.analysis.peaks import peak_tflops, spec_bandwidth
from nsightlab.analysis.steps import analyze_kineto
from nsightlab.analysis.verdicts import LAUNCH_BOUND_IDLE_PCT, NEAR_FLOOR_RATIO
from nsightlab.parse.records.decode_record import load_decode_record
from nsightlab.specs.gpus import lookup

DATA = Path(__file__).parent / "data"
TRACES = DATA / "traces"
RECORDED = DATA / "decode_cpu_tiny_xeon-2c.json"
RECORDED_TRACE = DATA / "decode_cpu_tiny_xeon-2c.pt.trace.json.gz"
TRACE_REPORTS = ["cuda_gpu_trace", "nvtx_pushpop_trace", "nvtx_gpu_proj_trace", "cuda_api_trace"]
H100 = "NVIDIA H100 80GB HBM3"
CONTRACT_STEPS = {
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

pytestmark = pytest.mark.usefixtures("nsl_home")


def _doc() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RECORDED.read_text())
    return data


def _two_modes() -> dict[str, Any]:
    """The recorded run with a graphs entry beside each eager one, as a GPU run has: the
    same work, steps 40% shorter (built data: the trace is built from it too)."""
    doc = _doc()
    eager = [e for e in doc["modes"] if e["mode"] == "eager"]
    graphs = []
    for e in eager:
        g = json.loads(json.dumps(e))
        g["mode"] = "graphs"
        g["step_seconds"] = [s * 0.6 for s in e["step_seconds"]]
        g["median_step_s"] = statistics.median(g["step_seconds"])
        g["ranges"]["mode"] = "mode:graphs"
        g["ranges"]["capture"] = "capture"
        graphs.append(g)
    doc["modes"] = eager + graphs
    return doc


def _exports(tmp_path: Path, doc: dict[str, Any], reports: list[str] = TRACE_REPORTS) -> Path:
    folder = tmp_path / "exports"
    folder.mkdir()
    decode_exports(doc, str(folder / "run"), reports)
    (folder / "decode.json").write_text(json.dumps(doc))
    return folder


# ------------------------------------------------------------- the recorded CPU run


def test_recorded_cpu_trace_cpu_ops_stand_in_for_kernels() -> None:
    """The real trace of decode.py on this CPU: top-level CPU ops, counted here by a brute
    force over the raw events, are the 'kernels' of each decode_step."""
    doc = _doc()
    raw = json.loads(gzip.decompress(RECORDED_TRACE.read_bytes()))["traceEvents"]
    ops = [e for e in raw if e.get("cat") == "cpu_op"]
    step_ranges = sorted(
        (e for e in raw if e.get("cat") == "user_annotation" and e["name"] == "decode_step"), key=lambda e: e["ts"]
    )

    def top_level_in(r: dict[str, Any]) -> list[dict[str, Any]]:
        inside = [o for o in ops if o["ts"] >= r["ts"] and o["ts"] <= r["ts"] + r["dur"]]
        return [
            o
            for o in inside
            if not any(
                p is not o
                and p["ts"] <= o["ts"]
                and o["ts"] + o["dur"] <= p["ts"] + p["dur"]
                and (p["dur"] > o["dur"] or p["ts"] < o["ts"])
                for p in inside
            )
        ]

    anatomy = analyze_kineto(RECORDED_TRACE)
    assert anatomy.ops_are == "cpu" and anatomy.attribution == "cpu-range"
    assert [g.group for g in anatomy.groups] == ["mode:eager > batch:1", "mode:eager > batch:2"]
    for k, g in enumerate(anatomy.groups):
        assert g.anatomy.count == doc["tokens"] and g.anatomy.source == "record_function"
        first = step_ranges[k * doc["tokens"]]  # the brute force is quadratic: one step a group
        assert g.steps[0].kernels == len(top_level_in(first))
        # figures per step are the median step's own: the lower middle step by time (for
        # an even count the mean of the two middle ones is no step at all)
        windows = sorted(t.window_ns for t in g.steps)
        median = g.steps[g.median_step]
        assert median.window_ns == windows[(len(windows) - 1) // 2]
        assert g.anatomy.kernels_per_step == median.kernels
        for t in g.steps:  # a CPU op runs inside its range: the window is the range
            assert (t.window_start_ns, t.window_end_ns) == (t.cpu_start_ns, t.cpu_end_ns)
            assert t.busy_ns + t.other_busy_ns + t.idle_ns == t.window_ns
        assert g.anatomy.step_ms.median == pytest.approx(median.window_ns / 1e6, abs=1e-6)
    assert any("top-level CPU ops" in n for n in anatomy.notes)


def test_recorded_run_as_a_decode_result() -> None:
    record = load_decode_record(RECORDED)
    assert record is not None
    build = build_decode(record, analyze_kineto(RECORDED_TRACE), bandwidth=None, bandwidth_notes=["no floor here"])
    r = build.result
    assert r.device == "cpu (Intel(R) Xeon(R) Processor)"
    assert r.model.params == 217_664 and r.model.tied is True and r.model.weight_bytes == 870_656
    assert [(m.mode, m.batch) for m in r.modes] == [("eager", 1), ("eager", 2)]
    for m in r.modes:
        assert set(m.steps.model_dump()) == CONTRACT_STEPS
        assert m.tokens_per_s == pytest.approx(m.batch * 1000 / m.steps.step_ms.median)
        assert m.steps.floor is None and m.steps.verdict.kind in ("launch-bound", "busy")
        assert (
            f">= {LAUNCH_BOUND_IDLE_PCT:g}% idle" in m.steps.verdict.text
            and f"within {NEAR_FLOOR_RATIO:g}x" in m.steps.verdict.text
        )
        assert {k.kind for k in m.steps.top_kernels} >= {"gemm"}
    assert r.batch_sweep is not None and [p.batch for p in r.batch_sweep] == [1, 2]
    assert all(p.predicted_tokens_per_s is None for p in r.batch_sweep)
    assert any("CPU" in line for line in r.lesson)
    assert "graphs mode skipped: CUDA graphs need a GPU (this run is on the CPU)" in r.notes
    assert build.headline is not None and build.headline.startswith("eager ") and "idle" in build.headline
    assert [t.mode for t in build.timelines.timelines] == ["eager", "eager"]


def test_floor_verdict_and_roofline_on_recorded_data() -> None:
    """The recorded run against a measured bandwidth: the floor is bytes / bandwidth, the
    ratio is the step over it, and the text prints the thresholds it applied."""
    record = load_decode_record(RECORDED)
    assert record is not None
    bw = Bandwidth(tbps=0.01, basis="measured", label="measured DRAM plateau of sweep run abc123 (float32)")
    r = build_decode(record, None, bandwidth=bw).result
    entry = record.modes[0]
    m = r.modes[0]
    assert m.steps.source == "script" and m.steps.kernels_per_step is None and m.steps.idle_ms_per_step is None
    assert m.steps.step_ms.median == pytest.approx(statistics.median(entry.step_seconds) * 1e3, abs=1e-6)
    f = m.steps.floor
    assert f is not None and f.basis == "measured" and f.bytes_per_step == entry.bytes_per_step_floor
    assert f.floor_ms == pytest.approx(entry.bytes_per_step_floor / 0.01e12 * 1e3, rel=1e-6)
    assert f.pct_of_floor == pytest.approx(100 * m.steps.step_ms.median / f.floor_ms, abs=0.1)
    assert (
        m.steps.verdict.kind == "no-trace"
        and "the floor" in m.steps.verdict.text
        and "thresholds" in m.steps.verdict.text
    )
    assert r.batch_sweep is not None
    for p, e in zip(r.batch_sweep, record.modes, strict=True):
        assert p.predicted_tokens_per_s == pytest.approx(e.batch / (e.bytes_per_step_floor / 0.01e12))
        assert p.bound is None  # no compute peak for a CPU: the memory floor alone
    assert any("0.01" in line and "measured DRAM plateau of sweep run abc123" in line for line in r.lesson)


def test_crossover_batch_against_a_two_point_solve() -> None:
    """The batch where FLOP/byte reaches the ridge, from the model's per-batch figures,
    equals the solve from two measured batches' bytes and FLOPs (no model formula)."""
    record = load_decode_record(RECORDED)
    assert record is not None
    e1, e2 = record.modes
    s = (e2.bytes_per_step_floor - e1.bytes_per_step_floor) / (e2.batch - e1.batch)
    w = e1.bytes_per_step_floor - s * e1.batch
    f = e1.flops_per_step / e1.batch
    assert e2.flops_per_step == pytest.approx(f * e2.batch)
    for ridge in (0.5, 1.0, 1.5):
        expected = ridge * w / (f - ridge * s) if f > ridge * s else None
        got = crossover_batch(e1, record.model, ridge)
        assert (got is None) == (expected is None)
        if expected is not None:
            assert got == pytest.approx(expected, rel=1e-9)
            b = expected  # FLOP per byte there is the ridge
            assert (f * b) / (w + s * b) == pytest.approx(ridge)
    # an untied model's step reads the batch's embedding rows: the same slope from its parts
    bw = Bandwidth(tbps=1.0, basis="spec", label="x", peak_tflops=1.0)
    curve = roofline_curve(e1, record.model, bw, 64)
    bounds = [p.bound for p in curve]
    cross = crossover_batch(e1, record.model, 1.0)
    assert cross is not None
    assert all(b == "memory" for p, b in zip(curve, bounds, strict=True) if p.batch < cross * 0.999)
    assert all(b == "compute" for p, b in zip(curve, bounds, strict=True) if p.batch > cross * 1.001)
    assert curve[0].batch == 1 and curve[-1].batch == pytest.approx(64)


def test_peaks_spec_bandwidth_names_and_groups() -> None:
    spec = lookup("NVIDIA H200")
    assert peak_tflops(spec, "bfloat16")[0] == spec.fp16_tensor_tflops  # type: ignore[union-attr]
    assert peak_tflops(spec, "float32")[0] == spec.fp32_tflops  # type: ignore[union-attr]
    assert peak_tflops(None, "bfloat16") == (None, None)
    bw = spec_bandwidth(f"{H100} (0)", "bfloat16")
    assert (
        bw is not None
        and bw.basis == "spec"
        and bw.tbps == pytest.approx(3.35)
        and bw.ridge == pytest.approx(989 / 3.35)
    )
    assert spec_bandwidth("Some Unknown GPU", "bfloat16") is None
    assert device_name_of(DEVICE) == H100 and device_name_of(None) is None
    assert group_key("mode:eager > batch:8") == ("eager", 8)
    assert group_key("mode:graphs") == ("graphs", None)
    assert group_key("dom:mode:eager > other > batch:32") == ("eager", 32)
    assert group_key(None) == (None, None)


# ------------------------------------------------------------- built nsys exports


def test_eager_and_graphs_side_by_side_from_built_exports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _two_modes()
    folder = _exports(tmp_path, doc)
    r = run_cli(capsys, "analyze", str(folder), "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["kind"] == "decode" and data["device"] == H100
    assert set(data) == {"kind", "run_id", "device", "model", "modes", "trace", "batch_sweep", "lesson", "notes"}
    k = len(decode_kernels(doc["model"]["layers"]))
    by = {(m["mode"], m["batch"]): m for m in data["modes"]}
    for entry in doc["modes"]:
        m = by[(entry["mode"], entry["batch"])]
        st = m["steps"]
        assert st["source"] == "nvtx" and st["count"] == doc["tokens"] and st["phase"] == "decode"
        # every step lasts what the script timed: its range; its kernels only (no prefill,
        # no warm-up). Per-step figures are the median step's (the lower middle one).
        seconds = sorted(entry["step_seconds"])
        median_ms = seconds[(len(seconds) - 1) // 2] * 1e3
        assert st["step_ms"]["median"] == pytest.approx(median_ms, abs=1e-5)
        assert st["kernels_per_step"] == k and st["memops_per_step"] == 0
        busy = 55.0 if entry["mode"] == "eager" else 92.0
        assert st["gpu_busy_pct"] == pytest.approx(busy, abs=0.1)
        gaps = st["idle_ms_per_step"]
        assert gaps["between_kernels"] == pytest.approx((k - 1) / k * (1 - busy / 100) * median_ms, rel=1e-3)
        # the gap before the first kernel, with the step's range open: waiting for the host
        assert gaps["waiting_for_host"] == pytest.approx((1 - busy / 100) * median_ms / k, rel=1e-3)
        assert gaps["before_first"] == pytest.approx(0, abs=1e-5)
        assert gaps["after_last"] == pytest.approx(0, abs=1e-5)
        # the row adds up: busy share, idle parts, nothing else ran
        parts = busy / 100 * st["step_ms"]["median"] + sum(gaps.values())
        assert parts == pytest.approx(st["step_ms"]["median"], rel=1e-3)
        assert st["graph_replays_per_step"] == (1 if entry["mode"] == "graphs" else 0)
        floor = st["floor"]  # the H100's spec (no sweep stored)
        assert floor["basis"] == "spec" and floor["bandwidth_tbps"] == pytest.approx(3.35)
        assert floor["floor_ms"] == pytest.approx(
            entry["bytes_per_step_floor"] / 3.35e12 * 1e3, abs=1e-6
        )  # ns resolution
        assert st["verdict"]["kind"] == ("launch-bound" if entry["mode"] == "eager" else "memory-bound")
        assert m["tokens_per_s"] == pytest.approx(m["batch"] * 1000 / st["step_ms"]["median"])
    eager_next = by[("eager", 1)]["steps"]["verdict"]["next_step"]
    # analyze has no --modes: the advice names the option of the command that has it
    assert "CUDA graph" in eager_next and "`profile decode` with `--modes graphs`" in eager_next
    assert any(line.startswith("batch 1: graphs") and "faster" in line for line in data["lesson"])
    assert data["batch_sweep"] is not None and all(p["bound"] == "memory" for p in data["batch_sweep"])
    assert any("graphs mode's" in n for n in data["notes"])
    assert any("by their launch (cuda_api_trace)" in n for n in data["notes"])
    # the same folder, for people: both modes side by side
    r = run_cli(capsys, "analyze", str(folder))
    assert r.code == 0, r
    assert "Per mode and batch" in r.out and "graphs" in r.out and "GPU BUSY" in r.out and "Batch sweep" in r.out


def test_projection_then_window_attribution_are_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _doc()
    proj = _exports(tmp_path, doc, ["cuda_gpu_trace", "nvtx_gpu_proj_trace"])
    data = json.loads(run_cli(capsys, "analyze", str(proj), "--json").out)
    assert any("GPU projection" in n and "nvtx_gpu_proj_trace" in n for n in data["notes"])
    assert data["modes"][0]["steps"]["kernels_per_step"] == len(decode_kernels(4))
    shutil.rmtree(proj)
    window = _exports(tmp_path, doc, ["cuda_gpu_trace", "nvtx_pushpop_trace"])
    data = json.loads(run_cli(capsys, "analyze", str(window), "--json").out)
    assert any(n.startswith("approximate: without launch times") for n in data["notes"])


# -------------------------------------------------------------- analyze: each input


def test_analyze_a_real_kineto_trace_with_a_floor(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(
        capsys,
        "analyze",
        str(TRACES / "hta_negative_queue_length_rank0.json.gz"),
        "--weights-gb",
        "1",
        "--kv-gb",
        "0.5",
        "--json",
    )
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["kind"] == "trace" and data["input"] == "kineto" and data["device"] == "NVIDIA A100-SXM4-80GB"
    assert set(data) == {"kind", "source", "input", "device", "steps", "trace", "notes", "kernels", "ranges"}
    (group,) = data["steps"]
    assert set(group) == CONTRACT_STEPS | {"group"}
    assert group["count"] == 5 and group["source"] == "record_function" and group["step_range"] == "ProfilerStep"
    floor = group["floor"]
    assert floor["bytes_per_step"] == 1_500_000_000 and floor["basis"] == "spec"
    assert floor["floor_ms"] == pytest.approx(1.5e9 / 2.039e12 * 1e3, rel=1e-5)
    assert any("by their launch" in n for n in data["notes"])
    assert data["trace"]["kernels"] == 6080 and data["trace"]["streams"] == 6  # as SOURCES.md counts them


def test_analyze_a_pt_trace_and_a_step_range(capsys: pytest.CaptureFixture[str]) -> None:
    path = TRACES / "hta_ns_resolution_rank0.pt.trace.json.gz"
    data = json.loads(run_cli(capsys, "analyze", str(path), "--json").out)
    assert data["device"] == "Tesla V100-SXM2-32GB" and data["steps"][0]["count"] == 5
    assert any("--weights-gb" in n for n in data["notes"])  # no floor without the bytes
    r = run_cli(capsys, "analyze", str(TRACES / "hta_triton_example.json.gz"), "--step-range", "nope")
    assert r.code == 2 and "no range named 'nope'" in r.err and "ProfilerStep#N (1)" in r.err
    assert r.err.count("\n") == 1


def test_analyze_a_real_cuda_gpu_trace_alone_infers_steps(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "analyze", str(TRACES / "vernier_nsys2026.3.1_rtx5000ada_cuda_gpu_trace.csv"), "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["input"] == "nsys" and data["device"] == "NVIDIA RTX 5000 Ada Generation Laptop GPU"
    assert data["steps"][0]["source"] == "repeating-sequence"
    # kernels only in every top list: the copies are memory operations (the first "top
    # kernel" of this export was `[CUDA memcpy Host-to-Device]`)
    assert data["kernels"] and not any(k["name"].startswith("[CUDA mem") for k in data["kernels"])
    assert not any(k["name"].startswith("[CUDA mem") for g in data["steps"] for k in g["top_kernels"])
    assert data["steps"][0]["memops_per_step"] > 0 and data["trace"]["memops"] > 0
    assert any("inferred from a repeating kernel sequence" in n for n in data["notes"])


def test_analyze_a_folder_of_real_exports_with_a_step_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in (
        "vernier_nsys2026.3.1_rtx5000ada_cuda_gpu_trace.csv",
        "vernier_nsys2026.3.1_rtx5000ada_nvtx_pushpop_trace.csv",
    ):
        shutil.copy(TRACES / name, tmp_path / name)
    data = json.loads(run_cli(capsys, "analyze", str(tmp_path), "--step-range", "kernel", "--json").out)
    assert [g["group"] for g in data["steps"]] == [None, "NvtxAnnotation.G1Phases"]
    assert all(g["source"] == "step-range" and g["count"] == 1 for g in data["steps"])
    # no launch times: a step holds what starts before the next step's range (the copy_out
    # after the first `kernel` range too), and the output says it is approximate; the
    # copies count apart from the kernels (4 and 1 "kernels" before)
    assert [(g["kernels_per_step"], g["memops_per_step"]) for g in data["steps"]] == [(1, 3), (1, 0)]
    assert any(n.startswith("approximate: without launch times") for n in data["notes"])
    r = run_cli(capsys, "analyze", str(tmp_path))
    assert r.code == 0 and "Trace" in r.out and "KERNELS/STEP" in r.out


def test_profile_exports_keep_their_values_and_gain_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A kernel summary and a GPU trace (what `profile` exports, and what analyze read
    before), then the capture's other trace exports beside them: the profile's keys keep
    their values, and the steps come from the ranges instead of a guessed period."""
    fixture = Path(__file__).parent / "fixtures" / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv"
    shutil.copy(fixture, tmp_path / "run_cuda_gpu_kern_sum.csv")
    decode_exports(_doc(), str(tmp_path / "run"), ["cuda_gpu_trace"])
    before = json.loads(run_cli(capsys, "analyze", str(tmp_path), "--json").out)
    assert before["device_name"] == "NVIDIA H100 80GB HBM3"  # the trace's Device column, as before
    assert {g["source"] for g in before["steps"]} == {"repeating-sequence"}
    decode_exports(_doc(), str(tmp_path / "run"), TRACE_REPORTS)
    after = json.loads(run_cli(capsys, "analyze", str(tmp_path), "--json").out)
    new = {"steps", "trace_summary", "trace_notes"}
    assert {k: after[k] for k in before if k not in new} == {k: v for k, v in before.items() if k not in new}
    assert [(g["group"], g["source"]) for g in after["steps"]] == [
        ("mode:eager > batch:1", "nvtx"),
        ("mode:eager > batch:2", "nvtx"),
    ]
    assert after["trace_summary"] == before["trace_summary"] and after["trace_summary"]["kernels"] > 0
    assert after["trace"] is None  # a profile's `trace` names its trace file: none here
    assert any("by their launch" in n for n in after["trace_notes"])
    assert any("inferred from a repeating kernel sequence" in n for n in before["trace_notes"])


def test_analyze_the_scripts_json_alone(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(run_cli(capsys, "analyze", str(RECORDED), "--json").out)
    assert data["kind"] == "decode" and {m["steps"]["source"] for m in data["modes"]} == {"script"}
    assert data["trace"] is None and any("own timing" in n for n in data["notes"])


def test_nsys_rep_is_exported_with_the_local_nsys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rep = tmp_path / "capture.nsys-rep"
    rep.write_text("nsys test stand-in: not a real report\n")
    shutil.copy(RECORDED, tmp_path / "decode.json")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))  # no nsys: one line with the command to run
    r = run_cli(capsys, "analyze", str(rep))
    assert r.code == 2 and r.err.count("\n") == 1
    assert "nsys is not installed here" in r.err
    assert (
        f"Run where nsys is: `nsys export --type sqlite --output {tmp_path}/capture.sqlite --force-overwrite true "
        f"{rep}`, then `nsightlab analyze {tmp_path}/capture.sqlite`." in r.err
    )
    assert sorted(tmp_path.iterdir()) == sorted([rep, bindir, tmp_path / "decode.json"])  # nothing written beside
    standins = Path(__file__).parent / "standins"
    monkeypatch.setenv("PATH", f"{standins}:/usr/bin:/bin")
    monkeypatch.setenv(
        "NSIGHTLAB_TEST_NSYS_FIXTURE",
        str(Path(__file__).parent / "fixtures" / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv"),
    )
    r = run_cli(capsys, "analyze", str(rep), "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["kind"] == "decode" and data["modes"][0]["steps"]["source"] == "nvtx"
    assert data["notes"][0] == f"exported from {rep} with this machine's nsys"


def test_options_that_need_a_timeline(capsys: pytest.CaptureFixture[str]) -> None:
    ncu = Path(__file__).parent / "fixtures" / "ncu" / "05_ncu_csv_page_details_vectorized_elementwise_rtx5090.csv"
    r = run_cli(capsys, "analyze", str(ncu), "--weights-gb", "16")
    assert r.code == 2 and "need a GPU timeline" in r.err
    r = run_cli(capsys, "analyze", str(TRACES / "hta_triton_example.json.gz"), "--kv-gb", "1")
    assert r.code == 2 and "--kv-gb adds the KV cache to --weights-gb" in r.err


# ------------------------------------------------------------- profile decode: errors


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["decode", "--local", "--batch", "0,8"], "--batch must be positive whole numbers"),
        (["decode", "--local", "--modes", "eager,fast"], "--modes takes eager, graphs or both"),
        (["decode", "--local", "--dtype", "int8"], "--dtype must be bfloat16, float16 or float32"),
        (["lesson1", "--local", "--preset", "tiny"], "--preset: only `profile decode` takes this option"),
        (["lesson1", "--local", "--profiler", "none"], "--profiler none: only `profile decode`"),
    ],
)
def test_bad_options_are_one_line(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, args: list[str], message: str
) -> None:
    r = run_cli(capsys, "profile", *args)
    assert r.code == 2 and message in r.err and r.err.count("\n") == 1, r
    assert not (nsl_home / "runs").exists()


def test_no_nsys_names_both_ways_forward(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # certainly no nsys
    r = run_cli(capsys, "profile", "decode", "--local")
    assert r.code == 6 and "nsys (Nsight Systems) is not installed" in r.err
    assert "--profiler torch" in r.err and "--profiler none" in r.err and r.err.count("\n") == 1


# ------------------------------------------------------------- hand-built CPU trace


def test_cpu_ops_exactly(tmp_path: Path) -> None:
    """A CPU-only Kineto trace whose answer is known: nested ops count once."""

    def op(name: str, ts: int, dur: int) -> dict[str, Any]:
        return x_event("cpu_op", name, ts, dur, 4242, 1)

    events = [
        annotation("decode_step", 1000, 100),
        op("aten::linear", 1010, 30),  # holds the two below
        op("aten::t", 1011, 2),
        op("aten::mm", 1014, 25),
        op("aten::add", 1050, 10),
        annotation("decode_step", 1200, 100),
        op("aten::linear", 1200, 50),
        op("aten::mm", 1200, 50),  # same span as its parent: still nested
        op("aten::rsqrt", 1260, 20),
    ]
    result = analyze_kineto(write_kineto(tmp_path / "cpu.json", events))
    assert result.ops_are == "cpu" and result.trace.kernels == 4 and result.trace.streams == 1
    (group,) = result.groups
    one, two = group.steps
    # before its first op, with the step's range open, the CPU ran the script's Python:
    # waiting for the host (`before_first` until it was split by cause)
    assert (
        one.kernels,
        one.busy_ns,
        one.idle_waiting_for_host_ns,
        one.idle_before_first_ns,
        one.idle_between_kernels_ns,
        one.idle_after_last_ns,
    ) == (2, 40_000, 10_000, 0, 10_000, 40_000)
    assert (
        two.kernels,
        two.busy_ns,
        two.idle_waiting_for_host_ns,
        two.idle_before_first_ns,
        two.idle_between_kernels_ns,
        two.idle_after_last_ns,
    ) == (2, 70_000, 0, 0, 10_000, 20_000)
    # both steps take 100 us: the median step is the first, and its ops are the top ones
    assert group.median_step == 0
    kinds = {k.name: k.kind for k in group.anatomy.top_kernels}
    assert kinds == {"aten::linear": "gemm", "aten::add": "elementwise"}
    steps_report = GroupSteps  # the analyze object keeps the decode contract's keys
    assert CONTRACT_STEPS | {"group"} == set(steps_report.model_fields)
    assert steps_mod.TimelineOp.model_fields.keys() >= {"start_ns", "end_ns", "kind", "own"}
    tl = group.timeline
    assert tl is not None and tl.step in (0, 1) and all(o.own for o in tl.ops)


def test_decode_result_roundtrips() -> None:
    record = load_decode_record(RECORDED)
    assert record is not None
    r = build_decode(record, analyze_kineto(RECORDED_TRACE), bandwidth=spec_bandwidth(H100, "float32")).result
    again = DecodeResult.model_validate_json(r.model_dump_json())
    assert again == r
    assert math.isfinite(again.modes[0].tokens_per_s)


def test_steps_queued_behind_a_lagging_gpu_are_tiled(tmp_path: Path) -> None:
    """Graph replays launched by a host that runs ahead: each step's range is 10 us, its
    four kernels (200 us, 50 us apart) run long after. Tiled, each step is its own 1 ms on
    the GPU (as CUDA events around it measure); the first step, queued behind nothing, is
    its GPU span. Untiled, each step is its GPU span: a host range that ended before its
    step's first kernel means the host ran ahead, and the time before is not the step's
    (it was: the queueing inflated the untiled windows to 1 ms, 1.99 ms, 2.98 ms, ...)."""
    us = 1000
    gpu, api, ranges = [], [], []
    for k in range(6):
        cpu = 10 * us * k
        ranges.append(pushpop_row(cpu, cpu + 10 * us, "decode_step", k + 1, None, 0))
        api.append(api_row(cpu + us, 2 * us, "cudaGraphLaunch", 100 + k))
        start = 50 * us + 1000 * us * k  # the GPU is busy with the earlier steps until then
        for j in range(4):
            gpu.append(kernel_row(start + j * 250 * us, 200 * us, 100 + k, GEMV))
    paths = [
        write_csv(tmp_path / "r_cuda_gpu_trace.csv", GPU_TRACE_HEADER, gpu),
        write_csv(tmp_path / "r_cuda_api_trace.csv", API_HEADER, api),
        write_csv(tmp_path / "r_nvtx_pushpop_trace.csv", PUSHPOP_HEADER, ranges),
    ]
    tiled = steps_mod.analyze_gpu_trace(paths, tile=True).groups[0]
    assert [t.window_ns for t in tiled.steps] == [950 * us] + [1000 * us] * 5
    assert tiled.anatomy.step_ms.median == 1.0 and tiled.anatomy.gpu_busy_pct == 80.0
    assert tiled.anatomy.idle_ms_per_step.model_dump() == {
        "between_kernels": 0.15,
        "before_first": 0.05,  # queued behind the previous step, its host range long closed
        "after_last": 0.0,
        "waiting_for_host": 0.0,
    }
    assert any("5 step(s) had their GPU work queued" in n for n in tiled.anatomy.notes)
    plain = steps_mod.analyze_gpu_trace(paths).groups[0]
    assert [t.window_ns for t in plain.steps] == [950 * us] * 6
    assert plain.anatomy.step_ms.median == 0.95 and plain.anatomy.graph_replays_per_step == 1
