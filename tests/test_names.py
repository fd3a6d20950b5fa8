"""Kernel-name helpers, on the real kernel names of the fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsightlab.parse import ncu_csv as ncu_parse
from nsightlab.parse import nsys
from nsightlab.parse.names import (
    kernel_kind,
    kernel_names_match,
    normalise_kernel_name,
    short_kernel_name,
)

FIXTURES = Path(__file__).parent / "fixtures"
F03 = FIXTURES / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv"
F04 = FIXTURES / "ncu" / "04_ncu_csv_section_SpeedOfLight_cutlass_gemm_rtx5090.csv"
F05 = FIXTURES / "ncu" / "05_ncu_csv_page_details_vectorized_elementwise_rtx5090.csv"


def _nsys_names() -> list[str]:
    names: list[str] = []
    for path in sorted((FIXTURES / "nsys").glob("*.*")):
        report = nsys.parse_file(path)
        names += [k.name for k in report.kernels or []]
    return names


def _ncu_name(path: Path) -> str:
    return ncu_parse.parse_file(path).kernels[0].name


NSYS_NAMES = _nsys_names()
PYTORCH_NAMES = [k.name for k in nsys.parse_file(F03).kernels or []]

HALF_MUL = (
    "void at::native::vectorized_elementwise_kernel<(int)4, at::native::BinaryFunctor<c10::Half, "
    "c10::Half, c10::Half, at::native::binary_internal::MulFunctor<float>>, "
    "std::array<char *, (unsigned long)3>>(int, T2, T3)"
)
CUTLASS_F16 = "void cutlass::Kernel2<cutlass_80_tensorop_f16_s16816gemm_relu_f16_256x128_32x3_nn_align8>(T1::Params)"


# ---------------------------------------------------------------- short names


def test_short_name_of_the_pytorch_mul_kernel() -> None:
    wide = short_kernel_name(HALF_MUL, width=100)
    assert wide == "at::native::vectorized_elementwise_kernel<4, BinaryFunctor<Half, Half, Half, MulFunctor<float>>>"
    short = short_kernel_name(HALF_MUL)
    assert len(short) <= 60
    assert short.startswith("vectorized_elementwise_kernel<4, Binary")
    assert short.endswith("MulFunctor<float>>>")
    assert "…" in short


def test_short_name_unwraps_cutlass() -> None:
    inner = "cutlass_80_tensorop_f16_s16816gemm_relu_f16_256x128_32x3_nn_align8"
    assert short_kernel_name(CUTLASS_F16, width=80) == inner
    # The tile name alone is 67 characters: at 60 its middle goes, both ends stay.
    short = short_kernel_name(CUTLASS_F16)
    assert len(short) == 60
    assert short.startswith("cutlass_80_tensorop_f16")
    assert short.endswith("gemm_relu_f16_256x128_32x3_nn_align8")
    ncu_style = short_kernel_name(_ncu_name(F04), width=80)  # `void Kernel2<...>(Params)`
    assert ncu_style == "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8"


@pytest.mark.parametrize(
    ("full", "short"),
    [
        ("void add_kernel<double>(const T1 *, const T1 *, T1 *)", "add_kernel<double>"),
        ("vectorAdd(const float *, const float *, float *, int)", "vectorAdd"),
        (
            "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, "
            "cutlass::arch::Sm80, (bool)1, (int)64, (int)64, (int)64, (bool)1, (bool)1>::Params)",
            "fmha_cutlassF_bf16_aligned_64x64_rf_sm80",
        ),
        (
            "void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_add<c10::BFloat16>, "
            "std::array<char *, (unsigned long)3>>(int, T2, T3)",
            "vectorized_elementwise_kernel<4, CUDAFunctor_add<BFloat16>>",
        ),
        (
            "void at::native::vectorized_elementwise_kernel<(int)4, at::native::<unnamed>::silu_kernel("
            "at::TensorIteratorBase &)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 6)]"
            "::operator ()() const::[lambda(c10::BFloat16) (instance 1)], std::array<char *, (unsigned long)2>>"
            "(int, T2, T3)",
            "vectorized_elementwise_kernel<4, silu_kernel::lambda>",
        ),
        ("fused__autocast_to__12152488584593855096", "fused__autocast_to__12152488584593855096"),
    ],
)
def test_short_name_examples(full: str, short: str) -> None:
    assert short_kernel_name(full) == short


def test_short_name_keeps_the_scope_of_a_generic_kernel_name() -> None:
    gemv = PYTORCH_NAMES[0]
    assert gemv.startswith("std::enable_if<!T7, void>::type internal::gemvx::kernel<")
    short = short_kernel_name(gemv)
    assert short.startswith("gemvx::kernel<int, int, __nv_bfloat")
    assert short.endswith("float>>")


@pytest.mark.parametrize("width", [12, 30, 60, 90])
def test_short_names_fit_and_drop_the_noise(width: int) -> None:
    assert len(NSYS_NAMES) == 6 + 6 + 113 + 1
    for name in NSYS_NAMES:
        short = short_kernel_name(name, width=width)
        assert 0 < len(short) <= width, (name, short)
        assert not short.startswith("void "), short
        for noise in ("(int)", "(unsigned long)", "(bool)", "c10::", "std::"):
            assert noise not in short, (noise, short)


def test_short_name_keeps_kernels_apart() -> None:
    # Distinct PyTorch kernels stay mostly distinguishable at a wide table width.
    shorts = {short_kernel_name(n, width=100) for n in PYTORCH_NAMES}
    assert len(shorts) >= 100


# -------------------------------------------------------------- normalisation


def test_ncu_names_join_the_nsys_names_they_came_from() -> None:
    for ncu_path, expected_nsys in (
        (
            F05,
            "void at::native::vectorized_elementwise_kernel<(int)4, at::native::BinaryFunctor<c10::BFloat16, "
            "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float>>, "
            "std::array<char *, (unsigned long)3>>(int, T2, T3)",
        ),
        (
            F04,
            "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8>(T1::Params)",
        ),
    ):
        ncu_name = _ncu_name(ncu_path)
        matches = [n for n in PYTORCH_NAMES if normalise_kernel_name(n) == normalise_kernel_name(ncu_name)]
        assert matches == [expected_nsys]
        assert kernel_names_match(expected_nsys, ncu_name)


def test_normalised_names_stay_distinct_and_are_stable() -> None:
    normalised = [normalise_kernel_name(n) for n in PYTORCH_NAMES]
    assert len(set(normalised)) == len(PYTORCH_NAMES)
    assert all(normalise_kernel_name(n) == n for n in normalised)
    assert normalise_kernel_name(HALF_MUL) == (
        "vectorized_elementwise_kernel<4,BinaryFunctor<Half,Half,Half,MulFunctor<float>>,array<char*,3>>"
    )


def test_truncated_column_names_match_by_prefix() -> None:
    truncated = "void at::native::vectorized_elementwise_kernel<(int)4, at::native::BinaryFunctor<c10::BFl…"
    full = PYTORCH_NAMES[5]
    assert full.startswith(
        "void at::native::vectorized_elementwise_kernel<(int)4, at::native::BinaryFunctor<c10::BFloat16"
    )
    assert kernel_names_match(truncated, full)
    assert kernel_names_match(full, truncated)
    assert kernel_names_match(truncated, _ncu_name(F05))
    assert not kernel_names_match(truncated, PYTORCH_NAMES[2])


# ------------------------------------------------------------------ kinds


def test_kernel_kinds_over_the_pytorch_fixture() -> None:
    kinds = {name: kernel_kind(name) for name in PYTORCH_NAMES}
    assert all(kinds[n] == "gemm" for n in PYTORCH_NAMES if n.startswith("void cutlass::Kernel2<"))
    assert all(kinds[n] == "elementwise" for n in PYTORCH_NAMES if "vectorized_elementwise_kernel" in n)
    assert all(kinds[n] == "elementwise" for n in PYTORCH_NAMES if "unrolled_elementwise_kernel" in n)
    assert all(kinds[n] == "attention" for n in PYTORCH_NAMES if "flash_fwd" in n or "fmha" in n)
    assert all(kinds[n] == "reduce" for n in PYTORCH_NAMES if "at::native::reduce_kernel<" in n)
    # cuBLASLt's split-K reduction belongs to its GEMM.
    assert all(kinds[n] == "gemm" for n in PYTORCH_NAMES if "cublasLt::splitKreduce_kernel" in n)
    assert all(kinds[n] == "copy" for n in PYTORCH_NAMES if "CatArrayBatchedCopy" in n)
    assert all(kinds[n] == "gemm" for n in PYTORCH_NAMES if "gemv" in n or "xmma" in n or "gemmk1" in n)
    # 16 cutlass Kernel2 + 1 cudnn cutlass Kernel + 2 gemvx + 2 gemmk1 + 2 xmma + 1 splitK.
    assert sum(k == "gemm" for k in kinds.values()) == 24


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        (CUTLASS_F16, "gemm"),
        (HALF_MUL, "elementwise"),
        (
            "void Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8>(Params)",
            "gemm",
        ),
        (
            "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
            "gemm",
        ),
        ("ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_nn", "gemm"),
        ("distribution_elementwise_grid_stride_kernel", "elementwise"),
        (
            "void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, "
            "at::native::MeanOps<float, float, float, float>, unsigned int, float, (int)4, (int)4>>(T3)",
            "reduce",
        ),
        (
            "void <unnamed>::softmax_warp_forward<float, float, float, (int)6, (bool)0, (bool)0>(T2 *, const T1 "
            "*, int, int, int, const bool *, int, bool)",
            "reduce",
        ),
        ("[CUDA memcpy Device-to-Host]", "memory"),  # a memory operation: never a kernel kind
        ("void copy_kernel<double>(const T1 *, T1 *)", "copy"),
        ("void add_kernel<double>(const T1 *, const T1 *, T1 *)", "elementwise"),
        ("vectorAdd(const float *, const float *, float *, int)", "elementwise"),
        ("void dot_kernel<double>(const T1 *, const T1 *, T1 *, int)", "reduce"),
        ("fused__autocast_to__12152488584593855096", "other"),
    ],
)
def test_kernel_kind_examples(name: str, kind: str) -> None:
    assert kernel_kind(name) == kind
