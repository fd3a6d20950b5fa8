"""Names as a person reads them: NFKC, case folded, look-alike characters folded.

A context named `ｐｒｄ-online` (full-width letters) or `prоd-online` (a Cyrillic о)
reads as production and must be protected like it. The safety guard compares names in
the forms `folds()` gives: NFKC, then the skeleton of Unicode's Technical Standard #39
(section 4: NFD, default-ignorable characters removed, each character replaced by its
prototype from `confusables.txt`, NFD again) in lower case, combining marks dropped.

The table is Unicode's own `confusables.txt` (17.0.0), kept verbatim in
`nsightlab/data/` with its licence and where it came from (`data/SOURCES.md`). Not the
PyPI package confusable-homoglyphs: its table (built from the comments of the same
file) records each pair in both directions, so which character is the prototype is
lost, and a skeleton cannot be computed from it. The table is read on first use only,
and only for a name (or pattern) that is not plain ASCII: ordinary commands never load it.
"""

from __future__ import annotations

import functools
import unicodedata
from importlib import resources

TABLE = "data/confusables.txt"

# Characters that are Cf (format) but not Default_Ignorable_Code_Point: they show.
_SHOWN_FORMAT = frozenset(
    [
        0x0600,
        0x0601,
        0x0602,
        0x0603,
        0x0604,
        0x0605,
        0x06DD,
        0x070F,
        0x0890,
        0x0891,
        0x08E2,
        0x110BD,
        0x110CD,
        0xFFF9,
        0xFFFA,
        0xFFFB,
        *range(0x13430, 0x13440),
    ]
)
# Default_Ignorable_Code_Point outside Cf (DerivedCoreProperties.txt): the combining
# grapheme joiner, Hangul fillers, Khmer inherent vowels, variation selectors.
_IGNORABLE_OTHER = frozenset(
    [
        0x034F,
        0x115F,
        0x1160,
        0x17B4,
        0x17B5,
        0x180B,
        0x180C,
        0x180D,
        0x180F,
        0x3164,
        0xFFA0,
        *range(0xFE00, 0xFE10),
        *range(0xE0100, 0xE01F0),
    ]
)


@functools.cache
def confusables() -> dict[str, str]:
    """Each source character of confusables.txt and its prototype (one or more characters)."""

    text = resources.files("nsightlab").joinpath(TABLE).read_text(encoding="utf-8-sig")
    table: dict[str, str] = {}
    for line in text.splitlines():
        data = line.split("#", 1)[0]
        if not data.strip():
            continue
        source, target, _kind = data.split(";", 2)
        table[chr(int(source, 16))] = "".join(chr(int(code, 16)) for code in target.split())
    return table


def _ignorable(ch: str) -> bool:

    code = ord(ch)
    if code in _IGNORABLE_OTHER:
        return True
    return unicodedata.category(ch) == "Cf" and code not in _SHOWN_FORMAT


def skeleton(text: str) -> str:
    """The UTS #39 skeleton of `text`: two strings with the same skeleton look alike."""

    table = confusables()
    mapped = "".join(table.get(ch, ch) for ch in unicodedata.normalize("NFD", text) if not _ignorable(ch))
    return unicodedata.normalize("NFD", mapped)


@functools.cache
def _fold_char(ch: str) -> str:
    """One character (of an NFD string) as it reads, in lower case; '' for a combining mark.

    Case-folded before the skeleton first (Cyrillic 'Р' and 'р' both read 'p'; ASCII 'I'
    stays 'i', not the skeleton's 'l'); when that reads as nothing ASCII, the skeleton of
    the character as written (Greek 'Τ' reads 'T', while its small 'τ' reads as no Latin
    letter).
    """

    if unicodedata.category(ch) == "Mn":
        return ""  # accents: 'pród' reads as 'prod'
    lowered = skeleton(ch.casefold()).casefold()
    if lowered.isascii():
        return lowered
    written = skeleton(ch).casefold()
    return written if written.isascii() else lowered


@functools.lru_cache(maxsize=4096)
def folds(name: str) -> tuple[str, str]:
    """The forms a name is compared in: lower case as written, and as it reads.

    As it reads: NFKC, then character by character the UTS #39 skeleton in lower case
    (see `_fold_char`), combining marks dropped. Two names match when either form
    matches the same form of the other: folding only adds matches.
    """

    text = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", name))
    return name.lower(), "".join(_fold_char(ch) for ch in text)


def needs_folding(*names: str) -> bool:
    """False when every name is plain ASCII: then lower case alone compares them, and the
    table is never loaded."""
    return not all(n.isascii() for n in names)
