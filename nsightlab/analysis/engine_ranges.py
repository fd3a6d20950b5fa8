"""Which host ranges of a trace are steps, and what each step did (its phase).

Serving engines name a range around each step of their model runner; read from their
own source:

- vLLM (`Worker.annotate_profile`): `execute_context_{c}({tokens})_generation_{g}({tokens})`
  (PR #22496; `c` context = prefill requests, `g` generation = decode requests), the same
  with the scheduled tokens first and attention aggregates in the parentheses,
  `execute_{n}_context_{c}(sq..sk..)_generation_{g}(sq..sk..)`, and the newer
  `execute_new_{n}_cached_{c}` (new requests start with a prefill; cached ones go on,
  decoding, or with the next chunk of a chunked prefill).
- SGLang (`ModelRunner.forward`, `build_step_span_name`): `step[EXTEND bs=N toks=T]`,
  `step[{MODE} bs=N]` with the forward mode's name (`DECODE`, `MIXED`, `IDLE`,
  `TARGET_VERIFY`, ...), aggregates after them in newer versions (`c_sqsq=...`); lower-case
  `step[decode bs=N]`, `step[prefill bs=N toks=T]`, `step[mixed ...]` in others.
- TensorRT-LLM's PyTorch executor (NVTX): `[Executor] _forward_step {iter}: {c} ctx reqs,
  {g} gen reqs` (with `{t} ctx tokens` in some versions).
- ATOM: `prefill[bs=N tok=T ...]`, `decode[bs=N ...]`.

Besides them: `decode_step` (nsightlab's decode script, NVTX or record_function) and
torch's `ProfilerStep#N`. Without `--step-range`, the engines' ranges and `decode_step`
are steps; where they nest (SGLang's `step[DECODE ...]` inside an `execute_...` range) the
innermost is the step; only when there are none are `ProfilerStep`s the steps.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nsightlab.analysis.stepmodels import Phase, RangeCount, StepSource
from nsightlab.errors import UsageError

DEFAULT_STEP_RANGES = ("decode_step", "ProfilerStep")
# How many of a trace's range names a note or an error lists.
RANGES_LISTED = 8


@dataclass
class HostRange:
    """A host range (NVTX push/pop or record_function), optionally with its projection
    onto the GPU (nsys's nvtx_gpu_proj_trace). Times in ns."""

    name: str
    start: int
    end: int
    pid: object = None
    tid: object = None
    proj_start: int | None = None
    proj_end: int | None = None
    phase: Phase = "unknown"
    rule: str | None = None  # the engine rule that recognised it
    extra: dict[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------- the engines


def _counts_phase(prefill: int, decode: int) -> Phase:
    if prefill and decode:
        return "mixed"
    if prefill:
        return "prefill"
    if decode:
        return "decode"
    return "unknown"


_VLLM_CONTEXT = re.compile(r"execute_(?:\d+_)?context_(\d+)\([^()]*\)_generation_(\d+)\([^()]*\)")
_VLLM_NEW_CACHED = re.compile(r"execute_new_(\d+)_cached_(\d+)")
_SGLANG_STEP = re.compile(r"step\[([A-Za-z_]+)\b[^\]]*\]")
_SGLANG_BS = re.compile(r"\bbs=(\d+)")
_TRTLLM = re.compile(r"\[Executor\] _forward_step \d+: (\d+) ctx reqs(?:, \d+ ctx tokens)?, (\d+) gen reqs")
_ATOM = re.compile(r"(prefill|decode)\[.*\]")

_SGLANG_PHASES: dict[str, Phase] = {
    "EXTEND": "prefill",
    "PREFILL": "prefill",
    "SPLIT_PREFILL": "prefill",
    "DLLM_EXTEND": "prefill",
    "DECODE": "decode",
    "TARGET_VERIFY": "decode",
    "DRAFT_EXTEND": "decode",
    "DRAFT_EXTEND_V2": "decode",
    "MIXED": "mixed",
}


def _vllm(name: str) -> tuple[Phase, dict[str, int]] | None:
    if (m := _VLLM_CONTEXT.fullmatch(name)) is not None:
        ctx, gen = int(m.group(1)), int(m.group(2))
        return _counts_phase(ctx, gen), {"context_requests": ctx, "generation_requests": gen}
    if (m := _VLLM_NEW_CACHED.fullmatch(name)) is not None:
        new, cached = int(m.group(1)), int(m.group(2))
        return _counts_phase(new, cached), {"new_requests": new, "cached_requests": cached}
    return None


def _sglang(name: str) -> tuple[Phase, dict[str, int]] | None:
    m = _SGLANG_STEP.fullmatch(name)
    if m is None:
        return None
    bs = _SGLANG_BS.search(name)
    return _SGLANG_PHASES.get(m.group(1).upper(), "unknown"), ({"batch": int(bs.group(1))} if bs else {})


def _trtllm(name: str) -> tuple[Phase, dict[str, int]] | None:
    m = _TRTLLM.search(name)
    if m is None:
        return None
    ctx, gen = int(m.group(1)), int(m.group(2))
    return _counts_phase(ctx, gen), {"context_requests": ctx, "generation_requests": gen}


def _atom(name: str) -> tuple[Phase, dict[str, int]] | None:
    m = _ATOM.fullmatch(name)
    if m is None:
        return None
    bs = _SGLANG_BS.search(name)
    phase: Phase = "prefill" if m.group(1) == "prefill" else "decode"
    return phase, ({"batch": int(bs.group(1))} if bs else {})


#: The engine rules, by the name a step group's `step_range` gives.
ENGINE_RULES: dict[str, Callable[[str], tuple[Phase, dict[str, int]] | None]] = {
    "vllm:execute": _vllm,
    "sglang:step": _sglang,
    "trtllm:_forward_step": _trtllm,
    "atom:step": _atom,
}
ENGINE_WORDS = {
    "vllm:execute": "vLLM's execute_... ranges",
    "sglang:step": "SGLang's step[...] ranges",
    "trtllm:_forward_step": "TensorRT-LLM's _forward_step ranges",
    "atom:step": "ATOM's prefill[...] / decode[...] ranges",
}


def engine_rule(name: str) -> tuple[str, Phase, dict[str, int]] | None:
    """(rule, phase, counts) when an engine wrote this range name around a step, else None.

    NVTX names may carry their domain (`dom:step[DECODE bs=8]`): the text after it counts.
    """
    text = name.strip()
    for candidate in (text, text.split(":", 1)[1] if ":" in text and not text.startswith("[") else None):
        if not candidate:
            continue
        for rule, parse in ENGINE_RULES.items():
            got = parse(candidate)
            if got is not None:
                return rule, got[0], got[1]
    return None


def phase_of(name: str) -> Phase:
    """The phase a range name says: an engine's counts or mode word; `decode_step` is a
    decode step; anything else says nothing (`unknown`)."""
    got = engine_rule(name)
    if got is not None:
        return got[1]
    return "decode" if range_matches(name, "decode_step") else "unknown"


# ------------------------------------------------------------------ named ranges

_NUMBERED = re.compile(r"#\d+$")


def range_matches(name: str, wanted: str) -> bool:
    """Whether a range named `name` is a `wanted` step: equal, torch's numbered form
    (`ProfilerStep#12` for `ProfilerStep`), or with an NVTX domain (`dom:decode_step`)."""
    if name == wanted or name.endswith(":" + wanted):
        return True
    return name.startswith(wanted + "#") and name[len(wanted) + 1 :].isdigit()


def range_counts(ranges: Sequence[HostRange]) -> list[RangeCount]:
    """The trace's range names (numbered ones folded: `ProfilerStep#N`), most frequent first."""
    counts = Counter(_NUMBERED.sub("#N", r.name) for r in ranges)
    return [RangeCount(name=n, count=c) for n, c in counts.most_common()]


def listed(counts: Sequence[RangeCount], limit: int = RANGES_LISTED) -> str:
    shown = ", ".join(f"{c.name} ({c.count})" for c in counts[:limit]) or "none"
    return shown + (f", and {len(counts) - limit} more" if len(counts) > limit else "")


# --------------------------------------------------------------- choosing steps


@dataclass
class StepChoice:
    """The ranges that are steps, the name or rule that chose them, and how."""

    wanted: str | None
    source: StepSource | None
    steps: list[HostRange]
    notes: list[str] = field(default_factory=list)


def _innermost(candidates: list[HostRange]) -> tuple[list[HostRange], int, int]:
    """The candidates that hold no other candidate on their thread; with how many were
    dropped for enclosing one, and how many pairs overlap without nesting."""
    by_thread: dict[tuple[object, object], list[HostRange]] = {}
    for r in candidates:
        by_thread.setdefault((r.pid, r.tid), []).append(r)
    enclosing: set[int] = set()
    overlaps = 0
    for group in by_thread.values():
        group.sort(key=lambda r: (r.start, -r.end))
        open_: list[HostRange] = []
        for r in group:
            open_ = [o for o in open_ if o.end > r.start]
            for o in open_:
                if r.end <= o.end:
                    enclosing.add(id(o))
                else:
                    overlaps += 1
            open_.append(r)
    kept = [r for r in candidates if id(r) not in enclosing]
    return kept, len(candidates) - len(kept), overlaps


def choose_steps(ranges: Sequence[HostRange], step_range: str | None, default_source: StepSource) -> StepChoice:
    """The step ranges of a trace (see the module docstring), each with its phase.

    `step_range` picks them by name (UsageError, listing the trace's ranges, when none
    has it). Returns a choice with `wanted` None when no range is a step.
    """
    if step_range is not None:
        steps = [r for r in ranges if range_matches(r.name, step_range)]
        notes = []
        if not steps and step_range.strip():  # the start of a name (a torch.compile range's hash is long)
            starting = [r for r in ranges if r.name.startswith(step_range)]
            names = range_counts(starting)
            if len(names) > 1:
                raise UsageError(
                    f"{len(names)} ranges' names start with {step_range!r}: {listed(names)}",
                    hint="Give one of them whole (quoted) with --step-range",
                )
            if names:
                steps = starting
                notes.append(f"--step-range {step_range!r}: the ranges named {names[0].name!r}, the only name so begun")
        if not steps:
            raise UsageError(
                f"no range named {step_range!r} in this trace",
                hint=f"ranges in it: {listed(range_counts(ranges))}; or leave out --step-range to infer steps",
            )
        for r in steps:
            r.phase = phase_of(r.name)
        return StepChoice(step_range, "step-range", steps, notes)
    candidates: list[HostRange] = []
    rules: Counter[str] = Counter()
    for r in ranges:
        got = engine_rule(r.name)
        if got is not None:
            r.rule, r.phase, r.extra = got
            rules[got[0]] += 1
            candidates.append(r)
        elif range_matches(r.name, "decode_step"):
            r.phase, r.rule = "decode", None
            candidates.append(r)
    if not candidates:
        steps = [r for r in ranges if range_matches(r.name, "ProfilerStep")]
        return StepChoice("ProfilerStep" if steps else None, default_source if steps else None, steps)
    kept, dropped, overlaps = _innermost(candidates)
    notes = []
    if dropped:
        inner = Counter(r.rule or "decode_step" for r in kept).most_common(1)[0][0]
        notes.append(
            f"{dropped} step range(s) enclose other step ranges: the innermost ones "
            f"({ENGINE_WORDS.get(inner, inner)}) are the steps"
        )
    if overlaps:
        notes.append(
            f"{overlaps} step range(s) overlap the next one without nesting: a GPU operation "
            "belongs to the latest step whose range holds its launch"
        )
    engine = [r.rule for r in kept if r.rule is not None]
    if engine:
        wanted = " + ".join(dict.fromkeys(engine))
        notes.insert(0, "steps are " + " and ".join(ENGINE_WORDS[w] for w in dict.fromkeys(engine)))
        return StepChoice(wanted, "engine-range", kept, notes)
    return StepChoice("decode_step", default_source, kept, notes)


def is_step_name(name: str) -> bool:
    """A range that is itself a step somewhere (never a group label)."""
    return (
        engine_rule(name) is not None
        or range_matches(name, "ProfilerStep")
        or range_matches(name, "decode_step")
        or bool(_NUMBERED.search(name))
    )


def group_labels(steps: Sequence[HostRange], ranges: Sequence[HostRange], wanted: str | None) -> list[str | None]:
    """For each step, the names of the ranges on its thread that enclose it (outermost
    first; steps, engine ranges and numbered ranges left out), joined with ' > '; None if
    none. When every step has a label of its own they say nothing: all None."""
    candidates = [
        r for r in ranges if not is_step_name(r.name) and not (wanted is not None and range_matches(r.name, wanted))
    ]
    by_thread: dict[tuple[object, object], list[HostRange]] = {}
    for r in candidates:
        by_thread.setdefault((r.pid, r.tid), []).append(r)
    for group in by_thread.values():
        group.sort(key=lambda r: (r.start, -r.end))
    labels: list[str | None] = [None] * len(steps)
    order = sorted(range(len(steps)), key=lambda i: steps[i].start)
    cursor: dict[tuple[object, object], int] = {}
    active: dict[tuple[object, object], list[HostRange]] = {}
    for i in order:
        step = steps[i]
        key = (step.pid, step.tid)
        pool = by_thread.get(key)
        if not pool:
            continue
        pos = cursor.get(key, 0)
        live = active.setdefault(key, [])
        while pos < len(pool) and pool[pos].start <= step.start:
            live.append(pool[pos])
            pos += 1
        cursor[key] = pos
        live[:] = [r for r in live if r.end >= step.start]
        enclosing = [r for r in live if r.end >= step.end and (r.start, r.end) != (step.start, step.end)]
        if enclosing:
            enclosing.sort(key=lambda r: (r.start, -r.end))
            labels[i] = " > ".join(r.name for r in enclosing)
    named = [x for x in labels if x is not None]
    if len(named) > 1 and len(set(named)) == len(named):
        return [None] * len(steps)
    return labels
