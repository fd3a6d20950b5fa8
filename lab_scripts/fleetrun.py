#!/usr/bin/env python3
"""Run a lab script in a Job and put its JSON in the pod's log.

    python3 -u fleetrun.py SCRIPT.py [ARGS...]

A Job's only way back is its log, so this runs `SCRIPT.py ARGS --json FILE` (its rows
and notes go to the log as they come), then prints the JSON between two marker lines:

    ==nsightlab-result-begin==
    {"kind": "sweep", ...}
    ==nsightlab-result-end==

and exits with the script's code. A script that fails prints no result: its last line on
stderr says why (e.g. `torch cannot see the GPU`, exit 3). Standard library only, Python 3.8
or later; nsightlab sends it to the Job beside the script (in the fleet's ConfigMap).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

BEGIN = "==nsightlab-result-begin=="
END = "==nsightlab-result-end=="
USAGE_EXIT = 2


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 0 if argv else USAGE_EXIT
    script, args = argv[0], argv[1:]
    folder = tempfile.mkdtemp(prefix="nsightlab-fleet-")
    path = os.path.join(folder, "result.json")
    try:
        sys.stdout.flush()
        code = subprocess.call([sys.executable, "-u", script, *args, "--json", path])
        if code != 0:
            return code
        try:
            with open(path, encoding="utf-8") as f:
                document = json.load(f)
        except (OSError, ValueError) as e:
            print(f"fleetrun.py: {os.path.basename(script)} wrote no readable JSON ({e})", file=sys.stderr, flush=True)
            return 1
        # one line: the log's lines from stdout and stderr cannot interleave inside it
        print(BEGIN, json.dumps(document, separators=(",", ":")), END, sep="\n", flush=True)
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
