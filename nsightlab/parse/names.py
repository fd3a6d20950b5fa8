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
from collections.abc import Sequence

from nsightlab.parse.demangle import demangled

# The kinds live in `kinds`; they are part of this module's API, as they always were.
from nsightlab.parse.kinds import (
    LAB_TRITON_KERNELS,
    KernelKind,
    KernelOrigin,
    StepKernelKind,
    is_memory_operation,
    kernel_kind,
    kernel_origin,
    step_kernel_kind,
)
from nsightlab.parse.signature import (
    ANON_NS,
    CUTLASS_WRAPPERS,
    IDENTIFIER,
    last_component,
    split_signature,
    top_level_split,
    unqualified,
)

__all__ = [
    "ELLIPSIS",
    "GPU_WORK_CALL_MARKS",
    "LAB_TRITON_KERNELS",
    "KernelKind",
    "KernelOrigin",
    "StepKernelKind",
    "distinct_short_names",
    "is_memory_operation",
    "kernel_kind",
    "kernel_names_match",
    "kernel_origin",
    "memory_operation_name",
    "normalise_kernel_name",
    "puts_work_on_gpu",
    "short_kernel_name",
    "step_kernel_kind",
]

ELLIPSIS = "…"

# `(int)4`, `(unsigned long)3`, `(bool)0`, `(cudnnKernelDataType_t)0`: C-style casts
# that the demangler puts in front of integral template arguments.
_CAST = re.compile(r"\((?:[A-Za-z_][\w:]*)(?: [A-Za-z_]\w*)*\)(?=-?\d)")
# A lambda as nsys writes it (`[lambda(int) (instance 1)]`) and as c++filt does
# (`{lambda(int)#1}`), and the call operator after it.
_LAMBDA = re.compile(r"\[lambda\([^()]*\) \(instance \d+\)\]|\{lambda\([^{}]*\)#\d+\}")
_CALL_OPERATOR = re.compile(r"::operator ?\(\)\(\) const")
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


def _clean_template_args(args: str) -> str:
    text = _CAST.sub("", args)
    text = _LAMBDA.sub("lambda", text)
    text = _CALL_OPERATOR.sub("", text)
    # Parameter lists of functions named inside the arguments: `f(at::Tensor &)` -> `f`.
    previous = None
    while previous != text:
        previous = text
        text = re.sub(r"(?<=[\w>])\([^()]*\)", "", text)
    text = ANON_NS.sub("", text)
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


@functools.lru_cache(maxsize=4096)
def short_kernel_name(full: str, width: int = 60) -> str:
    """A readable name of at most `width` characters for tables.

    A mangled name is demangled first (where that is certain); a memory operation gets
    its readable name (`memcpy HtoD (pinned)`). Drops `void`/return types, the argument
    list, casts such as `(int)`, and namespace
    noise inside template arguments; unwraps `cutlass::Kernel2<NAME>` to `NAME`. When
    still too long: drops PyTorch's offset-calculator/array arguments, then the kernel's
    own namespaces, then elides the middle of the template arguments (or of the name)
    with `…`, keeping the kernel's name and the innermost arguments recognisable.

    >>> short_kernel_name("void cutlass::Kernel2<cutlass_80_tensorop_f16_s16816gemm_"
    ...                   "relu_f16_256x128_32x3_nn_align8>(T1::Params)", width=80)
    'cutlass_80_tensorop_f16_s16816gemm_relu_f16_256x128_32x3_nn_align8'
    """
    width = max(width, 1)
    if is_memory_operation(full):
        return _elide_middle(memory_operation_name(full), width)
    name, args = split_signature(demangled(full))
    name = ANON_NS.sub("", name)
    if args is not None:
        args = _clean_template_args(args)
        if last_component(name) in CUTLASS_WRAPPERS and IDENTIFIER.fullmatch(args):
            return _elide_middle(args, width)

    def render(kernel: str, template: str | None) -> str:
        return kernel if template is None else f"{kernel}<{template}>"

    candidate = render(name, args)
    if len(candidate) <= width:
        return candidate
    if args is not None:
        kept = [a.strip() for a in top_level_split(args, ",")]
        kept = [a for a in kept if not _TORCH_NOISE_ARGS.match(a)]
        args = ", ".join(kept)
        candidate = render(name, args)
        if len(candidate) <= width:
            return candidate
    name = unqualified(name)
    candidate = render(name, args)
    if len(candidate) <= width or args is None:
        return _elide_middle(candidate, width)
    room = width - len(name) - 2
    if room >= 8:
        return f"{name}<{_elide_middle(args, room)}>"
    return _elide_middle(candidate, width)


# Memory operations as the profilers name them: Kineto `Memcpy HtoD (Pinned -> Device)`,
# `Memset (Device)`; nsys `[CUDA memcpy Host-to-Device]`, `[CUDA memset]`.
_KINETO_MEMCPY = re.compile(r"^Memcpy (\w+) \((\w+) -> (\w+)\)$")
_KINETO_MEMSET = re.compile(r"^Memset \((\w+)\)$")
_NSYS_MEMCPY = re.compile(r"^\[CUDA memcpy (Unified )?(\w+)-to-(\w+)\]$")
_NSYS_MEMSET = re.compile(r"^\[CUDA memset\]$")
_ENDS = {"Host": "H", "Device": "D", "Peer": "P", "Array": "A"}
# Host memory worth naming: the kind decides how fast a copy to or from the GPU can go.
_HOST_KINDS = {"Pinned", "Pageable", "Managed"}


