"""The GPU spec table: lookups, instance types, merging with what a device reports."""

from __future__ import annotations

import pytest

from nsightlab.specs import gpus
from nsightlab.specs.gpus import BY_KEY, MiB, lookup, merge_device


@pytest.mark.parametrize(
    ("reported", "key"),
    [
        ("NVIDIA L4", "l4"),
        ("nvidia l4", "l4"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-server"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000-workstation"),
        # the GPU feature-discovery node label spells it with dashes, maybe "-SHARED"
        ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "rtx-pro-6000-server"),
        ("NVIDIA-L4-SHARED", "l4"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA-H100-80GB-HBM3", "h100-sxm"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA L40", "l40"),
        ("NVIDIA A10G", "a10g"),
        ("Tesla T4", "t4"),
        ("NVIDIA GeForce RTX 5090", "rtx-5090"),
    ],
)
def test_lookup_by_reported_name(reported: str, key: str) -> None:
    spec = lookup(reported)
    assert spec is not None and spec.key == key


@pytest.mark.parametrize(
    "reported",
    [
        "NVIDIA H100 PCIe",  # different bandwidth and clocks from the SXM part
        "NVIDIA A100-SXM4-40GB MIG 1g.5gb",  # a slice, not the whole GPU
        "NVIDIA H200 NVL",  # figures not verified here
        "NVIDIA L4 Ti",
        "",
        None,
    ],
)
def test_lookup_is_exact_about_variants(reported: str | None) -> None:
    assert lookup(reported) is None


@pytest.mark.parametrize(
    ("instance_type", "key"),
    [
        ("g6.xlarge", "l4"),
        ("g6.48xlarge", "l4"),
        ("gr6.4xlarge", "l4"),
        ("g6e.2xlarge", "l40s"),  # g6e is not g6: an L40S
        ("g7e.8xlarge", "rtx-pro-6000-server"),
        ("p5.48xlarge", "h100-sxm"),
        ("p5e.48xlarge", "h200"),
        ("p5en.48xlarge", "h200"),
        ("g5.12xlarge", "a10g"),
        ("g4dn.xlarge", "t4"),
        ("p4d.24xlarge", "a100-sxm4-40gb"),
        ("p4de.24xlarge", "a100-sxm4-80gb"),
        ("G7E.8XLARGE", "rtx-pro-6000-server"),
    ],
)
def test_instance_type_to_gpu(instance_type: str, key: str) -> None:
    spec = gpus.for_instance_type(instance_type)
    assert spec is not None and spec.key == key


@pytest.mark.parametrize("instance_type", ["m5.large", "c7i.4xlarge", "g", "", None])
def test_instance_type_without_a_known_gpu(instance_type: str | None) -> None:
    assert gpus.for_instance_type(instance_type) is None


def test_the_table_carries_the_notes_figures() -> None:
    expected = {  # key: (DRAM bytes/s, L2 MiB, dense fp16 tensor TFLOPS)
        "l4": (300e9, 48, 121.0),
        "rtx-pro-6000-server": (1597e9, 128, None),
        "h100-sxm": (3.35e12, 50, 989.0),
        "h200": (4.8e12, 50, 989.0),
        "a100-sxm4-40gb": (1.555e12, 40, 312.0),
        "a100-sxm4-80gb": (2.039e12, 40, 312.0),
        "l40s": (864e9, 96, 362.05),
        "a10g": (600e9, 6, None),
        "t4": (320e9, 4, 65.0),
    }
    for key, (bw, l2_mib, fp16) in expected.items():
        spec = BY_KEY[key]
        assert spec.dram_bw_bytes_per_s == bw, key
        assert spec.l2_bytes == l2_mib * MiB, key
        assert spec.fp16_tensor_tflops == fp16, key
    names = [s.name.lower() for s in gpus.SPECS]
    assert len(names) == len(set(names))
    assert all(s.source for s in gpus.SPECS)


def test_bandwidth_label_names_the_figure_and_its_source() -> None:
    server = BY_KEY["rtx-pro-6000-server"]
    assert server.bw_label() == "1.597 TB/s, RTX PRO 6000 Blackwell Server Edition datasheet"
    assert BY_KEY["rtx-pro-6000-workstation"].dram_bw_bytes_per_s == 1792e9
    assert server.short == "RTX PRO 6000 Blackwell Server Edition"
    assert BY_KEY["t4"].short == "T4"


def test_tutorial_percentages_depend_on_the_edition() -> None:
    # The tutorial's 1.46 TB/s is "~80%" of ~1.8 TB/s (the Workstation figure) and ~91%
    # of the Server Edition datasheet the g7e actually carries.
    measured = 1.46e12
    server = BY_KEY["rtx-pro-6000-server"].dram_bw_bytes_per_s
    workstation = BY_KEY["rtx-pro-6000-workstation"].dram_bw_bytes_per_s
    assert server is not None and workstation is not None
    assert round(100 * measured / server) == 91
    assert round(100 * measured / workstation) == 81


