"""The codebase's own checks: lint, types, fast start-up, help on every command."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return path


def test_ruff_clean() -> None:
    paths = [p for p in ("nsightlab", "tests", "lab_scripts", "bench") if (ROOT / p).is_dir()]
    proc = subprocess.run([_tool("ruff"), "check", *paths], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_clean() -> None:
    """The tree is as `ruff format` (the version pinned in the dev extra) writes it."""
    paths = [p for p in ("nsightlab", "tests", "lab_scripts", "bench") if (ROOT / p).is_dir()]
    proc = subprocess.run([_tool("ruff"), "format", "--check", *paths], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_mypy_clean() -> None:
    proc = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys, json\n"
        "from nsightlab.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('kubernetes', 'torch', 'matplotlib', 'numpy', 'urllib3') if m in sys.modules]\n"
        "sys.stderr.write(json.dumps(heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == []
    assert "Usage: nsightlab" in proc.stdout


def test_every_model_builds_on_first_use() -> None:
    """Every pydantic model of the package derives from nsightlab.models.Model, so a
    command builds the validators of the models it uses and not those it only imports."""
    code = (
        "import importlib, json, pkgutil, sys\n"
        "import nsightlab\n"
        "from pydantic import BaseModel\n"
        "from nsightlab.models import Model\n"
        "for m in pkgutil.walk_packages(nsightlab.__path__, 'nsightlab.'):\n"
        "    if m.name != 'nsightlab.__main__':\n"
        "        importlib.import_module(m.name)\n"
        "def subclasses(c):\n"
        "    for s in c.__subclasses__():\n"
        "        yield s\n"
        "        yield from subclasses(s)\n"
        "ours = {c for c in subclasses(BaseModel) if c.__module__.startswith('nsightlab.')}\n"
        "direct = sorted(f'{c.__module__}.{c.__qualname__}' for c in ours if not issubclass(c, Model))\n"
        "built = sorted(c.__qualname__ for c in ours if c.__pydantic_complete__)\n"
        "sys.stdout.write(json.dumps({'models': len(ours), 'direct': direct, 'built': built}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    found = json.loads(proc.stdout)
    assert found["models"] > 100
    assert found["direct"] == []
    # Built at import: only the models whose instances are tables of the package itself
    # (the GPU specs, the tutorial's reference curves) and what those contain.
    assert len(found["built"]) < 15, found["built"]


def _all_commands() -> list[list[str]]:
    import typer.main

    from nsightlab.cli import app

    root = typer.main.get_command(app)
    out: list[list[str]] = []

    def walk(cmd: object, path: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            if path and getattr(cmd, "invoke_without_command", False):
                out.append(path)  # a group that is a command too (`pack`, `profile`): its own help counts
            for name, sub in subs.items():
                walk(sub, [*path, name])
        else:
            out.append(path)

    walk(root, [])
    return out


def test_every_command_has_help_with_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    from clirun import run_cli

    commands = _all_commands()
    assert ["explore", "nodes"] in commands and ["init"] in commands
    for path in commands:
        r = run_cli(capsys, *path, "--help")
        assert r.code == 0, (path, r)
        assert "Example" in r.out, f"`nsightlab {' '.join(path)} --help` has no example"
        assert f"nsightlab {path[0]}" in r.out.split("Example", 1)[1], path


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from clirun import run_cli

    from nsightlab import __version__

    r = run_cli(capsys, "--version")
    assert r.code == 0 and r.out.strip() == f"nsightlab {__version__}"


def test_python_dash_m_works() -> None:
    proc = subprocess.run([sys.executable, "-m", "nsightlab", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.startswith("nsightlab ")


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    # --no-cache: a cache from another tree must not answer for this one
    return subprocess.run([_tool("lint-imports"), "--no-cache"], cwd=cwd, capture_output=True, text=True)


def test_layer_contracts_hold() -> None:
    """import-linter's contracts in pyproject.toml: layers, no kubernetes/matplotlib/torch
    outside their layer, no import circle."""
    proc = _lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_an_arrow_upward_fails_the_contracts_naming_the_import(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "nsightlab", tmp_path / "nsightlab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    names = tmp_path / "nsightlab" / "parse" / "names.py"
    names.write_text(names.read_text() + "\nfrom nsightlab.present import render  # a parser drawing tables\n")
    proc = _lint_imports(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "nsightlab.parse is not allowed to import nsightlab.present" in proc.stdout
    assert "nsightlab.parse.names -> nsightlab.present.render" in proc.stdout


def test_the_new_layers_are_held_too(tmp_path: Path) -> None:
    """k8s/ (views of API objects) is pure and below analysis/; specs/ (the GPU table, the
    physical bounds) is below every layer that reads it: an import against either is named."""
    shutil.copytree(ROOT / "nsightlab", tmp_path / "nsightlab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for rel, line in (
        ("k8s/pods.py", "import kubernetes  # a view that fetches for itself"),
        ("specs/gpus.py", "from nsightlab.analysis import roofline  # the table reading its readers"),
    ):
        module = tmp_path / "nsightlab" / rel
        module.write_text(module.read_text() + f"\n{line}\n")
    proc = _lint_imports(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "nsightlab.k8s.pods -> kubernetes" in proc.stdout
    assert "nsightlab.specs is not allowed to import nsightlab.analysis" in proc.stdout


def modules_by_name(*roots: Path) -> dict[str, list[str]]:
    """Every module under `roots` by its file name (`__init__.py` aside): name -> paths."""
    found: dict[str, list[str]] = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if path.name != "__init__.py" and "__pycache__" not in path.parts:
                found.setdefault(path.stem, []).append(path.relative_to(root.parent).as_posix())
    return found


def test_no_two_modules_share_a_name(tmp_path: Path) -> None:
    """Names by role, not by stage: at most one module of each name across nsightlab/ and
    lab_scripts/ (the lab scripts keep theirs: users run them), so `decode.py` is one file."""
    shared = {
        name: paths
        for name, paths in modules_by_name(ROOT / "nsightlab", ROOT / "lab_scripts").items()
        if len(paths) > 1
    }
    assert shared == {}, f"modules sharing a name (rename the package's for what it does): {shared}"
    # and a second one is seen, wherever it sits
    (tmp_path / "lab_scripts").mkdir()
    (tmp_path / "lab_scripts" / "lesson1.py").write_text("")
    (tmp_path / "nsightlab" / "parse").mkdir(parents=True)
    (tmp_path / "nsightlab" / "parse" / "lesson1.py").write_text("")
    (tmp_path / "nsightlab" / "parse" / "__init__.py").write_text("")
    assert modules_by_name(tmp_path / "nsightlab", tmp_path / "lab_scripts") == {
        "lesson1": ["nsightlab/parse/lesson1.py", "lab_scripts/lesson1.py"]
    }


def test_no_merge_conflict_markers_in_tracked_files() -> None:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    marked = []
    for name in files:
        path = ROOT / name
        if path.suffix not in (".py", ".md", ".toml", ".yaml", ".yml", ".txt", "") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if any(line.startswith(("<<<<<<< ", ">>>>>>> ")) for line in text.splitlines()):
            marked.append(name)
    assert marked == []


# ---------------------------------------------------------------------------- the house's limits

CLI_BODY_MAX_LINES = 30
MODULE_MAX_LINES = 800


def _function_bodies(source: str) -> dict[str, int]:
    """Each function's body in lines, from its first statement after the docstring to its
    last line (blank lines and comments inside it count), by `NAME:LINE`."""
    out: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        if (
            isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body = body[1:]  # the docstring: a command's help text
        if body:
            out[f"{node.name}:{node.lineno}"] = (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1
    return out


def test_no_cli_function_body_is_over_30_lines() -> None:
    """The CLI is thin: after its docstring (a command's help), no function in cli/ has
    more than 30 lines; a command parses, resolves the context, makes one call into
    measure/ or runs/ and draws the typed result."""
    over = [
        f"{path.relative_to(ROOT)} {name}: {lines} lines"
        for path in sorted((ROOT / "nsightlab" / "cli").glob("*.py"))
        for name, lines in _function_bodies(path.read_text(encoding="utf-8")).items()
        if lines > CLI_BODY_MAX_LINES
    ]
    assert over == []


def test_a_long_function_body_is_measured_from_after_its_docstring() -> None:
    statements = "\n".join(f"    x{i} = {i}" for i in range(CLI_BODY_MAX_LINES))
    source = f'def long() -> None:\n    """Help\n\n    text."""\n{statements}\n    # a comment\n    return None\n'
    source += 'def short() -> None:\n    """Only help."""\n    return None\n'
    bodies = _function_bodies(source)
    assert bodies == {"long:1": CLI_BODY_MAX_LINES + 2, "short:" + str(source.count("\n") - 2): 1}


def test_cli_modules_import_at_their_top() -> None:
    """An import inside a function of cli/ is one that would cost start-up (the comment
    above it says what and why); every other import is at the top of its module."""
    unexplained = []
    for path in sorted((ROOT / "nsightlab" / "cli").glob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    above = lines[inner.lineno - 2].strip()
                    if not above.startswith("#") and "#" not in lines[inner.lineno - 1]:
                        unexplained.append(f"{path.relative_to(ROOT)}:{inner.lineno}")
    assert unexplained == []


def test_no_module_is_over_800_lines() -> None:
    over = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for folder in ("nsightlab", "lab_scripts")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_MAX_LINES
    ]
    assert over == []


def test_help_loads_no_command_module() -> None:
    """`nsightlab --help` lists every command from the index (`cli.index`) without
    loading a command module, nor anything below the CLI but the console."""
    code = (
        "import sys, json\n"
        "from nsightlab.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('nsightlab.measure', 'nsightlab.cluster', "
        "'nsightlab.runs', 'nsightlab.analysis', 'nsightlab.cli.')))\n"
        "sys.stderr.write(json.dumps(loaded))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    loaded = json.loads(proc.stderr.strip().splitlines()[-1])
    assert loaded == [
        "nsightlab.cli.common",
        "nsightlab.cli.completion",
        "nsightlab.cli.global_options",
        "nsightlab.cli.index",
        "nsightlab.cli.usage",
    ]
    for name in ("init", "profile", "analyze", "fleet", "runs"):
        assert f"\n  {name} " in proc.stdout


def test_the_command_index_is_what_the_commands_say() -> None:
    """Each line of the program's help (from the index, no module loaded) is the first
    paragraph of that command's own help."""
    import typer.main

    from nsightlab.cli import app
    from nsightlab.cli.index import COMMANDS

    root = typer.main.get_command(app)
    built = {name: root.commands[name] for name in COMMANDS}  # type: ignore[attr-defined]
    for name, command in built.items():
        first = " ".join((command.help or "").split("\n\n")[0].split())
        assert COMMANDS[name][1] == first, name
    # and every command of every command module is in the index
    modules = {module for module, _ in COMMANDS.values()}
    groups = [typer.main.get_group(import_module(f"nsightlab.cli.{m}").commands) for m in modules]
    assert {name for group in groups for name in group.commands} == set(COMMANDS)
