"""The spec table's peaks for a decode step's floor and ridge: a GPU's DRAM bandwidth and
its dense matrix peak for a dtype, by the name a trace or a record gives it. Pure.

Apart from the result models (`decode_models`), so that a trace's analysis, which names
the GPU but looks up no spec unless a floor is asked for, does not load the spec table.
"""

from __future__ import annotations

from nsightlab.analysis.decode_models import Bandwidth, device_name_of
from nsightlab.specs.gpus import GpuSpec, lookup


def peak_tflops(spec: GpuSpec | None, dtype: str | None) -> tuple[float | None, str | None]:
    """The spec's dense matrix peak for a dtype: tensor cores for 16-bit types, the CUDA
    cores for float32; None where the table has no figure."""
    if spec is None:
        return None, None
    if dtype in ("bfloat16", "float16") and spec.fp16_tensor_tflops:
        return spec.fp16_tensor_tflops, f"{spec.short} dense FP16/BF16 tensor peak ({spec.source})"
    if dtype == "float32" and spec.fp32_tflops:
        return spec.fp32_tflops, f"{spec.short} FP32 peak ({spec.source})"
    return None, None


def spec_bandwidth(device: str | None, dtype: str | None) -> Bandwidth | None:
    """The spec's DRAM bandwidth for a GPU name, with its compute peak; None if unknown."""
    spec = lookup(device_name_of(device))
    if spec is None or spec.dram_bw_bytes_per_s is None:
        return None
    peak, peak_label = peak_tflops(spec, dtype)
    return Bandwidth(
        tbps=spec.dram_bw_bytes_per_s / 1e12,
        basis="spec",
        label=f"spec: {spec.source}",
        peak_tflops=peak,
        peak_label=peak_label,
    )
