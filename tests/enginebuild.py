"""Serving-engine traces whose answer is known exactly, in the shapes the engines write
(read from real ones: SGLang and vLLM on MI300X and B200, tests/data/traces/SOURCES.md):
each step a host range named as the engine names it, its work one graph replay (one
launch, one correlation id, every kernel of the graph) or eager launches, and the
host's own calls (a blocking copy, a synchronisation) around it. Times in us."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracebuild import annotation, kernel, launch

# One decode layer as a graph replays it (names as AMD's libraries write them), and the
# head and tail around the layers.
LAYER = (
    "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_",
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256_MI16x16x1_SN_qkv",
    "void rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*)",
    "void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16>(float)",
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1_SN_o",
    "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb1ELb0ELb1ELi1EEEvPT0_",
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_up",
    "void at::native::silu_and_mul_kernel<c10::BFloat16>(c10::BFloat16*)",
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256_MI16x16x1_SN_down",
)
HEAD = ("void at::native::index_select_kernel<c10::BFloat16>(long)",)
TAIL = (
    "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_final",
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_lm_head",
    "void at::native::reduce_kernel<512, 1, at::native::ArgMaxOps<float>>(float)",
)
PID, HOST_TID = 4242, 1


def step_kernels(layers: int) -> list[str]:
    return [*HEAD, *LAYER * layers, *TAIL]


@dataclass
class Builder:
    """Appends steps to one trace; `events()` is the trace's event list."""

    kernel_us: float = 10.0
    gap_us: float = 1.0
    corr: int = 1000
    out: list[dict[str, Any]] = field(default_factory=list)

    def _corr(self) -> int:
        self.corr += 1
        return self.corr

    def step(
        self,
        name: str,
        host_start: float,
        host_end: float,
        gpu_start: float,
        *,
        layers: int = 4,
        graph: bool = True,
        launch_at: float | None = None,
        outer: str | None = None,
        blocking: tuple[str, float, float] | None = None,
        memcpy_after: bool = True,
        launch_name: str = "hipGraphLaunch",
    ) -> tuple[float, float]:
        """One step: its host range [host_start, host_end] (inside `outer`'s range when
        given), its kernels from `gpu_start` on, `kernel_us` each and `gap_us` apart,
        replayed from one graph launch (at `launch_at`, default just after host_start) or
        launched one by one; a blocking call (name, start, end) inside the range; a copy
        of the sampled tokens to the host after the kernels. Returns the GPU span."""
        if outer is not None:
            self.out.append(annotation(outer, host_start - 5, host_end - host_start + 10, tid=HOST_TID))
        self.out.append(annotation(name, host_start, host_end - host_start, tid=HOST_TID))
        if blocking is not None:
            call, b0, b1 = blocking
            self.out.append(launch(call, b0, b1 - b0, self._corr(), tid=HOST_TID))
        at = host_start + 2 if launch_at is None else launch_at
        t = gpu_start
        corr = self._corr()
        if graph:
            self.out.append(launch(launch_name, at, 3, corr, tid=HOST_TID))
        for i, k in enumerate(step_kernels(layers)):
            if not graph:
                corr = self._corr()
                self.out.append(launch("hipLaunchKernel", min(at + i * 0.5, host_end - 1), 0.4, corr, tid=HOST_TID))
            self.out.append(kernel(k, t, self.kernel_us, corr))
            t += self.kernel_us + self.gap_us
        end = t - self.gap_us
        if memcpy_after:
            c = self._corr()
            self.out.append(launch("hipMemcpyAsync", min(at + 4, host_end - 1), 1, c, tid=HOST_TID))
            self.out.append(kernel("Memcpy DtoH (Device -> Pinned)", end, 2, c, cat="gpu_memcpy"))
            end += 2
        return gpu_start, end

    def events(self) -> list[dict[str, Any]]:
        return list(self.out)


def strip_ranges(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same trace without its host ranges (a profile taken without annotations)."""
    return [e for e in events if e.get("cat") not in ("user_annotation", "gpu_user_annotation")]


def repeat(events: list[dict[str, Any]], times: int, shift_us: float) -> list[dict[str, Any]]:
    """The events `times` times, each copy `shift_us` later, correlation ids kept apart:
    several steps of one, concatenated (a derived trace with a known step count)."""
    out: list[dict[str, Any]] = []
    for k in range(times):
        for e in events:
            copy = dict(e)
            copy["ts"] = float(e["ts"]) + k * shift_us
            if "args" in e:
                args = dict(e["args"])
                if "correlation" in args:
                    args["correlation"] = args["correlation"] + k * 10_000_000
                copy["args"] = args
            out.append(copy)
    return out


def load_events(path: Path) -> list[dict[str, Any]]:
    """A real trace's events (to derive traces with known answers from it)."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        events: list[dict[str, Any]] = json.load(f)["traceEvents"]
    return events


def shift(events: list[dict[str, Any]], us: float, *, cats: tuple[str, ...]) -> list[dict[str, Any]]:
    """The events, those of the given categories `us` later."""
    out = []
    for e in events:
        if e.get("cat") in cats:
            e = {**e, "ts": float(e["ts"]) + us}
        out.append(e)
    return out


def relocate(events: list[dict[str, Any]], start_us: float, corr_offset: int = 0) -> list[dict[str, Any]]:
    """The timed events of a trace moved to begin at `start_us`, correlation ids offset
    (to put several real traces one after another in one derived trace)."""
    timed = [e for e in events if "ts" in e]
    t0 = min(float(e["ts"]) for e in timed)
    out = []
    for e in timed:
        copy = {**e, "ts": float(e["ts"]) - t0 + start_us}
        if "args" in e and "correlation" in e["args"]:
            copy["args"] = {**e["args"], "correlation": e["args"]["correlation"] + corr_offset}
        out.append(copy)
    return out
