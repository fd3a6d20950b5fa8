"""`pack`'s measurements in words: what K copies at once show (aggregate tokens/s grows
while one copy leaves the device idle, then flattens once the copies together saturate
its memory bandwidth, or on a CPU its cores), and what one pod's CPU can tokenize."""

from __future__ import annotations

from nsightlab.analysis.colocate_models import ColocateLine
from nsightlab.parse.records.tokenizer_record import TokenizerRecord
from nsightlab.units import percent, sig


def _copies(k: int) -> str:
    return f"{k} cop{'y' if k == 1 else 'ies'}"


def colocate_lesson(sharing: str, rows: list[ColocateLine], flat: int | None, cpu: bool) -> list[str]:
    """Aggregate tokens/s from the fewest copies to the most, and where it flattens (`flat`)."""
    rows = sorted(rows, key=lambda x: x.copies)
    one, last = rows[0], rows[-1]
    what = "the CPU's cores and memory bandwidth" if cpu else "the GPU's memory bandwidth"
    out = [
        f"{sharing}: {_copies(one.copies)} -> {last.copies}: aggregate "
        f"{sig(one.aggregate_tokens_per_s)} -> {sig(last.aggregate_tokens_per_s)} tokens/s "
        f"({sig(last.aggregate_tokens_per_s / one.aggregate_tokens_per_s)}x) while each copy's median step goes "
        f"{sig(one.step_ms.median)} -> {sig(last.step_ms.median)} ms ({sig(last.step_ms.median / one.step_ms.median)}x)"
    ]
    if flat is None:
        out.append(
            f"{sharing}: aggregate tokens/s still grows at {_copies(last.copies)}: one copy leaves {what} idle, and "
            "more copies fill it; try more copies to find where it flattens"
        )
    else:
        at = next(x for x in rows if x.copies == flat)
        plateau = f" ({percent(at.pct_of_plateau)} of the plateau)" if at.pct_of_plateau is not None else ""
        out.append(
            f"{sharing}: it flattens at {_copies(flat)}, {sig(at.aggregate_tbps)} TB/s together{plateau}: the copies "
            f"together saturate {what}; past that a copy only waits longer, each step there costing "
            f"{sig(at.step_ms.median / one.step_ms.median)}x its time alone"
        )
    return out


def tokenizer_lesson(record: TokenizerRecord, *, mean_tokens: float, pod_cpu: float | None) -> list[str]:
    """One request's CPU cost, and what a pod asking for `pod_cpu` can tokenize at most."""
    lesson = [
        f"one request of {sig(mean_tokens)} tokens takes {sig(record.ms_per_request)} ms of one core to tokenize: "
        f"{sig(record.requests_per_s_per_vcpu)} requests/s, {sig(record.tokens_per_s_per_vcpu)} tokens/s per vCPU"
    ]
    if pod_cpu:
        per_pod = record.tokens_per_s_per_vcpu * pod_cpu
        req_pod = record.requests_per_s_per_vcpu * pod_cpu
        lesson.append(
            f"a pod asking for {pod_cpu:g} CPU can tokenize at most {sig(req_pod)} such requests/s "
            f"({sig(per_pod)} tokens/s) if tokenizing were all its CPU did; vLLM's engine core and its GPU worker "
            "each keep a core busy too (2 + GPUs physical cores), so that is the ceiling, not the rate"
        )
    return lesson
