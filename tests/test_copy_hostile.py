"""`nsightlab copy` out of a hostile pod, at the command's boundary: the generated corpus
of crafted tar streams (tests/hostile_tars.py) served by the pod's own exec, each
refused in one error line (exit 6) with nothing placed, nothing outside the destination
changed, and no link left that leads out; the odd but whole streams copied as they are."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import hostile_tars
import pytest
from copylab import CopyLab, copy_lab, fingerprint, links_leading_out, nsl, one_error_line

# one stream per shape here (each costs a command); tests/test_transfer_safety.py runs
# them all, variants included, through the reader
HOSTILE = [c.id for c in hostile_tars.hostile(Path("/placeholder")) if not c.again]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CopyLab]:
    with copy_lab(tmp_path_factory.mktemp("hostile")) as made:
        made.pod_path("/tmp/run").mkdir(parents=True, exist_ok=True)
        yield made


@pytest.fixture
def world(lab: CopyLab) -> Iterator[Path]:
    """What a hostile stream aims at, beside an empty destination `dst`."""
    w = lab.root / "world"
    (w / "dst").mkdir(parents=True)
    (w / "victim.txt").write_text("keep me\n")
    (w / "run-evil").mkdir()
    yield w
    import shutil

    shutil.rmtree(w)


@pytest.mark.parametrize("case_id", HOSTILE)
def test_hostile_stream_is_refused_and_nothing_escapes(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, world: Path, case_id: str
) -> None:
    case = next(c for c in hostile_tars.hostile(world) if c.id == case_id)
    lab.serve(case.stream, hostile_tars.digests_of(case.stream))
    before = fingerprint(lab.root, skip=world / "dst")
    r = nsl(capsys, "copy", ":/tmp/run", f"{world / 'dst'}/")
    assert r.code == 6, r
    line = one_error_line(r)
    assert case.refusal in line, line
    assert fingerprint(lab.root, skip=world / "dst") == before  # nothing outside dst changed
    assert os.listdir(world / "dst") == []  # nothing placed, no staging folder left


def test_odd_but_whole_streams_are_copied_as_they_are(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, world: Path
) -> None:
    """Names with newlines, bytes that are not UTF-8 and terminal escapes, a global PAX
    header (as `git archive` writes), hard links, links that stay inside, long names."""
    stream = hostile_tars.all_odd_at_once()
    claims = hostile_tars.digests_of(stream)
    assert len(claims) == 7
    lab.serve(stream, claims)
    before = fingerprint(lab.root, skip=world / "dst")
    r = nsl(capsys, "copy", ":/tmp/run", f"{world / 'dst'}/", "--json")
    assert r.code == 0, r
    assert fingerprint(lab.root, skip=world / "dst") == before
    dst = world / "dst"
    assert links_leading_out(dst) == []
    for name, (size, _) in claims.items():  # every file there, whole, under its own name
        assert (dst / name).is_file() and (dst / name).stat().st_size == size, name
    assert os.listdir(dst) == ["run"]
    assert (dst / "run/sub/up").read_text() == "x\n" and (dst / "run/here/deep").read_text() == "x\n"


def test_names_differing_only_in_case_or_unicode_form(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, world: Path
) -> None:
    """Where the filesystem tells `A` from `a` (and NFC from NFD), four things land side
    by side; where it does not, the file would go through the link and is refused.
    Either way nothing leads out."""
    stream = hostile_tars.case_and_unicode_variants()
    lab.serve(stream, hostile_tars.digests_of(stream))
    dst = world / "dst"
    (dst / "probe").write_text("")
    tells_apart = not (dst / "PROBE").exists()
    (dst / "probe").unlink()
    r = nsl(capsys, "copy", ":/tmp/run", f"{dst}/")
    if tells_apart:
        assert r.code == 0, r
        assert (dst / "run/a/x").is_file() and (dst / "run/A").is_symlink()
    else:
        assert r.code == 6 and "through the symlink" in one_error_line(r), r
    assert links_leading_out(dst) == []


def test_a_refusal_names_a_hostile_name_on_one_line(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, world: Path
) -> None:
    """A name with a newline and terminal escapes is shown escaped: one error line,
    nothing that moves the cursor or colours the terminal."""
    stream = hostile_tars.archive(hostile_tars.d("run"), hostile_tars.sym("run/evil\n\x1b[2Jname", "../../x"))
    lab.serve(stream, {})
    r = nsl(capsys, "copy", ":/tmp/run", f"{world / 'dst'}/")
    assert r.code == 6, r
    line = one_error_line(r)
    assert "\x1b" not in r.err and "evil\\n\\x1b[2Jname" in line, line
