"""report.md renders what nsightlab wrote and nothing else: a stored run whose kernel and
range names (and the notes quoting them) hold line breaks of every kind, pipes, backticks,
links, images, autolinks and HTML is reported, and report.md, parsed as Markdown, has
its tables whole (every row as many cells as its header), no heading, link, image, code
span or HTML it did not write, and no bare URL a renderer would turn into a link."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import hostile
import pytest
from clirun import run_cli
from markdown_it import MarkdownIt
from reportstore import _store

from nsightlab.runs.analyze import analyze_path

# Headings nsightlab writes in a report of one profile run (anything else was injected).
INJECTED = ("Injected", "separator", "Next line", "Vertical tab", "Form feed")


@pytest.fixture
def report_md(capsys: pytest.CaptureFixture[str], tmp_path: Path, nsl_home: Path) -> str:
    exports = hostile.nsys_exports(tmp_path / "nsys")
    run_id = _store("profile", "evil", hostile.hostile_profile(analyze_path(exports)), datetime.now(timezone.utc))
    out = tmp_path / "report"
    r = run_cli(capsys, "report", run_id, "--out", str(out))
    assert r.code == 0, r
    return (out / "report.md").read_text(encoding="utf-8")


def _tokens(md: str) -> list[Any]:
    parser = MarkdownIt("commonmark").enable("table").enable("strikethrough")
    return list(parser.parse(md))


def _inline_children(tokens: list[Any]) -> list[Any]:
    return [child for t in tokens if t.type == "inline" for child in (t.children or [])]


def test_every_table_row_keeps_its_cells(report_md: str) -> None:
    tokens = _tokens(report_md)
    tables = 0
    cells: list[int] = []
    for t in tokens:
        if t.type == "table_open":
            tables += 1
            cells = []
        elif t.type == "tr_open":
            cells.append(0)
        elif t.type in ("th_open", "td_open"):
            cells[-1] += 1
        elif t.type == "table_close":
            assert len(set(cells)) == 1, f"table {tables}: rows of {cells} cells"
    assert tables >= 3  # runs, kernels, ranges (and API calls)
    # and as many rows as the Markdown has table lines: no row was split by a line break
    rows = sum(1 for t in tokens if t.type == "tr_open")
    table_lines = [
        line for line in report_md.splitlines() if line.startswith("|") and not re.fullmatch(r"\|(-+:?\|)+", line)
    ]
    assert rows == len(table_lines)


def test_no_heading_link_image_code_or_html_it_did_not_write(report_md: str) -> None:
    tokens = _tokens(report_md)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    # a heading of nsightlab's may quote a name (escaped); none starts with what a name injected
    assert headings and not [h for h in headings if h.startswith(INJECTED)], headings
    children = _inline_children(tokens)
    kinds = {c.type for c in children}
    assert "code_inline" not in kinds and "html_inline" not in kinds
    assert not [
        t
        for t in tokens
        if t.type in ("html_block", "code_block", "fence", "bullet_list_open") and "evil" in (t.content or "")
    ]
    links = [c.attrGet("href") for c in children if c.type == "link_open"]
    images = [c.attrGet("src") for c in children if c.type == "image"]
    assert all(href and "://" not in str(href) and "evil" not in str(href) for href in links), links
    assert all(src and "://" not in str(src) and "evil" not in str(src) for src in images), images
    # GitHub turns bare URLs and www. into links: none is left unescaped in the text
    assert not re.search(r"[A-Za-z][A-Za-z0-9+.-]*://", report_md)
    assert not re.search(r"(?<![\w\\])www\.", report_md, flags=re.IGNORECASE)


def test_the_names_are_all_there_each_on_one_line(report_md: str) -> None:
    text_lines = report_md.splitlines()
    for marker in ("Injected heading", "Line separator", "Paragraph separator", "Next line", "Form feed"):
        found = [line for line in text_lines if marker in line]
        assert found, marker
        # on the line of the name that holds it: never at the start of a line of its own
        assert not [line for line in found if re.match(r"\s*(#+\s*)?" + marker, line)], (marker, found)
    assert "cell\\|break\\|out" in report_md
    assert "range\\\\n\\# Injected heading" in report_md  # the newline shown as \\n, the # escaped
