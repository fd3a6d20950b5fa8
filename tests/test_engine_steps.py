"""Serving-engine steps through `analyze`, on traces whose answer is known exactly
(tests/enginebuild.py, in the shapes SGLang and vLLM write): the engine's own step
ranges, the step's GPU projection and its host wait, graph replays, phases kept apart,
the nested-period search without ranges, named ranges that are no steps, bad input, and
the same anatomy from nsys's CSV exports as from Kineto."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from enginebuild import LAYER, Builder, repeat, step_kernels, strip_ranges
from tracebuild import (
    API_HEADER,
    GPU_TRACE_HEADER,
    PUSHPOP_HEADER,
    annotation,
    api_row,
    kernel,
    kernel_row,
    launch,
    memcpy_row,
    pushpop_row,
    write_csv,
    write_kineto,
)

from nsightlab.analysis.steps import analyze_gpu_trace, analyze_kineto

pytestmark = pytest.mark.usefixtures("nsl_home")

SGLANG_STEP = "step[DECODE bs=32]"
SGLANG_OUTER = "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)"
VLLM_FULL = "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)"
KERNELS = len(step_kernels(4))  # 40: a head, 4 layers of 9, a tail of 3


def _analyze(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> dict[str, Any]:
    r = run_cli(capsys, "analyze", str(path), *args, "--json")
    assert r.code == 0, r
    data: dict[str, Any] = json.loads(r.out)
    return data


def _sglang_step(tmp_path: Path) -> Path:
    """SGLang's decode step as the issue found it: `step[DECODE bs=32]` inside vLLM-style
    `execute_...`; the host blocked 462.7 ms in hipMemcpyWithStream before it launched the
    graph; the graph replays 40 kernels (439 us), then the sampled tokens' copy."""
    b = Builder()
    b.step(
        SGLANG_STEP,
        200,
        465_000,
        463_200,
        outer=SGLANG_OUTER,
        blocking=("hipMemcpyWithStream", 300, 463_000),
        launch_at=463_100,
    )
    return write_kineto(tmp_path / "sglang.json.gz", b.events(), gz=True, device="AMD Instinct MI300X")


def test_a_graph_step_behind_a_blocking_copy_is_host_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _analyze(capsys, _sglang_step(tmp_path))
    (g,) = data["steps"]
    assert (g["source"], g["count"], g["verdict"]["kind"]) == ("engine-range", 1, "host-bound")
    assert (g["step_range"], g["phase"]) == ("sglang:step", "decode")
    # a lone step: its GPU span plus the host wait inside its range (and what follows
    # its last kernel while the range is still open)
    assert g["step_ms"]["median"] == pytest.approx(464.8)
    assert g["host_ms"]["median"] == pytest.approx(464.8) and g["gpu_span_ms"]["median"] == pytest.approx(0.441)
    idle = g["idle_ms_per_step"]
    assert idle["waiting_for_host"] == pytest.approx(463.0) and idle["between_kernels"] == pytest.approx(0.039)
    assert idle["after_last"] == pytest.approx(465.0 - 463.641) and idle["before_first"] == 0
    assert (g["kernels_per_step"], g["memops_per_step"], g["graph_replays_per_step"]) == (KERNELS, 1, 1)
    assert (g["syncs_per_step"], g["syncs_ms_per_step"]) == (1, pytest.approx(462.7))
    assert g["gpu_busy_ms"]["median"] == pytest.approx(0.4)
    v = g["verdict"]
    assert v["kind"] == "host-bound"
    assert (
        "the GPU waited 464 ms for the host (99.9% of the step; 1.36 ms of it after its last operation" in v["text"]
        and "graph replay (1 launch, 40 GPU operations)" in v["text"]
    )
    assert "hipMemcpyWithStream" in v["next_step"] and "CUDA graph" not in v["next_step"]
    assert any("innermost ones (SGLang's step[...] ranges) are the steps" in n for n in data["notes"])
    r = run_cli(capsys, "analyze", str(tmp_path / "sglang.json.gz"))
    assert "WAITING FOR HOST (ms)" in r.out and "host-bound" in r.out and "graph replays: 1 per step" in r.out
    # the step range given by hand: the same step, the same verdict (it was a 465 ms
    # "launch-bound" step told to capture a CUDA graph, which it already was)
    named = _analyze(capsys, tmp_path / "sglang.json.gz", "--step-range", SGLANG_STEP)
    (g,) = named["steps"]
    assert (g["source"], g["verdict"]["kind"]) == ("step-range", "host-bound")


