"""The report's document model: sections of paragraphs, bullet lists, tables and figure
references, every number already formatted. The builder (`report.py`) makes it; the
writers (`writers.py`) and the terminal (`render.py`) draw it; this module imports neither."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from nsightlab import __version__
from nsightlab.analysis.roofline import DecodeFloor
from nsightlab.models import Model
from nsightlab.runs.listing import RunLine


class Para(Model):
    type: Literal["para"] = "para"
    text: str


class Bullets(Model):
    type: Literal["bullets"] = "bullets"
    items: list[str]


class Table(Model):
    type: Literal["table"] = "table"
    title: str | None = None
    columns: list[str]
    right: list[bool]  # right-align this column
    rows: list[list[str]]
    bars: list[float] | None = None  # one value per row, drawn as a bar (terminal, HTML)
    bar_label: str | None = None
    tooltips: list[str] | None = None  # one per row, on its last cell in HTML (full kernel names)


class FigureRef(Model):
    type: Literal["figure"] = "figure"
    key: str


Item = Annotated[Para | Bullets | Table | FigureRef, Field(discriminator="type")]


class Section(Model):
    level: int  # 2: a part of the report; 3: one run inside it
    heading: str
    items: list[Item] = Field(default_factory=list)


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
