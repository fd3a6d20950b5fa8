"""A fleet: the same bandwidth sweep on every GPU type (or every GPU node) of a cluster,
compared. The models and the pure functions over them.

- `FleetPlan`: what a fleet measures (one target per instance type, or per node) and how;
  it travels with the fleet (in its ConfigMap and its run folder) so that `fleet collect`
  can finish a fleet that was interrupted.
- `extract_result`: the sweep script's JSON, cut out of a Job's log between the markers
  that `lab_scripts/fleetrun.py` prints around it.
- `measured_entry` / `outcome_entry`: one Job's outcome; `flag_outliers`: nodes more than
  OUTLIER_FRACTION below the median DRAM plateau of their type; `summarize_types`: one
  line per type; `decode_economics` and `cheapest`: the per-token decode floor of a model
  on each type, and what a million tokens cost there (the tutorial's L4-vs-RTX PRO story
  from measurements); `build_fleet_result`: all of it, with the notes.

Pure: no I/O. Numbers in notes are written with `nsightlab.units`.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from nsightlab.analysis.sweep_result import SweepResult
from nsightlab.k8s import pods as r
from nsightlab.models import Model, NonFiniteError, loads
from nsightlab.specs.gpus import for_instance_type, lookup
from nsightlab.units import gigabytes, percent, sig, size

Status = Literal["measured", "not-scheduled", "failed", "timeout"]
Device = Literal["auto", "cuda", "cpu"]

#: A node whose DRAM plateau is more than this fraction below its type's median is flagged.
OUTLIER_FRACTION = 0.10
#: The lines `lab_scripts/fleetrun.py` prints around the script's JSON in the pod's log.
RESULT_BEGIN = "==nsightlab-result-begin=="
RESULT_END = "==nsightlab-result-end=="
_BEGIN, _END = RESULT_BEGIN.encode(), RESULT_END.encode()
#: What a fleet keeps of a Job's log in memory (the log itself streams to a file): the
#: result block, at most RESULT_MAX bytes (a sweep's JSON is tens of KiB), and the last
#: lines, each cut at LINE_MAX characters.
RESULT_MAX = 16 << 20
LINE_MAX = 1000
#: Weights filling less than this share of a GPU's memory leave most of it idle.
IDLE_MEMORY_SHARE = 0.10
#: Above this many Jobs (one per node), `fleet sweep --every-node` asks first.
CONFIRM_ABOVE = 16
GB = 1e9


# ---------------------------------------------------------------------------- the plan


class FleetTarget(Model):
    """One Job of a fleet: an instance type, or one node of it (`--every-node`)."""

    key: str  # the instance type, or the node's name
    instance_type: str
    node: str | None = None  # the node it is pinned to
    job: str  # the Job's name
    gpu_product: str | None = None  # from the node's labels or the spec table


class FleetPlan(Model):
    """What a fleet measures and how."""

    kind: Literal["fleet-plan"] = "fleet-plan"
    fleet_id: str
    context: str
    namespace: str
    owner: str
    created: datetime
    every_node: bool = False
    dtype: str
    sizes: list[int] | None = None
    iters: int | None = None
    warmup: int | None = None
    device: Device = "auto"
    max_parallel: int = 4
    schedule_timeout: float = 120.0
    job_deadline: int = 1800
    weights_gb: float | None = None
    prices: dict[str, float] = Field(default_factory=dict)
    target_tokens_per_s: float | None = None
    targets: list[FleetTarget]
    notes: list[str] = Field(
        default_factory=list
    )  # found while planning (e.g. a type too small for the lab's requests)

    def script_args(self) -> list[str]:
        """The sweep script's options. The Job asks for a GPU, so `auto` insists on one
        (`--device cuda`: torch must see it, or the Job fails with the script's reason);
        only `--device cpu` measures the node's CPU on purpose."""
        args = ["--dtype", self.dtype, "--device", "cpu" if self.device == "cpu" else "cuda"]
        if self.sizes:
            args += ["--sizes", ",".join(str(n) for n in self.sizes)]
        if self.iters is not None:
            args += ["--iters", str(self.iters)]
        if self.warmup is not None:
            args += ["--warmup", str(self.warmup)]
        return args


def too_small(nodes: Iterable[Mapping[str, Any]], *, cpu: str, memory: str) -> list[str]:
    """Instance types none of whose nodes can give a Job the lab's CPU and memory: the
    scheduler would never place it there (the lab pod's g7e-sized 4 CPU / 24Gi do not fit
    a g6.xlarge)."""
    best: dict[str, tuple[float, float]] = {}
    for node in nodes:
        itype = r.instance_type(dict(node)) or "<none>"
        alloc = (node.get("status") or {}).get("allocatable") or {}
        c, m = float(r.parse_quantity(alloc.get("cpu"))), float(r.parse_quantity(alloc.get("memory")))
        old = best.get(itype, (0.0, 0.0))
        best[itype] = (max(old[0], c), max(old[1], m))
    want_cpu, want_mem = float(r.parse_quantity(cpu)), float(r.parse_quantity(memory))
    return [
        f"{itype}: a Job asks for {cpu} CPU and {memory} of memory (lab.cpu, lab.memory) and its nodes have at most "
        f"{sig(c)} CPU and {size(m)} allocatable: it cannot be scheduled there; lower lab.cpu and lab.memory in "
        "config.yaml"
        for itype, (c, m) in sorted(best.items())
        if want_cpu > c or want_mem > m
    ]


# ---------------------------------------------------------------------------- results


class DecodeEconomics(Model):
    """One decode step reads every weight once: its floor on one type, and its price."""

    weights_gb: float
    fits: bool | None  # the weights fit in the GPU's memory (None: memory unknown)
    ms_per_token: float | None  # None without a measured DRAM plateau
    tokens_per_s: float | None  # one sequence, batch 1, at the floor
    usd_per_hour: float | None
    usd_per_million_tokens: float | None


class FleetEntry(Model):
    """One Job's outcome."""

    instance_type: str
    node: str | None
    gpu_product: str | None
    status: Status
    reason: str | None = None  # why it did not measure; for a measured one, a device that contradicts
    run_id: str | None = None
    launch_floor_us: float | None = None
    cache_peak_tbps: float | None = None
    dram_tbps: float | None = None
    dram_pct_of_spec: float | None = None
    outlier: bool | None = None  # with --every-node: > OUTLIER_FRACTION below its type's median
    # kept for the terminal, not in the JSON (the logs are in the fleet's run folder)
    log_tail: list[str] = Field(default_factory=list, exclude=True)
    memory_bytes: int | None = Field(default=None, exclude=True)
    spec_dram_tbps: float | None = Field(default=None, exclude=True)


class FleetType(Model):
    """One instance type: the median over its measured nodes."""

    instance_type: str
    gpu_product: str | None
    measured: int  # nodes measured
    launch_floor_us: float | None
    cache_peak_tbps: float | None
    dram_tbps: float | None
    dram_pct_of_spec: float | None
    decode: DecodeEconomics | None = None


class FleetResult(Model):
    """`nsightlab fleet sweep --json` (and the fleet run's result.json)."""

    kind: Literal["fleet"] = "fleet"
    fleet_id: str
    context: str
    namespace: str
    dtype: str
    entries: list[FleetEntry]
    types: list[FleetType]
    notes: list[str] = Field(default_factory=list)

    @property
    def headline(self) -> str:
        """One line for run lists: each type's plateau, and what did not measure."""
        parts = []
        for t in self.types:
            if t.dram_tbps is not None:
                parts.append(f"{t.instance_type} {sig(t.dram_tbps)} TB/s")
            elif t.measured:
                parts.append(f"{t.instance_type} no DRAM plateau")
        counts = {s: sum(1 for e in self.entries if e.status == s) for s in ("not-scheduled", "failed", "timeout")}
        parts += [f"{n} {s}" for s, n in counts.items() if n]
        return ", ".join(parts) or "nothing measured"


class JobRow(Model):
    """A line of the live table while a fleet runs."""

    key: str
    instance_type: str
    phase: str  # waiting, Pending, Running, measured, failed, not-scheduled, timeout
    node: str | None = None
    reason: str | None = None  # the scheduler's message while Pending; why it failed
    elapsed_s: float | None = None
    log_tail: list[str] = Field(default_factory=list)


class FleetJobs(Model):
    """A fleet's Jobs by phase (`fleet status`)."""

    waiting: int = 0  # planned, not created yet (the fleet was interrupted before)
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class FleetStatusLine(Model):
    fleet_id: str
    created: datetime | None
    age: str
    jobs: FleetJobs
    planned: int | None  # targets in its plan (None: the plan could not be read)


class FleetStatusReport(Model):
    """`nsightlab fleet status --json`."""

    context: str
    namespace: str
    owner: str
    fleets: list[FleetStatusLine]


# ---------------------------------------------------------------------------- the log


class LogScan:
    """What a fleet keeps of a Job's log while the log streams past it (into a file): the
    last result block (at most RESULT_MAX bytes) and the last `lines` non-blank lines
    outside any block, each cut at LINE_MAX characters. Fed the log in pieces (`feed`),
    then `close()`; its memory is bounded whatever the log's size."""

    def __init__(self, lines: int = 5) -> None:
        self.line_max = LINE_MAX  # read when made: a test may lower them
        self.result_max = RESULT_MAX
        self._partial = bytearray()
        self._partial_over = False  # the line being read is longer than it may be kept
        self._tail: deque[str] = deque(maxlen=lines)
        self._block: list[bytes] | None = None  # inside a block: its lines so far
        self._block_size = 0
        self._block_over = False
        self._last: bytes | None = None  # the last whole block
        self._last_over = False  # ... which was larger than result_max

    def feed(self, data: bytes) -> None:
        start = 0
        while (nl := data.find(b"\n", start)) >= 0:
            self._keep(data[start:nl])
            self._line()
            start = nl + 1
        self._keep(data[start:])

    def close(self) -> None:
        if self._partial or self._partial_over:
            self._line()

    @property
    def tail(self) -> list[str]:
        return list(self._tail)

    def result(self) -> tuple[Any, str | None]:
        """The JSON of the last block, or (None, why not)."""
        if self._block is not None:
            return None, "the result in the Job's log is cut short (no end marker)"
        if self._last_over:
            return None, f"the result in the Job's log is larger than {size(self.result_max)}: no sweep's is"
        if self._last is None:
            return None, "no result in the Job's log (the script did not finish)"
        try:
            return loads(self._last), None
        except NonFiniteError as e:
            return None, f"the result in the Job's log holds a number no measurement has ({e.msg})"
        except ValueError as e:
            return None, f"the result in the Job's log is not valid JSON ({e})"

    def _keep(self, piece: bytes) -> None:
        room = (self.result_max if self._block is not None else self.line_max) - len(self._partial)
        if len(piece) > room:
            self._partial_over = True
            piece = piece[: max(room, 0)]
        self._partial += piece

    def _line(self) -> None:
        text, over = bytes(self._partial), self._partial_over
        self._partial.clear()
        self._partial_over = False
        marker = text.strip()
        if marker == _BEGIN:
            self._block, self._block_size, self._block_over = [], 0, False
        elif self._block is not None and marker == _END:
            self._last = None if self._block_over else b"\n".join(self._block)
            self._last_over = self._block_over
            self._block = None
        elif self._block is not None:
            self._block_size += len(text) + 1
            if over or self._block_size > self.result_max:
                self._block_over = True
                self._block.clear()
            if not self._block_over:
                self._block.append(text)
        elif marker:
            shown = text.decode("utf-8", "replace").rstrip()
            self._tail.append(shown[: self.line_max] + ("..." if over or len(shown) > self.line_max else ""))


def extract_result(log: str) -> tuple[Any, str | None]:
    """The JSON the wrapper printed between RESULT_BEGIN and RESULT_END (the last such
    block), or (None, why not)."""
    scan = LogScan()
    scan.feed(log.encode("utf-8", "surrogateescape"))
    scan.close()
    return scan.result()


def tail(log: str, n: int = 5) -> list[str]:
    """The last `n` non-blank lines of a log, outside its result blocks."""
    scan = LogScan(n)
    scan.feed(log.encode("utf-8", "surrogateescape"))
    scan.close()
    return scan.tail


# ---------------------------------------------------------------------------- entries


def _memory(result: SweepResult | None, target: FleetTarget) -> int | None:
    """The GPU's memory: as torch reported it on a GPU, else the spec table's."""
    if result is not None and result.summary.device_type == "cuda":
        reported = result.record.device.model_dump().get("memory_bytes")
        if isinstance(reported, int) and reported > 0:
            return reported
    spec = lookup(target.gpu_product) or for_instance_type(target.instance_type)
    return spec.memory_bytes if spec is not None else None


def _spec_tbps(product: str | None, instance_type: str) -> float | None:
    spec = lookup(product) or for_instance_type(instance_type)
    return spec.dram_bw_bytes_per_s / 1e12 if spec is not None and spec.dram_bw_bytes_per_s else None


def measured_entry(target: FleetTarget, result: SweepResult, *, node: str | None) -> FleetEntry:
    """A Job that measured: its sweep's figures. The GPU is the one torch named, when the
    sweep ran on it; else the node's (a `--device cpu` run measured the node's CPU)."""
    s = result.summary
    product = s.device_name if s.device_type == "cuda" and s.device_name else target.gpu_product
    return FleetEntry(
        instance_type=target.instance_type,
        node=node or target.node,
        gpu_product=product,
        status="measured",
        run_id=result.run_id,
        launch_floor_us=s.launch_floor_us,
        cache_peak_tbps=s.cache_peak_tbps,
        dram_tbps=s.dram_tbps,
        dram_pct_of_spec=s.dram_pct_of_spec,
        memory_bytes=_memory(result, target),
        spec_dram_tbps=s.spec_dram_tbps if s.device_type == "cuda" else _spec_tbps(product, target.instance_type),
    )


def outcome_entry(
    target: FleetTarget, status: Status, reason: str | None, *, node: str | None = None, log_tail: Sequence[str] = ()
) -> FleetEntry:
    """A Job that did not measure: not scheduled, failed, or past its deadline."""
    return FleetEntry(
        instance_type=target.instance_type,
        node=node or target.node,
        gpu_product=target.gpu_product,
        status=status,
        reason=reason,
        log_tail=list(log_tail),
        memory_bytes=_memory(None, target),
        spec_dram_tbps=_spec_tbps(target.gpu_product, target.instance_type),
    )


def flag_outliers(entries: Sequence[FleetEntry], *, fraction: float = OUTLIER_FRACTION) -> list[FleetEntry]:
    """Per instance type, nodes whose DRAM plateau is more than `fraction` below the
    type's median plateau are outliers. Entries without a plateau stay None."""
    out = [e.model_copy() for e in entries]
    by_type: dict[str, list[FleetEntry]] = {}
    for e in out:
        if e.status == "measured" and e.dram_tbps is not None:
            by_type.setdefault(e.instance_type, []).append(e)
    for group in by_type.values():
        median = statistics.median(e.dram_tbps for e in group if e.dram_tbps is not None)
        for e in group:
            assert e.dram_tbps is not None
            e.outlier = e.dram_tbps < (1 - fraction) * median
    return out


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def decode_economics(
    weights_gb: float, *, dram_tbps: float | None, memory_bytes: int | None, usd_per_hour: float | None
) -> DecodeEconomics:
    """The decode floor of `weights_gb` on a measured plateau: ms per token, tokens/s
    (batch 1), whether the weights fit, and with a price the cost of a million tokens
    at that rate."""
    weight_bytes = weights_gb * GB
    ms = tokens = per_million = None
    if dram_tbps is not None and dram_tbps > 0:
        seconds = weight_bytes / (dram_tbps * 1e12)
        ms, tokens = seconds * 1e3, 1.0 / seconds
        if usd_per_hour is not None:
            per_million = usd_per_hour / (tokens * 3600.0) * 1e6
    return DecodeEconomics(
        weights_gb=weights_gb,
        fits=None if memory_bytes is None else weight_bytes <= memory_bytes,
        ms_per_token=ms,
        tokens_per_s=tokens,
        usd_per_hour=usd_per_hour,
        usd_per_million_tokens=per_million,
    )


def summarize_types(
    entries: Sequence[FleetEntry], *, weights_gb: float | None = None, prices: Mapping[str, float] | None = None
) -> list[FleetType]:
    """One line per instance type (in the entries' order): the median of its measured nodes."""
    order: list[str] = []
    for e in entries:
        if e.instance_type not in order:
            order.append(e.instance_type)
    out = []
    for itype in order:
        group = [e for e in entries if e.instance_type == itype]
        measured = [e for e in group if e.status == "measured"]
        product = next((e.gpu_product for e in measured if e.gpu_product), None) or next(
            (e.gpu_product for e in group if e.gpu_product), None
        )
        dram = _median(e.dram_tbps for e in measured)
        decode = None
        if weights_gb is not None:
            memory = next((e.memory_bytes for e in measured if e.memory_bytes), None) or next(
                (e.memory_bytes for e in group if e.memory_bytes), None
            )
            decode = decode_economics(
                weights_gb, dram_tbps=dram, memory_bytes=memory, usd_per_hour=(prices or {}).get(itype)
            )
        out.append(
            FleetType(
                instance_type=itype,
                gpu_product=product,
                measured=len(measured),
                launch_floor_us=_median(e.launch_floor_us for e in measured),
                cache_peak_tbps=_median(e.cache_peak_tbps for e in measured),
                dram_tbps=dram,
                dram_pct_of_spec=_median(e.dram_pct_of_spec for e in measured),
                decode=decode,
            )
        )
    return out


def cheapest(types: Sequence[FleetType], target_tokens_per_s: float | None = None) -> FleetType | None:
    """The type whose million tokens cost least at the decode floor, among those whose
    weights fit and that reach `target_tokens_per_s` (one sequence, batch 1); ties go to
    the lower hourly price. None when no priced type qualifies."""
    ok = [
        t
        for t in types
        if t.decode is not None
        and t.decode.fits is True
        and t.decode.usd_per_million_tokens is not None
        and t.decode.tokens_per_s is not None
        and (target_tokens_per_s is None or t.decode.tokens_per_s >= target_tokens_per_s)
    ]
    return min(ok, key=lambda t: (t.decode.usd_per_million_tokens, t.decode.usd_per_hour or 0.0)) if ok else None  # type: ignore[union-attr]


def usd(x: float) -> str:
    """A price in US dollars, three significant figures: $3.14, $0.447, $14.3."""
    return f"${sig(x)}"


def decode_notes(
    types: Sequence[FleetType], entries: Sequence[FleetEntry], *, weights_gb: float, target_tokens_per_s: float | None
) -> list[str]:
    """What the decode figures say: the cheapest type for the target, types the weights do
    not fit, and memory a small model leaves idle."""
    notes: list[str] = []
    w = gigabytes(weights_gb * GB)
    memory = {e.instance_type: e.memory_bytes for e in entries if e.memory_bytes}
    for t in types:
        d = t.decode
        if d is None:
            continue
        if d.fits is False:
            notes.append(f"{t.instance_type}: {w} of weights do not fit in its {size(memory[t.instance_type])} GPU")
        elif (
            d.fits
            and t.measured
            and t.instance_type in memory
            and weights_gb * GB < IDLE_MEMORY_SHARE * memory[t.instance_type]
        ):
            share = 100.0 * weights_gb * GB / memory[t.instance_type]
            notes.append(
                f"{t.instance_type}: the weights fill {percent(share)} of its {size(memory[t.instance_type])}; "
                "decode speed comes "
                "from bandwidth, not capacity, so most of that memory sits idle (room for a larger batch's KV "
                "cache, or a smaller GPU)"
            )
        if t.measured and d.ms_per_token is None:
            notes.append(f"{t.instance_type}: no DRAM plateau was measured, so no decode floor (sweep larger sizes)")
    if not any(t.decode is not None and t.decode.tokens_per_s is not None for t in types):
        return notes  # no floor anywhere: nothing to price (the notes above say why)
    priced = [t for t in types if t.decode is not None and t.decode.usd_per_hour is not None]
    if not priced:
        if any(t.decode is not None for t in types):
            notes.append(
                "no prices: set `prices: {g7e.8xlarge: 3.14}` (USD per hour) in config.yaml or pass --price "
                "TYPE=USD for the cost per million tokens"
            )
        return notes
    goal = f", at least {sig(target_tokens_per_s)} tokens/s" if target_tokens_per_s is not None else ""
    best = cheapest(types, target_tokens_per_s)
    if best is not None and best.decode is not None:
        d = best.decode
        assert d.usd_per_million_tokens is not None and d.tokens_per_s is not None and d.usd_per_hour is not None
        notes.append(
            f"cheapest per million tokens at the decode floor ({w} fit{goal}): {best.instance_type}, "
            f"{usd(d.usd_per_million_tokens)} per million tokens ({sig(d.tokens_per_s)} tokens/s at "
            f"{usd(d.usd_per_hour)}/h)"
        )
    else:
        fastest = max(
            (t for t in types if t.decode is not None and t.decode.tokens_per_s is not None),
            key=lambda t: t.decode.tokens_per_s or 0.0,  # type: ignore[union-attr]
            default=None,
        )
        best_text = (
            f" (fastest: {fastest.instance_type} at {sig(fastest.decode.tokens_per_s)} tokens/s)"
            if fastest is not None and fastest.decode and fastest.decode.tokens_per_s
            else ""
        )
        reach = f" and reaches {sig(target_tokens_per_s)} tokens/s" if target_tokens_per_s is not None else ""
        notes.append(f"no priced type fits {w}{reach}{best_text}")
    return notes


def build_fleet_result(plan: FleetPlan, entries: Sequence[FleetEntry]) -> FleetResult:
    """The fleet's result: entries (outliers flagged with --every-node), one line per type
    with the decode figures when asked, and the notes."""
    rows = flag_outliers(entries) if plan.every_node else [e.model_copy() for e in entries]
    types = summarize_types(rows, weights_gb=plan.weights_gb, prices=plan.prices)
    notes: list[str] = list(plan.notes)
    if plan.device == "cpu":
        notes.append("measured with --device cpu: these figures are the nodes' CPUs, not their GPUs")
    for e in rows:
        where = e.node if plan.every_node and e.node else e.instance_type
        if e.status == "not-scheduled":
            notes.append(
                f"{where}: not scheduled within {sig(plan.schedule_timeout)} s "
                f"({e.reason or 'no reason given'}); its Job was deleted"
            )
        elif e.status in ("failed", "timeout"):
            notes.append(f"{where}: {e.status}: {e.reason or 'no reason given'}")
        elif e.reason:  # measured, with a device its log names against the node's label or --device
            notes.append(f"{where}: {e.reason}")
        if e.outlier:
            group = [
                x.dram_tbps
                for x in rows
                if x.instance_type == e.instance_type and x.status == "measured" and x.dram_tbps is not None
            ]
            median = statistics.median(group)
            assert e.dram_tbps is not None
            notes.append(
                f"{e.node}: DRAM plateau {sig(e.dram_tbps)} TB/s, {percent(100 * (1 - e.dram_tbps / median))} "
                "below the median of "
                f"its {len(group)} {e.instance_type} nodes ({sig(median)} TB/s): an outlier (check its clocks, "
                "temperature and ECC errors)"
            )
    if plan.every_node and any(e.status == "measured" for e in rows) and all(e.outlier is None for e in rows):
        notes.append("no node reached a DRAM plateau, so none could be compared with its siblings (sweep larger sizes)")
    if plan.weights_gb is not None:
        notes += decode_notes(types, rows, weights_gb=plan.weights_gb, target_tokens_per_s=plan.target_tokens_per_s)
    return FleetResult(
        fleet_id=plan.fleet_id,
        context=plan.context,
        namespace=plan.namespace,
        dtype=plan.dtype,
        entries=rows,
        types=types,
        notes=notes,
    )
