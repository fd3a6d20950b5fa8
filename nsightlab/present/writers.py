"""The report as files: Markdown that shows the PNGs beside it, and one self-contained
HTML page (figures embedded as data: URIs, CSS inline, a Content-Security-Policy that
forbids fetching anything)."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from pathlib import Path

from nsightlab.present.doc import FigureFile, ReportDoc
from nsightlab.present.docblocks import Bullets, Para, Table
from nsightlab.present.safe import terminal_safe
from nsightlab.present.text import when_text

# Markdown's punctuation that can start a construct anywhere in a line: emphasis, code
# spans, links and images, raw HTML and autolinks, table cells, entities, headings,
# strikethrough. Each is written backslash-escaped, which shows it as itself.
_MD_PUNCTUATION = re.compile(r"[\\`*_\[\]<>|&#~!]")
# Constructs a line's first characters start: a list item (`- `, `+ `, `1. `, `2) `).
_MD_LINE_START = re.compile(r"^(\s*)([-+]|\d+(?=[.)]))")
# GitHub's bare autolinks: `scheme://...` and `www.`; an escaped `:` or `.` stops them.
_MD_AUTOLINK = re.compile(r"(?i):(?=//)|(?<![a-z0-9])(www)\.")


def _md(text: str) -> str:
    """`text` as Markdown that renders as that text and nothing else: controls and line
    separators (a newline, U+2028, U+0085, VT, FF) shown as escapes by `terminal_safe`, so
    nothing leaves its line or table cell; then every character that could start a
    heading, a link, an image, a code span, raw HTML or a cell boundary escaped."""
    safe = _MD_PUNCTUATION.sub(lambda m: "\\" + m.group(), terminal_safe(text))
    safe = _MD_AUTOLINK.sub(lambda m: m.group(1) + "\\." if m.group(1) else "\\:", safe)
    return _MD_LINE_START.sub(
        lambda m: m.group(1) + (m.group(2) + "\\" if m.group(2)[0].isdigit() else "\\" + m.group(2)), safe
    )


def render_markdown(doc: ReportDoc, figures: Sequence[FigureFile]) -> str:
    """GitHub-flavoured Markdown; figures reference the PNG files beside it."""
    by_key = {f.key: f for f in figures}
    out = [f"# {_md(doc.title)}", "", f"Made {when_text(doc.created)} by nsightlab {doc.nsightlab}.", ""]
    for sec in doc.sections:
        out += ["#" * sec.level + " " + _md(sec.heading), ""]
        for item in sec.items:
            if isinstance(item, Para):
                out += [_md(item.text), ""]
            elif isinstance(item, Bullets):
                out += [f"- {_md(b)}" for b in item.items] + [""]
            elif isinstance(item, Table):
                if item.title:
                    out += [f"**{_md(item.title)}**", ""]
                out.append("| " + " | ".join(_md(c) or " " for c in item.columns) + " |")
                out.append("|" + "|".join("---:" if r else "---" for r in item.right) + "|")
                out += ["| " + " | ".join(_md(c) for c in row) + " |" for row in item.rows]
                out.append("")
            else:
                fig = by_key.get(item.key)
                if fig is not None:
                    out += [
                        f"![{_md(fig.title)}]({Path(fig.png).name})",
                        "",
                        f"*{_md(fig.caption)}* ([SVG]({Path(fig.svg).name}))",
                        "",
                    ]
    if doc.notes:
        out += ["## Notes", ""] + [f"- {_md(n)}" for n in doc.notes] + [""]
    return "\n".join(out).rstrip() + "\n"


#: No fetch of any kind: images only from data: URIs, styles only inline.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


CSS = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1a1a1a;
       max-width: 1100px; margin: 2em auto; padding: 0 1.5em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.3em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
h3 { font-size: 1.1em; margin-top: 1.6em; }
.meta { color: #666; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 13px; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.3em; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #eee; vertical-align: top; }
th { text-align: left; background: #f6f6f6; font-weight: 600; }
td.r, th.r { text-align: right; font-variant-numeric: tabular-nums; }
td.bar { width: 180px; }
td.bar span { display: inline-block; height: 0.8em; background: #0072B2; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 13px; }
ul { padding-left: 1.4em; }
""".strip()


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _html_table(t: Table) -> str:
    top = max(t.bars or [0.0]) if t.bars else 0.0
    parts = ["<table>"]
    if t.title:
        parts.append(f"<caption>{_e(t.title)}</caption>")
    head = "".join(f'<th class="{"r" if r else "l"}">{_e(c)}</th>' for c, r in zip(t.columns, t.right, strict=True))
    if t.bars is not None:
        head += f"<th>{_e(t.bar_label or '')}</th>"
    parts.append(f"<thead><tr>{head}</tr></thead><tbody>")
    for i, row in enumerate(t.rows):
        tip = t.tooltips[i] if t.tooltips else None
        cells = "".join(
            f'<td class="{"r" if r else "l"}"'
            + (f' title="{_e(tip)}"' if tip and j == len(row) - 1 else "")
            + f">{_e(c)}</td>"
            for j, (c, r) in enumerate(zip(row, t.right, strict=True))
        )
        if t.bars is not None:
            width = 100.0 * t.bars[i] / top if top > 0 else 0.0
            cells += f'<td class="bar"><span style="width: {width:.1f}%"></span></td>'
        parts.append(f"<tr>{cells}</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def render_html(doc: ReportDoc, images: dict[str, tuple[FigureFile, bytes]]) -> str:
    """One self-contained page: every image a data: URI, CSS inline, nothing fetched."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(doc.title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{_e(doc.title)}</h1>",
        f'<p class="meta">Made {_e(when_text(doc.created))} by nsightlab {_e(doc.nsightlab)}.</p>',
    ]
    for sec in doc.sections:
        h = f"h{sec.level}"
        out.append(f"<section><{h}>{_e(sec.heading)}</{h}>")
        for item in sec.items:
            if isinstance(item, Para):
                out.append(f"<p>{_e(item.text)}</p>")
            elif isinstance(item, Bullets):
                out.append("<ul>" + "".join(f"<li>{_e(b)}</li>" for b in item.items) + "</ul>")
            elif isinstance(item, Table):
                out.append(_html_table(item))
            elif item.key in images:
                fig, png = images[item.key]
                data = base64.b64encode(png).decode("ascii")
                out.append(
                    f'<figure id="fig-{_e(fig.key)}"><img src="data:image/png;base64,{data}" alt="{_e(fig.title)}">'
                    f"<figcaption>{_e(fig.caption)}</figcaption></figure>"
                )
        out.append("</section>")
    if doc.notes:
        out.append("<section><h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in doc.notes) + "</ul></section>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
