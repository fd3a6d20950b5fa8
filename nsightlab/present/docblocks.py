"""The blocks of the report's document model (`nsightlab.present.doc`): paragraphs, bullet
lists, tables, figure references and the sections that hold them, every number already
formatted. A view that draws one table (the trace's, a fleet's) imports these alone,
without the report's own model and what it holds (the run store's lines, the floor)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from nsightlab.models import Model


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
