"""The tar extractor against crafted archives: nothing may land outside the destination."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from nsightlab.cluster.podtar import inside as _inside
from nsightlab.cluster.transfer import UnsafeArchiveError, extract_stream


def _archive(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    buf.seek(0)
    return buf


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _entry(name: str, kind: bytes, link: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info, None


@pytest.fixture
def staging(tmp_path: Path) -> Path:
    d = tmp_path / "dest" / ".staging"
    d.mkdir(parents=True)
    return d


def _outside(tmp_path: Path) -> list[Path]:
    return [p for p in tmp_path.rglob("*") if "dest" not in p.parts]


def test_regular_tree_extracts_with_digests(staging: Path) -> None:
    import hashlib

    arc = _archive(
        [
            _entry("run", tarfile.DIRTYPE),
            _file("run/a.csv", b"1,2\n"),
            _file("run/sub/b.json", b"{}"),
            _entry("run/link", tarfile.SYMTYPE, "a.csv"),
        ]
    )
    digests = extract_stream(arc, staging, "run")
    assert (staging / "run/a.csv").read_bytes() == b"1,2\n"
    assert (staging / "run/sub/b.json").read_bytes() == b"{}"
    assert (staging / "run/link").is_symlink()
    assert digests["run/a.csv"].size == 4
    assert digests["run/a.csv"].sha256 == hashlib.sha256(b"1,2\n").hexdigest()
    assert set(digests) == {"run/a.csv", "run/sub/b.json"}


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ([_file("/etc/evil")], "absolute path"),
        ([_file("run/../../evil")], "'..'"),
        ([_file("../evil")], "'..'"),
        ([_file("other/evil")], "outside"),
        ([_entry("run/l", tarfile.SYMTYPE, "/etc/passwd")], "points outside"),
        ([_entry("run/l", tarfile.SYMTYPE, "../../../etc")], "points outside"),
        ([_entry("run/sub", tarfile.DIRTYPE), _entry("run/sub/l", tarfile.SYMTYPE, "../../x")], "points outside"),
        ([_entry("run/dev", tarfile.CHRTYPE)], "device"),
        ([_entry("run/blk", tarfile.BLKTYPE)], "device"),
        ([_entry("run/fifo", tarfile.FIFOTYPE)], "FIFO"),
        ([_entry("run/h", tarfile.LNKTYPE, "/etc/shadow")], "absolute path"),
        ([_entry("run/h", tarfile.LNKTYPE, "run/not-there")], "hard link"),
    ],
)
def test_unsafe_members_are_refused(
    tmp_path: Path, staging: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], message: str
) -> None:
    with pytest.raises(UnsafeArchiveError, match=message):
        extract_stream(_archive(members), staging, "run")
    assert _outside(tmp_path) == []


def test_no_write_through_a_symlink(tmp_path: Path, staging: Path) -> None:
    # a symlink inside the tree that later members try to write through
    arc = _archive(
        [_entry("run", tarfile.DIRTYPE), _entry("run/d", tarfile.SYMTYPE, "."), _file("run/d/x", b"through")]
    )
    with pytest.raises(UnsafeArchiveError, match="symlink"):
        extract_stream(arc, staging, "run")
    other = tmp_path / "dest" / ".staging2"
    other.mkdir()
    arc = _archive([_entry("run", tarfile.DIRTYPE), _entry("run/f", tarfile.SYMTYPE, "g"), _file("run/f", b"over")])
    with pytest.raises(UnsafeArchiveError, match="appears twice"):
        extract_stream(arc, other, "run")
    assert _outside(tmp_path) == []


def test_hard_link_to_earlier_member_is_a_copy(staging: Path) -> None:
    arc = _archive([_file("run/a", b"data"), _entry("run/b", tarfile.LNKTYPE, "run/a")])
    digests = extract_stream(arc, staging, "run")
    assert (staging / "run/b").read_bytes() == b"data"
    assert digests["run/b"].sha256 == digests["run/a"].sha256


def test_truncated_archive_is_an_error(staging: Path) -> None:
    from nsightlab.errors import RemoteCommandError

    whole = _archive([_file("run/big", b"z" * 10000)]).getvalue()
    with pytest.raises(RemoteCommandError, match="damaged or incomplete"):
        extract_stream(io.BytesIO(whole[:3000]), staging, "run")


def test_symlink_rule() -> None:
    assert _inside("run", ["run", "a"], "b")
    assert _inside("run", ["run", "sub", "a"], "../b")
    assert not _inside("run", ["run", "a"], "../b")
    assert not _inside("run", ["run", "a"], "../../b")
    assert not _inside("run", ["run", "a"], "/b")


def test_websocket_frames_match_the_reference_library() -> None:
    import os

    from websocket import ABNF

    from nsightlab.cluster.execstream import frame_bytes

    for size in (0, 1, 3, 4, 5, 125, 126, 65535, 65536, 300001):
        data = os.urandom(size)
        key = os.urandom(4)
        ours = frame_bytes(ABNF.OPCODE_BINARY, data, key)
        theirs = ABNF(fin=1, opcode=ABNF.OPCODE_BINARY, data=data, mask_value=1)
        theirs.get_mask_key = lambda n, k=key: k  # type: ignore[method-assign]
        assert ours == theirs.format(), size
        # the exec framing: a channel byte in front of the data, masked with it
        stdin = frame_bytes(ABNF.OPCODE_BINARY, data, key, channel=0)
        theirs = ABNF(fin=1, opcode=ABNF.OPCODE_BINARY, data=b"\0" + data, mask_value=1)
        theirs.get_mask_key = lambda n, k=key: k  # type: ignore[method-assign]
        assert stdin == theirs.format(), size


# ---------------------------------------------------------------------------- the pod's side


def _python_3_8() -> str | None:
    """A Python 3.8 on this machine (the oldest the pod's side runs on), if there is one."""
    import shutil

    candidates = [shutil.which("python3.8"), *map(str, sorted(Path.home().glob(".pyenv/versions/3.8*/bin/python3.8")))]
    for candidate in filter(None, candidates):
        try:
            done = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 8))"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except OSError:
            continue
        if done.stdout.strip() == "True":
            return candidate
    return None


