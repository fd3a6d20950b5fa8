"""The Itanium demangler against GNU c++filt: exact where it answers, None elsewhere.

Two sets of real mangled names, each beside what `c++filt --no-recurse-limit` printed:
the kernel names that reached real traces mangled (AMD aiter, Composable Kernel, SGLang
on ROCm; tests/data/kernel_names/mangled.tsv), and every symbol g++ 12 emitted for the
C++ files in tests/data/kernel_names/gxx (kernel-shaped templates, lambdas, packs, and the
standard library's templates; gxx_symbols.tsv.gz). Where c++filt is installed the files
are checked against it too.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest

from nsightlab.parse.demangle import demangle, demangled
from nsightlab.parse.kinds import kernel_kind
from nsightlab.parse.names import short_kernel_name

DATA = Path(__file__).parent / "data" / "kernel_names"


def _kernel_rows() -> list[tuple[str, str, str | None]]:
    rows = []
    for line in (DATA / "mangled.tsv").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            source, mangled, expected = line.split("\t")
            rows.append((source, mangled, None if expected == "-" else expected))
    return rows


def _gxx_rows() -> list[tuple[str, str]]:
    with gzip.open(DATA / "gxx_symbols.tsv.gz", "rt", encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t")) for line in f]  # type: ignore[misc]


KERNELS = _kernel_rows()
GXX = _gxx_rows()


@pytest.mark.parametrize(("source", "mangled", "expected"), KERNELS, ids=[r[1][:60] for r in KERNELS])
def test_real_kernel_names_demangle_as_cxxfilt_does(source: str, mangled: str, expected: str | None) -> None:
    assert demangle(mangled) == expected, source


def test_every_kernel_name_cxxfilt_reads_is_read() -> None:
    read = [r for r in KERNELS if r[2] is not None]
    assert len(read) >= 20 and all(demangle(m) == e for _, m, e in read)


def test_compiler_symbols_exact_or_left_alone() -> None:
    assert len(GXX) > 4000
    wrong, left = [], 0
    for mangled, expected in GXX:
        got = demangle(mangled)
        if got is None:
            left += 1
        elif got != expected:
            wrong.append((mangled, got, expected))
    assert wrong == []
    # What it leaves mangled is what kernel names do not carry (decltype, expressions,
    # operator new, conversion operators): a few percent of the standard library.
    assert left < 0.05 * len(GXX)


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="c++filt is not installed here")
def test_the_recorded_outputs_are_cxxfilts() -> None:
    names = [m for _, m, _ in KERNELS] + [m for m, _ in GXX[:: max(1, len(GXX) // 500)]]
    out = subprocess.run(
        ["c++filt", "--no-recurse-limit"], input="\n".join(names) + "\n", capture_output=True, text=True, check=True
    ).stdout.splitlines()
    recorded = {m: (e if e is not None else m) for _, m, e in KERNELS} | dict(GXX)
    assert out == [recorded[m] for m in names]


@pytest.mark.parametrize(
    "name",
    [
        "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bEEv.kd",  # a template whose parameters were cut off
        "_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i",
        "_Z1fIiEvDTcl1gT_EE",  # decltype of an expression
        "_ZN3foo",  # cut short
        "_Z",
        "_ZN1aE1bE",  # text after the end
        "_Z1fILb2EEvv",  # a bool that is neither 0 nor 1
        "not mangled",
        "_Z" + "N1a" * 2000 + "E" * 2000 + "v",  # deeper than any kernel name
    ],
)
def test_what_it_cannot_read_stays_raw(name: str) -> None:
    assert demangle(name) is None
    assert demangled(name) == name


def test_kinds_and_short_names_read_the_demangled_name() -> None:
    aiter = "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib"
    assert kernel_kind(aiter) == "norm"
    assert short_kernel_name(aiter) == "add_rmsnorm_quant_kernel<bfloat16_t, …false, false, true, 1>"
    assert short_kernel_name(aiter, width=100) == (
        "aiter::add_rmsnorm_quant_kernel<bfloat16_t, bfloat16_t, 256, 16, false, false, true, 1>"
    )
    # The kernel-descriptor symbol AMD's runtime may name a kernel by: a clone suffix,
    # as c++filt writes it, after a function; after a plain name c++filt leaves it all.
    kd = aiter.replace("Li256ELi16E", "Li64ELi8E") + ".kd"
    assert demangle(kd) == (
        "void aiter::add_rmsnorm_quant_kernel<std::bfloat16_t, std::bfloat16_t, 64, 8, false, false, true, 1>("
        "std::bfloat16_t*, std::bfloat16_t*, float*, std::bfloat16_t*, std::bfloat16_t*, std::bfloat16_t*, double, "
        "int, int, int, int, int, int, int, bool) [clone .kd]"
    )
    assert demangle("_ZN5aiter47fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_32x128E.kd") is None
