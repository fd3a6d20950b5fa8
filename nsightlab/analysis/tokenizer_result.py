"""`pack tokenizer`: the CPU a tokenizer costs, as `lab_scripts/tokenizer_cpu.py` measured
it (`parse.records.tokenizer_record`), and what one pod's CPU request can feed. Stored as
a run of kind `tokenizer`; `pack` uses the latest one. Pure."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from nsightlab.analysis.explain.pack_words import tokenizer_lesson
from nsightlab.models import Model
from nsightlab.parse.records.tokenizer_record import TokenizerRecord
from nsightlab.units import sig


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
    lesson = tokenizer_lesson(record, mean_tokens=mean, pod_cpu=pod_cpu)
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
