"""Start-up: `nsightlab --help` against `python -c "import typer, rich"`, side by side.

    python bench/startup.py [--repeat 30]

Target: the median of `nsightlab --help` within 1.5x of the bare imports, and `--help`
imports neither kubernetes, torch nor a plotting library (tests/test_quality.py checks that).
"""

from __future__ import annotations

import argparse
import shutil
import sys

from _timing import side_by_side, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    exe = shutil.which("nsightlab") or sys.exit("nsightlab is not on PATH (pip install -e .)")
    results = side_by_side(
        {
            "python -c 'import typer, rich'": [sys.executable, "-c", "import typer, rich"],
            "nsightlab --help": [exe, "--help"],
            "python -m nsightlab --help": [sys.executable, "-m", "nsightlab", "--help"],
        },
        repeat=args.repeat,
    )
    print(table(results, "python -c 'import typer, rich'"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
