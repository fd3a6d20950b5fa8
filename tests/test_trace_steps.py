"""Step anatomy on traces whose answer is known exactly (hand-built in the profilers' exact
shapes, see tracebuild), period detection on sequences with noise, the interval union
against a brute force, and the floor and verdict."""

from __future__ import annotations

import random
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tracebuild import (
    API_HEADER,
    GPU_TRACE_HEADER,
    PROJ_HEADER,
    PUSHPOP_HEADER,
    analyze_verdict,
    annotation,
    api_row,
    kernel,
    kernel_row,
    launch,
    memcpy_row,
    proj_row,
    pushpop_row,
    write_csv,
    write_kineto,
)

from nsightlab.analysis import steps
from nsightlab.analysis.decode_models import Bandwidth
from nsightlab.analysis.intervals import IntervalUnion, union_length
from nsightlab.analysis.period import Period, find_period
from nsightlab.analysis.stepmodels import KindShare
from nsightlab.analysis.steps import StepGroup, analyze_gpu_trace, analyze_kineto, range_matches
from nsightlab.analysis.verdicts import HOST_BOUND_WAIT_PCT, LAUNCH_BOUND_IDLE_PCT, NEAR_FLOOR_RATIO, memory_floor
from nsightlab.errors import UsageError

DATA = Path(__file__).parent / "data" / "traces"
GEMV = "void gemv_kernel<float, 128>(float const*, float*, int)"


def _check_invariants(group: StepGroup) -> None:
    for t in group.steps:
        assert t.busy_ns + t.other_busy_ns + t.idle_ns == t.window_ns
        assert (
            min(t.busy_ns, t.other_busy_ns, t.idle_before_first_ns, t.idle_between_kernels_ns, t.idle_after_last_ns)
            >= 0
        )


# --------------------------------------------------------------------- Kineto


def _kineto_events() -> list[dict[str, object]]:
    """Two ProfilerSteps inside `mode:eager` (times in us). Step 1 launches from two
    threads, replays a CUDA graph of three kernels under one correlation id, and its
    memcpy runs into step 2's CPU range; step 2 launches through the driver API and a
    memset; one kernel's launch predates the profile and one has no launch at all."""
    return [
        annotation("mode:eager", 900, 2200),
        annotation("ProfilerStep#1", 1000, 1000),
        annotation("ProfilerStep#2", 2000, 1000),
        launch("cudaLaunchKernel", 1100, 20, 1),
        kernel(GEMV, 1200, 100, 1),
        launch("cudaLaunchKernelExC", 1400, 20, 2, tid=2),  # autograd's thread
        kernel("rms_norm_kernel", 1500, 50, 2),
        launch("cudaGraphLaunch", 1600, 30, 3),
        kernel("graph_gemm", 1700, 50, 3),
        kernel("graph_gemm", 1760, 40, 3),
        kernel("graph_attention", 1800, 50, 3),
        launch("cudaMemcpyAsync", 1900, 10, 4),
        kernel("Memcpy DtoH (Device -> Pinned)", 1950, 150, 4, stream=9, cat="gpu_memcpy"),
        launch("cuLaunchKernel", 2050, 10, 5, cat="cuda_driver"),
        kernel("triton_poi_fused_add_0", 2150, 100, 5, stream=8),
        launch("cudaMemsetAsync", 2300, 5, 6),
        kernel("Memset (Device)", 2400, 10, 6, cat="gpu_memset"),
        kernel("orphan_kernel", 2500, 100, 99),
        kernel("before_profile_kernel", 500, 100, 98),
        launch("cudaStreamSynchronize", 2950, 40, 7),
    ]


