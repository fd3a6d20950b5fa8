"""Kernel kinds on real kernel names of many vendors and libraries (tests/data/kernel_names).

`kernels.tsv` holds every distinct kernel, copy and set name of real public traces
(vLLM and SGLang on MI300X, vLLM on B200, HF models on H100 and MI300X, training traces
on A100, V100, MI210 and MI300X), of nsightlab's own nsys fixtures, of AMD aiter's kernel
tables and of a public issue thread, each with the kind a person gives it; SOURCES.md
says where each was seen.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import get_args

import pytest

from nsightlab.parse.kinds import KernelKind, is_memory_operation, kernel_kind, step_kernel_kind

DATA = Path(__file__).parent / "data" / "kernel_names"


def _rows() -> list[tuple[str, str, str]]:
    rows = []
    for line in (DATA / "kernels.tsv").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            kind, source, name = line.split("\t", 2)
            rows.append((kind, source, name))
    return rows


ROWS = _rows()


def test_the_corpus_is_whole_and_every_source_is_described() -> None:
    assert len(ROWS) > 900 and len({name for _, _, name in ROWS}) == len(ROWS)
    assert {kind for kind, _, _ in ROWS} <= set(get_args(KernelKind))
    sources = (DATA / "SOURCES.md").read_text(encoding="utf-8")
    for origin in {source.split(":", 1)[0] for _, source, _ in ROWS}:
        assert f"`{origin}:" in sources, origin
    for _, source, _ in ROWS:
        origin, where = source.split(":", 1)
        if origin == "nsightlab":
            assert (Path(__file__).parent.parent / where).is_file(), where


@pytest.mark.parametrize(("kind", "source", "name"), ROWS, ids=[f"{i}-{r[0]}" for i, r in enumerate(ROWS)])
def test_every_real_name_has_its_kind(kind: str, source: str, name: str) -> None:
    assert kernel_kind(name) == kind, (source, name)
    # The decode anatomy's kinds are the same, with reductions counted as `other`.
    assert step_kernel_kind(name) == ("other" if kind == "reduce" else kind)


# The families the issue names, each with a real name of the corpus and its kind.
FAMILIES = [
    ("cuBLAS (xmma)", r"^sm90_xmma_gemm_.*_cublas$", "gemm"),
    ("cuBLAS GEMV", r"gemvx::kernel<", "gemm"),
    ("cuBLASLt nvjet", r"^nvjet_tst_", "gemm"),
    ("cuBLASLt split-K", r"cublasLt::splitKreduce_kernel", "gemm"),
    ("CUTLASS", r"cutlass::Kernel2<cutlass_80_tensorop", "gemm"),
    ("hipBLASLt / Tensile", r"^Cijk_Alik_Bljk_", "gemm"),
    ("Composable Kernel (ck)", r"^_ZN2ck16tensor_operation", "gemm"),
    ("Composable Kernel (ck_tile) norm", r"^_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwd", "norm"),
    ("Composable Kernel (ck_tile) attention", r"^_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefill", "attention"),
    ("aiter (mangled)", r"^_ZN5aiter24add_rmsnorm_quant_kernel", "norm"),
    ("aiter MoE", r"^_ZN5aiter47fmoe_", "gemm"),
    ("aiter paged attention", r"^_ZN5aiter32pa_bf16", "attention"),
    ("aiter FMHA", r"^aiter::fmha_fwd", "attention"),
    ("Triton pointwise", r"^triton_poi_fused", "elementwise"),
    ("Triton reduction (RMSNorm)", r"^triton_red_fused_add_mean_mul_pow_rsqrt_0$", "norm"),
    ("Triton reduction", r"^triton_red_fused_abs_amax", "reduce"),
    ("Triton persistent reduction", r"^triton_per_fused__to_copy_addmm_mean_pow_view_7$", "reduce"),
    ("Triton MoE GEMM", r"^_matmul_ogs_", "gemm"),
    ("Triton MoE GEMM (vLLM)", r"^fused_moe_kernel$", "gemm"),
    ("MoE finalize", r"^_finalize_matmul_scatter", "reduce"),
    ("TensorRT-LLM bmm", r"^bmm_.*_sm100f$", "gemm"),
    ("FlashAttention", r"flash_fwd_kernel<", "attention"),
    ("FlashAttention split-KV", r"flash_fwd_splitkv_kernel<", "attention"),
    ("FMHA (TensorRT-LLM, Blackwell)", r"^fmhaSm100aKernel_", "attention"),
    ("FMHA (xFormers)", r"^fmha_cutlassF_", "attention"),
    ("paged attention (ROCm)", r"paged_attention_ll4mi_QKV", "attention"),
    ("unified attention (vLLM Triton)", r"^kernel_unified_attention_2d$", "attention"),
    ("NCCL", r"^ncclDevKernel_AllGather", "communication"),
    ("RCCL (MI300X: RCCL names its kernels nccl*)", r"^ncclDevKernel_Generic", "communication"),
    ("custom all-reduce", r"cross_device_reduce_1stage", "communication"),
    ("symmetric-memory all-reduce", r"multimem_all_reduce_kernel", "communication"),
    ("KV-cache write", r"reshape_and_cache_flash_kernel", "copy"),
    ("memory copy (Kineto)", r"^Memcpy HtoD \(Pinned -> Device\)$", "memory"),
    ("memory set (Kineto)", r"^Memset \(Device\)$", "memory"),
]


@pytest.mark.parametrize(("family", "pattern", "kind"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_each_family_is_in_the_corpus_with_its_kind(family: str, pattern: str, kind: str) -> None:
    found = [(k, n) for k, _, n in ROWS if re.search(pattern, n)]
    assert found, f"no {family} name in the corpus"
    assert {k for k, _ in found} == {kind}, found[:3]


def test_memory_operations_are_their_own_kind_and_never_a_kernels() -> None:
    memory = [(k, n) for k, _, n in ROWS if is_memory_operation(n)]
    assert len(memory) >= 8 and all(k == "memory" for k, _ in memory)
    assert all(kernel_kind(n) != "memory" for _, _, n in ROWS if not is_memory_operation(n))
    # nsys spells them differently; a kernel that copies is a kernel.
    assert kernel_kind("[CUDA memcpy Host-to-Device]") == "memory"
    assert kernel_kind("[CUDA memset]") == "memory"
    assert kernel_kind("void copy_kernel<double>(const T1 *, T1 *)") == "copy"


def test_the_corpus_has_every_kind_and_some_of_each_vendor() -> None:
    kinds = Counter(k for k, _, _ in ROWS)
    assert set(kinds) == set(get_args(KernelKind))
    # TraceLens's traces ran on AMD Instinct GPUs except its h100/ and b200/ ones.
    amd = [
        n
        for _, s, n in ROWS
        if s.startswith("aiter:") or (s.startswith("tracelens:") and not re.search(r"/(h100|b200)/", s))
    ]
    nvidia = [n for _, s, n in ROWS if s.startswith("nsightlab:") or re.search(r"/(h100|b200)/", s)]
    assert len(amd) > 300 and len(nvidia) > 400
