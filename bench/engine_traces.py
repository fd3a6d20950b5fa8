#!/usr/bin/env python3
"""The serving-engine traces of tests/data/traces/SOURCES.md, taken from a clone of
AMD-AGI/TraceLens at the commit SOURCES.md names, checked and copied under the names the
tests use; every file checked for credentials (tokens, keys, environment dumps) first.

    git clone https://github.com/AMD-AGI/TraceLens /tmp/TraceLens
    python bench/engine_traces.py /tmp/TraceLens tests/data/traces/engines

A file whose SHA-256 differs from the one recorded here, or that holds anything that
looks like a credential, is not copied (exit 1, naming it).
"""

from __future__ import annotations

import gzip
import hashlib
import re
import subprocess
import sys
from pathlib import Path

COMMIT = "171dd74721ca1ec45709e5805b68ae1f65e27811"
# name here: (path in TraceLens, SHA-256 prefix of the file as committed there)
FILES = {
    "tracelens_sglang_qwen3-8b_decode_mi300x.json.gz": (
        "tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
        "6bafad1e64aa49e7",
    ),
    "tracelens_sglang_qwen3-8b_extend_mi300x.json.gz": (
        "tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
        "ca3c1a8452be14f8",
    ),
    "tracelens_vllm_decode_fullgraph_mi300x.json.gz": (
        "tests/traces/inference/vllm_decode_full/graph_execution.json.gz",
        "da0a9ffe51da7b5c",
    ),
    "tracelens_vllm_mixed_piecewise_mi300x.json.gz": (
        "tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
        "4eff6c90583855d6",
    ),
    "tracelens_vllm_eager_prefill_b200.json.gz": ("tests/traces/b200/eager_trace.json.gz", "7f5e9c9dc4ba7137"),
}
# What a credential in a trace looks like: a Hugging Face token, an Authorization
# header, a key or a secret by name, a GitHub token, an environment dump.
SUSPECT = re.compile(
    rb"hf_[A-Za-z0-9]{20,}|authorization|api[_-]?key|secret_?key|password|ghp_[A-Za-z0-9]{20,}|"
    rb'"env"\s*:|aws_(?:access|secret)|BEGIN [A-Z ]*PRIVATE KEY',
    re.IGNORECASE,
)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    clone, dest = Path(argv[0]), Path(argv[1])
    dest.mkdir(parents=True, exist_ok=True)
    bad = 0
    for name, (path, digest) in FILES.items():
        data = subprocess.run(
            ["git", "-C", str(clone), "show", f"{COMMIT}:{path}"], capture_output=True, check=True
        ).stdout
        got = hashlib.sha256(data).hexdigest()[:16]
        if got != digest:
            print(f"{name}: {path} has SHA-256 {got}..., not {digest}...: not copied", file=sys.stderr)
            bad += 1
            continue
        found = SUSPECT.search(gzip.decompress(data))
        if found is not None:
            print(f"{name}: holds {found.group()[:20]!r}, which may be a credential: not copied", file=sys.stderr)
            bad += 1
            continue
        (dest / name).write_bytes(data)
        print(f"{name}: {len(data):,} bytes from {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
