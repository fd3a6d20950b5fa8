"""Nsight Systems' own database: the SQLite export of a report (`nsys export --type sqlite`,
or the NAME.sqlite that `nsys stats` writes beside NAME.nsys-rep), read-only and streamed.

Opening. The file must be a regular file whose first 16 bytes are SQLite's magic (read
before SQLite sees it). It is opened through a `file:PATH?mode=ro` URI with
`PRAGMA query_only` and `trusted_schema=OFF`: nothing is ever written to it, and for a
database in rollback-journal mode (every nsys export) SQLite creates no file beside it
(no -journal, -wal or -shm). `immutable=1` (no locking, no change detection) is used only
where it is safe and needed:
- the file is in WAL mode (not nsys's, but a user may have converted one): `mode=ro`
  alone would create -wal and -shm files beside it; with a non-empty -wal beside it the
  file alone is not the database, and that is an error;
- another process holds a write lock (SQLITE_BUSY after `LOCK_WAIT_S`) and no -journal
  is beside the file: in rollback mode a writer changes the file only after writing its
  -journal, so without one the file is as the last commit left it, and is read as it is
  (with a note). With a -journal beside a locked file, or a hot journal left by a write
  that died, the file may be half-written: a one-line error.

What is read. Only tables and columns this module names (never SQL or names taken from
the file), each checked to exist first (`sqlite_master`, `PRAGMA table_xinfo`) as a
plain table (not a view, a virtual table, or a generated column). Timestamps and ids
must be whole numbers (a REAL, text or NaN/inf cell is an error naming table, column and
row). Rows stream from the cursor in time order.

Schema versions (nsys 2021 to today). The version is `EXPORT_SCHEMA_VERSION` of
`META_DATA_EXPORT` (nsys 2023.3 and later) or `EXPORT_META_DATA` (2023.1: 3.1.2); exports
older than that record none. Names are `StringIds` ids; the GPUs are `TARGET_INFO_GPU`
(keyed by `id`; with `TARGET_INFO_CUDA_DEVICE`, 2025+, mapping each process's CUDA device
id to it) or, in early 2021, `TARGET_INFO_CUDA_GPU` keyed by `deviceId`; NVTX texts are in
`text` or, for registered strings, `textId`. A major version other than 2 or 3 is an
unknown schema: a one-line error naming it.
"""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
import stat
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from nsightlab.errors import ParseError

SQLITE_MAGIC = b"SQLite format 3\x00"
SUPPORTED_MAJOR = (2, 3)
# A memset's name code in `op_chunks` (kernels' are StringIds ids, memcpys' -1 - copy kind).
MEMSET_CODE = -(1 << 20)
# Rows fetched from SQLite at a time.
CHUNK_ROWS = 1 << 14
# How long to wait for another process's write lock before reading without locking.
LOCK_WAIT_S = 2.0
# The longest string or blob a query may return (kernel names run to a few kB).
MAX_VALUE_BYTES = 1 << 22
# Timestamps and ids stay well inside 64 bits, so sums and differences cannot overflow.
_BOUND = 1 << 62

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX = "NVTX_EVENTS"
STRINGS = "StringIds"
CUDA_TABLES = (KERNEL, MEMCPY, MEMSET, RUNTIME)
# The version in an nsys install folder's name: `nsight-systems/2021.2.1/`, `nsight-systems-2022.4.2/`.
_INSTALLED = re.compile(r"nsight-systems[/-](20\d\d\.\d+\.\d+(?:\.\d+)?)/")
META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")

# NVTX event types (ENUM_NSYS_EVENT_TYPE): ranges and domain names.
PUSH_POP = (59, 70)  # NvtxPushPopRange, NvtxtPushPopRange
START_END = (60, 71)  # NvtxStartEndRange, NvtxtStartEndRange
DOMAIN_CREATE = 75
# The event classes (ENUM_NSYS_EVENT_CLASS) of the backtraces nsys keeps in the CUDA API
# table when it records them (`--cudabacktrace`): TRACE_PROCESS_EVENT_CUDABACKTRACE and its
# _START and _FINISH. A backtrace row repeats a call, with the call's correlation id; it is
# not a call, so it is left out of the counts and of the launch join.
BACKTRACE_CLASSES = (67, 68, 69)

# CUPTI's memcpy kinds, for exports without ENUM_CUDA_MEMCPY_OPER (before 2022), in the
# spelling nsys printed then.
_OLD_COPY_LABELS = {
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
}


