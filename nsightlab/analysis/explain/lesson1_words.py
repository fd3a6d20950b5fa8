"""lesson1's lesson: one sentence per timed range, from its rates and where it sits on
the roofline."""

from __future__ import annotations

from nsightlab import units
from nsightlab.analysis.roofline import Rates
from nsightlab.parse.records.lesson1_record import RangeWork


def _fmt_rate(bps: float) -> str:
    return units.tbps(bps)


def _fmt_flops(fps: float) -> str:
    return units.tflops(fps)


def range_sentence(work: RangeWork, r: Rates) -> str:
    head = f"{r.name}: {units.duration(r.seconds_per_call)} per call"
    if work.kernel_kind == "gemm":
        head += f", {_fmt_flops(r.flops_per_s)}"
        if r.pct_of_flops_peak is not None:
            head += f" ({units.percent(r.pct_of_flops_peak)} of {r.flops_label})"
    else:
        head += f", {_fmt_rate(r.bytes_per_s)}"
        if r.pct_of_bw_peak is not None:
            head += f" ({units.percent(r.pct_of_bw_peak)} of {r.bw_label})"
    if r.intensity is None:
        return head + "."
    head += f"; {units.sig(r.intensity)} FLOP/byte"
    if r.roofline is not None:
        roof = r.roofline
        if roof.bound == "memory":
            return (
                head + f", below the ridge at {units.sig(roof.ridge)} FLOP/byte: memory-bound. Only "
                "moving fewer bytes (smaller types, fusing ops) makes it faster."
            )
        return (
            head + f", above the ridge at {units.sig(roof.ridge)} FLOP/byte: compute-bound, at "
            f"{units.percent(roof.pct_of_attainable)} of the attainable {_fmt_flops(roof.attainable_flops_per_s)}."
        )
    if r.memory_roof_flops_per_s is not None:
        ratio = r.flops_per_s / r.memory_roof_flops_per_s
        if ratio < 0.5:
            return (
                head + f": bandwidth alone would allow {_fmt_flops(r.memory_roof_flops_per_s)} "
                f"at this intensity and it ran at {units.percent(100 * ratio)} of that, so memory is not what "
                "limits it (the compute peak is not in the table)."
            )
    return head + "."
