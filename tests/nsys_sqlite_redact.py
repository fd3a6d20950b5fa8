"""Make a public Nsight Systems SQLite export fit to keep as test data: remove the
environment nsys recorded, keep everything else as exported.

nsys stores the profiled process's environment three ways: as `ENVIRONMENT_VARIABLE` rows
of `META_DATA_CAPTURE`, as the `DeviceEnvironment` row of `TARGET_INFO_SYSTEM_ENV`, and as
whole environment blocks in `StringIds` (`KEY=value` pairs separated by NUL or `;`). On a
cluster that environment holds secrets (Cray's `PMI_SHARED_SECRET`, an ssh agent's
socket). Each such value becomes `[environment removed]`; ids, rows and every other value
are left alone, and the file is rewritten with `VACUUM INTO`, so no page of the old text
survives. The tool refuses to write if a string any activity, NVTX or GPU table refers to
would change.

    python tests/nsys_sqlite_redact.py IN.sqlite OUT.sqlite

`environment_values(path)` lists what would be removed; the tests use it to check that the
kept exports hold none.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

REMOVED = "[environment removed]"

# `KEY=` at the start of a value or after a separator, as an environment block writes it.
_ASSIGNMENT = re.compile(r"(?:^|[\x00;\n ])[A-Z_][A-Z0-9_]*=")
_BLOCK_MIN = 3

# Columns holding StringIds ids that name what the analysis reads: these must not change.
_REFERENCES = (
    ("CUPTI_ACTIVITY_KIND_KERNEL", ("demangledName", "shortName", "mangledName")),
    ("CUPTI_ACTIVITY_KIND_RUNTIME", ("nameId",)),
    ("NVTX_EVENTS", ("textId",)),
)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def is_environment(value: str) -> bool:
    """True for a value that is an environment: a block of assignments or one variable."""
    return len(_ASSIGNMENT.findall(value)) >= _BLOCK_MIN


def _tables(db: sqlite3.Connection) -> set[str]:
    return {_text(row[0]) for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [_text(row[0]) for row in db.execute("SELECT name FROM pragma_table_info(?)", (table,))]


def _targets(db: sqlite3.Connection) -> Iterator[tuple[str, str, str, object]]:
    """(table, column, key column, key) of each value to remove."""
    tables = _tables(db)
    if "META_DATA_CAPTURE" in tables:
        for rowid, name in db.execute("SELECT rowid, name FROM META_DATA_CAPTURE"):
            if _text(name).endswith("ENVIRONMENT_VARIABLE"):
                yield "META_DATA_CAPTURE", "value", "rowid", rowid
    if "TARGET_INFO_SYSTEM_ENV" in tables:
        for rowid, name, value in db.execute("SELECT rowid, name, value FROM TARGET_INFO_SYSTEM_ENV"):
            if _text(name) == "DeviceEnvironment" or (value is not None and is_environment(_text(value))):
                yield "TARGET_INFO_SYSTEM_ENV", "value", "rowid", rowid
    if "StringIds" in tables:
        for sid, value in db.execute("SELECT id, value FROM StringIds"):
            if value is not None and is_environment(_text(value)):
                yield "StringIds", "value", "id", sid


def _referenced_ids(db: sqlite3.Connection) -> set[int]:
    tables = _tables(db)
    ids: set[int] = set()
    for table, columns in _REFERENCES:
        if table not in tables:
            continue
        present = [c for c in columns if c in _columns(db, table)]
        for column in present:
            ids.update(row[0] for row in db.execute(f'SELECT DISTINCT "{column}" FROM "{table}"') if row[0] is not None)
    return ids


def environment_values(path: Path) -> list[tuple[str, object]]:
    """(table, key) of each environment value the export at `path` still holds."""
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    db.text_factory = bytes
    try:
        return [(table, key) for table, _column, _key_column, key in _targets(db) if not _removed(db, table, key)]
    finally:
        db.close()


def _removed(db: sqlite3.Connection, table: str, key: object) -> bool:
    key_column = "id" if table == "StringIds" else "rowid"
    row = db.execute(f'SELECT value FROM "{table}" WHERE {key_column} = ?', (key,)).fetchone()
    return row is not None and row[0] == REMOVED.encode()


def redact(source: Path, out: Path) -> int:
    """Write `source` without its environment to `out`; the number of values removed."""
    if out.exists():
        raise SystemExit(f"{out} exists: give a new file")
    work = sqlite3.connect(":memory:")
    work.text_factory = bytes
    disk = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    disk.backup(work)
    disk.close()
    targets = list(_targets(work))
    kept = _referenced_ids(work)
    touched = {key for table, _c, _k, key in targets if table == "StringIds"} & kept
    if touched:
        raise SystemExit(f"refusing: string ids {sorted(touched)[:5]} are names the analysis reads")
    for table, column, key_column, key in targets:
        work.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE {key_column} = ?', (REMOVED, key))
    work.commit()
    work.execute("VACUUM INTO ?", (str(out),))
    work.close()
    return len(targets)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: python tests/nsys_sqlite_redact.py IN.sqlite OUT.sqlite", file=sys.stderr)
        return 2
    removed = redact(Path(argv[0]), Path(argv[1]))
    left = environment_values(Path(argv[1]))
    print(f"{argv[1]}: {removed} environment values removed, {len(left)} left")
    return 0 if not left else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
