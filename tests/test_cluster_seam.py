"""The cluster seam's own rules: every request path is built in apipaths.py, each name in
it quoted as one segment, and only connection.py imports the kubernetes client. (The
paths' effect on a real server is test_inputs.py's `test_every_name_is_one_quoted_path_segment`.)"""

from __future__ import annotations

import ast
import inspect
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

import pytest

from nsightlab.cluster import apipaths
from nsightlab.errors import UsageError

PACKAGE = Path(__file__).resolve().parents[1] / "nsightlab"
HOSTILE = ["lab;rm -rf ~", "../../nodes/x", "a/b?watch=1#frag", "..", ".", "50%", "ünï code", "%2F"]


def _path_functions() -> list[tuple[str, Callable[..., str]]]:
    found = [
        (name, fn)
        for name, fn in inspect.getmembers(apipaths, inspect.isfunction)
        if fn.__module__ == apipaths.__name__ and name != "seg" and not name.startswith("_")
    ]
    assert len(found) >= 15, found  # every endpoint nsightlab calls
    return found


@pytest.mark.parametrize("hostile", HOSTILE)
def test_every_name_in_a_path_is_one_quoted_segment(hostile: str) -> None:
    for name, fn in _path_functions():
        arity = len(inspect.signature(fn).parameters)
        plain = fn(*["x"] * arity)
        path = fn(*[hostile] * arity)
        assert path.startswith(("/api/v1/", "/apis/", "/version")), (name, path)
        ours, theirs = path.split("/"), plain.split("/")
        assert len(ours) == len(theirs), (name, path)
        for got, want in zip(ours, theirs, strict=True):
            if want == "x":  # a name: one segment, never a dot segment, decoding to the name
                assert unquote(got) == hostile and got not in (".", ".."), (name, path)
            else:
                assert got == want, (name, path)
        assert all(ch.isascii() and ch not in " ;#?" for ch in path), (name, path)


def test_an_empty_name_is_refused() -> None:
    for _, fn in _path_functions():
        arity = len(inspect.signature(fn).parameters)
        if arity:
            with pytest.raises(UsageError, match="empty name"):
                fn(*[""] * arity)
            for i in range(arity):  # each of them
                args = ["x"] * arity
                args[i] = ""
                with pytest.raises(UsageError):
                    fn(*args)


def test_request_paths_are_spelled_only_in_apipaths() -> None:
    spelled = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if p.name != "apipaths.py" and any(s in p.read_text(encoding="utf-8") for s in ("/api/v1", "/apis/"))
    )
    assert spelled == []


def test_only_the_connection_imports_the_kubernetes_client() -> None:
    importers = set()
    for p in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "kubernetes" or n.startswith("kubernetes.") for n in names):
                importers.add(str(p.relative_to(PACKAGE)))
    assert importers == {"cluster/connection.py"}


def test_an_import_of_numpy_fails_the_contracts(tmp_path: Path) -> None:
    """numpy is no dependency (the masking of exec frames is the standard library's):
    import-linter refuses it anywhere in nsightlab."""
    root = PACKAGE.parent
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if lint is None:
        pytest.skip("lint-imports is not installed (pip install -e '.[dev]')")
    shutil.copytree(PACKAGE, tmp_path / "nsightlab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(root / "pyproject.toml", tmp_path / "pyproject.toml")
    frames = tmp_path / "nsightlab" / "cluster" / "execstream.py"
    frames.write_text(frames.read_text() + "\nimport numpy  # masking by numpy again\n")
    proc = subprocess.run([lint, "--no-cache"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "nsightlab is not allowed to import numpy" in proc.stdout
    assert "nsightlab.cluster.execstream -> numpy" in proc.stdout
