"""AMD Instinct GPUs in the spec table: the names ROCm reports, the LLVM targets, the
Infinity Cache; and a trace whose device has no name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_cli
from tracebuild import annotation, kernel, launch, write_kineto

from nsightlab.specs.gpus import BY_KEY, GiB, MiB, lookup, lookup_arch, merge_device

# What real traces on AMD GPUs carry in `deviceProperties` (tests/data/kernel_names/SOURCES.md:
# TraceLens's traces): the name, totalGlobalMem and numSms (compute units).
MI300X_BARE = ("AMD Instinct MI300X", 206141652992, 304)
MI300X_VF = ("AMD Instinct MI300X VF", 205571227648, 304)
MI210 = ("AMD Instinct MI210", 68702699520, 104)


@pytest.mark.parametrize(
    ("reported", "key"),
    [
        ("AMD Instinct MI300X", "mi300x"),
        ("AMD Instinct MI300X VF", "mi300x"),  # Azure's SR-IOV function of a whole GPU
        ("AMD_Instinct_MI300X_OAM", "mi300x"),  # as a node label spells the product
        ("AMD Instinct MI325X", "mi325x"),
        ("AMD Instinct MI355X", "mi355x"),
        ("AMD Instinct MI250X", "mi250x"),
        ("AMD Instinct MI250X/MI250", "mi250x"),
        ("AMD Instinct MI210", "mi210"),
    ],
)
def test_amd_names_as_rocm_reports_them(reported: str, key: str) -> None:
    spec = lookup(reported)
    assert spec is not None and spec.key == key


@pytest.mark.parametrize(
    "reported",
    ["AMD Instinct MI300A", "AMD Instinct MI350X", "AMD Instinct MI100", "AMD Radeon Graphics", "gfx942", ""],
)
def test_other_amd_parts_and_generic_names_are_not_guessed(reported: str) -> None:
    assert lookup(reported) is None


def test_the_amd_figures_are_the_data_sheets() -> None:
    expected = {  # key: (memory GiB, DRAM TB/s, L2 MiB, Infinity Cache MiB, CUs, dense FP16 TFLOPS, arch)
        "mi300x": (192, 5.3, 32, 256, 304, 1307.4, "gfx942"),
        "mi325x": (256, 6.0, 32, 256, 304, 1307.4, "gfx942"),
        "mi355x": (288, 8.0, 32, 256, 256, 2516.6, "gfx950"),
        "mi250x": (64, 1.6384, 8, None, 110, 191.5, "gfx90a"),  # one GCD, as ROCm shows it
        "mi210": (64, 1.6384, 8, None, 104, 181.0, "gfx90a"),
    }
    for key, (gib, tbps, l2, llc, cus, fp16, arch) in expected.items():
        s = BY_KEY[key]
        assert (s.memory_bytes, s.dram_bw_bytes_per_s, s.l2_bytes, s.sm_count) == (
            gib * GiB,
            tbps * 1e12,
            l2 * MiB,
            cus,
        )
        assert s.infinity_cache_bytes == (llc * MiB if llc else None)
        assert (s.fp16_tensor_tflops, s.arch) == (fp16, arch)
        assert "data sheet" in s.source and s.short == s.name.removeprefix("AMD Instinct ")


@pytest.mark.parametrize(
    ("arch", "memory", "cus", "key"),
    [
        ("gfx942", MI300X_BARE[1], 304, "mi300x"),
        ("gfx942:sramecc+:xnack-", MI300X_VF[1], 304, "mi300x"),  # as torch's gcnArchName writes it
        ("gfx942", MI300X_BARE[1], None, "mi300x"),
        ("gfx942", 256 * GiB, 304, "mi325x"),
        ("gfx90a", 64 * GiB, 110, "mi250x"),
        ("gfx942", 128 * GiB, 228, None),  # an MI300A: not in the table
        ("gfx950", 288 * GiB, 256, None),  # an MI355X or an MI350X: the target does not say
        ("gfx90a", MI210[1], 104, None),  # an MI210 or one GCD of an MI250
        ("gfx942", None, None, None),  # an architecture alone names no product
        ("gfx1100", 24 * GiB, 96, None),
        (None, MI300X_BARE[1], 304, None),
    ],
)
def test_an_llvm_target_names_a_product_only_where_it_is_one(
    arch: str | None, memory: int | None, cus: int | None, key: str | None
) -> None:
    spec = lookup_arch(arch, memory, cus)
    assert (spec.key if spec else None) == key


def test_a_rocm_device_with_a_generic_name_gets_its_spec_and_its_infinity_cache() -> None:
    # torch on ROCm may call an MI300X "AMD Radeon Graphics"; its gcnArchName, memory and
    # compute units still single it out. Its L2 as the device reports it is one XCD's.
    device = {
        "type": "cuda",
        "name": "AMD Radeon Graphics",
        "arch": "gfx942:sramecc+:xnack-",
        "memory_bytes": MI300X_BARE[1],
        "sm_count": 304,
        "l2_bytes": 4 * MiB,
    }
    merged = merge_device(device)
    assert merged.spec_key == "mi300x" and merged.name == "AMD Radeon Graphics"
    assert merged.dram_bw_bytes_per_s == 5.3e12 and merged.memory_bytes == MI300X_BARE[1]
    assert merged.l2_bytes == 256 * MiB and "Infinity Cache" in (merged.l2_source or "")
    assert any("4 MiB" in n and "256 MiB Infinity Cache" in n for n in merged.notes)


def _amd_trace(path: Path, device: str) -> Path:
    events = []
    corr = 1
    for step in range(4):
        t0 = 1000 + step * 1000
        events.append(annotation("decode_step", t0, 600))
        for k in range(5):
            events.append(launch("hipLaunchKernel", t0 + 10 + k * 20, 5, corr))
            events.append(kernel(f"Cijk_Alik_Bljk_BBS_BH_MT64x32x256_MI16x16x1_{k}", t0 + 50 + k * 100, 80, corr))
            corr += 1
    return write_kineto(path, events, device=device)


def test_a_trace_on_an_mi300x_gets_the_spec_floor(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, tmp_path: Path
) -> None:
    trace = _amd_trace(tmp_path / "mi300x.json", "AMD Instinct MI300X")
    data = json.loads(run_cli(capsys, "analyze", str(trace), "--weights-gb", "16", "--json").out)
    assert data["device"] == "AMD Instinct MI300X"
    floor = data["steps"][0]["floor"]
    assert (floor["basis"], floor["bandwidth_tbps"]) == ("spec", 5.3)
    assert floor["floor_ms"] == pytest.approx(16e9 / 5.3e12 * 1e3, rel=1e-5)


def test_a_trace_whose_device_has_no_name_says_unknown_device_and_analyses(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, tmp_path: Path
) -> None:
    # vLLM's traces on MI300X in TraceLens's test data carry `"name": ""`.
    trace = _amd_trace(tmp_path / "noname.json", "")
    data = json.loads(run_cli(capsys, "analyze", str(trace), "--json").out)
    assert data["device"] is None and data["steps"][0]["count"] == 4
    r = run_cli(capsys, "analyze", str(trace))
    assert r.code == 0 and "(Kineto): unknown device" in r.out.splitlines()[0], r


def _unnamed_hip_trace(path: Path, devices: list[dict[str, object]], *, hip: bool = True) -> Path:
    """`_amd_trace`'s steps, its deviceProperties replaced by `devices` (each `"name": ""`,
    as vLLM's MI300X traces carry), with the HIP runtime's version keys or none."""
    plain = _amd_trace(path.with_suffix(".plain.json"), "")
    doc = json.loads(plain.read_text(encoding="utf-8"))
    doc["deviceProperties"] = [{"id": i, "name": "", **d} for i, d in enumerate(devices)]
    if hip:
        doc.update({"roctracer_version": 4.1, "hip_runtime_version": 70051831, "hip_driver_version": 70051831})
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return path


MI300X_FIGURES = {"totalGlobalMem": 206141652992, "numSms": 304, "computeMajor": 9, "computeMinor": 4}


def test_a_hip_trace_whose_gpu_has_no_name_is_named_from_its_properties(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, tmp_path: Path
) -> None:
    trace = _unnamed_hip_trace(tmp_path / "vllm.json", [MI300X_FIGURES] * 8)
    data = json.loads(run_cli(capsys, "analyze", str(trace), "--json", "--weights-gb", "16").out)
    assert data["device"] == "AMD Instinct MI300X"
    assert (
        "the trace names no GPU: from its properties (HIP, compute capability 9.4, 304 compute units, 192 GiB) "
        "it is an AMD Instinct MI300X" in data["notes"]
    )
    floor = data["steps"][0]["floor"]
    assert (floor["basis"], floor["bandwidth_tbps"]) == ("spec", 5.3)  # the MI300X's spec, as if named
    r = run_cli(capsys, "analyze", str(trace))
    assert r.code == 0 and "(Kineto): AMD Instinct MI300X" in r.out.splitlines()[0], r
    # the same target with 256 GiB is an MI325X
    bigger = _unnamed_hip_trace(tmp_path / "mi325.json", [{**MI300X_FIGURES, "totalGlobalMem": 256 * GiB}])
    assert json.loads(run_cli(capsys, "analyze", str(bigger), "--json").out)["device"] == "AMD Instinct MI325X"


@pytest.mark.parametrize(
    ("devices", "hip"),
    [
        ([MI300X_FIGURES], False),  # no HIP runtime recorded: not said to be AMD's
        ([{**MI300X_FIGURES, "computeMajor": 9, "computeMinor": 0}], True),  # 9.0: gfx908 or gfx90a
        ([{**MI300X_FIGURES, "numSms": 228}], True),  # 192 GiB with 228 CUs is no product
        ([MI300X_FIGURES, {**MI300X_FIGURES, "totalGlobalMem": 128 * GiB}], True),  # two GPUs, one unknown
        ([{k: v for k, v in MI300X_FIGURES.items() if k != "totalGlobalMem"}], True),  # no memory
    ],
)
def test_an_unnamed_gpu_is_named_only_where_its_properties_single_out_one(
    devices: list[dict[str, object]], hip: bool, capsys: pytest.CaptureFixture[str], nsl_home: Path, tmp_path: Path
) -> None:
    trace = _unnamed_hip_trace(tmp_path / "x.json", devices, hip=hip)
    data = json.loads(run_cli(capsys, "analyze", str(trace), "--json").out)
    assert data["device"] is None and not any("names no GPU" in n for n in data["notes"])