PYTHON_3_8 = _python_3_8()


def _bin_dir(tmp_path: Path, *, with_python: bool, old_python: bool = False, python: str | None = None) -> Path:
    """A PATH with just the tools a minimal image has (and python3 or not)."""
    import shutil
    import sys

    d = tmp_path / ("bin-py" if with_python else "bin")
    d.mkdir()
    tools = ["sh", "tar", "find", "wc", "sha256sum", "dd", "mktemp", "dirname", "rm", "mv", "mkdir"]
    found_sh = shutil.which("sh")
    for tool in tools:
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not installed")
        (d / tool).symlink_to(found)
    if with_python:
        (d / "python3").symlink_to(python or sys.executable)
    elif old_python:  # a python3 too old for the agent: 3.6 says so with exit 99
        (d / "python3").write_text(f"#!{found_sh}\n" + 'case "$*" in *version_info*) exit 99;; esac\nexit 1\n')
        (d / "python3").chmod(0o755)
    return d


@pytest.mark.parametrize(
    ("with_python", "old_python", "python"),
    [
        (True, False, None),
        pytest.param(
            True, False, PYTHON_3_8, marks=pytest.mark.skipif(PYTHON_3_8 is None, reason="no Python 3.8 here")
        ),
        (False, False, None),
        (False, True, None),
    ],
    ids=["python3", "python3.8", "tar+sha256sum", "python3.6"],
)
def test_pod_scripts_unpack_and_pack_with_digests(
    tmp_path: Path, with_python: bool, old_python: bool, python: str | None
) -> None:
    import hashlib
    import os

    from nsightlab.cluster import podtar
    from nsightlab.cluster.transfer import _PACK_SH, _UNPACK_SH, _agent, parse_digests

    env = {
        "PATH": str(_bin_dir(tmp_path, with_python=with_python, old_python=old_python, python=python)),
        "LC_ALL": "C",
    }
    src = tmp_path / "here" / "run"
    (src / "sub").mkdir(parents=True)
    (src / "a.bin").write_bytes(os.urandom(300_000))
    (src / "sub" / "b.txt").write_text("b\n")
    (src / "sub" / "new\nline.txt").write_text("a name with a newline\n")
    digests: dict[str, tuple[int, str]] = {}
    chunks: list[bytes] = []
    sent = podtar.pack(str(src), "run", chunks.append, digests)
    archive = b"".join(chunks) + podtar.end_of_archive(sent)
    pod = tmp_path / "pod"
    (pod / "run" / "sub").mkdir(parents=True)
    (pod / "run" / "sub" / "keep.txt").write_text("the pod's own\n")
    # copy in: the pod gets the agent, then the tar; "into" an existing folder, merged
    done = subprocess.run(
        ["sh", "-c", _UNPACK_SH, "nsightlab", "run", str(pod), "0"],
        input=_agent() + archive,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert ["P", "into"] in podtar.read_records(done.stdout)[0]
    remote = parse_digests(done.stdout)
    assert {k: (d.size, d.sha256) for k, d in remote.items()} == digests
    assert (pod / "run" / "a.bin").read_bytes() == (src / "a.bin").read_bytes()
    assert (pod / "run" / "sub" / "new\nline.txt").read_text() == "a name with a newline\n"
    assert (pod / "run" / "sub" / "keep.txt").read_text() == "the pod's own\n"
    assert [p.name for p in pod.iterdir()] == ["run"]  # no staging folder left
    digests["run/sub/keep.txt"] = (14, hashlib.sha256(b"the pod's own\n").hexdigest())
    # copy out: the agent on stdin; the tar on stdout, the digests on stderr
    done = subprocess.run(
        ["sh", "-c", _PACK_SH, "nsightlab", str(pod), "run"], input=_agent(), env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    staging = tmp_path / "back"
    staging.mkdir()
    got = extract_stream(io.BytesIO(done.stdout), staging, "run")
    sent_back = parse_digests(done.stderr)
    assert (
        {k: (d.size, d.sha256) for k, d in got.items()}
        == {k: (d.size, d.sha256) for k, d in sent_back.items()}
        == digests
    )
    assert hashlib.sha256((staging / "run" / "a.bin").read_bytes()).hexdigest() == digests["run/a.bin"][1]
    # a missing source: exit 44 and one line, whichever way the pod does it
    done = subprocess.run(
        ["sh", "-c", _PACK_SH, "nsightlab", str(pod), "nope"], input=_agent(), env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 44 and b"no such file or directory" in done.stderr and done.stdout == b""


def _unpack_in_pod(tmp_path: Path, stream: bytes, piece: int) -> tuple[int, bytes, bytes, Path]:
    """podtar's unpack as the pod runs it (python3 -I -S, the source on stdin ahead of
    the archive), the archive written into its stdin pipe `piece` bytes at a time as an
    exec stream brings it."""
    import sys
    import threading

    from nsightlab.cluster.transfer import _agent

    pod = tmp_path / "pod"
    pod.mkdir()
    agent = _agent()
    length, _, source = agent.partition(b"\n")
    runner = (
        'import sys\nn = int(sys.argv.pop(1)); exec(compile(sys.stdin.buffer.read(n), "podtar.py", "exec"), '
        '{"__name__": "__main__"})'
    )
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", runner, length.decode(), "unpack", "run", str(pod), "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )

    got: dict[str, bytes] = {}
    readers = [
        threading.Thread(target=lambda k=k, f=f: got.__setitem__(k, f.read()))
        for k, f in (("out", proc.stdout), ("err", proc.stderr))
    ]
    for r in readers:
        r.start()
    assert proc.stdin is not None
    proc.stdin.write(source)
    for i in range(0, len(stream), piece):
        proc.stdin.write(stream[i : i + piece])
        proc.stdin.flush()
    proc.stdin.close()
    proc.wait(timeout=60)
    for r in readers:
        r.join()
    out, err = got["out"], got["err"]
    return proc.returncode, out, err, pod


@pytest.mark.parametrize("piece", [65531, 1 << 20, 7 * 512 + 3])
def test_pod_unpack_reads_files_bigger_than_its_buffers_in_pieces(tmp_path: Path, piece: int) -> None:
    """Files of several 1 MiB buffers, sizes not a whole block, one after the other,
    arriving in exec-frame-sized pieces: every byte lands, the digests are right."""
    import hashlib
    import os

    from nsightlab.cluster import podtar
    from nsightlab.cluster.transfer import parse_digests

    src = tmp_path / "here" / "run"
    src.mkdir(parents=True)
    sizes = {"a.bin": 3 * podtar.CHUNK + 12345, "b.bin": podtar.CHUNK, "c.txt": 5, "d.bin": 2 * podtar.CHUNK - 1}
    for name, size in sizes.items():
        (src / name).write_bytes(os.urandom(size))
    digests: dict[str, tuple[int, str]] = {}
    chunks: list[bytes] = []
    sent = podtar.pack(str(src), "run", chunks.append, digests)
    code, out, err, pod = _unpack_in_pod(tmp_path, b"".join(chunks) + podtar.end_of_archive(sent), piece)
    assert code == 0, err
    remote = parse_digests(out)
    assert {k: (d.size, d.sha256) for k, d in remote.items()} == digests
    for name in sizes:
        data = (pod / "run" / name).read_bytes()
        assert data == (src / name).read_bytes()
        assert digests[f"run/{name}"] == (len(data), hashlib.sha256(data).hexdigest())
    assert [p.name for p in pod.iterdir()] == ["run"]


def test_pod_unpack_of_a_cut_stream_is_exit_48_and_leaves_nothing(tmp_path: Path) -> None:
    import os

    from nsightlab.cluster import podtar

    src = tmp_path / "here" / "run"
    src.mkdir(parents=True)
    (src / "big.bin").write_bytes(os.urandom(3 * podtar.CHUNK))
    chunks: list[bytes] = []
    podtar.pack(str(src), "run", chunks.append, {})
    whole = b"".join(chunks)
    code, _, err, pod = _unpack_in_pod(tmp_path, whole[: len(whole) // 2], 65531)
    assert code == podtar.E_TAR
    assert err.decode().strip() == "tar stream: unexpected end of data"
    assert list(pod.iterdir()) == []  # no staging folder, nothing under the final name


def test_reader_handles_long_names_and_pax_from_gnu_tar(tmp_path: Path, staging: Path) -> None:
    import shutil

    if shutil.which("tar") is None:
        pytest.skip("tar is not installed")
    deep = tmp_path / "src" / "run" / ("d" * 120) / ("f" * 150 + ".txt")
    deep.parent.mkdir(parents=True)
    deep.write_text("deep\n")
    for fmt in ("gnu", "posix"):
        out = subprocess.run(
            ["tar", f"--format={fmt}", "-cf", "-", "-C", str(tmp_path / "src"), "run"], capture_output=True, check=True
        ).stdout
        where = staging / fmt
        where.mkdir()
        got = extract_stream(io.BytesIO(out), where, "run")
        rel = "run/" + "d" * 120 + "/" + "f" * 150 + ".txt"
        assert set(got) == {rel} and (where / rel).read_text() == "deep\n"


def test_stdin_frames_unmask_to_the_data_with_the_reference_library() -> None:
    import os

    from websocket import ABNF

    from nsightlab.cluster.execstream import STDIN_FRAME, ExecSession

    class Socket:
        sent = b""

        def sendall(self, data: bytes | bytearray) -> None:
            self.sent = bytes(data)

    class WebSocket:
        sock = Socket()

    def frames(wire: bytes) -> list[bytes]:
        out, i = [], 0
        while i < len(wire):
            assert wire[i] == 0x82 and wire[i + 1] & 0x80  # final, binary, masked
            n, j = wire[i + 1] & 0x7F, i + 2
            if n == 126:
                n, j = int.from_bytes(wire[j : j + 2], "big"), j + 2
            elif n == 127:
                n, j = int.from_bytes(wire[j : j + 8], "big"), j + 8
            out.append(ABNF.mask(wire[j : j + 4], wire[j + 4 : j + 4 + n]))
            i = j + 4 + n
        return out

    session = ExecSession(WebSocket(), "v5.channel.k8s.io", "test")
    for size in (1, 125, STDIN_FRAME, STDIN_FRAME + 1, 3 * STDIN_FRAME, 3 * STDIN_FRAME + 130, 2**20):
        data = os.urandom(size)
        session.write_stdin(memoryview(data) if size % 2 else data)
        got = frames(WebSocket.sock.sent)
        assert all(f[:1] == b"\0" and len(f) <= STDIN_FRAME + 1 for f in got), size
        assert b"".join(f[1:] for f in got) == data, size


# ---------------------------------------------------------------------------- the whole corpus


def test_every_hostile_stream_is_refused_by_the_reader(tmp_path: Path) -> None:
    """All of tests/hostile_tars.py, variants included (the copy tests serve one stream
    per shape through the pod): refused with its reason, nothing outside the staging
    folder, in pieces of any size."""
    import os

    import hostile_tars

    from nsightlab.errors import RemoteCommandError

    world = tmp_path / "world"
    world.mkdir()
    (world / "victim.txt").write_text("keep me\n")
    for n, case in enumerate(hostile_tars.hostile(world)):
        staging = world / f"staging-{n}"
        staging.mkdir()
        for piece in (509, 1 << 20):
            stream = io.BytesIO(case.stream)
            with pytest.raises(RemoteCommandError) as caught:
                _extract_pieces(stream, staging / str(piece), piece)
            assert case.refusal in caught.value.message, (case.id, caught.value.message)
        assert sorted(os.listdir(world)) == sorted(["victim.txt", *(f"staging-{i}" for i in range(n + 1))]), case.id
        assert (world / "victim.txt").read_text() == "keep me\n"
    for case in hostile_tars.odd_but_fine(world):
        staging = world / f"fine-{case.id}"
        staging.mkdir()
        got = extract_stream(io.BytesIO(case.stream), staging, "run")
        assert {k: (v.size, v.sha256) for k, v in got.items()} == hostile_tars.digests_of(case.stream), case.id


def _extract_pieces(stream: io.BytesIO, staging: Path, piece: int) -> None:
    from nsightlab.cluster.transfer import _extract

    staging.mkdir()
    _extract(lambda: stream.read(piece), staging, "run")
