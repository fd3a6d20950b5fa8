"""`pack tokenizer`: the CPU a tokenizer costs, as `lab_scripts/tokenizer_cpu.py` measured
it, and what one pod's CPU request can feed. Stored as a run of kind `tokenizer`; `pack`
uses the latest one. Pure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from nsightlab.errors import ParseError
from nsightlab.models import Model, loads
from nsightlab.units import sig


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
    try:
        data = loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ParseError(f"not valid JSON ({e.msg})", source=path, line=e.lineno) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ParseError(f"cannot read the file: {e}", source=path) from None
    if not isinstance(data, dict) or data.get("kind") != "tokenizer":
        raise ParseError("not tokenizer_cpu.py's JSON (kind is not 'tokenizer')", source=path)
    try:
        return TokenizerRecord.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ParseError(
            f"bad tokenizer JSON at {'.'.join(str(p) for p in err['loc'])}: {err['msg']}", source=path
        ) from None


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


class TokenizerResult(Model):
    """`nsightlab pack tokenizer --json` (and the run's result.json)."""

    kind: Literal["tokenizer"] = "tokenizer"
    run_id: str | None = None
    device: str  # "cpu (NAME)"
    tokenizer: str
    prompts: int
    prompt_source: str  # file or generated
    mean_prompt_tokens: float
    ms_per_request: float  # CPU ms to tokenize one request, on one core
    requests_per_s_per_vcpu: float
    tokens_per_s_per_vcpu: float
    pod_cpu: float | None  # the CPU one pod asks for (lab.cpu, or --pod-cpu)
    tokens_per_s_per_pod: float | None
    requests_per_s_per_pod: float | None
    lesson: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    @property
    def headline(self) -> str:
        return f"{sig(self.ms_per_request)} CPU ms per request, {sig(self.tokens_per_s_per_vcpu)} tokens/s per vCPU"


def build_tokenizer(record: TokenizerRecord, *, pod_cpu: float | None) -> TokenizerResult:
    mean = float(record.prompts.get("mean_tokens") or 0.0)
    count = int(record.prompts.get("count") or 0)
    per_pod = record.tokens_per_s_per_vcpu * pod_cpu if pod_cpu else None
    req_pod = record.requests_per_s_per_vcpu * pod_cpu if pod_cpu else None
    lesson = [
        f"one request of {sig(mean)} tokens takes {sig(record.ms_per_request)} ms of one core to tokenize: "
        f"{sig(record.requests_per_s_per_vcpu)} requests/s, {sig(record.tokens_per_s_per_vcpu)} tokens/s per vCPU"
    ]
    if per_pod is not None and req_pod is not None and pod_cpu:
        lesson.append(
            f"a pod asking for {pod_cpu:g} CPU can tokenize at most {sig(req_pod)} such requests/s "
            f"({sig(per_pod)} tokens/s) if tokenizing were all its CPU did; vLLM's engine core and its GPU worker "
            "each keep a core busy too (2 + GPUs physical cores), so that is the ceiling, not the rate"
        )
    name = record.device.get("name")
    return TokenizerResult(
        device=f"cpu ({name})" if name else "cpu",
        tokenizer=record.tokenizer,
        prompts=count,
        prompt_source=str(record.prompts.get("source") or "?"),
        mean_prompt_tokens=mean,
        ms_per_request=record.ms_per_request,
        requests_per_s_per_vcpu=record.requests_per_s_per_vcpu,
        tokens_per_s_per_vcpu=record.tokens_per_s_per_vcpu,
        pod_cpu=pod_cpu,
        tokens_per_s_per_pod=per_pod,
        requests_per_s_per_pod=req_pod,
        lesson=lesson,
        notes=list(record.notes),
    )
