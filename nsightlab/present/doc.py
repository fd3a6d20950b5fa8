"""The report's document model: sections of paragraphs, bullet lists, tables and figure
references (`docblocks`), every number already formatted. The builder (`report.py`) makes it; the
writers (`writers.py`) and the terminal (`render.py`) draw it; this module imports neither."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from nsightlab import __version__
from nsightlab.analysis.roofline import DecodeFloor
from nsightlab.models import Model
from nsightlab.present.docblocks import Section
from nsightlab.runs.listing import RunLine


class ReportDoc(Model):
    """The report, every number formatted: what md, HTML and the terminal render."""

    kind: Literal["report"] = "report"
    title: str
    created: datetime
    selection: str
    runs: list[RunLine]
    sections: list[Section]
    decode_floor: DecodeFloor | None = None
    notes: list[str] = Field(default_factory=list)
    nsightlab: str = __version__


class FigureFile(Model):
    key: str
    title: str
    caption: str
    png: str
    svg: str


class ReportFiles(Model):
    """`nsightlab report --json`: where everything went."""

    kind: Literal["report-files"] = "report-files"
    out_dir: str
    html: str
    markdown: str
    figures: list[FigureFile]
    runs: list[str]
    selection: str
    decode_floor: DecodeFloor | None = None
    notes: list[str] = Field(default_factory=list)
