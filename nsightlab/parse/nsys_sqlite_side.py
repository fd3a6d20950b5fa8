"""Queries of an nsys SQLite export run beside the main pass: on a second read-only
connection, in a thread, while the main connection reads the GPU operations.

Python's `sqlite3` lets go of the GIL while SQLite steps a statement, so a query whose work
is SQLite's (a `GROUP BY` over the million-row CUDA API table) runs on the other core while
the main thread waits for its own query or converts its rows. Only queries whose answer is
a few rows run here (their rows are held until asked for): never one that returns a row an
operation, which the main pass streams.

The thread is joined before its rows are read and when the export is closed (an
interrupted main thread first interrupts the side query, so closing never waits long). An
error in the thread is raised where the rows are asked for, on the main thread, as the
error the same query would have raised there.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

Rows = list[tuple[object, ...]]


class SideQueries:
    """Runs `queries` ({key: SQL}) in order on `conn`, in a thread started at
    once; `rows(key)` waits for them and returns that query's rows (each key once)."""

    def __init__(self, conn: sqlite3.Connection, queries: dict[str, str]) -> None:
        self.conn = conn
        self._keys = set(queries)
        self._results: dict[str, Rows] = {}
        self._error: Exception | None = None
        self._closing = False
        self._thread = threading.Thread(target=self._run, args=(dict(queries),), name="nsys-sqlite-side", daemon=True)
        self._thread.start()

    def _run(self, queries: dict[str, str]) -> None:
        for key, sql in queries.items():
            if self._closing:
                return
            try:
                self._results[key] = self.conn.execute(sql).fetchall()
            except Exception as e:  # raised on the main thread by rows()
                self._error = e
                return

    def has(self, key: str) -> bool:
        """Whether `key` is one of the queries (and its rows were not taken yet)."""
        return key in self._keys

    def rows(self, key: str, error: Callable[[sqlite3.Error], Exception]) -> Rows:
        """The rows of query `key`, once it has run; `error` makes the exception raised
        when it failed (or a query before it did)."""
        self._keys.discard(key)
        self._thread.join()
        if key not in self._results:
            if isinstance(self._error, sqlite3.Error):
                raise error(self._error) from None
            raise RuntimeError("a side query of the export failed") from self._error
        return self._results.pop(key)

    def close(self) -> None:
        """Stop the query under way (if any), wait for the thread, close the connection."""
        self._closing = True
        while self._thread.is_alive():  # again until it stops: an interrupt before a statement starts is lost
            self.conn.interrupt()
            self._thread.join(0.05)
        self.conn.close()
