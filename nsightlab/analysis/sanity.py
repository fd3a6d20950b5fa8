"""Measured figures against physical bounds, each bound with its source.

A figure outside its bound is a finding: its row says `ok: false` and a note says what
could explain it; it is never dropped or quietly kept. A row whose figure the run did not
produce says `ok: null` and why. The bounds the checks use are the constants below and
the spec table (`nsightlab.specs.gpus`): one place to read and to join with other
bounds.

GPU checks: lesson1's scale under the DRAM spec and its GEMM under the dense FP16/BF16
peak; each sweep's DRAM plateau below the spec and its launch floor at least a few
microseconds; a decode step replayed from a CUDA graph at batch 1 faster than its eager
twin; a decode's fastest matrix rate under the dense peak of its dtype; every decode step
at or above its floor (the bytes a step must read over the spec bandwidth); copies at
once reading no faster together than the spec. CPU checks (no spec there): a sweep's DRAM
plateau not above its cache peak; a decode step not below its floor at the fastest rate
the run's own sweep measured. Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from nsightlab.analysis.colocate_models import ColocateResult
from nsightlab.analysis.peaks import peak_tflops
from nsightlab.analysis.profile_models import ProfileResult
from nsightlab.analysis.sweep_result import SweepResult
from nsightlab.models import Model
from nsightlab.parse.records.decode_record import DecodeRecord
from nsightlab.specs import bounds
from nsightlab.specs.gpus import GpuSpec
from nsightlab.units import sig


class Bound(NamedTuple):
    value: float
    unit: str
    source: str


# --- the bounds that are not in the spec table ---

#: A GPU kernel's launch floor, timed back to back with CUDA events: below it the calls
#: overlapped or the timer read early.
LAUNCH_FLOOR_MIN = Bound(
    1.0,
    "us",
    "a kernel launch costs a few microseconds: gpu-benches (RRZE) measured about 2.5 us per back-to-back launch "
    "on an H200; the tutorial's floor was 5.7-5.9 us on an RTX PRO 6000",
)
#: A decode step replayed from a CUDA graph launches its kernels in one call.
GRAPHS_FASTER_SOURCE = (
    "a CUDA graph replays a step's kernels with one launch instead of one per kernel (PyTorch's CUDA graphs notes; "
    "gpu-benches: graphs about halve back-to-back launch time)"
)
#: A decode step reads at least its weights and the live K/V cache once.
DECODE_FLOOR_SOURCE = "decode.py's bytes_per_step_floor (weights + live K/V cache) over"

Relation = Literal["<=", "<", ">="]


class SanityRow(Model):
    check: str
    value: float | None
    bound: float | None
    unit: str
    relation: Relation  # value RELATION bound is what ok means
    source: str
    ok: bool | None  # None: the run did not produce the figure (note says why)
    note: str | None = None


@dataclass
class RunFigures:
    """What the checks read: the run's analysed records."""

    device_type: str  # where the ops ran: cuda or cpu
    spec: GpuSpec | None
    device_name: str | None = None
    lesson1: ProfileResult | None = None
    sweeps: list[tuple[str, SweepResult]] = field(default_factory=list)
    decodes: list[tuple[str, DecodeRecord]] = field(default_factory=list)
    colocate: ColocateResult | None = None
    implausible: list[tuple[str, str]] = field(default_factory=list)  # (step, why) of records refused as impossible


def _row(
    check: str,
    value: float | None,
    bound: float | None,
    unit: str,
    relation: Relation,
    source: str,
    *,
    finding: str,
    missing: str,
) -> SanityRow:
    """A row; `finding` is the note when the figure breaks its bound, `missing` when
    there is no figure."""
    if value is not None and not math.isfinite(value):
        value, missing = None, f"the figure is not a finite number ({value}): the record is damaged"
    if bound is not None and not math.isfinite(bound):
        bound = None
    if value is None or bound is None:
        return SanityRow(
            check=check, value=value, bound=bound, unit=unit, relation=relation, source=source, ok=None, note=missing
        )
    if relation == "<=":
        ok = value <= bound
    elif relation == "<":
        ok = value < bound
    else:
        ok = value >= bound
    return SanityRow(
        check=check,
        value=value,
        bound=bound,
        unit=unit,
        relation=relation,
        source=source,
        ok=ok,
        note=None if ok else finding,
    )


def check_run(f: RunFigures) -> list[SanityRow]:
    """Every check the run's figures allow, GPU or CPU; a record refused as no measurement any
    device could make is a row of its own, outside its bound, never dropped in silence."""
    rows = _cpu_rows(f) if f.device_type == "cpu" else _gpu_rows(f)
    return rows + [
        SanityRow(
            check=f"{step} plausible",
            value=None,
            bound=None,
            unit="",
            relation=">=",
            source=bounds.SOURCE,
            ok=False,
            note=f"the record was refused: {why}",
        )
        for step, why in f.implausible
    ]


# ------------------------------------------------------------------ GPU


