"""The arithmetic of decode.py's model, from its shape alone (nothing allocated, no
torch): the shapes of public models, the parameters, the bytes of the KV cache a step
reads, the FLOPs of a step, and what a run will hold in memory at its peak.

decode.py and colocate.py import it from their own folder (it travels beside them, as
labcommon.py does). Standard library only; Python 3.8 or later.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

# Prefill is split into chunks of query positions so that its attention scores and
# activations stay within this many bytes, whatever the prompt length and batch.
PREFILL_CHUNK_BYTES = 512 << 20


class Shape(NamedTuple):
    """The shape of a decoder-only transformer (what a model's config.json says)."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    tied: bool
    qkv_bias: bool = False
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def group(self) -> int:
        """Query heads per K/V head."""
        return self.heads // self.kv_heads


# The shapes of public models, from each model's config.json on the Hugging Face hub
# (hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
# intermediate_size, vocab_size, tie_word_embeddings, rope_theta, rms_norm_eps):
#   llama-1b  meta-llama/Llama-3.2-1B   2048, 16, 32, 8,  8192, 128256, true,  500000, 1e-5
#   llama-3b  meta-llama/Llama-3.2-3B   3072, 28, 24, 8,  8192, 128256, true,  500000, 1e-5
#   llama-8b  meta-llama/Llama-3.1-8B   4096, 32, 32, 8, 14336, 128256, false, 500000, 1e-5
#   qwen-0.5b Qwen/Qwen2.5-0.5B          896, 24, 14, 2,  4864, 151936, true, 1000000, 1e-6
# Qwen2 has biases on the q, k and v projections (its model card: "Attention QKV bias";
# 0.49 B parameters, 0.36 B without the embedding), Llama has none ("attention_bias": false).
PRESETS: dict[str, Shape] = {
    # small enough for a CPU and for tests: a step takes about a millisecond
    "tiny": Shape(layers=4, hidden=64, heads=4, kv_heads=2, ffn=176, vocab=512, tied=True),
    "llama-1b": Shape(16, 2048, 32, 8, 8192, 128256, True, False, 500000.0, 1e-5),
    "llama-3b": Shape(28, 3072, 24, 8, 8192, 128256, True, False, 500000.0, 1e-5),
    "llama-8b": Shape(32, 4096, 32, 8, 14336, 128256, False, False, 500000.0, 1e-5),
    "qwen-0.5b": Shape(24, 896, 14, 2, 4864, 151936, True, True, 1000000.0, 1e-6),
}
GPU_DEFAULT_PRESET = "llama-1b"
CPU_DEFAULT_PRESET = "tiny"
SHAPE_FLAGS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "tied", "qkv_bias")


def layer_params(shape: Shape) -> int:
    """Weights of one transformer layer: attention, MLP, the two RMSNorm scales."""
    d = shape.head_dim
    attention = shape.hidden * (shape.heads + 2 * shape.kv_heads) * d + shape.heads * d * shape.hidden
    bias = (shape.heads + 2 * shape.kv_heads) * d if shape.qkv_bias else 0
    mlp = 3 * shape.hidden * shape.ffn
    return attention + bias + mlp + 2 * shape.hidden


def count_params(shape: Shape) -> int:
    """Every weight once: embedding, layers, final norm, and the LM head unless tied."""
    embedding = shape.vocab * shape.hidden
    head = 0 if shape.tied else shape.vocab * shape.hidden
    return embedding + shape.layers * layer_params(shape) + shape.hidden + head


def matmul_params(shape: Shape) -> int:
    """The weights a decode step multiplies each token by: every projection in every layer
    and the LM head. Left out: the embedding table when untied (a lookup, no arithmetic),
    the norm scales and biases (elementwise)."""
    d = shape.head_dim
    per_layer = (
        shape.hidden * (shape.heads + 2 * shape.kv_heads) * d
        + shape.heads * d * shape.hidden
        + 3 * shape.hidden * shape.ffn
    )
    return shape.layers * per_layer + shape.vocab * shape.hidden


def context_sum(prompt_len: int, tokens: int) -> int:
    """Twice the mean number of positions attended per timed step.

    Timed step t (0-based) runs at position prompt_len + t and attends positions
    0 .. prompt_len + t, i.e. prompt_len + t + 1 of them; the mean over the steps is
    prompt_len + (tokens + 1) / 2, and twice that is an integer."""
    return 2 * prompt_len + tokens + 1


def kv_cache_bytes_per_step(shape: Shape, batch: int, prompt_len: int, tokens: int, element_size: int) -> int:
    """Bytes of K and V attention needs in one decode step, averaged over the timed steps:
    2 (K and V) x layers x batch x kv_heads x head_dim x mean context x element size, the
    mean context being prompt_len + (tokens + 1) / 2 (see context_sum)."""
    per_position = shape.layers * batch * shape.kv_heads * shape.head_dim * element_size
    return per_position * context_sum(prompt_len, tokens)  # 2 x mean context = context_sum


