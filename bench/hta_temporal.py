"""HolisticTraceAnalysis's temporal breakdown of Kineto traces, as JSON on stdout.

Run in a separate virtualenv that has HolisticTraceAnalysis (never nsightlab's):

    python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install holistictraceanalysis
    /tmp/hta-venv/bin/python bench/hta_temporal.py tests/data/traces NAME.json.gz ...

tests/data/traces/hta_expected.json was made with it.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import sys


def main(argv: list[str]) -> int:
    from hta.trace_analysis import TraceAnalysis  # only in the bench virtualenv

    logging.disable(logging.WARNING)
    folder, names = argv[0], argv[1:]
    results = {}
    for name in names:
        analysis = TraceAnalysis(trace_files={0: name}, trace_dir=folder)
        row = analysis.get_temporal_breakdown(visualize=False).iloc[0].to_dict()
        results[name] = {k: (v if isinstance(v, str) else float(v)) for k, v in row.items()}
    version = importlib.metadata.version("HolisticTraceAnalysis")
    print(json.dumps({"hta_version": version, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
