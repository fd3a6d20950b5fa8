"""lesson1's two timed ranges as rates against the spec peaks of the GPU they ran on:
bytes and FLOPs per call over seconds per call, the percentage of each peak (naming the
spec and its source), arithmetic intensity and the roofline verdict."""

from __future__ import annotations

from collections.abc import Mapping

from nsightlab.analysis.explain.lesson1_words import range_sentence
from nsightlab.analysis.roofline import Rates, compute_peak, rates
from nsightlab.models import Model
from nsightlab.parse.records.lesson1_record import Lesson1Record
from nsightlab.specs.gpus import GpuSpec, merge_device


class Lesson1Analysis(Model):
    device_name: str | None
    device_type: str
    spec_name: str | None
    timing_source: str
    scaled_down: bool
    ranges: list[Rates]
    lesson: list[str]
    notes: list[str]


def analyze_lesson1(
    record: Lesson1Record,
    spec: GpuSpec | None = None,
    *,
    seconds_per_call: Mapping[str, float] | None = None,
    timing_source: str = "the script's own timing",
    peak_tflops: float | None = None,
) -> Lesson1Analysis:
    """Rates and roofline verdicts for lesson1's two ranges.

    `spec` defaults to the table's entry for the reported GPU. `seconds_per_call` replaces
    the script's own times per range name (e.g. the profiler's per-range kernel time, which
    excludes the warm-up calls), with `timing_source` naming where they came from.
    `peak_tflops` overrides the compute peak (for a GPU whose peak the table lacks).
    """
    dev = merge_device(record.device.model_dump(), spec)
    notes: list[str] = list(dev.notes)
    out: list[Rates] = []
    lesson: list[str] = []
    for r in record.ranges:
        secs = (seconds_per_call or {}).get(r.name, r.seconds_per_call)
        if secs is None:
            notes.append(f"{r.name}: no time per call; not analysed")
            continue
        peak_f, f_label = compute_peak(dev, r.dtype, r.kernel_kind)
        if peak_tflops is not None:
            peak_f, f_label = peak_tflops * 1e12, f"{peak_tflops:g} TFLOP/s (given)"
        rr = rates(
            name=r.name,
            bytes_per_call=r.bytes_per_call,
            flops_per_call=r.flops_per_call,
            seconds_per_call=secs,
            peak_bytes_per_s=dev.dram_bw_bytes_per_s,
            bw_label=dev.dram_bw_label,
            peak_flops_per_s=peak_f,
            flops_label=f_label,
        )
        out.append(rr)
        lesson.append(range_sentence(r, rr))
        if rr.roofline is None and dev.device_type == "cuda":
            missing = "bandwidth" if rr.peak_bytes_per_s is None else "compute peak"
            notes.append(
                f"{r.name}: no roofline verdict: the {missing} of {dev.name or 'this GPU'} is not in the table"
            )
    if dev.device_type != "cuda":
        notes.append("measured on a CPU: no spec peaks apply; rates are this machine's own")
    return Lesson1Analysis(
        device_name=dev.name,
        device_type=dev.device_type,
        spec_name=dev.spec_name,
        timing_source=timing_source,
        scaled_down=record.scaled_down,
        ranges=out,
        lesson=lesson,
        notes=notes,
    )
