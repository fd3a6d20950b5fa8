"""`lab_scripts/tokenizer_cpu.py`'s JSON (`kind: tokenizer`), and the prompts file it is
given, checked before it is copied to the target."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from nsightlab.errors import ParseError
from nsightlab.models import Model
from nsightlab.parse.records.script_json import read_script_json, validate_record


class TokenizerRecord(Model):
    """What nsightlab reads of tokenizer_cpu.py's JSON."""

    model_config = ConfigDict(extra="ignore")

    kind: Literal["tokenizer"]
    tokenizer: str
    vocab_size: int | None = None
    prompts: dict[str, Any]
    cpu_s: float
    wall_s: float
    tokens: int
    ms_per_request: float
    requests_per_s_per_vcpu: float
    tokens_per_s_per_vcpu: float
    device: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


def load_tokenizer_record(path: Path) -> TokenizerRecord:
    data = read_script_json(path)
    if not isinstance(data, dict) or data.get("kind") != "tokenizer":
        raise ParseError("not tokenizer_cpu.py's JSON (kind is not 'tokenizer')", source=path)
    return validate_record(TokenizerRecord, data, what="tokenizer JSON", source=path)


def check_prompts(text: str, *, source: str) -> int:
    """The prompts in a file as tokenizer_cpu.py reads it (JSON lines with a string
    `prompt` or `text`, else one prompt per line): how many, or ParseError naming the
    line. Checked here before the file is copied to the target."""
    count = 0
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ParseError(f"not a JSON line ({e.msg})", source=source, line=i) from None
            value = obj.get("prompt", obj.get("text")) if isinstance(obj, dict) else None
            if not isinstance(value, str):
                raise ParseError("a JSON line needs a string field prompt or text", source=source, line=i)
        count += 1
    if not count:
        raise ParseError("holds no prompt", source=source)
    return count
