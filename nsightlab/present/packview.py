"""`pack`, `pack colocate` and `pack tokenizer` drawn on the terminal: the tables of
`packdoc`, the settings to ask for, the notes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsightlab.analysis.colocate_models import ColocateResult
from nsightlab.analysis.pack_plan import PackReport
from nsightlab.analysis.tokenizer_result import TokenizerResult
from nsightlab.present import render
from nsightlab.present.packdoc import (
    CHANGED_NOTHING,
    colocate_heading,
    colocate_table,
    esc,
    pack_heading,
    pack_tables,
    settings_lines,
    tokenizer_table,
)

if TYPE_CHECKING:
    from nsightlab.present.console import Env


def draw_pack(env: Env, report: PackReport) -> None:
    """The namespace's analysis on the terminal."""
    render.heading(env, pack_heading(report))
    for t in pack_tables(report):
        render.blank(env)
        render.report_table(env, t)
    lines = settings_lines(report)
    if lines:
        render.blank(env)
        render.heading(env, "Per-copy settings to ask for")
        render.lines(env, lines)
    if report.notes:
        render.blank(env)
        render.heading(env, "Notes")
        render.lines(env, [esc(n) for n in report.notes])
    render.blank(env)
    render.lines(env, [CHANGED_NOTHING], bullet="")


def draw_colocate(env: Env, result: ColocateResult) -> None:
    render.heading(env, colocate_heading(result))
    render.report_table(env, colocate_table(result))
    render.blank(env)
    render.heading(env, "What it shows")
    render.lines(env, [esc(x) for x in result.lesson])
    if result.notes:
        render.lines(env, [f"note: {esc(n)}" for n in result.notes])
    if result.run_id:
        render.blank(env)
        render.lines(
            env,
            [f"stored as run {result.run_id} (`nsightlab report {result.run_id}` draws it)"],
            bullet="",
        )


def draw_tokenizer(env: Env, result: TokenizerResult) -> None:
    render.report_table(env, tokenizer_table(result))
    render.blank(env)
    render.lines(env, [esc(x) for x in result.lesson])
    if result.notes:
        render.lines(env, [f"note: {esc(n)}" for n in result.notes])
    if result.run_id:
        render.blank(env)
        render.lines(env, [f"stored as run {result.run_id}; pack takes the latest tokenizer run"], bullet="")
