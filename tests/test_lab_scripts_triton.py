"""sweep.py's Triton kernel against torch, in Triton's interpreter on this machine's CPU;
the kernel compiled ahead of time for the GPUs it will run on; and the sizing rules of the
CPU runs (sweep and lesson1) against this machine's last-level cache."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from test_lab_scripts import (
    LESSON1,
    SWEEP,
    _sysfs_last_level_cache,
    triton_rows_agree_with_torch,
)

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

pytestmark = pytest.mark.torch

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
MiB = 1 << 20


def _import_script(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"labscript_triton_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sweep() -> ModuleType:
    module = _import_script(SWEEP)
    module.load_triton()
    return module


@pytest.fixture(scope="module")
def lesson1() -> ModuleType:
    return _import_script(LESSON1)


@pytest.fixture
def interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    # Triton reads it when a kernel is made (triton.jit), as the script does after import
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _start(n: int, dtype: Any) -> Any:
    gen = torch.Generator().manual_seed(n)
    return (torch.rand(n, generator=gen, dtype=torch.float32) * 2 - 1).to(dtype)


# --- the kernel in the interpreter ---


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", ["scale", "scale-add"])
def test_triton_kernel_matches_torch(sweep: ModuleType, op: str, dtype: str) -> None:
    assert sweep.triton_interprets(triton) is True
    kernel = sweep.TritonOp(triton, op, interpreted=True)
    # 32: less than one block; 5000: four blocks, the last one masked
    for n in (32, 5000):
        x = _start(n, DTYPES[dtype])
        before = x.clone()
        ref = x.clone()
        sweep.torch_call(op, ref)()
        kernel.bind(x)()
        # The kernel ran in place. A 16-bit float times 1.0001 rounds back to itself (the
        # step is under half an ulp), so there only scale-add shows that values changed.
        moved = float((x != before).float().mean())
        if dtype == "float32":
            assert moved == 1.0
        elif op == "scale-add":
            assert moved > 0.4
        else:
            assert torch.equal(ref, before) and moved == 0.0
        max_abs, max_ulps = sweep.compare(torch, op, ref, x)
        assert sweep.check_passes(op, max_abs, max_ulps)
        if op == "scale":
            assert max_abs == 0.0 and torch.equal(x, ref)  # the same single rounding as torch
        else:
            assert max_ulps <= 2.0
            if dtype != "float32" and n == 5000:
                # one rounding (fused) against torch's two: the check sees the difference
                assert 0.0 < max_ulps <= 2.0
    assert kernel.config() == ({"BLOCK_SIZE": 1024, "num_warps": 4}, False)


@pytest.mark.usefixtures("interpreter")
def test_sweep_run_with_triton_in_the_interpreter(sweep: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    # --warmup 0: one untimed call still comes first
    args = sweep.parse_args(["--impl", "triton", "--device", "cpu", "--sizes", "5,10", "--iters", "2", "--warmup", "0"])
    doc = sweep.run(args)
    triton_rows_agree_with_torch(doc, "scale", "float32")  # float32: the CPU default
    assert [r["log2"] for r in doc["rows"]] == [5, 10]  # 2^5: a single, masked block
    assert (doc["warmup"], doc["iters"], doc["batches"]) == (0, 2, [1, 1])
    assert doc["triton"] == triton.__version__
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 2 and all(line.endswith("[interpreted]") for line in lines)
    assert all("max err 0  BLOCK_SIZE 1024 warps 4" in line for line in lines)
    assert "Triton ran in its interpreter (TRITON_INTERPRET=1)" in err


# --- the check ---


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_compare_counts_ulps_at_the_values_magnitude(sweep: ModuleType, dtype: str) -> None:
    dt = DTYPES[dtype]
    eps = torch.finfo(dt).eps
    ref = torch.tensor([0.75], dtype=dt)
    for k in (1, 2, 3):
        # 0.75 + 0.001 lies in [0.5, 1), where one ulp is eps / 2: k ulps above 0.75
        out = torch.tensor([0.75 + k * eps / 2], dtype=dt)
        max_abs, max_ulps = sweep.compare(torch, "scale-add", ref, out)
        assert max_abs == pytest.approx(k * eps / 2)
        assert max_ulps == pytest.approx(k)
        assert sweep.check_passes("scale-add", max_abs, max_ulps) is (k <= 2)
        # scale must match exactly: one ulp is already a failure
        assert sweep.check_passes("scale", *sweep.compare(torch, "scale", ref, out)) is False
    assert sweep.check_passes("scale", *sweep.compare(torch, "scale", ref, ref.clone())) is True
    # a result near 0 (x * a close to -b) is judged at the magnitude of b (0.001, in
    # [2^-10, 2^-9)), not at its own, where any rounding would be many ulps
    zero = torch.zeros(1, dtype=dt)
    one_ulp_of_b = torch.tensor([eps * 2.0**-10], dtype=dt)
    _abs, ulps = sweep.compare(torch, "scale-add", zero, one_ulp_of_b)
    assert ulps == pytest.approx(1.0)
    # NaN is never within tolerance
    nan = torch.tensor([float("nan")], dtype=dt)
    assert sweep.compare(torch, "scale-add", ref, nan)[1] == float("inf")
    assert sweep.check_passes("scale-add", *sweep.compare(torch, "scale-add", ref, nan)) is False


def test_scale_add_stays_bounded_over_thousands_of_calls(sweep: ModuleType) -> None:
    for dt in (torch.float16, torch.float32):
        x = _start(1024, dt)
        scale_add = sweep.torch_call("scale-add", x)
        for _ in range(5000):
            scale_add()
        # a contraction towards 1 (in float16 the rounded steps stall short of it, at ~0.73):
        # every value finite, at most 1, and pulled up from [-1, 1) to well above 0
        assert bool(torch.isfinite(x).all())
        assert float(x.min()) > 0.5 and float(x.max()) <= 1.0


# --- the kernel for the GPU, compiled ahead of time (no GPU needed) ---


def test_kernel_compiles_for_hopper_and_blackwell(
    sweep: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from triton.backends import backends

    if "nvidia" not in backends:
        pytest.skip("this triton has no NVIDIA backend")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))  # compile for real, not from a cache
    kernel = triton.jit(sweep._scale_kernel)
    signature = {
        "x_ptr": "",
        "n_elements": "i32",
        "a": "fp32",
        "b": "fp32",
        "ADD": "constexpr",
        "BLOCK_SIZE": "constexpr",
    }
    # what a launch on a 16-byte aligned tensor of 2^N elements specialises
    aligned = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}
    for arch, dtype, add in ((90, "fp16", False), (90, "fp32", True), (120, "bf16", True)):
        src = ASTSource(
            fn=kernel,
            signature={**signature, "x_ptr": f"*{dtype}"},
            constexprs={"ADD": add, "BLOCK_SIZE": 4096},
            attrs=aligned,
        )
        compiled = triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": 8})
        assert compiled.asm["cubin"]
        ptx = compiled.asm["ptx"]
        assert f".target sm_{arch}" in ptx
        # 16-byte loads and stores: the kernel streams memory as wide as the GPU allows
        assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx
        if add:  # scale-add is one multiply-add with a single rounding
            assert "fma.rn.f32" in ptx


def test_autotuner_is_set_up_for_the_gpu(sweep: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    op = sweep.TritonOp(triton, "scale-add", interpreted=False)
    tuner = op.kernel
    assert isinstance(tuner, triton.runtime.Autotuner)
    assert [(c.kwargs["BLOCK_SIZE"], c.num_warps) for c in tuner.configs] == list(sweep.TRITON_CONFIGS)
    assert tuner.keys == ["n_elements"]
    assert tuner.restore_value == ["x_ptr"]  # tuning runs in place: the tensor is put back


# --- sizes past the last-level cache ---


def test_cpu_sweep_default_sizes(sweep: ModuleType) -> None:
    # a 32 MiB cache: 2^25 float32 (128 MiB) is the first size 4x past it
    sizes, first, shortfall = sweep.cpu_default_sizes(32 * MiB, 4, None)
    assert sizes == [12, 14, 16, 18, 20, 22, 24, 25, 26] and first == 25 and shortfall is None
    # 2-byte elements: one size further, the same bytes
    assert sweep.cpu_default_sizes(32 * MiB, 2, None)[:2] == ([*range(12, 26, 2), 26, 27], 26)
    # too little memory for the second size past the cache: said, not hidden
    sizes, first, shortfall = sweep.cpu_default_sizes(32 * MiB, 4, 200 * MiB)
    assert sizes == [12, 14, 16, 18, 20, 22, 24, 25] and first == 25
    assert shortfall is not None and "only 1 default size at least 4x the last-level cache" in shortfall
    # the triton check keeps a copy: twice the memory per size
    assert sweep.cpu_default_sizes(32 * MiB, 4, 300 * MiB, copies=2)[0][-1] == 25
    # this machine's cache, read from sysfs as the script does
    llc = _sysfs_last_level_cache() or 32 * MiB
    sizes, first, _ = sweep.cpu_default_sizes(llc, 4, None)
    assert sizes[-2:] == [first, first + 1]
    assert (1 << first) * 4 >= 4 * llc > (1 << (first - 1)) * 4


def test_cpu_sweep_uses_the_default_sizes(sweep: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    # the real default sizes; --max-bytes keeps this test to the small ones
    args = sweep.parse_args(["--device", "cpu", "--iters", "1", "--warmup", "0", "--max-bytes", str(MiB)])
    doc = sweep.run(args)
    assert doc["dtype"] == "float32" and (doc["warmup"], doc["iters"]) == (0, 1)
    measured = [r["log2"] for r in doc["rows"]]
    skipped = [s["log2"] for s in doc["skipped"]]
    assert measured == [12, 14, 16, 18]  # 2^18 float32 is 1 MiB
    llc = _sysfs_last_level_cache() or 32 * MiB
    everything = measured + skipped
    assert everything == sorted(everything)
    past = [p for p in everything if (1 << p) * 4 >= 4 * llc]
    if not any("the DRAM plateau needs two" in n for n in doc["notes"]):
        assert len(past) == 2 and past == everything[-2:]
    err = capsys.readouterr().err
    assert f"on the CPU, default sizes 2^12..2^{everything[-1]}" in err
    assert "2 warm-up + 10 timed calls" not in err and "0 warm-up + 1 timed calls" in err


def test_lesson1_cpu_scale_size(lesson1: ModuleType) -> None:
    # at least 4x the cache, at least 2^24 elements, the smallest such power of two
    assert lesson1.cpu_scale_log2(32 * MiB, 4, None) == (25, False)  # 128 MiB of float32
    assert lesson1.cpu_scale_log2(32 * MiB, 2, None) == (26, False)
    assert lesson1.cpu_scale_log2(1 * MiB, 4, None) == (24, False)  # the floor
    assert lesson1.cpu_scale_log2(480 * MiB, 4, None) == (29, False)  # 2 GiB >= 1920 MiB
    # capped by memory: the largest that fits, and it says so
    assert lesson1.cpu_scale_log2(480 * MiB, 4, 1500 * MiB) == (28, True)
    # this machine's cache, read from sysfs as the script does
    llc = _sysfs_last_level_cache() or 32 * MiB
    log2, capped = lesson1.cpu_scale_log2(llc, 4, None)
    assert not capped and log2 >= 24
    assert (1 << log2) * 4 >= 4 * llc
    assert log2 == 24 or (1 << (log2 - 1)) * 4 < 4 * llc
    fields = lesson1.scale_range_cache_fields(llc, "sysfs", (1 << log2) * 4)
    assert fields["past_llc"] is True and fields["llc_bytes"] == llc
    assert lesson1.scale_range_cache_fields(llc, "sysfs", 4 * llc - 1)["past_llc"] is False
    assert lesson1.scale_range_cache_fields(None, None, 1 << 40)["past_llc"] is False