def test_kineto_steps_exactly(tmp_path: Path) -> None:
    result = analyze_kineto(write_kineto(tmp_path / "t.json.gz", _kineto_events(), gz=True))
    # Whole trace: 500..2600 us; the union of all 10 GPU operations is 750 us, of its 8
    # kernels 590 us (memory copies and sets are busy time, not kernels: nsys keeps them apart).
    assert result.trace.model_dump() == {
        "span_ms": 2.1,
        "gpu_busy_pct": 35.714,
        "kernels": 8,
        "streams": 3,
        "kernel_busy_pct": 28.095,
        "memops": 2,
    }
    (group,) = result.groups
    assert group.group == "mode:eager"
    one, two = group.steps
    # Step 1: CPU 1000..2000, its work 1200..2100 -> window 1000..2100; busy 100+50+90+150.
    # Its 5 kernels (the memcpy is a memory operation, counted apart: until this
    # change it counted as a sixth kernel). The GPU ran nothing for 200 us before its
    # first kernel while its host range was open: waiting for the host.
    assert (one.window_start_ns, one.window_end_ns, one.kernels, one.memops, one.busy_ns) == (
        1_000_000,
        2_100_000,
        5,
        1,
        440_000,
    )
    assert (
        one.idle_waiting_for_host_ns,
        one.idle_before_first_ns,
        one.idle_between_kernels_ns,
        one.idle_after_last_ns,
        one.other_busy_ns,
    ) == (200_000, 0, 460_000, 0, 0)
    # one cudaGraphLaunch replays three kernels under one correlation id
    assert (one.graph_replays, one.graph_kernels, one.syncs) == (1, 3, 0)
    # Step 2: CPU 2000..3000; step 1's memcpy (until 2100) and the orphan kernel are GPU
    # work, so not idle, but not step 2's either; its cudaStreamSynchronize is a sync.
    assert (two.window_start_ns, two.window_end_ns, two.kernels, two.memops, two.busy_ns) == (
        2_000_000,
        3_000_000,
        1,
        1,
        110_000,
    )
    assert (
        two.idle_waiting_for_host_ns,
        two.idle_before_first_ns,
        two.idle_between_kernels_ns,
        two.idle_after_last_ns,
        two.other_busy_ns,
    ) == (50_000, 0, 150_000, 490_000, 200_000)
    assert (two.syncs, two.sync_ns, two.longest_sync) == (1, 40_000, "cudaStreamSynchronize")
    _check_invariants(group)
    a = group.anatomy
    assert (a.source, a.step_range, a.count, a.phase) == ("record_function", "ProfilerStep", 2, "unknown")
    # the median is the lower middle step (1.0 ms, step 2): every figure per step is its own
    assert a.step_ms.model_dump() == {"median": 1.0, "p90": 1.09, "min": 1.0, "max": 1.1}
    assert group.median_step == 1 and a.kernels_per_step == 1 and a.memops_per_step == 1
    assert (a.gpu_busy_pct, a.kernel_busy_pct, a.memops_ms_per_step) == (11.0, 10.0, 0.01)
    assert a.idle_ms_per_step.model_dump() == {
        "between_kernels": 0.15,
        "before_first": 0.0,
        "after_last": 0.49,
        "waiting_for_host": 0.05,
    }
    assert (a.syncs_per_step, a.syncs_ms_per_step, a.graph_replays_per_step) == (1, 0.04, 0)
    assert a.host_ms is not None and a.host_ms.model_dump() == {"median": 1.0, "p90": 1.0, "min": 1.0, "max": 1.0}
    assert a.gpu_span_ms is not None and (a.gpu_span_ms.min, a.gpu_span_ms.max) == (0.26, 0.9)
    assert a.gpu_busy_ms is not None and (a.gpu_busy_ms.min, a.gpu_busy_ms.max) == (0.1, 0.29)
    # top kernels: kernels only, the median step's own
    assert [(k.name, k.kind, k.ms_per_step, k.pct) for k in a.top_kernels] == [
        ("triton_poi_fused_add_0", "elementwise", 0.1, 10.0)
    ]
    assert [(k.kind, k.ms_per_step) for k in group.kinds] == [("elementwise", 0.1)]
    assert any("2 GPU operation(s) have no launch" in n for n in a.notes)
    assert any("overlap the next step" in n for n in a.notes)
    # the whole trace's top kernels: kernels only, by total time
    top = {k.name: (k.kind, k.instances, k.total_ns) for k in result.kernels}
    assert "Memcpy DtoH (Device -> Pinned)" not in top and "Memset (Device)" not in top
    assert top["graph_gemm"] == ("gemm", 2, 90_000.0) and top[GEMV] == ("gemm", 1, 100_000.0)
    assert sum(k.time_pct for k in result.kernels) == pytest.approx(100.0, abs=0.01)
    assert [r.model_dump() for r in result.ranges] == [
        {"name": "ProfilerStep#N", "count": 2},
        {"name": "mode:eager", "count": 1},
    ]


