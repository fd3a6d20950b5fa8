"""What a GPU operation does, from its name: the kernel kinds, across vendors and libraries.

A kind is read from the kernel's name as a person who knows the libraries reads it:

- `gemm`: matrix products and convolutions, whoever wrote them: cuBLAS / cuBLASLt
  (`sm90_xmma_gemm_*`, `nvjet_*`, `gemvx::kernel`), CUTLASS (`cutlass_80_tensorop_*`,
  `cutlass::device_kernel<...GemmUniversal...>`), rocBLAS / hipBLASLt's Tensile kernels
  (`Cijk_Alik_Bljk_*`), Composable Kernel (`ck::...gemm...`, grouped convolutions),
  MIOpen (`igemm_fwd_*`), TensorRT-LLM's `bmm_*`, MoE GEMMs (`matmul_ogs`, `fused_moe`,
  aiter's `fmoe_*`), inductor's templates (`triton_tem_*`).
- `attention`: flash and paged attention (`flash_fwd*`, `fmha*`, `fmhaSm100a*`,
  `paged_attention*`, `unified_attention`, FlashInfer's `BatchDecode*`, aiter's `pa_*`).
- `norm`: RMS, layer, group and batch norms (vLLM's `rms_norm_kernel`, aiter's
  `add_rmsnorm_quant_kernel`, CK's `Rmsnorm2dFwd`, MIOpen's `BatchNorm*`, inductor's
  reductions that compute `rsqrt`).
- `elementwise`: pointwise kernels (PyTorch's `*elementwise_kernel`, activations,
  rotary embeddings, quantisation, inductor's `triton_poi_*`).
- `reduce`: reductions, softmax, top-k, scans, a MoE's finalize (the weighted sum of its
  experts' outputs), inductor's `triton_red_*` / `triton_per_*`.
- `copy`: kernels that move data: copies, transposes, concatenation, gathers, KV-cache
  writes (`reshape_and_cache*`, `store_kvcache`).
- `communication`: collectives: NCCL / RCCL (`ncclDevKernel_*`, `rccl*`), custom
  all-reduce kernels (`cross_device_reduce_*`, `multimem_all_reduce_kernel`,
  TensorRT-LLM's `allreduce_fusion_*`).
- `memory`: not a kernel: a memory copy or set the runtime did (`Memcpy HtoD (Pinned ->
  Device)`, `[CUDA memset]`). Never a kernel kind.
- `other`: everything the name does not tell (MoE routing, index building, ...).

Names that came mangled are demangled first where that is certain (`demangle`). Pure
string functions; the answers for names already seen are kept (a trace repeats a few
hundred names millions of times).
"""

from __future__ import annotations

import functools
import re
from typing import Literal

from nsightlab.parse.demangle import demangled
from nsightlab.parse.signature import (
    CUTLASS_WRAPPERS,
    last_component,
    split_signature,
    strip_arguments,
    top_level_split,
    unqualified,
)

KernelKind = Literal["gemm", "attention", "norm", "elementwise", "reduce", "copy", "communication", "memory", "other"]
StepKernelKind = Literal["gemm", "attention", "norm", "elementwise", "copy", "communication", "memory", "other"]
KernelOrigin = Literal["triton"]

# A memory operation as the profilers name it: Kineto's `Memcpy HtoD (Pinned -> Device)`
# and `Memset (Device)`, nsys's `[CUDA memcpy Host-to-Device]` and `[CUDA memset]`.
_MEMORY_OP = re.compile(r"^\[CUDA mem(?:cpy|set)\b|^Mem(?:cpy|set)\b", re.I)

