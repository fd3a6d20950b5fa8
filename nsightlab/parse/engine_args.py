"""A serving container's command line, read for its engine and the flags that size it.

vLLM (`vllm serve MODEL ...`, `python -m vllm.entrypoints.openai.api_server ...`) takes
`--flag value` and `--flag=value`; the flags read here are the ones that set what a GPU
holds: `--gpu-memory-utilization`, `--kv-cache-memory-bytes` (older `--kv-cache-memory`),
`--max-model-len`, `--max-num-seqs`, `--tensor-parallel-size` (`-tp`), `--block-size`,
`--enforce-eager`, and the model. Triton (`tritonserver`) keeps its vLLM engine's settings
in the model repository's `model.json`, not on the command line. Pure; no I/O.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Sequence

from pydantic import Field

from nsightlab.models import Model

_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30}
_BYTES = re.compile(r"^(\d+(?:\.\d+)?)([kmgt]i?)?b?$", re.I)
_VALUE_FLAGS = {
    "--gpu-memory-utilization": "gpu_memory_utilization",
    "--kv-cache-memory-bytes": "kv_cache_memory_bytes",
    "--kv-cache-memory": "kv_cache_memory_bytes",
    "--max-model-len": "max_model_len",
    "--max-num-seqs": "max_num_seqs",
    "--tensor-parallel-size": "tensor_parallel_size",
    "-tp": "tensor_parallel_size",
    "--block-size": "block_size",
    "--model": "model",
    "--kv-cache-dtype": "kv_cache_dtype",
}


class EngineFlags(Model):
    """What the command line says (None: not given, the engine's default applies)."""

    engine: str  # vllm, triton, sglang, or unknown
    model: str | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes: int | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    tensor_parallel_size: int | None = None
    block_size: int | None = None
    kv_cache_dtype: str | None = None
    enforce_eager: bool = False
    problems: list[str] = Field(default_factory=list)  # values that could not be read


def _bytes(text: str) -> int | None:
    m = _BYTES.match(text.strip())
    if m is None:
        return None
    return int(float(m.group(1)) * _SUFFIX[(m.group(2) or "").lower()])


def engine_of(argv: Sequence[str]) -> str:
    """vllm, triton, sglang or unknown, from the program and its first arguments."""
    head = " ".join(argv[:4]).lower()
    if "tritonserver" in head:
        return "triton"
    if "sglang" in head:
        return "sglang"
    if "vllm" in head:
        return "vllm"
    return "unknown"


def _flatten(argv: Sequence[str]) -> list[str]:
    """`sh -c "vllm serve ..."` is read as the command it runs."""
    out: list[str] = []
    for i, a in enumerate(argv):
        if i > 0 and argv[i - 1] == "-c" and " " in a:
            try:
                out.extend(shlex.split(a))
            except ValueError:
                out.append(a)
        else:
            out.append(a)
    return out


def read_flags(command: Sequence[str], args: Sequence[str]) -> EngineFlags:
    """The engine and its sizing flags from a container's `command` and `args`."""
    argv = _flatten([*command, *args])
    flags = EngineFlags(engine=engine_of(argv))
    values: dict[str, str] = {}
    positional: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        name, eq, val = a.partition("=")
        key = name.replace("_", "-") if name.startswith("--") else name
        if key in _VALUE_FLAGS:
            if eq:
                values[_VALUE_FLAGS[key]] = val
            elif i + 1 < len(argv):
                values[_VALUE_FLAGS[key]] = argv[i + 1]
                i += 1
        elif key == "--enforce-eager":
            flags.enforce_eager = val.lower() not in ("false", "0") if eq else True
        elif not a.startswith("-"):
            positional.append(a)
        i += 1
    if "serve" in positional:
        after = positional[positional.index("serve") + 1 :]
        if after and "model" not in values:
            values["model"] = after[0]
    for field, text in values.items():
        _set(flags, field, text)
    return flags


def _set(flags: EngineFlags, field: str, text: str) -> None:
    if field in ("model", "kv_cache_dtype"):
        setattr(flags, field, text)
        return
    try:
        if field == "gpu_memory_utilization":
            u = float(text)
            if not (math.isfinite(u) and 0 < u <= 1):
                raise ValueError
            flags.gpu_memory_utilization = u
        elif field == "kv_cache_memory_bytes":
            n = _bytes(text)
            if n is None or n <= 0:
                raise ValueError
            flags.kv_cache_memory_bytes = n
        else:
            n = int(text)
            if n < 1:
                raise ValueError
            setattr(flags, field, n)
    except ValueError:
        flags.problems.append(f"--{field.replace('_', '-')} {text!r} is not a value the engine takes")