def kv_cache_bytes(shape: Shape, batch: int, positions: int, element_size: int) -> int:
    """Bytes of a K and V cache holding `positions` positions (2 x layers x batch x
    kv_heads x positions x head_dim x element size)."""
    return 2 * shape.layers * batch * shape.kv_heads * positions * shape.head_dim * element_size


def attention_flops_per_step(shape: Shape, batch: int, prompt_len: int, tokens: int) -> int:
    """4 x layers x batch x heads x head_dim x mean context: per query head and attended
    position, 2 x head_dim for q.k and 2 x head_dim for the weighted sum of v."""
    return 2 * shape.layers * batch * shape.heads * shape.head_dim * context_sum(prompt_len, tokens)


def flops_per_step(shape: Shape, batch: int, prompt_len: int, tokens: int) -> int:
    """2 x matmul_params x batch (one multiply and one add per weight and token) plus the
    attention FLOPs over the live context. Elementwise work (norms, rope, silu, softmax,
    residual adds, biases) is left out."""
    return 2 * matmul_params(shape) * batch + attention_flops_per_step(shape, batch, prompt_len, tokens)


def prefill_chunk(
    shape: Shape, batch: int, cache_len: int, element_size: int, budget: int = PREFILL_CHUNK_BYTES
) -> tuple[int, int]:
    """(query positions per prefill chunk, estimated bytes of one chunk's work space)."""
    es = element_size
    # per query position: scores in the dtype, their float32 softmax and the cast back,
    # plus the activations of a layer (norm output, q/k/v, attention output, MLP)
    scores = shape.heads * cache_len * (2 * es + 4)
    acts = (6 * shape.hidden + 3 * shape.ffn + (shape.heads + 2 * shape.kv_heads) * shape.head_dim) * es
    per_position = batch * (scores + acts)
    return max(1, budget // per_position), per_position


def memory_plan(
    shape: Shape, batches: Sequence[int], prompt_len: int, tokens: int, element_size: int
) -> dict[str, int]:
    """Bytes the run will hold at its peak: the weights, and for the largest batch its KV
    cache, token buffer, prefill work space and a decode step's work space (which a CUDA
    graph keeps in its own pool)."""
    es = element_size
    cache_len = prompt_len + tokens
    batch = max(batches)
    chunk, per_position = prefill_chunk(shape, batch, cache_len, es)
    prefill = min(chunk, prompt_len) * per_position + batch * shape.vocab * (es + 4)
    step = per_position + batch * shape.vocab * (es + 4)
    kv = kv_cache_bytes(shape, batch, cache_len, es)
    return {
        "weights": count_params(shape) * es,
        "kv_cache": kv,
        "work": prefill + 2 * step + batch * (cache_len + 1) * 8,
    }


def shape_problem(shape: Shape) -> str | None:
    """Why a shape cannot be built, or None."""
    if shape.hidden % shape.heads:
        return f"hidden {shape.hidden} is not divisible by heads {shape.heads}"
    if shape.heads % shape.kv_heads:
        return f"heads {shape.heads} is not divisible by kv heads {shape.kv_heads}"
    if shape.head_dim % 2:
        return f"head dim {shape.head_dim} (hidden / heads) must be even for rotary embeddings"
    return None


def format_count(n: int) -> str:
    """A parameter count the way model cards give it (0.49 B, 1.24 B, 218 k)."""
    if n >= 10**8:
        return f"{n / 1e9:.2f} B"
    if n >= 10**5:
        return f"{n / 1e6:.1f} M"
    return f"{n / 1e3:.0f} k"


FORMULAS = {
    "params": "embedding vocab*hidden + layers*(hidden*(heads+2*kv_heads)*head_dim + heads*head_dim*hidden "
    "+ 3*hidden*ffn + 2*hidden [+ (heads+2*kv_heads)*head_dim q/k/v biases]) + hidden [+ vocab*hidden untied LM head]",
    "context": "timed step t (0-based) attends positions 0..prompt_len+t: prompt_len+t+1 of them; "
    "mean over the steps prompt_len+(tokens+1)/2",
    "kv_cache_bytes_per_step": "2 * layers * batch * kv_heads * head_dim * mean context * element_size "
    "(K and V of the live context, read once by attention)",
    "kv_cache_bytes_read_per_step": "2 * layers * batch * kv_heads * head_dim * (prompt_len+tokens) * element_size "
    "(this implementation reads the whole cache, later positions masked)",
    "weight_bytes_per_step": "weight_bytes; untied: less the embedding table but for its batch rows",
    "bytes_per_step_floor": "weight_bytes_per_step + kv_cache_bytes_per_step (writes and activations left out)",
    "flops_per_step": "2 * batch * (layers*(hidden*(heads+2*kv_heads)*head_dim + heads*head_dim*hidden + 3*hidden*ffn) "
    "+ vocab*hidden) + 4 * layers * batch * heads * head_dim * mean context (matrix multiplies only)",
    "tokens_per_s": "batch / median_step_s",
    "p90_step_s": "nearest rank: the smallest step time with at least 90% of the steps at or below it",
}