_COMMUNICATION = re.compile(
    r"^nccl|^rccl|nccl(?:Dev)?Kernel|rcclGenericKernel|msccl|all_?reduce|all_?gather|reduce_?scatter|"
    r"all_?to_?all|cross_device_reduce|multimem_|lamport|quick_?reduce|SendRecv|deep_ep::",
    re.I,
)
# Writes into a KV cache: data movement, whatever attention word their name carries.
_CACHE_WRITE = re.compile(r"reshape_and_cache|store_kvcache|concat_and_cache|copy_page_indices", re.I)
_NORM = re.compile(
    r"rms_?norm|layer_?norm|group_?norm|batch_?norm|instance_?norm|GammaBeta|RowwiseMoments|(?:^|_)norm(?:_|$)|"
    r"(?:^|_)bn_(?:fw|bw)_",
    re.I,
)
_ATTENTION = re.compile(
    r"flash(?!infer)|fmha|attention|attn|mha_|_mha|sdpa|BatchDecode|BatchPrefill|PagedKV|sage_fwd|"
    r"^pa_(?:a16|bf16|fp16|fp8)|flash_?mla|mla_decode",
    re.I,
)
# The weighted sum of a MoE's expert outputs (TensorRT-LLM's finalizeKernel, triton_kernels'
# _finalize_matmul_scatter): a reduction, though `matmul` is in its name.
_MOE_FINALIZE = re.compile(r"finalize(?:Kernel|_matmul|_moe)", re.I)
_GEMM = re.compile(
    r"(?<!fb)gemm|gemv|cutlass|xmma|cublas|matmul|wmma|hmma|tensorop_|nvjet|s16816|s1688|implicit_gemm|"
    r"conv(?!ert)|fprop|dgrad|wgrad|winograd|[sh]cudnn|cask_cudnn|splitKreduce|ampere_[a-z0-9]+_|^Cijk_|"
    r"C[a-z]{3}_A[a-z]{3}_B[a-z]{3}_|^bmm_|fmoe|fused_moe|moe_gemm|grouped_mm|marlin",
    re.I,
)
# Bookkeeping: MoE routing (top-k selection, expert histograms), bounds and size checks.
_BOOKKEEPING = re.compile(r"routing|size_check|bounds_check", re.I)
_ELEMENTWISE = re.compile(
    r"elementwise|fill|pointwise|activation|silu|gelu|relu|act_and_mul|rotary|(?:^|_)rope(?:_|$)|quant|clamp|"
    r"multi_tensor_apply|SubTensorOp|to_float|^scale|^scal_kernel|^(?:vector_?add|[sd]?axpy|triad|add|mul|init)(?:_?kernel)?$",
    re.I,
)
_REDUCE = re.compile(
    r"reduce|reduction|softmax|topk|argmax|argmin|scan|(?:^|_)sum(?:_|$)|mean|^dot(?:_?kernel)?$", re.I
)
_COPY = re.compile(
    r"copy|memcpy|memset|transpose|nchwtonhwc|nhwctonchw|cat_?array|gather|scatter|im2col|im2d2col|col2im|"
    r"index_?select|embedding|upsample_nearest|permute",
    re.I,
)

# Kernels that wrap the real one in a template argument: cutlass 2.x `Kernel2<NAME>`,
# cutlass 3.x `device_kernel<...>`, Composable Kernel's `ck_tile::kentry<N, KERNEL<...>>`.
_WRAPPERS = {*CUTLASS_WRAPPERS, "kentry"}

# Triton names a kernel after its Python function. Triton 2.x appended the specialisation
# of its arguments (`add_kernel_0d1d2d3de`, `rms_norm_0d1d2d3de4de5`: argument index, then
# d = divisible by 16, c = constant, e = equal to 1); 3.x keeps the bare name.
_TRITON_SUFFIX = re.compile(r"_0(?=[0-9cde]*[cde])[0-9cde]+$")
# torch.compile's inductor names its generated Triton kernels triton_poi_ (pointwise),
# triton_red_ / triton_per_ (reductions), triton_tem_ (templates), triton_ (the rest).
_TRITON_PREFIX = re.compile(r"^triton_", re.I)
#: Triton kernels of nsightlab's own lab scripts (lab_scripts/sweep.py --impl triton).
LAB_TRITON_KERNELS = frozenset({"_scale_kernel"})
# What an inductor reduction computes, when its name says it: a norm (`rsqrt` of a mean
# of squares, `native_layer_norm`), else a reduction.
_INDUCTOR_NORM = re.compile(r"rsqrt|layer_norm|rms_norm|group_norm|batch_norm|var_mean", re.I)


def is_memory_operation(name: str) -> bool:
    """True for a copy or set the runtime did (not a kernel), by its profiler's name."""
    return bool(_MEMORY_OP.search(name))


def kernel_origin(name: str) -> KernelOrigin | None:
    """`triton` for a kernel Triton compiled, recognised by its name: inductor's
    `triton_*` kernels, a name ending in Triton 2.x's argument specialisation, or a Triton
    kernel of the lab scripts. None otherwise (a user's Triton 3.x kernel is named just
    like its Python function, which a name alone cannot tell from a CUDA kernel)."""
    kernel, _args = split_signature(name)
    own = unqualified(kernel)
    if _TRITON_PREFIX.search(own) or _TRITON_SUFFIX.search(own) or own in LAB_TRITON_KERNELS:
        return "triton"
    return None


def _inductor_kind(own: str) -> KernelKind | None:
    """The kind inductor's prefix tells (`triton_poi_fused_add_0`: pointwise)."""
    prefix = own[:11].lower()
    if prefix == "triton_poi_":
        return "elementwise"
    if prefix in ("triton_red_", "triton_per_"):
        return "norm" if _INDUCTOR_NORM.search(own) else "reduce"
    if prefix == "triton_tem_":
        return "attention" if _ATTENTION.search(own) else "gemm"
    return None


