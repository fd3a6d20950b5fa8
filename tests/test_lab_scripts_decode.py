"""lab_scripts/decode.py, run for real on this machine's CPU: the decode loop, its ranges
and the formulas behind its JSON."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from scriptrun import run_together

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "lab_scripts"
DECODE = SCRIPTS / "decode.py"
MODEL = SCRIPTS / "decode_model.py"
TORCHPROF = SCRIPTS / "torchprof.py"

# One small run, the same in every process: 2 batch sizes, 5 timed steps each.
TOKENS = 5
PROMPT = 7
BATCHES = (1, 3)
SEED = 3
SMALL = [
    "--device", "cpu", "--preset", "tiny", "--tokens", str(TOKENS), "--prompt-len", str(PROMPT),
    "--warmup", "2", "--batch", ",".join(map(str, BATCHES)), "--seed", str(SEED),
]  # fmt: skip


def _import_script(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"labscript_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _import_decode() -> ModuleType:
    return _import_script(DECODE)


def _import_model() -> ModuleType:
    """decode_model.py: the shapes and the arithmetic of a step, without torch."""
    return _import_script(MODEL)


def _params(layers: int, hidden: int, heads: int, kv: int, ffn: int, vocab: int, tied: bool, bias: bool) -> int:
    """The closed formula, written out tensor by tensor."""
    d = hidden // heads
    per_layer = (
        hidden  # attention RMSNorm scale
        + hidden * heads * d  # W_q
        + 2 * hidden * kv * d  # W_k, W_v
        + heads * d * hidden  # W_o
        + ((heads + 2 * kv) * d if bias else 0)  # q, k, v biases
        + hidden  # MLP RMSNorm scale
        + 3 * hidden * ffn  # W_gate, W_up, W_down
    )
    embedding = vocab * hidden
    return embedding + layers * per_layer + hidden + (0 if tied else vocab * hidden)


# --- no torch needed ---


def test_help_works_without_importing_torch() -> None:
    proc = subprocess.run([sys.executable, str(DECODE), "--help"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: decode.py")
    for flag in ("--preset", "--batch", "--modes", "--tokens", "--prompt-len", "--warmup", "--dtype",
                 "--hidden", "--layers", "--heads", "--kv-heads", "--ffn", "--vocab", "--tied", "--untied",
                 "--device", "--json"):  # fmt: skip
        assert flag in proc.stdout, flag
    assert "llama-8b" in proc.stdout and "qwen-0.5b" in proc.stdout
    assert "--max-bytes" not in proc.stdout  # a testing aid, hidden from users
    code = (
        "import runpy, sys\n"
        f"sys.argv = [{str(DECODE)!r}, '--help']\n"
        "try:\n"
        f"    runpy.run_path({str(DECODE)!r}, run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write('torch' in sys.modules and 'TORCH' or 'NO-TORCH')\n"
    )
    probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert probe.stderr.endswith("NO-TORCH")


def _imports(source: str) -> set[str]:
    tree = ast.parse(source, feature_version=(3, 8))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    return imported - set(sys.stdlib_module_names)


def test_script_parses_as_python_38_and_needs_only_torch_labcommon_and_its_model() -> None:
    source = DECODE.read_text()
    assert _imports(source) == {"torch", "labcommon", "decode_model"}
    assert source.startswith("#!/usr/bin/env python3\n")
    assert "from __future__ import annotations" in source
    # the model's arithmetic is the standard library's alone: no torch to count a step
    model = MODEL.read_text()
    assert _imports(model) == set()
    assert "from __future__ import annotations" in model


def test_runs_its_torch_free_part_on_python_38() -> None:
    """Options, presets and shape checks under a real 3.8 where this machine has one (a
    pyenv shim finds it through PYENV_VERSION)."""
    py38 = shutil.which("python3.8")
    env = {**os.environ, "PYENV_VERSION": "3.8"}

    def run38(*args: str) -> subprocess.CompletedProcess[str]:
        assert py38 is not None
        return subprocess.run([py38, *args], capture_output=True, text=True, env=env)

    if py38 is None or run38("-c", "pass").returncode:
        pytest.skip("no python3.8 here")
    ok = run38(str(DECODE), "--help")
    assert ok.returncode == 0 and ok.stdout.startswith("usage: decode.py"), ok.stderr
    bad = run38(str(DECODE), "--preset", "qwen-0.5b", "--kv-heads", "4")
    assert bad.returncode == 2
    assert bad.stderr == (
        "decode.py: error: heads 14 is not divisible by kv heads 4 (preset qwen-0.5b, with --kv-heads)\n"
    )
    counts = run38("-c", f"import sys; sys.path.insert(0, {str(SCRIPTS)!r}); import decode_model as m; "
                   "print(m.count_params(m.PRESETS['llama-8b']))")  # fmt: skip
    assert counts.stdout == "8030261248\n", counts.stderr


def test_a_copy_without_its_model_stops_with_one_line(tmp_path: Path) -> None:
    for script in (DECODE, SCRIPTS / "labcommon.py"):
        (tmp_path / script.name).write_bytes(script.read_bytes())
    proc = subprocess.run([sys.executable, str(tmp_path / "decode.py"), "--help"], capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (
        "decode.py: needs decode_model.py in the same folder as this script (copy lab_scripts/decode_model.py "
        "beside it)\n"
    )


def test_a_copy_without_labcommon_stops_with_one_line(tmp_path: Path) -> None:
    alone = tmp_path / "decode.py"
    alone.write_bytes(DECODE.read_bytes())
    proc = subprocess.run([sys.executable, str(alone), "--help"], capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout == ""
    assert (
        proc.stderr
        == "decode.py: needs labcommon.py in the same folder as this script (copy lab_scripts/labcommon.py beside it)\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--preset", "llama-70b"], "argument --preset: invalid choice: 'llama-70b'"),
        (
            ["--preset", "tiny", "--kv-heads", "3"],
            "heads 4 is not divisible by kv heads 3 (preset tiny, with --kv-heads)",
        ),
        (
            ["--preset", "llama-1b", "--heads", "48"],
            "hidden 2048 is not divisible by heads 48 (preset llama-1b, with --heads)",
        ),
        (["--preset", "tiny", "--hidden", "60"], "head dim 15 (hidden / heads) must be even"),
        (["--preset", "tiny", "--batch", "1,0"], "every value must be at least 1"),
        (["--preset", "tiny", "--batch", "1,x"], "expected comma-separated whole numbers"),
        (["--preset", "tiny", "--modes", "eager,fast"], "modes are eager and graphs"),
        (["--preset", "tiny", "--dtype", "int8"], "dtype is one of bfloat16"),
        (["--preset", "tiny", "--tokens", "0"], "--tokens must be at least 1"),
        (["--preset", "tiny", "--layers", "0"], "--layers must be at least 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, str(DECODE), *args], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("decode.py: error: ") and message in lines[0]


def test_parameter_counts_of_the_presets() -> None:
    decode_model = _import_model()
    # every preset against the formula written out above
    for name, s in decode_model.PRESETS.items():
        expected = _params(s.layers, s.hidden, s.heads, s.kv_heads, s.ffn, s.vocab, s.tied, s.qkv_bias)
        assert decode_model.count_params(s) == expected, name
    counts = {name: decode_model.count_params(s) for name, s in decode_model.PRESETS.items()}
    # the sizes the models are known by, and their exact parameter counts as published
    # with the checkpoints (safetensors metadata on the Hugging Face hub)
    assert round(counts["llama-1b"] / 1e9, 2) == 1.24 and counts["llama-1b"] == 1_235_814_400
    assert round(counts["llama-3b"] / 1e9, 2) == 3.21 and counts["llama-3b"] == 3_212_749_824
    assert round(counts["llama-8b"] / 1e9, 2) == 8.03 and counts["llama-8b"] == 8_030_261_248
    assert round(counts["qwen-0.5b"] / 1e9, 2) == 0.49 and counts["qwen-0.5b"] == 494_032_768
    # Qwen2.5-0.5B's card: 0.36 B without the embedding (tied, so counted once)
    qwen = decode_model.PRESETS["qwen-0.5b"]
    assert round((counts["qwen-0.5b"] - qwen.vocab * qwen.hidden) / 1e9, 2) == 0.36
    # untying adds exactly one vocab x hidden matrix; the 8B in bf16 is the 16 GB of the brief
    llama8 = decode_model.PRESETS["llama-8b"]
    tied8 = decode_model.count_params(llama8._replace(tied=True))
    assert counts["llama-8b"] - tied8 == 128256 * 4096
    assert round(counts["llama-8b"] * 2 / 1e9) == 16


@pytest.mark.parametrize(
    "shape",
    [
        (2, 64, 8, 8, 96, 100, False, False),  # multi-head attention, untied
        (3, 96, 6, 2, 160, 300, True, True),  # grouped-query, tied, q/k/v biases
        (1, 32, 4, 1, 64, 50, False, True),  # multi-query, untied, biases
    ],
)
def test_parameter_count_of_any_shape(
    shape: tuple[int, int, int, int, int, int, bool, bool],
) -> None:
    decode_model = _import_model()
    s = decode_model.Shape(*shape)
    assert decode_model.count_params(s) == _params(*shape)


def test_kv_bytes_and_flops_on_a_tiny_shape() -> None:
    decode_model = _import_model()
    # 2 layers, hidden 8, 2 query heads sharing 1 K/V head of dim 4, FFN 16, vocab 10
    s = decode_model.Shape(layers=2, hidden=8, heads=2, kv_heads=1, ffn=16, vocab=10, tied=False)
    batch, prompt, tokens, es = 3, 5, 4, 2
    # step t attends prompt + t + 1 positions: 6, 7, 8, 9 (mean 7.5)
    contexts = [prompt + t + 1 for t in range(tokens)]
    assert contexts == [6, 7, 8, 9]
    kv = Fraction(sum(2 * s.layers * batch * s.kv_heads * s.head_dim * c * es for c in contexts), tokens)
    assert kv == decode_model.kv_cache_bytes_per_step(s, batch, prompt, tokens, es) == 2 * 2 * 3 * 1 * 4 * 7.5 * 2
    assert decode_model.kv_cache_bytes(s, batch, prompt + tokens, es) == 2 * 2 * 3 * 1 * 9 * 4 * 2
    # matrix multiplies per token: q (8x8), k and v (8x4 each), o (8x8), 3 MLP (8x16), LM head (10x8)
    matmul_weights = s.layers * (8 * 8 + 2 * 8 * 4 + 8 * 8 + 3 * 8 * 16) + 10 * 8
    assert decode_model.matmul_params(s) == matmul_weights == 1232
    attention = Fraction(sum(4 * s.layers * batch * s.heads * s.head_dim * c for c in contexts), tokens)
    assert attention == decode_model.attention_flops_per_step(s, batch, prompt, tokens) == 1440
    assert decode_model.flops_per_step(s, batch, prompt, tokens) == 2 * matmul_weights * batch + 1440 == 8832


# --- real runs on the CPU ---


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Start the subprocess runs at once (each pays for importing torch), then collect them."""
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("decode")
    plans = {
        "json": [str(DECODE), *SMALL, "--json", str(tmp / "run.json")],
        # the same run again, under torch.profiler as `nsightlab profile --profiler torch` does
        "torchprof": [
            str(TORCHPROF), "--out", str(tmp / "prof.json"),
            "--ranges", "decode_step,prefill,warmup,mode:eager,batch:1,batch:3",
            str(DECODE), *SMALL, "--json", str(tmp / "again.json"),
        ],
    }  # fmt: skip
    # one thread each: the runs share the machine (and _first_tokens uses one thread too)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out: dict[str, Any] = {"tmp": tmp, **run_together(plans, cwd=tmp, env=env)}
    yield out


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.mark.slow
def test_tiny_end_to_end(runs: dict[str, Any]) -> None:
    proc = runs["json"]
    assert proc.returncode == 0, proc.stderr
    doc = _load(runs["tmp"] / "run.json")
    decode_model = _import_model()
    assert doc["kind"] == "decode" and doc["schema"] == 1
    assert doc["device"]["type"] == "cpu" and doc["device"]["cuda"] is None
    assert (doc["prompt_len"], doc["tokens"], doc["warmup"], doc["seed"]) == (
        PROMPT,
        TOKENS,
        2,
        SEED,
    )
    assert doc["batches"] == list(BATCHES)
    model = doc["model"]
    tiny = decode_model.PRESETS["tiny"]
    assert model["preset"] == "tiny" and model["overrides"] == {}
    for key in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "tied"):
        assert model[key] == getattr(tiny, key)
    assert model["head_dim"] == tiny.hidden // tiny.heads
    assert model["params"] == model["params_formula"] == decode_model.count_params(tiny)
    assert model["dtype"] == "float32" and model["element_size"] == 4
    assert model["weight_bytes"] == model["params"] * 4
    # graphs need a GPU: skipped, and said so on stderr and in the JSON
    assert [e["mode"] for e in doc["modes"]] == ["eager", "eager"]
    assert [e["batch"] for e in doc["modes"]] == list(BATCHES)
    skipped = "graphs mode skipped: CUDA graphs need a GPU (this run is on the CPU)"
    assert skipped in doc["notes"] and skipped in proc.stderr
    for entry in doc["modes"]:
        b = entry["batch"]
        steps = entry["step_seconds"]
        assert len(steps) == TOKENS and all(t > 0 for t in steps)
        assert entry["timer"] == "perf_counter"
        assert entry["median_step_s"] == statistics.median(steps)
        assert entry["p90_step_s"] == sorted(steps)[-1]  # nearest rank: ceil(0.9 x 5) = 5th
        assert entry["tokens_per_s"] == pytest.approx(b / statistics.median(steps), rel=1e-12)
        assert entry["cache_len"] == PROMPT + TOKENS
        assert entry["context"] == {
            "first": PROMPT + 1,
            "last": PROMPT + TOKENS,
            "mean": PROMPT + (TOKENS + 1) / 2,
        }
        kv = decode_model.kv_cache_bytes_per_step(tiny, b, PROMPT, TOKENS, 4)
        assert entry["kv_cache_bytes_per_step"] == kv
        allocated = 2 * tiny.layers * b * tiny.kv_heads * (PROMPT + TOKENS) * model["head_dim"] * 4
        assert entry["kv_cache_bytes_allocated"] == entry["kv_cache_bytes_read_per_step"] == allocated
        assert entry["weight_bytes_per_step"] == model["weight_bytes"]  # tied: the head reads it all
        assert entry["bytes_per_step_floor"] == model["weight_bytes"] + kv
        assert entry["flops_per_step"] == decode_model.flops_per_step(tiny, b, PROMPT, TOKENS)
        assert entry["ranges"] == {
            "step": "decode_step", "prefill": "prefill", "mode": "mode:eager",
            "batch": f"batch:{b}", "warmup": "warmup", "capture": None,
        }  # fmt: skip
        assert len(entry["generated_row0"]) == TOKENS + 1
        assert all(0 <= t < tiny.vocab for t in entry["generated_row0"])
    # stderr: one progress line per mode and batch; stdout: the summary table
    progress = [line for line in proc.stderr.splitlines() if "tokens/s" in line]
    assert len(progress) == 2 and "eager  batch   1:" in progress[0] and "ms/step median" in progress[0]
    assert len(proc.stdout.splitlines()) == 1 + len(BATCHES)


