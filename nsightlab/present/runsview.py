"""Stored runs drawn: the list, one run with its result, what was removed; the report on
the terminal and the files it wrote; `roofline`'s floor."""

from __future__ import annotations

import shlex
from datetime import timezone
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from nsightlab.analysis.decode_models import DecodeResult
from nsightlab.analysis.fleet_models import FleetResult
from nsightlab.analysis.ncu_result import NcuResult
from nsightlab.analysis.profile_models import ProfileResult
from nsightlab.analysis.sweep_result import SweepResult
from nsightlab.present.docblocks import Bullets, Para, Table
from nsightlab.present.render import Column, blank, heading, lines, note_lines, report_table, table
from nsightlab.present.resultviews import draw_result

if TYPE_CHECKING:
    from nsightlab.analysis.roofline import DecodeFloor
    from nsightlab.present.console import Env
    from nsightlab.present.doc import ReportDoc, ReportFiles
    from nsightlab.runs.listing import RemovedRuns, RunDetail, RunLine, RunsList


#: The kinds of result `runs show` draws, and their models.
_SHOWN: dict[str, type[BaseModel]] = {
    "profile": ProfileResult,
    "sweep": SweepResult,
    "ncu": NcuResult,
    "fleet": FleetResult,
    "decode": DecodeResult,
}


def _when(dt: Any) -> str:

    return f"{dt.astimezone(timezone.utc):%Y-%m-%d %H:%M}"


def runs_list(env: Env, listing: RunsList) -> None:
    """Stored runs, oldest first: id, kind, name, when (UTC), where, node, device, dtype, headline."""
    cols = [
        Column("ID"),
        Column("KIND"),
        Column("NAME"),
        Column("WHEN (UTC)"),
        Column("WHERE"),
        Column("NODE"),
        Column("DEVICE"),
        Column("DTYPE"),
        Column("HEADLINE"),
    ]
    rows = [
        [r.id, r.kind, r.name, _when(r.created), r.where, r.node or "", r.device or "", r.dtype or "", _state(r)]
        for r in listing.runs
    ]
    if not rows:
        lines(
            env,
            [f"no runs yet in {listing.runs_dir} (make one with `nsightlab profile lesson1` or `nsightlab sweep`)"],
            bullet="",
        )
        return
    table(env, cols, rows)


def _state(r: RunLine) -> str:
    """The headline of a complete run, else what is wrong with it."""
    if r.complete:
        return r.headline or ""
    if r.damaged:
        return f"(damaged: {r.problem})"
    return "(did not finish)" if r.problem in (None, "did not finish") else f"({r.problem})"


def run_detail(env: Env, detail: RunDetail) -> None:
    """One run: where and how it ran, its files, then its result as the live command shows it."""
    m = detail.meta
    heading(env, f"Run {m.id}: {m.kind} {m.name}, {_when(m.created)} UTC")
    facts = [
        f"folder: {detail.path}",
        f"target: {m.target}" + (f" (context {m.context}, namespace {m.namespace})" if m.context else ""),
    ]
    for label, value in (
        ("node", m.node),
        ("instance type", m.instance_type),
        ("node's GPU (its label)", m.node_gpu),
        ("device", detail.run.device),
        ("--device", m.device_requested),
        ("image", m.image),
        ("dtype", m.dtype),
        ("headline", m.headline),
        ("lab session (pod uid)", m.session_uid),
    ):
        if value:
            facts.append(f"{label}: {value}")
    versions = ", ".join(f"{k} {v}" for k, v in m.versions.items() if v)
    if versions:
        facts.append(f"versions: {versions}")
    if m.command:
        facts.append(f"command: {shlex.join(m.command)}")
    lines(env, facts)
    blank(env)
    table(
        env,
        [Column("FILE"), Column("BYTES", justify="right")],
        [[f.path, f"{f.bytes:,}"] for f in detail.files],
        title="Files",
    )
    if detail.result is None:
        blank(env)
        lines(env, ["no result.json: the run did not finish"], bullet="")
        return

    blank(env)
    model = _SHOWN.get(str(detail.result.get("kind")))
    if model is not None:
        draw_result(env, model.model_validate(detail.result))


def runs_removed(env: Env, removed: RemovedRuns) -> None:
    lines(
        env,
        [f"removed run {r.id} ({r.kind} {r.name}, {r.folder})" for r in removed.removed] or ["nothing removed"],
        bullet="",
    )


def decode_floor(env: Env, floor: DecodeFloor) -> None:
    """The per-token floor, measured and spec side by side."""

    # the report's sections (their models, the spec table, the figures' labels) load for the
    # floor alone: `runs` and `runs show` list and draw without them
    from nsightlab.present.reportsections import floor_table

    heading(env, f"Decode floor for {floor.weights_gb:g} GB of weights (one token, batch 1: weight bytes / bandwidth)")
    report_table(env, floor_table(floor))
    blank(env)
    lines(env, floor.summary)
    if floor.notes:
        lines(env, [f"note: {n}" for n in floor.notes])


def report_doc(env: Env, doc: ReportDoc) -> None:
    """The report in the terminal: the same sections as the HTML, bars instead of figures."""

    heading(env, doc.title)
    lines(env, [f"made {_when(doc.created)} UTC"], bullet="")
    for sec in doc.sections:
        blank(env)
        heading(env, sec.heading if sec.level == 2 else f"· {sec.heading}")
        for item in sec.items:
            if isinstance(item, Para):
                lines(env, [item.text], bullet="")
            elif isinstance(item, Bullets):
                lines(env, item.items)
            elif isinstance(item, Table):
                report_table(env, item)
                blank(env)
    if doc.notes:
        blank(env)
        heading(env, "Notes")
        lines(env, doc.notes)


def report_files(env: Env, files: ReportFiles) -> None:
    out = [f"report: {files.html}", f"markdown: {files.markdown}"]
    for f in files.figures:
        out.append(f"figure: {f.png} (and .svg)")
    lines(env, out, bullet="")
    if files.notes:
        note_lines(env, files.notes)
