"""Reading the files a user names: regular files only, never blocking, never unbounded.

config.yaml, kubeconfigs (and the certificate files they name), `--manifest` and the
inputs of `analyze` are read through here. A path is checked with `os.stat` before it is
opened: a folder, a FIFO, a device or a socket is refused (a FIFO with no writer would
block the open forever, `/dev/zero` would never end). The open itself does not block
(O_NONBLOCK), in case the path was swapped for a FIFO in between, and is checked again on
the open file. Files read whole are capped (the limits below: these files are kilobytes).
A YAML document holding more aliases than `MAX_YAML_ALIASES` is refused by
`userconfig.check_yaml_aliases`, which reads YAML (this module does not load PyYAML:
`analyze` reads its inputs through here).

Each reader passes the error class to raise, so the exit code is the reader's: exit 4
for a kubeconfig, exit 2 for config.yaml and the other inputs.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from nsightlab.errors import NsightlabError

MiB = 1024 * 1024

# The largest file of each kind nsightlab reads whole. A kubeconfig with a hundred
# clusters and inline certificates is well under 1 MiB; config.yaml with 40,000
# protected patterns is under 1 MiB.
KUBECONFIG_MAX_BYTES = 4 * MiB
CONFIG_MAX_BYTES = 1 * MiB
MANIFEST_MAX_BYTES = 1 * MiB
CREDENTIAL_FILE_MAX_BYTES = 1 * MiB  # a CA bundle, a client certificate or key, a token file
# analyze's inputs that are read whole (console output of nsys stats, an ncu CSV, a script's
# JSON); traces and CSV exports are streamed and have no cap.
WHOLE_INPUT_MAX_BYTES = 256 * MiB
# any other text file a user names that is read whole (a prompts file, ...)
USER_TEXT_MAX_BYTES = 64 * MiB
# YAML aliases (`*name`) a document may hold. kubectl, `aws eks update-kubeconfig` and
# gcloud write none; eight lets a hand-written config reuse a block while bounding what
# aliases can multiply (a "billion laughs" needs dozens).
MAX_YAML_ALIASES = 8

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_words(mode: int) -> str:
    """What a file of this mode is, in words (`a FIFO (named pipe)`, `a socket`)."""
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def size_words(n: int) -> str:
    """`4 MiB`, `100 MiB`, `512 KiB`, `300 bytes`: a size as a limit is written."""
    if n >= MiB:
        return f"{n / MiB:.3g} MiB"
    if n >= 1024:
        return f"{n / 1024:.3g} KiB"
    return f"{n} bytes"


def check_regular(path: Path, *, what: str, error: type[NsightlabError]) -> os.stat_result:
    """`path`'s stat when it is a regular file (a symlink to one is one), else `error`
    naming the file and what it is. Opens nothing."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist") from None
    except OSError as e:
        raise error(f"cannot read {what} {path}: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{what} {path} is a folder, not a file", hint="Give the path of the file itself.")
    if not stat.S_ISREG(st.st_mode):
        raise error(
            f"{what} {path} is {kind_words(st.st_mode)}, not a regular file",
            hint="Give a regular file: nsightlab does not read from pipes, devices or sockets.",
        )
    return st


def open_regular(path: Path, *, what: str, error: type[NsightlabError]) -> BinaryIO:
    """`path` opened for reading in binary, when it is a regular file (see `check_regular`).
    The open never blocks, even on a FIFO swapped in after the check."""
    check_regular(path, what=what, error=error)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise error(f"cannot read {what} {path}: {e.strerror or e}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{what} {path} is {kind_words(mode)}, not a regular file")
        # O_NONBLOCK means nothing to a regular file; cleared so that nothing downstream sees it
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path, *, what: str, error: type[NsightlabError], limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes, else `error` naming the file."""
    st = check_regular(path, what=what, error=error)
    too_big = error(
        f"{what} {path} is larger than {size_words(limit)}, far more than a {what} holds",
        hint=f"Check the path: is it really a {what}?",
    )
    if st.st_size > limit:
        raise too_big
    with open_regular(path, what=what, error=error) as fh:
        try:
            data = fh.read(limit + 1)
        except OSError as e:
            raise error(f"cannot read {what} {path}: {e.strerror or e}") from None
    if len(data) > limit:  # it grew after the stat
        raise too_big
    return data


def read_text(path: Path, *, what: str, error: type[NsightlabError], limit: int) -> str:
    """The text of a regular file of at most `limit` bytes (UTF-8, a BOM allowed); `error`
    naming the file when it is not one, is too large or is not UTF-8."""
    raw = read_bytes(path, what=what, error=error, limit=limit)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise error(
            f"{what} {path}:{line} is not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})",
            hint="Save it as UTF-8.",
        ) from None
