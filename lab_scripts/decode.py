#!/usr/bin/env python3
"""An LLM decode loop to profile: a decoder-only transformer in plain PyTorch.

Random weights (seeded, nothing is downloaded) in the shapes of real public models, a
prompt of random token ids, then greedy decoding one token at a time over a preallocated
KV cache. Each timed decode step runs inside the NVTX range `decode_step` (and a
`record_function` range of the same name, for torch.profiler), so a profile of this script
shows one step's kernels, launch gaps and time, eager and replayed from a CUDA graph.

The model: token embedding, then per layer RMSNorm, grouped-query attention with rotary
position embeddings (q/k/v projections, with biases for Qwen2), output projection, RMSNorm,
SwiGLU MLP (silu(x W_gate) * (x W_up)) W_down; a final RMSNorm and the LM head (the
embedding matrix itself when tied); the next token is the argmax of the logits.
Simplifications, none of which changes the work a step does: Llama 3's rope frequency
scaling ("rope_type": "llama3") is left out (plain rope with the model's theta), and Qwen2's
sliding window is off in the real model's config too.

Attention reads the whole preallocated cache (prompt + tokens positions) every step, with
the positions after the current one masked: the shapes stay the same from step to step,
so eager steps and CUDA-graph replays launch exactly the same kernels and the two modes
differ only in how they are launched. The JSON gives both the K/V bytes attention needs
(the live context, `kv_cache_bytes_per_step`) and the bytes this implementation reads
(the whole cache, `kv_cache_bytes_read_per_step`).

Ranges, outermost first (every one is an NVTX range on a GPU and a record_function range
everywhere):

    mode:eager | mode:graphs         one per mode, in the order of --modes
      batch:8                        one per batch, only when --batch lists several
        prefill                      the prompt, once
        warmup                       the --warmup steps (graphs: eager steps on a side stream)
        capture                      graphs only: capturing one decode step
        decode_step                  one per timed step (--tokens of them)

Runs in the lab pod's own Python (3.8 or later) with only the standard library and torch.

    python3 decode.py --preset llama-1b --batch 1,8,32 --json /tmp/decode.json
    python3 decode.py --device cpu --preset tiny --tokens 16
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

# labcommon.py travels beside every lab script: the device, its description, JSON output;
# decode_model.py beside this one: the model's shapes and the arithmetic of a step.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import labcommon as lab
    from decode_model import (
        CPU_DEFAULT_PRESET,
        FORMULAS,
        GPU_DEFAULT_PRESET,
        PRESETS,
        SHAPE_FLAGS,
        Shape,
        attention_flops_per_step,
        context_sum,
        count_params,
        flops_per_step,
        format_count,
        kv_cache_bytes_per_step,
        matmul_params,
        memory_plan,
        prefill_chunk,
        shape_problem,
    )
except ModuleNotFoundError as _missing:
    if _missing.name not in ("labcommon", "decode_model"):
        raise
    sys.exit(
        f"decode.py: needs {_missing.name}.py in the same folder as this script (copy lab_scripts/"
        f"{_missing.name}.py beside it)"
    )

SCHEMA = 1
PROG = "decode.py"

# Exit codes: 0 done; 2 bad input (one line); labcommon.NO_GPU_EXIT (3) the GPU was asked
# for and torch cannot see one; NO_ROOM_EXIT the weights and the KV cache do not fit.
USAGE_EXIT = 2
NO_ROOM_EXIT = 4

STEP_RANGE = "decode_step"
PREFILL_RANGE = "prefill"
WARMUP_RANGE = "warmup"
CAPTURE_RANGE = "capture"
MODES = ("eager", "graphs")
# CUDA graph capture needs a few eager runs of the step first (cuBLAS workspaces, lazy
# initialisation), done on a side stream as the PyTorch CUDA-graphs notes show.
GRAPH_MIN_WARMUP = 3
# Share of the free memory the run may plan to use; the rest is for the allocator's
# rounding, cuBLAS workspaces and the CUDA graph's own pool bookkeeping.
GPU_FREE_FRACTION = 0.92
CPU_FREE_FRACTION = 0.8

DTYPES = {"bfloat16": 2, "float16": 2, "float32": 4}
DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32"}


# --- input ---


class _Parser(argparse.ArgumentParser):
    """argparse, with every usage error on one line."""

    def error(self, message: str) -> NoReturn:
        fail(message + " (see --help)")


def fail(message: str, code: int = USAGE_EXIT) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def _positive_ints(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, e.g. 1,8,32; got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("no value given")
    if min(values) < 1:
        raise argparse.ArgumentTypeError(f"every value must be at least 1; got {text!r}")
    return list(dict.fromkeys(values))  # in the order given, each once


def _modes(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in MODES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"modes are eager and graphs (comma-separated); got {text!r}")
    return list(dict.fromkeys(names))


def _dtype(text: str) -> str:
    name = DTYPE_ALIASES.get(text.lower(), text.lower())
    if name not in DTYPES:
        raise argparse.ArgumentTypeError(
            f"dtype is one of bfloat16 (bf16), float16 (fp16), float32 (fp32); got {text!r}"
        )
    return name


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = _Parser(
        prog=PROG,
        description=(
            "Greedy decoding with a random-weight decoder-only transformer in the shape of a "
            "real model: prefill a random prompt, then time each decode step inside the NVTX "
            "range decode_step, eager and replayed from a CUDA graph."
        ),
        epilog=(
            "Presets: "
            + ", ".join(
                f"{name} ({s.layers} layers, hidden {s.hidden}, {s.heads}/{s.kv_heads} heads, "
                f"ffn {s.ffn}, vocab {s.vocab}, {'tied' if s.tied else 'untied'})"
                for name, s in PRESETS.items()
            )
            + f". Default: {GPU_DEFAULT_PRESET} on a GPU, {CPU_DEFAULT_PRESET} on a CPU. Exit codes: "
            f"2 bad input, {lab.NO_GPU_EXIT} GPU asked for but not visible, {NO_ROOM_EXIT} the "
            "weights and KV cache do not fit in memory."
        ),
    )
    parser.add_argument(
        "--preset",
        choices=list(PRESETS),
        default=None,
        help="model shape (default: llama-1b on a GPU, tiny on a CPU)",
    )
    shape = parser.add_argument_group("shape (each overrides the preset)")
    shape.add_argument("--layers", type=int, default=None)
    shape.add_argument("--hidden", type=int, default=None)
    shape.add_argument("--heads", type=int, default=None, help="query heads")
    shape.add_argument("--kv-heads", type=int, default=None, help="K/V heads (grouped-query attention)")
    shape.add_argument("--ffn", type=int, default=None, help="MLP inner size")
    shape.add_argument("--vocab", type=int, default=None)
    tie = shape.add_mutually_exclusive_group()
    tie.add_argument(
        "--tied",
        dest="tied",
        action="store_true",
        default=None,
        help="LM head is the embedding matrix",
    )
    tie.add_argument("--untied", dest="tied", action="store_false", help="LM head is a matrix of its own")
    bias = shape.add_mutually_exclusive_group()
    bias.add_argument(
        "--qkv-bias",
        dest="qkv_bias",
        action="store_true",
        default=None,
        help="biases on q, k, v (Qwen2)",
    )
    bias.add_argument("--no-qkv-bias", dest="qkv_bias", action="store_false")
    parser.add_argument("--prompt-len", type=int, default=128, help="prompt tokens, prefilled at once (default 128)")
    parser.add_argument("--tokens", type=int, default=128, help="timed decode steps (default 128)")
    parser.add_argument("--warmup", type=int, default=8, help="untimed decode steps first (default 8)")
    parser.add_argument(
        "--batch",
        type=_positive_ints,
        default=[1],
        metavar="B[,B...]",
        help="batch sizes, each run in turn (default 1)",
    )
    parser.add_argument(
        "--modes",
        type=_modes,
        default=list(MODES),
        metavar="eager,graphs",
        help="eager steps, CUDA-graph replays, or both (default both)",
    )
    parser.add_argument(
        "--dtype",
        type=_dtype,
        default=None,
        help="bfloat16 (default on a GPU), float16, float32 (default on a CPU)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the prompt (default 0)")
    parser.add_argument(
        "--device",
        choices=lab.DEVICE_CHOICES,
        default="auto",
        help=f"auto (default): the GPU if torch sees one, else the CPU; cuda: the GPU or exit {lab.NO_GPU_EXIT}; cpu: "
        "the CPU on purpose",
    )
    parser.add_argument("--json", default=None, metavar="PATH", help="write the results here (atomically)")
    # Pretend at most this many bytes are free: exercises the does-not-fit path anywhere.
    parser.add_argument("--max-bytes", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.prompt_len < 1:
        parser.error("--prompt-len must be at least 1")
    if args.tokens < 1:
        parser.error("--tokens must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must be 0 or more")
    for flag in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    return args


def resolve_shape(preset: str, args: argparse.Namespace) -> tuple[Shape, dict[str, Any]]:
    """The preset's shape with the shape flags applied; the overrides; exits on a shape
    that cannot be built."""
    base = PRESETS[preset]
    overrides = {f: getattr(args, f) for f in SHAPE_FLAGS if getattr(args, f, None) is not None}
    overrides = {f: v for f, v in overrides.items() if getattr(base, f) != v}
    shape = base._replace(**overrides)
    problem = shape_problem(shape)
    if problem:
        fail(
            f"{problem} (preset {preset}"
            + (", with " + ", ".join(f"--{k.replace('_', '-')}" for k in overrides) if overrides else "")
            + ")"
        )
    return shape, overrides


def note(message: str) -> None:
    print("decode: " + message, file=sys.stderr, flush=True)


# --- the model ---


class Weights:
    """The model's tensors, in the layout of torch.nn.functional.linear ([out, in])."""

    def __init__(self, shape: Shape, embedding: Any, layers: list[dict[str, Any]], norm: Any, head: Any) -> None:
        self.shape = shape
        self.embedding = embedding
        self.layers = layers
        self.norm = norm
        self.head = head  # the embedding tensor itself when tied

    def tensors(self) -> list[Any]:
        """Every weight tensor once (a tied LM head is the embedding, counted once)."""
        out: list[Any] = []
        seen: set[int] = set()
        for t in [
            self.embedding,
            *(t for layer in self.layers for t in layer.values()),
            self.norm,
            self.head,
        ]:
            if t is not None and id(t) not in seen:
                seen.add(id(t))
                out.append(t)
        return out

    def params(self) -> int:
        return sum(int(t.numel()) for t in self.tensors())

    def nbytes(self) -> int:
        return sum(int(t.numel()) * int(t.element_size()) for t in self.tensors())


