"""Text made from results that the terminal and the report both show, worded once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

from nsightlab.analysis.sweep import SweepResult


def tbps_text(tbps: float) -> str:
    return f"{tbps:.2f} TB/s" if tbps >= 0.1 else f"{tbps * 1e3:.1f} GB/s"


def size_text(n: int) -> str:
    return f"{n / 2**30:.0f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def log2s_text(values: Sequence[int]) -> str:
    if not values:
        return ""
    return f"2^{values[0]}" if len(values) == 1 else f"2^{values[0]}..2^{values[-1]}"


def sweep_summary_lines(result: SweepResult) -> list[str]:
    s = result.summary
    out: list[str] = []
    if s.launch_floor_us is not None:
        launch = [r.log2 for r in result.rows if r.regime == "launch"]
        out.append(f"launch floor: {s.launch_floor_us:.1f} us per call ({log2s_text(launch)}: fixed cost, not data)")
    else:
        out.append("launch floor: none seen (no size sat at a floor; add smaller --sizes)")
    if s.cache_peak_tbps is not None and s.cache_peak_log2 is not None:
        line = f"cache peak: {tbps_text(s.cache_peak_tbps)} at 2^{s.cache_peak_log2}"
        if s.spec_dram_tbps:
            line += f" ({s.cache_peak_tbps / s.spec_dram_tbps:.1f}x the DRAM spec: served from cache)"
        out.append(line)
    else:
        out.append("cache peak: none (no size ran from the cache)")
    if s.dram_tbps is not None:
        line = f"DRAM plateau: {'~' if s.dram_is_estimate else ''}{tbps_text(s.dram_tbps)} ({log2s_text(s.dram_from_log2)})"
        if s.dram_pct_of_spec is not None:
            line += f", {s.dram_pct_of_spec:.0f}% of the DRAM spec {s.spec_label}"
        elif s.device_type == "cuda":
            line += f"; no spec for {s.device_name or 'this GPU'} in the table"
        else:
            line += "; a CPU has no spec in the table: the figure is this machine's own"
        out.append(line)
    else:
        out.append("DRAM plateau: not reached (add larger --sizes)")
    cache_name = "L2" if s.device_type == "cuda" else "last-level cache"
    if s.l2_bytes:
        out.append(f"{cache_name} used for the regimes: {size_text(s.l2_bytes)} ({s.l2_source or 'unknown source'})")
    else:
        out.append(f"{cache_name}: size unknown; regimes inferred from the shape of the curve")
    ref = result.reference
    if ref is not None:
        figures = []
        if ref.launch_floor_us is not None:
            figures.append(f"launch floor {ref.launch_floor_us:.1f} us")
        if ref.cache_peak_tbps is not None:
            figures.append(f"L2 peak {tbps_text(ref.cache_peak_tbps)}")
        if ref.dram_tbps is not None:
            pct = f" ({ref.dram_pct_of_spec:.0f}% of {ref.spec_label})" if ref.dram_pct_of_spec is not None else ""
            figures.append(f"DRAM {tbps_text(ref.dram_tbps)}{pct}")
        if ref.matches_device:
            out.append(f"reference (REF TB/S column): the same GPU in the tutorial, {ref.dtype}: " + ", ".join(figures))
        else:
            mine = f"; this device's DRAM spec: {s.spec_label}" if s.spec_label else ""
            out.append(f"reference: the tutorial's {ref.gpu}, {ref.dtype}: " + ", ".join(figures) + mine)
    return out


def when_text(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
