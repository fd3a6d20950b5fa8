"""A `bench/gpu_run.sh` folder on the terminal: the machine, each record drawn as the lab
draws it, the steps, the sanity table last (the part to read first), the notes."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nsightlab.analysis.colocate_models import ColocateResult
from nsightlab.analysis.decode_models import DecodeResult
from nsightlab.analysis.gpurun_result import GpuRunResult, RunRecord
from nsightlab.analysis.ncu_result import NcuResult
from nsightlab.analysis.profile_models import ProfileResult
from nsightlab.analysis.sanity import SanityRow
from nsightlab.analysis.sweep_impls import SweepImpls
from nsightlab.analysis.sweep_result import SweepResult
from nsightlab.present import decodeview, profileview, render, sweepview
from nsightlab.present.packview import draw_colocate
from nsightlab.present.render import Column
from nsightlab.present.safe import terminal_safe
from nsightlab.present.text import SPREAD_NOTE, impls_heading, impls_lines, impls_table, sweep_summary_lines
from nsightlab.units import sig

if TYPE_CHECKING:
    from pydantic import BaseModel

    from nsightlab.present.console import Env


def _esc(text: object) -> str:
    """A string from the run's folder, safe to show (None as empty)."""
    return "" if text is None else terminal_safe(str(text))


def draw_gpu_run(env: Env, result: GpuRunResult) -> None:
    where = "the CPU" if result.device == "cpu" else "a GPU"
    render.heading(env, f"GPU run on {where}: {_esc(result.source)}" + (" (tiny sizes)" if result.tiny else ""))
    facts = [f"machine: {_esc(result.machine or 'unknown (no facts)')}"]
    if result.started:
        facts.append(
            f"started {_esc(result.started)}, {_esc(result.finished or 'did not finish packing')}"
            + (f"; budget {result.budget_s} s" if result.budget_s else "")
        )
    render.lines(env, facts, bullet="")
    for record in result.records:
        render.blank(env)
        render.heading(env, f"== {_esc(record.step)}: {_esc(record.file)}")
        _record(env, record)
    render.blank(env)
    render.table(
        env,
        [
            Column("STEP"),
            Column("STATUS"),
            Column("SECONDS", justify="right"),
            Column("BUDGET", justify="right"),
            Column("DETAIL", max_width=90),
        ],
        [
            [_esc(s.step), s.status, "" if s.seconds is None else f"{s.seconds:g}", s.budget_s or "", _esc(s.detail)]
            for s in result.steps
        ],
        title="Steps",
    )
    render.blank(env)
    draw_sanity(env, result.sanity)
    if result.notes:
        render.blank(env)
        render.heading(env, "Notes")
        render.lines(env, [_esc(n) for n in result.notes])
    render.blank(env)
    render.lines(
        env, ["files: " + ", ".join(f"{_esc(f.name)} ({sig(f.bytes / 2**20)} MiB)" for f in result.files)], bullet=""
    )


def _record(env: Env, record: RunRecord) -> None:
    _RECORD_VIEWS[type(record.result)](env, record.result)


def _impls(env: Env, impls: SweepImpls) -> None:
    """torch against Triton, as `sweep --impl torch,triton` draws it (these runs are not stored)."""
    render.heading(env, impls_heading(impls))
    render.blank(env)
    render.report_table(env, impls_table(impls))
    render.lines(
        env, [SPREAD_NOTE, "TRITON/TORCH: Triton's time per call / torch's (below 1x: Triton is faster)."], bullet=""
    )
    for run in impls.runs:
        render.blank(env)
        render.heading(env, run.impl)
        render.lines(env, sweep_summary_lines(run))
    render.blank(env)
    render.heading(env, "What it means")
    render.lines(env, impls_lines(impls))


#: A record's view: as the lab draws that result, but torch against Triton, whose runs
#: are not stored.
_RECORD_VIEWS: dict[type[BaseModel], Callable[[Env, Any], None]] = {
    ProfileResult: profileview.profile,
    SweepResult: sweepview.sweep,
    DecodeResult: decodeview.decode,
    NcuResult: profileview.ncu,
    ColocateResult: draw_colocate,
    SweepImpls: _impls,
}


def _ok(row: SanityRow) -> str:
    return "not checked" if row.ok is None else ("ok" if row.ok else "FINDING")


def _num(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{sig(value, 4)} {unit}"


def draw_sanity(env: Env, rows: list[SanityRow]) -> None:
    """The figures against their physical bounds; each finding's note below the table."""
    if not rows:
        render.lines(env, ["Sanity: no figure of this run has a bound to check (no record was read)"], bullet="")
        return
    render.table(
        env,
        [
            Column("CHECK", max_width=70),
            Column("VALUE", justify="right"),
            Column("BOUND", justify="right"),
            Column("RESULT"),
            Column("SOURCE", max_width=60),
        ],
        [
            [_esc(r.check), _num(r.value, r.unit), f"{r.relation} {_num(r.bound, r.unit)}", _ok(r), _esc(r.source)]
            for r in rows
        ],
        title="Sanity: measured figures against physical bounds",
    )
    explained = [f"{_ok(r)}: {_esc(r.check)}: {_esc(r.note)}" for r in rows if r.note]
    if explained:
        render.lines(env, explained)
