"""`report`: the runs so far as a report a person would rather look at.

Three steps, each testable alone:

1. `select_runs`: which runs (given ones; else the current lab session's; else the latest
   of each kind), loaded from the store.
2. `build_report`: a `ReportDoc`, a document model made of sections (paragraphs, bullet
   lists, tables, figure references) with every number already formatted. It needs no
   matplotlib: `--terminal` renders it with Rich (runsview.report_doc).
3. `write_report`: the figures (nsightlab.present.figures), `report.md` (which references the
   PNGs beside it) and a self-contained `report.html` (images embedded as data: URIs, CSS
   inline, a Content-Security-Policy that forbids any fetch), written into a temporary
   folder beside DIR and moved into place, the HTML last.

The sections of each kind of run are built in `reportsections`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import webbrowser
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from nsightlab.analysis.colocate_models import ColocateResult
from nsightlab.analysis.decode_models import DecodeResult, DecodeTimelines
from nsightlab.analysis.fleet_models import FleetResult
from nsightlab.analysis.ncu_result import NcuResult
from nsightlab.analysis.profile_models import ProfileResult
from nsightlab.analysis.sweep_result import SweepResult
from nsightlab.analysis.tokenizer_result import TokenizerResult
from nsightlab.errors import Interrupted, UsageError
from nsightlab.present import figures, packfigure, sweepfigure
from nsightlab.present import figures as figs
from nsightlab.present.doc import FigureFile, ReportDoc, ReportFiles
from nsightlab.present.docblocks import Para, Section
from nsightlab.present.fleetview import member_sweeps, report_sections
from nsightlab.present.packdoc import colocate_section, tokenizer_section
from nsightlab.present.reportsections import (
    Loaded,
    decode_sections,
    environment_table,
    floor_section,
    ncu_sections,
    profile_sections,
    report_floor,
    runs_table,
    sweep_sections,
)
from nsightlab.present.text import roofline_remarks, series_name, tbps_text
from nsightlab.present.writers import render_html, render_markdown
from nsightlab.runs import store
from nsightlab.runs.listing import line, resolve_all
from nsightlab.runs.store import RunStatus
from nsightlab.runs.trace_files import load_timelines
from nsightlab.userconfig import ensure_home, load_session

if TYPE_CHECKING:
    from nsightlab.present.figures import Plot

# ---------------------------------------------------------------------------- choosing runs


@dataclass
class Selection:
    runs: list[Loaded]
    how: str
    notes: list[str] = field(default_factory=list)


def _load(status: RunStatus, notes: list[str]) -> Loaded | None:
    """A run to report, or None with a note saying why it is left out."""
    if status.meta is None or status.result is None:
        label = (
            f"run {status.meta.id} ({status.meta.kind} {status.meta.name})" if status.meta else f"run {status.run.id}"
        )
        if status.state == "damaged":
            notes.append(f"left out {label}: it is damaged ({status.problem})")
        else:
            notes.append(f"left out {label}: it did not finish (no result.json)")
        return None
    return Loaded(run=status.run, meta=status.meta, line=line(status), result=status.result)


def _latest(statuses: list[RunStatus], notes: list[str]) -> list[RunStatus]:
    """The latest complete run of each kind; for sweeps, the latest of each name. A
    damaged run that would have been chosen is named in a note."""

    def key(status: RunStatus) -> tuple[str, str]:
        if status.meta is not None:
            kind, name, dtype = status.meta.kind, status.meta.name, status.meta.dtype
        else:
            kind, name, _ = store.folder_facts(status.run)
            dtype = None
        # sweeps: the latest of each name (dtype, and the implementation and op where they
        # are not the default)
        return (kind, name or dtype or "") if kind == "sweep" else (kind, "")

    picked: dict[tuple[str, str], RunStatus] = {}
    for status in statuses:
        if status.complete:
            picked[key(status)] = status  # oldest first, so the last one wins
    for status in statuses:
        best = picked.get(key(status))
        if status.state == "damaged" and (best is None or status.run.folder > best.run.folder):
            notes.append(f"left out run {status.run.id}: it is damaged ({status.problem})")
    return sorted(picked.values(), key=lambda s: s.run.folder)


def select_runs(refs: Sequence[str]) -> Selection:
    """The runs to report: `refs` if given, else the current lab session's runs, else the
    latest finished run of each kind (of each dtype for sweeps). Damaged runs are left
    out with a note; when the only run asked for is damaged, that is the error (exit 2,
    naming the file)."""

    notes: list[str] = []
    if refs:
        chosen = [store.inspect(r) for r in resolve_all(list(refs))]
        how = "the runs given: " + ", ".join(refs)
    else:
        every = [store.inspect(r) for r in store.all_runs()]
        if not every:
            raise UsageError(
                "there are no runs yet", hint="Make one with `nsightlab profile lesson1` or `nsightlab sweep`."
            )
        session = load_session()
        chosen = []
        how = ""
        if session is not None:
            chosen = [s for s in every if s.meta is not None and s.meta.session_uid == session.uid]
            if chosen:
                how = f"the runs of the current lab session (pod {session.pod}, context {session.context})"
            else:
                notes.append(
                    f"the current lab session (pod {session.pod}) has no runs yet; showing the latest runs instead"
                )
        if not chosen:
            chosen = _latest(every, notes)
            how = "the latest run of each kind (of each dtype for sweeps)"
    chosen = sorted(chosen, key=lambda s: s.run.folder)  # in the order they ran
    loaded = [x for x in (_load(s, notes) for s in chosen) if x is not None]
    if not loaded:
        if len(chosen) == 1 and chosen[0].state == "damaged" and chosen[0].error is not None:
            raise chosen[0].error  # the file that cannot be read, named
        raise UsageError("none of the chosen runs has a result to report", hint="; ".join(notes) or None)
    return Selection(runs=loaded, how=how, notes=notes)


# ---------------------------------------------------------------------------- building the document


@dataclass
class ReportBundle:
    """The document and the typed results its figures are drawn from."""

    doc: ReportDoc
    sweeps: list[SweepResult]
    profiles: list[ProfileResult]
    ncus: list[NcuResult]
    figure_keys: list[str]
    # each fleet and its members' sweeps, labelled by instance type (and node)
    fleets: list[tuple[FleetResult, list[tuple[str, SweepResult]]]] = field(default_factory=list)
    decodes: list[DecodeResult] = field(default_factory=list)
    decode_data: dict[str, DecodeTimelines] = field(default_factory=dict)  # by run id: timeline.json
    packs: list[ColocateResult] = field(default_factory=list)  # `pack colocate` runs


def build_report(selection: Selection, *, weights_gb: float | None = None, now: datetime | None = None) -> ReportBundle:
    """The document for the selected runs. Pure apart from the clock."""

    now = now or datetime.now(timezone.utc)
    sweeps = [x.result for x in selection.runs if isinstance(x.result, SweepResult)]
    profiles = [x.result for x in selection.runs if isinstance(x.result, ProfileResult)]
    ncus = [x.result for x in selection.runs if isinstance(x.result, NcuResult)]
    fleets = [(x.result, member_sweeps(x.result)) for x in selection.runs if isinstance(x.result, FleetResult)]
    decodes = [x.result for x in selection.runs if isinstance(x.result, DecodeResult)]
    decode_data = {}
    for x in selection.runs:
        if isinstance(x.result, DecodeResult):
            loaded = load_timelines(x.run)
            if loaded is not None:
                decode_data[x.meta.id] = loaded
    for x in selection.runs:  # what the store knows fills what a result read from files lacks
        if "run_id" in type(x.result).model_fields and getattr(x.result, "run_id", None) is None:
            x.result.run_id = x.meta.id  # type: ignore[attr-defined]
        if isinstance(x.result, ProfileResult) and x.result.device_name is None and x.meta.gpu:
            x.result.device_name = x.meta.gpu
    keys: list[str] = []
    if sweeps:
        keys.append("sweep")
    if any(r.rates is not None and r.rates.intensity for p in profiles for r in p.ranges):
        keys.append("roofline")
    keys += [f"kernels-{p.run_id}" for p in profiles if p.kernels]
    for d in decodes:
        got = decode_data.get(d.run_id or "")
        if got is not None and got.timelines:
            keys.append(f"decode-steps-{d.run_id}")
        if len({x.batch for x in d.modes}) > 1:
            keys.append(f"decode-batch-{d.run_id}")
    lines = [x.line for x in selection.runs]
    sections = [
        Section(level=2, heading="Runs", items=[Para(text=f"This report shows {selection.how}."), runs_table(lines)]),
        Section(level=2, heading="Environment", items=[environment_table(selection.runs)]),
    ]
    if sweeps:
        sections += sweep_sections(sweeps)
    if profiles:
        sections += profile_sections(profiles, keys)
    if ncus:
        sections += ncu_sections(ncus)
    if decodes:
        sections += decode_sections(decodes, decode_data, keys)
    for fleet, curves in fleets:
        key = f"fleet-{fleet.fleet_id}" if curves else None
        if key is not None:
            keys.append(key)
        sections.append(report_sections(fleet, key))
    packs = [x.result for x in selection.runs if isinstance(x.result, ColocateResult)]
    keys += [f"pack-{p.run_id}" for p in packs]
    sections += [colocate_section(p, f"pack-{p.run_id}") for p in packs]
    sections += [tokenizer_section(x.result) for x in selection.runs if isinstance(x.result, TokenizerResult)]
    floor = None
    if weights_gb is not None:
        floor = report_floor(weights_gb, sweeps, profiles)
        sections.append(floor_section(floor))
    kinds = ", ".join(
        f"{n} {k}{'s' if n != 1 else ''}"
        for k, n in (
            ("sweep", len(sweeps)),
            ("profile", len(profiles)),
            ("ncu run", len(ncus)),
            ("decode run", len(decodes)),
            ("fleet", len(fleets)),
            ("packing run", len(packs)),
        )
        if n
    )
    doc = ReportDoc(
        title=f"nsightlab report: {kinds}",
        created=now,
        selection=selection.how,
        runs=lines,
        sections=sections,
        decode_floor=floor,
        notes=list(selection.notes),
    )
    return ReportBundle(
        doc=doc,
        sweeps=sweeps,
        profiles=profiles,
        ncus=ncus,
        figure_keys=keys,
        fleets=fleets,
        decodes=decodes,
        decode_data=decode_data,
        packs=packs,
    )


# ---------------------------------------------------------------------------- figures


def draw_figures(bundle: ReportBundle) -> list[Plot]:
    """The figures the document refers to (matplotlib needed: UsageError without it)."""

    plots: list[Plot] = []
    if bundle.sweeps:
        plots.append(sweepfigure.sweep_figure(bundle.sweeps))
    plateaus = [
        (
            s.summary.device_name or "",
            f"{tbps_text(s.summary.dram_tbps)}, run {s.run_id} ({series_name(s)})",
            s.summary.dram_tbps * 1e12,
        )
        for s in bundle.sweeps
        if s.summary.dram_tbps is not None
    ]
    roof = figures.roofline_figure(bundle.profiles, plateaus, remarks=roofline_remarks(bundle.profiles, bundle.sweeps))
    if roof is not None:
        plots.append(roof)
    for p in bundle.profiles:
        k = figures.kernels_figure(p)
        if k is not None:
            plots.append(k)
    for fleet, curves in bundle.fleets:
        if curves:
            plots.append(figures.fleet_figure(fleet.fleet_id, curves))
    for d in bundle.decodes:
        data = bundle.decode_data.get(d.run_id or "")
        label = f"run {d.run_id}" if d.run_id else "decode"
        if data is not None and f"decode-steps-{d.run_id}" in bundle.figure_keys:
            step_plot = figures.decode_steps_figure(d, data, label)
            if step_plot is not None:
                plots.append(step_plot)
        if f"decode-batch-{d.run_id}" in bundle.figure_keys:
            batch_plot = figures.decode_batch_figure(d, data, label)
            if batch_plot is not None:
                plots.append(batch_plot)
    plots += [packfigure.colocate_figure(p) for p in bundle.packs if f"pack-{p.run_id}" in bundle.figure_keys]
    return plots


# ---------------------------------------------------------------------------- writing


def default_out_dir(now: datetime | None = None) -> Path:
    """$NSIGHTLAB_HOME/reports/<time>, the home checked writable first (exit 2 naming it)."""
    now = now or datetime.now(timezone.utc)
    return ensure_home() / "reports" / f"{now:%Y%m%dT%H%M%SZ}"


def _cannot_write(out_dir: Path, e: OSError) -> UsageError:
    return UsageError(
        f"cannot write the report in {out_dir.parent} ({e.strerror or e})",
        hint="Give --out a folder you can write in (or free some space there).",
    )


def write_report(bundle: ReportBundle, out_dir: Path) -> ReportFiles:
    """Figures, report.md and report.html into `out_dir`, all or nothing.

    Everything is written into a fresh folder beside `out_dir`; a new `out_dir` is that
    folder renamed, an existing one receives the files one atomic rename at a time, the
    HTML last. Other files already in `out_dir` are left alone.
    """

    out_dir = out_dir.expanduser().absolute()
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir} exists and is not a folder")
    plots = draw_figures(bundle)  # before touching the disk: a missing matplotlib writes nothing
    tmp = out_dir.parent / f".{out_dir.name}.{secrets.token_hex(4)}.tmp"
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
    except OSError as e:
        raise _cannot_write(out_dir, e) from None
    replacing = False
    try:
        files: list[FigureFile] = []
        images: dict[str, tuple[FigureFile, bytes]] = {}
        for plot in plots:
            png, svg = figs.save(plot, tmp)
            plot.figure.clear()
            f = FigureFile(
                key=plot.key,
                title=plot.title,
                caption=plot.caption,
                png=str(out_dir / png.name),
                svg=str(out_dir / svg.name),
            )
            files.append(f)
            images[plot.key] = (f, png.read_bytes())
        (tmp / "report.md").write_text(render_markdown(bundle.doc, files), encoding="utf-8")
        (tmp / "report.html").write_text(render_html(bundle.doc, images), encoding="utf-8")
        if not out_dir.exists():
            os.replace(tmp, out_dir)
        else:
            replacing = True
            for path in sorted(tmp.iterdir(), key=lambda p: p.name == "report.html"):
                os.replace(path, out_dir / path.name)
            tmp.rmdir()
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, KeyboardInterrupt):
            left = (
                f"some figures in {out_dir} were replaced; its report.html is the one from before"
                if replacing
                else "no report was written"
            )
            raise Interrupted(f"interrupted: {left}") from None
        if isinstance(e, OSError):  # a full disk, a folder made read-only meanwhile
            raise _cannot_write(out_dir, e) from None
        raise
    return ReportFiles(
        out_dir=str(out_dir),
        html=str(out_dir / "report.html"),
        markdown=str(out_dir / "report.md"),
        figures=files,
        runs=[x.id for x in bundle.doc.runs],
        selection=bundle.doc.selection,
        decode_floor=bundle.doc.decode_floor,
        notes=bundle.doc.notes,
    )


def open_in_browser(path: str) -> bool:
    """Open the HTML in the user's browser ($BROWSER is honoured)."""

    with contextlib.suppress(webbrowser.Error):
        return webbrowser.open(Path(path).as_uri())
    return False
