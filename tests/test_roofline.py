"""Roofline math for a model: the per-token decode floor, measured and spec side by side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_cli
from reportstore import Recorded, copy_home, recorded

from nsightlab.analysis.roofline import PlateauSource, decode_floor, find_gpu
from nsightlab.analysis.sweep_result import plateau_source
from nsightlab.errors import UsageError
from nsightlab.runs.sweeps import analyze_record_file
from nsightlab.specs import gpus
from nsightlab.userconfig import Session, save_session

RTX = gpus.BY_KEY["rtx-pro-6000-server"]
TUTORIAL = gpus.REFERENCE_SWEEPS["tutorial-rtx-pro-6000"]


def test_sixteen_gb_on_the_tutorials_plateau_and_spec() -> None:
    """The tutorial: 16 GB of weights / 1.46 TB/s ~ 11 ms; against the 1.597 TB/s spec ~ 10 ms."""
    src = PlateauSource(run_id="abc123", dtype="float16", device_name=RTX.name, device_type="cuda", dram_tbps=1.46)
    floor = decode_floor(16, sweeps=[src])
    measured, spec = floor.lines
    assert measured.basis == "measured" and spec.basis == "spec"
    assert measured.ms_per_token == pytest.approx(16e9 / 1.46e12 * 1e3)  # 10.96 ms
    assert round(measured.ms_per_token) == 11
    assert spec.ms_per_token == pytest.approx(16e9 / 1.597e12 * 1e3)  # 10.02 ms
    assert round(spec.ms_per_token) == 10
    assert measured.tokens_per_s == pytest.approx(1e3 / measured.ms_per_token)
    assert spec.source == "1.597 TB/s, RTX PRO 6000 Blackwell Server Edition datasheet"
    assert floor.measured_pct_of_spec == pytest.approx(100 * 1.46 / 1.597)
    assert "11.0 ms per token" in floor.summary[0] and "10.0 ms" in floor.summary[0] and "91%" in floor.summary[0]
    assert floor.weight_bytes == 16e9 and isinstance(floor.weight_bytes, int)
    assert decode_floor(0.5, sweeps=[src]).weight_bytes == 500_000_000


def test_from_the_reference_sweep_analysed(tmp_path: Path) -> None:
    f = tmp_path / "ref.json"
    f.write_text(json.dumps(TUTORIAL.as_sweep_json()))
    src = plateau_source(analyze_record_file(f))
    assert src.dram_tbps == pytest.approx(1.462, abs=0.002)  # median of 2^28 and 2^30
    floor = decode_floor(16, sweeps=[src])
    assert [x.basis for x in floor.lines] == ["measured", "spec"]
    assert floor.lines[0].ms_per_token == pytest.approx(10.94, abs=0.02)
    assert floor.lines[1].gpu == RTX.name


def test_spec_only_and_lookups() -> None:
    h200 = decode_floor(70, gpus=[find_gpu("NVIDIA H200")])
    (line,) = h200.lines
    assert line.basis == "spec" and line.ms_per_token == pytest.approx(70e9 / 4.8e12 * 1e3)
    assert "sweep the GPU" in h200.summary[0]
    assert (
        find_gpu("g7e.8xlarge")
        == RTX
        == find_gpu("rtx-pro-6000-server")
        == find_gpu("nvidia rtx pro 6000 blackwell server edition")
    )
    with pytest.raises(UsageError, match="no GPU 'NVIDIA Z9'") as e:
        find_gpu("NVIDIA Z9")
    assert e.value.hint is not None and "h200" in e.value.hint
    with pytest.raises(UsageError, match="must be positive"):
        decode_floor(0, gpus=[RTX])


def test_a_sweep_without_plateau_gives_a_note_not_a_number() -> None:
    cpu = PlateauSource(run_id="c0ffee", dtype="float32", device_name="AMD EPYC", device_type="cpu", dram_tbps=None)
    floor = decode_floor(16, sweeps=[cpu])
    assert floor.lines == [] and "reached no DRAM plateau" in floor.notes[0]
    est = PlateauSource(
        run_id="e57", dtype="float32", device_name="AMD EPYC", device_type="cpu", dram_tbps=0.02, dram_is_estimate=True
    )
    floor = decode_floor(1, sweeps=[est])
    assert floor.lines[0].estimate and floor.lines[0].ms_per_token == pytest.approx(50.0)
    assert any("estimate" in n for n in floor.notes)


# --- the command, over the recorded store ---


@pytest.fixture
def rec(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Recorded:
    pytest.importorskip("torch")
    return copy_home(recorded(tmp_path_factory), tmp_path, monkeypatch)


def test_command_from_a_stored_sweep(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    r = run_cli(capsys, "roofline", "--weights-gb", "16", "--run", rec.ref_sweep, "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["kind"] == "decode-floor" and doc["weights_gb"] == 16
    assert '"weight_bytes": 16000000000,' in r.out  # a count of bytes: an integer, not 16000000000.0
    assert {
        "basis",
        "label",
        "source",
        "gpu",
        "run_id",
        "bandwidth_tbps",
        "ms_per_token",
        "tokens_per_s",
        "estimate",
    } <= set(doc["lines"][0])
    measured, spec = doc["lines"]
    assert measured["run_id"] == rec.ref_sweep and measured["ms_per_token"] == pytest.approx(10.94, abs=0.02)
    assert spec["ms_per_token"] == pytest.approx(10.02, abs=0.01)
    human = run_cli(capsys, "roofline", "--weights-gb", "16", "--run", rec.ref_sweep)
    assert human.code == 0
    header = human.out.splitlines()[1].split()
    assert header == ["BASIS", "TB/S", "PER", "TOKEN", "(ms)", "TOKENS/S", "SOURCE"]
    rows = [line.split() for line in human.out.splitlines()[2:4]]
    # the measured plateau in three figures; the spec quoted as its datasheet gives it
    assert rows[0][:4] == ["measured", "1.46", "10.9", "91.4"] and rows[1][:4] == ["spec", "1.597", "10.0", "99.8"]


def test_command_default_is_the_latest_sweep_with_a_plateau(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    doc = json.loads(run_cli(capsys, "roofline", "--weights-gb", "8", "--json").out)
    assert doc["lines"][0]["run_id"] == rec.ref_sweep  # the CPU sweeps reached no plateau
    assert doc["lines"][0]["ms_per_token"] == pytest.approx(8e9 / 1.462e12 * 1e3, rel=0.002)


def test_command_gpu_and_errors(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    doc = json.loads(run_cli(capsys, "roofline", "--weights-gb", "16", "--gpu", "g6.xlarge", "--json").out)
    assert [x["basis"] for x in doc["lines"]] == ["spec"] and doc["lines"][0]["gpu"] == "NVIDIA L4"
    assert doc["lines"][0]["ms_per_token"] == pytest.approx(16e9 / 300e9 * 1e3)
    both = run_cli(capsys, "roofline", "--weights-gb", "16", "--gpu", "NVIDIA L4", "--run", rec.ref_sweep)
    assert both.code == 2 and "not both" in both.err
    unknown = run_cli(capsys, "roofline", "--weights-gb", "16", "--gpu", "Voodoo5")
    assert unknown.code == 2 and "no GPU 'Voodoo5'" in unknown.err and "rtx-pro-6000-server" in unknown.err
    zero = run_cli(capsys, "roofline", "--weights-gb", "0", "--gpu", "NVIDIA L4")
    assert zero.code == 2 and "must be positive" in zero.err
    ncu = run_cli(capsys, "roofline", "--weights-gb", "16", "--run", rec.ncu05)
    assert ncu.code == 2 and "is a ncu run" in ncu.err
    cpu = run_cli(capsys, "roofline", "--weights-gb", "16", "--run", rec.cpu_f16)
    assert cpu.code == 2 and "reached no DRAM plateau" in cpu.err
    prof = json.loads(run_cli(capsys, "roofline", "--weights-gb", "16", "--run", rec.ref_profile, "--json").out)
    assert [x["basis"] for x in prof["lines"]] == ["spec"] and "measures no DRAM plateau" in prof["notes"][0]


def test_command_without_sweeps_uses_the_session_gpu(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSIGHTLAB_HOME", str(tmp_path / "home"))
    none = run_cli(capsys, "roofline", "--weights-gb", "16")
    assert none.code == 2 and "--gpu NAME" in none.err
    save_session(
        Session(
            context="stg-online-use1",
            server="https://127.0.0.1:6443",
            namespace="ml-lab",
            pod="nsight-lab-me",
            uid="u1",
            owner="me",
            gpu_product="NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
            created="2026-01-01T00:00:00Z",
        )
    )  # type: ignore[arg-type]
    doc = json.loads(run_cli(capsys, "roofline", "--weights-gb", "16", "--json").out)
    assert doc["lines"][0]["gpu"] == RTX.name and "lab session's GPU" in doc["notes"][0]