def split_global_tid(gtid: int | None) -> tuple[int | None, int | None]:
    """(pid, tid) of a serialized GlobalId (`globalTid`: pid in bits 24-47, tid below)."""
    if gtid is None:
        return None, None
    return (gtid >> 24) & 0xFFFFFF, gtid & 0xFFFFFF


class NsysSqlite:
    """An open nsys export: its schema, version and the streaming queries over it.

    Use as a context manager. Raises ParseError (exit 2) for a file that is not SQLite, a
    damaged database, an SQLite file that is not an nsys export, an unknown schema
    version, or a file another process is writing."""

    def __init__(self, path: str | Path, *, lock_wait_s: float = LOCK_WAIT_S) -> None:
        self.path = Path(path)
        self.source = str(path)
        self.notes: list[str] = []
        wal = _check_file(self.path, self.source)
        self.conn = self._connect(wal, lock_wait_s)
        try:
            self.tables = self._schema()
            self.schema_version, self.product_version = self._version()
        except BaseException:
            self.conn.close()
            raise
        self._strings: dict[int, str] = {}
        self.dangling: set[int] = set()

    def __enter__(self) -> NsysSqlite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    # ------------------------------------------------------------------ opening

    def fail(self, message: str, hint: str | None = None) -> ParseError:
        return ParseError(message, source=self.source, hint=hint)

    def _uri(self, immutable: bool) -> str:
        path = urllib.parse.quote(str(self.path.resolve()))
        return f"file:{path}?mode=ro" + ("&immutable=1" if immutable else "")

    def _open(self, immutable: bool, lock_wait_s: float) -> sqlite3.Connection:
        conn = sqlite3.connect(self._uri(immutable), uri=True, timeout=lock_wait_s, check_same_thread=False)
        try:
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
            conn.execute("PRAGMA query_only = ON")
            conn.execute("PRAGMA trusted_schema = OFF")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # takes the read lock, reads the header
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect(self, wal: bool, lock_wait_s: float) -> sqlite3.Connection:
        journal = Path(self.source + "-journal")
        try:
            return self._open(wal, lock_wait_s)
        except sqlite3.OperationalError as e:
            code = getattr(e, "sqlite_errorname", "")
            if code == "SQLITE_BUSY" and not journal.exists():
                self.notes.append(
                    f"{self.path.name} is locked by another process: read as it is on disk, without locking "
                    "(no write to it had begun)"
                )
                try:
                    return self._open(True, lock_wait_s)
                except sqlite3.Error as again:
                    raise self._db_error(again) from None
            if code == "SQLITE_BUSY":
                raise self.fail(
                    "another process is writing this file (it is locked and its -journal is beside it)",
                    hint="Wait for the export to finish, then run this again",
                ) from None
            if code == "SQLITE_READONLY_ROLLBACK":
                raise self.fail(
                    f"a write to this file did not finish ({journal.name} is beside it): it may be half-written",
                    hint=self.reexport_hint(),
                ) from None
            raise self._db_error(e) from None
        except sqlite3.Error as e:
            raise self._db_error(e) from None

    def reexport_hint(self) -> str:
        """What to do about a damaged export: the nsys command that writes it again."""
        argv = ["nsys", "export", "--type", "sqlite", "--output", self.source, "--force-overwrite", "true"]
        return f"Export the report again: `{shlex.join([*argv, str(self.path.with_suffix('.nsys-rep'))])}`."

    def _db_error(self, e: sqlite3.Error) -> ParseError:
        text = str(e)
        code = getattr(e, "sqlite_errorname", "")
        if code in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or "malformed" in text or "not a database" in text:
            return ParseError(
                f"the database is damaged or cut short ({text})", source=self.source, hint=self.reexport_hint()
            )
        return self.fail(f"SQLite could not read it ({text})")

    def query(self, sql: str, params: Sequence[object] = ()) -> Iterator[tuple[object, ...]]:
        """Rows of one of this module's own queries, as they come; SQLite's errors (a
        damaged page met halfway) become one ParseError."""
        try:
            cursor = self.conn.execute(sql, tuple(params))
            cursor.arraysize = 4096
            while True:
                rows = cursor.fetchmany()
                if not rows:
                    return
                yield from rows
        except sqlite3.Error as e:
            raise self._db_error(e) from None

    def _schema(self) -> dict[str, dict[str, str]]:
        """The plain tables (not views or virtual tables) and their ordinary columns."""
        tables: dict[str, dict[str, str]] = {}
        for name, sql in list(self.query("SELECT name, sql FROM sqlite_master WHERE type = 'table'")):
            if not isinstance(name, str) or not isinstance(sql, str) or sql.lstrip().upper().startswith("CREATE VIRT"):
                continue
            tables[name] = {}
        for name in tables:
            for row in self.query("SELECT name, type, hidden FROM pragma_table_xinfo(?)", (name,)):
                col, kind, hidden = row
                if isinstance(col, str) and hidden == 0:
                    tables[name][col] = str(kind or "").upper()
        # an export of a capture without CUDA or NVTX still has its strings and the target's tables
        nsys_tables = any(t in tables for t in (*CUDA_TABLES, NVTX, *META_TABLES, "ThreadNames")) or any(
            t.startswith("TARGET_INFO_") for t in tables
        )
        if STRINGS not in tables or not nsys_tables:
            found = "a StringIds table but no" if STRINGS in tables else "no StringIds table and no"
            raise self.fail(
                f"an SQLite database, but not an Nsight Systems export ({found} CUDA, NVTX, TARGET_INFO or "
                "export meta-data tables)",
                hint="Give the .sqlite file nsys export --type sqlite writes of a report",
            )
        return tables

    def has(self, table: str, *columns: str) -> bool:
        cols = self.tables.get(table)
        return cols is not None and all(c in cols for c in columns)

    def calls_only(self, alias: str = "") -> str:
        """The SQL condition that keeps the CUDA API table's calls and drops the backtraces
        recorded beside them (`BACKTRACE_CLASSES`, or the classes the export's own enum
        names so); "1" where the table has no event classes."""
        if not self.has(RUNTIME, "eventClass"):
            return "1"
        if not hasattr(self, "_backtrace_classes"):
            classes: tuple[int, ...] = BACKTRACE_CLASSES
            if self.has("ENUM_NSYS_EVENT_CLASS", "id", "name"):
                sql = "SELECT id FROM ENUM_NSYS_EVENT_CLASS WHERE name LIKE '%CUDABACKTRACE%'"
                named = tuple(i for (i,) in self.query(sql) if type(i) is int)
                classes = named or classes
            self._backtrace_classes = ", ".join(str(i) for i in classes)
        return f"{alias}eventClass NOT IN ({self._backtrace_classes})"

    def _version(self) -> tuple[str | None, str | None]:
        meta = next((t for t in META_TABLES if self.has(t, "name", "value")), None)
        if meta is None:  # before 2023: the version is in the paths of the nsys that captured it
            return None, self._installed_version()
        values: dict[str, str] = {}
        sql = f"SELECT name, value FROM {meta} WHERE name IN ('EXPORT_SCHEMA_VERSION', 'EXPORT_PRODUCT_VERSION')"
        for name, value in self.query(sql):
            if isinstance(name, str) and isinstance(value, str):
                values[name] = value
        schema = values.get("EXPORT_SCHEMA_VERSION")
        if schema is not None:
            major = schema.split(".", 1)[0]
            if not major.isdigit() or int(major) not in SUPPORTED_MAJOR:
                raise self.fail(
                    f"unknown export schema version {schema!r} (this nsightlab reads versions "
                    f"{' and '.join(f'{m}.x' for m in SUPPORTED_MAJOR)}: nsys 2021 to 2026)",
                    hint="Export it with an nsys of those years, or give `nsys stats --format csv` exports",
                )
        return schema, values.get("EXPORT_PRODUCT_VERSION")

    def _installed_version(self) -> str | None:
        """The version of the nsys that made an export without export meta-data: from its
        install folder (`/opt/nvidia/nsight-systems/2021.2.1/...`, `.../nsight-systems-2022.4.2/...`)
        as `TARGET_INFO_SYSTEM_ENV`'s `TargetInstallDir` or a string of the capture holds it."""
        queries = []
        if self.has("TARGET_INFO_SYSTEM_ENV", "name", "value"):
            queries.append("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'TargetInstallDir'")
        if self.has(STRINGS, "value"):
            queries.append(f"SELECT value FROM {STRINGS} WHERE value LIKE '%nsight-systems%' LIMIT 1")
        for sql in queries:
            for (value,) in self.query(sql):
                match = _INSTALLED.search(value) if isinstance(value, str) else None
                if match:
                    return match.group(1)
        return None

    # ------------------------------------------------------------------ checks

    def check_integers(self, table: str, columns: Iterable[str], *, nullable: Iterable[str] = ()) -> None:
        """Every cell of `columns` a whole number within bounds (NULL only in `nullable`):
        else ParseError naming the table, column and row."""
        may_be_null = set(nullable)
        for col in columns:
            if not self.has(table, col):
                continue
            allow = f'"{col}" IS NULL OR ' if col in may_be_null else ""
            sql = (
                f'SELECT rowid, typeof("{col}") FROM {table} WHERE NOT ({allow}(typeof("{col}") = \'integer\' '
                f'AND "{col}" BETWEEN {-_BOUND} AND {_BOUND})) LIMIT 1'
            )
            for rowid, kind in self.query(sql):
                raise self.fail(
                    f"{table}.{col} of row {rowid} is not a whole number in range ({kind})",
                    hint="The export is damaged: export the report again",
                )

    # ------------------------------------------------------------------ strings

    def string(self, sid: object) -> str:
        """The text of a StringIds id; a dangling id reads `<string id N>` (and is counted)."""
        if not isinstance(sid, int):
            return "<no name>"
        text = self._strings.get(sid)
        if text is None:
            row = next(self.query("SELECT value FROM StringIds WHERE id = ?", (sid,)), None)
            if row is None or not isinstance(row[0], str):
                self.dangling.add(sid)
                text = f"<string id {sid}>"
            else:
                text = row[0]
            self._strings[sid] = text
        return text

    # ------------------------------------------------------------------ GPUs

    def gpu_names(self) -> dict[tuple[int | None, int], str]:
        """{(pid or None, the device id the CUDA tables use): the GPU's name}."""
        out: dict[tuple[int | None, int], str] = {}
        if self.has("TARGET_INFO_GPU", "id", "name"):
            by_gpu: dict[int, str] = {}
            cuda = "cuDevice" if self.has("TARGET_INFO_GPU", "cuDevice") else "id"
            for gpu_id, name, cuda_id in self.query(f"SELECT id, name, {cuda} FROM TARGET_INFO_GPU"):
                if isinstance(gpu_id, int) and isinstance(name, str) and name:
                    by_gpu.setdefault(gpu_id, name)
                    if isinstance(cuda_id, int):
                        out.setdefault((None, cuda_id), name)
            if self.has("TARGET_INFO_CUDA_DEVICE", "gpuId", "cudaId", "pid"):
                for gpu_id, cuda_id, pid in self.query("SELECT gpuId, cudaId, pid FROM TARGET_INFO_CUDA_DEVICE"):
                    if isinstance(gpu_id, int) and isinstance(cuda_id, int) and gpu_id in by_gpu:
                        out[(pid if isinstance(pid, int) else None, cuda_id)] = by_gpu[gpu_id]
        elif self.has("TARGET_INFO_CUDA_GPU", "deviceId", "name"):
            for device, name in self.query("SELECT deviceId, name FROM TARGET_INFO_CUDA_GPU"):
                if isinstance(device, int) and isinstance(name, str) and name:
                    out.setdefault((None, device), name)
        return out

    # ------------------------------------------------------------------ GPU operations

    def not_whole(self, what: str) -> ParseError:
        """The error for a value that is not a whole number: names the first such cell of
        the tables read (`check_ops` raises it), else says what it was."""
        self.check_ops()
        return self.fail(
            f"{what} is not a whole number in range", hint="The export is damaged: export the report again"
        )

    def check_ops(self) -> None:
        """ParseError naming the first cell of the GPU operation tables (and the CUDA API
        table) that is not a whole number in range; nothing when all are."""
        for table in (KERNEL, MEMCPY, MEMSET):
            ids = ("deviceId", "streamId", "correlationId", "globalPid")
            self.check_integers(table, ("start", "end"))
            self.check_integers(table, (*ids, "demangledName", "copyKind", "bytes"), nullable=ids)
        self.check_integers(RUNTIME, ("start", "end"))
        self.check_integers(RUNTIME, ("correlationId", "globalTid", "nameId"), nullable=("correlationId", "globalTid"))

    def op_chunks(self, *, threads: bool) -> Iterator[list[tuple[Any, ...]]]:
        """Every kernel, memcpy and memset in start order, each joined to the CUDA call that
        launched it (same correlation id, same process), in chunks of rows:

            (start, end (never before start), name code, stream key, correlation id (-1:
             none), the launch's start (-1: none), the launching thread's globalTid)

        The name code is a kernel's `demangledName` StringIds id (>= 0), `-1 - copyKind`
        for a memcpy, `MEMSET_CODE` for a memset; the stream key packs the process id (bits
        40-63), the device id (32-39) and the stream id (0-31). The thread is NULL unless
        `threads`. Cells are as stored: the caller checks that times are whole numbers."""
        parts = []
        for table, column, code in (
            (KERNEL, "demangledName", "demangledName & 9223372036854775807"),
            (MEMCPY, "copyKind", "-1 - copyKind"),
            (MEMSET, "", str(MEMSET_CODE)),
        ):
            if not self.has(table, "start", "end"):
                continue
            if column and not self.has(table, column):
                raise self.fail(f"{table} has no {column} column: not an nsys export layout this nsightlab knows")
            parts.append(self._op_select(table, code))
        if not parts:
            return
        # LIMIT -1 (no limit) keeps SQLite from pushing the join into each arm of the union:
        # each arm would build its own automatic index of the whole CUDA API table
        ops = " UNION ALL ".join(parts) + " LIMIT -1"
        if self.has(RUNTIME, "start", "correlationId", "globalTid"):
            thread = "r.globalTid" if threads else "NULL"
            sql = (
                f"SELECT o.start, o.e, o.name, o.skey, coalesce(o.corr, -1), coalesce(r.start, -1), {thread} "
                f"FROM ({ops}) AS o LEFT JOIN {RUNTIME} AS r "
                "ON r.correlationId = o.corr AND (o.gpid IS NULL OR r.globalTid >> 24 = o.gpid >> 24) "
                f"AND {self.calls_only('r.')} ORDER BY o.start"
            )
        else:
            sql = (
                f"SELECT o.start, o.e, o.name, o.skey, coalesce(o.corr, -1), -1, NULL FROM ({ops}) AS o "
                "ORDER BY o.start"
            )
        try:
            cursor = self.conn.execute(sql)
            while True:
                rows = cursor.fetchmany(CHUNK_ROWS)
                if not rows:
                    return
                yield rows
        except sqlite3.Error as e:
            raise self._db_error(e) from None

    def _op_select(self, table: str, name: str) -> str:
        def col(column: str, default: str = "0") -> str:
            return f"coalesce({column}, {default})" if self.has(table, column) else default

        pid = col("globalPid")
        skey = (
            f"((({pid} >> 24) & 16777215) << 40) | (({col('deviceId')} & 255) << 32) | ({col('streamId')} & 4294967295)"
        )
        corr = "correlationId" if self.has(table, "correlationId") else "NULL"
        gpid = "globalPid" if self.has(table, "globalPid") else "NULL"
        return (
            f'SELECT start, max(start, "end") AS e, {name} AS name, {skey} AS skey, {corr} AS corr, {gpid} AS gpid '
            f"FROM {table}"
        )

    def copy_label(self, kind: int) -> str:
        """`[CUDA memcpy Host-to-Device]`: the name nsys's reports give a copy kind."""
        if not hasattr(self, "_copy_labels"):
            labels: dict[int, str] = {}
            if self.has("ENUM_CUDA_MEMCPY_OPER", "id", "label"):
                for cid, label in self.query("SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER"):
                    if isinstance(cid, int) and isinstance(label, str):
                        labels[cid] = label
            self._copy_labels = labels or dict(_OLD_COPY_LABELS)
        return f"[CUDA memcpy {self._copy_labels.get(kind, 'Unknown')}]"

    # ------------------------------------------------------------------ CUDA API

    def api_rows(self, name_ids: Sequence[object] | None = None) -> Iterator[tuple[object, ...]]:
        """(start, end, nameId, correlationId, globalTid) of every CUDA runtime and driver
        call (or only those of the functions `name_ids` names), in start order; no
        backtraces."""
        if not self.has(RUNTIME, "start", "end", "nameId"):
            return iter(())
        corr = "correlationId" if self.has(RUNTIME, "correlationId") else "NULL"
        gtid = "globalTid" if self.has(RUNTIME, "globalTid") else "NULL"
        sql = f'SELECT start, "end", nameId, {corr}, {gtid} FROM {RUNTIME} WHERE {self.calls_only()}'
        if name_ids is None:
            return self.query(f"{sql} ORDER BY start")
        if not name_ids:
            return iter(())
        marks = ", ".join("?" * len(name_ids))
        return self.query(f"{sql} AND nameId IN ({marks}) ORDER BY start", name_ids)

    def api_name_ids(self) -> list[object]:
        """The name ids of the CUDA API functions called (each once)."""
        if not self.has(RUNTIME, "nameId"):
            return []
        return [row[0] for row in self.query(f"SELECT DISTINCT nameId FROM {RUNTIME} WHERE {self.calls_only()}")]

    def api_summary(self) -> Iterator[tuple[object, ...]]:
        """(nameId, calls, total, min, max, sum of squares) per CUDA API function, by SQLite."""
        if not self.has(RUNTIME, "start", "end", "nameId"):
            return iter(())
        return self.query(
            f'SELECT nameId, count(*), sum("end" - start), min("end" - start), max("end" - start), '
            f'total(("end" - start) * ("end" - start)) FROM {RUNTIME} WHERE {self.calls_only()} GROUP BY nameId'
        )

    # ------------------------------------------------------------------ memory operations

    def memop_rows(self) -> Iterator[tuple[object, ...]]:
        """(kind 1 memcpy / 2 memset, copy kind, duration, bytes) ordered for grouping."""
        parts = []
        if self.has(MEMCPY, "start", "end", "copyKind", "bytes"):
            parts.append(f'SELECT 1 AS k, copyKind AS c, "end" - start AS d, bytes AS b FROM {MEMCPY}')
        if self.has(MEMSET, "start", "end", "bytes"):
            parts.append(f'SELECT 2, 0, "end" - start, bytes FROM {MEMSET}')
        if not parts:
            return iter(())
        return self.query(" UNION ALL ".join(parts) + " ORDER BY 1, 2")

    # ------------------------------------------------------------------ NVTX

    def nvtx_rows(self) -> Iterator[tuple[object, ...]]:
        """(start, end, eventType, text, globalTid, domainId) of every NVTX range and domain
        name; registered strings (`textId`) resolved."""
        if not self.has(NVTX, "start", "end", "eventType"):
            return iter(())
        self.check_integers(NVTX, ("start",))
        self.check_integers(
            NVTX, ("end", "globalTid", "domainId", "textId"), nullable=("end", "globalTid", "domainId", "textId")
        )
        text = "text" if self.has(NVTX, "text") else "NULL"
        if self.has(NVTX, "textId"):
            text = f"coalesce({text}, (SELECT value FROM StringIds WHERE id = textId))"
        gtid = "globalTid" if self.has(NVTX, "globalTid") else "NULL"
        domain = "domainId" if self.has(NVTX, "domainId") else "0"
        kinds = ", ".join(str(k) for k in (*PUSH_POP, *START_END, DOMAIN_CREATE))
        return self.query(
            f'SELECT start, "end", eventType, {text}, {gtid}, {domain} FROM {NVTX} '
            f'WHERE eventType IN ({kinds}) ORDER BY start, "end" DESC'
        )