def test_a_full_graph_step_whose_host_ran_ahead_is_its_gpu_span(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM's full-graph decode step: its range (0..2.4 ms) ended long before its graph ran
    (8.37 ms on): the host ran ahead, and the time before the first kernel is not the
    step's. The GPU is busy nearly all of the step: no launch-bound advice."""
    b = Builder(gap_us=0.05)
    start, end = b.step(VLLM_FULL, 0, 2_400, 8_370, launch_at=1_500, blocking=("hipEventSynchronize", 40, 42))
    data = _analyze(capsys, write_kineto(tmp_path / "vllm.json.gz", b.events(), gz=True, device=""))
    (g,) = data["steps"]
    assert (g["source"], g["count"], g["step_ms"]["median"]) == ("engine-range", 1, pytest.approx((end - start) / 1e3))
    assert (g["step_range"], g["phase"]) == ("vllm:execute", "decode")
    assert g["step_ms"]["median"] == pytest.approx((end - start) / 1e3) == g["gpu_span_ms"]["median"]
    assert g["idle_ms_per_step"]["waiting_for_host"] == 0 and g["gpu_busy_pct"] > 99
    assert g["verdict"]["kind"] == "busy" and "capture the step" not in g["verdict"]["next_step"]
    assert data["device"] is None  # deviceProperties without a name


def _vllm_steps(b: Builder) -> None:
    """Three decode steps, a prefill, two decode steps and a mixed step, each eager."""
    names = [
        "execute_context_0(0)_generation_8(8)",
        "execute_context_0(0)_generation_8(8)",
        "execute_context_0(0)_generation_8(8)",
        "execute_context_1(512)_generation_0(0)",
        "execute_context_0(0)_generation_9(9)",
        "execute_context_0(0)_generation_9(9)",
        "execute_context_1(64)_generation_8(8)",
    ]
    t = 0.0
    for name in names:
        layers = 12 if "context_1" in name else 4
        _start, end = b.step(name, t, t + 30, t + 10, graph=False, layers=layers)
        t = end + 20


def test_a_prefill_among_decodes_is_kept_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = Builder()
    _vllm_steps(b)
    data = _analyze(capsys, write_kineto(tmp_path / "mixed.json", b.events()))
    counts = [(g["source"], g["count"]) for g in data["steps"]]
    assert counts == [("engine-range", 5), ("engine-range", 1), ("engine-range", 1)]
    assert [g["phase"] for g in data["steps"]] == ["decode", "prefill", "mixed"]
    decode, prefill, mixed = data["steps"]
    assert decode["kernels_per_step"] == KERNELS and prefill["kernels_per_step"] == len(step_kernels(12))
    assert mixed["kernels_per_step"] == len(step_kernels(12))
    assert "prefill step takes" in prefill["verdict"]["text"] and "prefill" not in decode["verdict"]["text"]
    # a prefill is not compared with the decode floor
    data = _analyze(capsys, tmp_path / "mixed.json", "--weights-gb", "1")
    assert data["steps"][0]["floor"] is not None and data["steps"][1]["floor"] is None


def test_ranges_stripped_the_search_finds_the_step_not_the_layer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = _sglang_events()
    ops = KERNELS + 1  # with the sampled tokens' copy
    # one step alone (its graph replays 4 layers): it says so, and never calls a layer a step
    data = _analyze(capsys, write_kineto(tmp_path / "one.json", strip_ranges(one)))
    (g,) = data["steps"]
    assert (g["source"], g["count"], g["kernels_per_step"]) == ("repeating-sequence", 1, KERNELS)
    assert (g["step_period"], g["layer_period"]) == (ops, 9)
    assert any(n.startswith("one step: 4 repeats of a 9-operation layer, plus 5 operations") for n in data["notes"])
    # six of it: six steps of 41 operations, each 4 layers of 9
    data = _analyze(capsys, write_kineto(tmp_path / "six.json", strip_ranges(repeat(one, 6, 1_000.0))))
    (g,) = data["steps"]
    assert (g["source"], g["count"], g["step_period"], g["layer_period"]) == ("repeating-sequence", 6, ops, 9)
    assert (g["kernels_per_step"], g["memops_per_step"]) == (KERNELS, 1)
    assert any(f"a step is {ops} GPU operations (4 repeats of a 9-operation layer" in n for n in data["notes"])


def _sglang_events() -> list[dict[str, Any]]:
    b = Builder()
    b.step(SGLANG_STEP, 0, 600, 100, layers=4, launch_at=50)
    return b.events()


def test_bad_input_is_said_never_miscounted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Step ranges that nest and that overlap, a range with no kernels, kernels whose launch
    is not in the trace, a graph launched outside every step range."""
    b = Builder()
    b.step(SGLANG_STEP, 0, 1_000, 100, outer=SGLANG_OUTER)  # nested in an engine range
    b.step(SGLANG_STEP, 900, 2_000, 1_200)  # overlaps the step before on the same thread
    b.step(SGLANG_STEP, 3_000, 4_000, 3_100)
    events = b.events()
    events.append(annotation("step[IDLE bs=0]", 5_000, 100))  # no kernels
    events.append(kernel("orphan_kernel", 6_000, 10, 999_999))  # its launch precedes the profile
    events.append(launch("hipGraphLaunch", 7_000, 3, 888_888))  # outside every range
    events += [kernel(k, 7_100 + 11 * i, 10, 888_888) for i, k in enumerate(LAYER)]
    data = _analyze(capsys, write_kineto(tmp_path / "bad.json", events))
    (g,) = data["steps"]
    assert (g["source"], g["count"], g["kernels_per_step"]) == ("engine-range", 3, KERNELS)
    notes = " | ".join(data["notes"])
    for said in (
        "1 step range(s) enclose other step ranges",
        "overlap the next one without nesting",
        "launched no GPU work (e.g. step[IDLE bs=0]): left out",
        "1 GPU operation(s) have no launch call in the trace",
        f"1 graph replay(s) were launched outside every step range: their {len(LAYER)} GPU operation(s)",
    ):
        assert said in notes, said


def _lesson1_exports(folder: Path) -> Path:
    """lesson1 under nsys: 23 calls of one kernel in `memory_bound_scale`, then 23 of another
    in `compute_bound_gemm`: named ranges, none a step."""
    folder.mkdir()
    gpu, api, ranges = [], [], []
    t, corr = 1_000_000, 0
    for name, k, dur in (
        ("memory_bound_scale", "scale_kernel", 300_000),
        ("compute_bound_gemm", "gemm_kernel", 900_000),
    ):
        for _ in range(23):
            corr += 1
            ranges.append(pushpop_row(t, t + dur + 50_000, name, corr, None, 0))
            api.append(api_row(t + 1_000, 5_000, "cudaLaunchKernel", corr))
            gpu.append(kernel_row(t + 20_000, dur, corr, k))
            t += dur + 100_000
    write_csv(folder / "lesson1_cuda_gpu_trace.csv", GPU_TRACE_HEADER, gpu)
    write_csv(folder / "lesson1_cuda_api_trace.csv", API_HEADER, api)
    write_csv(folder / "lesson1_nvtx_pushpop_trace.csv", PUSHPOP_HEADER, ranges)
    return folder


def test_named_ranges_are_offered_not_one_op_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _lesson1_exports(tmp_path / "lesson1")
    data = _analyze(capsys, folder)
    assert data["steps"] == []
    assert [(r["name"], r["count"]) for r in data["ranges"]] == [("memory_bound_scale", 23), ("compute_bound_gemm", 23)]
    assert [k["short_name"] for k in data["kernels"]] == ["gemm_kernel", "scale_kernel"]
    assert any("a period of 1 is not a step" in n for n in data["notes"])
    (offer,) = [n for n in data["notes"] if "--step-range" in n]
    assert "memory_bound_scale (23), compute_bound_gemm (23)" in offer
    command = offer.split("`")[1]
    argv = shlex.split(command)
    assert argv[:3] == ["nsightlab", "analyze", str(folder)]
    r = run_cli(capsys, *argv[1:], "--json")  # the printed command runs as printed
    assert r.code == 0, r
    (g,) = json.loads(r.out)["steps"]
    assert (g["source"], g["count"], g["kernels_per_step"]) == ("step-range", 23, 1)
    text = run_cli(capsys, "analyze", str(folder)).out
    assert "Top kernels of the whole trace" in text and "no steps found" in text


# ------------------------------------------------------------ nsys CSV = Kineto


def _parity_events() -> tuple[list[dict[str, Any]], list[list[object]], list[list[object]], list[list[object]]]:
    """Two decode steps, each a graph replay behind a cudaStreamSynchronize, as Kineto
    events and as nsys's three trace exports (times in ns for nsys)."""
    events: list[dict[str, Any]] = []
    gpu: list[list[object]] = []
    api: list[list[object]] = []
    ranges: list[list[object]] = []
    for k in range(2):
        h0 = 10_000 * k
        name = "step[DECODE bs=8]"
        events.append(annotation(name, h0, 5_000))
        ranges.append(pushpop_row(h0 * 1000, (h0 + 5_000) * 1000, name, k + 1, None, 0))
        events.append(launch("cudaStreamSynchronize", h0 + 100, 2_000, 500 + k))
        api.append(api_row((h0 + 100) * 1000, 2_000_000, "cudaStreamSynchronize", 500 + k))
        events.append(launch("cudaGraphLaunch", h0 + 2_200, 10, 100 + k))
        api.append(api_row((h0 + 2_200) * 1000, 10_000, "cudaGraphLaunch", 100 + k))
        t = h0 + 2_300
        for i, kname in enumerate(step_kernels(2)):
            events.append(kernel(kname, t, 20, 100 + k))
            gpu.append(kernel_row(t * 1000, 20_000, 100 + k, kname))
            t += 22 if i % 3 else 30
        events.append(launch("cudaMemcpyAsync", h0 + 2_250, 5, 300 + k))
        api.append(api_row((h0 + 2_250) * 1000, 5_000, "cudaMemcpyAsync", 300 + k))
        events.append(kernel("Memcpy DtoH (Device -> Pinned)", t, 4, 300 + k, cat="gpu_memcpy"))
        gpu.append(memcpy_row(t * 1000, 4_000, 300 + k, "0.004"))
    return events, gpu, api, ranges


def test_nsys_exports_give_the_anatomy_kineto_gives(tmp_path: Path) -> None:
    events, gpu, api, ranges = _parity_events()
    kin = analyze_kineto(write_kineto(tmp_path / "p.json", events), tile=True)
    files = [
        write_csv(tmp_path / "p_cuda_gpu_trace.csv", GPU_TRACE_HEADER, sorted(gpu, key=lambda r: int(str(r[0])))),
        write_csv(tmp_path / "p_cuda_api_trace.csv", API_HEADER, api),
        write_csv(tmp_path / "p_nvtx_pushpop_trace.csv", PUSHPOP_HEADER, ranges),
    ]
    nsys = analyze_gpu_trace(files, tile=True)
    (a,), (b,) = kin.groups, nsys.groups
    left, right = a.anatomy.model_dump(), b.anatomy.model_dump()
    for side in (left, right):
        side.pop("notes")
        for k in side["top_kernels"]:  # Kineto and nsys name the same copy differently
            k.pop("name")
    assert left == right
    assert (a.anatomy.syncs_per_step, a.anatomy.graph_replays_per_step, a.anatomy.memops_per_step) == (1, 1, 1)
    assert a.anatomy.idle_ms_per_step.waiting_for_host == pytest.approx(2.3)
    assert [t.model_dump(exclude={"name"}) for t in a.steps] == [t.model_dump(exclude={"name"}) for t in b.steps]


def test_every_field_of_the_step_json_is_documented() -> None:
    """Every field a step group, a trace summary and a trace result carry is in the JSON page's
    shapes (generated from the models), the fields this work added are explained on the decode
    page, and every verdict kind is described there."""
    from typing import get_args

    from nsightlab.analysis.decode_models import GroupSteps, TraceResult
    from nsightlab.analysis.stepmodels import IdleMs, TraceSummary
    from nsightlab.analysis.verdicts import VerdictKind

    docs = Path(__file__).resolve().parents[1] / "docs"
    shapes = (docs / "json.md").read_text(encoding="utf-8")
    page = (docs / "decode.md").read_text(encoding="utf-8")
    for model in (GroupSteps, TraceResult, TraceSummary, IdleMs):
        for name in model.model_fields:
            assert f'"{name}"' in shapes, (model.__name__, name)
    explained = page.split("## JSON", 1)[1].split("\n## ", 1)[0]
    for name in ("phase", "source", "host_ms", "gpu_span_ms", "gpu_busy_ms", "memops_per_step", "layer_period"):
        assert f"`{name}" in explained, name
    for kind in get_args(VerdictKind):
        assert f"`{kind}`" in page, kind


@pytest.mark.parametrize(
    ("name", "rule", "phase"),
    [
        ("execute_context_0(0)_generation_64(64)", "vllm:execute", "decode"),
        ("execute_context_2(14721)_generation_0(0)", "vllm:execute", "prefill"),
        ("execute_context_1(888_788544)_generation_0(0)", "vllm:execute", "prefill"),
        (
            "execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)_generation_3(sq3sk6144sqsq3sqsk6144)",
            "vllm:execute",
            "mixed",
        ),
        ("execute_new_0_cached_32", "vllm:execute", "decode"),
        ("execute_new_4_cached_0", "vllm:execute", "prefill"),
        ("step[DECODE bs=32]", "sglang:step", "decode"),
        ("step[EXTEND bs=15 toks=15360]", "sglang:step", "prefill"),
        ("step[MIXED bs=66 c=2 g=64 c_sq=2048 c_sk=2048 c_sqsq=2097152 c_sqsk=2097152]", "sglang:step", "mixed"),
        ("step[decode bs=4]", "sglang:step", "decode"),
        ("step[prefill bs=2 toks=512]", "sglang:step", "prefill"),
        ("step[TARGET_VERIFY bs=8]", "sglang:step", "decode"),
        ("step[IDLE bs=0]", "sglang:step", "unknown"),
        (":step[DECODE bs=8]", "sglang:step", "decode"),  # NVTX's empty domain
        ("[Executor] _forward_step 17: 0 ctx reqs, 32 gen reqs", "trtllm:_forward_step", "decode"),
        ("[Executor] _forward_step 3: 2 ctx reqs, 512 ctx tokens, 30 gen reqs", "trtllm:_forward_step", "mixed"),
        ("prefill[bs=2 tok=14721 ctx=[7803, 6918]]", "atom:step", "prefill"),
        ("decode[bs=117/128 tok=117 d=117]", "atom:step", "decode"),
    ],
)
def test_engine_step_range_spellings(name: str, rule: str, phase: str) -> None:
    from nsightlab.analysis.engine_ranges import engine_rule

    got = engine_rule(name)
    assert got is not None and got[:2] == (rule, phase), got


@pytest.mark.parametrize("name", ["execute_model", "step", "decode_step", "ProfilerStep#3", "mode:eager", "step[]"])
def test_other_ranges_are_no_engine_steps(name: str) -> None:
    from nsightlab.analysis.engine_ranges import engine_rule

    assert engine_rule(name) is None


def _compiled_graph_calls(tmp_path: Path, *, capture: bool) -> Path:
    """Six repeats of three kernels, each repeat inside torch.compile's range around a call
    of its compiled graph (and, with `capture`, all of them inside one `capture_8` range)."""
    events: list[dict[str, Any]] = []
    corr, t = 0, 0
    for _ in range(6):
        events.append(annotation("## Call CompiledFxGraph fabc123 ##", t, 60))
        for i, name in enumerate(("gemv_kernel", "rms_norm_kernel", "add_kernel")):
            corr += 1
            events.append(launch("cudaLaunchKernel", t + 1 + i, 1, corr))
            events.append(kernel(name, t + 5 + 15 * i, 10, corr))
        t += 100
    if capture:
        events.append(annotation("capture_8", 0, t))
    return write_kineto(tmp_path / f"compiled{capture}.json", events)


def test_torch_compiles_own_ranges_are_listed_but_not_offered_as_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _analyze(capsys, _compiled_graph_calls(tmp_path, capture=True))
    (offer,) = [n for n in data["notes"] if n.startswith("the trace has named ranges")]
    assert "## Call CompiledFxGraph fabc123 ## (6), capture_8 (1)" in offer
    assert offer.endswith("--step-range capture_8`")
    data = _analyze(capsys, _compiled_graph_calls(tmp_path, capture=False))
    (offer,) = [n for n in data["notes"] if n.startswith("the trace has named ranges")]
    assert "--step-range" not in offer and offer.endswith("torch.compile's calls of its compiled graphs, not steps")


def test_a_trace_of_graphs_being_captured_has_no_steps(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """As vLLM's and SGLang's capture traces come: hundreds of launches inside a
    ProfilerStep, of which two ran (the fills before the capture); the others were
    recorded into the graph. Those two operations are not a step's work."""
    events = [annotation("ProfilerStep#134", 0, 40_000)]
    for i in range(1, 547):
        events.append(launch("hipLaunchKernel", 10 + 60 * i, 5, i))
    events.append(kernel("fill_kernel", 100, 5, 1))
    events.append(kernel("fill_kernel", 200, 6, 2))
    data = _analyze(capsys, write_kineto(tmp_path / "capture.json", events, device="AMD Instinct MI300X"))
    assert data["steps"] == []
    (said,) = data["notes"]  # the one note: no range offered as a step, no floor asked for
    assert said.startswith("at least 544 of the trace's 546 launch calls") and "graphs being captured" in said
    assert data["trace"]["kernels"] == 2


def _diffusion(tmp_path: Path, *, other_graph: bool = False) -> Path:
    """One ProfilerStep around a whole generation that calls one compiled graph 4 times
    (a denoising step each: 3 of Inductor's triton_ kernels, launched 400 us apart), as
    xDiT's SD 3.5 trace does; `other_graph` adds a call of a second compiled graph."""
    graph = "## Call CompiledFxGraph fp5r5pk7bndvtfxhvsvzndl5pa42kyv4kgpya5imdcl36x5bf6lh ##"
    events = []
    t, corr = 100, 0
    for _ in range(4):
        events.append(annotation(graph, t, 1_500))
        for k in ("triton_poi_fused_add_0", "triton_red_fused_mean_1", "triton_poi_fused_mul_2"):
            corr += 1
            events.append(launch("cudaLaunchKernel", t + 10, 5, corr))
            events.append(kernel(k, t + 20, 100, corr))
            t += 400
        t += 300
    if other_graph:
        events.append(annotation("## Call CompiledFxGraph vae0decoder ##", t, 500))
    events.append(annotation("ProfilerStep#3", 0, t + 600))
    return write_kineto(tmp_path / "diffusion.json", events)


def test_a_compiled_graph_called_again_and_again_in_one_step_is_offered_as_the_step(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _diffusion(tmp_path)
    data = _analyze(capsys, path)
    (offer,) = [n for n in data["notes"] if "calls one compiled graph" in n]
    assert "4 times" in offer
    command = offer.split("`")[1]
    assert command.startswith(f"nsightlab analyze {path} --step-range '## Call CompiledFxGraph fp5r5pk")
    # the command offered runs; the start of the name does too
    for wanted in (shlex.split(command)[-1], "## Call CompiledFxGraph"):
        (group,) = _analyze(capsys, path, "--step-range", wanted)["steps"]
        assert group["count"] == 4 and group["kernels_per_step"] == 3
    # a compiled model is not told to compile itself
    (step,) = data["steps"]
    assert step["verdict"]["kind"] == "launch-bound" and "compiled already" in step["verdict"]["next_step"]


def test_the_start_of_several_ranges_names_is_refused_with_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r = run_cli(capsys, "analyze", str(_diffusion(tmp_path, other_graph=True)), "--step-range", "## Call Compiled")
    assert r.code == 2 and "2 ranges' names start with '## Call Compiled'" in r.err and "vae0decoder" in r.err