def _gpu_rows(f: RunFigures) -> list[SanityRow]:
    spec = f.spec
    no_spec = f"{f.device_name or 'this GPU'} is not in the spec table: no datasheet bound"
    dram = spec.dram_bw_bytes_per_s / 1e12 if spec and spec.dram_bw_bytes_per_s else None
    dram_src = spec.bw_label() or spec.source if spec else "the spec table"
    rows: list[SanityRow] = []
    if f.lesson1 is not None:
        rows += _lesson1_rows(f.lesson1, spec, dram, dram_src or "", no_spec)
    for step, s in f.sweeps:
        if s.interpreted or not s.summary.bandwidth_test:
            continue
        what = f"{step} ({s.impl} {s.op}, {s.dtype})"
        rows.append(
            _row(
                f"{what}: DRAM plateau below the spec",
                s.summary.dram_tbps,
                dram,
                "TB/s",
                "<",
                dram_src or "",
                finding="the plateau's sizes were partly served from the L2, or the bytes counted per call are more "
                "than the kernel moved; read the sweep's rows and regimes",
                missing=no_spec if dram is None else f"no DRAM plateau: {s.summary.plateau_reason or 'not named'}",
            )
        )
        rows.append(
            _row(
                f"{what}: launch floor at least {LAUNCH_FLOOR_MIN.value:g} us",
                s.summary.launch_floor_us,
                LAUNCH_FLOOR_MIN.value,
                "us",
                ">=",
                LAUNCH_FLOOR_MIN.source,
                finding="faster than a launch: the timed calls overlapped, or the events were read before the "
                "kernels ended",
                missing="no size sat at a launch floor (the smallest sizes already took longer than a launch)",
            )
        )
    for step, rec in f.decodes:
        rows += _graphs_rows(step, rec)
        rows += _matmul_rows(step, rec, spec, no_spec)
        if dram is not None:
            rows += _floor_rows(step, rec, dram * 1e12, f"{DECODE_FLOOR_SOURCE} the {dram_src}")
        else:
            rows.append(
                _row(
                    f"{step}: decode step at or above its floor",
                    None,
                    None,
                    "ms",
                    ">=",
                    "",
                    finding="",
                    missing=no_spec,
                )
            )
    if f.colocate is not None:
        for sharing in dict.fromkeys(x.sharing for x in f.colocate.results):
            best = max((x for x in f.colocate.results if x.sharing == sharing), key=lambda x: x.aggregate_tbps)
            rows.append(
                _row(
                    f"colocate ({sharing}): {best.copies} copies together at most the DRAM spec",
                    best.aggregate_tbps,
                    dram,
                    "TB/s",
                    "<=",
                    dram_src or "",
                    finding="the copies together read faster than the memory can deliver: their timed windows "
                    "barely overlapped, or what each step must read was counted too high",
                    missing=no_spec,
                )
            )
    return rows


def _lesson1_rows(
    p: ProfileResult, spec: GpuSpec | None, dram: float | None, dram_src: str, no_spec: str
) -> list[SanityRow]:
    rows = []
    by_name = {r.name: r for r in p.ranges}
    scale = by_name.get("memory_bound_scale")
    gemm = by_name.get("compute_bound_gemm")
    if scale is not None:
        rows.append(
            _row(
                "lesson1 scale: at most the DRAM spec",
                scale.rates.tbps if scale.rates else None,
                dram,
                "TB/s",
                "<=",
                dram_src,
                finding="the scale read faster than the memory can deliver: the tensor was partly in the L2, or "
                "the bytes per call are counted too high",
                missing=no_spec if dram is None else "the profile gave the scale range no rate",
            )
        )
    if gemm is not None:
        peak = spec.fp16_tensor_tflops if spec else None
        rows.append(
            _row(
                "lesson1 GEMM: at most the dense FP16/BF16 tensor peak",
                gemm.rates.tflops if gemm.rates else None,
                peak,
                "TFLOP/s",
                "<=",
                f"{spec.short} dense FP16/BF16 tensor peak ({spec.source})" if spec else "the spec table",
                finding="above the datasheet's dense peak: the FLOPs per call are counted too high, the timer is "
                "wrong, or the inputs let the hardware skip work",
                missing=no_spec if peak is None else "the profile gave the GEMM range no rate",
            )
        )
    return rows


def _median_ms(rec: DecodeRecord, mode: str, batch: int) -> float | None:
    for e in rec.modes:
        if e.mode == mode and e.batch == batch:
            return e.median_step_s * 1e3
    return None


def _graphs_rows(step: str, rec: DecodeRecord) -> list[SanityRow]:
    batch = min((e.batch for e in rec.modes), default=None)
    if batch is None:
        return []
    graphs, eager = _median_ms(rec, "graphs", batch), _median_ms(rec, "eager", batch)
    finding = ""
    if graphs is not None and eager is not None:
        finding = (
            f"the graph's step is {sig(100.0 * (graphs / eager - 1.0))}% slower than eager's: the GPU stayed busy "
            "while Python launched the next kernels (a step bound by memory, not launches), so removing the launches "
            "gained nothing; compare both with the floor rows"
        )
    return [
        _row(
            f"{step} ({rec.model.preset or 'custom'}): graphs faster than eager at batch {batch}",
            graphs,
            eager,
            "ms",
            "<",
            GRAPHS_FASTER_SOURCE,
            finding=finding,
            missing="the run has no "
            + ("graphs" if graphs is None else "eager")
            + f" step at batch {batch} (a mode failed, or the run was cut short)",
        )
    ]


