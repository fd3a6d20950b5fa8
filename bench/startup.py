"""Start-up: `nsightlab --help` against `python -c "import typer, rich"`, side by side.

    python bench/startup.py [--repeat 30] [--against REV ...]
    python bench/startup.py --analyze TRACE [--against REV]   (analyze's fixed cost: a small trace's
        `analyze --json`, and its tables, against `python -c "import typer, rich, pydantic"`,
        beside an empty interpreter and the floor of the stack itself: pydantic's models and
        Typer's parameter adapters loaded, and a minimal Typer command printing a pydantic
        model, no nsightlab code)

The nsightlab timed is this checkout's (its package first on sys.path, whatever is
installed). `--against REV` (repeatable) adds `nsightlab --help` from a checkout of REV (a
temporary git worktree, byte-compiled like this tree), so a change is measured against
the code before it in the same run. `--also ARGS` (repeatable) times `nsightlab ARGS` too,
in this checkout and in each REV (a command's own help, `analyze` of a file, `runs`: the
commands whose start-up a user feels), with NSIGHTLAB_HOME an empty folder.

Target: the median of `nsightlab --help` within 1.5x of the bare imports, and `--help`
imports neither kubernetes, torch nor a plotting library (tests/test_quality.py checks that).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile

from _timing import ROOT, checkouts, compare, compile_package, nsightlab_argv, side_by_side, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument(
        "--against",
        metavar="REV",
        action="append",
        default=[],
        help="also time --help from this git revision (repeatable)",
    )
    parser.add_argument(
        "--also",
        metavar="ARGS",
        action="append",
        default=[],
        help="also time `nsightlab ARGS` (split as a shell does; repeatable), here and at each REV",
    )
    parser.add_argument("--analyze", metavar="TRACE", help="time `analyze TRACE` against the bare imports instead")
    args = parser.parse_args()
    compile_package()  # this tree byte-compiled as the revisions' trees are (PYTHONDONTWRITEBYTECODE may be set)
    if args.analyze:
        return _analyze(args.analyze, args.repeat, args.against)
    commands = {
        "python -c 'import typer, rich'": [sys.executable, "-c", "import typer, rich"],
        "nsightlab --help": nsightlab_argv(ROOT, "--help"),
        "python -m nsightlab --help": [sys.executable, "-m", "nsightlab", "--help"],
    }
    for also in args.also:
        commands[f"nsightlab {also}"] = nsightlab_argv(ROOT, *shlex.split(also))
    with tempfile.TemporaryDirectory(prefix="nsightlab-startup-") as home, checkouts(args.against) as trees:
        # `python -m nsightlab` finds this checkout's; the commands of --also find no runs and no config
        env = {**os.environ, "PYTHONPATH": str(ROOT), "NSIGHTLAB_HOME": home}
        for rev, tree in trees.items():
            commands[f"--help at {rev}"] = nsightlab_argv(tree, "--help")
            for also in args.also:
                commands[f"{also} at {rev}"] = nsightlab_argv(tree, *shlex.split(also))
        results = side_by_side(commands, repeat=args.repeat, env=env)
    print(table(results, "python -c 'import typer, rich'"))
    for rev in trees:
        print(compare(results, "nsightlab --help", f"--help at {rev}"))
        for also in args.also:
            print(compare(results, f"nsightlab {also}", f"{also} at {rev}"))
    return 0


FLOOR_CODE = "import typer, rich, pydantic; pydantic.BaseModel; import typer._adapters"
FLOOR = "the stack's floor (typer, rich, pydantic's models, Typer's adapters)"
# The same floor in use: a Typer command with analyze's five parameters that prints a
# pydantic model as JSON. Building the adapters and the model loads what the imports alone
# do not (pydantic's plugin look-up, with importlib.metadata), as every such command does.
MINIMAL_APP = """
from pathlib import Path
from typing import Annotated, Optional
import pydantic, typer
class Result(pydantic.BaseModel):
    path: str
    kernels: int
app = typer.Typer()
@app.command()
def analyze(
    path: Annotated[Path, typer.Argument()],
    step_range: Annotated[Optional[str], typer.Option("--step-range")] = None,
    weights_gb: Annotated[Optional[float], typer.Option("--weights-gb")] = None,
    kv_gb: Annotated[Optional[float], typer.Option("--kv-gb")] = None,
    json_out: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    print(Result(path=str(path), kernels=0).model_dump_json())
app()
"""
MINIMAL = "a Typer command with analyze's 5 parameters printing a pydantic model"


def _analyze(trace: str, repeat: int, against: list[str]) -> int:
    """analyze's fixed cost: `analyze` of a small trace against the bare imports it builds on."""
    bare = "python -c 'import typer, rich, pydantic'"
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        bare: [sys.executable, "-c", "import typer, rich, pydantic"],
        # What any command of a Typer CLI that returns a pydantic model loads before its own
        # code runs: pydantic's model machinery (`import pydantic` alone is lazy) and the
        # parameter adapters Typer builds with pydantic to convert each option's value.
        FLOOR: [sys.executable, "-c", FLOOR_CODE],
        MINIMAL: [sys.executable, "-c", MINIMAL_APP, trace, "--json"],
        "nsightlab analyze --json": nsightlab_argv(ROOT, "analyze", trace, "--json"),
        "nsightlab analyze": nsightlab_argv(ROOT, "analyze", trace),
    }
    with tempfile.TemporaryDirectory(prefix="nsightlab-startup-") as home, checkouts(against) as trees:
        for rev, tree in trees.items():
            commands[f"analyze --json at {rev}"] = nsightlab_argv(tree, "analyze", trace, "--json")
        results = side_by_side(commands, repeat=repeat, env={**os.environ, "NSIGHTLAB_HOME": home})
    print(table(results, bare))
    print(compare(results, "nsightlab analyze --json", bare))
    print(compare(results, FLOOR, bare))
    print(compare(results, MINIMAL, bare))
    print(compare(results, "nsightlab analyze --json", MINIMAL))
    for rev in trees:
        print(compare(results, "nsightlab analyze --json", f"analyze --json at {rev}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