def test_greedy_decode_is_deterministic_for_a_seed(runs: dict[str, Any]) -> None:
    assert runs["torchprof"].returncode == 0, runs["torchprof"].stderr
    first = _load(runs["tmp"] / "run.json")["modes"]
    again = _load(runs["tmp"] / "again.json")["modes"]
    assert [e["generated_row0"] for e in first] == [e["generated_row0"] for e in again]
    assert len(set(first[0]["generated_row0"])) > 1  # not stuck repeating one token


def test_torchprof_sees_each_step_range_once_per_step(runs: dict[str, Any]) -> None:
    proc = runs["torchprof"]
    assert proc.returncode == 0, proc.stderr
    prof = _load(runs["tmp"] / "prof.json")
    counts = {row["name"]: row["instances"] for row in prof["nvtx"]}
    assert counts == {
        "mode:eager": 1, "batch:1": 1, "batch:3": 1, "prefill": len(BATCHES),
        "warmup": len(BATCHES), "decode_step": TOKENS * len(BATCHES),
    }  # fmt: skip
    # one argmax per step inside the step ranges (the warm-ups' and prefills' are outside)
    in_steps = {r["kernel_name"]: r for r in prof["nvtx_kernels"] if r["range_name"] == "decode_step"}
    assert in_steps["aten::argmax"]["kernel_instances"] == TOKENS * len(BATCHES)
    assert {"aten::linear", "aten::matmul", "aten::softmax", "aten::index_copy_"} <= set(in_steps)


