"""`cleanup` is idempotent: with neither a lab session nor --context there is nothing to
delete (exit 0, one line, no request); every other command that needs a session keeps
exit 3."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubesim import KubeSim
from labenv import NS, POD, nsl

NOTHING = "no lab session: nothing to delete"


def test_cleanup_twice(capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path, sim: KubeSim) -> None:
    first = nsl(capsys, "cleanup", "--yes")
    assert first.code == 0 and first.out == f"deleted {POD}\n", first
    assert sim.get("pods", NS, POD) is None
    sim.clear_requests()
    again = nsl(capsys, "cleanup", "--yes")
    assert (again.code, again.out, again.err) == (0, "", f"{NOTHING}\n"), again
    assert sim.requests == []  # no cluster contacted
    as_json = nsl(capsys, "cleanup", "--json")
    assert as_json.code == 0, as_json
    assert json.loads(as_json.out) == {
        "context": None,
        "namespace": None,
        "deleted": [],
        "already_gone": [],
        "skipped": [],
        "owner": None,
        "all_mine": False,
        "fleets": None,
        "note": NOTHING,
    }
    assert sim.requests == []


def test_cleanup_with_no_session_ever(capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim) -> None:
    r = nsl(capsys, "cleanup")
    assert (r.code, r.out, r.err) == (0, "", f"{NOTHING}\n"), r
    assert sim.requests == []


@pytest.mark.parametrize(
    "args",
    [("status",), ("logs",), ("events",), ("shell", "--", "true"), ("cleanup", "--all-mine", "--yes")],
    ids=lambda a: " ".join(a),
)
def test_other_commands_without_a_session_keep_exit_3(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim, args: tuple[str, ...]
) -> None:
    assert nsl(capsys, "cleanup", "--yes").code == 0  # the session ends here
    sim.clear_requests()
    r = nsl(capsys, *args)
    assert r.code == 3, r
    assert r.err.strip().startswith(f"error: no lab session ({POD} was deleted at ")
    assert sim.requests == []
