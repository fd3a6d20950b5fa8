"""Drawing for people: the pieces every view is made of (tables, headings, lines, bars).
Rich on a terminal; plain, stable columns otherwise. The views of each command group are
the `*view` modules beside this one; `resultviews` names the view of each result type.

Every function takes the `Env`; none computes anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nsightlab.present.safe import rich_text, terminal_safe

if TYPE_CHECKING:
    from nsightlab.present.console import Env
    from nsightlab.present.docblocks import Table as ReportTable


class Column:
    def __init__(
        self, header: str, *, justify: str = "left", style: str | None = None, max_width: int | None = None
    ) -> None:
        self.header = header
        self.justify = justify
        self.style = style
        self.max_width = max_width


def table(env: Env, columns: Sequence[Column], rows: Sequence[Sequence[Any]], *, title: str | None = None) -> None:
    """A table on stdout: a Rich table on a terminal, aligned plain text otherwise. Every
    cell and the title are shown through `terminal_safe` (names in them come from traces
    and clusters), and Rich reads no markup in them."""
    cells = [["" if v is None else terminal_safe(v) for v in row] for row in rows]
    if env.out_tty:
        # Rich loads only when something is drawn on a terminal
        from rich.table import Table
        from rich.text import Text

        t = Table(
            title=rich_text(title) if title else None,
            title_justify="left",
            header_style="bold",
            box=None,
            pad_edge=False,
        )
        for c in columns:
            t.add_column(Text(c.header), justify=c.justify, style=c.style, max_width=c.max_width, overflow="fold")  # type: ignore[arg-type]
        for row in cells:
            t.add_row(*(Text(cell) for cell in row))
        env.out.print(t)
        return
    env.write(plain_table(columns, cells, title=terminal_safe(title) if title else None))


def plain_table(columns: Sequence[Column], cells: Sequence[Sequence[str]], *, title: str | None = None) -> str:
    """Aligned columns, two spaces apart, no trailing blanks (like kubectl's output)."""
    widths = [len(c.header) for c in columns]
    for row in cells:
        for i, v in enumerate(row):
            if len(v) > widths[i]:
                widths[i] = len(v)
    last = len(columns) - 1
    # one format string for every row: formatting runs in C, not per cell in Python
    spec = "  ".join(
        f"{{:>{w}}}" if c.justify == "right" else ("{}" if i == last else f"{{:<{w}}}")
        for i, (c, w) in enumerate(zip(columns, widths, strict=True))
    )
    lines = [title] if title else []
    lines.append(spec.format(*(c.header for c in columns)).rstrip())
    lines.extend(spec.format(*row).rstrip() for row in cells)
    return "\n".join(lines) + "\n"


def heading(env: Env, text: str) -> None:
    if env.out_tty:
        env.out.print(rich_text(text, style="bold"))
    else:
        env.write(terminal_safe(text) + "\n")


def lines(env: Env, items: Sequence[str], *, bullet: str = "- ") -> None:
    for item in items:
        if env.out_tty:
            env.out.print(rich_text(bullet + item), highlight=False)
        else:
            env.write(bullet + terminal_safe(item) + "\n")


def note_lines(env: Env, notes: Sequence[str]) -> None:
    """Each note on its own line, `note: ...`, without a bullet."""
    lines(env, [f"note: {n}" for n in notes], bullet="")


def blank(env: Env) -> None:
    env.write("\n")


# ---------------------------------------------------------------------------- bars

#: Width of the bar column, in character cells, for the largest TB/s.
BAR_WIDTH = 24


_EIGHTHS = " ▏▎▍▌▋▊▉█"


def bar(value: float, top: float, *, width: int = BAR_WIDTH, unicode: bool = True) -> str:
    """A horizontal bar, `width` cells at `top`: eighth blocks, or '#' without Unicode."""
    if top <= 0 or value <= 0:
        return ""
    cells = max(0.0, min(1.0, value / top)) * width
    if not unicode:
        return "#" * max(1, round(cells))
    full, part = int(cells), int((cells - int(cells)) * 8)
    text = "█" * full + (_EIGHTHS[part] if part else "")
    return text or "▏"


def _unicode_ok(env: Env) -> bool:
    return (env.out.encoding or "").lower().replace("-", "").startswith("utf")


def report_table(env: Env, t: ReportTable) -> None:
    """A report table; with bars (sweeps), a BAR column scaled to the largest value."""
    cols = [Column(c, justify="right" if r else "left") for c, r in zip(t.columns, t.right, strict=True)]
    rows: list[list[Any]] = [list(row) for row in t.rows]
    if t.bars is not None:
        cols.append(Column("BAR"))
        top = max(t.bars, default=0.0)
        uni = _unicode_ok(env)
        for row, value in zip(rows, t.bars, strict=True):
            row.append(bar(value, top, unicode=uni))
    table(env, cols, rows, title=t.title)
