"""A bandwidth sweep in words: its lesson (a few sentences, each made from the measured
numbers) and its one-line headline for run lists.

A claim the rows do not support is not made: no plateau from one point, no bandwidth from
Triton's interpreter or from 16-bit floats on a CPU."""

from __future__ import annotations

from collections.abc import Sequence

from nsightlab import units
from nsightlab.analysis.sweep_models import PLATEAU_AGREEMENT, SweepPoint, SweepSummary
from nsightlab.parse.records.sweep_record import SweepRecord

#: Cache-resident sizes less than this many times faster than DRAM: the cache did not help.
CACHE_GAIN_MIN = 1.25
#: What the tutorial's sweep script assumes every element weighs.
TUTORIAL_ASSUMED_ELEMENT_SIZE = 2
#: An example of the weights one LLM decode step reads: 8B parameters in fp16.
EXAMPLE_WEIGHT_BYTES = 16e9


def tb_text(tbps: float) -> str:
    return units.tbps(tbps * 1e12)


def _log2s(values: Sequence[int]) -> str:
    if not values:
        return ""
    return f"2^{values[0]}" if len(values) == 1 else f"2^{values[0]}..2^{values[-1]}"


def sweep_lesson(summary: SweepSummary, points: Sequence[SweepPoint], record: SweepRecord | None = None) -> list[str]:
    """A few sentences, each made from the measured numbers: a claim the rows do not
    support is not made (no plateau from one point, no bandwidth from an interpreter or
    from 16-bit floats on a CPU)."""
    gpu = summary.device_type == "cuda"
    infinity = "Infinity Cache" in (summary.l2_source or "")  # an AMD Instinct GPU's last level
    cache_name = "Infinity Cache" if infinity else "L2 cache" if gpu else "last-level cache"
    out: list[str] = []
    if summary.interpreted:
        errors = [r.max_abs_error for r in (record.rows if record else []) if r.max_abs_error is not None]
        worst = max(errors, default=None)
        checked = (
            ""
            if worst is None
            else (
                " Every size matched torch's result exactly."
                if worst == 0
                else f" Every size matched torch's result (largest difference {units.sig(worst)})."
            )
        )
        out.append(
            "Triton ran in its interpreter (TRITON_INTERPRET=1, no GPU here): NumPy executed every "
            "program on the CPU, so the times measure the interpreter, not memory or launches. "
            f"No bandwidth can be read from this run: it checks correctness only.{checked}"
        )
        return out
    if not summary.bandwidth_test:
        out.append(
            f"{summary.dtype} on a CPU is converted to float32 and back element by element, so these "
            "times measure that arithmetic, not memory: this is not a bandwidth test there. "
            "Use float32 (the CPU default) to measure the memory system."
        )
    launch = [p for p in points if p.regime == "launch"]
    if launch and summary.launch_floor_us is not None:
        floor = summary.launch_floor_us
        floor_s = floor * 1e-6
        if gpu:
            what = "launching one kernel"
            if summary.kernels_per_call > 1:
                what = (
                    f"launching {summary.kernels_per_call} kernels (one call of {summary.impl}'s {summary.op} is "
                    f"{summary.kernels_per_call} kernels)"
                )
            cure = (
                "This is why LLM serving captures CUDA graphs and fuses kernels: a step of 1,000 "
                f"such calls would spend {units.duration(1000 * floor_s)} on launches alone."
            )
        else:
            what = (
                "dispatching one torch operation"
                if summary.kernels_per_call == 1
                else f"dispatching {summary.kernels_per_call} torch operations"
            )
            cure = (
                f"1,000 such calls would spend {units.duration(1000 * floor_s)} on overhead alone; fusing them "
                "(torch.compile) is the cure."
            )
        if summary.impl == "triton":
            what = "a launch through Triton's Python launcher" if gpu else what
        out.append(
            f"Up to {units.size(launch[-1].tensor_bytes)} the time sits at a {units.duration(floor_s)} floor "
            f"whatever the size: that is the fixed cost of {what}, not data movement, and "
            f"the bandwidth figures there mean nothing. {cure}"
        )
    if not summary.bandwidth_test:
        return out
    plateau = summary.dram_tbps
    if summary.cache_peak_tbps is not None and summary.cache_peak_log2 is not None:
        peak_row = next(p for p in points if p.log2 == summary.cache_peak_log2)
        where = f"At {units.size(peak_row.tensor_bytes)} the {summary.op} ran at {tb_text(summary.cache_peak_tbps)}"
        fits = (
            f"working set {units.size(peak_row.tensor_bytes)} < {units.size(summary.l2_bytes)} {cache_name}"
            if summary.l2_bytes
            else f"the working set fits in the {cache_name}"
        )
        if plateau and summary.cache_peak_tbps < CACHE_GAIN_MIN * plateau:
            out.append(
                f"{where}, only {units.ratio(summary.cache_peak_tbps / plateau)} the DRAM plateau "
                f"({tb_text(plateau)}) although it fits ({fits}): the cache did not help this op, so something "
                "other than memory limits it at those sizes."
            )
        else:
            if summary.spec_dram_tbps and summary.cache_peak_tbps > summary.spec_dram_tbps:
                versus = (
                    f"{units.ratio(summary.cache_peak_tbps / summary.spec_dram_tbps)} the DRAM spec "
                    f"({summary.spec_label})"
                )
            elif plateau:
                versus = (
                    f"{units.ratio(summary.cache_peak_tbps / plateau)} this device's measured DRAM plateau "
                    f"({tb_text(plateau)})"
                )
            else:
                versus = None
            partly = ""
            if summary.launch_floor_us and peak_row.us < 3 * summary.launch_floor_us:
                partly = " It is still partly launch-bound, so the cache itself is faster still."
            if versus is not None:
                out.append(
                    f"{where}, {versus}: it ran from the cache ({fits}), not from memory. "
                    f"Never quote such a figure as memory bandwidth.{partly}"
                )
            else:
                out.append(
                    f"{where} ({fits}), but with no DRAM plateau measured this run cannot say how "
                    "much faster the cache was than memory."
                )
    if plateau:
        # the run of DRAM-bound sizes that ends the sweep, each within PLATEAU_AGREEMENT of
        # the plateau: where the curve has settled ("from X up" claims every size above X)
        settled: list[SweepPoint] = []
        for p in reversed(points):
            if p.regime != "dram" or abs(p.tbps / plateau - 1) > PLATEAU_AGREEMENT:
                break
            settled.append(p)
        start = f"From {units.size(settled[-1].tensor_bytes)} up" if settled else f"At {_log2s(summary.dram_from_log2)}"
        off = [
            p
            for p in points
            if p.regime == "dram" and p not in settled and abs(p.tbps / plateau - 1) > PLATEAU_AGREEMENT
        ]
        pct = ""
        if summary.dram_pct_of_spec is not None:
            pct = f", {units.percent(summary.dram_pct_of_spec)} of the DRAM spec ({summary.spec_label})"
        agree = _log2s(summary.dram_from_log2)
        if summary.plateau_spread is not None:
            agree += f" agree within {units.percent(100 * summary.plateau_spread)}"
        estimate = " (an estimate: no size was far beyond the cache)" if summary.dram_is_estimate else ""
        floor_s = EXAMPLE_WEIGHT_BYTES / (plateau * 1e12)
        if off:
            agree += "; " + ", ".join(
                f"{units.size(p.tensor_bytes)} ran {units.percent(100 * abs(p.tbps / plateau - 1))} "
                f"{'below' if p.tbps < plateau else 'above'} it"
                for p in off
            )
        out.append(
            f"{start} the bandwidth settles at {tb_text(plateau)}{pct}; {agree}{estimate}. That is "
            "the memory ceiling of this device for a streaming op. LLM weights are far larger than "
            "any cache and decode reads all of them for every token, so this governs decode: "
            f"per-token floor = weight bytes / {tb_text(plateau)}, e.g. {units.duration(floor_s)} for "
            f"{units.gigabytes(EXAMPLE_WEIGHT_BYTES)} (8B parameters in fp16)."
        )
    elif summary.plateau_reason:
        out.append(f"DRAM plateau: {summary.plateau_reason}.")
    if summary.op == "scale-add":
        if summary.kernels_per_call > 1:
            out.append(
                f"scale-add in torch is {summary.kernels_per_call} kernels per call (x.mul_, then x.add_), "
                f"each reading and writing the tensor: {2 * summary.kernels_per_call} x elements x "
                f"{summary.element_size} B per call. A fused kernel (--impl triton) does the same work "
                "moving half the bytes."
            )
        else:
            out.append(
                f"scale-add here is one fused kernel: 2 x elements x {summary.element_size} B per call, "
                "half the bytes torch's two kernels (x.mul_, then x.add_) move."
            )
    if summary.element_size != TUTORIAL_ASSUMED_ELEMENT_SIZE:
        factor = summary.element_size / TUTORIAL_ASSUMED_ELEMENT_SIZE
        out.append(
            f"Bytes are counted with {summary.element_size} B per element ({summary.dtype}). "
            f"The tutorial's script assumes 2 B per element and would print {units.sig(1 / factor)}x "
            "these bandwidths."
        )
    return out