def test_step_range_option(tmp_path: Path) -> None:
    path = write_kineto(tmp_path / "t.json", _kineto_events())
    assert range_matches("ProfilerStep#12", "ProfilerStep") and range_matches(":decode_step", "decode_step")
    assert not range_matches("ProfilerStep#x", "ProfilerStep") and not range_matches("decode_steps", "decode_step")
    eager = analyze_kineto(path, step_range="mode:eager")
    (group,) = eager.groups
    # 6 kernels and 2 memory operations launched inside it (8 "kernels" before memory
    # operations were counted apart)
    assert (group.group, group.anatomy.count, group.steps[0].kernels, group.steps[0].memops) == (None, 1, 6, 2)
    assert group.anatomy.source == "step-range"
    with pytest.raises(UsageError) as info:
        analyze_kineto(path, step_range="decode_step")
    assert "no range named 'decode_step'" in str(info.value)
    assert "ProfilerStep#N (2)" in (info.value.hint or "")


def test_real_kineto_steps_attribute_graph_replays_and_second_thread() -> None:
    result = analyze_kineto(DATA / "hta_negative_queue_length_rank0.json.gz")
    (group,) = result.groups
    assert group.anatomy.count == 5 and result.device_names == ["NVIDIA A100-SXM4-80GB"]
    _check_invariants(group)
    # 7747 GPU operations; 872 have no launch in the file; every other one was launched
    # inside one of the 5 steps (from either thread, graph replays included), kernels
    # and memory operations counted apart.
    assert sum(t.kernels + t.memops for t in group.steps) == 7747 - 872
    assert 0 < sum(t.memops for t in group.steps) < sum(t.kernels for t in group.steps)
    assert sum(t.graph_replays for t in group.steps) > 0
    assert any("872 GPU operation(s) have no launch" in n for n in result.notes)


# ----------------------------------------------------------------------- nsys


def _nsys_files(tmp_path: Path, *, api: bool = True, proj: bool = False, pushpop: bool = True) -> list[Path]:
    """Four decode steps (times in ns): two in `mode:eager` (gemv, norm, copy back: three
    launches each) and two in `mode:graphs` (one cudaGraphLaunch replaying two kernels)."""
    gpu = [
        kernel_row(1500, 500, 10, GEMV),
        kernel_row(2500, 100, 11, "rms_norm_kernel"),
        memcpy_row(2700, 100, 12, "0.004"),
        kernel_row(5500, 500, 13, GEMV),
        kernel_row(6500, 100, 14, "rms_norm_kernel"),
        memcpy_row(6700, 100, 15, "0.004"),
        kernel_row(21500, 400, 20, GEMV),
        kernel_row(21900, 100, 20, "rms_norm_kernel"),
        kernel_row(24500, 400, 21, GEMV),
        kernel_row(24900, 100, 21, "rms_norm_kernel"),
    ]
    files = [write_csv(tmp_path / "run_cuda_gpu_trace.csv", GPU_TRACE_HEADER, gpu)]
    if pushpop:
        files.append(
            write_csv(
                tmp_path / "run_nvtx_pushpop_trace.csv",
                PUSHPOP_HEADER,
                [
                    pushpop_row(0, 10000, "mode:eager", 1, None, 0),
                    pushpop_row(1000, 4000, "decode_step", 2, 1, 1),
                    pushpop_row(5000, 8000, "decode_step", 3, 1, 1),
                    pushpop_row(20000, 30000, "mode:graphs", 4, None, 0),
                    pushpop_row(21000, 23000, "decode_step", 5, 4, 1),
                    pushpop_row(24000, 26000, "decode_step", 6, 4, 1),
                ],
            )
        )
    if api:
        files.append(
            write_csv(
                tmp_path / "run_cuda_api_trace.csv",
                API_HEADER,
                [
                    api_row(1100, 20, "cudaLaunchKernel", 10),
                    api_row(1200, 20, "cudaLaunchKernel", 11),
                    api_row(1300, 20, "cudaMemcpyAsync", 12),
                    api_row(3900, 50, "cudaStreamSynchronize", 16),
                    api_row(5100, 20, "cudaLaunchKernel", 13),
                    api_row(5200, 20, "cudaLaunchKernel", 14),
                    api_row(5300, 20, "cudaMemcpyAsync", 15),
                    api_row(21100, 30, "cudaGraphLaunch", 20),
                    api_row(24100, 30, "cudaGraphLaunch", 21),
                ],
            )
        )
    if proj:
        files.append(
            write_csv(
                tmp_path / "run_nvtx_gpu_proj_trace.csv",
                PROJ_HEADER,
                [
                    proj_row("mode:eager", 1500, 6800, 0, 10000, 6, 1, None, 0),
                    proj_row("decode_step", 1500, 2800, 1000, 4000, 3, 2, 1, 1),
                    proj_row("decode_step", 5500, 6800, 5000, 8000, 3, 3, 1, 1),
                    proj_row("mode:graphs", 21500, 25000, 20000, 30000, 4, 4, None, 0),
                    proj_row("decode_step", 21500, 22000, 21000, 23000, 2, 5, 4, 1),
                    proj_row("decode_step", 24500, 25000, 24000, 26000, 2, 6, 4, 1),
                ],
            )
        )
    return files


