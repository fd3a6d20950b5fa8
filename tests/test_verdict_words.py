"""Every verdict and lesson sentence is chosen from the measured values: each is fed the
rows that contradict its usual wording, and must not say what the numbers do not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tracebuild import annotation, kernel, launch, write_kineto

from nsightlab.analysis.decode_models import Bandwidth, BatchPoint, DecodeMode
from nsightlab.analysis.explain import decode_words as words
from nsightlab.analysis.stepmodels import StepGroup
from nsightlab.analysis.steps import analyze_kineto
from nsightlab.analysis.verdicts import HOST_BOUND_WAIT_PCT, LAUNCH_BOUND_IDLE_PCT, memory_floor

CAPTURE = "capture the step in a CUDA graph"


def _group(
    tmp_path: Path, *, gap: int, graph: bool, host_wait: int = 0, sync: bool = False, tail: int = 0
) -> StepGroup:
    """Three decode steps of 10 kernels, 10 us each and `gap` us apart, after `host_wait` us
    of the host's range with nothing on the GPU (a blocking copy in it when `sync`), and
    `tail` us of the range after the last kernel."""
    events: list[dict[str, Any]] = []
    t, corr = 0, 0
    for _ in range(3):
        work = 10 * 10 + 9 * gap
        events.append(annotation("decode_step", t, host_wait + work + tail))
        if sync:
            events.append(launch("cudaMemcpy", t + 1, max(1, host_wait - 2), 5000 + corr))
        g = t + host_wait
        corr += 1
        if graph:
            events.append(launch("cudaGraphLaunch", g - 1 if host_wait else t, 1, corr))
        for i in range(10):
            if not graph:
                corr += 1
                events.append(launch("cudaLaunchKernel", g + i * (10 + gap) - 1 if i or host_wait else t, 1, corr))
            events.append(kernel(f"gemv_kernel_{i % 3}", g + i * (10 + gap), 10, corr))
        t += host_wait + work + tail
    path = write_kineto(tmp_path / f"g{gap}{graph}{host_wait}{sync}{tail}.json", events)
    (group,) = analyze_kineto(path).groups
    return group


def _verdict(group: StepGroup, **kw: Any) -> Any:
    kw.setdefault("floor", None)
    return words.verdict(group.anatomy.step_ms, group, **kw)


def test_host_bound_says_the_wait_and_never_asks_for_a_graph(tmp_path: Path) -> None:
    g = _group(tmp_path, gap=0, graph=True, host_wait=400, sync=True)
    v = _verdict(g)
    assert v.kind == "host-bound" and f"host-bound at >= {HOST_BOUND_WAIT_PCT:g}% waiting" in v.text
    assert "waited 400 us for the host" in v.text and "the host blocked" in v.text and "cudaMemcpy" in v.next_step
    assert CAPTURE not in v.next_step and "graph replay (1 launch, 10 GPU operations)" in v.text
    quiet = _verdict(_group(tmp_path, gap=0, graph=False, host_wait=400))  # no sync to blame
    assert quiet.kind == "host-bound" and "blocked" not in quiet.text and "start with" not in quiet.next_step
    # a blocking call that holds a sliver of the wait is said, but the advice does not start with it
    brief = g.model_copy(deep=True)
    for t in brief.steps:
        t.sync_ns = t.longest_sync_ns = t.sync_idle_ns = 16_000
    v = _verdict(brief)
    assert v.kind == "host-bound" and "the host blocked 16.0 us" in v.text and "start with" not in v.next_step


def test_launch_bound_advice_follows_the_step_and_the_command(tmp_path: Path) -> None:
    eager = _group(tmp_path, gap=20, graph=False)
    assert _verdict(eager).kind == "launch-bound"
    assert "(`--modes graphs`)" in _verdict(eager, command="profile decode").next_step
    assert "rerun `profile decode` with `--modes graphs`" in _verdict(eager, command="analyze").next_step
    plain = _verdict(eager, command="analyze", script=False).next_step
    assert CAPTURE in plain and "--modes" not in plain
    graph = _verdict(_group(tmp_path, gap=20, graph=True))
    assert graph.kind == "launch-bound" and CAPTURE not in graph.next_step
    assert "graph replay already" in graph.next_step and f">= {LAUNCH_BOUND_IDLE_PCT:g}% idle" in graph.text
    # the idle time split by cause, largest first
    split = _verdict(_group(tmp_path, gap=20, graph=False, tail=100))
    assert split.kind == "launch-bound" and "(180 us between kernels, 100 us after the last)" in split.text


def test_the_host_busy_after_the_steps_gpu_work_is_the_host_not_launches(tmp_path: Path) -> None:
    # idle after the last kernel while the step's host range is still open: the GPU waits for
    # the host to finish the step, and a graph would not help
    tail = _verdict(_group(tmp_path, gap=0, graph=False, tail=300))
    assert (
        tail.kind == "host-bound"
        and "waited 300 us for the host (75% of the step; 300 us of it after its last operation" in tail.text
    )
    assert "after its GPU work ends" in tail.next_step and CAPTURE not in tail.next_step
    # before the work and after it, together
    both = _verdict(_group(tmp_path, gap=0, graph=False, host_wait=40, tail=60))
    assert both.kind == "host-bound" and "waited 100 us for the host (50% of the step; 60.0 us of it after" in both.text


def test_the_floor_words_follow_the_ratio_and_the_cache(tmp_path: Path) -> None:
    busy = _group(tmp_path, gap=0, graph=False)
    step_ms = busy.anatomy.step_ms.median  # 0.1 ms
    bw = Bandwidth(tbps=1.0, basis="spec", label="spec")
    far = memory_floor(10_000_000, 1.0, "spec", step_ms)  # 10 us floor: 10x
    v = _verdict(busy, floor=far, bandwidth=bw)
    assert v.kind == "memory-bound" and "far from the floor" in v.text
    # the same bytes fit in a 50 MB cache: they can come from it, so no DRAM floor bounds the step
    cached = _verdict(busy, floor=far, bandwidth=bw, cache_bytes=50_000_000)
    assert cached.kind == "busy" and "fit in the L2 cache" in cached.text and "far from the floor" not in cached.text
    cpu = _verdict(busy, floor=far, bandwidth=bw, cache_bytes=50_000_000, cpu=True)
    assert "last-level cache" in cpu.text
    near = _verdict(busy, floor=memory_floor(90_000_000, 1.0, "spec", step_ms), bandwidth=bw)
    assert near.kind == "near-memory-floor" and "far from" not in near.text


def _point(batch: int, step_ms: float) -> BatchPoint:
    return BatchPoint(
        batch=batch,
        step_ms=step_ms,
        tokens_per_s=batch * 1000 / step_ms,
        predicted_tokens_per_s=None,
        bound=None,
    )


@pytest.mark.parametrize(
    ("last_ms", "said", "not_said"),
    [
        (2.0, "one step reads the weights once for every sequence in the batch", "fell"),
        (8.0, "about as fast as the batch", "reads the weights once"),
        (32.0, "tokens/s fell", "reads the weights once"),
    ],
)
def test_the_batch_sweep_lesson_follows_tokens_per_s(last_ms: float, said: str, not_said: str) -> None:
    (line,) = words.sweep_lesson([_point(1, 1.0), _point(8, last_ms)], "eager")
    assert said in line and not_said not in line


def _mode(name: str, step_ms: float, group: StepGroup) -> DecodeMode:
    steps = words.steps_from_group(group, floor_bytes=None, flop_per_step=None, bandwidth=None, cpu=False)
    steps.step_ms = steps.step_ms.model_copy(update={"median": step_ms})
    return DecodeMode(mode=name, batch=1, tokens_per_s=1000 / step_ms, steps=steps)


def test_graphs_against_eager_says_faster_only_when_it_is(tmp_path: Path) -> None:
    g = _group(tmp_path, gap=5, graph=False)
    faster = words.compare_modes([_mode("eager", 2.0, g), _mode("graphs", 1.0, g)], [g, g])
    assert "2.00x faster" in faster[0]
    slower = words.compare_modes([_mode("eager", 1.0, g), _mode("graphs", 1.2, g)], [g, g])
    assert "x faster" not in slower[0] and "does not make this step faster" in slower[0]


def test_the_story_never_calls_a_busy_step_idle(tmp_path: Path) -> None:
    busy = _group(tmp_path, gap=0, graph=False)
    line = words.story(_mode("eager", busy.anatomy.step_ms.median, busy), busy, cpu=False)
    assert "never sits idle" in line and "between launches" not in line
    idle = _group(tmp_path, gap=30, graph=False)
    assert "sits idle" in words.story(_mode("eager", idle.anatomy.step_ms.median, idle), idle, cpu=False)


def test_an_idle_time_far_below_its_columns_unit_is_not_a_string_of_zeros() -> None:
    from nsightlab import units
    from nsightlab.present.decodedoc import _gap_cell

    ms = units.time_unit([0.0327])  # a column of milliseconds (32.7 ms its largest)
    assert ms.name == "ms"
    assert _gap_cell(ms, 0.000001) == "<0.001"  # one nanosecond
    assert _gap_cell(ms, 0.0) == "0.00"
    assert _gap_cell(ms, 0.972) == "0.972" and _gap_cell(ms, 32.7) == "32.7"
    assert _gap_cell(ms, 0.001) == "0.00100"  # a microsecond still reads as one
