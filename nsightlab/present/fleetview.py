"""A fleet, drawn: the live table while its Jobs run (Rich Live on a terminal, a plain line
per change otherwise), its result and `fleet status` on the terminal (`fleet`,
`fleet_status`) and its part of the report.

Numbers are written with `nsightlab.units`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from nsightlab.analysis.fleet_models import FleetResult, JobRow
from nsightlab.analysis.sweep_result import SweepResult
from nsightlab.errors import UsageError
from nsightlab.k8s.pods import human_duration
from nsightlab.present.docblocks import Bullets, FigureRef, Para, Section, Table
from nsightlab.present.render import Column, blank, heading, lines, report_table, table
from nsightlab.present.safe import rich_text
from nsightlab.runs import store
from nsightlab.units import percent, sig, usd

if TYPE_CHECKING:
    from nsightlab.analysis.fleet_models import FleetStatusReport
    from nsightlab.present.console import Env


def _num(v: float | None) -> str:
    return "" if v is None else sig(v)


def _pct(v: float | None) -> str:
    return "" if v is None else percent(v)


def _elapsed(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds:.1f}s" if seconds < 60 else human_duration(seconds)


def _where(row: JobRow) -> str:
    return row.key if row.key == row.instance_type else f"{row.instance_type} {row.key}"


# ---------------------------------------------------------------------------- live


def _cell_lines(texts: Sequence[str]) -> Any:
    """Lines from outside in one cell of a Rich table: each through terminal_safe (so
    none holds a line break of its own), joined by line breaks of ours."""
    # Rich loads only when something is drawn on a terminal
    from rich.text import Text

    return Text("\n").join(rich_text(t) for t in texts)


class PlainProgress:
    """A line on stderr whenever a Job's phase, node or reason changes (no terminal)."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self._seen: dict[str, tuple[str, str | None, str | None]] = {}

    def update(self, rows: Sequence[JobRow]) -> None:
        for row in rows:
            # a pod's container states come and go while it starts: its reason is news only
            # while it waits for a node, and once it has ended
            settled = row.phase not in ("Pending", "Running") or not row.node
            state = (row.phase, row.node, row.reason if settled else None)
            if self._seen.get(row.key) == state:
                continue
            self._seen[row.key] = state
            text = f"  {_where(row)}: {row.phase}"
            if row.node and row.node != row.key:
                text += f" on {row.node}"
            if row.reason and settled:
                text += f" ({row.reason})"
            if row.elapsed_s is not None:
                text += f" after {_elapsed(row.elapsed_s)}"
            self.env.note(text)
            for line in row.log_tail if row.phase in ("failed", "timeout") else []:
                self.env.note(f"      | {line}")


class LiveProgress:
    """The Jobs as a table redrawn in place on stderr (Rich Live)."""

    def __init__(self, env: Env, live: Any) -> None:
        self.env = env
        self.live = live

    def update(self, rows: Sequence[JobRow]) -> None:
        self.live.update(self.table(rows))

    @staticmethod
    def table(rows: Sequence[JobRow]) -> Any:
        # Rich loads only when something is drawn on a terminal
        from rich.table import Table as RichTable

        t = RichTable(box=None, header_style="bold", pad_edge=False)
        for name in ("TYPE / NODE", "PHASE", "NODE", "REASON", "ELAPSED"):
            t.add_column(name, justify="right" if name == "ELAPSED" else "left", overflow="fold")
        for row in rows:
            # the reason and the log lines come from the pod: each shown through terminal_safe,
            # one per line of the cell
            said = [row.reason] if row.reason else []
            if row.log_tail and row.phase in ("failed", "timeout"):
                said += row.log_tail[-3:]
            t.add_row(
                rich_text(_where(row)),
                rich_text(row.phase),
                rich_text(row.node if row.node and row.node != row.key else ""),
                _cell_lines(said),
                _elapsed(row.elapsed_s),
            )
        return t


@contextmanager
def progress(env: Env) -> Iterator[LiveProgress | PlainProgress]:
    """Rich Live on a terminal, plain lines otherwise; the live table is left as it last was."""
    if not env.err_tty:
        yield PlainProgress(env)
        return
    # Rich loads only when something is drawn on a terminal
    from rich.live import Live

    with Live(LiveProgress.table([]), console=env.err, refresh_per_second=4, transient=False) as live:
        yield LiveProgress(env, live)


# ---------------------------------------------------------------------------- results


