"""Copy-out of an archive full of hard links, at the command's boundary: a hard-link bomb
(one file, link headers by the thousand) is refused in one line (exit 6) with nothing
left behind, whether the filesystem runs out of links (EMLINK, injected at `os.link`:
ext4 refuses the 65,001st, which the suite cannot afford to make), makes none at all
(copies stand in, within a budget), or the archive passes podtar's own limit (lowered
here). Links within all of that are made as links. The full-size bomb (1 MiB, 70,000
links) is measured in bench/hardlink_bomb.py."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hostile_tars
import pytest
from copylab import CopyLab, copy_lab, nsl, one_error_line
from hostile_tars import archive, d, f, hard

from nsightlab.cluster import podtar

BIG = os.urandom(64 << 10)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CopyLab]:
    with copy_lab(tmp_path_factory.mktemp("links")) as made:
        made.pod_path("/tmp/run").mkdir(parents=True, exist_ok=True)
        yield made


@pytest.fixture
def dst(lab: CopyLab) -> Iterator[Path]:
    out = lab.root / "dst"
    out.mkdir()
    yield out
    import shutil

    shutil.rmtree(out)


def bomb(links: int) -> bytes:
    return archive(d("run"), f("run/big", BIG), *(hard(f"run/l{i}", "run/big") for i in range(links)))


def serve(lab: CopyLab, stream: bytes) -> None:
    lab.serve(stream, hostile_tars.digests_of(stream))


def failing_link(monkeypatch: pytest.MonkeyPatch, code: int, *, after: int = 0) -> list[int]:
    """os.link fails with `code` from its `after`+1-th call on; the calls are counted."""
    real = os.link
    calls = [0]

    def link(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        calls[0] += 1
        if calls[0] > after:
            raise OSError(code, os.strerror(code), str(src), None, str(dst))
        real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "link", link)
    return calls


def test_emlink_refuses_the_copy_with_nothing_left(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, dst: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve(lab, bomb(50))
    calls = failing_link(monkeypatch, errno.EMLINK, after=9)  # the filesystem's limit, at 9 links
    r = nsl(capsys, "copy", ":/tmp/run", f"{dst}/")
    assert r.code == 6, r
    assert one_error_line(r) == (
        "error: refusing hard link run/l9 -> run/big: the filesystem allows no more links to it (10 so far)."
    )
    assert calls[0] == 10  # stopped at the first refusal: not a copy per link
    assert os.listdir(dst) == []  # nothing placed, no staging folder left


def test_a_filesystem_without_links_copies_within_a_budget_then_refuses(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, dst: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing_link(monkeypatch, errno.EPERM)  # as on a filesystem that makes no hard links
    serve(lab, bomb(50))
    r = nsl(capsys, "copy", ":/tmp/run", f"{dst}/")
    assert r.code == 6, r
    line = one_error_line(r)
    assert line.startswith("error: refusing hard link run/l2 -> run/big: this filesystem cannot link, and the copies ")
    assert f"would write more than {podtar.COPY_FACTOR}x the " in line
    assert os.listdir(dst) == []
    # two links fit the budget: copies stand in for them
    serve(lab, bomb(2))
    r = nsl(capsys, "copy", ":/tmp/run", f"{dst}/")
    assert r.code == 0, r
    assert [(dst / "run" / n).read_bytes() == BIG for n in ("big", "l0", "l1")] == [True] * 3


def test_past_the_link_limit_the_archive_is_refused(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, dst: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(podtar, "LINKS_MAX", 10)  # 65,000 in use
    serve(lab, bomb(11))
    r = nsl(capsys, "copy", ":/tmp/run", f"{dst}/")
    assert r.code == 6, r
    assert one_error_line(r) == "error: refusing archive: more than 10 hard links to run/big."
    assert os.listdir(dst) == []


def test_links_within_the_limits_are_made_as_links(capsys: pytest.CaptureFixture[str], lab: CopyLab, dst: Path) -> None:
    serve(lab, bomb(40))
    r = nsl(capsys, "copy", ":/tmp/run", f"{dst}/")
    assert r.code == 0, r
    inodes = {(dst / "run" / n).stat().st_ino for n in ["big", *(f"l{i}" for i in range(40))]}
    assert len(inodes) == 1 and (dst / "run" / "big").stat().st_nlink == 41