def _wrapped(kernel: str, args: str | None) -> tuple[str, str] | None:
    """The kernel a wrapper holds (`cutlass::Kernel2<NAME>`, `ck_tile::kentry<1, K<...>>`):
    its qualified and its own name."""
    if args is None or last_component(kernel) not in _WRAPPERS:
        return None
    for arg in top_level_split(args, ","):
        arg = arg.strip()
        if arg[:1].isalpha() or arg[:1] == "_":
            inner, _inner_args = split_signature(arg)
            return inner, unqualified(inner)
    return None


# Checked in this order, on the kernel's own name, then on its qualified name: the first
# that matches wins.
_FIRST: tuple[tuple[re.Pattern[str], KernelKind], ...] = (
    (_COMMUNICATION, "communication"),
    (_CACHE_WRITE, "copy"),
    (_NORM, "norm"),
    (_ATTENTION, "attention"),
    (_MOE_FINALIZE, "reduce"),
    (_GEMM, "gemm"),
)
# Then these, on the kernel's own name only (its template arguments name the functors and
# types it works on, not what it is).
_THEN: tuple[tuple[re.Pattern[str], KernelKind], ...] = (
    (_BOOKKEEPING, "other"),
    (_ELEMENTWISE, "elementwise"),
    (_REDUCE, "reduce"),
    (_COPY, "copy"),
)
# Last, on the whole name: a generic kernel whose arguments say what it does.
_LAST: tuple[tuple[re.Pattern[str], KernelKind], ...] = (
    (_COMMUNICATION, "communication"),
    (_ATTENTION, "attention"),
    (_GEMM, "gemm"),
)


@functools.lru_cache(maxsize=8192)
def kernel_kind(name: str) -> KernelKind:
    """The kind of a GPU operation, from its name (see the module's docstring).

    The kernel's own name is judged before its namespace and its template arguments, so
    `vectorized_elementwise_kernel<4, ...copy...>` is elementwise and
    `cutlass::Kernel2<cutlass_80_tensorop_..._gemm_...>` is a GEMM; a wrapper is judged
    by the kernel it wraps.
    """
    if is_memory_operation(name):
        return "memory"
    if name.startswith("aten::"):
        return _ATEN_KINDS.get(name[6:].rstrip("_"), "other")
    text = demangled(name)
    kernel, args = split_signature(text)
    own = unqualified(kernel)
    if kernel_origin(text) == "triton":  # its Python function's name: `_scale_kernel_0d1d`
        own = _TRITON_SUFFIX.sub("", own).lstrip("_") or own
        inductor = _inductor_kind(own)
        if inductor is not None:
            return inductor
    wrapped = _wrapped(kernel, args)
    if wrapped is not None:
        kernel, own = wrapped
    for pattern, kind in _FIRST:
        if pattern.search(own) or pattern.search(kernel):
            return kind
    for pattern, kind in _THEN:
        if pattern.search(own):
            return kind
    if own.endswith("trampoline_kernel") and args and re.search(r"scan|reduce", args, re.I):
        return "reduce"  # rocPRIM's device-wide scans and reductions
    named = strip_arguments(text)  # the parameter types say nothing about the kernel
    for pattern, kind in _LAST:
        if pattern.search(named):
            return kind
    return "other"


# PyTorch's CPU operators (`aten::mm`), which stand in for kernels in a trace of a script
# that ran on the CPU: their kinds by operator name (a trailing `_`, in place, dropped).
_ATEN_KINDS: dict[str, KernelKind] = {
    **dict.fromkeys(
        ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "mv", "addmv", "dot", "einsum", "_addmm_activation"),
        "gemm",
    ),
    **dict.fromkeys(
        ("scaled_dot_product_attention", "_scaled_dot_product_flash_attention_for_cpu",
         "_scaled_dot_product_attention_math", "softmax", "_softmax"),
        "attention",
    ),
    **dict.fromkeys(("rms_norm", "_fused_rms_norm", "layer_norm", "native_layer_norm", "rsqrt", "norm"), "norm"),
    **dict.fromkeys(
        ("copy", "_to_copy", "to", "clone", "contiguous", "index_copy", "index_put", "cat", "stack",
         "embedding", "index_select", "fill", "zero", "zeros", "empty", "empty_strided"),
        "copy",
    ),
    **dict.fromkeys(
        ("mul", "add", "sub", "div", "neg", "silu", "gelu", "relu", "sigmoid", "tanh", "exp", "pow",
         "masked_fill", "where", "cos", "sin", "sqrt", "reciprocal"),
        "elementwise",
    ),
}  # fmt: skip


@functools.lru_cache(maxsize=8192)
def step_kernel_kind(name: str) -> StepKernelKind:
    """The kind of an operation in a decode step's anatomy: `kernel_kind`, with the
    reductions (sampling, top-k, softmax) counted as `other`, as a decode step's
    breakdown has always shown them. A CPU operator (`aten::mm`, `aten::add_`) gets the
    kind of its operation."""
    kind = kernel_kind(name)
    return "other" if kind == "reduce" else kind
