"""The lines of a text as the tools that wrote it meant them.

`str.splitlines()` also breaks at U+2028, U+2029, U+0085, VT, FF and the file/group/record
separators: characters nsys, ncu and a CSV writer leave inside a cell (a kernel or range
name may hold any of them). Only LF, CRLF and a lone CR end a line here.
"""

from __future__ import annotations

import re

_BREAK = re.compile(r"\r\n|\r|\n")


def physical_lines(text: str) -> list[str]:
    """`text` split at LF, CRLF and CR only, without the breaks (no empty last line for a
    text that ends with one, as `splitlines`)."""
    parts = _BREAK.split(text)
    if parts and parts[-1] == "":
        parts.pop()
    return parts
