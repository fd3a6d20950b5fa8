"""Properties of the reader that takes what a pod sends (`extract_stream`), over
generated streams: whatever the bytes, it ends in extracted files or one of its
documented errors (UnsafeArchiveError, or RemoteCommandError for a damaged stream),
never another exception; nothing appears or changes outside the staging folder; and
what it extracts stays inside the top folder, links included, followed or chained."""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from pathlib import Path

from copylab import fingerprint, links_leading_out
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nsightlab.cluster.transfer import extract_stream
from nsightlab.errors import RemoteCommandError

PARTS = [
    "run",
    "run",
    "run",
    "a",
    "b",
    "B",
    "sub",
    "..",
    ".",
    "",
    "x\ny",
    "caf\u00e9",
    "cafe\u0301",
    "\udcff",
    "l0",
    "l1",
    "n" * 300,
]
TYPES = [
    tarfile.REGTYPE,
    tarfile.REGTYPE,
    tarfile.DIRTYPE,
    tarfile.SYMTYPE,
    tarfile.SYMTYPE,
    tarfile.LNKTYPE,
    tarfile.CHRTYPE,
    tarfile.FIFOTYPE,
    tarfile.CONTTYPE,
    b"Z",
]

names = st.lists(st.sampled_from(PARTS), min_size=1, max_size=5).map("/".join)
targets = st.one_of(
    names,
    st.lists(st.sampled_from(["..", ".", "a", "b", "sub", "l0", "l1", "run"]), max_size=5).map("/".join),
    st.sampled_from([".", "b/..", "l0/..", "l1/..", "a/../..", "l1/etc", "/etc"]),  # the pieces of link chains
)
members = st.tuples(
    st.one_of(names, names.map(lambda n: "run/" + n)),
    st.sampled_from(TYPES),
    targets,
    st.binary(max_size=700),
)
formats = st.sampled_from([tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])


def _build(items: list[tuple[str, bytes, str, bytes]], fmt: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt, encoding="utf-8", errors="surrogateescape") as tar:
        for name, kind, link, data in items:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link
            if kind in (tarfile.REGTYPE, tarfile.CONTTYPE, b"Z"):
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return buf.getvalue()


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """Archives of generated members (any names, types, links), as tarfile writes them,
    then sometimes damaged: cut, a byte changed, blocks repeated."""
    items = draw(st.lists(members, max_size=8))
    try:
        data = _build(items, draw(formats))
    except (ValueError, tarfile.TarError, UnicodeError):  # a name USTAR cannot hold
        data = _build(items, tarfile.GNU_FORMAT)
    if draw(st.booleans()):  # an extended header of any records before a member
        records = draw(
            st.one_of(
                st.binary(max_size=60),
                st.sampled_from([b"xx path=run/a\n", b"12 size=-5\n", b"99 path=x\n", b"13 size=1x\n"]),
            )
        )
        head = tarfile.TarInfo("run/PaxHeaders/x")
        head.type = tarfile.XHDTYPE
        head.size = len(records)
        at = draw(st.integers(0, len(data) // 512)) * 512
        data = data[:at] + head.tobuf(tarfile.USTAR_FORMAT) + records + bytes(-len(records) % 512) + data[at:]
    how = draw(st.sampled_from(["whole", "whole", "cut", "byte", "repeat"]))
    if how == "cut" and data:
        data = data[: draw(st.integers(0, len(data)))]
    elif how == "byte" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    elif how == "repeat" and len(data) >= 1024:
        start = draw(st.integers(0, len(data) // 512 - 1)) * 512
        data = data[: start + 512] + data[start:]
    return data


def _check(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        box = Path(tmp)
        (box / "victim.txt").write_text("keep me\n")
        (box / "run-evil").mkdir()
        staging = box / "dest" / ".staging"
        staging.mkdir(parents=True)
        before = fingerprint(box, skip=staging)
        try:
            got = extract_stream(io.BytesIO(data), staging, "run")
        except RemoteCommandError:  # UnsafeArchiveError is one
            got = None
        assert fingerprint(box, skip=staging) == before
        assert set(os.listdir(staging)) <= {"run"}
        if got is not None:
            assert links_leading_out(staging / "run") == [] if (staging / "run").is_dir() else True
            for name, digest in got.items():
                assert (staging / name).is_file() and (staging / name).stat().st_size == digest.size


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams())
def test_generated_streams_end_in_files_or_a_documented_error(data: bytes) -> None:
    _check(data)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=3000))
def test_any_bytes_end_in_files_or_a_documented_error(data: bytes) -> None:
    _check(data)


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=512, max_size=512), st.binary(max_size=1024))
def test_any_header_block_ends_in_files_or_a_documented_error(block: bytes, rest: bytes) -> None:
    """Random header blocks with a valid checksum: the fields hold anything."""
    raw = bytearray(block)
    raw[148:156] = b" " * 8
    raw[148:156] = b"%06o\0 " % sum(raw)
    _check(bytes(raw) + rest + bytes(1024))