def _expect_modes(result: steps.TraceAnatomy) -> None:
    eager, graphs = result.groups
    assert (eager.group, graphs.group) == ("mode:eager", "mode:graphs")
    for g in result.groups:
        _check_invariants(g)
        assert (g.anatomy.source, g.anatomy.step_range, g.anatomy.count) == ("nvtx", "decode_step", 2)
    e = eager.anatomy
    # Window 1000..4000: busy 500+100+100; idle 500 before the first kernel while the
    # host range was open (waiting for the host), 600 between, 1200 after. Two kernels
    # and a copy: the copy is a memory operation (it counted as a third kernel, and
    # headed no top-kernel list, before they were counted apart).
    assert (e.step_ms.median, e.kernels_per_step, e.memops_per_step, e.gpu_busy_pct) == (0.003, 2, 1, 23.333)
    assert e.idle_ms_per_step.model_dump() == {
        "between_kernels": 0.0006,
        "before_first": 0.0,
        "after_last": 0.0012,
        "waiting_for_host": 0.0005,
    }
    assert [(k.short_name, k.kind, k.ms_per_step) for k in e.top_kernels] == [
        ("gemv_kernel<float, 128>", "gemm", 0.0005),
        ("rms_norm_kernel", "norm", 0.0001),
    ]
    assert (e.memops_ms_per_step, e.kernel_busy_pct) == (0.0001, 20.0)
    gr = graphs.anatomy
    assert (gr.step_ms.median, gr.kernels_per_step, gr.gpu_busy_pct) == (0.002, 2, 25.0)
    assert gr.idle_ms_per_step.model_dump() == {
        "between_kernels": 0.0,
        "before_first": 0.0,
        "after_last": 0.001,
        "waiting_for_host": 0.0005,
    }


def test_nsys_steps_by_launch_grouped_by_mode(tmp_path: Path) -> None:
    result = analyze_gpu_trace(_nsys_files(tmp_path))
    assert result.trace.model_dump() == {
        "span_ms": 0.0235,
        "gpu_busy_pct": 10.213,
        "kernels": 8,
        "streams": 1,
        "kernel_busy_pct": 9.362,
        "memops": 2,
    }
    _expect_modes(result)
    # the eager steps' ranges run on 1.2 us after their GPU work: with the 0.5 us before it,
    # the GPU waits for the host 57% of the step
    assert analyze_verdict(result.groups[0]).kind == "host-bound"


def test_nsys_steps_from_projection_only(tmp_path: Path) -> None:
    # No cuda_api_trace: the kernels inside each range's GPU projection (same answer here).
    result = analyze_gpu_trace(_nsys_files(tmp_path, api=False, proj=True, pushpop=False))
    _expect_modes(result)
    assert any("nvtx_gpu_proj_trace" in n for n in result.groups[0].anatomy.notes)


def test_nsys_pushpop_only_is_marked_approximate(tmp_path: Path) -> None:
    result = analyze_gpu_trace(_nsys_files(tmp_path, api=False))
    assert all(any(n.startswith("approximate:") for n in g.anatomy.notes) for g in result.groups)
    assert [g.anatomy.count for g in result.groups] == [2, 2]


def test_nsys_inputs_checked(tmp_path: Path) -> None:
    files = _nsys_files(tmp_path)
    with pytest.raises(UsageError, match="no cuda_gpu_trace export"):
        analyze_gpu_trace(files[1:])
    with pytest.raises(UsageError, match="two cuda_gpu_trace files"):
        analyze_gpu_trace([files[0], files[0]])


