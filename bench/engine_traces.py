#!/usr/bin/env python3
"""The serving-engine traces of tests/data/traces/SOURCES.md, taken from a clone of
AMD-AGI/TraceLens at the commit SOURCES.md names, checked and copied under the names the
tests use; every file checked for credentials (tokens, keys, environment dumps) first.

    git clone https://github.com/AMD-AGI/TraceLens /tmp/TraceLens
    python bench/engine_traces.py /tmp/TraceLens tests/data/traces/engines

A file whose SHA-256 differs from the one recorded here, or that holds anything that
looks like a credential, is not copied (exit 1, naming it). The traces of Hugging Face
models record the process's environment in `metadata.system.env`, an access token among
it: that
object's text is replaced by `"[environment removed]"` (every other byte as published, the
events untouched, checked by parsing both), the result checked as any file is, and gzipped
anew (no name, no time); the SHA-256 of the copy's text is recorded too.
"""

from __future__ import annotations

import gzip
import hashlib
import json
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
    "tracelens_hf_qwen1.5-0.5b_forward_h100.json.gz": (
        "tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "7c4a4b817b79db0a",
    ),
    "tracelens_hf_qwen1.5-0.5b_forward_mi300x.json.gz": (
        "tests/traces/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "1bfbe813843070fc",
    ),
    "tracelens_hf_owlv2-large_forward_h100.json.gz": (
        "tests/traces/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz",
        "959efc7b235d78c5",
    ),
    "tracelens_resnet_ddp_act_checkpoint_mi300x.json.gz": (
        "tests/traces/mi300/resnet_act_checkpoint.json.gz",
        "0a6a7dfe1f0bf16c",
    ),
    "tracelens_sglang_decode_graph_capture_bs32_mi300x.json.gz": (
        "tests/traces/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz",
        "e1c0549a6a9e4eeb",
    ),
}
# The files whose `metadata.system.env` is removed, and the SHA-256 prefix of the copy's
# text (before gzip, whose bytes may differ between zlib versions).
WITHOUT_ENV = {
    "tracelens_hf_qwen1.5-0.5b_forward_h100.json.gz": "ea72101f5c24f8e0",
    "tracelens_hf_qwen1.5-0.5b_forward_mi300x.json.gz": "e9b12aaccc959866",
    "tracelens_hf_owlv2-large_forward_h100.json.gz": "d62d053179047dbd",
}
REMOVED = b'"[environment removed]"'
# What a credential in a trace looks like: a Hugging Face token, an Authorization
# header, a key or a secret by name, a GitHub token, an environment dump.
SUSPECT = re.compile(
    rb"hf_[A-Za-z0-9]{20,}|authorization|api[_-]?key|secret_?key|password|ghp_[A-Za-z0-9]{20,}|"
    rb'"env"\s*:\s*[{\[]|aws_(?:access|secret)|BEGIN [A-Z ]*PRIVATE KEY',
    re.IGNORECASE,
)


def without_env(raw: bytes) -> bytes:
    """The trace's text with its `metadata.system.env` object replaced by `REMOVED`,
    gzipped with no name and no time; ValueError unless the result is the trace with that
    one value changed (the events and the rest of the metadata as they were)."""
    text = raw.decode("utf-8")
    key = text.find('"env":', text.find('"system":', text.find('"metadata":')))
    if key < 0:
        raise ValueError("no metadata.system.env")
    start = text.index("{", key)
    _, end = json.JSONDecoder().raw_decode(text, start)
    kept = text[:start] + REMOVED.decode() + text[end:]
    before, after = json.loads(text), json.loads(kept)
    before["metadata"]["system"]["env"] = json.loads(REMOVED)
    if before != after:
        raise ValueError("the copy is not the trace without its environment")
    return gzip.compress(kept.encode("utf-8"), compresslevel=9, mtime=0)


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
        if name in WITHOUT_ENV:
            data = without_env(gzip.decompress(data))
            got = hashlib.sha256(gzip.decompress(data)).hexdigest()[:16]
            if got != WITHOUT_ENV[name]:
                print(
                    f"{name}: the copy without its environment has SHA-256 {got}..., not {WITHOUT_ENV[name]}...: "
                    "not copied",
                    file=sys.stderr,
                )
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
