"""The GPU spec table, as data with its sources, and the tutorial's reference measurements.

Spec figures are the vendors' published numbers; a field nobody here could check against a
datasheet is None rather than a guess. What a device reports about itself (name, L2 size,
SM count, memory) is better than any table: `merge_device` combines the two and says which
figure came from where.

Units: bytes, bytes per second, TFLOPS (10^12 FLOP/s). "MB" of L2 in NVIDIA's documents
is MiB (torch reports 50 MB as 52428800); datasheet memory "GB" is taken as GiB, which is
what nvidia-smi's MiB figures match within a few percent.

No I/O here: pure data and lookups.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict

from nsightlab.models import Model

MiB = 1 << 20
GiB = 1 << 30


class GpuSpec(Model):
    """One GPU product as published. None means unknown or unverified."""

    model_config = ConfigDict(frozen=True)

    key: str
    name: str  # the product name as torch and nvidia-smi report it
    aliases: tuple[str, ...] = ()
    memory_bytes: int | None = None
    dram_bw_bytes_per_s: float | None = None
    l2_bytes: int | None = None
    sm_count: int | None = None
    fp16_tensor_tflops: float | None = None  # dense FP16/BF16 tensor core, FP32 accumulate
    fp32_tflops: float | None = None  # FP32 on the CUDA cores (no tensor cores)
    source: str
    notes: str | None = None

    @property
    def short(self) -> str:
        """The name without the vendor prefix, for sentences."""
        return self.name.removeprefix("NVIDIA ").removeprefix("Tesla ")

    def bw_label(self) -> str | None:
        """E.g. '1.597 TB/s, RTX PRO 6000 Blackwell Server Edition datasheet'."""
        if self.dram_bw_bytes_per_s is None:
            return None
        return f"{self.dram_bw_bytes_per_s / 1e12:.4g} TB/s, {self.source}"


def _spec(**fields: Any) -> GpuSpec:
    return GpuSpec(**fields)


SPECS: tuple[GpuSpec, ...] = (
    _spec(
        key="l4",
        name="NVIDIA L4",
        memory_bytes=24 * GiB,
        dram_bw_bytes_per_s=300e9,
        l2_bytes=48 * MiB,
        sm_count=58,
        fp16_tensor_tflops=121.0,
        fp32_tflops=30.3,
        source="NVIDIA L4 datasheet",
        notes="300 GB/s = 192-bit GDDR6 at 12.5 Gbps; FP16 tensor 242 TFLOPS with sparsity, 121 dense",
    ),
    _spec(
        key="rtx-pro-6000-server",
        name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
        memory_bytes=96 * GiB,
        dram_bw_bytes_per_s=1597e9,
        l2_bytes=128 * MiB,
        sm_count=188,
        fp16_tensor_tflops=None,
        fp32_tflops=None,
        source="RTX PRO 6000 Blackwell Server Edition datasheet",
        notes=(
            "nvidia-smi shows 97887 MiB. The Workstation Edition is specified at 1,792 GB/s "
            "and the tutorial quotes ~1.8 TB/s; its measured 1.46 TB/s is ~91% of this "
            "edition's 1,597 GB/s. Dense FP16 tensor peak not verified (the tutorial's "
            "8192^3 GEMM ran at ~400 TFLOPS)."
        ),
    ),
    _spec(
        key="rtx-pro-6000-workstation",
        name="NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
        memory_bytes=96 * GiB,
        dram_bw_bytes_per_s=1792e9,
        l2_bytes=128 * MiB,
        sm_count=188,
        fp16_tensor_tflops=None,
        fp32_tflops=125.0,
        source="RTX PRO 6000 Blackwell Workstation Edition specifications",
        notes="512-bit GDDR7 at 28 Gbps; FP32 is NVIDIA's 'up to' figure at boost clock",
    ),
    _spec(
        key="h100-sxm",
        name="NVIDIA H100 80GB HBM3",
        memory_bytes=80 * GiB,
        dram_bw_bytes_per_s=3.35e12,
        l2_bytes=50 * MiB,
        sm_count=132,
        fp16_tensor_tflops=989.0,
        fp32_tflops=67.0,
        source="NVIDIA H100 SXM datasheet",
        notes="FP16 tensor 1,979 TFLOPS with sparsity, ~989 dense",
    ),
    _spec(
        key="h200",
        name="NVIDIA H200",
        memory_bytes=141 * GiB,
        dram_bw_bytes_per_s=4.8e12,
        l2_bytes=50 * MiB,
        sm_count=132,
        fp16_tensor_tflops=989.0,
        fp32_tflops=67.0,
        source="NVIDIA H200 (SXM) datasheet",
        notes=(
            "torch has reported a 60 MiB L2 (the device's figure wins); measured L2 "
            "bandwidth ~10 TB/s up to ~40 MB, DRAM plateau ~3.9 TB/s from ~80 MB (gpu-benches)"
        ),
    ),
    _spec(
        key="a100-sxm4-40gb",
        name="NVIDIA A100-SXM4-40GB",
        memory_bytes=40 * GiB,
        dram_bw_bytes_per_s=1.555e12,
        l2_bytes=40 * MiB,
        sm_count=108,
        fp16_tensor_tflops=312.0,
        fp32_tflops=19.5,
        source="NVIDIA A100 datasheet (SXM4 40GB)",
    ),
    _spec(
        key="a100-sxm4-80gb",
        name="NVIDIA A100-SXM4-80GB",
        memory_bytes=80 * GiB,
        dram_bw_bytes_per_s=2.039e12,
        l2_bytes=40 * MiB,
        sm_count=108,
        fp16_tensor_tflops=312.0,
        fp32_tflops=19.5,
        source="NVIDIA A100 datasheet (SXM4 80GB)",
    ),
    _spec(
        key="l40s",
        name="NVIDIA L40S",
        memory_bytes=48 * GiB,
        dram_bw_bytes_per_s=864e9,
        l2_bytes=96 * MiB,
        sm_count=142,
        fp16_tensor_tflops=362.05,
        fp32_tflops=91.6,
        source="NVIDIA L40S datasheet",
        notes="FP16 tensor 733 TFLOPS with sparsity, 362.05 dense",
    ),
    _spec(
        key="l40",
        name="NVIDIA L40",
        memory_bytes=48 * GiB,
        dram_bw_bytes_per_s=864e9,
        l2_bytes=96 * MiB,
        sm_count=142,
        fp16_tensor_tflops=181.05,
        fp32_tflops=90.5,
        source="NVIDIA L40 datasheet",
        notes="FP16 tensor 362.1 TFLOPS with sparsity, 181.05 dense",
    ),
    _spec(
        key="a10g",
        name="NVIDIA A10G",
        memory_bytes=24 * GiB,
        dram_bw_bytes_per_s=600e9,
        l2_bytes=6 * MiB,
        sm_count=80,
        fp16_tensor_tflops=None,
        fp32_tflops=None,
        source="AWS EC2 G5 documentation",
        notes="AWS-specific part; compute peaks not published in a datasheet we could check",
    ),
    _spec(
        key="t4",
        name="Tesla T4",
        aliases=("NVIDIA T4",),
        memory_bytes=16 * GiB,
        dram_bw_bytes_per_s=320e9,
        l2_bytes=4 * MiB,
        sm_count=40,
        fp16_tensor_tflops=65.0,
        fp32_tflops=8.1,
        source="NVIDIA T4 datasheet",
    ),
    _spec(
        key="rtx-5090",
        name="NVIDIA GeForce RTX 5090",
        memory_bytes=32 * GiB,
        dram_bw_bytes_per_s=1792e9,
        l2_bytes=96 * MiB,
        sm_count=170,
        fp16_tensor_tflops=None,
        fp32_tflops=104.8,
        source="NVIDIA GeForce RTX 5090 specifications",
        notes=(
            "512-bit GDDR7 at 28 Gbps. nvbench issue 270: a 2^24-element fill reported at "
            "114% of this peak was served from L2. Dense FP16 tensor peak with FP32 "
            "accumulate not verified."
        ),
    ),
)

BY_KEY: dict[str, GpuSpec] = {s.key: s for s in SPECS}

# EC2 instance family -> spec key. The family is the part before the first dot.
INSTANCE_FAMILIES: dict[str, str] = {
    "g6": "l4",
    "gr6": "l4",
    "g6e": "l40s",
    "g7e": "rtx-pro-6000-server",
    "p5": "h100-sxm",
    "p5e": "h200",
    "p5en": "h200",
    "g5": "a10g",
    "g4dn": "t4",
    "p4d": "a100-sxm4-40gb",
    "p4de": "a100-sxm4-80gb",
}


def _normalise(name: str) -> str:
    # torch says "NVIDIA L4"; the GPU feature-discovery node label says "NVIDIA-L4" and
    # may add "-SHARED" when the GPU is time-sliced.
    text = re.sub(r"[\s_\-]+", " ", name.strip().lower())
    return text.removesuffix(" shared").strip()


_BY_NAME: dict[str, GpuSpec] = {}
for _s in SPECS:
    for _n in (_s.name, *_s.aliases):
        _BY_NAME[_normalise(_n)] = _s


def same_product(a: str, b: str) -> bool:
    """Whether two product names (torch's, a node label's) name the same GPU."""
    return _normalise(a) == _normalise(b)


def lookup(name: str | None) -> GpuSpec | None:
    """The spec for a product name as torch, nvidia-smi or a node label reports it.

    Matching ignores case and treats spaces, dashes and underscores alike; it is otherwise
    exact, so a variant with different figures (an H100 PCIe, a MIG slice) is not mistaken
    for the one in the table.
    """
    if not name:
        return None
    return _BY_NAME.get(_normalise(name))


def for_instance_type(instance_type: str | None) -> GpuSpec | None:
    """The GPU an EC2 instance type carries (`g7e.8xlarge` -> RTX PRO 6000 Server)."""
    if not instance_type:
        return None
    family = instance_type.strip().lower().split(".", 1)[0]
    key = INSTANCE_FAMILIES.get(family)
    return BY_KEY[key] if key else None


class DeviceSpec(Model):
    """What the analysis uses: the device's own figures where it reports them, else the table's.

    `*_source` says where each figure came from: "device", the spec's source text, or None.
    """

    model_config = ConfigDict(frozen=True)

    name: str | None
    device_type: str
    spec_key: str | None = None
    spec_name: str | None = None
    memory_bytes: int | None = None
    memory_source: str | None = None
    l2_bytes: int | None = None
    l2_source: str | None = None
    sm_count: int | None = None
    dram_bw_bytes_per_s: float | None = None
    dram_bw_label: str | None = None
    fp16_tensor_tflops: float | None = None
    fp32_tflops: float | None = None
    flops_source: str | None = None
    notes: tuple[str, ...] = ()


def merge_device(device: Mapping[str, Any], spec: GpuSpec | None = None, *, use_table: bool = True) -> DeviceSpec:
    """Combine a lab script's `device` object with the spec table.

    `spec` defaults to the table's entry for the reported name (GPUs only, and only with
    `use_table`). Figures the
    device reports (memory, L2 size, SM count) win; bandwidth and peak FLOPS come only from
    the table. A disagreement between the two is noted, not hidden.
    """
    device_type = str(device.get("type") or "cuda")
    name = device.get("name")
    if spec is None and use_table and device_type == "cuda":
        spec = lookup(name if isinstance(name, str) else None)
    notes: list[str] = []

    def pick(field: str, reported: Any, table: int | None, what: str) -> tuple[int | None, str | None]:
        if isinstance(reported, int) and reported > 0:
            if table and spec is not None and abs(reported - table) / table > 0.1:
                notes.append(
                    f"the device reports {what} {reported / MiB:.0f} MiB; the table "
                    f"({spec.source}) says {table / MiB:.0f} MiB; using the device's figure"
                )
            src = device.get(f"{field}_source")
            return reported, src if isinstance(src, str) and src else "device"
        if table is not None and spec is not None:
            return table, spec.source
        return None, None

    memory, memory_src = pick("memory", device.get("memory_bytes"), spec.memory_bytes if spec else None, "memory")
    l2, l2_src = pick("l2", device.get("l2_bytes"), spec.l2_bytes if spec else None, "an L2 of")
    sm = device.get("sm_count")
    if not isinstance(sm, int) and spec is not None:
        sm = spec.sm_count
    return DeviceSpec(
        name=name if isinstance(name, str) else (spec.name if spec else None),
        device_type=device_type,
        spec_key=spec.key if spec else None,
        spec_name=spec.name if spec else None,
        memory_bytes=memory,
        memory_source=memory_src,
        l2_bytes=l2,
        l2_source=l2_src,
        sm_count=sm if isinstance(sm, int) else None,
        dram_bw_bytes_per_s=spec.dram_bw_bytes_per_s if spec else None,
        dram_bw_label=spec.bw_label() if spec else None,
        fp16_tensor_tflops=spec.fp16_tensor_tflops if spec else None,
        fp32_tflops=spec.fp32_tflops if spec else None,
        flops_source=spec.source if spec else None,
        notes=tuple(notes),
    )


# --- the tutorial's own measurements, as reference curves ---


class ReferenceRow(Model):
    model_config = ConfigDict(frozen=True)

    log2: int
    us: float
    quoted_tbps: float  # what the tutorial printed


class ReferenceSweep(Model):
    """A published sweep: fp16 `x.mul_`, time per call from CUDA events."""

    model_config = ConfigDict(frozen=True)

    key: str
    gpu_key: str
    dtype: str
    element_size: int
    iters: int
    warmup: int
    source: str
    rows: tuple[ReferenceRow, ...]

    def as_sweep_json(self) -> dict[str, Any]:
        """The curve in the shape `lab_scripts/sweep.py --json` writes."""
        spec = BY_KEY[self.gpu_key]
        return {
            "kind": "sweep",
            "schema": 1,
            "op": "scale",
            "dtype": self.dtype,
            "element_size": self.element_size,
            "iters": self.iters,
            "warmup": self.warmup,
            # the tutorial recorded only the product name; the rest comes from the table
            "device": {"type": "cuda", "name": spec.name},
            "rows": [
                {
                    "log2": r.log2,
                    "elements": 1 << r.log2,
                    "bytes_per_call": 2 * (1 << r.log2) * self.element_size,
                    "seconds_per_call": r.us * 1e-6,
                }
                for r in self.rows
            ],
            "skipped": [],
        }


class ReferenceLesson1(Model):
    """The tutorial's lesson1 kernel table. The averages include the 3 warm-up calls."""

    model_config = ConfigDict(frozen=True)

    key: str
    gpu_key: str
    source: str
    scale_kernel: str
    scale_avg_us: float
    scale_instances: int
    scale_quoted_tbps: float
    gemm_kernel: str
    gemm_avg_us: float
    gemm_instances: int
    gemm_quoted_tflops: float


