"""`nsightlab copy` places as scp does, one rule both ways, against the emulator with the
pod's side run by podtar under python3 and by the tar + sha256sum fallback: it merges
into an existing folder (a file the copy does not bring survives), overwrites only the
files it brings, refuses a file/folder clash before anything moves (exit 2, nothing
changed), takes a trailing slash to mean a folder that must exist, carries any file
name (newlines included) both ways, shows odd names escaped on one error line, and
says on Ctrl-C what was placed and what was not."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from clirun import sigint_default
from copylab import CopyLab, copy_lab, fingerprint, nsl, one_error_line

POD_SIDES = ["python3", "tar+sha256sum"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CopyLab]:
    with copy_lab(tmp_path_factory.mktemp("merge")) as made:
        yield made


@pytest.fixture
def pod_side(lab: CopyLab, request: pytest.FixtureRequest) -> Iterator[str]:
    side = getattr(request, "param", "python3")
    lab.no_python() if side == "tar+sha256sum" else lab.real_python()
    yield side
    lab.real_python()


def _tree(top: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text(text)
    return top


def _contents(top: Path) -> dict[str, str]:
    return {str(p.relative_to(top)): p.read_text() for p in sorted(top.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------------- merging


def test_copy_out_merges_into_a_local_folder(capsys: pytest.CaptureFixture[str], lab: CopyLab, tmp_path: Path) -> None:
    _tree(lab.pod_path("/tmp/m1/run"), {"same.txt": "from the pod\n", "new.txt": "new\n", "sub/deep.txt": "deep\n"})
    here = _tree(tmp_path / "here" / "run", {"keep.txt": "mine\n", "same.txt": "old\n", "sub/mine.txt": "mine too\n"})
    r = nsl(capsys, "copy", ":/tmp/m1/run", f"{here.parent}/")
    assert r.code == 0, r
    assert _contents(here) == {
        "keep.txt": "mine\n",
        "new.txt": "new\n",
        "same.txt": "from the pod\n",
        "sub/deep.txt": "deep\n",
        "sub/mine.txt": "mine too\n",
    }
    assert os.listdir(here.parent) == ["run"]  # no staging folder left


@pytest.mark.parametrize("pod_side", POD_SIDES, indirect=True)
def test_copy_in_merges_into_a_folder_in_the_pod(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, pod_side: str, tmp_path: Path
) -> None:
    where = f"/tmp/m2-{pod_side}"
    there = _tree(
        lab.pod_path(f"{where}/run"),
        {"keep.txt": "the pod's\n", "same.txt": "old\n", "sub/mine.txt": "the pod's too\n"},
    )
    src = _tree(tmp_path / "run", {"same.txt": "from here\n", "new.txt": "new\n", "sub/deep.txt": "deep\n"})
    r = nsl(capsys, "copy", str(src), f":{where}/", "--json")
    assert r.code == 0, r
    assert _contents(there) == {
        "keep.txt": "the pod's\n",
        "new.txt": "new\n",
        "same.txt": "from here\n",
        "sub/deep.txt": "deep\n",
        "sub/mine.txt": "the pod's too\n",
    }
    assert sorted(os.listdir(there.parent)) == ["run"]


@pytest.mark.parametrize("pod_side", POD_SIDES, indirect=True)
def test_a_clash_in_the_pod_is_refused_and_nothing_changes(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, pod_side: str, tmp_path: Path
) -> None:
    where = f"/tmp/m3-{pod_side}"
    there = _tree(lab.pod_path(f"{where}/run"), {"keep.txt": "the pod's\n", "zz": "a file in the pod\n"})
    before = fingerprint(there.parent)
    # a.txt comes first in the stream: every clash is found before anything moves
    src = _tree(tmp_path / "run", {"a.txt": "would be new\n", "zz/inside.txt": "a folder here\n"})
    r = nsl(capsys, "copy", str(src), f":{where}/")
    assert r.code == 2, r
    line = one_error_line(r)
    assert "zz is a file and the copy brings a folder of that name" in line and "nothing was changed" in line, line
    assert fingerprint(there.parent) == before


def test_a_clash_here_is_refused_and_nothing_changes(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, tmp_path: Path
) -> None:
    _tree(
        lab.pod_path("/tmp/m4/run"),
        {"a.txt": "would be new\n", "zz": "a file in the pod\n", "link/x": "through a link\n"},
    )
    outside = _tree(tmp_path / "outside", {"secret.txt": "untouched\n"})
    here = _tree(tmp_path / "here" / "run", {"zz/inside.txt": "a folder here\n"})
    before = fingerprint(tmp_path)
    r = nsl(capsys, "copy", ":/tmp/m4/run", f"{here.parent}/")
    assert r.code == 2 and "zz is a folder and the copy brings a file of that name" in one_error_line(r), r
    assert fingerprint(tmp_path) == before
    # a symlink here where the copy brings a folder: never written through
    (here / "zz" / "inside.txt").unlink()
    (here / "zz").rmdir()
    (here / "zz").write_text("now a file\n")
    (here / "link").symlink_to(outside)
    r = nsl(capsys, "copy", ":/tmp/m4/run", f"{here.parent}/")
    assert r.code == 2 and "link is a symlink and the copy brings a folder" in one_error_line(r), r
    assert _contents(outside) == {"secret.txt": "untouched\n"} and not (here / "a.txt").exists()


def test_a_file_replaces_a_file_of_the_same_name_only(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, tmp_path: Path
) -> None:
    lab.pod_path("/tmp/m5.txt").write_text("from the pod\n")
    (tmp_path / "m5.txt").write_text("old\n")
    (tmp_path / "other.txt").write_text("mine\n")
    assert nsl(capsys, "copy", ":/tmp/m5.txt", f"{tmp_path}/").code == 0
    assert _contents(tmp_path) == {"m5.txt": "from the pod\n", "other.txt": "mine\n"}


# ---------------------------------------------------------------------------- a trailing slash


def test_a_trailing_slash_means_a_folder_that_must_exist(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lab.pod_path("/tmp/blob.bin").write_bytes(b"blob")
    monkeypatch.chdir(tmp_path)
    r = nsl(capsys, "copy", ":/tmp/blob.bin", "./back/")
    assert r.code == 2, r
    assert one_error_line(r) == "error: no such folder ./back/; create it first."
    assert os.listdir(tmp_path) == []  # no file named back, no staging folder
    (tmp_path / "back").mkdir()
    assert nsl(capsys, "copy", ":/tmp/blob.bin", "./back/").code == 0
    assert (tmp_path / "back" / "blob.bin").read_bytes() == b"blob"
    # without the slash, a name that is not there is the new name (as scp)
    assert nsl(capsys, "copy", ":/tmp/blob.bin", "./renamed.bin").code == 0
    assert (tmp_path / "renamed.bin").read_bytes() == b"blob"


# ---------------------------------------------------------------------------- names


@pytest.mark.parametrize("pod_side", POD_SIDES, indirect=True)
def test_any_file_name_goes_both_ways(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, pod_side: str, tmp_path: Path
) -> None:
    names = {
        "a\nb.txt": "newline\n",
        "tab\there.txt": "tab\n",
        " lead and trail ": "spaces\n",
        "-dash.txt": "dash\n",
        "caf\u00e9.txt": "utf-8\n",
    }
    src = _tree(tmp_path / f"names-{pod_side}", names)
    (src / "caf\udce9-latin1.txt").write_text("not utf-8\n")  # a name that is not UTF-8
    r = nsl(capsys, "copy", str(src), ":/tmp/")
    assert r.code == 0, r
    there = lab.pod_path(f"/tmp/{src.name}")
    assert _contents(there) == _contents(src)
    back = tmp_path / "back"
    back.mkdir()
    r = nsl(capsys, "copy", f":/tmp/{src.name}", f"{back}/")
    assert r.code == 0, r
    assert _contents(back / src.name) == _contents(src)


@pytest.mark.parametrize("pod_side", POD_SIDES, indirect=True)
def test_an_odd_name_in_an_error_is_shown_escaped(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, pod_side: str, tmp_path: Path
) -> None:
    where = f"/tmp/m6-{pod_side}"
    _tree(lab.pod_path(f"{where}/run"), {"evil\n\x1b[2Jname": "a file in the pod\n"})
    src = _tree(tmp_path / "run", {"evil\n\x1b[2Jname/x": "a folder here\n"})
    r = nsl(capsys, "copy", str(src), f":{where}/")
    assert r.code == 2, r
    line = one_error_line(r)
    assert "\x1b" not in r.err and "evil\\n\\x1b[2Jname" in line, line


def test_names_in_copy_errors_are_escaped_on_one_line(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, tmp_path: Path
) -> None:
    """Every copy error that names a path, from here or from the pod, on one line: a
    newline or a terminal escape in a name is shown escaped, never written out."""
    odd = "no\nsuch\x1b[2J"
    missing_here = nsl(capsys, "copy", str(tmp_path / odd), ":/tmp/")
    missing_there = nsl(capsys, "copy", f":/tmp/{odd}", f"{tmp_path}/")
    no_folder = nsl(capsys, "copy", f":/tmp/{odd}", f"{tmp_path / odd}/")
    for r, code in ((missing_here, 2), (missing_there, 6), (no_folder, 2)):
        assert r.code == code, r
        line = one_error_line(r)
        assert "\x1b" not in r.err and "no\\nsuch\\x1b[2J" in line, line


# ---------------------------------------------------------------------------- Ctrl-C


def _interrupt(argv: list[str], started: Path, glob: str) -> subprocess.CompletedProcess[str]:
    """Run `nsightlab ARGV`, press Ctrl-C once something matching `glob` shows in
    `started` (the copy is under way), and wait for it to end."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "nsightlab", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    deadline = time.monotonic() + 30
    while not list(started.glob(glob)) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def test_ctrl_c_during_copy_out_says_nothing_was_placed(lab: CopyLab, tmp_path: Path) -> None:
    import hostile_tars

    lab.pod_path("/tmp/run").mkdir(parents=True, exist_ok=True)
    stream = hostile_tars.archive(hostile_tars.d("run"), hostile_tars.f("run/a.bin", b"a" * 100_000))
    half = lab.root / "half.tar"
    half.write_bytes(stream[:60_000])
    # the pod sends half the archive, then hangs
    lab.sim.put_tool("ml-lab", "nsight-lab-ana", "python3", f"#!/bin/sh\ncat >/dev/null\ncat '{half}'\nexec sleep 60\n")
    dst = tmp_path / "dst"
    (dst / "run").mkdir(parents=True)
    (dst / "run" / "keep.txt").write_text("mine\n")
    try:
        done = _interrupt(["copy", ":/tmp/run", f"{dst}/"], dst, ".nsightlab-copy-*/run/a.bin")  # half of it is here
    finally:
        lab.real_python()
    assert done.returncode == 130, done
    assert done.stderr.splitlines()[-1] == f"error: interrupted: nothing was placed in {dst / 'run'}.", done.stderr
    assert os.listdir(dst) == ["run"] and _contents(dst) == {"run/keep.txt": "mine\n"}


