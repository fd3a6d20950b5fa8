"""`analyze` decides what a path holds in one place (`nsightlab.runs.inputs.detect`), has
one analysis per kind of input, one view per kind of result, and reads a trace once."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import typing
from datetime import datetime, timezone
from pathlib import Path

import pytest
from clirun import run_cli
from nsys_sqlite_build import from_csv_exports

from nsightlab.parse.records.gpurun_steps import STEPS_HEADER
from nsightlab.present.resultviews import view_of
from nsightlab.runs import inputs
from nsightlab.runs.analyze import ANALYSES, analyze_input
from nsightlab.runs.store import RunMeta, new_run
from nsightlab.runs.timeline import TraceOptions

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
TRACES = DATA / "traces"
NSYS = ROOT / "tests" / "fixtures" / "nsys"
NCU = ROOT / "tests" / "fixtures" / "ncu"
THOR_GPU = TRACES / "vernier_nsys2025.3.2_thor_cuda_gpu_trace.csv"
THOR_NVTX = TRACES / "vernier_nsys2025.3.2_thor_nvtx_pushpop_trace.csv"
KINETO = TRACES / "hta_triton_example.json.gz"


def _copy(folder: Path, *files: Path, names: tuple[str, ...] = ()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, f in enumerate(files):
        shutil.copy(f, folder / (names[i] if i < len(names) else f.name))
    return folder


def _stored_run() -> Path:
    """A sweep run made with the store's own API, as scripts outside the package make them."""
    run, run_id = new_run("sweep", "float16")
    shutil.copy(DATA / "sweep_cpu_float16_epyc-2c-l3-32mib.json", run.raw / "sweep.json")
    run.write_result(analyze_input(inputs.detect(run.raw / "sweep.json"), TraceOptions()))
    run.write_meta(
        RunMeta(id=run_id, kind="sweep", name="float16", target="this machine", created=datetime.now(timezone.utc))
    )
    return run.path