REFERENCE_SWEEPS: dict[str, ReferenceSweep] = {
    "tutorial-rtx-pro-6000": ReferenceSweep(
        key="tutorial-rtx-pro-6000",
        gpu_key="rtx-pro-6000-server",
        dtype="float16",
        element_size=2,
        iters=50,
        warmup=5,
        source="from-zero-to-nsight, section 12 (g7e, RTX PRO 6000 Blackwell Server Edition)",
        rows=(
            ReferenceRow(log2=16, us=5.9, quoted_tbps=0.04),
            ReferenceRow(log2=20, us=5.8, quoted_tbps=0.73),
            ReferenceRow(log2=22, us=5.7, quoted_tbps=2.96),
            ReferenceRow(log2=24, us=12.3, quoted_tbps=5.45),
            ReferenceRow(log2=26, us=88.3, quoted_tbps=3.04),
            ReferenceRow(log2=28, us=733.9, quoted_tbps=1.46),
            ReferenceRow(log2=30, us=2939.7, quoted_tbps=1.46),
        ),
    ),
}

REFERENCE_LESSON1: dict[str, ReferenceLesson1] = {
    "tutorial-rtx-pro-6000": ReferenceLesson1(
        key="tutorial-rtx-pro-6000",
        gpu_key="rtx-pro-6000-server",
        source="from-zero-to-nsight, section 11 (cuda_gpu_kern_sum on g7e)",
        scale_kernel="at::native::vectorized_elementwise_kernel<...Half...>",
        scale_avg_us=725.494,
        scale_instances=23,
        scale_quoted_tbps=1.48,
        gemm_kernel="cutlass_80_tensorop_f16_s16816gemm_relu_f16_256x128_32x3_nn_align8",
        gemm_avg_us=2719.491,
        gemm_instances=23,
        gemm_quoted_tflops=400.0,
    ),
}
