"""`sweep` drawn: the table of sizes with its bars, the summary and the lesson; two
element sizes compared; torch against Triton."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsightlab.present.render import blank, heading, lines, report_table
from nsightlab.present.text import (
    SPREAD_NOTE,
    compare_heading,
    compare_lines,
    compare_table,
    impls_heading,
    impls_lines,
    impls_table,
    sweep_heading,
    sweep_summary_lines,
    sweep_table,
)

if TYPE_CHECKING:
    from nsightlab.analysis.sweep_impls import SweepImpls
    from nsightlab.analysis.sweep_result import SweepCompare, SweepResult
    from nsightlab.present.console import Env


def sweep(env: Env, result: SweepResult) -> None:
    """The sweep table (size, tensor, time per call and its spread, TB/s, % of spec,
    regime, bar), summary and lesson: the report's own table (`present.text`)."""
    s = result.summary
    heading(env, sweep_heading(result))
    blank(env)
    if result.rows:
        report_table(env, sweep_table(result))
        lines(env, [SPREAD_NOTE], bullet="")
    else:
        lines(env, ["no size was measured"], bullet="")
    blank(env)
    heading(env, "Summary")
    lines(env, sweep_summary_lines(result))
    if s.lesson:
        blank(env)
        heading(env, "What it means")
        lines(env, s.lesson)
    if s.notes:
        blank(env)
        heading(env, "Notes")
        lines(env, s.notes)
    if result.compare is not None:
        blank(env)
        sweep_compare(env, result.compare)
    if result.run_id:
        blank(env)
        lines(env, [f"stored as run {result.run_id} ({result.run_dir})"], bullet="")


def sweep_compare(env: Env, cmp: SweepCompare) -> None:
    """The float16 vs float32 check: sizes side by side, ratios, spreads, and the verdict."""
    heading(env, compare_heading(cmp))
    lines(env, [cmp.prediction], bullet="")
    if cmp.pairs:
        blank(env)
        report_table(env, compare_table(cmp))
        blank(env)
    lines(env, compare_lines(cmp))


def sweep_impls(env: Env, impls: SweepImpls) -> None:
    """torch and Triton side by side: each run's table is stored; here the pair per size,
    the launch floors and plateaus, what it teaches, and the verdict."""
    heading(env, impls_heading(impls))
    blank(env)
    report_table(env, impls_table(impls))
    lines(env, [SPREAD_NOTE, "TRITON/TORCH: Triton's time per call / torch's (below 1x: Triton is faster)."], bullet="")
    for run in impls.runs:
        blank(env)
        heading(env, f"{run.impl}, run {run.run_id or '-'}")
        lines(env, sweep_summary_lines(run))
    blank(env)
    heading(env, "What it means")
    lines(env, impls_lines(impls))
    notes = [n for run in impls.runs for n in run.summary.notes]
    if notes:
        blank(env)
        heading(env, "Notes")
        lines(env, list(dict.fromkeys(notes)))
    stored = [f"{r.run_id} ({r.impl})" for r in impls.runs if r.run_id]
    if stored:  # a comparison of runs read back is not stored again
        blank(env)
        lines(env, [f"stored as runs {', '.join(stored)}"], bullet="")
