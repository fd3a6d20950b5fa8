"""The lab pod's time left when the cluster's clock and this machine's disagree: never more
than activeDeadlineSeconds, never less than 0, and a start in our future is said as such
instead of promised as time."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from kubesim import KubeSim
from labenv import NS, POD, nsl

from nsightlab.k8s.labpod import CLOCK_TOLERANCE_S, lab_pod

DEADLINE = 14400  # the lab's default activeDeadlineSeconds


def _start_at(sim: KubeSim, when: datetime) -> None:
    pod = sim.get("pods", NS, POD)
    assert pod is not None and pod["spec"]["activeDeadlineSeconds"] == DEADLINE
    pod["status"]["startTime"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    sim.put(pod)


@pytest.mark.parametrize(
    ("start", "ahead_words"),
    [
        (datetime(2099, 1, 1, tzinfo=timezone.utc), r"\d{4,}d"),  # 2099: tens of thousands of days
        (timedelta(hours=1), r"(59|60)m"),  # from the test's own now (not collection time); seconds pass while it runs
    ],
    ids=["2099", "an-hour-ahead"],
)
def test_a_start_in_this_machines_future_is_said_not_promised(
    capsys: pytest.CaptureFixture[str],
    lab: dict[str, Any],
    home: Path,
    sim: KubeSim,
    start: datetime | timedelta,
    ahead_words: str,
) -> None:
    _start_at(sim, start if isinstance(start, datetime) else datetime.now(timezone.utc) + start)
    text = nsl(capsys, "status")
    assert text.code == 0, text
    assert "deletes itself in" not in text.out, text.out
    assert (
        "deletes itself 4h after it started (activeDeadlineSeconds); the server's clock is ahead of this machine's by"
        in (text.out)
    )
    assert re.search(rf"ahead of this machine's by {ahead_words}, so how long is left cannot be told", text.out)
    r = nsl(capsys, "status", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)["lab"]
    assert 0 <= data["seconds_left"] <= DEADLINE
    assert data["clock_ahead_s"] > 3500


def test_a_start_long_past_is_zero_left_and_a_start_a_few_seconds_ahead_is_the_whole_deadline() -> None:
    now = datetime.now(timezone.utc)

    def pod(start: datetime) -> dict[str, Any]:
        return {
            "metadata": {"name": POD, "namespace": NS},
            "spec": {"activeDeadlineSeconds": DEADLINE, "nodeName": "n"},
            "status": {"phase": "Running", "startTime": start.strftime("%Y-%m-%dT%H:%M:%SZ")},
        }

    past = lab_pod(pod(now - timedelta(days=3)), None, context="c", server=None, namespace=NS)
    assert past.seconds_left == 0 and past.clock_ahead_s is None
    close = lab_pod(pod(now + timedelta(seconds=CLOCK_TOLERANCE_S - 10)), None, context="c", server=None, namespace=NS)
    assert close.seconds_left == DEADLINE and close.clock_ahead_s is None  # a few seconds: ordinary drift, clamped


def test_creates_summary_of_a_reused_pod_says_it_too(
    capsys: pytest.CaptureFixture[str], lab: dict[str, Any], home: Path, sim: KubeSim
) -> None:
    _start_at(sim, datetime(2099, 1, 1, tzinfo=timezone.utc))
    r = nsl(capsys, "create", "--context", "stg", "--yes")
    assert r.code == 0, r
    assert "deletes itself in" not in r.out and "the server's clock is ahead of this machine's by" in r.out, r
