"""The base of nsightlab's pydantic models, and the JSON reader of outside data.

A command imports the result models of many commands (through the renderers and the run
store) and uses a few. `defer_build` leaves a model's validator and serializer unbuilt
until its first use: the others cost only their class statement.

No model takes NaN or an infinity (`allow_inf_nan=False`): a record, a result or a
setting holds finite numbers only, whatever file or pod it came from. `loads` reads
JSON from outside (a lab script's output, a file given to `analyze`, a stored run) and
refuses what would put one in a value no model checks: the constants `NaN`,
`Infinity` and `-Infinity` (Python's json takes them), numbers that overflow to an
infinity (`1e999`) and integers too large to be a size or a count.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

# The largest integer a record holds (a size in bytes, a count, a time in ns): int64's.
INT_MAX = 2**63 - 1
# Where a refused number stands in a document: after a key, a comma or a bracket.
_NON_FINITE = re.compile(r"[:,\[]\s*(-?Infinity|NaN|-?\d+(?:\.\d+)?[eE][+-]?\d{3,}|-?\d{19,})")


class Model(BaseModel):
    """A pydantic model whose validator is built when it is first used; finite numbers only."""

    model_config = ConfigDict(defer_build=True, allow_inf_nan=False)


class NonFiniteError(json.JSONDecodeError):
    """A JSON document holding NaN, an infinity or an overflowing number."""


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a record may hold")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large to be a number a record may hold")
    return value


def _int(text: str) -> int:
    value = int(text)
    if abs(value) > INT_MAX:
        raise ValueError(f"{text[:24]}{'...' if len(text) > 24 else ''} is too large to be a number a record may hold")
    return value


def loads(text: str | bytes) -> Any:
    """JSON from outside, without NaN, infinities or overflowing numbers: those raise
    NonFiniteError (a json.JSONDecodeError, with the line of the first such number when
    it can be told); malformed JSON raises json.JSONDecodeError as json.loads does."""
    try:
        return json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except json.JSONDecodeError:
        raise
    except ValueError as e:
        doc = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        found = _NON_FINITE.search(doc)
        raise NonFiniteError(str(e), doc, found.start(1) if found else 0) from None
