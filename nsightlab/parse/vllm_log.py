"""vLLM's own start-up accounting, read from a container's log.

vLLM says at start-up what each GPU holds: the weights, the activation peak of its
profiling run, memory outside torch (CUDA context, NCCL), CUDA graphs, and the KV cache
(bytes and tokens), and how many requests of the longest length fit. Its versions word
this differently; every wording below comes from vLLM's source (`vllm/worker/worker.py`
and `model_runner.py` in the V0 engine, `vllm/v1/worker/gpu_worker.py`,
`gpu_model_runner.py` and `vllm/v1/core/kv_cache_utils.py` in V1) and is checked against
real logs in `tests/data/vllm_logs/` (their sources in its SOURCES.md):

- weights: `Loading model weights took 14.9595 GB` (V0 and early V1; "GB" is 2^30 bytes
  there), `Model loading took 14.99 GiB and 3.65 seconds` (`GB` before 0.8, `GiB memory
  and` from ~0.19);
- V0 profiling: `Memory profiling results: total_gpu_memory=..GiB ... peak_torch_memory=..
  non_torch_memory=.. kv_cache_size=.. gpu_memory_utilization=..` (0.6.4), then from 0.6.5
  `the current vLLM instance can use total_gpu_memory (X GiB) x gpu_memory_utilization
  (U) = Y GiB` and `model weights take ..GiB; non_torch_memory takes ..GiB; PyTorch
  activation peak memory takes ..GiB; the rest of the memory reserved for KV Cache is
  ..GiB.`; KV blocks `# GPU blocks: N, # CPU blocks: M` (`# cuda blocks` from 0.7);
- V1: `Available KV cache memory: X GiB`, `GPU KV cache size: 1,131,008 tokens`,
  `Maximum concurrency for 131,072 tokens per request: 8.63x` (on one line with the cache
  size in recent versions), `Graph capturing finished in 37 secs, took 0.45 GiB`, at DEBUG
  `Memory profiling takes .. seconds. Total non KV cache memory: ..GiB; torch peak memory
  increase: ..GiB; non-torch forward increase memory: ..GiB; weights memory: ..GiB.`;
  from 0.10 `Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is
  (U, B GiB). Actual usage is W GiB for weight, A GiB for peak activation, N GiB for
  non-torch memory, and G GiB for CUDAGraph memory. ... Current kv cache memory in use is
  K bytes` (later `W GiB for consumed memory (weights + non-torch)` and `K GiB`), and
  `CUDA graph pool memory: X GiB (actual)` / `Estimated CUDA graph memory: X GiB total`.

Every figure is per GPU (each tensor-parallel worker logs its own); KV tokens are the
engine's. A log is read line by line (`VllmLogScanner`), in chunks, up to a byte cap, and
stops at the line that ends start-up (`Starting vLLM API server`, `init engine ... took`):
only the figures are kept, never the log. A figure outside physical bounds (negative, not
finite, more memory than any device has) is dropped with a problem that says so. Pure;
no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from pydantic import Field

from nsightlab.models import Model

GiB = 1 << 30
#: No single device holds this much memory: a figure above it is not a measurement.
MAX_DEVICE_GIB = 1024.0
MAX_TOKENS = 10**10
MAX_LEN = 10**8
#: KV cache block sizes vLLM has used; one is taken only when the concurrency line confirms it.
BLOCK_SIZES = (16, 32, 8, 64, 128, 256)
#: Longest line kept whole; a longer one is cut (start-up lines are short).
MAX_LINE = 64 * 1024

_NUM = r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_INT = r"(\d[\d,]*)"

_WORKER = re.compile(r"\((?P<tag>[A-Za-z][\w-]*(?: rank=\d+)?)(?: pid=(?P<pid>\d+))?\)")
_MODEL_LOADING = re.compile(rf"Model loading took {_NUM} ?(GiB|GB)(?: memory)? and {_NUM} ?seconds")
_LOADING_WEIGHTS = re.compile(rf"Loading model weights took {_NUM} ?(GiB|GB)")
_V0_CAN_USE = re.compile(rf"total_gpu_memory \({_NUM} ?GiB\) x gpu_memory_utilization \({_NUM}\) = {_NUM} ?GiB")
_V0_TAKE = re.compile(
    rf"model weights take {_NUM} ?GiB; non_torch_memory takes {_NUM} ?GiB; PyTorch activation peak memory "
    rf"takes {_NUM} ?GiB; the rest of the memory reserved for KV Cache is {_NUM} ?GiB"
)
_V064_RESULTS = re.compile(r"Memory profiling results:(?P<rest>.*)")
_PAIR = re.compile(rf"(\w+)=\s*{_NUM} ?(GiB)?")
_ROWS = {  # the multi-line table of vLLM PR #10511 ("key    value")
    "total_gpu_memory": re.compile(rf"\btotal_gpu_memory\s+{_NUM} ?GiB"),
    "gpu_memory_utilization": re.compile(rf"\bgpu_memory_utilization\s+{_NUM}\s*$"),
    "budget": re.compile(rf"the current vLLM instance can use\s+{_NUM} ?GiB"),
    "weights": re.compile(rf"model weights take\s+{_NUM} ?GiB\s*$"),
    "non_torch": re.compile(rf"\bnon_torch_memory\s+{_NUM} ?GiB"),
    "activation": re.compile(rf"PyTorch activation peak memory\s+{_NUM} ?GiB"),
    "kv": re.compile(rf"available_kv_cache_memory\s+{_NUM} ?GiB"),
}
_BLOCKS = re.compile(r"# (?:GPU|gpu|cuda) blocks: (\d+)")
_KV_AVAILABLE = re.compile(rf"Available KV cache memory: {_NUM} ?GiB")
_KV_TOKENS = re.compile(rf"GPU KV cache size: {_INT} tokens")
_CONCURRENCY = re.compile(rf"Maximum concurrency for {_INT} tokens per request: {_NUM}x")
_GRAPHS = re.compile(rf"Graph capturing finished in {_NUM} secs?, took {_NUM} ?GiB")
_GRAPH_POOL = re.compile(rf"CUDA graph pool memory: {_NUM} ?GiB \(actual\)")
_GRAPH_ESTIMATE = re.compile(rf"Estimated CUDA graph memory: {_NUM} ?GiB total")
_DEBUG_PROFILE = re.compile(
    rf"Total non KV cache memory: {_NUM} ?GiB; torch peak memory increase: {_NUM} ?GiB; non-torch forward "
    rf"increase memory: {_NUM} ?GiB; weights memory: {_NUM} ?GiB"
)
_REQUESTED = re.compile(rf"Requested memory: {_NUM} \(util\), {_NUM} ?GiB")
_FREE_ON_DEVICE = re.compile(
    rf"Free memory on device \({_NUM}/{_NUM} ?GiB\) on startup\. Desired GPU memory utilization is \({_NUM}, "
    rf"{_NUM} ?GiB\)\. Actual usage is (?P<usage>.*?)\. Replace"
)
_USAGE_SPLIT = re.compile(
    rf"{_NUM} ?GiB for weights?, {_NUM} ?GiB for peak activation, {_NUM} ?GiB for non-torch memory, and {_NUM} ?GiB "
    r"for CUDAGraph memory"
)
_USAGE_CONSUMED = re.compile(
    rf"{_NUM} ?GiB for consumed memory \(weights \+ non-torch\), {_NUM} ?GiB for peak activation, and {_NUM} ?GiB "
    r"for CUDAGraph memory"
)
_KV_IN_USE = re.compile(rf"Current kv cache memory in use is {_NUM} ?(bytes|GiB)")
#: Lines that end vLLM's start-up: nothing the accounting needs comes after them.
_END = re.compile(r"Starting vLLM API server|init engine \(profile, create kv cache, warmup model\) took")


class VllmStartup(Model):
    """What one vLLM start-up said about each GPU's memory (None: the log did not say)."""

    lines_read: int = 0
    bytes_read: int = 0
    engine_lines: int = 0  # lines that held a figure of vLLM's accounting
    weights_gib: float | None = None
    activation_gib: float | None = None
    non_torch_gib: float | None = None
    graphs_gib: float | None = None
    kv_gib: float | None = None  # KV cache memory of each GPU
    kv_tokens: int | None = None  # KV cache tokens of the engine
    kv_tokens_from: str | None = None  # "log", or how they were worked out from the log's own figures
    kv_blocks: int | None = None
    max_model_len: int | None = None  # the length of the concurrency line
    max_concurrency: float | None = None
    gpu_memory_gib: float | None = None  # the device's memory as vLLM saw it
    gpu_memory_utilization: float | None = None
    budget_gib: float | None = None  # device memory x utilization
    non_kv_gib: float | None = None  # weights + activation + non-torch, when logged as one
    workers: list[str] = Field(default_factory=list)  # the processes that logged their weights
    wordings: list[str] = Field(default_factory=list)  # which of vLLM's wordings were seen
    problems: list[str] = Field(default_factory=list)  # figures dropped, and why
    ended: bool = False  # the line that ends start-up was seen
    capped: bool = False  # the byte cap was reached before it

    @property
    def found(self) -> bool:
        """Whether any of vLLM's accounting was in the log."""
        return self.engine_lines > 0

    @property
    def kv_bytes_per_token(self) -> float | None:
        """KV cache bytes of one token on each GPU: the log's KV memory over its KV tokens."""
        if self.kv_gib is None or not self.kv_tokens or self.kv_gib <= 0:
            return None
        return self.kv_gib * GiB / self.kv_tokens


