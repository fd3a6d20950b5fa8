"""Kernel-name helpers: short names for tables, a join key for nsys/ncu, a coarse kind.

CUDA kernel names as the profilers print them are demangled C++ signatures, often
several hundred characters long (PyTorch's elementwise kernels carry the whole lambda
chain). nsys prints them fully qualified (`at::native::BinaryFunctor<c10::BFloat16, ...`,
`(int)4`); ncu drops namespaces and casts (`BinaryFunctor<BFloat16, ...`, `4`).
All functions here are pure string functions; the ones called per kernel of a trace keep
the answers for the names they have seen (a decode trace repeats a few hundred names
millions of times).
"""

from __future__ import annotations

import functools
import re
from typing import Literal

KernelKind = Literal["gemm", "elementwise", "reduce", "copy", "attention", "other"]

ELLIPSIS = "…"

# `(int)4`, `(unsigned long)3`, `(bool)0`, `(cudnnKernelDataType_t)0`: C-style casts
# that the demangler puts in front of integral template arguments.
_CAST = re.compile(r"\((?:[A-Za-z_][\w:]*)(?: [A-Za-z_]\w*)*\)(?=-?\d)")
_LAMBDA = re.compile(r"\[lambda\([^()]*\) \(instance \d+\)\]")
_CALL_OPERATOR = re.compile(r"::operator \(\)\(\) const")
_ANON_NS = re.compile(r"(?:<unnamed>|\(anonymous namespace\))::")
# A namespace or class qualifier (`at::`, `c10::`, `T1::`), unless what follows is a
# lambda marker: `direct_copy_kernel_cuda::lambda` keeps the function it came from.
_QUALIFIER = re.compile(r"\b[A-Za-z_]\w*::(?=(?!lambda\b)[A-Za-z_~])")
_REPEATED_LAMBDA = re.compile(r"(?:::lambda)+")
_SPACES = re.compile(r"\s+")
# Template arguments PyTorch adds to every elementwise kernel; they say nothing about
# what the kernel computes.
_TORCH_NOISE_ARGS = re.compile(
    r"^(?:array<.*>|TrivialOffsetCalculator<.*>|OffsetCalculator<.*>|"
    r"(?:Load|Store)With(?:out)?Cast(?:<.*>)?)$"
)
# cutlass 2.x wraps the real kernel in `cutlass::Kernel<NAME>` / `Kernel2<NAME>`.
_CUTLASS_WRAPPERS = {"Kernel", "Kernel2", "Kernel_", "device_kernel"}
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _match_back(text: str, end: int, open_ch: str, close_ch: str) -> int:
    """Index of the bracket that opens the one closing at `end`, or -1."""
    depth = 0
    for i in range(end, -1, -1):
        ch = text[i]
        if ch == close_ch:
            depth += 1
        elif ch == open_ch:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _strip_arguments(name: str) -> str:
    """Drop a trailing top-level argument list `(...)` (and a trailing `const`)."""
    text = name.strip()
    if text.endswith(" const"):
        text = text[: -len(" const")].rstrip()
    if text.endswith(")"):
        start = _match_back(text, len(text) - 1, "(", ")")
        # `(...)` directly after the name or after `>`: an argument list. Anything else
        # (a lone parenthesised word) is left alone.
        if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_>"):
            return text[:start]
    return text


