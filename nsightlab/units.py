"""One way to write each quantity, wherever it is shown: the terminal, the report, `runs`.

The rules:
- three significant figures (`sig`), trailing zeros kept so a column reads evenly;
- one unit per quantity per table: a column of times or sizes takes its unit from its
  largest value (`time_unit`, `size_unit`), and every cell of it is written in that unit;
- bandwidth is always TB/s and compute rate always TFLOP/s (a CPU's 0.0536 TB/s, not
  53.6 GB/s in one place and 0.054 TB/s in another);
- buffer and tensor sizes are binary (KiB, MiB, GiB); model weights are decimal GB
  (10^9 bytes), as the README defines them;
- percentages: whole numbers from 10% up, one decimal below;
- counts (kernels, calls, steps) as integers, never rounded to significant figures
  (1375, not 1380; 1, not 1.00); a mean count that is not whole keeps one decimal.

Rounding is for text only: JSON keeps full precision. Pure; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

SIG_DIGITS = 3

# (name, seconds per unit), smallest first
_TIME_UNITS: tuple[tuple[str, float], ...] = (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0))
# (name, bytes per unit), smallest first: binary units for buffers and tensors
_SIZE_UNITS: tuple[tuple[str, int], ...] = (
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
)


def sig(x: float, digits: int = SIG_DIGITS) -> str:
    """`x` to `digits` significant figures, trailing zeros kept: 1.46, 0.0536, 10.0, 174,
    12300. No exponent for ordinary magnitudes; NaN and infinity are written as such."""
    if math.isnan(x) or math.isinf(x):
        return str(x)
    if x == 0:
        return "0" if digits <= 1 else "0." + "0" * (digits - 1)
    magnitude = math.floor(math.log10(abs(x)))
    rounded = round(x, digits - 1 - magnitude)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) > magnitude:  # 9.996 -> 10.0
        magnitude += 1
    decimals = digits - 1 - magnitude
    if decimals > 0:
        return f"{rounded:.{decimals}f}"
    return f"{round(rounded):d}"


@dataclass(frozen=True)
class Unit:
    """A unit chosen for a column: its name and what one of it is (seconds or bytes)."""

    name: str
    size: float

    def value(self, x: float) -> str:
        """`x` (in base units) written in this unit, three significant figures, no unit name."""
        return sig(x / self.size)

    def text(self, x: float) -> str:
        """`x` written in this unit, with the unit's name."""
        return f"{self.value(x)} {self.name}"


def _pick(values: Iterable[float | None], units: tuple[tuple[str, float], ...]) -> Unit:
    finite = [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]
    top = max(finite, default=0.0)
    chosen = units[0]
    for name, size in units:
        if top >= size:
            chosen = (name, size)
    return Unit(chosen[0], float(chosen[1]))


def time_unit(seconds: Iterable[float | None]) -> Unit:
    """The unit for a column of durations (seconds): the largest one that keeps the largest
    value at 1 or more (ns, us, ms, s)."""
    return _pick(seconds, _TIME_UNITS)


def size_unit(sizes: Iterable[float | None]) -> Unit:
    """The unit for a column of buffer sizes (bytes): B, KiB, MiB, GiB, TiB."""
    return _pick(sizes, tuple((n, float(s)) for n, s in _SIZE_UNITS))


def duration(seconds: float) -> str:
    """One duration on its own, in the unit that suits it: 5.90 us, 11.0 ms, 2.10 s."""
    return time_unit([seconds]).text(seconds)


def size(n_bytes: float) -> str:
    """One buffer or tensor size on its own, binary units: 16.0 MiB, 512 MiB, 1.00 GiB."""
    return size_unit([n_bytes]).text(n_bytes)


def gigabytes(n_bytes: float) -> str:
    """Model weights: decimal GB (10^9 bytes), as the README defines them: 16.0 GB."""
    return f"{sig(n_bytes / 1e9)} GB"


def tbps(bytes_per_s: float) -> str:
    """Bandwidth, always in TB/s: 1.46 TB/s, 0.0536 TB/s."""
    return f"{sig(bytes_per_s / 1e12)} TB/s"


def tbps_value(tb_per_s: float) -> str:
    """A bandwidth already in TB/s, written for a TB/s column (no unit name)."""
    return sig(tb_per_s)


def tflops(flops_per_s: float) -> str:
    """Compute rate, always in TFLOP/s: 95.2 TFLOP/s, 0.174 TFLOP/s."""
    return f"{sig(flops_per_s / 1e12)} TFLOP/s"


def percent(pct: float) -> str:
    """A percentage: whole from 10% up (92%), one decimal below (5.2%); just under 100, one
    decimal rounded down (99.5%), so that less than all never reads as 100%."""
    if not math.isfinite(pct):
        return f"{pct}%"
    if 99.5 <= pct < 100:
        return f"{math.floor(pct * 10) / 10:.1f}%"
    return f"{pct:.0f}%" if abs(pct) >= 10 else f"{pct:.1f}%"


def count(n: float) -> str:
    """A count: 1375, 1, 0; a mean count that is not whole, one decimal (1375.5)."""
    if not math.isfinite(n):
        return str(n)
    whole = round(n)
    return str(whole) if abs(n - whole) < 0.05 else f"{n:.1f}"


def ratio(x: float) -> str:
    """A ratio such as measured / floor: 2.10x."""
    return f"{sig(x)}x"


def usd(x: float) -> str:
    """A price in US dollars, three significant figures: $3.14, $0.447, $14.3."""
    return f"${sig(x)}"