def _float(text: str) -> float:
    return float(text.replace(",", ""))


def _int(text: str) -> int:
    return int(text.replace(",", ""))


class VllmLogScanner:
    """Reads a log a line at a time and keeps only vLLM's start-up figures.

    The latest start-up wins: a figure seen again (another worker, a restart inside the
    same log) replaces the one before it."""

    def __init__(self) -> None:
        self.result = VllmStartup()
        self._workers: dict[str, None] = {}
        self._wordings: dict[str, None] = {}
        self._lengths: dict[int, float] = {}

    @property
    def done(self) -> bool:
        return self.result.ended

    # ------------------------------------------------------------------ figures

    def _gib(self, name: str, text: str) -> float | None:
        """A memory figure in GiB, or None (with a problem) when it cannot be one."""
        value = _float(text)
        if not math.isfinite(value):
            self._problem(f"{name} {text} GiB is not a number")
            return None
        if value < 0:
            self._problem(
                f"{name} is negative ({text} GiB): the engine found no room for it and could not start "
                "with these settings"
            )
            return None
        if value > MAX_DEVICE_GIB:
            self._problem(f"{name} {text} GiB is more than any device holds ({MAX_DEVICE_GIB:g} GiB): not used")
            return None
        return value

    def _problem(self, text: str) -> None:
        if text not in self.result.problems:
            self.result.problems.append(text)

    def _seen(self, wording: str) -> None:
        self._wordings[wording] = None
        self.result.engine_lines += 1

    def _worker(self, line: str) -> None:
        m = _WORKER.search(line[:200])
        tag = "" if m is None else m.group("tag") + (f" pid={m.group('pid')}" if "Worker" in m.group("tag") else "")
        if m is not None and m.group("tag").startswith(("EngineCore", "APIServer")):
            tag = ""  # the engine's own process: the driver worker in a single-process engine
        self._workers[tag or "main"] = None

    def feed(self, line: str) -> None:
        r = self.result
        r.lines_read += 1
        if _END.search(line):
            r.ended = True
            return
        if "GiB" in line or "GB" in line or "gpu_memory_utilization" in line:
            self._loading(line)
            self._memory(line)
        if "blocks" in line or "concurrency" in line or "tokens" in line:
            self._cache(line)

    def _loading(self, line: str) -> None:
        r = self.result
        m = _MODEL_LOADING.search(line) or _LOADING_WEIGHTS.search(line)
        if m is not None:
            value = self._gib("the weights", m.group(1))
            self._seen("model loading took" if m.re is _MODEL_LOADING else "loading model weights took")
            self._worker(line)
            if value is not None:
                r.weights_gib = value
        m = _GRAPHS.search(line)
        if m is not None:
            self._seen("graph capturing took")
            value = self._gib("CUDA graph memory", m.group(2))
            if value is not None:
                r.graphs_gib = value
        m = _V0_CAN_USE.search(line)
        if m is not None:
            self._seen("v0 current instance can use")
            self._budget(m.group(1), m.group(2), m.group(3))
        m = _V0_TAKE.search(line)
        if m is not None:
            self._seen("v0 model weights take")
            self._worker(line)
            for attr, text, what in (
                ("weights_gib", m.group(1), "the weights"),
                ("non_torch_gib", m.group(2), "memory outside torch"),
                ("activation_gib", m.group(3), "the activation peak"),
                ("kv_gib", m.group(4), "the KV cache memory"),
            ):
                value = self._gib(what, text)
                if value is not None:
                    setattr(r, attr, value)

    def _budget(self, total: str, util: str, budget: str) -> None:
        r = self.result
        t = self._gib("the device's memory", total)
        b = self._gib("the instance's budget", budget)
        u = _float(util)
        if not (0 < u <= 1):
            self._problem(f"gpu_memory_utilization {util} is not a share of the device")
        else:
            r.gpu_memory_utilization = u
        if t is not None:
            r.gpu_memory_gib = t
        if b is not None:
            r.budget_gib = b

    def _memory(self, line: str) -> None:
        r = self.result
        m = _KV_AVAILABLE.search(line)
        if m is not None:
            self._seen("available kv cache memory")
            self._worker(line)
            value = self._gib("the KV cache memory", m.group(1))
            if value is not None:
                r.kv_gib = value
        m = _DEBUG_PROFILE.search(line)
        if m is not None:
            self._seen("v1 memory profiling (debug)")
            for attr, text, what in (
                ("non_kv_gib", m.group(1), "the memory outside the KV cache"),
                ("activation_gib", m.group(2), "the activation peak"),
                ("non_torch_gib", m.group(3), "memory outside torch"),
                ("weights_gib", m.group(4), "the weights"),
            ):
                value = self._gib(what, text)
                if value is not None:
                    setattr(r, attr, value)
        m = _REQUESTED.search(line)
        if m is not None:
            self._seen("v1 requested memory (debug)")
            u = _float(m.group(1))
            if 0 < u <= 1:
                r.gpu_memory_utilization = u
            value = self._gib("the instance's budget", m.group(2))
            if value is not None:
                r.budget_gib = value
        m = _FREE_ON_DEVICE.search(line)
        if m is not None:
            self._free_on_device(line, m)
        for pattern, wording in ((_GRAPH_POOL, "cuda graph pool memory"), (_GRAPH_ESTIMATE, "estimated graph memory")):
            m = pattern.search(line)
            if m is not None and not (
                wording == "estimated graph memory" and "cuda graph pool memory" in self._wordings
            ):
                self._seen(wording)
                value = self._gib("CUDA graph memory", m.group(1))
                if value is not None:
                    r.graphs_gib = value
        m = _V064_RESULTS.search(line)
        if m is not None:
            self._v064(m.group("rest"))
        for key, pattern in _ROWS.items():
            m = pattern.search(line)
            if m is not None:
                self._row(key, m.group(1))

    def _free_on_device(self, line: str, m: re.Match[str]) -> None:
        r = self.result
        self._seen("free memory on device")
        self._worker(line)
        total = self._gib("the device's memory", m.group(2))
        if total is not None:
            r.gpu_memory_gib = total
        u = _float(m.group(3))
        if 0 < u <= 1:
            r.gpu_memory_utilization = u
        budget = self._gib("the instance's budget", m.group(4))
        if budget is not None:
            r.budget_gib = budget
        usage = m.group("usage")
        split = _USAGE_SPLIT.search(usage)
        consumed = _USAGE_CONSUMED.search(usage)
        if split is not None:
            for attr, text, what in (
                ("weights_gib", split.group(1), "the weights"),
                ("activation_gib", split.group(2), "the activation peak"),
                ("non_torch_gib", split.group(3), "memory outside torch"),
                ("graphs_gib", split.group(4), "CUDA graph memory"),
            ):
                value = self._gib(what, text)
                if value is not None:
                    setattr(r, attr, value)
        elif consumed is not None:
            for attr, text, what in (
                ("activation_gib", consumed.group(2), "the activation peak"),
                ("graphs_gib", consumed.group(3), "CUDA graph memory"),
            ):
                value = self._gib(what, text)
                if value is not None:
                    setattr(r, attr, value)
            both = self._gib("the weights and memory outside torch", consumed.group(1))
            if both is not None:
                r.non_kv_gib = both  # weights + non-torch; the weights line splits it
                if r.weights_gib is not None and both >= r.weights_gib:
                    r.non_torch_gib = both - r.weights_gib
        kv = _KV_IN_USE.search(line)
        if kv is not None:
            raw = _float(kv.group(1))
            value = self._gib("the KV cache memory", str(raw / GiB) if kv.group(2) == "bytes" else kv.group(1))
            if value is not None:
                r.kv_gib = value

    def _v064(self, rest: str) -> None:
        r = self.result
        pairs = {k: v for k, v, _ in _PAIR.findall(rest)}
        if not pairs:
            return  # the header of the multi-line table (vLLM PR #10511): its rows follow
        self._seen("v0.6.4 memory profiling results")
        for key, attr, what in (
            ("total_gpu_memory", "gpu_memory_gib", "the device's memory"),
            ("non_torch_memory", "non_torch_gib", "memory outside torch"),
            ("kv_cache_size", "kv_gib", "the KV cache memory"),
        ):
            if key in pairs:
                value = self._gib(what, pairs[key])
                if value is not None:
                    setattr(r, attr, value)
        if "gpu_memory_utilization" in pairs:
            u = _float(pairs["gpu_memory_utilization"])
            if 0 < u <= 1:
                r.gpu_memory_utilization = u
        if "peak_torch_memory" in pairs:
            # torch's peak holds the weights and the activations: the weights line splits it
            peak = self._gib("the torch peak", pairs["peak_torch_memory"])
            if peak is not None and r.weights_gib is not None and peak >= r.weights_gib:
                r.activation_gib = peak - r.weights_gib

    def _row(self, key: str, text: str) -> None:
        r = self.result
        self._seen("memory profiling results table")
        if key == "gpu_memory_utilization":
            u = _float(text)
            if 0 < u <= 1:
                r.gpu_memory_utilization = u
            return
        names = {
            "total_gpu_memory": ("gpu_memory_gib", "the device's memory"),
            "budget": ("budget_gib", "the instance's budget"),
            "weights": ("weights_gib", "the weights"),
            "non_torch": ("non_torch_gib", "memory outside torch"),
            "activation": ("activation_gib", "the activation peak"),
            "kv": ("kv_gib", "the KV cache memory"),
        }
        attr, what = names[key]
        value = self._gib(what, text)
        if value is not None:
            setattr(r, attr, value)

    def _cache(self, line: str) -> None:
        r = self.result
        m = _BLOCKS.search(line)
        if m is not None:
            self._seen("kv cache blocks")
            blocks = int(m.group(1))
            if blocks > MAX_TOKENS:
                self._problem(f"{blocks} KV cache blocks is not a real cache: not used")
            else:
                r.kv_blocks = blocks
        m = _KV_TOKENS.search(line)
        if m is not None:
            self._seen("gpu kv cache size")
            tokens = _int(m.group(1))
            if not 0 < tokens <= MAX_TOKENS:
                self._problem(f"a KV cache of {m.group(1)} tokens is not a real cache: not used")
            else:
                r.kv_tokens = tokens
                r.kv_tokens_from = "log"
        m = _CONCURRENCY.search(line)
        if m is not None:
            self._seen("maximum concurrency")
            length, x = _int(m.group(1)), _float(m.group(2))
            if not (0 < length <= MAX_LEN) or not (math.isfinite(x) and 0 <= x <= MAX_TOKENS):
                self._problem(f"maximum concurrency {m.group(2)}x for {m.group(1)} tokens is not real: not used")
            else:
                r.max_model_len, r.max_concurrency = length, x

    # ------------------------------------------------------------------ the end

    def finish(self) -> VllmStartup:
        """The figures, with KV tokens worked out where the log gives them only indirectly."""
        r = self.result
        r.workers = list(self._workers)
        r.wordings = list(self._wordings)
        if r.kv_tokens is None and r.kv_blocks and r.max_model_len and r.max_concurrency is not None:
            # V0 and early V1 log blocks, not tokens: a block size is taken only where the
            # concurrency line (tokens / length, two decimals) confirms it
            for size in BLOCK_SIZES:
                if round(r.kv_blocks * size / r.max_model_len, 2) == round(r.max_concurrency, 2):
                    r.kv_tokens = r.kv_blocks * size
                    r.kv_tokens_from = (
                        f"{r.kv_blocks} blocks x {size} tokens, the block size the log's maximum concurrency "
                        f"({r.max_concurrency}x for {r.max_model_len} tokens) confirms"
                    )
                    break
        if r.kv_tokens is None and r.max_model_len and r.max_concurrency:
            r.kv_tokens = round(r.max_model_len * r.max_concurrency)
            r.kv_tokens_from = (
                f"maximum concurrency x length ({r.max_concurrency}x x {r.max_model_len} tokens, two decimals)"
            )
        return r


