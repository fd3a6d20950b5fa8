"""The queries an nsys SQLite export runs beside its main pass, in a thread on a second
read-only connection (`nsightlab.parse.nsys_sqlite_side`): their rows are those the main
connection reads, an error among them is raised where the rows are asked for, and closing
the export stops a query under way instead of waiting for it."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from test_nsys_sqlite import capture

from nsightlab.errors import ParseError
from nsightlab.parse.nsys_sqlite import NsysSqlite
from nsightlab.parse.nsys_sqlite_side import SideQueries

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


def test_rows_read_beside_the_main_pass_are_those_read_on_it(tmp_path: Path) -> None:
    path = capture(tmp_path / "c.sqlite")
    with NsysSqlite(path) as alone:
        summary, names = list(alone.api_summary()), alone.api_name_ids()
    with NsysSqlite(path) as db:
        db.prefetch()
        assert db._side is not None and db._side.has("api_summary") and db._side.has("api_name_ids")
        assert list(db.api_summary()) == summary and db.api_name_ids() == names
        assert not db._side.has("api_summary")  # taken once; asked again, it is read on the main connection
        assert list(db.api_summary()) == summary
    assert len(summary) == 4 and sorted(names) == sorted(row[0] for row in summary)


def test_an_error_in_the_thread_is_raised_where_its_rows_are_asked_for(tmp_path: Path) -> None:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    side = SideQueries(conn, {"bad": "SELECT x FROM no_such_table", "after": "SELECT 1"})

    def error(e: sqlite3.Error) -> Exception:
        return ParseError(f"SQLite could not read it ({e})", source="x.sqlite")

    with pytest.raises(ParseError, match="no such table: no_such_table"):
        side.rows("bad", error)
    with pytest.raises(ParseError, match="no such table"):  # the queries after it did not run
        side.rows("after", error)
    side.close()


def test_closing_stops_a_query_under_way() -> None:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    side = SideQueries(conn, {"endless": ENDLESS, "next": "SELECT 1"})
    closer = threading.Thread(target=side.close, daemon=True)
    closer.start()
    closer.join(300)  # an endless query: without the interrupt, close would never return
    assert not closer.is_alive()
    assert "next" not in side._results  # nor did it start the next one
