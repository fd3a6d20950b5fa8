"""What `pack` takes from the run store: a GPU's DRAM plateau (a fleet's, per instance
type, or a sweep's of the same GPU), else its spec; a decode step time from a stored
`profile decode` run; the latest tokenizer measurement."""

from __future__ import annotations

from nsightlab.analysis.decode_models import DecodeResult, device_name_of
from nsightlab.analysis.fleet_models import FleetResult
from nsightlab.analysis.pack_plan import Bandwidth, TokenizerRate
from nsightlab.analysis.tokenizer_result import TokenizerResult
from nsightlab.errors import UsageError
from nsightlab.runs import store
from nsightlab.runs.floor import floor_bandwidth


def _complete(kind: str) -> list[store.RunStatus]:
    out = []
    for run in store.all_runs():
        status = store.inspect(run)
        if status.complete and status.meta is not None and status.meta.kind == kind:
            out.append(status)
    return out


def fleet_plateau(instance_type: str | None) -> Bandwidth | None:
    """The latest fleet's measured DRAM plateau of an instance type (median of its nodes)."""
    if not instance_type:
        return None
    for status in reversed(_complete("fleet")):
        result = status.result
        if not isinstance(result, FleetResult):
            continue
        for t in result.types:
            if t.instance_type == instance_type and t.dram_tbps is not None:
                return Bandwidth(
                    tbps=t.dram_tbps,
                    basis="measured",
                    label=f"measured DRAM plateau of {instance_type} by fleet {result.fleet_id} ({result.dtype})",
                )
    return None


def bandwidth_for(gpu_name: str | None, instance_type: str | None) -> Bandwidth | None:
    """What a decode step's floor divides by on this GPU: measured where the store has it
    (a fleet of the instance type, else a sweep of the same GPU), else the spec."""
    measured = fleet_plateau(instance_type)
    if measured is not None:
        return measured
    if not gpu_name:
        return None
    found, _ = floor_bandwidth(gpu_name, "cuda", None)
    if found is None:
        return None
    return Bandwidth(tbps=found.tbps, basis=found.basis, label=found.label)


def decode_step_ms(ref: str, concurrency: int | None) -> tuple[float, str]:
    """The median step of a stored `profile decode` run (its CUDA-graph mode where it has
    one), at the largest batch up to `concurrency`; and a sentence saying which."""
    status = store.inspect(store.resolve(ref))
    if not status.complete:
        assert status.error is not None
        raise status.error
    result = status.result
    if not isinstance(result, DecodeResult):
        kind = status.meta.kind if status.meta is not None else "?"
        raise UsageError(
            f"run {status.run.id} is a {kind} run, not a decode run",
            hint="Give --decode-run the id of a profile decode run (`nsightlab runs --kind decode` lists them).",
        )
    modes = [m for m in result.modes if m.mode == "graphs"] or list(result.modes)
    fitting = [m for m in modes if concurrency is None or m.batch <= concurrency] or modes
    pick = max(fitting, key=lambda m: m.batch)
    ms = pick.steps.step_ms.median
    device = device_name_of(result.device) or result.device
    return ms, (
        f"the step time: {ms:.3g} ms, the median {pick.mode} step at batch {pick.batch} of decode run "
        f"{status.run.id} ({result.model.preset or 'custom'} on {device})"
    )


def latest_tokenizer() -> TokenizerRate | None:
    """The latest stored tokenizer measurement, as tokens per second per vCPU."""
    runs = [s for s in _complete("tokenizer") if isinstance(s.result, TokenizerResult) and s.meta is not None]
    if not runs:
        return None
    latest = max(runs, key=lambda s: s.meta.created if s.meta is not None else 0)
    assert isinstance(latest.result, TokenizerResult)
    return TokenizerRate(tokens_per_s_per_vcpu=latest.result.tokens_per_s_per_vcpu, run_id=latest.run.id)