def test_unsorted_gpu_trace_sorted_in_memory(tmp_path: Path) -> None:
    files = _nsys_files(tmp_path)
    lines = files[0].read_text().splitlines(keepends=True)
    files[0].write_text(lines[0] + "".join(reversed(lines[1:])))
    result = analyze_gpu_trace(files)
    _expect_modes(result)
    assert any("not in start order: sorted in memory" in n for n in result.notes)


def test_real_nsys_export_without_ranges_infers_steps() -> None:
    result = analyze_gpu_trace(
        [
            DATA / "vernier_nsys2025.3.2_thor_cuda_gpu_trace.csv",
            DATA / "vernier_nsys2025.3.2_thor_nvtx_pushpop_trace.csv",
        ]
    )
    (group,) = result.groups
    # No decode_step/ProfilerStep range: the demo's 4 calls of (copy, copy, saxpy, copy back):
    # each step one kernel and three memory copies (counted as 4 kernels before copies
    # were counted apart).
    assert (group.anatomy.source, group.period, group.anatomy.count) == ("repeating-sequence", 4, 4)
    assert [(t.kernels, t.memops) for t in group.steps] == [(1, 3)] * 4
    assert [k.name for k in group.anatomy.top_kernels] == [
        "vernier::bench::demo::<unnamed>::saxpyKernel(float, const float *, float *, unsigned long)"
    ]
    # its named ranges are listed (the analyze result offers `--step-range` for them)
    assert {r.name for r in result.ranges} == {
        "NvtxAnnotation.G1",
        "copy_in",
        "kernel",
        "copy_out",
        "NvtxAnnotation.G1Phases",
    }
    assert result.device_names == ["NVIDIA Thor (0)"]
    _check_invariants(group)
    named = analyze_gpu_trace(
        [
            DATA / "vernier_nsys2025.3.2_thor_cuda_gpu_trace.csv",
            DATA / "vernier_nsys2025.3.2_thor_nvtx_pushpop_trace.csv",
        ],
        step_range="copy_in",
    )
    assert [g.group for g in named.groups] == [None, "NvtxAnnotation.G1Phases"]


# ------------------------------------------------------------- period detection


def _decode_template(layers: int = 4) -> list[int]:
    """embed, per layer (norm, qkv, attn, o, norm, up, down), final norm, lm_head, sample."""
    return [100] + [1, 2, 3, 4, 1, 5, 6] * layers + [1, 7, 8]


def _steps_of(found: Period | None) -> list[int]:
    assert found is not None
    return [*found.boundaries, found.end]


def test_period_with_prefill_prefix_and_gaps() -> None:
    template = _decode_template()
    p = len(template)  # 32
    rng = random.Random(1)
    prefix = [rng.randrange(200, 300) for _ in range(45)]
    seq = prefix + template * 20
    # The GPU waits longest before each step's embed kernel.
    gaps = [0] * len(seq)
    for k in range(20):
        gaps[45 + k * p] = 500
    found = find_period(seq, gaps)
    assert found is not None and found.period == p
    assert _steps_of(found) == [45 + k * p for k in range(21)]


def test_period_prefers_the_step_over_the_layer_and_its_double() -> None:
    # The last kernel alternates between two sampling kernels: twice the period would
    # match better, the layer period (7) repeats too; the step is still 32.
    template = _decode_template()
    seq: list[int] = []
    for k in range(30):
        seq += [*template[:-1], 8 if k % 2 else 9]
    found = find_period(seq)
    assert found is not None and found.period == 32
    assert found.count == 30 and found.boundaries[0] == 0 and found.end == len(seq)


def test_period_tolerates_a_one_off_kernel_and_a_tail() -> None:
    template = _decode_template()
    steps_ = [list(template) for _ in range(12)]
    steps_[6].insert(10, 555)  # a one-off kernel inside step 6
    seq = [x for s in steps_ for x in s] + [300, 301, 302]  # a tail that is no step
    gaps = [0] * len(seq)
    pos = 0
    for s in steps_:
        gaps[pos] = 900
        pos += len(s)
    found = find_period(seq, gaps)
    bounds = _steps_of(found)
    assert bounds[:7] == [k * 32 for k in range(7)]
    assert bounds[7:] == [7 * 32 + 1 + k * 32 for k in range(6)]  # shifted by the extra kernel
    assert len(seq) - bounds[-1] == 3


