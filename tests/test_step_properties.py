"""Properties of the step anatomy on random traces: each step's busy time, other steps'
work and its four idle parts add up to its window exactly, none negative; a group's row
is one step's (its median step's) figures, so the row's parts add up to its time; the
nested-period search finds the step of any layered sequence with a head and a tail."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tracebuild import annotation, kernel, launch, write_kineto

from nsightlab.analysis.optable import ms
from nsightlab.analysis.period import find_steps
from nsightlab.analysis.steps import analyze_kineto

NAMES = ["gemm", "norm_kernel", "attn_fwd", "silu_kernel", "reduce_argmax"]


def _random_trace(rnd: random.Random) -> list[dict[str, Any]]:
    """Steps with random host ranges (some ending before their work: the host ran ahead),
    random kernels and copies on two streams, graph replays, synchronisations."""
    events: list[dict[str, Any]] = []
    corr = 1
    t = 0
    for k in range(rnd.randint(1, 6)):
        h0 = t + rnd.randint(0, 50)
        h1 = h0 + rnd.randint(5, 400)
        phase = rnd.choice(["execute_context_0(0)_generation_4(4)", "execute_context_1(64)_generation_0(0)"])
        events.append(annotation(phase if rnd.random() < 0.8 else "decode_step", h0, h1 - h0))
        if rnd.random() < 0.4:
            s0 = rnd.randint(h0, h1 - 1)
            events.append(launch("cudaStreamSynchronize", s0, rnd.randint(1, h1 - s0), 90_000 + k))
        g = h0 + rnd.randint(0, 600)
        graph = rnd.random() < 0.4
        if graph:
            corr += 1
            events.append(launch("cudaGraphLaunch", rnd.randint(h0, h1), 2, corr))
        for _ in range(rnd.randint(1, 8)):
            if not graph:
                corr += 1
                events.append(launch("cudaLaunchKernel", rnd.randint(h0, h1), 1, corr))
            dur = rnd.randint(1, 40)
            copy = rnd.random() < 0.2
            events.append(
                kernel(
                    "Memcpy HtoD (Pinned -> Device)" if copy else rnd.choice(NAMES),
                    g,
                    dur,
                    corr,
                    stream=rnd.choice([7, 8]),
                    cat="gpu_memcpy" if copy else "kernel",
                )
            )
            g += dur + rnd.randint(0, 30)
        t = max(h1, g) + rnd.randint(0, 100)
    return events


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.randoms(use_true_random=False), st.booleans())
def test_a_rows_parts_add_up_to_its_whole(tmp_path: Path, rnd: random.Random, tile: bool) -> None:
    path = write_kineto(tmp_path / "r.json", _random_trace(rnd))
    result = analyze_kineto(path, tile=tile)
    for g in result.groups:
        for t in g.steps:
            parts = (
                t.busy_ns,
                t.other_busy_ns,
                t.idle_before_first_ns,
                t.idle_between_kernels_ns,
                t.idle_after_last_ns,
                t.idle_waiting_for_host_ns,
            )
            assert min(parts) >= 0, t
            assert sum(parts) == t.window_ns, t
            assert t.kernel_busy_ns <= t.busy_ns and t.kernels + t.memops > 0
        m = g.steps[g.median_step]
        a = g.anatomy
        # the row is the median step's: its time, its idle split, its busy share
        assert a.step_ms.median == ms(m.window_ns)
        assert a.idle_ms_per_step.model_dump() == {
            "between_kernels": ms(m.idle_between_kernels_ns),
            "before_first": ms(m.idle_before_first_ns),
            "after_last": ms(m.idle_after_last_ns),
            "waiting_for_host": ms(m.idle_waiting_for_host_ns),
        }
        assert (a.kernels_per_step, a.memops_per_step) == (m.kernels, m.memops)
        busy_ms = a.gpu_busy_pct / 100 * a.step_ms.median
        other_ms = ms(m.other_busy_ns)
        assert abs(busy_ms + other_ms + sum(a.idle_ms_per_step.model_dump().values()) - a.step_ms.median) <= 1e-3
        assert sum(k.ms_per_step for k in a.top_kernels) <= a.step_ms.median + 1e-6
        assert {s.phase for s in g.steps} == {a.phase}


@settings(max_examples=80, deadline=None)
@given(
    st.integers(2, 12),  # layer length
    st.integers(6, 40),  # layers (a model's: 12 to 126 in practice)
    st.integers(1, 12),  # head
    st.integers(1, 12),  # tail
    st.integers(3, 8),  # steps
)
def test_the_search_finds_the_step_of_a_layered_sequence(layer: int, layers: int, head: int, tail: int, n: int) -> None:
    head, tail = min(head, layer), min(tail, layer)  # a head and a tail no longer than a layer
    template = list(range(100, 100 + head)) + list(range(layer)) * layers + list(range(200, 200 + tail))
    p = len(template)
    seq = template * n
    gaps = [0] * len(seq)
    for k in range(n):
        gaps[k * p] = 1000  # the host's work between steps
    found = find_steps(seq, gaps)
    assert found.period is not None
    assert found.period.period == p and found.period.count == n
    one = find_steps(template, [0] * p, [7] * p)  # one step, one graph replay
    assert one.one_step and one.layer == layer and one.layer_repeats == layers


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 3), max_size=48),  # a short trace's operation names (few, so they repeat by chance)
    st.lists(st.integers(0, 5000), min_size=48, max_size=48),
    st.booleans(),
)
def test_the_search_never_fails_on_a_short_or_irregular_sequence(
    seq: list[int], gaps: list[int], launched: bool
) -> None:
    """Any sequence, however short or irregular, gives steps or a reason, never an error (eight
    kernels of three names once divided by a lag of 0)."""
    found = find_steps(seq, gaps[: len(seq)], list(range(len(seq))) if launched else None)
    assert found.period is not None or found.why or found.one_step
    if found.period is not None:
        assert found.period.period >= 2
