#!/usr/bin/env python3
"""The CPU a tokenizer costs: CPU ms per request, requests and tokens per second per vCPU.

A serving engine's API server tokenizes every prompt on the CPU (vLLM: one API server
process per engine). This times a tokenizer the image already has (a `tokenizer.json`,
or a folder holding one; nothing is downloaded) over prompts from a file (JSON lines
with a "prompt" or "text" field, or plain text, one prompt per line) or generated ones
of --prompt-len tokens, one request at a time on one thread, as an API server does. It
measures CPU time (time.process_time), so other work on the machine does not count.

Needs the `tokenizers` package (Hugging Face; vLLM images have it) and the standard
library; labcommon.py beside it. Python 3.8 or later.

    python3 tokenizer_cpu.py --tokenizer /models/llama/tokenizer.json --prompt-len 512 --out /tmp/tok.json
    python3 tokenizer_cpu.py --tokenizer /models/llama --prompts prompts.jsonl --out /tmp/tok.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from typing import Any, NoReturn

# one thread, as one request is tokenized: before the library starts its thread pool
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import labcommon as lab
except ModuleNotFoundError as _missing:
    if _missing.name != "labcommon":
        raise
    sys.exit(
        "tokenizer_cpu.py: needs labcommon.py in the same folder as this script (copy lab_scripts/labcommon.py "
        "beside it)"
    )

SCHEMA = 1
PROG = "tokenizer_cpu.py"
USAGE_EXIT = 2
NO_TOKENIZERS_EXIT = 4
# plain words to build prompts from: any text will do, a tokenizer's cost is per byte and token
_TEXT = (
    "the model reads every weight once per step so memory bandwidth sets the pace of decoding while the "
    "scheduler batches requests and the tokenizer turns each prompt into token ids on the cpu before the "
    "gpu sees it a cluster of nodes holds pods whose containers share a network namespace and a deadline"
)
_WORDS = tuple(_TEXT.split())


def fail(message: str, code: int = USAGE_EXIT) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        fail(message + " (see --help)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = _Parser(prog=PROG, description="Time a tokenizer's CPU per request, one request at a time on one thread.")
    p.add_argument("--tokenizer", required=True, help="a tokenizer.json, or a folder holding one")
    p.add_argument("--prompts", default=None, help="JSON lines with a prompt or text field, or text, one per line")
    p.add_argument("--prompt-len", type=int, default=512, help="tokens per generated prompt (default 512)")
    p.add_argument("--requests", type=int, default=200, help="prompts to tokenize (default 200; a file: all of it)")
    p.add_argument("--repeat", type=int, default=3, help="passes over the prompts; the fastest counts (default 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", "--json", dest="out", required=True, metavar="FILE.json")
    args = p.parse_args(argv)
    for flag in ("prompt_len", "requests", "repeat"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be at least 1")
    return args


def load_tokenizer(path: str) -> tuple[Any, str]:
    try:
        from tokenizers import Tokenizer
    except ImportError as e:
        fail(
            f"needs the tokenizers package, which this Python cannot import ({e}); pip install tokenizers",
            NO_TOKENIZERS_EXIT,
        )
    file = os.path.join(path, "tokenizer.json") if os.path.isdir(path) else path
    if not os.path.isfile(file):
        fail(f"no tokenizer at {path!r} (give a tokenizer.json or a folder holding one)")
    try:
        return Tokenizer.from_file(file), file
    except Exception as e:  # the library raises its own exception type for a file it cannot read
        fail(f"{file} is not a tokenizer the tokenizers package can read: {str(e).splitlines()[0][:200]}")


def read_prompts(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line.rstrip("\n") for line in f]
    except (OSError, UnicodeDecodeError) as e:
        fail(f"cannot read the prompts file {path}: {e}")
    prompts = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                fail(f"{path}:{i}: not a JSON line ({e.msg})")
            text = obj.get("prompt", obj.get("text")) if isinstance(obj, dict) else None
            if not isinstance(text, str):
                fail(f"{path}:{i}: a JSON line needs a string field prompt or text")
            prompts.append(text)
        else:
            prompts.append(line)
    if not prompts:
        fail(f"{path} holds no prompt")
    return prompts


def generate(tokenizer: Any, n: int, length: int, seed: int) -> list[str]:
    """`n` prompts of random words, each at least `length` tokens."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words: list[str] = []
        while True:
            words += [rng.choice(_WORDS) for _ in range(max(4, length // 16))]
            if len(tokenizer.encode(" ".join(words)).ids) >= length:
                break
        out.append(" ".join(words))
    return out


def measure(tokenizer: Any, prompts: list[str], repeat: int) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, tokens) of the fastest pass, one prompt at a time."""
    best: tuple[float, float, int] | None = None
    for _ in range(repeat):
        tokens = 0
        c0, w0 = time.process_time(), time.perf_counter()
        for text in prompts:
            tokens += len(tokenizer.encode(text).ids)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        if best is None or cpu < best[0]:
            best = (cpu, wall, tokens)
    assert best is not None
    return best


def run(args: argparse.Namespace) -> dict[str, Any]:
    tokenizer, file = load_tokenizer(args.tokenizer)
    notes: list[str] = []
    if args.prompts:
        prompts = read_prompts(args.prompts)
        source = "file"
    else:
        prompts = generate(tokenizer, args.requests, args.prompt_len, args.seed)
        source = "generated"
    counts = [len(tokenizer.encode(p).ids) for p in prompts]
    cpu, wall, tokens = measure(tokenizer, prompts, args.repeat)
    if cpu <= 0:
        cpu = wall
        notes.append("the CPU clock did not advance: wall time stands in for CPU time")
    n = len(prompts)
    return {
        "kind": "tokenizer",
        "schema": SCHEMA,
        "tokenizer": file,
        "vocab_size": tokenizer.get_vocab_size(),
        "prompts": {
            "source": source,
            "count": n,
            "mean_tokens": statistics.fmean(counts),
            "mean_chars": statistics.fmean(len(p) for p in prompts),
        },
        "threads": 1,
        "repeat": args.repeat,
        "cpu_s": cpu,
        "wall_s": wall,
        "tokens": tokens,
        "ms_per_request": 1e3 * cpu / n,
        "requests_per_s_per_vcpu": n / cpu,
        "tokens_per_s_per_vcpu": tokens / cpu,
        "device": {
            "type": "cpu",
            "name": lab.cpu_name(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
        },
        "notes": notes,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    doc = run(args)
    lab.write_json_atomic(args.out, doc)
    print(
        f"tokenizer: {doc['prompts']['count']} prompts of {doc['prompts']['mean_tokens']:.0f} tokens: "
        f"{doc['ms_per_request']:.3f} CPU ms per request, {doc['tokens_per_s_per_vcpu']:.0f} tokens/s per vCPU",
        file=sys.stderr,
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