def _matmul_rows(step: str, rec: DecodeRecord, spec: GpuSpec | None, no_spec: str) -> list[SanityRow]:
    """The fastest step's matrix FLOP/s against the dense peak of the model's dtype."""
    timed = [e for e in rec.modes if e.median_step_s > 0 and e.flops_per_step > 0]
    if not timed:
        return []
    e = max(timed, key=lambda e: e.flops_per_step / e.median_step_s)
    peak, label = peak_tflops(spec, rec.model.dtype)
    return [
        _row(
            f"{step} ({rec.model.preset or 'custom'}) {e.mode}, batch {e.batch}: matrix TFLOP/s at most the dense "
            f"{rec.model.dtype} peak",
            e.flops_per_step / e.median_step_s / 1e12,
            peak,
            "TFLOP/s",
            "<=",
            label or "the spec table",
            finding="above the datasheet's dense peak: the FLOPs per step are counted too high or the timer is wrong",
            missing=no_spec if spec is None else f"the spec table has no dense {rec.model.dtype} peak for this GPU",
        )
    ]


def _floor_rows(step: str, rec: DecodeRecord, bytes_per_s: float, source: str) -> list[SanityRow]:
    """Per mode: the batch whose step is closest to its floor, against the floor."""
    rows = []
    for mode in dict.fromkeys(e.mode for e in rec.modes):
        entries = [e for e in rec.modes if e.mode == mode and e.bytes_per_step_floor > 0 and e.median_step_s > 0]
        if not entries:
            continue
        e = min(entries, key=lambda e: e.median_step_s * bytes_per_s / e.bytes_per_step_floor)
        floor_ms = e.bytes_per_step_floor / bytes_per_s * 1e3
        rows.append(
            _row(
                f"{step} ({rec.model.preset or 'custom'}) {mode}: step at or above its floor "
                f"(closest: batch {e.batch})",
                e.median_step_s * 1e3,
                floor_ms,
                "ms",
                ">=",
                source,
                finding="faster than reading the weights and K/V cache once allows: part of what a step reads stayed "
                "in a cache, the bytes are counted too high, or the timer is wrong",
                missing="",
            )
        )
    return rows


# ------------------------------------------------------------------ CPU


def _cpu_rows(f: RunFigures) -> list[SanityRow]:
    rows: list[SanityRow] = []
    tested = [(step, s) for step, s in f.sweeps if s.summary.bandwidth_test and not s.interpreted]
    for step, s in tested:
        peak_log2 = s.summary.cache_peak_log2
        rows.append(
            _row(
                f"{step} ({s.impl} {s.op}, {s.dtype}): DRAM plateau not above its cache peak",
                s.summary.dram_tbps,
                s.summary.cache_peak_tbps,
                "TB/s",
                "<=",
                f"this sweep's own cache peak (2^{peak_log2})" if peak_log2 is not None else "this sweep's cache peak",
                finding="the largest sizes ran faster than the cache-resident ones: the bytes are counted too high "
                "there, or the cache size the sizes were judged by is wrong",
                missing=_cpu_missing(s),
            )
        )
    fastest = max((r.tbps for _, s in tested for r in s.rows), default=None)
    fastest_at = next((f"{step} at 2^{r.log2}" for step, s in tested for r in s.rows if r.tbps == fastest), "")
    for step, rec in f.decodes:
        if fastest is None:
            rows.append(
                _row(
                    f"{step} ({rec.model.preset or 'custom'}): decode step not below its floor",
                    None,
                    None,
                    "ms",
                    ">=",
                    "",
                    finding="",
                    missing="no bandwidth sweep of this CPU in the run: no rate to set a floor by",
                )
            )
            continue
        rows += _floor_rows(
            step,
            rec,
            fastest * 1e12,
            f"{DECODE_FLOOR_SOURCE} the fastest rate this run measured ({sig(fastest)} TB/s, {fastest_at})",
        )
    return rows


def _cpu_missing(s: SweepResult) -> str:
    if s.summary.dram_tbps is None and s.summary.cache_peak_tbps is not None:
        cache = s.summary.l2_bytes
        size = f"{cache / 2**20:.0f} MiB " if cache else ""
        return (
            f"no DRAM plateau: every size stayed within the {size}last-level cache "
            f"({s.summary.plateau_reason or 'no size several times the cache'})"
        )
    if s.summary.cache_peak_tbps is None:
        return "no cache-resident size: no cache peak to compare with"
    return s.summary.plateau_reason or "no plateau"
