"""Tar streams a hostile pod could send for `nsightlab copy :/tmp/run DST/`, generated.

Every stream holds the top folder `run` (what was asked for) and something that must not
get through: the shapes of kubectl cp's five CVEs, link chains, hard links, devices,
duplicates, long names and malformed headers. `hostile(world)` gives the ones that must
be refused (with a fragment of the one error line expected); `odd_but_fine(world)` the
unusual streams that must be copied whole (names with newlines or bytes that are not
UTF-8, a global PAX header as `git archive` writes, hard links and links that stay
inside). `world` is the folder the test watches: streams that name an absolute path
name one inside it, so that a regression writes there (where the test sees it), never
into the machine's own /etc.

Shapes, from the public write-ups:
- CVE-2018-1002100: member names with `../` (and absolute names) written as they are.
- CVE-2019-1002101: a symlink pointing out, then a member written through it.
- CVE-2019-11246: the same with a link in a subfolder, its target judged from the wrong
  folder (it climbs one level more than its depth allows).
- CVE-2019-11249: a prefix check without a separator: `run-evil` passes as `run`.
- CVE-2019-11251: two symlinks that each look inside, chained to lead out.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Case:
    id: str
    stream: bytes
    refusal: str = ""  # a fragment of the error line; "" for a stream to be copied whole
    again: bool = False  # a variant of a shape already covered: the reader's tests only


def _info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = size
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    return info


def archive(
    *members: tuple[tarfile.TarInfo, bytes | None], fmt: int = tarfile.GNU_FORMAT, pax: dict[str, str] | None = None
) -> bytes:
    """A whole archive of `members` (data None: no contents) as tarfile writes it."""
    buf = io.BytesIO()
    with tarfile.open(
        fileobj=buf, mode="w", format=fmt, encoding="utf-8", errors="surrogateescape", pax_headers=pax
    ) as tar:
        for info, data in members:
            if data is None:
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def d(name: str) -> tuple[tarfile.TarInfo, None]:
    return _info(name, tarfile.DIRTYPE), None


def f(name: str, data: bytes = b"data\n") -> tuple[tarfile.TarInfo, bytes]:
    return _info(name), data


def sym(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    return _info(name, tarfile.SYMTYPE, target), None


def hard(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    return _info(name, tarfile.LNKTYPE, target), None


def with_pax(member: tuple[tarfile.TarInfo, bytes], records: dict[str, str]) -> tuple[tarfile.TarInfo, bytes]:
    member[0].pax_headers = dict(records)
    return member


def special(name: str, kind: bytes) -> tuple[tarfile.TarInfo, None]:
    return _info(name, kind), None


def block(
    name: str, kind: bytes = tarfile.REGTYPE, *, size: bytes | None = None, link: str = "", checksum: bool = True
) -> bytes:
    """One raw header block, with a size field given as raw bytes (any content)."""
    raw = bytearray(_info(name, kind, link).tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")[-512:])
    if size is not None:
        raw[124:136] = size.ljust(12, b"\0")[:12]
    raw[148:156] = b" " * 8
    if checksum:
        raw[148:156] = b"%06o\0 " % sum(raw)
    return bytes(raw)


def padded(data: bytes) -> bytes:
    return data + bytes(-len(data) % 512)


END = bytes(1024)


def pax_header(records: bytes, kind: bytes = tarfile.XHDTYPE) -> bytes:
    """A PAX header block and its data, the records given raw (any content)."""
    return block("run/PaxHeaders/x", kind, size=b"%011o" % len(records)) + padded(records)


def pax_record(key: str, value: str) -> bytes:
    body = f" {key}={value}\n".encode("utf-8", "surrogateescape")
    n = len(body) + 1
    while len(str(n)) + len(body) != n:
        n += 1
    return str(n).encode() + body


def chain(depth: int = 40) -> list[tuple[tarfile.TarInfo, None]]:
    """`b -> .`, `l0 -> b/..`, `l1 -> l0/..`, ...: each looks inside, together they climb
    `depth` levels (to / from anywhere less deep)."""
    links = [sym("run/b", ".")]
    prev = "b"
    for i in range(depth):
        links.append(sym(f"run/l{i}", f"{prev}/.."))
        prev = f"l{i}"
    return links


def hostile(world: Path) -> list[Case]:
    """Streams that must be refused, each with what the error line says."""
    w = str(world).lstrip("/")  # the watched folder, relative to /
    top = d("run")
    ok = f("run/ok.txt", b"fine\n")
    cases = [
        # CVE-2018-1002100
        Case("dotdot", archive(top, ok, f("run/../../escaped.txt")), "'..'"),
        Case("dotdot-first", archive(f("../escaped.txt")), "'..'", again=True),
        Case("absolute", archive(top, f(f"/{w}/escaped.txt")), "absolute path"),
        Case("outside-top", archive(top, f("other/escaped.txt")), "outside run:"),
        # CVE-2019-1002101
        Case("link-out-then-write", archive(top, sym("run/l", "../.."), f("run/l/escaped.txt")), "points outside"),
        Case(
            "absolute-link", archive(top, sym("run/l", f"/{w}"), f("run/l/escaped.txt")), "points outside", again=True
        ),
        # CVE-2019-11246
        Case(
            "deep-link-climbs-too-far",
            archive(top, d("run/a"), d("run/a/b"), sym("run/a/b/l", "../../../x")),
            "points outside",
        ),
        # CVE-2019-11249
        Case("prefix-sibling-member", archive(top, f("run-evil/escaped.txt")), "outside run:"),
        Case(
            "prefix-sibling-link", archive(top, sym("run/l", "../run-evil"), f("run/l/escaped.txt")), "points outside"
        ),
        # CVE-2019-11251
        Case(
            "two-links",
            archive(top, sym("run/a", "."), sym("run/b", "a/.."), f("run/b/escaped.txt")),
            "climbs ('..') after a name",
        ),
        # link chains: the brief's shape (nothing written through them: the links alone)
        Case(
            "chain-to-etc",
            archive(top, *chain(), sym("run/etc", "l39/etc"), sym("run/root", "l39")),
            "climbs ('..') after a name",
        ),
        Case(
            "chain-then-write",
            archive(top, *chain(), sym("run/esc", f"l39/{w}"), f("run/esc/escaped.txt")),
            "climbs ('..') after a name",
        ),
        Case(
            "chain-built-backwards",
            archive(top, sym("run/l1", "l0/.."), sym("run/l0", "b/.."), sym("run/b", ".")),
            "climbs ('..') after a name",
            again=True,
        ),
        # writing through links that themselves stay inside
        Case("file-through-inside-link", archive(top, sym("run/d", "."), f("run/d/x")), "through the symlink"),
        Case(
            "member-under-link",
            archive(top, d("run/sub"), sym("run/l", "sub"), f("run/l/x")),
            "through the symlink",
            again=True,
        ),
        Case("folder-under-link", archive(top, sym("run/l", "."), d("run/l/sub")), "through the symlink"),
        Case("file-where-folder-was-a-file", archive(top, f("run/x"), f("run/x/y")), "is a file in this archive"),
        # replacing what is already there
        Case("folder-then-link", archive(top, d("run/d"), f("run/d/f"), sym("run/d", f"/{w}")), "appears twice"),
        Case("file-then-link", archive(top, f("run/f"), sym("run/f", "../..")), "appears twice", again=True),
        Case("duplicate-file", archive(top, f("run/a", b"one"), f("run/a", b"two")), "appears twice"),
        Case("duplicate-link", archive(top, sym("run/a", "b"), sym("run/a", "c")), "appears twice", again=True),
        Case("top-level-link", archive(sym("run", "..")), "points outside"),
        Case("empty-link", archive(top, sym("run/l", "")), "no target", again=True),
        # hard links
        Case("hard-link-absolute", archive(top, hard("run/h", f"/{w}/victim.txt")), "absolute path"),
        Case("hard-link-dotdot", archive(top, hard("run/h", "run/../../victim.txt")), "'..'", again=True),
        Case("hard-link-outside-top", archive(top, hard("run/h", "other/x")), "outside run:", again=True),
        Case("hard-link-not-a-member", archive(top, hard("run/h", "run/not-there")), "not a file of this archive"),
        Case(
            "hard-link-to-a-link",
            archive(top, sym("run/s", "ok.txt"), hard("run/h", "run/s")),
            "not a file of this archive",
        ),
        Case(
            "hard-link-to-a-folder",
            archive(top, d("run/sub"), hard("run/h", "run/sub")),
            "not a file of this archive",
            again=True,
        ),
        # special files
        Case("char-device", archive(top, special("run/null", tarfile.CHRTYPE)), "device"),
        Case("block-device", archive(top, special("run/sda", tarfile.BLKTYPE)), "device", again=True),
        Case("fifo", archive(top, special("run/pipe", tarfile.FIFOTYPE)), "FIFO"),
        Case(
            "unknown-type",
            archive(top)[:512] + block("run/x", b"Z", size=b"%011o" % 5) + padded(b"hello") + END,
            "unknown type",
        ),
        Case("gnu-sparse", archive(top)[:512] + block("run/s", tarfile.GNUTYPE_SPARSE) + END, "sparse"),
        Case(
            "pax-sparse",
            archive(
                top,
                with_pax(f("run/s", b"x" * 10), {"GNU.sparse.major": "1", "GNU.sparse.minor": "0"}),
                fmt=tarfile.PAX_FORMAT,
            ),
            "sparse file",
        ),
        # names
        Case("long-name", archive(top, f("run/" + "a" * 5000)), "name too long"),
        Case("long-path", archive(top, f("run/" + "/".join(["d" * 200] * 25) + "/x")), "name too long", again=True),
        Case("gnu-long-name-dotdot", archive(top, f("run/" + "a/" * 60 + "../" * 70 + "escaped.txt")), "'..'"),
        Case("gnu-long-link-out", archive(top, sym("run/l", "../" * 60 + w)), "points outside"),
        Case(
            "pax-path-overrides",
            archive(top)[:512]
            + pax_header(pax_record("path", "run/../../escaped.txt"))
            + archive(f("run/benign.txt"))[:1024]
            + END,
            "'..'",
        ),
        Case(
            "nul-in-pax-path",
            archive(top)[:512] + pax_header(pax_record("path", "run/a\0b")) + archive(f("run/ab"))[:1024] + END,
            "NUL",
        ),
        Case(
            "global-pax-path",
            archive(top)[:512]
            + pax_header(pax_record("path", "../escaped.txt"), tarfile.XGLTYPE)
            + archive(f("run/x"))[:1024]
            + END,
            "global PAX header",
        ),
        # malformed headers
        Case(
            "pax-length-not-a-number",
            archive(top)[:512] + pax_header(b"xx path=run/a\n") + archive(f("run/a"))[:1024] + END,
            "bad PAX header",
        ),
        Case(
            "pax-length-too-long",
            archive(top)[:512] + pax_header(b"99 path=run/a\n") + archive(f("run/a"))[:1024] + END,
            "bad PAX header",
            again=True,
        ),
        Case(
            "pax-size-not-a-number",
            archive(top)[:512] + pax_header(pax_record("size", "12abc")) + archive(f("run/a"))[:1024] + END,
            "bad size",
        ),
        Case(
            "pax-header-too-big",
            archive(top)[:512] + pax_header(pax_record("comment", "c" * (1 << 20))) + archive(f("run/a"))[:1024] + END,
            "extended header of",
        ),
        Case(
            "pax-without-member",
            archive(top)[:512] + pax_header(pax_record("path", "run/a")) + END,
            "extended header without",
        ),
        Case(
            "giant-size",
            archive(top)[:512]
            + block("run/big", size=b"\x80" + (1 << 80).to_bytes(11, "big"))
            + padded(b"x" * 100)
            + END,
            "unexpected end of data",
        ),
        Case("negative-size", archive(top)[:512] + block("run/neg", size=b"\xff" * 12) + END, "negative size"),
        Case("size-not-octal", archive(top)[:512] + block("run/x", size=b"12z45") + END, "bad header", again=True),
        Case("bad-checksum", archive(top)[:512] + block("run/x", checksum=False) + END, "bad header"),
        Case(
            "truncated-header", archive(top)[:512] + block("run/x", size=b"%011o" % 4)[:300], "unexpected end of data"
        ),
        Case("truncated-data", archive(top, f("run/x", b"z" * 5000))[:2048], "unexpected end of data", again=True),
        Case("no-end-block", archive(top, ok)[: 3 * 512], "unexpected end of data"),
    ]
    return cases


def odd_but_fine(world: Path) -> list[Case]:
    """Unusual streams that are nonetheless whole and safe: copied as they are."""
    top = d("run")
    return [
        Case("newline-name", archive(top, f("run/a\nb.txt", b"nl\n"))),
        Case("not-utf8-name", archive(top, f("run/caf\udce9-\udcff.bin", b"latin-1\n"))),
        Case("control-characters", archive(top, f("run/\x1b[31mred\x1b[0m", b"esc\n"))),
        Case(
            "git-archive-global-header",
            archive(
                top, f("run/a.txt"), fmt=tarfile.PAX_FORMAT, pax={"comment": "0123456789abcdef0123456789abcdef01234567"}
            ),
        ),
        Case("hard-link-inside", archive(top, f("run/a.txt", b"shared\n"), hard("run/b.txt", "run/a.txt"))),
        Case(
            "links-that-stay-inside",
            archive(
                top,
                d("run/sub"),
                f("run/sub/x", b"x\n"),
                sym("run/sub/up", "../sub/x"),
                sym("run/here", "."),
                sym("run/deep", "sub/x"),
            ),
        ),
        Case(
            "long-names-gnu",
            archive(top, f("run/" + "n" * 200 + ".txt", b"long\n"), sym("run/" + "l" * 150, "n" * 200 + ".txt")),
        ),
        Case("long-names-pax", archive(top, f("run/" + "p" * 200 + ".txt", b"long\n"), fmt=tarfile.PAX_FORMAT)),
        Case("dot-slash-names", archive(d("./run"), f("./run/./a.txt"))),
    ]


def all_odd_at_once() -> bytes:
    """The shapes of `odd_but_fine` in one stream (a command costs more than a stream):
    a global PAX header first, then names with newlines, bytes that are not UTF-8 and
    terminal escapes, a hard link, links that stay inside, long names."""
    return archive(
        d("run"),
        f("run/a\nb.txt", b"nl\n"),
        f("run/caf\udce9-\udcff.bin", b"latin-1\n"),
        f("run/\x1b[31mred\x1b[0m", b"esc\n"),
        f("run/a.txt", b"shared\n"),
        hard("run/b.txt", "run/a.txt"),
        d("run/sub"),
        f("run/sub/x", b"x\n"),
        sym("run/sub/up", "../sub/x"),
        sym("run/here", "."),
        sym("run/deep", "sub/x"),
        f("run/" + "n" * 200 + ".txt", b"long\n"),
        sym("run/" + "l" * 150, "n" * 200 + ".txt"),
        fmt=tarfile.PAX_FORMAT,
        pax={"comment": "0123456789abcdef0123456789abcdef01234567"},
    )


def case_and_unicode_variants() -> bytes:
    """A link and a folder whose names differ only in case (`A`, `a`), and only in
    Unicode form (NFC, NFD), with a file under the folder: on a filesystem that tells
    them apart, four separate things inside the folder; on one that does not (macOS),
    the file would land under the link, so it must be refused there."""
    return archive(
        d("run"),
        sym("run/A", "."),
        d("run/a"),
        f("run/a/x"),
        sym("run/caf\u00e9", "."),
        d("run/cafe\u0301"),
        f("run/cafe\u0301/y"),
    )


def digests_of(stream: bytes) -> dict[str, tuple[int, str]]:
    """{name: (size, sha256)} of the regular files (hard links: their target's) of a
    stream, as a pod that knows the protocol would claim them; {} where tarfile cannot
    read the stream."""
    out: dict[str, tuple[int, str]] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(stream), mode="r:", encoding="utf-8", errors="surrogateescape") as tar:
            for m in tar:
                name = "/".join(p for p in m.name.split("/") if p not in ("", "."))
                if m.isreg():
                    fh = tar.extractfile(m)
                    data = fh.read() if fh is not None else b""
                    out[name] = (len(data), hashlib.sha256(data).hexdigest())
                elif m.islnk():
                    target = "/".join(p for p in m.linkname.split("/") if p not in ("", "."))
                    if target in out:
                        out[name] = out[target]
    except Exception:  # whatever tarfile makes of a crafted stream: no claims
        return {}
    return out
