"""Kubernetes' own grammars for values a user writes: resource quantities and object names.

Pure and shared by every layer: config.yaml is checked with them when it loads, and the
readers of API objects (k8s/pods.py) parse the server's quantities with the same
parser. Errors are `ValueError`s whose message says what is wrong; callers name the key
and the file.
"""

from __future__ import annotations

import decimal
import re
import unicodedata
from decimal import Decimal

# The quantity grammar of k8s.io/apimachinery (resource.Quantity):
#   <quantity>  ::= <sign>? <number> <suffix>
#   <number>    ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
#   <suffix>    ::= <binarySI> | <decimalExponent> | <decimalSI>
#   <binarySI>  ::= Ki | Mi | Gi | Ti | Pi | Ei
#   <decimalSI> ::= n | u | m | "" | k | M | G | T | P | E
#   <decimalExponent> ::= e <signed integer> | E <signed integer>
# One suffix at most ("1e3Gi" is not a quantity); "1E" is an exa, "1E3" a thousand. No
# "inf", "nan", underscores, spaces or non-ASCII digits inside.
_QUANTITY = re.compile(r"([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?")
_SUFFIX = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18"),  # noqa: E501
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40), "Pi": Decimal(2**50), "Ei": Decimal(2**60),  # noqa: E501
}  # fmt: skip
# Kubernetes caps a quantity at the largest int64 (silently): a larger value is a mistake.
MAX_QUANTITY = Decimal(2**63 - 1)
# Exact arithmetic for any exponent the grammar allows (an int32, as apimachinery parses it).
_EXACT = decimal.Context(prec=100, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253


def parse_quantity(text: str) -> Decimal:
    """The number a Kubernetes quantity stands for ("500m" -> 0.5, "24Gi" -> 25769803776).

    Raises ValueError for anything the API server would not parse (including "inf",
    "nan", "1e3Gi", "4 Gi").
    """
    if text.isdigit() and text.isascii():
        return Decimal(text)  # the usual "1", "8", "0": no pattern to run
    m = _QUANTITY.fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} is not a Kubernetes quantity (e.g. 4, 500m, 24Gi, 1e3)")
    sign, number, exponent, suffix = m.groups()
    if exponent is not None and (len(exponent) > 12 or not -(2**31) <= int(exponent) < 2**31):
        raise ValueError(f"{text!r}: the exponent is out of range")
    value = _EXACT.create_decimal(f"{sign}{number}E{exponent or 0}")
    return _EXACT.multiply(value, _SUFFIX[suffix]) if suffix else value


def check_quantity(text: str, *, what: str = "quantity") -> str:
    """`text` stripped, when it is a quantity from 0 up to Kubernetes' largest; else ValueError."""
    text = text.strip()
    value = parse_quantity(text)
    if value < 0:
        raise ValueError(f"{text!r}: a {what} cannot be negative")
    if value > MAX_QUANTITY:
        raise ValueError(
            f"{text!r} is larger than Kubernetes' largest quantity (2^63-1), which it would silently use instead"
        )
    return text


def dns1123_label_problem(name: str) -> str | None:
    """Why `name` is not an RFC 1123 label (a namespace, a Service), or None when it is."""
    if not name:
        return "it is empty"
    if len(name) > DNS1123_LABEL_MAX:
        return f"it has {len(name)} characters, at most {DNS1123_LABEL_MAX} are allowed"
    if not _LABEL.fullmatch(name):
        return (
            "it may hold only lowercase letters a-z, digits 0-9 and '-', and must start and end with a letter or digit"
        )
    return None


def dns1123_subdomain_problem(name: str) -> str | None:
    """Why `name` is not an RFC 1123 subdomain (what a pod's name must be), or None.

    Labels joined by '.', at most 253 characters in all.
    """
    if not name:
        return "it is empty"
    if len(name) > DNS1123_SUBDOMAIN_MAX:
        return f"it has {len(name)} characters, at most {DNS1123_SUBDOMAIN_MAX} are allowed"
    if not all(_LABEL.fullmatch(part) for part in name.split(".")):
        return (
            "it may hold only lowercase letters a-z, digits 0-9, '-' and '.', and each part between dots must start "
            "and end with a letter or digit"
        )
    return None


_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
LABEL_VALUE_MAX = 63


def label_value_problem(value: str) -> str | None:
    """Why `value` is not a label value (empty, or up to 63 of [A-Za-z0-9-_.] starting and
    ending with a letter or digit), or None when it is."""
    if len(value) > LABEL_VALUE_MAX:
        return f"it has {len(value)} characters, at most {LABEL_VALUE_MAX} are allowed"
    if not _LABEL_VALUE.fullmatch(value):
        return "it may hold only letters, digits, '-', '_' and '.', and must start and end with a letter or digit"
    return None


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a label key ([PREFIX/]NAME: a DNS subdomain, then a name like a
    non-empty label value), or None when it is."""
    prefix, slash, name = key.rpartition("/")
    if slash:
        problem = dns1123_subdomain_problem(prefix)
        if problem:
            return f"its prefix {prefix!r} is not a DNS subdomain: {problem}"
    if not name:
        return "its name is empty"
    return label_value_problem(name)


def hidden_characters(text: str) -> list[str]:
    """The characters of a name that change how it reads without showing: format characters
    (category Cf: the bidi controls U+202A-202E and U+2066-2069, zero-width ones, the soft
    hyphen) and control characters other than whitespace (ESC, DEL, the C1 range). A
    context name, an alias or a protected pattern holding one cannot be trusted to read
    as it is written."""
    if text.isascii() and text.isprintable():
        return []
    out = []
    for ch in text:
        category = unicodedata.category(ch)
        if category == "Cf" or (category == "Cc" and not ch.isspace()):
            out.append(ch)
    return out


def described(ch: str) -> str:
    """`U+202E RIGHT-TO-LEFT OVERRIDE`: a character as a message names it."""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'a control character')}"
