"""The GPU spec table, as data with its sources, and the tutorial's reference measurements.

Spec figures are the vendors' published numbers; a field nobody here could check against a
datasheet is None rather than a guess. What a device reports about itself (name, L2 size,
SM count, memory) is better than any table: `merge_device` combines the two and says which
figure came from where.

Units: bytes, bytes per second, TFLOPS (10^12 FLOP/s). "MB" of L2 in NVIDIA's documents
is MiB (torch reports 50 MB as 52428800); datasheet memory "GB" is taken as GiB, which is
what nvidia-smi's MiB figures match within a few percent (and what ROCm's table gives).

AMD Instinct GPUs: the name as ROCm and torch report it (`AMD Instinct MI300X`); a
device that reports a generic name (`AMD Radeon Graphics`) or none is found by its LLVM
target (`gfx942`) together with its memory and compute units, only where those single
out one product (`lookup_arch`). Their last-level cache is the Infinity Cache (256 MiB on
MI300X), beyond the L2 (4 MiB per XCD, which is what the device reports as its L2): it is
the cache a sweep's working set lives in, so it is the cache the regimes use.

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
    fp32_tflops: float | None = None  # FP32 on the CUDA cores (no tensor cores); AMD: vector FP32
    infinity_cache_bytes: int | None = None  # AMD's last-level cache beyond the L2
    arch: str | None = None  # AMD: the LLVM target ROCm reports (gcnArchName), e.g. gfx942
    source: str
    notes: str | None = None

    @property
    def short(self) -> str:
        """The name without the vendor prefix, for sentences."""
        return self.name.removeprefix("NVIDIA ").removeprefix("Tesla ").removeprefix("AMD Instinct ")

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
        key="b200",
        name="NVIDIA B200",
        memory_bytes=191_503_138_816,
        dram_bw_bytes_per_s=8.0e12,
        l2_bytes=None,
        sm_count=148,
        fp16_tensor_tflops=2250.0,
        fp32_tflops=80.0,
        source="NVIDIA HGX B200 datasheet, per GPU at 1,000 W",
        notes=(
            "HBM3e at 8 TB/s (64 TB/s for the 8 GPUs of a DGX B200); FP16/BF16 tensor 4.5 PFLOPS with "
            "sparsity, 2,250 TFLOPS dense. Memory and SMs as torch's deviceProperties report them "
            "(178.4 GiB, 148 SMs: a vLLM trace on B200s, tests/data/traces/SOURCES.md); L2 not verified."
        ),
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
    # AMD Instinct. Bandwidth and peaks: AMD's data sheets; memory, compute units, L2 and
    # Infinity Cache, LLVM target: ROCm's "AMD GPU specifications" table
    # (https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html). Dense FP16/BF16 is
    # the matrix-core peak without sparsity.
    _spec(
        key="mi300x",
        name="AMD Instinct MI300X",
        aliases=("AMD Instinct MI300X OAM", "AMD Instinct MI300X VF"),
        memory_bytes=192 * GiB,
        dram_bw_bytes_per_s=5.3e12,
        l2_bytes=32 * MiB,
        infinity_cache_bytes=256 * MiB,
        sm_count=304,
        fp16_tensor_tflops=1307.4,
        fp32_tflops=163.4,
        arch="gfx942",
        source="AMD Instinct MI300X data sheet",
        notes=(
            "CDNA 3, 8 XCDs of 38 CUs; L2 4 MiB per XCD; 256 MiB Infinity Cache. FP16/BF16 "
            "2,614.9 TFLOPS with sparsity, 1,307.4 dense. 'MI300X VF' is the whole GPU as an "
            "SR-IOV virtual function (Azure's ND MI300X v5 shows it so, with 191.5 GiB)."
        ),
    ),
    _spec(
        key="mi325x",
        name="AMD Instinct MI325X",
        aliases=("AMD Instinct MI325X OAM",),
        memory_bytes=256 * GiB,
        dram_bw_bytes_per_s=6.0e12,
        l2_bytes=32 * MiB,
        infinity_cache_bytes=256 * MiB,
        sm_count=304,
        fp16_tensor_tflops=1307.4,
        fp32_tflops=163.4,
        arch="gfx942",
        source="AMD Instinct MI325X data sheet",
        notes="CDNA 3 with HBM3E: the MI300X's compute, 256 GB at 6 TB/s",
    ),
    _spec(
        key="mi355x",
        name="AMD Instinct MI355X",
        aliases=("AMD Instinct MI355X OAM",),
        memory_bytes=288 * GiB,
        dram_bw_bytes_per_s=8.0e12,
        l2_bytes=32 * MiB,
        infinity_cache_bytes=256 * MiB,
        sm_count=256,
        fp16_tensor_tflops=2516.6,
        fp32_tflops=157.3,
        arch="gfx950",
        source="AMD Instinct MI355X data sheet",
        notes=(
            "CDNA 4, 8 XCDs of 32 CUs. The data sheet rounds FP16/BF16 dense to 2.5 PFLOPS: "
            "256 CUs x 4,096 FLOP per clock x 2.4 GHz = 2,516.6 TFLOPS. The MI350X shares its "
            "LLVM target, memory and CUs at a lower clock: told apart only by name."
        ),
    ),
    _spec(
        key="mi210",
        name="AMD Instinct MI210",
        memory_bytes=64 * GiB,
        dram_bw_bytes_per_s=1.6384e12,
        l2_bytes=8 * MiB,
        sm_count=104,
        fp16_tensor_tflops=181.0,
        fp32_tflops=22.6,
        arch="gfx90a",
        source="AMD Instinct MI210 data sheet",
        notes="CDNA 2, one die of the MI250's kind (104 CUs): 64 GB HBM2e at 1.6 TB/s, FP16 matrix 181 TFLOPS",
    ),
    _spec(
        key="mi250x",
        name="AMD Instinct MI250X",
        aliases=("AMD Instinct MI250X/MI250",),
        memory_bytes=64 * GiB,
        dram_bw_bytes_per_s=1.6384e12,
        l2_bytes=8 * MiB,
        sm_count=110,
        fp16_tensor_tflops=191.5,
        fp32_tflops=23.95,
        arch="gfx90a",
        source="AMD Instinct MI250X data sheet, per GCD",
        notes=(
            "An MI250X holds two GCDs and ROCm shows each as a GPU of its own: these are one "
            "GCD's figures, half the module's (128 GB, 3.2768 TB/s, 383 TFLOPS FP16 dense, "
            "220 CUs)."
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


# Every AMD Instinct product of each LLVM target, as (name, memory GiB, compute units),
# from ROCm's "AMD GPU specifications" (per GCD for the two-GCD MI250X and MI250), those
# the table above lacks included: an architecture alone names a product only when its
# memory and compute units single one out among all of these.
_AMD_PRODUCTS: dict[str, tuple[tuple[str, int, int], ...]] = {
    "gfx950": (("AMD Instinct MI355X", 288, 256), ("AMD Instinct MI350X", 288, 256)),
    "gfx942": (("AMD Instinct MI300X", 192, 304), ("AMD Instinct MI325X", 256, 304), ("AMD Instinct MI300A", 128, 228)),
    "gfx90a": (("AMD Instinct MI250X", 64, 110), ("AMD Instinct MI250", 64, 104), ("AMD Instinct MI210", 64, 104)),
}


def lookup_arch(arch: str | None, memory_bytes: int | None = None, compute_units: int | None = None) -> GpuSpec | None:
    """The spec of an AMD GPU known by its LLVM target (`gfx942`, or ROCm's
    `gfx942:sramecc+:xnack-`), its memory and its compute units: a product only where they
    single out one (a gfx942 with 192 GiB and 304 CUs is an MI300X); None otherwise, and
    for an architecture alone (gfx942 is an MI300X, an MI300A or an MI325X)."""
    if not arch or memory_bytes is None:
        return None
    products = _AMD_PRODUCTS.get(arch.strip().lower().split(":", 1)[0], ())
    matches = [
        name
        for name, gib, cus in products
        if abs(memory_bytes - gib * GiB) <= 0.05 * gib * GiB and (compute_units is None or compute_units == cus)
    ]
    return lookup(matches[0]) if len(matches) == 1 else None


def for_instance_type(instance_type: str | None) -> GpuSpec | None:
    """The GPU an EC2 instance type carries (`g7e.8xlarge` -> RTX PRO 6000 Server)."""
    if not instance_type:
        return None
    family = instance_type.strip().lower().split(".", 1)[0]
    key = INSTANCE_FAMILIES.get(family)
    return BY_KEY[key] if key else None


# GPUs per EC2 instance of the families above, from AWS's accelerated-computing instance
# specifications (g7e's sizes as listed in the SageMaker HyperPod CLI's instance table).
# A size not listed is not known, and never guessed from its name.
_SINGLE = ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")
INSTANCE_GPUS: dict[str, int] = {
    **{f"{family}.{size}": 1 for family in ("g4dn", "g5", "g6", "g6e") for size in _SINGLE},
    **{f"{family}.{size}": 4 for family in ("g5", "g6", "g6e") for size in ("12xlarge", "24xlarge")},
    **{f"{family}.48xlarge": 8 for family in ("g5", "g6", "g6e", "g7e", "p5", "p5e", "p5en")},
    "g4dn.12xlarge": 4,
    "g4dn.metal": 8,
    "gr6.4xlarge": 1,
    "gr6.8xlarge": 1,
    "g7e.2xlarge": 1,
    "g7e.4xlarge": 1,
    "g7e.8xlarge": 1,
    "g7e.12xlarge": 2,
    "g7e.24xlarge": 4,
    "p4d.24xlarge": 8,
    "p4de.24xlarge": 8,
    "p5.4xlarge": 1,
}


def gpus_per_instance(instance_type: str | None) -> int | None:
    """How many GPUs one instance of this EC2 type has (`g7e.12xlarge` -> 2), when known."""
    return INSTANCE_GPUS.get((instance_type or "").strip().lower())


def instance_sizes(instance_type: str) -> list[tuple[str, int]]:
    """The known sizes of the type's family and their GPUs, fewest GPUs first."""
    family = instance_type.strip().lower().split(".", 1)[0]
    sizes = [(t, n) for t, n in INSTANCE_GPUS.items() if t.split(".", 1)[0] == family]
    return sorted(sizes, key=lambda tn: (tn[1], tn[0]))


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
    `use_table`), else for its AMD architecture (`arch`), memory and compute units. Figures
    the device reports (memory, L2 size, SM count) win; bandwidth and peak FLOPS come only
    from the table. A disagreement between the two is noted, not hidden. On an AMD
    Instinct GPU the cache is the Infinity Cache, the last level (the device's L2 is noted).
    """
    device_type = str(device.get("type") or "cuda")
    name = device.get("name")
    if spec is None and use_table and device_type == "cuda":
        reported_memory, cus, arch = device.get("memory_bytes"), device.get("sm_count"), device.get("arch")
        spec = lookup(name if isinstance(name, str) else None) or lookup_arch(
            arch if isinstance(arch, str) else None,
            reported_memory if isinstance(reported_memory, int) else None,
            cus if isinstance(cus, int) else None,
        )
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
    l2: int | None
    l2_src: str | None
    if spec is not None and spec.infinity_cache_bytes:
        # The cache a working set lives in beyond the L2, whatever L2 the device reports.
        l2, l2_src = spec.infinity_cache_bytes, f"{spec.source}: the Infinity Cache, the last-level cache"
        reported_l2 = device.get("l2_bytes")
        if isinstance(reported_l2, int) and reported_l2 > 0:
            notes.append(
                f"the device reports an L2 of {reported_l2 / MiB:.0f} MiB; its last-level cache, which holds "
                f"a sweep's working set, is the {l2 / MiB:.0f} MiB Infinity Cache ({spec.source})"
            )
    else:
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