def headline(summary: SweepSummary) -> str:
    """One line for run lists: 'DRAM 1.46 TB/s (92% of 1.597 TB/s spec)'."""
    what = "" if summary.impl == "torch" and summary.op == "scale" else f"{summary.impl} {summary.op}: "
    if summary.interpreted:
        return f"{what}interpreted: correctness only"
    if not summary.bandwidth_test:
        return f"{what}{summary.dtype} on a CPU: not a bandwidth test"
    if summary.dram_tbps is not None:
        text = f"{what}DRAM {'~' if summary.dram_is_estimate else ''}{tb_text(summary.dram_tbps)}"
        if summary.dram_pct_of_spec is not None and summary.spec_dram_tbps is not None:
            # a datasheet figure is quoted as its datasheet gives it (as in the spec's label)
            text += f" ({units.percent(summary.dram_pct_of_spec)} of {summary.spec_dram_tbps:.4g} TB/s spec)"
        return text
    status = {"one point": "DRAM one point: inconclusive", "disagree": "DRAM sizes disagree: inconclusive"}.get(
        summary.plateau_status or "", "no DRAM plateau"
    )
    if summary.cache_peak_tbps is not None:
        return f"{what}cache peak {tb_text(summary.cache_peak_tbps)}, {status}"
    if summary.launch_floor_us is not None:
        return f"{what}launch floor {units.duration(summary.launch_floor_us * 1e-6)}, {status}"
    return f"{what}{status}"


def sizes_text(log2s: Sequence[int]) -> str:
    """'2^26, 2^28, 2^30'."""
    return ", ".join(f"2^{n}" for n in log2s)
