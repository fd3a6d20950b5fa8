"""`profile decode` and a trace's step anatomy drawn: per mode and batch, the steps of
each group, their top kernels and verdicts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nsightlab.present import decodedoc as dd
from nsightlab.present.render import blank, heading, lines, note_lines, report_table

if TYPE_CHECKING:
    from nsightlab.analysis.decode_models import DecodeResult, GroupSteps, TraceResult
    from nsightlab.present.console import Env


def decode(env: Env, result: DecodeResult) -> None:
    """Where a token's time goes: per mode and batch, the top kernels, the verdicts, the
    batch sweep against the roofline, what it means, and the notes."""
    heading(env, f"Decode: {dd.decode_heading(result)}")
    lines(env, dd.decode_facts(result), bullet="")
    blank(env)
    report_table(env, dd.decode_modes_table(result, title="Per mode and batch (each row its median step)"))
    lines(env, dd.decode_step_lines(result), bullet="")
    for t in dd.decode_kernel_tables(result):
        blank(env)
        report_table(env, t)
    blank(env)
    heading(env, "Verdict")
    lines(env, dd.decode_verdicts(result))
    if result.batch_sweep:
        blank(env)
        report_table(
            env,
            dd.batch_sweep_table(result.batch_sweep, title="Batch sweep: tokens/s against the roofline's prediction"),
        )
    if result.lesson:
        blank(env)
        heading(env, "What it means")
        lines(env, result.lesson)
    if result.notes:
        blank(env)
        note_lines(env, result.notes)
    if result.run_id:
        blank(env)
        lines(env, [f"run {result.run_id} stored"], bullet="")


def step_groups(env: Env, groups: Sequence[GroupSteps], *, cpu: bool, title: str = "Steps") -> None:
    """`analyze`'s step anatomy: a row per group of steps (its median step), what the row
    does not hold, their top kernels, verdicts."""
    if not groups:
        lines(env, ["no steps found in the trace (the notes say why)"], bullet="")
        return
    report_table(
        env,
        dd.steps_table(
            ["GROUP", "PHASE"],
            [[g.group or "(all steps)", g.phase] for g in groups],
            list(groups),
            None,
            cpu=cpu,
            title=f"{title} (each row its median step)",
        ),
    )
    lines(env, [x for g in groups for x in dd.step_lines(dd.group_name(g), g, cpu=cpu)], bullet="")
    for g in groups[:4]:
        t = dd.top_kernels_table(
            g, cpu=cpu, title=f"Top {'CPU ops' if cpu else 'kernels'} of the median step, by kind: {dd.group_name(g)}"
        )
        if t is not None:
            blank(env)
            report_table(env, t)
    if len(groups) > 4:
        lines(env, [f"... and {len(groups) - 4} more groups (all of them in --json)"], bullet="")
    blank(env)
    heading(env, "Verdict")
    lines(env, [f"{dd.group_name(g)}: {g.verdict.text}. Next: {g.verdict.next_step}." for g in groups])


def trace_result(env: Env, result: TraceResult) -> None:
    """`analyze` on a trace alone."""
    cpu = dd.is_cpu(result.device)
    heading(
        env,
        f"Trace {result.source} ({'Kineto' if result.input == 'kineto' else 'nsys exports'}): "
        f"{result.device or 'unknown device'}",
    )
    lines(env, [dd.trace_line(result.trace, cpu)], bullet="")
    blank(env)
    step_groups(env, result.steps, cpu=cpu)
    if not result.steps and result.kernels:  # no steps: the trace's kernels, as a kernel summary lists them
        blank(env)
        report_table(env, dd.trace_kernels_table(result.kernels, cpu=cpu))
    if result.notes:
        blank(env)
        note_lines(env, result.notes)