def test_not_enough_memory_is_one_line_and_exit_4(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    decode = _import_decode()
    argv = [*SMALL, "--dtype", "float32", "--modes", "eager", "--max-bytes", "100000"]
    with pytest.raises(SystemExit) as stop:
        decode.main(argv)
    assert stop.value.code == decode.NO_ROOM_EXIT == 4
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()  # nothing else: the check comes before any work
    assert line.startswith("decode.py: error: tiny in float32 at batch 3 needs about ")
    assert "only 0.1 MiB may be used (--max-bytes)" in line and "smaller --batch" in line


def _events_within(events: list[Any], outer: Any, name: str) -> list[Any]:
    start, end = outer.time_range.start, outer.time_range.end
    return [e for e in events if e.name == name and start <= e.time_range.start and e.time_range.end <= end]


def test_ranges_nest_under_torch_profiler(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    decode = _import_decode()
    argv = [*SMALL, "--json", str(tmp_path / "inproc.json")]
    argv[argv.index("--seed") + 1] = str(SEED + 1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        assert decode.main(argv) == 0
    events = [
        e
        for e in prof.events()
        if e.name.startswith(("mode:", "batch:")) or e.name in ("prefill", "warmup", "decode_step")
    ]
    names = [e.name for e in events]
    assert names.count("mode:eager") == 1 and "mode:graphs" not in names
    assert names.count("decode_step") == TOKENS * len(BATCHES)
    (mode,) = [e for e in events if e.name == "mode:eager"]
    for b in BATCHES:
        (batch,) = [e for e in events if e.name == f"batch:{b}"]
        assert _events_within(events, mode, f"batch:{b}") == [batch]
        assert len(_events_within(events, batch, "decode_step")) == TOKENS
        assert len(_events_within(events, batch, "prefill")) == 1
        (warmup,) = _events_within(events, batch, "warmup")
        assert _events_within(events, warmup, "decode_step") == []  # warm-ups are not steps
    # another seed, other tokens
    other = _load(tmp_path / "inproc.json")["modes"]
    assert other[0]["generated_row0"] != _first_tokens()


def _first_tokens() -> list[int]:
    """The tokens of seed SEED, from a run of the module itself (batch 1, one thread like
    the scripts run by the fixture, so that every sum is added in the same order)."""
    import torch

    decode = _import_decode()
    decode_model = _import_model()
    tiny = decode_model.PRESETS["tiny"]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        w = decode.build_weights(torch, tiny, "cpu", torch.float32, SEED)
        prompt = decode.make_prompt(torch, tiny.vocab, 1, PROMPT, SEED)
        state = decode.State(torch, w, prompt, PROMPT + TOKENS)
        with torch.no_grad():
            decode.prefill(torch, w, state)
            for _ in range(TOKENS):
                decode.decode_step(torch, w, state)
    finally:
        torch.set_num_threads(threads)
    return [int(t) for t in state.seq[0, PROMPT:].tolist()]


def test_in_process_tokens_match_the_scripts(runs: dict[str, Any]) -> None:
    assert _load(runs["tmp"] / "run.json")["modes"][0]["generated_row0"] == _first_tokens()


@pytest.mark.parametrize(
    "shape",
    [
        (4, 64, 4, 2, 176, 512, True, False),  # the tiny preset: grouped-query, tied
        (2, 48, 6, 6, 80, 300, False, True),  # multi-head, untied, q/k/v biases
        (2, 64, 8, 1, 64, 128, True, False),  # multi-query
    ],
)
def test_real_tensors_and_cached_decode(
    shape: tuple[int, int, int, int, int, int, bool, bool],
) -> None:
    """The tensors a model allocates are the formula's count, and decoding one token at a
    time over the KV cache gives the logits of recomputing the whole sequence."""
    torch = pytest.importorskip("torch")
    decode = _import_decode()
    decode_model = _import_model()
    s = decode_model.Shape(*shape)
    w = decode.build_weights(torch, s, "cpu", torch.float32, 11)
    assert w.params() == decode_model.count_params(s) == _params(*shape)
    assert w.nbytes() == w.params() * 4
    assert (w.head is w.embedding) == s.tied
    half = decode.build_weights(torch, s, "cpu", torch.bfloat16, 11)
    assert half.nbytes() == half.params() * 2 == decode_model.count_params(s) * 2

    batch, prompt, tokens = 2, 5, 4
    state = decode.State(torch, w, decode.make_prompt(torch, s.vocab, batch, prompt, 0), prompt + tokens)
    assert state.kv_bytes() == decode_model.kv_cache_bytes(s, batch, prompt + tokens, 4)
    with torch.no_grad():
        decode.prefill(torch, w, state)
        logits = [state.logits.clone()]
        for _ in range(tokens):
            decode.decode_step(torch, w, state)
            logits.append(state.logits.clone())
        assert int(state.pos) == prompt + tokens
        seq = state.seq.clone()
        for t in range(tokens + 1):
            # a fresh cache, the first prompt + t tokens at once (and one position at a time)
            for chunk in (None, 1):
                fresh = decode.State(torch, w, seq[:, : prompt + t], prompt + tokens)
                decode.prefill(torch, w, fresh, chunk)
                torch.testing.assert_close(fresh.logits, logits[t], rtol=1e-4, atol=1e-4)
                assert torch.equal(fresh.seq[:, prompt + t], seq[:, prompt + t])


def test_cpu_defaults_and_shape_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No --preset on a CPU: the tiny one, said so; shape flags change it and are recorded."""
    pytest.importorskip("torch")
    decode = _import_decode()
    out = tmp_path / "flags.json"
    argv = ["--device", "cpu", "--layers", "2", "--untied", "--qkv-bias", "--tokens", "2",
            "--prompt-len", "4", "--warmup", "0", "--batch", "2", "--json", str(out)]  # fmt: skip
    assert decode.main(argv) == 0
    doc = _load(out)
    model = doc["model"]
    assert model["preset"] == "tiny"
    assert model["overrides"] == {"layers": 2, "tied": False, "qkv_bias": True}
    assert (model["layers"], model["tied"], model["qkv_bias"]) == (2, False, True)
    assert model["params"] == _params(2, 64, 4, 2, 176, 512, False, True)
    assert "no GPU: the tiny preset on the CPU (GPU default: llama-1b); pass --preset to change" in doc["notes"]
    (entry,) = doc["modes"]
    assert entry["ranges"]["batch"] is None  # one batch size: no batch range
    # untied: a step reads the LM head whole but only its 2 rows of the embedding table
    assert entry["weight_bytes_per_step"] == model["weight_bytes"] - (512 - 2) * 64 * 4
    assert "graphs mode skipped" in capsys.readouterr().err


def test_graphs_alone_on_a_cpu_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    decode = _import_decode()
    with pytest.raises(SystemExit) as stop:
        decode.main(["--device", "cpu", "--preset", "tiny", "--modes", "graphs"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == "decode.py: error: --modes graphs needs a GPU (CUDA graphs); add eager to run on the CPU"
