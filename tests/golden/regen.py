"""Regenerate the golden parses of every fixture: `python tests/golden/regen.py`.

Run by hand after a deliberate parser change, then read the diff of tests/golden/*.json
against the fixture text before committing it. The tests never call this.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from nsightlab.parse import ncu_csv as ncu_parse
from nsightlab.parse import nsys

TESTS = Path(__file__).resolve().parents[1]
FIXTURES = TESTS / "fixtures"
GOLDEN = TESTS / "golden"


def nsys_fixtures() -> list[Path]:
    return sorted((FIXTURES / "nsys").glob("*.*"))


def ncu_fixtures() -> list[Path]:
    return sorted((FIXTURES / "ncu").glob("*.*"))


def golden_path(fixture: Path) -> Path:
    return GOLDEN / f"{fixture.name}.json"


def parse_fixture(fixture: Path) -> dict[str, Any]:
    """The parse of one fixture, as JSON data. `source` is the bare file name so that
    the golden files do not depend on where the checkout lives."""
    text = fixture.read_text(encoding="utf-8")
    if fixture.parent.name == "ncu":
        return ncu_parse.parse_ncu_csv(text, source=fixture.name).model_dump(mode="json")
    if fixture.suffix == ".csv":
        return nsys.parse_stats_csv(text, source=fixture.name).model_dump(mode="json")
    return nsys.parse_stats_console(text, source=fixture.name).model_dump(mode="json")


def main() -> int:
    for fixture in nsys_fixtures() + ncu_fixtures():
        out = golden_path(fixture)
        out.write_text(
            json.dumps(parse_fixture(fixture), indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        print(f"wrote {out.relative_to(TESTS.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