def test_reference_sweep_matches_what_the_tutorial_printed() -> None:
    ref = gpus.REFERENCE_SWEEPS["tutorial-rtx-pro-6000"]
    assert [r.log2 for r in ref.rows] == [16, 20, 22, 24, 26, 28, 30]
    for row in ref.rows:
        # The tutorial printed times to 0.1 us and TB/s to 0.01: some time that rounds to
        # the printed one must give the printed bandwidth.
        traffic = 2 * (1 << row.log2) * ref.element_size
        fastest = traffic / ((row.us - 0.05) * 1e-6) / 1e12
        slowest = traffic / ((row.us + 0.05) * 1e-6) / 1e12
        assert slowest - 0.005 <= row.quoted_tbps <= fastest + 0.005, row
    doc = ref.as_sweep_json()
    assert doc["kind"] == "sweep" and doc["device"]["name"] == BY_KEY[ref.gpu_key].name
    assert doc["rows"][3]["bytes_per_call"] == 2 * (1 << 24) * 2
    assert doc["rows"][3]["seconds_per_call"] == pytest.approx(12.3e-6)


def test_reference_lesson1_rates() -> None:
    ref = gpus.REFERENCE_LESSON1["tutorial-rtx-pro-6000"]
    assert ref.scale_instances == ref.gemm_instances == 23  # 3 warm-ups + 20 timed
    scale_tbps = 2 * (1 << 28) * 2 / (ref.scale_avg_us * 1e-6) / 1e12
    gemm_tflops = 2 * 8192**3 / (ref.gemm_avg_us * 1e-6) / 1e12
    assert round(scale_tbps, 2) == ref.scale_quoted_tbps
    assert abs(gemm_tflops - ref.gemm_quoted_tflops) / ref.gemm_quoted_tflops < 0.02


def test_merge_prefers_what_the_device_reports() -> None:
    device = {
        "type": "cuda",
        "name": "NVIDIA H200",
        "memory_bytes": 150_110_011_392,
        "l2_bytes": 60 * MiB,
        "sm_count": 132,
    }
    merged = merge_device(device)
    assert merged.spec_key == "h200"
    assert merged.l2_bytes == 60 * MiB and merged.l2_source == "device"
    assert merged.memory_bytes == 150_110_011_392 and merged.memory_source == "device"
    assert merged.dram_bw_bytes_per_s == 4.8e12
    assert merged.dram_bw_label == "4.8 TB/s, NVIDIA H200 (SXM) datasheet"
    assert merged.fp16_tensor_tflops == 989.0
    assert len(merged.notes) == 1
    assert "60 MiB" in merged.notes[0] and "50 MiB" in merged.notes[0]


def test_merge_falls_back_on_the_table() -> None:
    merged = merge_device({"type": "cuda", "name": "NVIDIA L4"})
    assert merged.l2_bytes == 48 * MiB and merged.l2_source == "NVIDIA L4 datasheet"
    assert merged.memory_bytes == 24 * (1 << 30) and merged.sm_count == 58
    assert merged.notes == ()


def test_merge_without_a_spec() -> None:
    cpu = {"type": "cpu", "name": "AMD EPYC", "l2_bytes": 32 * MiB, "l2_source": "sysfs L3 (last-level cache)"}
    merged = merge_device(cpu)
    assert merged.spec_key is None and merged.dram_bw_bytes_per_s is None
    assert merged.l2_bytes == 32 * MiB and merged.l2_source == "sysfs L3 (last-level cache)"
    unknown = merge_device({"type": "cuda", "name": "NVIDIA B300", "l2_bytes": 126 * MiB})
    assert unknown.spec_key is None and unknown.l2_bytes == 126 * MiB
    assert unknown.fp16_tensor_tflops is None
    off = merge_device({"type": "cuda", "name": "NVIDIA L4"}, use_table=False)
    assert off.spec_key is None and off.l2_bytes is None
    forced = merge_device({"type": "cuda", "name": "something"}, BY_KEY["t4"])
    assert forced.spec_key == "t4" and forced.dram_bw_bytes_per_s == 320e9


def test_the_b200_is_its_datasheet_and_what_torch_reports() -> None:
    b200 = lookup("NVIDIA B200")
    assert b200 is not None and b200.key == "b200"
    assert (b200.dram_bw_bytes_per_s, b200.fp16_tensor_tflops, b200.sm_count) == (8.0e12, 2250.0, 148)
    assert b200.memory_bytes == 191_503_138_816  # totalGlobalMem in a real vLLM trace's deviceProperties
    assert b200.l2_bytes is None  # not verified: no floor of the cache is claimed
