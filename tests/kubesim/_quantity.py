"""Kubernetes resource quantities (``500m``, ``24Gi``, ``1.5``) as numbers."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

_SUFFIX = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "u": Decimal("0.000001"),
    "n": Decimal("0.000000001"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_RE = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:[eE]([+-]?\d+))?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$")


def parse_quantity(value: Any) -> Decimal:
    """The number a quantity stands for (cpu in cores, memory in bytes)."""
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    m = _RE.match(str(value).strip())
    if not m:
        raise ValueError(f"invalid quantity: {value!r}")
    try:
        number = Decimal(m.group(1))
    except InvalidOperation as e:  # pragma: no cover - the regex rules it out
        raise ValueError(f"invalid quantity: {value!r}") from e
    if m.group(2):
        number *= Decimal(10) ** int(m.group(2))
    return number * _SUFFIX[m.group(3) or ""]