def memory_operation_name(name: str) -> str:
    """A memory operation's readable name: `memcpy HtoD (pinned)`, `memcpy DtoD`,
    `memset`; the name as it came (stripped) for a spelling not known here."""
    text = name.strip()
    if m := _KINETO_MEMCPY.match(text):
        direction, src, dst = m.groups()
        host = src if direction.startswith("Hto") else dst if direction.endswith("toH") else None
        return f"memcpy {direction}" + (f" ({host.lower()})" if host in _HOST_KINDS else "")
    if m := _KINETO_MEMSET.match(text):
        where = m.group(1)
        return "memset" if where == "Device" else f"memset ({where.lower()})"
    if m := _NSYS_MEMCPY.match(text):
        unified, src, dst = m.groups()
        if src in _ENDS and dst in _ENDS:
            return f"memcpy {_ENDS[src]}to{_ENDS[dst]}" + (" (unified)" if unified else "")
    if _NSYS_MEMSET.match(text):
        return "memset"
    return text


def distinct_short_names(names: Sequence[str | None], width: int = 60) -> list[str]:
    """Short names for a column of a table, at most `width` characters, that stay apart:
    two different names never show the same text (the same name twice shows it twice).

    Each name gets `short_kernel_name`; where different names would read the same,
    each shows the part where they differ (`gemvx::kernel<…false, true, 7, …`), narrowed
    again while some still read alike; where even that cannot tell them apart (two
    spellings of one signature), they are numbered (`… #1`, `… #2`). A missing name (None
    or empty: a range without a kernel) is an empty cell.
    """
    width = max(width, 8)
    shown = {n: short_kernel_name(n, width) for n in dict.fromkeys(names) if n}
    wide: dict[str, str] = {}
    for _round in range(12):
        owners: dict[str, list[str]] = {}
        for name, text in shown.items():
            owners.setdefault(text, []).append(name)
        progressed = False
        for who in owners.values():
            if len(who) < 2:
                continue
            for n in who:
                wide.setdefault(n, short_kernel_name(n, 100_000))
            texts = {wide[n] for n in who}
            if len(texts) < 2:
                continue
            first = min(len(t) for t in texts)
            start = next((k for k in range(first) if len({t[k] for t in texts}) > 1), first)
            narrowed = {n: _around(n, wide[n], start, width) for n in who}
            if len(set(narrowed.values())) > 1:
                shown.update(narrowed)
                progressed = True
        if not progressed:
            break
    given = [n or "" for n in names]
    return _numbered(given, [shown[n] if n else "" for n in given], width)


def _around(name: str, text: str, start: int, width: int) -> str:
    """`text` cut to `width` so that what follows `start` shows: the kernel's name, `…`,
    then the argument (or word) holding `start` and what comes after it."""
    if len(text) <= width:
        return text
    cut = max(text.rfind(sep, 0, start) for sep in (", ", "<", "_", " ")) + 1
    opening = text.find("<")
    kernel = short_kernel_name(name, width).split("<", 1)[0]
    if 0 < opening < cut and len(kernel) <= width // 2:
        head = f"{kernel}<{ELLIPSIS}"
    elif cut > width // 3:
        head = text[: width // 3] + ELLIPSIS
    else:
        head = ""
    window = text[cut if head else 0 :]
    room = width - len(head)
    if len(window) > room:
        window = window[: room - 1] + ELLIPSIS
    return head + window


def _numbered(names: Sequence[str], shorts: list[str], width: int) -> list[str]:
    """Number the texts that still read alike for different names: `name… #2`; numbered
    across the whole column where two of those texts would still meet once cut."""
    owners: dict[str, list[str]] = {}
    for name, text in zip(names, shorts, strict=True):
        if name and name not in owners.setdefault(text, []):
            owners[text].append(name)
    clashes = {text: who for text, who in owners.items() if len(who) > 1}
    if not clashes:
        return shorts

    def cut(text: str, suffix: str) -> str:
        room = width - len(suffix)
        return (text if len(text) <= room else text[: room - 1] + ELLIPSIS) + suffix

    for per_group in (True, False):
        serial = 0
        renamed: dict[str, str] = {}
        for text, who in clashes.items():
            for k, name in enumerate(who, 1):
                serial += 1
                renamed[name] = cut(text, f" #{k if per_group else serial}")
        result = [renamed.get(n, t) for n, t in zip(names, shorts, strict=True)]
        if len({(n, t) for n, t in zip(names, result, strict=True)}) == len(set(result)) or not per_group:
            return result
    return shorts  # pragma: no cover - the loop always returns


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
    kernel, args = split_signature(text) if not truncated else (text, None)
    if truncated:
        # A cut name has no closing brackets to find: clean the whole text instead.
        kernel = re.sub(r"^void\s+", "", kernel)
    text = kernel if args is None else f"{kernel}<{args}>"
    text = _CAST.sub("", text)
    text = ANON_NS.sub("", text)
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


# ------------------------------------------------------------- CUDA API call names

# A runtime or driver call that puts work on the GPU has one of these in its name:
# `cudaLaunchKernel`, `cuLaunchKernel`, `cudaGraphLaunch`, `cudaMemcpyAsync`,
# `cudaMemsetAsync`, `cuMemcpyHtoDAsync_v2`, `memcpy` in older traces.
GPU_WORK_CALL_MARKS = ("Launch", "Memcpy", "Memset", "memcpy")


def puts_work_on_gpu(api_name: str) -> bool:
    """True for a CUDA API call that launches a kernel or a graph, or queues a copy or set."""
    return any(mark in api_name for mark in GPU_WORK_CALL_MARKS)
