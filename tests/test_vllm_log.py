"""vLLM's start-up accounting, read from real logs of several versions
(tests/data/vllm_logs, sources in its SOURCES.md): every figure, the ways a log goes
wrong (no engine lines, absurd numbers, a cut-off line, a 100 MB log), and the
command line's sizing flags."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from nsightlab.parse.engine_args import read_flags
from nsightlab.parse.vllm_log import MAX_DEVICE_GIB, GiB, parse_text, read_startup

LOGS = Path(__file__).resolve().parent / "data" / "vllm_logs"
FIXTURES = sorted(LOGS.glob("*.log"))
FIELDS = (
    "weights_gib",
    "activation_gib",
    "non_torch_gib",
    "graphs_gib",
    "kv_gib",
    "kv_tokens",
    "kv_blocks",
    "max_model_len",
    "max_concurrency",
    "gpu_memory_gib",
    "gpu_memory_utilization",
    "budget_gib",
    "ended",
    "problems",
)


def test_every_fixture_has_its_source_and_expected_parse() -> None:
    sources = (LOGS / "SOURCES.md").read_text()
    assert len(FIXTURES) >= 10
    for path in FIXTURES:
        assert f"`{path.name}`" in sources, path.name
        assert path.with_suffix(".expected.json").is_file(), path.name
        text = path.read_text()
        # no person's folder, no credential
        assert "/home/" not in text and "Authorization" not in text and "hf_" not in text


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_real_logs_parse_as_expected(path: Path) -> None:
    got = parse_text(path.read_text())
    want = json.loads(path.with_suffix(".expected.json").read_text())
    assert {k: getattr(got, k) for k in FIELDS} == {k: want[k] for k in FIELDS}
    per_token = None if got.kv_bytes_per_token is None else round(got.kv_bytes_per_token)
    assert per_token == want["kv_bytes_per_token"]
    assert len(got.workers) == want["workers"]
    assert got.found


def test_the_whole_v0_start_up_adds_up() -> None:
    """mellea's H100 start-up: weights + outside torch + activations + KV = the budget,
    and KV over its tokens is Qwen3-0.6B's 2 x 28 layers x 8 KV heads x 128 x 2 bytes."""
    r = parse_text((LOGS / "v0.7_single-gpu_mellea-416.log").read_text())
    assert r.budget_gib == pytest.approx(79.19 * 0.80, abs=0.01)
    parts = (r.weights_gib or 0) + (r.non_torch_gib or 0) + (r.activation_gib or 0) + (r.kv_gib or 0)
    assert parts == pytest.approx(r.budget_gib, abs=0.02)
    assert r.kv_tokens == 36184 * 16 and "confirms" in (r.kv_tokens_from or "")
    assert r.kv_bytes_per_token == pytest.approx(2 * 28 * 8 * 128 * 2, rel=1e-3)


def test_blocks_without_a_concurrency_line_give_no_tokens() -> None:
    """A block size is taken only where the log's own concurrency line confirms it."""
    r = parse_text((LOGS / "v0.8_k9s-view_gateway-api-inference-extension-550.log").read_text())
    assert r.kv_blocks == 7191 and r.kv_tokens is None and r.kv_bytes_per_token is None
    assert r.kv_gib == 56.18 and r.weights_gib == 12.55  # the k9s borders around each line are no matter


def test_the_free_memory_line_in_bytes_and_in_gib() -> None:
    line = (LOGS / "v1-0.10.2_free-memory-on-device_llm-d-fast-model-actuation.log").read_text()
    r = parse_text(line)
    assert (r.weights_gib, r.activation_gib, r.non_torch_gib, r.graphs_gib) == (4.74, 0.23, 0.02, 0.62)
    assert r.kv_gib == pytest.approx(32786058444 / GiB)
    newer = (
        "(Worker_DP0_EP0 pid=2) INFO 08-13 11:31:42 [gpu_worker.py:790] Free memory on device (274.27/276.62 GiB) on "
        "startup. Desired GPU memory utilization is (0.92, 254.49 GiB). Actual usage is 171.25 GiB for consumed memory "
        "(weights + non-torch), 36.74 GiB for peak activation, and 8.57 GiB for CUDAGraph memory. Replace "
        "gpu_memory_utilization config with `--kv-cache-memory=40574291354` (37.79 GiB) to fit into requested memory, "
        "or `--kv-cache-memory=61814666240` (57.57 GiB) to fully utilize gpu memory. Current kv cache memory in use is "
        "46.5 GiB."
    )
    r = parse_text("INFO [gpu_model_runner.py:5515] Model loading took 160.1 GiB memory and 41.9 seconds\n" + newer)
    assert (r.weights_gib, r.activation_gib, r.graphs_gib, r.kv_gib) == (160.1, 36.74, 8.57, 46.5)
    assert r.non_torch_gib == pytest.approx(171.25 - 160.1) and r.gpu_memory_gib == 276.62


