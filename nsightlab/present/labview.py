"""The lab pod drawn: `create`, `status`, `cleanup`, `events`, `doctor` and `copy` (its
byte counter while it runs, and what it copied)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from nsightlab import units
from nsightlab.k8s.pods import human_duration
from nsightlab.present.render import Column, blank, heading, lines, table
from nsightlab.present.safe import terminal_safe

if TYPE_CHECKING:
    from nsightlab.k8s.doctor import DoctorReport
    from nsightlab.k8s.labpod import CleanupReport, CopyResult, EventsReport, LabPod, StatusReport
    from nsightlab.present.console import Env


def _left(seconds: int | None) -> str:
    if seconds is None:
        return "?"

    return human_duration(seconds)


def lab_pod(env: Env, lab: LabPod, *, title: str) -> None:
    heading(env, title)
    facts = [
        f"context: {lab.context} ({lab.server or '?'}), namespace {lab.namespace}",
        f"pod: {lab.pod}: {lab.status}{', ready' if lab.ready else ''}",
        f"node: {lab.node or '<not scheduled>'}" + (f", {lab.instance_type}" if lab.instance_type else ""),
        f"GPU: {lab.gpu_product or ('model not known' if lab.node else 'none yet')}",
    ]
    if lab.scheduler:  # the scheduler's words: shown escaped, as every fact line is
        facts.append(f"scheduler: {lab.scheduler}")
    if lab.clock_ahead_s is not None:
        start = lab.started or lab.created
        life = f" {human_duration((lab.deadline - start).total_seconds())}" if lab.deadline and start else ""
        facts.append(
            f"deletes itself{life} after it started (activeDeadlineSeconds); the server's clock is ahead of this "
            f"machine's by {human_duration(lab.clock_ahead_s)}, so how long is left cannot be told from here"
        )
    elif lab.deadline:
        facts.append(
            f"deletes itself in {_left(lab.seconds_left)} (activeDeadlineSeconds, at {lab.deadline:%H:%M} UTC)"
        )
    lines(env, facts)
    if lab.next_steps:
        blank(env)
        heading(env, "Next")
        lines(env, lab.next_steps, bullet="  ")


def status(env: Env, report: StatusReport) -> None:
    if report.gone or report.lab is None:
        if report.note:
            lines(env, [f"{report.note}; the session was cleared (context {report.context})."], bullet="")
            return
        lines(
            env,
            [
                f"lab pod {report.pod} is gone (context {report.context}, namespace {report.namespace}); the "
                "session was cleared."
            ],
            bullet="",
        )
        if report.next_steps:
            lines(env, [f"start a new one with `{step}`" for step in report.next_steps], bullet="")
        return
    lab_pod(env, report.lab, title="Lab pod")


def cleanup(env: Env, report: CleanupReport) -> None:
    if report.context is None:
        return  # nothing was looked for: the note on stderr said so
    out = [f"deleted {name}" for name in report.deleted]
    if report.all_mine and not report.deleted:
        out.append(f"there were no lab pods of {report.owner} in {report.namespace}")
    else:
        out += [f"{name} was already gone" for name in report.already_gone]
    out += [f"left {name} alone (not yours)" for name in report.skipped]
    f = report.fleets
    if f is not None:
        out += [f"deleted fleet {fid}" for fid in f.fleets]
        out += [
            f"deleted {kind} {name}" for kind, names in (("job", f.jobs), ("configmap", f.configmaps)) for name in names
        ]
        out += [f"left {name} alone (not yours)" for name in f.skipped]
    lines(env, out or ["nothing to delete"], bullet="")


def events(env: Env, report: EventsReport) -> None:
    """The pod's Events as `kubectl describe pod` lists them."""
    where = f"pod {report.pod} (context {report.context}, namespace {report.namespace})"
    if report.gone:
        lines(env, [f"{where} is gone; the events still kept about that name:"], bullet="")
    if not report.events:
        lines(env, [f"no events for {where} (the API server keeps them about an hour)"], bullet="")
        return
    cols = [Column("TYPE"), Column("REASON"), Column("AGE"), Column("FROM"), Column("MESSAGE")]
    table(
        env, cols, [[e.type, e.reason, e.age, e.source, e.message] for e in report.events], title=f"Events of {where}"
    )


def doctor(env: Env, report: DoctorReport) -> None:
    heading(env, f"doctor: context {report.context}, server {report.server or '?'}, namespace {report.namespace}")
    for c in report.checks:
        mark = {True: "pass", False: "FAIL", None: "info"}[c.ok]
        style = {True: "green", False: "bold red", None: "dim"}[c.ok]
        text = terminal_safe(f"{c.name}: {c.detail}")  # the details quote the server's answers
        if env.out_tty:
            from rich.text import Text

            env.out.print(Text.assemble((f"{mark:4}", style), "  ", text), highlight=False)
        else:
            env.write(f"{mark:4}  {text}\n")
        if c.fix and c.ok is not True:
            lines(env, [f"fix: {c.fix}"], bullet="      ")


def copy_result(env: Env, result: CopyResult) -> None:
    """'copied 3 files, 1.50 MiB to :/tmp/ in 0.250 s (6.00 MiB/s)': nsightlab.units."""
    rate = f" ({units.size(result.bytes / result.seconds)}/s)" if result.seconds > 0 else ""
    lines(
        env,
        [
            f"copied {result.files} file{'s' if result.files != 1 else ''}, {units.size(result.bytes)} to "
            f"{result.destination} in {units.duration(result.seconds)}{rate}, sha256 verified"
        ],
        bullet="",
    )


@contextmanager
def transfer_progress(env: Env, label: str) -> Iterator[Callable[[int], None]]:
    """A byte counter on stderr (only on a terminal)."""
    if not env.err_tty:
        yield lambda n: None
        return
    from rich.progress import (  # Rich loads only when something is drawn on a terminal
        DownloadColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TransferSpeedColumn,
    )

    # the label names paths (the pod's among them): shown escaped, never read as markup
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=env.err,
        transient=True,
    ) as p:
        task = p.add_task(terminal_safe(label), total=None)
        yield lambda n: p.update(task, completed=n)