def read_startup(chunks: Iterable[bytes], *, cap: int) -> VllmStartup:
    """vLLM's start-up figures from a log given in chunks, reading at most `cap` bytes and
    stopping at the end of start-up; the log itself is not kept (one partial line at most,
    cut at MAX_LINE)."""
    scanner = VllmLogScanner()
    pending = b""
    read = 0
    for chunk in chunks:
        if read + len(chunk) > cap:
            chunk = chunk[: max(0, cap - read)]
            scanner.result.capped = True
        read += len(chunk)
        pending += chunk
        *whole, pending = pending.split(b"\n")
        for raw in whole:
            scanner.feed(raw[:MAX_LINE].decode("utf-8", "replace"))
            if scanner.done:
                break
        if scanner.done or scanner.result.capped:
            break
        if len(pending) > MAX_LINE:
            pending = pending[:MAX_LINE]  # the rest of an endless line says nothing
    if pending and not scanner.done and not scanner.result.capped:
        scanner.feed(pending[:MAX_LINE].decode("utf-8", "replace"))
    result = scanner.finish()
    result.bytes_read = read
    if result.ended:
        result.capped = False
    return result


def parse_text(text: str) -> VllmStartup:
    """The figures of a whole log held as text (tests, files)."""
    scanner = VllmLogScanner()
    for line in text.splitlines():
        scanner.feed(line)
        if scanner.done:
            break
    result = scanner.finish()
    result.bytes_read = len(text.encode())
    return result
