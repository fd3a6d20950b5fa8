"""Every field of `pack`'s JSON documents is in docs/packing.md, and the page's sample
blocks name no field the models lack."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from nsightlab.analysis.colocate_models import ColocateResult
from nsightlab.analysis.pack_plan import PackReport
from nsightlab.analysis.tokenizer_result import TokenizerResult

DOC = Path(__file__).resolve().parent.parent / "docs" / "packing.md"


def _names(schema: dict[str, Any]) -> set[str]:
    out = set(schema.get("properties") or {})
    for sub in (schema.get("$defs") or {}).values():
        out |= set(sub.get("properties") or {})
    return out


def _json_blocks() -> str:
    return "\n".join(re.findall(r"```json\n(.*?)```", DOC.read_text(), re.S))


@pytest.mark.parametrize("model", [PackReport, ColocateResult, TokenizerResult])
def test_every_field_is_documented(model: type[BaseModel]) -> None:
    blocks = _json_blocks()
    missing = sorted(n for n in _names(model.model_json_schema()) if f'"{n}"' not in blocks)
    assert missing == [], f"{model.__name__}: not in docs/packing.md's JSON: {missing}"


def test_the_documented_fields_exist() -> None:
    known = set().union(*(_names(m.model_json_schema()) for m in (PackReport, ColocateResult, TokenizerResult)))
    documented = set(re.findall(r'"([a-z_]+)"', _json_blocks())) - {"..."}
    values = {"pack", "tokenizer"}  # kinds written as values
    assert sorted(documented - known - values) == []