def test_a_log_with_no_engine_lines() -> None:
    r = parse_text("I0321 20:15:44.311902 1 grpc_server.cc:2463] Started GRPCInferenceService at 0.0.0.0:8001\n" * 50)
    assert not r.found and r.engine_lines == 0 and r.weights_gib is None and r.problems == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("INFO [gpu_model_runner.py:1316] Model loading took 1e30 GiB and 3.6 seconds", "more than any device"),
        ("INFO [gpu_worker.py:298] Available KV cache memory: -2.81 GiB", "negative"),
        ("INFO [kv_cache_utils.py:634] GPU KV cache size: 0 tokens", "not a real cache"),
        ("INFO [kv_cache_utils.py:634] GPU KV cache size: 99,999,999,999,999 tokens", "not a real cache"),
        ("INFO Maximum concurrency for 0 tokens per request: 4.84x", "not real"),
        ("INFO [gpu_worker.py:298] Available KV cache memory: 2048.5 GiB", "more than any device"),
    ],
)
def test_absurd_figures_are_dropped_with_a_problem(line: str, problem: str) -> None:
    r = parse_text(line)
    assert r.found
    assert any(problem in p for p in r.problems), r.problems
    assert r.weights_gib is None and r.kv_gib is None and r.kv_tokens is None
    for value in (r.weights_gib, r.kv_gib, r.max_concurrency):
        assert value is None or (math.isfinite(value) and 0 <= value <= MAX_DEVICE_GIB)


def _big_log(total: int, counter: list[int], *, engine_first: bool) -> Iterator[bytes]:
    """A log of `total` bytes in 64 KiB chunks, made as it is read (never held whole)."""
    head = (LOGS / "v0.7_single-gpu_mellea-416.log").read_bytes() if engine_first else b""
    line = b"INFO 02-11 10:18:00 [metrics.py:455] Avg prompt throughput: 0.0 tokens/s, Running: 1 reqs\n"
    chunk = line * (65536 // len(line))
    sent = 0
    if head:
        counter[0] += len(head)
        sent += len(head)
        yield head
    while sent < total:
        counter[0] += len(chunk)
        sent += len(chunk)
        yield chunk


def test_a_100_mb_log_is_read_only_up_to_the_cap() -> None:
    counter = [0]
    r = read_startup(_big_log(100 << 20, counter, engine_first=False), cap=1 << 20)
    assert r.capped and not r.found and r.bytes_read == 1 << 20
    assert counter[0] < (1 << 20) + 2 * 65536  # read no further than the cap


def test_a_100_mb_log_stops_at_the_end_of_start_up() -> None:
    counter = [0]
    r = read_startup(_big_log(100 << 20, counter, engine_first=True), cap=64 << 20)
    assert r.ended and not r.capped and r.kv_gib == 61.84
    assert counter[0] < 200_000  # the request lines after start-up are never read


def test_an_endless_line_is_cut_and_the_next_read() -> None:
    chunks = [b"x" * 300_000, b"y" * 300_000, b"\nINFO Available KV cache memory: 3.00 GiB\n"]
    r = read_startup(iter(chunks), cap=10 << 20)
    assert r.kv_gib == 3.0 and r.lines_read == 2


def test_bytes_that_are_not_utf8_are_no_matter() -> None:
    r = read_startup(iter([b"\xff\xfe\x00garbage\n", b"INFO Model loading took 2.5 GiB and 3 seconds\n"]), cap=1 << 20)
    assert r.weights_gib == 2.5


@pytest.mark.parametrize(
    ("command", "args", "want"),
    [
        (["vllm", "serve"], ["Qwen/Qwen3-0.6B", "--gpu-memory-utilization", "0.8", "--max-num-seqs=64"],
         {"engine": "vllm", "model": "Qwen/Qwen3-0.6B", "gpu_memory_utilization": 0.8, "max_num_seqs": 64}),
        (["python3", "-m", "vllm.entrypoints.openai.api_server"], ["--model", "m", "-tp", "2", "--enforce-eager"],
         {"engine": "vllm", "model": "m", "tensor_parallel_size": 2, "enforce_eager": True}),
        (["sh", "-c", "vllm serve m --kv-cache-memory-bytes 4Gi --max_model_len 4096"], [],
         {"engine": "vllm", "kv_cache_memory_bytes": 4 << 30, "max_model_len": 4096}),
        (["tritonserver", "--model-repository=/models"], [], {"engine": "triton", "model": None}),
        (["/bin/app"], [], {"engine": "unknown"}),
    ],
)  # fmt: skip
def test_engine_flags(command: list[str], args: list[str], want: dict[str, object]) -> None:
    flags = read_flags(command, args)
    assert {k: getattr(flags, k) for k in want} == want and flags.problems == []


def test_engine_flags_that_are_not_values_are_problems() -> None:
    flags = read_flags(["vllm", "serve", "m"], ["--gpu-memory-utilization", "nan", "--max-num-seqs", "-3"])
    assert flags.gpu_memory_utilization is None and flags.max_num_seqs is None
    assert len(flags.problems) == 2 and "'nan'" in flags.problems[0]