def _top_level_split(text: str, sep: str) -> list[str]:
    """Split on `sep` where it is not inside <>, (), [] brackets."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch in "<([":
            depth += 1
        elif ch in ">)]" and depth > 0:
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def _split_signature(full: str) -> tuple[str, str | None]:
    """`void ns::k<A, B>(int, T2)` -> (`ns::k`, `A, B`); args None without a template."""
    text = _strip_arguments(full)
    # Drop the return type: the function is the last top-level space-separated token.
    tokens = [t for t in _top_level_split(text, " ") if t]
    head = tokens[-1] if tokens else text
    if head.endswith(">"):
        start = _match_back(head, len(head) - 1, "<", ">")
        if start > 0:
            return head[:start], head[start + 1 : -1]
    return head, None


def _clean_template_args(args: str) -> str:
    text = _CAST.sub("", args)
    text = _LAMBDA.sub("lambda", text)
    text = _CALL_OPERATOR.sub("", text)
    # Parameter lists of functions named inside the arguments: `f(at::Tensor &)` -> `f`.
    previous = None
    while previous != text:
        previous = text
        text = re.sub(r"(?<=[\w>])\([^()]*\)", "", text)
    text = _ANON_NS.sub("", text)
    previous = None
    while previous != text:
        previous = text
        text = _QUALIFIER.sub("", text)
    text = _REPEATED_LAMBDA.sub("::lambda", text)
    text = re.sub(r"(^|[<,]\s*)void\s+", r"\1", text)
    return _SPACES.sub(" ", text).strip()


def _elide_middle(text: str, width: int) -> str:
    """Cut the middle out of `text` to fit `width`, keeping more of the tail.

    The tail start snaps to the start of a word when one is near, so that a functor
    name at the end (`MulFunctor<float>>`) survives whole.
    """
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    keep = width - 1
    tail = keep - keep * 2 // 5
    start = len(text) - tail
    for shift in range(0, 9):
        for pos in (start - shift, start + shift):
            if 0 < pos < len(text) and text[pos - 1] in " <,(:" and (text[pos].isalnum() or text[pos] == "_"):
                if pos < start:
                    # Grow the tail to the word start, shrinking the head to compensate.
                    head = keep - (len(text) - pos)
                    if head >= 1:
                        return text[:head] + ELLIPSIS + text[pos:]
                    continue
                return text[: keep - (len(text) - pos)] + ELLIPSIS + text[pos:]
    return text[: keep - tail] + ELLIPSIS + text[start:]


def _last_component(name: str) -> str:
    return name.split("::")[-1]


# Names that say nothing alone (`internal::gemvx::kernel`): keep their enclosing scope.
_GENERIC_NAMES = {"kernel", "Kernel", "kernel_impl", "device_kernel", "run", "main"}


def _unqualified(name: str) -> str:
    parts = _ANON_NS.sub("", name).split("::")
    if len(parts) > 1 and parts[-1] in _GENERIC_NAMES:
        return "::".join(parts[-2:])
    return parts[-1]


@functools.lru_cache(maxsize=4096)
def short_kernel_name(full: str, width: int = 60) -> str:
    """A readable name of at most `width` characters for tables.

    Drops `void`/return types, the argument list, casts such as `(int)`, and namespace
    noise inside template arguments; unwraps `cutlass::Kernel2<NAME>` to `NAME`. When
    still too long: drops PyTorch's offset-calculator/array arguments, then the kernel's
    own namespaces, then elides the middle of the template arguments (or of the name)
    with `…`, keeping the kernel's name and the innermost arguments recognisable.

    >>> short_kernel_name("void cutlass::Kernel2<cutlass_80_tensorop_f16_s16816gemm_"
    ...                   "relu_f16_256x128_32x3_nn_align8>(T1::Params)", width=80)
    'cutlass_80_tensorop_f16_s16816gemm_relu_f16_256x128_32x3_nn_align8'
    """
    width = max(width, 1)
    name, args = _split_signature(full)
    name = _ANON_NS.sub("", name)
    if args is not None:
        args = _clean_template_args(args)
        if _last_component(name) in _CUTLASS_WRAPPERS and _IDENTIFIER.fullmatch(args):
            return _elide_middle(args, width)

    def render(kernel: str, template: str | None) -> str:
        return kernel if template is None else f"{kernel}<{template}>"

    candidate = render(name, args)
    if len(candidate) <= width:
        return candidate
    if args is not None:
        kept = [a.strip() for a in _top_level_split(args, ",")]
        kept = [a for a in kept if not _TORCH_NOISE_ARGS.match(a)]
        args = ", ".join(kept)
        candidate = render(name, args)
        if len(candidate) <= width:
            return candidate
    name = _unqualified(name)
    candidate = render(name, args)
    if len(candidate) <= width or args is None:
        return _elide_middle(candidate, width)
    room = width - len(name) - 2
    if room >= 8:
        return f"{name}<{_elide_middle(args, room)}>"
    return _elide_middle(candidate, width)


@functools.lru_cache(maxsize=4096)
def normalise_kernel_name(name: str) -> str:
    """A canonical form of a kernel name, equal for nsys and ncu spellings of one kernel.

    Removes the return type and the argument list, every namespace/class qualifier
    (ncu prints none), casts (`(int)4` -> `4`), `true`/`false` (-> `1`/`0`) and all
    whitespace. A trailing `…` (a name truncated by nsys' column output) is kept, so
    use `kernel_names_match` to compare truncated names.
    """
    text = name.strip()
    truncated = text.endswith(ELLIPSIS)
    if truncated:
        text = text[: -len(ELLIPSIS)]
    kernel, args = _split_signature(text) if not truncated else (text, None)
    if truncated:
        # A cut name has no closing brackets to find: clean the whole text instead.
        kernel = re.sub(r"^void\s+", "", kernel)
    text = kernel if args is None else f"{kernel}<{args}>"
    text = _CAST.sub("", text)
    text = _ANON_NS.sub("", text)
    previous = None
    while previous != text:
        previous = text
        text = re.sub(r"\b[A-Za-z_]\w*::(?=[A-Za-z_~\[])", "", text)
    text = re.sub(r"\bfalse\b", "0", text)
    text = re.sub(r"\btrue\b", "1", text)
    text = _SPACES.sub("", text)
    return text + ELLIPSIS if truncated else text


def kernel_names_match(a: str, b: str) -> bool:
    """True when two spellings name the same kernel (a `…`-truncated one as a prefix)."""
    na, nb = normalise_kernel_name(a), normalise_kernel_name(b)
    if na == nb:
        return True
    return any(
        cut.endswith(ELLIPSIS) and whole.startswith(cut[: -len(ELLIPSIS)]) for cut, whole in ((na, nb), (nb, na))
    )


_ATTENTION = re.compile(r"flash|fmha|attention|attn|mha_|_mha|sdpa|paged_", re.I)
_GEMM = re.compile(
    r"gemm|gemv|cutlass|xmma|cublas|matmul|wmma|hmma|tensorop|nvjet|s16816|s1688|"
    r"implicit_gemm|conv|fprop|dgrad|wgrad|ampere_[a-z0-9]+_|sm[0-9]{2}_xmma",
    re.I,
)
_ELEMENTWISE = re.compile(
    r"elementwise|fill|pointwise|activation|silu|gelu|relu|"
    r"^(?:vector_?add|[sd]?axpy|triad|add|mul|scale|init)(?:_?kernel)?$",
    re.I,
)
_COPY = re.compile(r"copy|memcpy|memset|transpose|nchwtonhwc|nhwctonchw|cat_?array|gather|scatter", re.I)
_REDUCE = re.compile(r"reduce|reduction|softmax|norm|topk|argmax|argmin|scan|_sum|mean|^dot(?:_?kernel)?$", re.I)


KernelOrigin = Literal["triton"]

# Triton names a kernel after its Python function. Triton 2.x appended the specialisation
# of its arguments (`add_kernel_0d1d2d3de`, `rms_norm_0d1d2d3de4de5`: argument index, then
# d = divisible by 16, c = constant, e = equal to 1); 3.x keeps the bare name.
_TRITON_SUFFIX = re.compile(r"_0(?=[0-9cde]*[cde])[0-9cde]+$")
# torch.compile's inductor names its generated Triton kernels triton_poi_ (pointwise),
# triton_red_ / triton_per_ (reductions), triton_tem_ (templates), triton_ (the rest).
_TRITON_PREFIX = re.compile(r"^triton_", re.I)
#: Triton kernels of nsightlab's own lab scripts (lab_scripts/sweep.py --impl triton).
LAB_TRITON_KERNELS = frozenset({"_scale_kernel"})


def kernel_origin(name: str) -> KernelOrigin | None:
    """`triton` for a kernel Triton compiled, recognised by its name: inductor's
    `triton_*` kernels, a name ending in Triton 2.x's argument specialisation, or a Triton
    kernel of the lab scripts. None otherwise (a user's Triton 3.x kernel is named just
    like its Python function, which a name alone cannot tell from a CUDA kernel)."""
    kernel, _args = _split_signature(name)
    own = _unqualified(kernel)
    if _TRITON_PREFIX.search(own) or _TRITON_SUFFIX.search(own) or own in LAB_TRITON_KERNELS:
        return "triton"
    return None


@functools.lru_cache(maxsize=4096)
def kernel_kind(name: str) -> KernelKind:
    """Coarse kind of a kernel from its name, used to pick the kernel of an NVTX range.

    Attention kernels (flash/fmha) first, then matrix kernels (cutlass, cuBLAS, xmma,
    gemm/gemv), then elementwise, copy and reduction kernels, judged on the kernel's own
    name before its template arguments (so `vectorized_elementwise_kernel<..copy..>` is
    elementwise); `other` when nothing matches.
    """
    kernel, args = _split_signature(name)
    own = _unqualified(kernel)
    if _last_component(kernel) in _CUTLASS_WRAPPERS and args is not None:
        own = args
    if kernel_origin(name) == "triton":  # its Python function's name: `_scale_kernel_0d1d`
        own = _TRITON_SUFFIX.sub("", own).lstrip("_")
    if _ATTENTION.search(kernel) or _ATTENTION.search(own):
        return "attention"
    if _GEMM.search(kernel) or _GEMM.search(own):
        return "gemm"
    checks: tuple[tuple[re.Pattern[str], KernelKind], ...] = (
        (_ELEMENTWISE, "elementwise"),
        (_REDUCE, "reduce"),
        (_COPY, "copy"),
    )
    for pattern, kind in checks:
        if pattern.search(own):
            return kind
    if _ATTENTION.search(name):
        return "attention"
    if _GEMM.search(name):
        return "gemm"
    return "other"


StepKernelKind = Literal["gemm", "attention", "norm", "elementwise", "copy", "other"]

_NORM = re.compile(r"norm|rsqrt", re.I)
_MEMORY_OP = re.compile(r"^\[CUDA mem(?:cpy|set)|^Mem(?:cpy|set)\b", re.I)
_TRITON_POINTWISE = re.compile(r"^triton_poi_", re.I)

# PyTorch's CPU operators (`aten::mm`), which stand in for kernels in a trace of a script
# that ran on the CPU: their kinds by operator name (a trailing `_`, in place, dropped).
_ATEN_KINDS: dict[str, StepKernelKind] = {
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


@functools.lru_cache(maxsize=4096)
def step_kernel_kind(name: str) -> StepKernelKind:
    """The kind of a kernel in a decode step's anatomy, finer than `kernel_kind` where a
    decode step needs it.

    `gemm` covers every matrix kernel (GEMM and GEMV, cuBLAS, cutlass, nvjet...);
    `attention` flash/paged attention; `norm` layer and RMS norms (by name, or a fused
    kernel computing `rsqrt`, as inductor's fused RMSNorm does); `elementwise` pointwise
    kernels (inductor's `triton_poi_*` too); `copy` copies, memcpy and memset operations
    (`[CUDA memcpy ...]` as nsys names them, `Memcpy HtoD ...` as Kineto does); `other`
    the rest, reductions and sampling included. `kernel_kind` is unchanged. A CPU
    operator (`aten::mm`, `aten::add_`) gets the kind of its operation.
    """
    if _MEMORY_OP.search(name):
        return "copy"
    if name.startswith("aten::"):
        return _ATEN_KINDS.get(name[6:].rstrip("_"), "other")
    coarse = kernel_kind(name)
    if coarse in ("gemm", "attention"):
        return coarse
    kernel, _args = _split_signature(name)
    own = _unqualified(kernel)
    if _NORM.search(own):
        return "norm"
    if coarse == "elementwise" or _TRITON_POINTWISE.search(own):
        return "elementwise"
    if coarse == "copy":
        return "copy"
    return "other"


# ------------------------------------------------------------- CUDA API call names

# A runtime or driver call that puts work on the GPU has one of these in its name:
# `cudaLaunchKernel`, `cuLaunchKernel`, `cudaGraphLaunch`, `cudaMemcpyAsync`,
# `cudaMemsetAsync`, `cuMemcpyHtoDAsync_v2`, `memcpy` in older traces.
GPU_WORK_CALL_MARKS = ("Launch", "Memcpy", "Memset", "memcpy")


def puts_work_on_gpu(api_name: str) -> bool:
    """True for a CUDA API call that launches a kernel or a graph, or queues a copy or set."""
    return any(mark in api_name for mark in GPU_WORK_CALL_MARKS)
