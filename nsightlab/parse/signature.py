"""C++ signatures as profilers print kernel names: their parts, found without a parser.

`void ns::kernel<A, B>(int, T2)`: the return type, the qualified name, the template
arguments and the argument list, split at the top level of their brackets. Pure string
functions, shared by the name helpers (`names`) and the kinds (`kinds`).
"""

from __future__ import annotations

import re

ANON_NS = re.compile(r"(?:<unnamed>|\(anonymous namespace\))::")
# cutlass 2.x wraps the real kernel in `cutlass::Kernel<NAME>` / `Kernel2<NAME>`.
CUTLASS_WRAPPERS = {"Kernel", "Kernel2", "Kernel_", "device_kernel"}
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def match_back(text: str, end: int, open_ch: str, close_ch: str) -> int:
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


def strip_arguments(name: str) -> str:
    """Drop a trailing top-level argument list `(...)` (and a trailing `const`)."""
    text = name.strip()
    if text.endswith(" const"):
        text = text[: -len(" const")].rstrip()
    if text.endswith(")"):
        start = match_back(text, len(text) - 1, "(", ")")
        # `(...)` directly after the name or after `>`: an argument list. Anything else
        # (a lone parenthesised word) is left alone.
        if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_>"):
            return text[:start]
    return text


def top_level_split(text: str, sep: str) -> list[str]:
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


def split_signature(full: str) -> tuple[str, str | None]:
    """`void ns::k<A, B>(int, T2)` -> (`ns::k`, `A, B`); args None without a template."""
    text = strip_arguments(full)
    # Drop the return type: the function is the last top-level space-separated token.
    tokens = [t for t in top_level_split(text, " ") if t]
    head = tokens[-1] if tokens else text
    if head.endswith(">"):
        start = match_back(head, len(head) - 1, "<", ">")
        if start > 0:
            return head[:start], head[start + 1 : -1]
    return head, None


def last_component(name: str) -> str:
    return name.split("::")[-1]


# Names that say nothing alone (`internal::gemvx::kernel`): keep their enclosing scope.
GENERIC_NAMES = {"kernel", "Kernel", "kernel_impl", "device_kernel", "run", "main"}


def unqualified(name: str) -> str:
    parts = ANON_NS.sub("", name).split("::")
    if len(parts) > 1 and parts[-1] in GENERIC_NAMES:
        return "::".join(parts[-2:])
    return parts[-1]
