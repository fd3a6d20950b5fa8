"""Physical bounds on what a lab script can have measured: the one place they are named.

A figure outside them comes from a broken timer, an edited file or a hostile image, not
from a device. Every reader of a lab script's record (the sweep's, lesson1's,
decode.py's: in `analyze`, in the lab commands and in a fleet's Job logs) applies
`check_call` to each timed thing in it and refuses the record with one message
(`ImplausibleMeasurement`, exit 2 for a file; a fleet's entry fails with it, exit 6).

The bounds are deliberately loose: far outside what any device in the spec table (or a
CPU) does, so that no real measurement is ever refused, only impossible ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from nsightlab import units
from nsightlab.errors import ParseError
from nsightlab.specs.gpus import SPECS

# The shortest time one call can take on any target. A CUDA kernel launch costs
# microseconds (the tutorial measured a ~6 us floor on an RTX PRO 6000; gpu-benches ~2.5 us
# per back-to-back launch on an H200, CUDA graphs roughly halving it); a torch op on a CPU
# ~1-3 us (tests/data: 2.4 us on an EPYC). 100 ns is far below all of them.
MIN_SECONDS_PER_CALL = 100e-9

# The fastest memory in the spec table (gpus.SPECS: the H200's 4.8 TB/s HBM3e, its
# datasheet), times a margin for sizes served from a cache: the apparent bandwidth of a
# cache-resident size exceeds the DRAM spec (the tutorial: 5.45 TB/s from L2 on a
# 1.6 TB/s GPU; gpu-benches: ~10 TB/s from the H200's L2), and even the aggregate L1 of
# the largest GPU here (an H100 SXM: 132 SMs x 128 B/clock x ~1.98 GHz, ~33 TB/s, NVIDIA's
# H100 whitepaper) stays below 20x the table's fastest DRAM.
BANDWIDTH_MARGIN = 20.0
_FASTEST = max((s for s in SPECS if s.dram_bw_bytes_per_s), key=lambda s: s.dram_bw_bytes_per_s or 0.0)
FASTEST_MEMORY_BYTES_PER_S = float(_FASTEST.dram_bw_bytes_per_s or 0.0)
MAX_BYTES_PER_S = FASTEST_MEMORY_BYTES_PER_S * BANDWIDTH_MARGIN

# The fastest dense FP16 tensor-core peak in the spec table (989 TFLOP/s, the H100 SXM and
# H200 datasheets), times a margin that covers the newer GPUs not in it and their narrower
# formats (a B200 is specified at ~2.25 PFLOP/s dense FP16 and ~9 PFLOP/s dense FP4).
FLOPS_MARGIN = 10.0
MAX_FLOP_PER_S = max(s.fp16_tensor_tflops or 0.0 for s in SPECS) * 1e12 * FLOPS_MARGIN

# Where a refusal's bounds are named, for tables that cite their sources (a device run's sanity table).
SOURCE = (
    f"nsightlab/specs/bounds.py: a call takes at least {units.duration(MIN_SECONDS_PER_CALL)}; no memory is "
    f"faster than {BANDWIDTH_MARGIN:g}x the spec table's fastest ({_FASTEST.short})"
)


class ImplausibleMeasurement(ParseError):
    """A record whose figures no device can produce; `problem` says which (without the file)."""

    def __init__(self, problem: str, *, source: str | Path | None) -> None:
        super().__init__(f"not a plausible measurement: {problem}", source=source)
        self.problem = f"not a plausible measurement: {problem}"


def check_call(
    what: str, *, seconds: float, bytes_moved: float | None = None, flops: float | None = None
) -> str | None:
    """Why one timed call (`what`: "size 2^20", "range memory_bound_scale") cannot be a
    measurement, or None when it can: faster than a launch, or moving bytes or doing
    arithmetic faster than any device."""
    if not seconds > 0:
        return f"{what}: {seconds} s per call"
    if seconds < MIN_SECONDS_PER_CALL:
        return (
            f"{what}: {seconds:.3g} s per call, under the {units.duration(MIN_SECONDS_PER_CALL)} that any "
            "call takes on any device"
        )
    try:
        rate = float(bytes_moved) / seconds if bytes_moved else 0.0
        flop_rate = float(flops) / seconds if flops else 0.0
    except OverflowError:
        return f"{what}: a figure too large to be a measurement"
    if rate > MAX_BYTES_PER_S:
        return (
            f"{what}: {rate / 1e12:.3g} TB/s, above {units.tbps(MAX_BYTES_PER_S)} ({BANDWIDTH_MARGIN:g}x the fastest "
            f"memory in the spec table, {_FASTEST.short}'s {units.tbps(FASTEST_MEMORY_BYTES_PER_S)})"
        )
    if flop_rate > MAX_FLOP_PER_S:
        return (
            f"{what}: {flop_rate / 1e12:.3g} TFLOP/s, above {units.tflops(MAX_FLOP_PER_S)} ({FLOPS_MARGIN:g}x the "
            "fastest tensor-core peak in the spec table)"
        )
    return None


def refuse(problems: Iterable[str | None], *, source: str | Path | None) -> None:
    """Raise ImplausibleMeasurement naming the first problem (and how many more), if any."""
    found = [p for p in problems if p]
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ImplausibleMeasurement(found[0] + more, source=source)