def test_no_period_in_noise() -> None:
    rng = random.Random(7)
    assert find_period([rng.randrange(0, 1000) for _ in range(2000)]) is None
    assert find_period([1, 2, 3]) is None


def test_no_repeating_step_is_reported(tmp_path: Path) -> None:
    rng = random.Random(3)
    rows = [kernel_row(i * 1000, 500, i, f"k{rng.randrange(10_000)}") for i in range(300)]
    path = write_csv(tmp_path / "x_cuda_gpu_trace.csv", GPU_TRACE_HEADER, rows)
    result = analyze_gpu_trace([path])
    assert result.groups == []
    assert any("does not repeat" in n for n in result.notes)
    assert result.trace.gpu_busy_pct == pytest.approx(100 * 150_000 / 299_500, abs=1e-3)


# -------------------------------------------------------------- interval union

_INTERVALS = st.lists(
    st.tuples(st.integers(0, 300), st.integers(0, 40)).map(lambda t: (t[0], t[0] + t[1])), max_size=40
)


@settings(max_examples=300, deadline=None)
@given(_INTERVALS, st.randoms(use_true_random=False))
def test_union_matches_brute_force(intervals: list[tuple[int, int]], rnd: random.Random) -> None:
    covered = {x for s, e in intervals for x in range(s, e)}
    shuffled = list(intervals)
    rnd.shuffle(shuffled)
    union = IntervalUnion()
    for s, e in shuffled:
        union.add(s, e)
    union.finish()
    assert union.busy == len(covered) == union_length(sorted(intervals))
    assert union.busy <= union.span
    # Busy time within any window, against the brute force too.
    a, b = sorted((rnd.randrange(0, 350), rnd.randrange(0, 350)))
    assert union.busy_within(a, b) == len({x for x in covered if a <= x < b})


# ------------------------------------------------------------- floor and verdict


def _group(tmp_path: Path) -> StepGroup:
    return analyze_gpu_trace(_nsys_files(tmp_path)).groups[1]  # mode:graphs, 2 us steps, 25% busy


def test_floor() -> None:
    floor = memory_floor(16_000_000_000, 4.8, "spec", step_ms=9.8)
    assert floor.floor_ms == pytest.approx(3.333333, abs=1e-6)
    assert floor.pct_of_floor == pytest.approx(294.0, abs=0.1)
    with pytest.raises(ValueError):
        memory_floor(1, 0, "measured")