def _inputs(tmp: Path) -> dict[str, tuple[Path, type, str | None]]:
    """Each kind of input, from the suite's real files: (path, its input type, what its
    timeline is made of)."""
    (tmp / "db").mkdir()
    db = from_csv_exports({"cuda_gpu_trace": THOR_GPU, "nvtx_pushpop_trace": THOR_NVTX}, tmp / "db" / "capture.sqlite")
    rep = tmp / "rep" / "capture.nsys-rep"
    rep.parent.mkdir()
    rep.write_bytes(b"not read by detect")
    gpu_run = tmp / "gpu-run"
    gpu_run.mkdir()
    (gpu_run / "steps.log").write_text(STEPS_HEADER + "\n")
    return {
        "nsys console": (NSYS / "01_nsys2024.2.3_stats_console_babelstream_a100.txt", inputs.NsysText, None),
        "nsys stats CSV": (NSYS / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv", inputs.NsysText, None),
        "nsys CSVs and their trace": (
            _copy(tmp / "csvs", NSYS / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv", THOR_GPU, THOR_NVTX),
            inputs.NsysCsvs,
            "nsys-csv",
        ),
        "ncu CSV": (NCU / "04_ncu_csv_section_SpeedOfLight_cutlass_gemm_rtx5090.csv", inputs.NcuExport, None),
        "ncu CSVs": (_copy(tmp / "ncu", *sorted(NCU.glob("*.csv"))), inputs.NcuExport, None),
        "cuda_gpu_trace CSV": (THOR_GPU, inputs.TraceFiles, "nsys-csv"),
        "trace exports": (_copy(tmp / "traces", THOR_GPU, THOR_NVTX), inputs.TraceFiles, "nsys-csv"),
        "Kineto trace": (KINETO, inputs.TraceFiles, "kineto"),
        "SQLite export": (db, inputs.NsysSqlite, None),
        "folder of an SQLite export": (db.parent, inputs.NsysSqlite, None),
        ".nsys-rep": (rep, inputs.NsysRep, None),
        "decode.py's JSON": (DATA / "decode_cpu_tiny_xeon-2c.json", inputs.ScriptJson, None),
        "decode.py's JSON and its trace": (
            _copy(
                tmp / "decode", DATA / "decode_cpu_tiny_xeon-2c.json", DATA / "decode_cpu_tiny_xeon-2c.pt.trace.json.gz"
            ),
            inputs.DecodeCapture,
            "kineto",
        ),
        "sweep JSON": (DATA / "sweep_cpu_float16_epyc-2c-l3-32mib.json", inputs.ScriptJson, None),
        "lesson1 JSON": (DATA / "lesson1_cpu_float32_epyc-2c-l3-32mib.json", inputs.ScriptJson, None),
        "torchprof JSON": (DATA / "torchprof_before_ranges_user_step_cpu.json", inputs.ScriptJson, None),
        "gpu_run.sh folder": (gpu_run, inputs.GpuRunFolder, None),
    }


NAMES = [
    "nsys console",
    "nsys stats CSV",
    "nsys CSVs and their trace",
    "ncu CSV",
    "ncu CSVs",
    "cuda_gpu_trace CSV",
    "trace exports",
    "Kineto trace",
    "SQLite export",
    "folder of an SQLite export",
    ".nsys-rep",
    "decode.py's JSON",
    "decode.py's JSON and its trace",
    "sweep JSON",
    "lesson1 JSON",
    "torchprof JSON",
    "gpu_run.sh folder",
]


@pytest.mark.parametrize("name", NAMES)
def test_each_input_is_detected_as_its_kind_and_its_result_has_a_view(
    tmp_path: Path, nsl_home: Path, name: str
) -> None:
    path, kind, timeline = _inputs(tmp_path)[name]
    found = inputs.detect(path)
    assert type(found) is kind, found
    assert getattr(getattr(found, "timeline", None), "format", None) == timeline
    if kind is inputs.NsysRep:
        return  # its analysis needs this machine's nsys (tests/test_nsys_sqlite.py runs it with a stand-in)
    result = analyze_input(found, TraceOptions())
    assert view_of(type(result)) is not None, type(result)


def test_a_stored_run_by_id_and_by_folder(nsl_home: Path) -> None:
    folder = _stored_run()
    by_id = inputs.detect(Path(folder.name.rsplit("-", 1)[-1]))
    by_folder = inputs.detect(folder)
    assert by_id == by_folder == inputs.StoredRun(folder, None)
    assert view_of(type(analyze_input(by_id, TraceOptions()))) is not None


def test_every_kind_of_input_has_one_analysis() -> None:
    assert set(ANALYSES) == set(typing.get_args(inputs.Input))


def test_a_kineto_trace_in_a_folder_is_read_once(tmp_path: Path) -> None:
    """An uncompressed trace beside nothing else: its first bytes tell what it is, then
    the reader reads it; it is never also parsed whole to look for a script's `kind`.
    Python's own audit events count the opens, in a child process."""
    folder = tmp_path / "capture"
    folder.mkdir()
    trace = folder / "trace.json"
    with gzip.open(KINETO) as src, open(trace, "wb") as dst:
        shutil.copyfileobj(src, dst)
    code = (
        "import os, sys\n"
        "target = os.path.realpath(sys.argv[1])\n"
        "opens = []\n"
        "def hook(event, args):\n"
        "    if event == 'open' and isinstance(args[0], (str, bytes, os.PathLike)):\n"
        "        if os.path.realpath(os.fsdecode(args[0])) == target:\n"
        "            opens.append(args[0])\n"
        "sys.addaudithook(hook)\n"
        "from nsightlab.cli import main\n"
        "try:\n"
        "    main(['analyze', sys.argv[2], '--json'])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "sys.stderr.write(f'opens={len(opens)}\\n')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NSIGHTLAB_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", code, str(trace), str(folder)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["source"] == str(trace)
    assert done.stderr.strip().splitlines()[-1] == "opens=2", done.stderr


def test_a_folder_with_two_sqlite_exports_names_them(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for name in ("a.sqlite", "b.sqlite"):
        from_csv_exports({"cuda_gpu_trace": THOR_GPU}, tmp_path / name)
    r = run_cli(capsys, "analyze", str(tmp_path))
    assert r.code == 2 and "holds 2 nsys SQLite exports (a.sqlite, b.sqlite)" in r.err, r
    assert f"nsightlab analyze {tmp_path / 'a.sqlite'}" in r.err


def test_a_folder_of_several_kineto_traces_names_them(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """One rank's trace each (or runs apart): not one timeline, and never the first alone."""
    for name in ("rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"):
        shutil.copyfile(KINETO, tmp_path / name)
    r = run_cli(capsys, "analyze", str(tmp_path))
    assert r.code == 2 and "holds 2 torch.profiler traces (rank0.pt.trace.json.gz, rank1.pt.trace.json.gz)" in r.err
    assert f"nsightlab analyze {tmp_path / 'rank0.pt.trace.json.gz'}" in r.err and r.out == ""


@pytest.mark.parametrize("name", ["report.sqlite", "trace.pt.trace.json.gz", "folder/report.sqlite", "run.csv"])
def test_a_git_lfs_pointer_is_named_as_one(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str) -> None:
    """A clone without `git lfs pull` holds, in place of each file, a pointer to it."""
    path = tmp_path / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 1200128\n"
    )
    r = run_cli(capsys, "analyze", str(path.parent if name.startswith("folder/") else path))
    assert r.code == 2 and r.out == "", r
    assert f"{path}: a Git LFS pointer, not the file it stands for" in r.err and "git lfs pull" in r.err


def _pty_read(fd: int) -> bytes:
    os.set_blocking(fd, False)
    data = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except (BlockingIOError, OSError):
            return data
        if not chunk:
            return data
        data += chunk


def test_a_large_input_is_read_under_a_spinner_on_a_terminal_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    from nsightlab.cli import main, offline

    trace = Path(__file__).parent / "data" / "traces" / "hta_triton_example.json.gz"
    monkeypatch.setattr(offline, "SLOW_BYTES", 1)  # every file counts as large
    # stderr no terminal: no spinner, and the JSON alone on stdout
    r = run_cli(capsys, "analyze", str(trace), "--json")
    assert r.code == 0 and "analysing" not in r.err and json.loads(r.out)["kind"]
    # stderr a terminal: the spinner names the file and its size, and stdout is the JSON alone
    master, slave = os.openpty()
    err = os.fdopen(slave, "w", buffering=1)
    out = io.StringIO()
    with capsys.disabled():
        monkeypatch.setattr(sys, "stderr", err)
        monkeypatch.setattr(sys, "stdout", out)
        try:
            main(["analyze", str(trace), "--json"])
        except SystemExit as e:
            assert e.code in (0, None)
        finally:
            err.flush()
            monkeypatch.undo()
    shown = _pty_read(master).decode()
    err.close()
    os.close(master)
    assert "analysing hta_triton_example.json.gz (" in shown and "KiB)" in shown
    assert json.loads(out.getvalue())["kind"]


def test_a_rocprofv3_json_is_named_as_such(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # rocprofv3's JSON output (rocprofiler-sdk): one top-level key, ids past int64
    doc = '{"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}, "agents": [{"id": {"handle": 17332996360099338395}}]}]}'
    plain = tmp_path / "results.json"
    plain.write_text(doc)
    packed = tmp_path / "results.json.gz"
    packed.write_bytes(gzip.compress(doc.encode()))
    for path in (plain, packed):
        r = run_cli(capsys, "analyze", str(path))
        assert r.code == 2 and r.out == ""
        assert f"{path}: a rocprofv3 (ROCm rocprofiler-sdk) JSON, not a Chrome trace" in r.err
        assert "profile the run with torch.profiler" in r.err and len(r.err.strip().splitlines()) == 1
