"""How the suite shares the machine's cores (a pytest plugin, loaded by conftest.py).

Where pytest-xdist is installed (the dev extra), `python3 -m pytest` runs the tests in two
worker processes (`-n auto` capped at 2: `--maxprocesses 2`), handed out with `--dist
loadgroup`. A command line that says otherwise wins: `-n 0` or `-p no:xdist` runs them all
in this one process, as does `--pdb`, `-s`, `--stepwise` or `--collect-only`, where workers
would only get in the way.

The tests that read a module-scoped fixture (one recorded lab run read by many tests, a
shared emulator) go to one worker together, the largest such group first, so the shared
result is made once; every other test goes alone to whichever worker is free.
xdist's own `xdist_group` marks are honoured too. (xdist 3.8 groups by rewriting a test's
`_nodeid`, which pytest 9.2 no longer reads: node ids come from `_id`. So the groups are
found here, on the controller, from the modules' source.)
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

import pytest

WORKERS = 2  # the cores of the CI machine; more processes would only queue behind them
SHARED_SCOPES = frozenset({"module", "package", "session"})


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Two workers unless the command line chose otherwise (runs before xdist's own hook,
    which turns `-n` into workers)."""
    if not config.pluginmanager.has_plugin("xdist") or hasattr(config, "workerinput"):
        return
    opt = config.option
    if opt.numprocesses is not None or opt.dist != "no" or opt.tx:
        return  # -n, --dist or --tx given
    if opt.collectonly or opt.usepdb or opt.capture == "no" or getattr(opt, "stepwise", False):
        return
    opt.numprocesses = "auto"
    opt.maxprocesses = opt.maxprocesses or WORKERS
    opt.dist = "loadgroup"


def _fixture_scope(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, bool] | None:
    """(scope, autouse) of a `@pytest.fixture(...)` definition; None for any other function."""
    for deco in node.decorator_list:
        call = deco if isinstance(deco, ast.Call) else None
        target = call.func if call else deco
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
        if name != "fixture":
            continue
        words = {kw.arg: kw.value.value for kw in (call.keywords if call else []) if isinstance(kw.value, ast.Constant)}
        return str(words.get("scope", "function")), bool(words.get("autouse", False))
    return None


def _arguments(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}


@functools.cache
def shared_tests(path: Path) -> frozenset[str] | None:
    """The tests of the module at `path` that read a fixture wider than one test (their
    names, `Class::test` inside a class), directly or through the module's other
    fixtures; None when an autouse one makes that every test of the module."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    tests: dict[str, set[str]] = {n.name: _arguments(n) for n in functions if n.name.startswith("test")}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for n in cls.body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test"):
                tests[f"{cls.name}::{n.name}"] = _arguments(n)
    fixtures = {n.name: (kind, _arguments(n)) for n in functions if (kind := _fixture_scope(n))}
    shared = {name for name, ((scope, _), _) in fixtures.items() if scope in SHARED_SCOPES}
    if any(autouse for name, ((_, autouse), _) in fixtures.items() if name in shared):
        return None
    grew = True
    while grew:  # a per-test fixture that reads a shared one shares it too
        wider = {name for name, (_, args) in fixtures.items() if args & shared}
        grew = not wider <= shared
        shared |= wider
    return frozenset(name for name, args in tests.items() if args & shared)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup`, grouping the tests of a module that shares a fixture."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    root = config.rootpath

    class SharedFixtureScheduling(LoadGroupScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            scope: str = super()._split_scope(nodeid)
            if scope != nodeid:  # an xdist_group mark
                return scope
            module, _, test = nodeid.partition("::")
            shared = shared_tests(root / module)
            return module if shared is None or test.split("[", 1)[0] in shared else nodeid

    return SharedFixtureScheduling(config, log)