def _check_file(path: Path, source: str) -> bool:
    """A regular file that starts as SQLite does; True when it is in WAL mode (and no
    -wal beside it holds changes the file lacks)."""
    try:
        info = os.stat(path)
    except OSError as e:
        raise ParseError(f"cannot read the file: {e.strerror or e}", source=source) from None
    if not stat.S_ISREG(info.st_mode):
        raise ParseError("not a regular file", source=source)
    try:
        with open(path, "rb") as f:
            header = f.read(100)
    except OSError as e:
        raise ParseError(f"cannot read the file: {e.strerror or e}", source=source) from None
    if not header.startswith(SQLITE_MAGIC) or len(header) < 100:
        what = "an empty file" if not header else "not an SQLite database"
        raise ParseError(
            f"{what}: an Nsight Systems export (.sqlite) starts with SQLite's header",
            source=source,
            hint="Give the .sqlite file nsys export --type sqlite writes of a report",
        )
    wal = header[18] == 2 or header[19] == 2
    side = Path(source + "-wal")
    if wal and side.exists() and side.stat().st_size > 0:
        raise ParseError(
            f"a database in WAL mode whose {side.name} beside it holds changes the file does not have",
            source=source,
            hint="Give a plain export (`nsys export --type sqlite`), which has no -wal",
        )
    return wal
