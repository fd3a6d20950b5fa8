"""Shared fixtures: a Kubernetes API server on loopback (kubesim) and kubeconfigs for it."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Tests import the emulator as `kubesim`.
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from kubesim import KubeSim, realistic_cluster  # noqa: E402

# The lab-pod tests' `home` and `lab` fixtures (a module's own fixture of the same name wins), and
# how the tests share the cores (tests/parallel.py).
pytest_plugins = ["labenv", "parallel"]

# Property tests (tests/test_properties.py): the same examples on every run (derandomize),
# nothing written into the repository (no example database, and hypothesis' other caches
# in the temporary folder, not ./.hypothesis), a deadline generous enough for a busy
# 2-core machine; each test sets its own modest max_examples.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(Path(tempfile.gettempdir()) / "nsightlab-hypothesis"))
settings.register_profile(
    "nsightlab",
    derandomize=True,
    database=None,
    deadline=2000,
    max_examples=100,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("nsightlab")

# Contexts of the default kubeconfig, all pointing at the same server. The CURRENT context
# is the production one on purpose: nsightlab must never use current-context. Each context
# has its own token and user, so `sim.requests[i].user` tells which context a request
# used (e.g. assert {r.user for r in sim.requests} == {"stg-user"}).
STG_CONTEXT = "stg-online-use1"
DEV_CONTEXT = "dev-ml-use1"
PRD_CONTEXT = "prd-online-use1"
CONTEXTS: dict[str, dict[str, str]] = {
    STG_CONTEXT: {"namespace": "serving", "token": "stg-token", "user": "stg-user"},
    DEV_CONTEXT: {"namespace": "ml-lab", "token": "dev-token", "user": "dev-user"},
    PRD_CONTEXT: {"namespace": "serving", "token": "prd-token", "user": "prd-user"},
}


@pytest.fixture
def sim() -> Iterator[KubeSim]:
    """A started KubeSim (HTTPS, bearer token, scheduler and kubelet with 50 ms steps)
    loaded with ``realistic_cluster()``.

    Function-scoped: a fresh server costs about 10 ms, so every test gets its own.
    """
    with KubeSim(tls=True, kubelet_delay=0.05) as server:
        server.load(realistic_cluster())
        yield server


@pytest.fixture
def kubeconfig(sim: KubeSim, tmp_path: Path) -> Path:
    """A kubeconfig for ``sim``: contexts stg-online-use1 (serving), dev-ml-use1 (ml-lab) and
    prd-online-use1, which is the current context; one token and user per context."""
    return sim.write_kubeconfig(tmp_path / "kubeconfig", CONTEXTS, current=PRD_CONTEXT)


@pytest.fixture
def nsl_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh NSIGHTLAB_HOME (config, session, runs), wide plain output, no config override."""
    home = tmp_path / "home"
    monkeypatch.setenv("NSIGHTLAB_HOME", str(home))
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.delenv("NSIGHTLAB_CONFIG", raising=False)
    return home
