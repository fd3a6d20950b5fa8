"""Strings from outside, made safe to show: the one function every renderer calls.

Kernel and NVTX names come from traces, Event messages and log lines from pods, labels
and names from the cluster, paths and values from the user: any of them may hold a
terminal escape sequence (an OSC 52 clipboard write, a title change, a screen clear,
hidden text), a carriage return that overwrites the line, or a bidi override that
reorders it. `terminal_safe()` shows every such character as a visible escape, so the
terminal draws it and obeys none of it. Rich markup is a second, separate danger (`[bold]`
in a kernel name would be styling): Rich output takes `rich_text()`, a `Text` that is
never parsed for markup. `--json` keeps the data as it is; `json_text()` only writes the
characters a terminal could act on as JSON's own `\\uXXXX` escapes, which decode back
to the same data.

`logs` and `shell` are passthroughs by design (as `kubectl logs` and `ssh` are): they
write what the pod writes.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

# Control (Cc: C0, DEL, the C1 range U+0080-009F), format (Cf: bidi controls, zero-width
# characters) and line and paragraph separators (Zl, Zp).
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _escaped(ch: str) -> str:
    short = _SHORT_ESCAPES.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_safe(text: object) -> str:
    """`text` (a string, or anything `str()` turns into one) with every control, format
    and line-separator character written as a visible escape: ESC as `\\x1b` (so
    `\\x1b]52;c;...\\x07` is shown, not run), CSI U+009B as `\\x9b`, DEL as `\\x7f`, a line
    feed as `\\n`, a carriage return as `\\r`, a tab as `\\t`, a backspace as `\\x08`, a
    right-to-left override as `\\u202e`, U+2028 as `\\u2028`. Everything else (letters of
    any script, spaces, emoji, backslashes) is kept as it is, and the result is one line.

    The one function for any string from outside that reaches a terminal, an error line
    or a report: renderers call it for every name, message, log line, reason and label
    they show. Plain printable ASCII, the usual case, is returned as it is, unscanned.
    """
    s = text if isinstance(text, str) else str(text)
    if s.isascii():
        if s.isprintable():
            return s
        return _ASCII_CONTROL.sub(lambda m: _escaped(m.group()), s)
    if s.isprintable():
        # isprintable() is False for every Cc, Cf, Zl and Zp character (and for spaces other
        # than U+0020, which are kept): only such strings need the look at each character
        return s
    return "".join(_escaped(ch) if unicodedata.category(ch) in _UNSAFE_CATEGORIES else ch for ch in s)


def rich_text(text: object, style: str | None = None) -> Text:
    """`terminal_safe(text)` as a Rich `Text`: Rich draws it as it is, never reading
    `[bold]` or `[link=...]` in it as markup."""
    # Rich loads only when something is drawn on a terminal
    from rich.text import Text

    return Text(terminal_safe(text), style=style or "")


def _json_escape(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
    return f"\\u{high:04x}\\u{low:04x}"


# What JSON may carry raw but a terminal could act on: DEL, the C1 range, format characters
# of the bidi and zero-width kinds, the line and paragraph separators. (C0 is always escaped
# by JSON encoders.)
_JSON_UNSAFE = re.compile(
    "[\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)  # every Cf, Zl and Zp character of Unicode 16, DEL and C1 (a test checks it against unicodedata)


def json_text(text: str) -> str:
    """A JSON document with the characters listed above written as `\\uXXXX` escapes: the
    same data for any JSON reader, nothing a terminal acts on when it is shown raw. Only
    valid for JSON text (those characters can occur only inside its strings)."""
    if text.isascii():
        return text.replace("\x7f", "\\u007f") if "\x7f" in text else text
    return _JSON_UNSAFE.sub(_json_escape, text)
