"""Start-up: `nsightlab --help` against `python -c "import typer, rich"`, side by side.

    python bench/startup.py [--repeat 30] [--against REV]

`--against REV` adds `python -m nsightlab --help` from a checkout of REV (a temporary git
worktree, byte-compiled like this tree), so a change is measured against the code before
it in the same run.

Target: the median of `nsightlab --help` within 1.5x of the bare imports, and `--help`
imports neither kubernetes, torch nor a plotting library (tests/test_quality.py checks that).
"""

from __future__ import annotations

import argparse
import compileall
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import side_by_side, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--against", metavar="REV", help="also time --help from this git revision")
    args = parser.parse_args()
    exe = shutil.which("nsightlab") or sys.exit("nsightlab is not on PATH (pip install -e .)")
    root = Path(__file__).resolve().parents[1]
    commands = {
        "python -c 'import typer, rich'": [sys.executable, "-c", "import typer, rich"],
        "nsightlab --help": [exe, "--help"],
        "python -m nsightlab --help": [sys.executable, "-m", "nsightlab", "--help"],
    }
    with tempfile.TemporaryDirectory(prefix="nsightlab-startup-") as tmp:
        if args.against:
            old = Path(tmp) / "old"
            subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", "-q", str(old), args.against], check=True)
            compileall.compile_dir(str(old / "nsightlab"), quiet=1)
            # run from inside the old checkout: its package comes first on sys.path
            commands[f"--help at {args.against}"] = [sys.executable, "-c", f"import os, sys; os.chdir({str(old)!r}); sys.path.insert(0, {str(old)!r}); sys.argv[1:] = ['--help']; from nsightlab.cli import entry; entry()"]
            commands["--help here"] = [sys.executable, "-c", f"import os, sys; os.chdir({str(root)!r}); sys.path.insert(0, {str(root)!r}); sys.argv[1:] = ['--help']; from nsightlab.cli import entry; entry()"]
        try:
            results = side_by_side(commands, repeat=args.repeat)
        finally:
            if args.against:
                subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(Path(tmp) / "old")], check=False)
    print(table(results, "python -c 'import typer, rich'"))
    if args.against:
        ratio = results["--help here"]["median_s"] / results[f"--help at {args.against}"]["median_s"]
        print(f"\n--help here / at {args.against}: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
