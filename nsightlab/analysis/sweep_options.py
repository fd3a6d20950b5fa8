"""What the sweep script accepts: its dtypes (and what people type for them), the type
`--compare` runs beside a stored one, its default calls and the range of `--sizes`."""

from __future__ import annotations

#: Element sizes of the dtypes the sweep script accepts.
DTYPES: dict[str, int] = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
DEFAULT_DTYPE = "float16"  # on a GPU; the script's own default on a CPU is float32
#: What people type for them (PyTorch's own short names and the usual abbreviations).
DTYPE_ALIASES: dict[str, str] = {
    "fp16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "float": "float32",
    "fp64": "float64",
    "double": "float64",
}
DEFAULT_ITERS = 50
DEFAULT_WARMUP = 5
#: The range `--sizes` accepts (log2 of the element count): 1 Ki to 16 Gi elements.
SIZE_MIN_LOG2 = 10
SIZE_MAX_LOG2 = 34


def canonical_dtype(name: str) -> str | None:
    """The canonical name (a key of DTYPES) for a dtype or one of its aliases, else None.
    A `torch.` prefix and letter case are ignored: `fp16`, `half`, `torch.float16` are
    all float16."""
    key = name.strip().lower().removeprefix("torch.")
    if key in DTYPES:
        return key
    return DTYPE_ALIASES.get(key)


def dtype_choices() -> str:
    """The accepted names, each canonical one with its aliases: for help and errors."""
    parts = []
    for canonical in DTYPES:
        aliases = [a for a, c in DTYPE_ALIASES.items() if c == canonical]
        parts.append(f"{canonical} ({', '.join(aliases)})" if aliases else canonical)
    return ", ".join(parts)


#: What `--compare` runs when no --dtype is given: the type with the other element size.
COUNTERPART_DTYPE: dict[str, str] = {
    "float16": "float32",
    "bfloat16": "float32",
    "float32": "float16",
    "float64": "float32",
}
#: The same on a CPU, where 16-bit floats are converted element by element (not a
#: bandwidth test): float32's counterpart there is float64.
CPU_COUNTERPART_DTYPE: dict[str, str] = {**COUNTERPART_DTYPE, "float32": "float64"}


def counterpart_dtype(dtype: str, device_type: str) -> str:
    """The type `--compare` runs beside a stored run of `dtype` on `device_type`."""
    table = CPU_COUNTERPART_DTYPE if device_type == "cpu" else COUNTERPART_DTYPE
    return table.get(dtype, DEFAULT_DTYPE)