def test_ctrl_c_during_copy_in_says_nothing_was_placed(lab: CopyLab, tmp_path: Path) -> None:
    src = tmp_path / "big.bin"
    with src.open("wb") as fh:
        fh.truncate(64 << 20)  # more than the sockets and pipes on the way hold
    # the pod's python3 reads 1 MiB of its stdin, then waits for the gate to open: the
    # copy is under way when Ctrl-C comes
    gate = tmp_path / "gate"
    gate.write_text("closed")
    reader = (
        "import os, sys, time\n"
        "sys.stdout.buffer.write(sys.stdin.buffer.read(1 << 20)); sys.stdout.flush()\n"
        f"while os.path.exists({str(gate)!r}): time.sleep(0.01)\n"
        "while b := sys.stdin.buffer.read1(1 << 20): sys.stdout.buffer.write(b)\n"
    )
    lab.sim.put_tool(
        "ml-lab",
        "nsight-lab-ana",
        "python3",
        f'#!/bin/sh\n"{sys.executable}" -c {shlex.quote(reader)} | "{sys.executable}" "$@"\n',
    )
    tmp = lab.pod_path("/tmp")
    proc = subprocess.Popen(
        [sys.executable, "-m", "nsightlab", "copy", str(src), ":/tmp/"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    try:
        deadline = time.monotonic() + 30
        while not list(tmp.glob(".nsightlab-copy-*")) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)
        gate.unlink()  # the pod reads on: the stream can stop at a frame boundary
        _, err = proc.communicate(timeout=30)
    finally:
        lab.real_python()
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "error: interrupted: nothing was placed in pod nsight-lab-ana:/tmp/.", err
    assert not (tmp / "big.bin").exists()
    assert list(tmp.glob(".nsightlab-copy-*")) == []  # the pod's side was told, and cleaned up


def test_ctrl_c_while_placing_says_which_files_were_placed(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C between two renames (a moment no test can hit on purpose: injected)."""
    from nsightlab.cluster import podtar

    _tree(lab.pod_path("/tmp/m7/run"), {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "d.txt": "d\n"})
    here = _tree(tmp_path / "run", {"keep.txt": "mine\n"})
    real_place = podtar.place

    def place_two_then_ctrl_c(staged: str, final: str, plan: list[tuple[str, bool]] | None) -> None:
        assert plan is not None  # merging into ./run: file by file
        files = [entry for entry in plan if not entry[1]]
        real_place(staged, final, [entry for entry in plan if entry[1]] + files[:2])
        raise KeyboardInterrupt

    monkeypatch.setattr(podtar, "place", place_two_then_ctrl_c)
    r = nsl(capsys, "copy", ":/tmp/m7/run", f"{tmp_path}/")
    assert r.code == 130, r
    assert (
        one_error_line(r)
        == f"error: interrupted while placing: 2 of 4 files were placed in {here} (run/a.txt, run/b.txt); the other "
        "2 were not. Copy it again to finish."
    )
    assert _contents(here) == {"a.txt": "a\n", "b.txt": "b\n", "keep.txt": "mine\n"}
    assert os.listdir(tmp_path) == ["run"]  # no staging folder left


def test_ctrl_c_after_all_was_sent_says_the_pod_may_hold_it(lab: CopyLab, tmp_path: Path) -> None:
    """Once the whole archive is sent the pod may place it: one Ctrl-C while its answer
    is awaited stops at once and says so."""
    src = tmp_path / "small.txt"
    src.write_text("small\n")
    answered = tmp_path / "all-read"
    lab.sim.put_tool(
        "ml-lab", "nsight-lab-ana", "python3", f"#!/bin/sh\ncat >/dev/null\ntouch '{answered}'\nexec sleep 60\n"
    )
    try:
        done = _interrupt(["copy", str(src), ":/tmp/"], tmp_path, "all-read")
    finally:
        lab.real_python()
    assert done.returncode == 130, done
    assert done.stderr.splitlines()[-1] == (
        "error: interrupted after the whole copy was sent: pod nsight-lab-ana:/tmp/ may hold it, not verified. "
        "Copy it again to have it verified."
    ), done.stderr
