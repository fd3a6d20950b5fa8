"""Copy-out of a tree whose digest records outgrow what was once kept of the pod's
stderr (its last 64 MiB: 20,000 files with long paths lost their first records, and
verification failed after everything had moved). The records are spooled whole and
checked one at a time; here with the caps lowered (what is held in memory before the
spool spills to disk; the old stderr cap, where it exists) and 1,500 files whose paths
are ~1,000 bytes. A million tiny files are timed in bench/copy_many.py."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from copylab import CopyLab, copy_lab, nsl

from nsightlab.cluster import transfer

FILES = 1500


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CopyLab]:
    with copy_lab(tmp_path_factory.mktemp("many")) as made:
        made.real_python()
        yield made


def long_tree(top: Path, files: int) -> dict[str, str]:
    """`files` small files under folders with long names: {path under top's parent: sha256}."""
    out = {}
    for i in range(files):
        folder = top / f"{i // 100:03d}-{'a' * 240}" / ("b" * 240) / ("c" * 240)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{i:05d}-{'d' * 200}.txt"
        data = f"file {i}\n".encode()
        path.write_bytes(data)
        out[str(path.relative_to(top.parent))] = hashlib.sha256(data).hexdigest()
    return out


def test_a_tree_whose_records_outgrow_the_caps_is_copied_out_and_verified(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("nsightlab.cluster.records.IN_MEMORY", 64 << 10)  # the spool goes to disk early
    monkeypatch.setattr(transfer, "STDERR_KEPT", 1 << 20, raising=False)  # where the old cap exists: 1 MiB
    tree = lab.pod_path("/tmp/tree")
    made = long_tree(tree, FILES)
    record_bytes = sum(len(p) + 90 for p in made)
    assert record_bytes > 1 << 20  # the records alone are more than the old cap kept
    dst = tmp_path / "dst"
    dst.mkdir()
    r = nsl(capsys, "copy", ":/tmp/tree", f"{dst}/", "--json")
    assert r.code == 0, r
    result = json.loads(r.out)
    assert (result["files"], result["verified"]) == (FILES, True)
    assert result["digests"] == made
    for rel, sha in list(made.items())[:: FILES // 10]:
        assert hashlib.sha256((dst / rel).read_bytes()).hexdigest() == sha


def test_records_missing_from_the_pod_fail_verification_naming_a_few(
    capsys: pytest.CaptureFixture[str], lab: CopyLab, tmp_path: Path
) -> None:
    # a pod whose agent sends the archive of a tree but the digests of only part of it
    tree = tmp_path / "served"
    made = long_tree(tree, 40)
    lab.pod_path("/tmp/served").mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.add(tree, arcname="served")
    stream = buf.getvalue()
    claims = {rel: (len(f"file {i}\n"), sha) for i, (rel, sha) in enumerate(made.items()) if i >= 5}
    lab.serve(stream, claims)
    dst = tmp_path / "dst"
    dst.mkdir()
    r = nsl(capsys, "copy", ":/tmp/served", f"{dst}/")
    assert r.code == 6, r
    line = r.err.strip().splitlines()[-1]
    assert "copy verification failed" in line and "file lists differ (missing here: none; unexpected: " in line
    assert " and 2 more)" in line  # three names shown, then the count
    assert list(dst.iterdir()) == []
    lab.real_python()