def fleet_tables(result: FleetResult) -> list[Table]:
    """The Jobs, then the types (with the decode columns when they were asked for)."""
    entries = Table(
        title="Jobs",
        columns=[
            "TYPE",
            "NODE",
            "GPU",
            "STATUS",
            "LAUNCH (us)",
            "CACHE PEAK (TB/s)",
            "DRAM (TB/s)",
            "% OF SPEC",
            "OUTLIER",
            "RUN",
        ],
        right=[False, False, False, False, True, True, True, True, False, False],
        rows=[
            [
                e.instance_type,
                e.node or "",
                e.gpu_product or "",
                e.status,
                _num(e.launch_floor_us),
                _num(e.cache_peak_tbps),
                _num(e.dram_tbps),
                _pct(e.dram_pct_of_spec),
                "" if e.outlier is None else ("yes" if e.outlier else "no"),
                e.run_id or "",
            ]
            for e in result.entries
        ],
    )
    decode = any(t.decode is not None for t in result.types)
    cols = ["TYPE", "GPU", "NODES", "LAUNCH (us)", "CACHE PEAK (TB/s)", "DRAM (TB/s)", "% OF SPEC"]
    right = [False, False, True, True, True, True, True]
    if decode:
        cols += ["FITS", "MS/TOKEN", "TOKENS/S", "USD/HOUR", "USD/M TOKENS"]
        right += [False, True, True, True, True]
    rows = []
    for t in result.types:
        row = [
            t.instance_type,
            t.gpu_product or "",
            str(t.measured),
            _num(t.launch_floor_us),
            _num(t.cache_peak_tbps),
            _num(t.dram_tbps),
            _pct(t.dram_pct_of_spec),
        ]
        if decode:
            d = t.decode
            if d is None:
                row += [""] * 5
            else:
                row += [
                    "" if d.fits is None else ("yes" if d.fits else "no"),
                    _num(d.ms_per_token),
                    _num(d.tokens_per_s),
                    "" if d.usd_per_hour is None else usd(d.usd_per_hour),
                    "" if d.usd_per_million_tokens is None else usd(d.usd_per_million_tokens),
                ]
        rows.append(row)
    weights = next((t.decode.weights_gb for t in result.types if t.decode is not None), None)
    title = "Per type (median of its nodes)" + (
        f"; decode floor of {sig(weights)} GB of weights, batch 1" if weights is not None else ""
    )
    return [entries, Table(title=title, columns=cols, right=right, rows=rows)]


def log_tails(result: FleetResult) -> list[str]:
    """The last lines of each failed Job's log (its reason is in the notes)."""
    out = []
    for e in result.entries:
        if e.status in ("failed", "timeout") and e.log_tail:
            out.append(f"{e.instance_type}" + (f" on {e.node}" if e.node else "") + ":")
            out += [f"    | {line}" for line in e.log_tail]
    return out


# ---------------------------------------------------------------------------- the report


def report_sections(result: FleetResult, figure_key: str | None) -> Section:
    """The fleet in the report: its figure, its tables, what did not measure, the notes."""
    items: list[Any] = [
        Para(
            text=f"The same {result.dtype} bandwidth sweep as a Job on each "
            f"{'GPU node' if any(e.outlier is not None for e in result.entries) else 'GPU instance type'} of "
            f"context {result.context} (namespace {result.namespace})."
        ),
    ]
    if figure_key is not None:
        items.append(FigureRef(key=figure_key))
    items += fleet_tables(result)
    if result.notes:
        items.append(Bullets(items=[f"note: {n}" for n in result.notes]))
    return Section(level=2, heading=f"Fleet {result.fleet_id}", items=items)


def member_sweeps(result: FleetResult) -> list[tuple[str, SweepResult]]:
    """(label, sweep) for each measured Job whose sweep run is in this store."""

    out = []
    for e in result.entries:
        if e.run_id is None:
            continue
        try:
            found = store.stored_result(store.resolve(e.run_id).path)
        except (UsageError, ValueError, OSError):
            continue
        if isinstance(found, SweepResult):
            out.append((f"{e.instance_type}" + (f" {e.node}" if e.outlier is not None and e.node else ""), found))
    return out


# ---------------------------------------------------------------------------- the terminal


def fleet(env: Env, result: FleetResult) -> None:
    """A fleet's result: its Jobs, its types, the notes, the failed Jobs' last log lines."""
    n = len(result.types)
    heading(
        env,
        f"Fleet {result.fleet_id}: {result.dtype} bandwidth sweep on {n} instance type{'s' if n != 1 else ''} "
        f"(context {result.context}, namespace {result.namespace})",
    )
    for t in fleet_tables(result):
        blank(env)
        report_table(env, t)
    if result.notes:
        blank(env)
        heading(env, "Notes")
        lines(env, result.notes)
    tails = log_tails(result)
    if tails:
        blank(env)
        heading(env, "The failed Jobs' last log lines")
        lines(env, tails, bullet="")
    blank(env)
    lines(
        env,
        [
            f"stored as run {result.fleet_id} (`nsightlab runs show {result.fleet_id}`; `nsightlab report "
            f"{result.fleet_id}` draws the curves)"
        ],
        bullet="",
    )


def fleet_status(env: Env, report: FleetStatusReport, *, where: str = "") -> None:
    """`fleet status`: this owner's fleets, their age and Jobs by phase; `where` is the
    context options its commands need (`--context stg -n serving`)."""
    if not report.fleets:
        lines(
            env, [f"no fleet of {report.owner} in namespace {report.namespace} (context {report.context})"], bullet=""
        )
        return
    cols = [
        Column(c, justify="left" if c == "FLEET" else "right")
        for c in ("FLEET", "AGE", "WAITING", "PENDING", "RUNNING", "SUCCEEDED", "FAILED")
    ]
    rows = [
        [
            f.fleet_id,
            f.age,
            str(f.jobs.waiting) if f.planned is not None else "?",
            str(f.jobs.pending),
            str(f.jobs.running),
            str(f.jobs.succeeded),
            str(f.jobs.failed),
        ]
        for f in report.fleets
    ]
    table(env, cols, rows)
    blank(env)
    first = report.fleets[0].fleet_id
    opts = f" {where}" if where else ""
    lines(
        env,
        [
            f"collect {'it' if len(report.fleets) == 1 else first} with `nsightlab fleet collect {first}{opts}`, "
            f"remove it with `nsightlab cleanup --fleet {first}{opts}`"
            + ("" if len(report.fleets) == 1 else " (the same for the others, by their id)")
        ],
        bullet="",
    )
