"""Whole-trace figures against HolisticTraceAnalysis's temporal breakdown of the same real
traces (its figures computed once, in tests/data/traces/hta_expected.json with the HTA
version and the exact call; HTA itself is never imported here).

Where the definitions agree the figures are equal to the microsecond. They differ in
three ways, each shown below:
1. HTA's window: with two or more ProfilerSteps it keeps only GPU work launched before the
   last step begins, and drops GPU work with no launch in the file; nsightlab's whole
   trace is every GPU operation.
2. HTA rounds each op's start up and its end down to whole microseconds (float64 sums)
   when the trace has fractional timestamps; nsightlab keeps integer nanoseconds.
3. HTA counts any event with a `stream` argument as GPU work, CPU ops included (the
   Triton trace's `cpu_op` carries `stream: 0`); nsightlab counts kernels, memcpy and
   memset events only.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pytest
from tracebuild import analyze_verdict

from nsightlab.analysis.intervals import union_length
from nsightlab.analysis.steps import analyze_kineto
from nsightlab.parse import kineto

DATA = Path(__file__).parent / "data" / "traces"
EXPECTED = json.loads((DATA / "hta_expected.json").read_text(encoding="utf-8"))
STEPPED = [
    "hta_negative_queue_length_rank0.json.gz",
    "hta_ns_resolution_rank0.pt.trace.json.gz",
    "hta_trace_filter_sampled_rank0.json.gz",
]


@functools.cache
def _events(name: str) -> list[kineto.KinetoEvent]:
    return list(kineto.KinetoReader(DATA / name))


def _hta_window(name: str) -> tuple[int, int, int]:
    """(span us, idle us, ops) of the GPU work HTA keeps, from nsightlab's reader and union."""
    events = _events(name)
    steps = [e for e in events if isinstance(e, kineto.TraceRange) and e.name.startswith("ProfilerStep#")]
    gpu = [e for e in events if isinstance(e, kineto.GpuEvent)]
    if len(steps) >= 2:
        last = max(s.start_ns for s in steps)
        launched = {e.correlation for e in events if isinstance(e, kineto.LaunchCall) and e.start_ns < last}
        gpu = [g for g in gpu if g.correlation in launched]
    fractional = any(e.start_ns % 1000 or e.end_ns % 1000 for e in events)
    intervals = []
    for g in gpu:
        if fractional:  # HTA: ts and ts + dur as float64 us, start rounded up, end down
            ts = g.start_ns / 1000
            end = ts + (g.end_ns - g.start_ns) / 1000
            intervals.append((math.ceil(ts), math.floor(end)))
        else:
            intervals.append((g.start_ns // 1000, g.end_ns // 1000))
    span = max(e for _, e in intervals) - min(s for s, _ in intervals)
    return span, span - union_length(intervals), len(gpu)


@pytest.mark.parametrize("name", STEPPED)
def test_equal_to_hta_on_the_work_hta_keeps(name: str) -> None:
    hta = EXPECTED["results"][name]
    span, idle, _ = _hta_window(name)
    assert (span, idle) == (hta["kernel_time(us)"], hta["idle_time(us)"])


@pytest.mark.parametrize("name", STEPPED)
def test_whole_trace_differs_from_hta_only_by_its_window(name: str) -> None:
    hta = EXPECTED["results"][name]
    summary = analyze_kineto(DATA / name).trace
    _, _, kept = _hta_window(name)
    # nsightlab's span covers all GPU work: never shorter than HTA's window of it.
    assert summary.span_ms * 1000 >= hta["kernel_time(us)"]
    gpu = [(e.start_ns, e.end_ns) for e in _events(name) if isinstance(e, kineto.GpuEvent)]
    total = len(gpu)
    # ... and its busy time is the union of all of it, computed the same way.
    assert summary.gpu_busy_pct == pytest.approx(100 * union_length(gpu) / (summary.span_ms * 1e6), abs=1e-3)
    assert kept <= total


def test_ns_resolution_rounding_is_the_only_difference_there() -> None:
    # Same window, no rounding: the exact union is a little larger than HTA's, whose
    # rounding takes up to 1 us off each op.
    name = "hta_ns_resolution_rank0.pt.trace.json.gz"
    hta = EXPECTED["results"][name]
    events = _events(name)
    last = max(e.start_ns for e in events if isinstance(e, kineto.TraceRange) and e.name.startswith("ProfilerStep#"))
    launched = {e.correlation for e in events if isinstance(e, kineto.LaunchCall) and e.start_ns < last}
    gpu = [(g.start_ns, g.end_ns) for g in events if isinstance(g, kineto.GpuEvent) and g.correlation in launched]
    busy_us = union_length(gpu) / 1000
    hta_busy = hta["kernel_time(us)"] - hta["idle_time(us)"]
    assert hta_busy < busy_us < hta_busy + len(gpu)


def test_triton_trace_hta_counts_a_cpu_op_with_a_stream() -> None:
    hta = EXPECTED["results"]["hta_triton_example.json.gz"]
    summary = analyze_kineto(DATA / "hta_triton_example.json.gz").trace
    # One kernel of 1.76 us; HTA's 94 us is the cpu_op `triton_poi_fused_add_cos_sin_0`
    # (95.812 us, `stream: 0`) joined with it.
    assert (summary.span_ms, summary.gpu_busy_pct, summary.kernels) == (0.00176, 100.0, 1)
    assert hta["kernel_time(us)"] == 94.0 and hta["idle_time(us)"] == 0.0


def test_a_step_that_compiles_after_its_one_kernel_is_the_hosts() -> None:
    # ProfilerStep#1 holds Triton's first call: one 1.76 us kernel, then 13.3 s of the host in
    # the step (compiling) with the GPU idle. That is the host's time, not launch overhead:
    # a CUDA graph would not shorten it.
    (group,) = analyze_kineto(DATA / "hta_triton_example.json.gz").groups
    (step,) = group.steps
    assert step.idle_after_last_ns > 13_000_000_000 and step.idle_between_kernels_ns == 0
    verdict = analyze_verdict(group)
    assert verdict.kind == "host-bound" and "after its last operation, the host still in the step" in verdict.text
    assert "after its GPU work ends" in verdict.next_step and "CUDA graph" not in verdict.next_step
