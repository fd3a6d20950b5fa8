"""Start-up: `nsightlab --help` against `python -c "import typer, rich"`, side by side.

    python bench/startup.py [--repeat 30] [--against REV ...]

The nsightlab timed is this checkout's (its package first on sys.path, whatever is
installed). `--against REV` (repeatable) adds `nsightlab --help` from a checkout of REV (a
temporary git worktree, byte-compiled like this tree), so a change is measured against
the code before it in the same run.

Target: the median of `nsightlab --help` within 1.5x of the bare imports, and `--help`
imports neither kubernetes, torch nor a plotting library (tests/test_quality.py checks that).
"""

from __future__ import annotations

import argparse
import os
import sys

from _timing import ROOT, checkouts, compare, nsightlab_argv, side_by_side, table


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
    args = parser.parse_args()
    commands = {
        "python -c 'import typer, rich'": [sys.executable, "-c", "import typer, rich"],
        "nsightlab --help": nsightlab_argv(ROOT, "--help"),
        "python -m nsightlab --help": [sys.executable, "-m", "nsightlab", "--help"],
    }
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # `python -m nsightlab` finds this checkout's
    with checkouts(args.against) as trees:
        for rev, tree in trees.items():
            commands[f"--help at {rev}"] = nsightlab_argv(tree, "--help")
        results = side_by_side(commands, repeat=args.repeat, env=env)
    print(table(results, "python -c 'import typer, rich'"))
    for rev in trees:
        print(compare(results, "nsightlab --help", f"--help at {rev}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