def test_verdicts_name_their_thresholds(tmp_path: Path) -> None:
    group = _group(tmp_path)
    # each replay's range runs on 1 us after its 0.5 us of GPU work: the GPU waits for the host
    host = analyze_verdict(group)
    assert host.kind == "host-bound" and f">= {HOST_BOUND_WAIT_PCT:g}% waiting" in host.text
    assert "waited 1.50 us for the host (75% of the step; 1.00 us of it after its last operation" in host.text
    idle = group.model_copy(deep=True)
    for t in idle.steps:  # the same idle time, between the kernels instead
        t.idle_between_kernels_ns += t.idle_waiting_for_host_ns + t.idle_after_last_ns
        t.idle_waiting_for_host_ns = t.idle_after_last_ns = 0
    inferred = group.model_copy(deep=True)
    for t in inferred.steps:  # no host range (steps inferred from the operations): nothing queued after the work
        t.cpu_start_ns = t.cpu_end_ns = None
    unseen = analyze_verdict(inferred)
    assert unseen.kind == "host-bound" and "nothing queued until the next step's first" in unseen.text
    assert "between steps (the trace has no host ranges" in unseen.next_step
    launch = analyze_verdict(idle)
    assert launch.kind == "launch-bound"
    assert "idle 75%" in launch.text and f">= {LAUNCH_BOUND_IDLE_PCT:g}% idle" in launch.text
    # the steps are graph replays: never told to capture a graph
    assert "graph replay (1 launch, 2 GPU operations)" in launch.text
    assert "graph replay already" in launch.next_step and "capture the step in a CUDA graph" not in launch.next_step
    assert launch.thresholds == {
        "host_bound_wait_pct": 30.0,
        "launch_bound_idle_pct": 30.0,
        "host_gap_ms": 1.0,
        "alone_bound_pct": 50.0,
        "near_floor_ratio": NEAR_FLOOR_RATIO,
    }
    busy = group.model_copy(deep=True)
    for t in busy.steps:  # the same steps with no idle time: the GPU is the limit
        t.busy_ns, t.idle_before_first_ns, t.idle_between_kernels_ns, t.idle_after_last_ns = t.window_ns, 0, 0, 0
        t.idle_waiting_for_host_ns = 0
        t.kernel_busy_ns = t.window_ns
    copies = busy.model_copy(deep=True)
    for t in copies.steps:  # busy, but copying memory alone 60% of the step
        t.kernel_busy_ns = t.window_ns * 2 // 5
    copy = analyze_verdict(copies, floor=memory_floor(1_000_000, 3.35, "spec"))
    assert copy.kind == "copy-bound" and "run 60% of the step, its kernels 40%" in copy.text
    assert ">= 50% alone" in copy.text and "pin_memory=True" in copy.next_step
    step_ms = busy.anatomy.step_ms.median
    comm = busy.model_copy(deep=True)  # an all-reduce 1.6 us of the 2 us step, 0.6 us of other kernels
    comm.kinds = [
        KindShare(kind="communication", ms_per_step=step_ms * 0.8, pct=80.0),
        KindShare(kind="gemm", ms_per_step=step_ms * 0.3, pct=30.0),
    ]
    collective = analyze_verdict(comm, floor=memory_floor(1_000_000, 3.35, "spec"))
    assert collective.kind == "communication-bound" and "at least 70% of the step" in collective.text
    assert "compare the ranks' traces" in collective.next_step
    comm.kinds[1] = KindShare(kind="gemm", ms_per_step=step_ms * 0.6, pct=60.0)  # alone at least 40%: not bound
    assert analyze_verdict(comm, floor=memory_floor(1_000_000, 3.35, "spec")).kind == "memory-bound"
    near = analyze_verdict(busy, floor=memory_floor(6_000_000, 3.35, "measured"))  # 1.79 us floor, step 2 us
    assert near.kind == "near-memory-floor" and "1.12x the floor" in near.text
    assert analyze_verdict(busy, floor=memory_floor(5_000_000, 3.35, "measured")).kind == "memory-bound"  # 1.34x
    far = analyze_verdict(busy, floor=memory_floor(1_000_000, 3.35, "spec"))
    assert far.kind == "memory-bound" and "largest kernels: gemv_kernel<float, 128>" in far.text
    ridge = Bandwidth(tbps=3.35, basis="spec", label="spec", peak_tflops=3.35 * 295)  # 295 FLOP per byte
    compute = analyze_verdict(busy, floor=memory_floor(1_000_000, 3.35, "spec"), flop_per_step=1e9, bandwidth=ridge)
    assert (
        compute.kind == "compute-bound" and "1000 FLOP per byte is above the GPU's ridge point of 295" in compute.text
    )
    assert analyze_verdict(busy).kind == "busy"


def test_records_with_launch_times_joined_give_the_same_steps(tmp_path: Path) -> None:
    """An export that joins each operation to its launch (nsys's SQLite export does) needs
    no API calls to give steps their kernels: the same anatomy as the CSVs with cuda_api_trace."""
    from nsightlab.analysis.steps import analyze_nsys_records
    from nsightlab.parse import gputrace

    files = _nsys_files(tmp_path)
    with_api = analyze_gpu_trace(files)
    cols = gputrace.read_gpu_trace_columns(files[0])
    launch_of = {c.corr_id: c.start_ns for c in gputrace.read_cuda_api(files[2]) if c.corr_id is not None}
    cols.launch = array("q", [launch_of.get(c, -1) for c in cols.corr])  # type: ignore[attr-defined]
    joined = analyze_nsys_records(cols, gputrace.read_nvtx_pushpop(files[1]), None, None, label=str(files[0]))
    assert joined.attribution == "launch"
    # graph replays and synchronisations are API calls: without them, only those differ
    calls = {"graph_replays_per_step", "syncs_per_step", "syncs_ms_per_step", "notes"}
    assert [g.anatomy.model_dump(exclude=calls) for g in joined.groups] == [
        g.anatomy.model_dump(exclude=calls) for g in with_api.groups
    ]
    assert [g.anatomy.graph_replays_per_step for g in with_api.groups] == [0, 1]
