"""ncu in the lab pod that fails stores no run: no half run for `nsightlab runs` to list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubesim import KubeSim
from labenv import NS, POD, nsl

HERE = Path(__file__).resolve().parent
NCU05 = HERE / "fixtures" / "ncu" / "05_ncu_csv_page_details_vectorized_elementwise_rtx5090.csv"


def _ncu(mode: str) -> str:
    """The ncu stand-in, failing as `mode` says (see tests/standins/ncu)."""
    return (HERE / "standins" / "ncu").read_text().replace("@FIXTURE@", str(NCU05)).replace("@MODE@", mode)


@pytest.mark.parametrize(("mode", "code"), [("fail", 6), ("perm", 7)])
def test_a_failed_ncu_leaves_no_half_run(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], sim: KubeSim, home: Path, mode: str, code: int
) -> None:
    sim.put_tool(NS, POD, "ncu", _ncu(mode))
    for _ in range(2):  # each try, as a user retries
        r = nsl(capsys, "ncu")
        assert r.code == code, r
        assert r.err.strip().splitlines()[-1].startswith("error: ")
    runs = home / "runs"
    assert not runs.is_dir() or list(runs.iterdir()) == []
    listed = nsl(capsys, "runs")
    assert listed.code == 0, listed
    assert listed.out.startswith("no runs yet") and "meta.json" not in listed.out + listed.err
    as_json = nsl(capsys, "runs", "--json")
    assert as_json.code == 0 and '"runs": []' in as_json.out
