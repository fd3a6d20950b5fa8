"""Triton kernels in profiles: `origin: triton` beside the operation kind.

Checked on real outputs: a Kineto trace with a Triton kernel (HolisticTraceAnalysis's
triton_example, tests/data/traces), the real nsys kernel tables in tests/fixtures (no
Triton kernel in them, so none may be marked), and kernel names quoted from real traces.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nsightlab.analysis.profile_models import ProfileResult
from nsightlab.analysis.profile_result import kernel_lines
from nsightlab.parse import kineto, names, nsys
from nsightlab.runs.analyze import analyze_path

HERE = Path(__file__).parent
TRACES = HERE / "data" / "traces"
NSYS = sorted((HERE / "fixtures" / "nsys").glob("*.*"))


def test_a_triton_kernel_in_a_kineto_trace() -> None:
    """The trace's one kernel is inductor's Triton kernel: its name says so, and the trace
    agrees (launched through the driver API, cuLaunchKernel, as Triton launches)."""
    events = list(kineto.KinetoReader(TRACES / "hta_triton_example.json.gz"))
    (k,) = [e for e in events if isinstance(e, kineto.GpuEvent) and e.kind == "kernel"]
    (launch,) = [e for e in events if isinstance(e, kineto.LaunchCall) and e.correlation == k.correlation]
    assert launch.name == "cuLaunchKernel" and k.name == "triton_poi_fused_add_cos_sin_0"
    assert names.kernel_origin(k.name) == "triton"


@pytest.mark.parametrize(
    "trace", ["hta_trace_filter_sampled_rank0.json.gz", "hta_ns_resolution_rank0.pt.trace.json.gz"]
)
def test_kernels_of_real_traces_without_triton_are_not_marked(trace: str) -> None:
    kernels = {
        e.name for e in kineto.KinetoReader(TRACES / trace) if isinstance(e, kineto.GpuEvent) and e.kind == "kernel"
    }
    assert len(kernels) > 50
    assert [n for n in kernels if names.kernel_origin(n) == "triton"] == []


def test_triton_2_kernels_replayed_from_cuda_graphs() -> None:
    """A100 rank 0 of a real training trace: inductor's Triton 2.x kernels (`triton__0d1d2d`,
    the specialisation suffix and nothing else) replayed from CUDA graphs. Every kernel it
    marks is one of those; none of the 5240 launched one by one with cudaLaunchKernel
    (torch's, cuBLAS's, NCCL's) is."""
    events = list(kineto.KinetoReader(TRACES / "hta_negative_queue_length_rank0.json.gz"))
    launched = {e.correlation: e.name for e in events if isinstance(e, kineto.LaunchCall)}
    kernels = [e for e in events if isinstance(e, kineto.GpuEvent) and e.kind == "kernel"]
    marked = [k for k in kernels if names.kernel_origin(k.name) == "triton"]
    assert sorted({k.name for k in marked}) == [
        "triton__0d1d23d", "triton__0d1d2d", "triton__0d1d2d3d", "triton__0d1d2d3d4d5d",
        "triton__0d1d2d3d4d5d6d", "triton__0d1d2d3d4d5d6d7d8d9d10d11d12d13d14",
    ]  # fmt: skip
    assert {launched.get(k.correlation) for k in marked} <= {"cudaGraphLaunch", None}
    direct = [k for k in kernels if launched.get(k.correlation) == "cudaLaunchKernel"]
    assert len(direct) == 5240 and not any(names.kernel_origin(k.name) for k in direct)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("_scale_kernel", "elementwise"),  # lab_scripts/sweep.py --impl triton, as nsys names it
        ("rms_norm_0d1d2d3de4de5", "norm"),  # Triton 2.x: the specialisation suffix (a Kineto trace)
        ("add_kernel_0d1d2d3de", "elementwise"),
        ("matmul_kernel_0d1d2d3de4de5de6de7c8de9c10de11c", "gemm"),
        ("triton_poi_fused_add_cos_sin_0", "elementwise"),  # inductor's prefix: pointwise
    ],
)
def test_triton_names_keep_their_kind(name: str, kind: str) -> None:
    assert names.kernel_origin(name) == "triton" and names.kernel_kind(name) == kind


@pytest.mark.parametrize(
    "name", ["kernel_0", "ampere_sgemm_128x64_nn", "gemv2T_kernel_val<int, int, float>", "scale_kernel"]
)
def test_other_names_are_not_triton(name: str) -> None:
    assert names.kernel_origin(name) is None


def test_nsys_tables_have_the_field_and_mark_nothing_in_them() -> None:
    """The real fixtures hold cuBLAS, cutlass, torch and BabelStream kernels only."""
    for path in NSYS:
        result = analyze_path(path)
        assert isinstance(result, ProfileResult)
        dumped = json.loads(result.model_dump_json())
        assert dumped["kernels"] and all(k["origin"] is None for k in dumped["kernels"])


def _row(name: str, instances: int, total_ns: float, pct: float) -> nsys.KernelSummaryRow:
    avg = total_ns / instances
    return nsys.KernelSummaryRow(
        name=name,
        time_pct=pct,
        total_ns=total_ns,
        instances=instances,
        avg_ns=avg,
        med_ns=avg,
        min_ns=avg,
        max_ns=avg,
        stddev_ns=0.0,
    )


def test_profile_rows_mark_triton_kernels_beside_their_kind() -> None:
    torch_scale = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
        "at::native::binary_internal::MulFunctor<float>>, std::array<char *, 2>>(int, T2, T3)"
    )
    report = nsys.NsysReport(kernels=[_row("_scale_kernel", 23, 23_000.0, 60.0), _row(torch_scale, 23, 15_000.0, 40.0)])
    triton_row, torch_row = kernel_lines(report)
    assert (triton_row.name, triton_row.kind, triton_row.origin) == ("_scale_kernel", "elementwise", "triton")
    assert (torch_row.kind, torch_row.origin) == ("elementwise", None)