def build_weights(torch: Any, shape: Shape, device: str, dtype: Any, seed: int) -> Weights:
    """Random weights, seeded: linear weights ~ N(0, 1/fan_in), so activations keep about
    unit scale through any depth; norm scales 1; embedding ~ N(0, 0.02^2), small beside
    the layers' outputs (with a larger one a tied model mostly repeats its last token)."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)

    def normal(rows: int, cols: int | None, std: float) -> Any:
        size = (rows,) if cols is None else (rows, cols)
        return torch.empty(size, device=device, dtype=dtype).normal_(0.0, std, generator=gen)

    h, d = shape.hidden, shape.head_dim
    q_out, kv_out = shape.heads * d, shape.kv_heads * d
    embedding = normal(shape.vocab, h, 0.02)
    layers = []
    for _ in range(shape.layers):
        layer = {
            "attn_norm": torch.ones(h, device=device, dtype=dtype),
            "wq": normal(q_out, h, h**-0.5),
            "wk": normal(kv_out, h, h**-0.5),
            "wv": normal(kv_out, h, h**-0.5),
            "wo": normal(h, q_out, q_out**-0.5),
            "mlp_norm": torch.ones(h, device=device, dtype=dtype),
            "w_gate": normal(shape.ffn, h, h**-0.5),
            "w_up": normal(shape.ffn, h, h**-0.5),
            "w_down": normal(h, shape.ffn, shape.ffn**-0.5),
        }
        if shape.qkv_bias:
            layer["bq"] = normal(q_out, None, 0.1)
            layer["bk"] = normal(kv_out, None, 0.1)
            layer["bv"] = normal(kv_out, None, 0.1)
        layers.append(layer)
    norm = torch.ones(h, device=device, dtype=dtype)
    head = embedding if shape.tied else normal(shape.vocab, h, h**-0.5)
    return Weights(shape, embedding, layers, norm, head)


class State:
    """What one (mode, batch) run decodes into: the token sequence, the KV cache and the
    current position, all device tensors of fixed shape (a CUDA graph replays on them)."""

    def __init__(self, torch: Any, weights: Weights, prompt: Any, cache_len: int) -> None:
        shape = weights.shape
        device, dtype = weights.embedding.device, weights.embedding.dtype
        batch, prompt_len = prompt.shape
        self.batch = int(batch)
        self.prompt_len = int(prompt_len)
        self.cache_len = cache_len
        # seq[:, p] is the token at position p; a step at position p reads seq[:, p] and
        # writes its prediction to seq[:, p + 1]
        self.seq = torch.zeros(self.batch, cache_len + 1, dtype=torch.long, device=device)
        self.seq[:, : self.prompt_len] = prompt.to(device)
        cache = (shape.layers, self.batch, shape.kv_heads, cache_len, shape.head_dim)
        self.k = torch.zeros(cache, dtype=dtype, device=device)
        self.v = torch.zeros(cache, dtype=dtype, device=device)
        self.pos = torch.zeros(1, dtype=torch.long, device=device)
        self.positions = torch.arange(cache_len, device=device)
        # rotary tables for every cache position: angle = position x theta^(-2i / head_dim)
        d = shape.head_dim
        inv_freq = 1.0 / (shape.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float64, device=device) / d))
        angles = torch.outer(self.positions.to(torch.float64), inv_freq)
        self.cos = angles.cos().to(dtype)
        self.sin = angles.sin().to(dtype)
        self.logits: Any = None

    def kv_bytes(self) -> int:
        return 2 * int(self.k.numel()) * int(self.k.element_size())

    def reset(self) -> None:
        """Back to the first decode position (the prefill's prediction is kept)."""
        self.pos.fill_(self.prompt_len)


def _rms_norm(torch: Any, x: Any, scale: Any, eps: float) -> Any:
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return xf.to(x.dtype) * scale


def _rope(torch: Any, x: Any, cos: Any, sin: Any) -> Any:
    """Rotate the two halves of each head's vector (the rotate-half layout)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def forward(torch: Any, w: Weights, state: State, tokens: Any, positions: Any) -> Any:
    """Run `tokens` [batch, S] at `positions` [S] (a device tensor), writing their K and V
    into the cache; return the logits of the last position [batch, vocab].

    Attention: each group of heads / kv_heads query heads multiplies its one K/V head in
    place (no copy of the cache per query head), over the whole cache with positions after
    each query masked."""
    import torch.nn.functional as F

    shape = w.shape
    b, s = tokens.shape
    d, g, kvh = shape.head_dim, shape.group, shape.kv_heads
    x = F.embedding(tokens, w.embedding)  # [b, s, hidden]
    cos = state.cos.index_select(0, positions).view(1, s, 1, d // 2)
    sin = state.sin.index_select(0, positions).view(1, s, 1, d // 2)
    hide = state.positions.view(1, -1) > positions.view(-1, 1)  # [s, cache_len]
    if s > 1:  # rows of the grouped queries are ordered (head in group, position)
        hide = hide.repeat(g, 1)
    scale = d**-0.5
    for i, layer in enumerate(w.layers):
        h = _rms_norm(torch, x, layer["attn_norm"], shape.norm_eps)
        q = F.linear(h, layer["wq"], layer.get("bq")).view(b, s, shape.heads, d)
        k = F.linear(h, layer["wk"], layer.get("bk")).view(b, s, kvh, d)
        v = F.linear(h, layer["wv"], layer.get("bv")).view(b, s, kvh, d)
        q = _rope(torch, q, cos, sin) * scale
        k = _rope(torch, k, cos, sin)
        state.k[i].index_copy_(2, positions, k.transpose(1, 2))
        state.v[i].index_copy_(2, positions, v.transpose(1, 2))
        q = q.view(b, s, kvh, g, d).permute(0, 2, 3, 1, 4).reshape(b, kvh, g * s, d)
        scores = torch.matmul(q, state.k[i].transpose(-1, -2))  # [b, kvh, g*s, cache_len]
        scores.masked_fill_(hide, float("-inf"))
        probs = torch.softmax(scores.float(), dim=-1).to(x.dtype)
        out = torch.matmul(probs, state.v[i])  # [b, kvh, g*s, d]
        out = out.view(b, kvh, g, s, d).permute(0, 3, 1, 2, 4).reshape(b, s, shape.heads * d)
        x = x + F.linear(out, layer["wo"])
        h = _rms_norm(torch, x, layer["mlp_norm"], shape.norm_eps)
        x = x + F.linear(F.silu(F.linear(h, layer["w_gate"])) * F.linear(h, layer["w_up"]), layer["w_down"])
    last = _rms_norm(torch, x[:, -1, :], w.norm, shape.norm_eps)
    return F.linear(last, w.head)


def prefill(torch: Any, w: Weights, state: State, chunk: int | None = None) -> None:
    """Fill the cache with the prompt, in chunks of `chunk` positions, and write the first
    predicted token after it; leaves the state at the first decode position."""
    p = state.prompt_len
    if chunk is None:
        chunk = prefill_chunk(w.shape, state.batch, state.cache_len, state.k.element_size())[0]
    logits = None
    for start in range(0, p, chunk):
        stop = min(p, start + chunk)
        logits = forward(torch, w, state, state.seq[:, start:stop], state.positions[start:stop])
    assert logits is not None
    state.seq[:, p] = logits.argmax(dim=-1)
    state.logits = logits
    state.reset()


def decode_step(torch: Any, w: Weights, state: State) -> None:
    """One greedy step at state.pos, entirely on the device (no host sync, so a CUDA graph
    can capture it): read the token at pos, predict the next, write it at pos + 1, pos += 1."""
    tokens = state.seq.index_select(1, state.pos)  # [batch, 1]
    logits = forward(torch, w, state, tokens, state.pos)
    state.seq.index_copy_(1, state.pos + 1, logits.argmax(dim=-1, keepdim=True))
    state.pos.add_(1)
    state.logits = logits


def make_prompt(torch: Any, vocab: int, batch: int, prompt_len: int, seed: int) -> Any:
    """Random token ids from the seed alone (on the CPU, so every device gets the same
    prompt; row 0 is the same for every batch size)."""
    gen = torch.Generator()
    gen.manual_seed(seed)
    return torch.randint(vocab, (batch, prompt_len), generator=gen)


# --- measuring ---


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: the smallest value with at least q of the values at or below it."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def time_steps(torch: Any, cuda: bool, steps: int, step: Callable[[], None]) -> list[float]:
    """Seconds of each step, each inside its decode_step range. On a GPU a CUDA event pair
    per step, read after one synchronize at the end (a sync per step would hide the CPU
    running ahead of the GPU); on a CPU perf_counter, torch's CPU ops being synchronous."""
    if cuda:
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(steps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(steps)]
        for t in range(steps):
            with lab.labelled_range(torch, STEP_RANGE, cuda):
                starts[t].record()
                step()
                ends[t].record()
        torch.cuda.synchronize()
        return [float(starts[t].elapsed_time(ends[t])) / 1e3 for t in range(steps)]
    out = []
    for _ in range(steps):
        with lab.labelled_range(torch, STEP_RANGE, cuda):
            t0 = time.perf_counter()
            step()
            out.append(time.perf_counter() - t0)
    return out


def run_warmup(state: State, steps: int, tokens: int, step: Callable[[], None]) -> None:
    """`steps` untimed steps from the first decode position, starting over every `tokens`
    steps so that they stay inside the cache; their K/V and tokens are overwritten by the
    timed steps before anything reads them (positions after the current one are masked)."""
    for i in range(steps):
        if i and i % tokens == 0:
            state.reset()
        step()
    state.reset()


def run_mode(
    torch: Any,
    mode: str,
    w: Weights,
    batch: int,
    args: argparse.Namespace,
    cuda: bool,
    batch_range: str | None,
) -> dict[str, Any]:
    """Prefill, warm up and time `args.tokens` steps of one mode at one batch size."""
    es = int(w.embedding.element_size())
    shape = w.shape
    cache_len = args.prompt_len + args.tokens
    state = State(torch, w, make_prompt(torch, shape.vocab, batch, args.prompt_len, args.seed), cache_len)
    timer = time.perf_counter
    with contextlib.ExitStack() as ranges:
        if batch_range:
            ranges.enter_context(lab.labelled_range(torch, batch_range, cuda))
        with lab.labelled_range(torch, PREFILL_RANGE, cuda):
            if cuda:
                torch.cuda.synchronize()
            t0 = timer()
            prefill(torch, w, state)
            if cuda:
                torch.cuda.synchronize()
            prefill_s = timer() - t0

        def eager() -> None:
            decode_step(torch, w, state)

        step = eager
        capture_s = None
        warmup_steps, warmup_replays = args.warmup, 0
        if mode == "graphs":
            # The PyTorch CUDA-graphs recipe: warm up on a side stream, capture one step
            # into the graph, then replay it on the same static tensors. The capture uses
            # the warm-up's stream, so the BLAS handles and workspaces the step needs exist
            # on that stream before capture (creating them inside a capture is unsafe).
            warmup_steps = max(args.warmup, GRAPH_MIN_WARMUP)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with lab.labelled_range(torch, WARMUP_RANGE, cuda), torch.cuda.stream(side):
                run_warmup(state, warmup_steps, args.tokens, eager)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with lab.labelled_range(torch, CAPTURE_RANGE, cuda):
                torch.cuda.synchronize()
                t0 = timer()
                with torch.cuda.graph(graph, stream=side):
                    decode_step(torch, w, state)  # recorded, not run: the state is unchanged
                torch.cuda.synchronize()
                capture_s = timer() - t0

            def replay() -> None:
                graph.replay()

            step = replay
            # --warmup replays of the graph itself too (the first replay uploads it)
            warmup_replays = args.warmup
            with lab.labelled_range(torch, WARMUP_RANGE, cuda):
                run_warmup(state, warmup_replays, args.tokens, step)
        else:
            with lab.labelled_range(torch, WARMUP_RANGE, cuda):
                run_warmup(state, warmup_steps, args.tokens, step)
        if cuda:
            torch.cuda.synchronize()
        step_seconds = time_steps(torch, cuda, args.tokens, step)
    generated = [int(t) for t in state.seq[0, args.prompt_len : cache_len + 1].tolist()]
    median = statistics.median(step_seconds)
    kv_step = kv_cache_bytes_per_step(shape, batch, args.prompt_len, args.tokens, es)
    weight_bytes = w.nbytes()
    # an untied embedding table is not read by a step, only its batch rows (a lookup)
    weight_step = weight_bytes if shape.tied else weight_bytes - (shape.vocab - batch) * shape.hidden * es
    floor = weight_step + kv_step
    flops = flops_per_step(shape, batch, args.prompt_len, args.tokens)
    entry = {
        "mode": mode,
        "batch": batch,
        "steps": args.tokens,
        "warmup_steps": warmup_steps,
        "warmup_replays": warmup_replays,
        "timer": "cuda_events" if cuda else "perf_counter",
        "step_seconds": step_seconds,
        "median_step_s": median,
        "p90_step_s": percentile(step_seconds, 0.9),
        "mean_step_s": statistics.fmean(step_seconds),
        "tokens_per_s": batch / median,
        "prefill_s": prefill_s,
        "prefill_tokens": batch * args.prompt_len,
        "graph_capture_s": capture_s,
        "cache_len": cache_len,
        "context": {
            "first": args.prompt_len + 1,
            "last": args.prompt_len + args.tokens,
            "mean": context_sum(args.prompt_len, args.tokens) / 2,
        },
        "kv_cache_bytes_per_step": kv_step,
        "kv_cache_bytes_read_per_step": state.kv_bytes(),
        "kv_cache_bytes_allocated": state.kv_bytes(),
        "weight_bytes_per_step": weight_step,
        "bytes_per_step_floor": floor,
        "flops_per_step": flops,
        "attention_flops_per_step": attention_flops_per_step(shape, batch, args.prompt_len, args.tokens),
        "floor_bytes_per_s": floor / median,
        "flops_per_s": flops / median,
        "generated_row0": generated,
        "ranges": {
            "step": STEP_RANGE,
            "prefill": PREFILL_RANGE,
            "mode": "mode:" + mode,
            "batch": batch_range,
            "warmup": WARMUP_RANGE,
            "capture": CAPTURE_RANGE if mode == "graphs" else None,
        },
    }
    return entry


def check_room(torch: Any, cuda: bool, plan: dict[str, int], label: str, max_bytes: int | None) -> None:
    """Exit NO_ROOM_EXIT with one line when the plan does not fit in free memory."""
    if cuda:
        free, _total = torch.cuda.mem_get_info()
        budget: int | None = int(free * GPU_FREE_FRACTION)
        how = f"{GPU_FREE_FRACTION:.0%} of the GPU's free memory"
    else:
        available = lab.cpu_memory_available()
        budget = None if available is None else int(available * CPU_FREE_FRACTION)
        how = f"{CPU_FREE_FRACTION:.0%} of available RAM"
    if max_bytes is not None and (budget is None or max_bytes < budget):
        budget, how = max_bytes, "--max-bytes"
    need = sum(plan.values())
    if budget is not None and need > budget:
        fail(
            f"{label} needs about {lab.format_bytes(need)} (weights {lab.format_bytes(plan['weights'])}, "
            f"KV cache {lab.format_bytes(plan['kv_cache'])}, work space {lab.format_bytes(plan['work'])}) "
            f"but only {lab.format_bytes(budget)} may be used ({how}); use a smaller --batch, "
            "--prompt-len or --tokens, or a smaller preset",
            NO_ROOM_EXIT,
        )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole experiment; returns the JSON document."""
    # The shape is checked before torch is imported: bad input fails fast.
    if args.preset is not None:
        resolve_shape(args.preset, args)
    import torch

    device = lab.pick_device(torch, args.device, PROG)
    cuda = device == "cuda"
    notes: list[str] = []

    def say(message: str) -> None:
        note(message)
        notes.append(message)

    preset = args.preset or (GPU_DEFAULT_PRESET if cuda else CPU_DEFAULT_PRESET)
    shape, overrides = resolve_shape(preset, args)
    if args.preset is None and not cuda:
        say(f"no GPU: the {preset} preset on the CPU (GPU default: {GPU_DEFAULT_PRESET}); pass --preset to change")
    dtype_name = args.dtype or ("bfloat16" if cuda else "float32")
    if args.dtype is None and not cuda:
        say("no GPU: float32 (bf16/fp16 matmuls are slow on CPUs)")
    es = DTYPES[dtype_name]
    modes = list(args.modes)
    if not cuda and "graphs" in modes:
        modes.remove("graphs")
        say("graphs mode skipped: CUDA graphs need a GPU (this run is on the CPU)")
        if not modes:
            fail("--modes graphs needs a GPU (CUDA graphs); add eager to run on the CPU")
    label = preset + (" (with " + ", ".join(f"{k}={v}" for k, v in overrides.items()) + ")" if overrides else "")
    check_room(
        torch,
        cuda,
        memory_plan(shape, args.batch, args.prompt_len, args.tokens, es),
        f"{label} in {dtype_name} at batch {max(args.batch)}",
        args.max_bytes,
    )

    info = lab.describe_device(torch, device)
    dtype = getattr(torch, dtype_name)
    entries: list[dict[str, Any]] = []
    with torch.no_grad():
        try:
            weights = build_weights(torch, shape, device, dtype, args.seed)
        except RuntimeError as e:  # torch.cuda.OutOfMemoryError is a RuntimeError
            fail(f"allocating the weights of {label} failed: {str(e).splitlines()[0]}", NO_ROOM_EXIT)
        note(
            f"{info['name']} ({device}), {label}: {format_count(weights.params())} params, "
            f"{lab.format_bytes(weights.nbytes())} of weights in {dtype_name}; prompt {args.prompt_len}, "
            f"{args.warmup} warm-up + {args.tokens} timed steps"
        )
        several = len(args.batch) > 1
        for mode in modes:
            with lab.labelled_range(torch, "mode:" + mode, cuda):
                for batch in args.batch:
                    try:
                        entry = run_mode(
                            torch,
                            mode,
                            weights,
                            batch,
                            args,
                            cuda,
                            f"batch:{batch}" if several else None,
                        )
                    except RuntimeError as e:
                        if "out of memory" not in str(e):
                            raise
                        fail(
                            f"{mode} at batch {batch} ran out of memory: {str(e).splitlines()[0]}",
                            NO_ROOM_EXIT,
                        )
                    entries.append(entry)
                    if cuda:  # this run's cache and graph pool are gone: give them back
                        torch.cuda.empty_cache()
                    note(
                        f"{mode:<6} batch {batch:>3}: {entry['median_step_s'] * 1e3:8.3f} ms/step median "
                        f"(p90 {entry['p90_step_s'] * 1e3:.3f}), {entry['tokens_per_s']:10.1f} tokens/s, "
                        f"floor {entry['bytes_per_step_floor'] / 1e9:.3f} GB/step = "
                        f"{entry['floor_bytes_per_s'] / 1e9:.1f} GB/s"
                    )
    model = {"preset": preset, "overrides": overrides, **shape._asdict()}
    model.update(
        {
            "head_dim": shape.head_dim,
            "params": weights.params(),
            "params_formula": count_params(shape),
            "matmul_params": matmul_params(shape),
            "weight_bytes": weights.nbytes(),
            "dtype": dtype_name,
            "element_size": es,
        }
    )
    return {
        "kind": "decode",
        "schema": SCHEMA,
        "device": info,
        "model": model,
        "prompt_len": args.prompt_len,
        "tokens": args.tokens,
        "warmup": args.warmup,
        "batches": list(args.batch),
        "seed": args.seed,
        "modes": entries,
        "formulas": FORMULAS,
        "notes": notes,
    }


def summary_lines(document: dict[str, Any]) -> list[str]:
    lines = ["mode    batch  median ms    p90 ms      tokens/s  floor GB/s  TFLOP/s"]
    for e in document["modes"]:
        lines.append(
            f"{e['mode']:<6} {e['batch']:>6} {e['median_step_s'] * 1e3:10.3f} {e['p90_step_s'] * 1e3:9.3f} "
            f"{e['tokens_per_s']:13.1f} {e['floor_bytes_per_s'] / 1e9:11.1f} {e['flops_per_s'] / 1e12:8.3f}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    document = run(args)
    for line in summary_lines(document):
        print(line, flush=True)
    if args.json:
        lab.write_json_atomic(args.json, document)
        note("wrote " + args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
