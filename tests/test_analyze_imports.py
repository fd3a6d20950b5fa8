"""What `analyze` of a GPU trace file loads: the trace's reader, its step analysis and the
result it prints, and not what other inputs need. A stored run, a script's JSON and a
device run's folder load the run store (with the config and PyYAML), decode.py's record
and the sweep models; `--weights-gb` loads the floor's sweep lookup. A trace alone needs
none of them (bench/RESULTS.md, "analyze's fixed cost, second pass"); drawn as tables, it
loads its own view and not the report's. `runs` lists without the report's builder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "tests" / "data" / "traces"

#: Modules a trace's `analyze --json` must not import.
NOT_FOR_A_TRACE = (
    "yaml",
    "nsightlab.userconfig",
    "nsightlab.runs.store",
    "nsightlab.runs.floor",
    "nsightlab.runs.sweeps",
    "nsightlab.runs.gpurun",
    "nsightlab.runs.trace_files",
    "nsightlab.analysis.sweep_models",
    "nsightlab.analysis.sweep_result",
    "nsightlab.parse.records.decode_record",
    "nsightlab.parse.records.sweep_record",
    "nsightlab.specs.gpus",
    "nsightlab.present.resultviews",
)

#: What a trace's `analyze` with its tables must not import: the report, the run store's
#: lines and the other results' views (the table of views loads the one it draws).
NOT_FOR_A_TRACE_TABLE = (
    *(m for m in NOT_FOR_A_TRACE if m != "nsightlab.present.resultviews"),
    "nsightlab.present.doc",
    "nsightlab.present.report",
    "nsightlab.runs.listing",
    "nsightlab.present.profileview",
    "nsightlab.present.sweepview",
    "nsightlab.present.fleetview",
    "nsightlab.present.gpurunview",
    "nsightlab.present.packview",
    "nsightlab.analysis.gpurun_result",
    "nsightlab.analysis.pack_plan",
)

_CODE = (
    "import json, sys\n"
    "from nsightlab.cli import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
    "else:\n    code = 0\n"
    "sys.stderr.write('\\n' + json.dumps({'code': code, 'modules': sorted(sys.modules)}) + '\\n')\n"
)

TRACE_FILES = pytest.mark.parametrize(
    "trace",
    ["hta_triton_example.json.gz", "vernier_nsys2026.3.1_rtx5000ada_cuda_gpu_trace.csv"],
    ids=["kineto", "nsys-csv"],
)


def _run(home: Path, *argv: str) -> tuple[str, set[str]]:
    """`nsightlab ARGV` in a fresh interpreter: its stdout and the modules it had loaded."""
    env = {**os.environ, "NSIGHTLAB_HOME": str(home), "COLUMNS": "120"}
    proc = subprocess.run(
        [sys.executable, "-c", _CODE, *argv], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, proc.stderr
    return proc.stdout, set(report["modules"])


@TRACE_FILES
def test_a_trace_loads_no_store_yaml_record_or_sweep_models(trace: str, tmp_path: Path) -> None:
    out, loaded = _run(tmp_path, "analyze", str(TRACES / trace), "--json")
    assert json.loads(out)["kind"] == "trace"
    assert "nsightlab.analysis.steps" in loaded  # the analysis did run in this process
    assert sorted(loaded & set(NOT_FOR_A_TRACE)) == []


@TRACE_FILES
def test_a_trace_drawn_as_tables_loads_its_view_alone(trace: str, tmp_path: Path) -> None:
    out, loaded = _run(tmp_path, "analyze", str(TRACES / trace))
    assert "step" in out.lower()  # the tables were drawn
    assert "nsightlab.present.decodeview" in loaded  # the trace's own view did draw them
    assert sorted(loaded & set(NOT_FOR_A_TRACE_TABLE)) == []


def test_runs_lists_without_the_report_or_the_floor(tmp_path: Path) -> None:
    """`runs` shares its CLI module with `report` and `roofline`: their builders load for them alone."""
    out, loaded = _run(tmp_path, "runs", "--json")
    assert "runs" in json.loads(out)  # the listing ran
    assert "nsightlab.runs.listing" in loaded
    unwanted = ("nsightlab.present.report", "nsightlab.present.reportsections", "nsightlab.runs.floor")
    assert sorted(loaded & set(unwanted)) == []
