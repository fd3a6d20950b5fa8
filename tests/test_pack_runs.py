"""`pack colocate` and `pack tokenizer` end to end on this machine's CPU: the real lab
scripts (colocate.py starting real worker processes; tokenizer_cpu.py on a BPE trained
here, offline), stored as runs, listed, reported; and `pack` using the stored tokenizer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run_cli
from conftest import STG_CONTEXT
from kubesim import KubeSim, load_serving

LAB = Path(__file__).resolve().parent.parent / "lab_scripts"


def _tokenizer(folder: Path) -> Path:
    """A small BPE trained here on a few sentences (the tokenizers package; nothing downloaded)."""
    tokenizers = pytest.importorskip("tokenizers")
    texts = [f"the model reads every weight once per step {i} and the cache grows by one token" for i in range(300)]
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        texts, tokenizers.trainers.BpeTrainer(vocab_size=200, special_tokens=["[UNK]"], show_progress=False)
    )
    path = folder / "tokenizer.json"
    tok.save(str(path))
    return path


@pytest.mark.torch
@pytest.mark.slow
def test_colocate_on_the_cpu_end_to_end(capsys: pytest.CaptureFixture[str], nsl_home: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    args = ("pack", "colocate", "--local", "--device", "cpu", "--preset", "tiny", "--copies", "1,2", "--tokens", "8")
    r = run_cli(capsys, *args, "--json")
    assert r.code == 0, r
    result = json.loads(r.out)
    assert result["kind"] == "pack" and result["device"].startswith("cpu (") and result["preset"] == "tiny"
    lines = result["results"]
    assert [(x["sharing"], x["copies"], len(x["per_copy"])) for x in lines] == [
        ("processes", 1, 1),
        ("processes", 2, 2),
    ]
    for x in lines:
        assert 0 < x["step_ms"]["median"] <= x["step_ms"]["p90"]
        assert x["aggregate_tokens_per_s"] > 0 and x["aggregate_tbps"] > 0
        assert x["aggregate_tokens_per_s"] == pytest.approx(sum(1000 / c["median"] for c in x["per_copy"]))
    assert "processes" in result["flattens_at"] and result["lesson"][0].startswith("processes: 1 copy -> 2")
    assert any("on the CPU" in n for n in result["notes"])
    assert result["mps"] == "MPS shares a GPU: not on a CPU"
    # stored before printed, listed as a pack run, reported with its figure
    runs = json.loads(run_cli(capsys, "runs", "--json").out)["runs"]
    (line,) = [x for x in runs if x["id"] == result["run_id"]]
    assert line["kind"] == "pack" and line["complete"] and line["device_type"] == "cpu"
    raw = sorted(p.name for p in (nsl_home / "runs").glob(f"*{result['run_id']}/raw/*"))
    assert raw == ["colocate.json", "run.log"]
    pytest.importorskip("matplotlib")
    rep = run_cli(capsys, "report", result["run_id"], "--out", str(tmp_path / "rep"))
    assert rep.code == 0, rep
    assert (tmp_path / "rep" / f"pack-{result['run_id']}.png").is_file()
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Packing: copies at once" in md and "aggregate" in md


def test_colocate_script_refuses_bad_input_in_one_line() -> None:
    for args, message in (
        (["--copies", "0,2", "--out", "x.json"], "every value must be at least 1"),
        (["--copies", "1"], "--out FILE.json is required"),
        (["--tokens", "0", "--out", "x.json"], "--tokens must be at least 1"),
    ):
        done = subprocess.run([sys.executable, str(LAB / "colocate.py"), *args], capture_output=True, text=True)
        assert done.returncode == 2, done
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.torch
def test_colocate_when_no_copy_fits_is_exit_4_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "c.json"
    done = subprocess.run(
        [
            sys.executable,
            str(LAB / "colocate.py"),
            "--device",
            "cpu",
            "--preset",
            "tiny",
            "--copies",
            "1",
            "--tokens",
            "2",
            "--max-bytes",
            "1000",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 4, done
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("colocate.py: error: no number of copies fits in memory: one copy needs about")
    assert "and --max-bytes is 0.0 MiB" in last
    assert not out.exists()


def test_pack_colocate_checks_its_options_before_anything_runs(
    capsys: pytest.CaptureFixture[str], nsl_home: Path
) -> None:
    r = run_cli(capsys, "pack", "colocate", "--local", "--copies", "1,x")
    assert r.code == 2 and "--copies must be whole numbers from 1 to 64" in r.err
    assert not (nsl_home / "runs").exists() or not list((nsl_home / "runs").iterdir())


def test_tokenizer_on_the_cpu_and_pack_uses_it(
    capsys: pytest.CaptureFixture[str], sim: KubeSim, kubeconfig: Path, nsl_home: Path, tmp_path: Path
) -> None:
    path = _tokenizer(tmp_path)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(
        "".join(json.dumps({"prompt": f"the cache grows by one token {i} " * 20}) + "\n" for i in range(40))
    )
    r = run_cli(
        capsys,
        "pack",
        "tokenizer",
        "--local",
        "--tokenizer",
        str(path),
        "--prompts",
        str(prompts),
        "--pod-cpu",
        "6",
        "--json",
    )
    assert r.code == 0, r
    t = json.loads(r.out)
    assert t["kind"] == "tokenizer" and t["prompts"] == 40 and t["prompt_source"] == "file"
    assert t["mean_prompt_tokens"] > 20 and t["ms_per_request"] > 0
    assert t["tokens_per_s_per_vcpu"] == pytest.approx(t["requests_per_s_per_vcpu"] * t["mean_prompt_tokens"], rel=1e-6)
    assert t["tokens_per_s_per_pod"] == pytest.approx(6 * t["tokens_per_s_per_vcpu"])
    # generated prompts of --prompt-len tokens
    r = run_cli(
        capsys,
        "pack",
        "tokenizer",
        "--local",
        "--tokenizer",
        str(tmp_path),
        "--prompt-len",
        "32",
        "--requests",
        "10",
        "--json",
    )
    assert r.code == 0, r
    gen = json.loads(r.out)
    assert gen["prompt_source"] == "generated" and gen["prompts"] == 10 and gen["mean_prompt_tokens"] >= 32
    # `pack` takes the latest stored measurement
    load_serving(sim)
    r = run_cli(capsys, "pack", "--context", STG_CONTEXT, "--kubeconfig", str(kubeconfig), "--match", "chat", "--json")
    chat = json.loads(r.out)["workloads"][0]
    assert chat["cpu"]["tokenizer_run"] == gen["run_id"]
    assert chat["cpu"]["tokenizer_tokens_per_s"] == pytest.approx(gen["tokens_per_s_per_vcpu"] * 7)


def test_tokenizer_bad_input(capsys: pytest.CaptureFixture[str], nsl_home: Path, tmp_path: Path) -> None:
    r = run_cli(capsys, "pack", "tokenizer", "--local", "--tokenizer", str(tmp_path / "none.json"))
    assert r.code == 2 and "no tokenizer at" in r.err and "Traceback" not in r.err
    path = _tokenizer(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\n{"other": 1}\n')
    r = run_cli(capsys, "pack", "tokenizer", "--local", "--tokenizer", str(path), "--prompts", str(bad))
    assert r.code == 2 and "bad.jsonl:2: a JSON line needs a string field prompt or text" in r.err
    r = run_cli(capsys, "pack", "tokenizer", "--local", "--tokenizer", str(path), "--pod-cpu", "lots")
    assert r.code == 2 and "--pod-cpu 'lots' is not a CPU quantity" in r.err
