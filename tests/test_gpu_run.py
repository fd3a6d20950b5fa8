"""bench/gpu_run.sh, proven on the CPU before any GPU minute is spent, and `nsightlab
analyze` reading its folder back.

The script runs for real (`--device cpu`, tiny sizes: every lab script under its own
budget); the folder it leaves is checked file by file and analysed through the CLI. The
GPU-only branches that the CPU cannot reach are checked on the folder's own records
edited at one figure (a step faster than its floor), on a real captured ncu CSV, and on
the tutorial's published RTX PRO 6000 sweep.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from clirun import Result, run_cli

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "gpu_run.sh"
NCU_CSV = ROOT / "tests" / "fixtures" / "ncu" / "05_ncu_csv_page_details_vectorized_elementwise_rtx5090.csv"
CAP = 16 << 20
# What the script runs, in order (`nsys-stats` and `ncu-sol` only follow a run of their own step).
STEPS = [
    "facts", "gpu", "lesson1", "sweep-torch-float16", "sweep-torch-float32", "decode-1b-class", "decode-8b-class",
    "sweep-triton-float16", "sweep-triton-float32", "sweep-scale-add-torch-float16",
    "sweep-scale-add-triton-float16", "ncu", "nsys", "colocate",
]  # fmt: skip
# The ncu stand-in's verbatim copy of ncu's refusal (tests/standins/ncu).
PERM = (
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters "
    "on the target device 0. For instructions on enabling permissions and to get more information see "
    "https://developer.nvidia.com/ERR_NVGPUCTRPERM"
)


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_RUN_")}
    env.update({"GPU_RUN_PYTHON": sys.executable, "TMPDIR": str(tmp)})
    env.update(extra)
    return env


def gpu_run(out: Path, *args: str, tmp: Path, timeout: float = 600, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args, str(out)],
        capture_output=True,
        text=True,
        env=_env(tmp, **extra),
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def steps_of(out: Path) -> dict[str, list[str]]:
    """The steps log's lines, by step: [status, seconds, budget, exit, detail]."""
    rows = {}
    for line in (out / "steps.log").read_text().splitlines()[1:]:
        if line and not line.startswith("#"):
            cells = line.split("\t")
            assert len(cells) == 6, line
            rows[cells[0]] = cells[1:]
    return rows


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def analyze(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> Result:
    return run_cli(capsys, "analyze", str(path), *args)


def unpacked(run: Path, into: Path) -> Path:
    """The run's folder as a person would unpack it: steps.log beside records/, facts.json."""
    into.mkdir()
    with tarfile.open(run / "gpu-run.tar.gz", "r:gz") as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.12, and 3.11 from 3.11.4
            tar.extractall(into, filter="data")
        else:  # our own archive, just written by the script
            tar.extractall(into)
    folder = into / "gpu-run"
    shutil.copyfile(run / "steps.log", folder / "steps.log")
    return folder


# ------------------------------------------------------------------ the real CPU run


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str], float]:
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("gpu-run")
    out = tmp / "out"
    t0 = time.monotonic()
    done = gpu_run(out, "--device", "cpu", tmp=tmp, GPU_RUN_TINY="1")
    return out, done, time.monotonic() - t0


def _triton() -> bool:
    try:
        import triton  # noqa: F401
    except Exception:
        return False
    return True


@pytest.mark.slow
def test_the_cpu_run_leaves_at_most_four_files_under_the_cap(
    cpu_run: tuple[Path, subprocess.CompletedProcess[str], float],
) -> None:
    out, done, _ = cpu_run
    assert done.returncode == 0, done.stderr[-2000:]
    files = sorted(p.name for p in out.iterdir())
    assert files == ["gpu-run.tar.gz", "steps.log", "traces.tar.gz"]
    assert all((out / f).stat().st_size <= CAP for f in files)
    inside = members(out / "gpu-run.tar.gz")
    for name in ("facts.json", "steps.log", "records/lesson1/lesson1.json", "records/lesson1/torchprof.json",
                 "records/sweep-torch-float32/sweep.json", "records/decode-8b-class/decode.json",
                 "records/colocate/colocate.json", "logs/machine.log", "logs/lesson1.log"):  # fmt: skip
        assert f"gpu-run/{name}" in inside, name
    facts = json.loads(inside["gpu-run/facts.json"])
    assert facts["kind"] == "gpu-run-facts" and facts["device_requested"] == "cpu"
    assert facts["torch"]["imported"] and facts["torch"]["version"]
    assert facts["cpu"]["count"] == os.cpu_count() and facts["memory_bytes"] > 0
    assert facts["nvidia_smi"]["found"] is bool(shutil.which("nvidia-smi"))
    # each step's log starts with its command line, run with this Python and lab_scripts/
    assert inside["gpu-run/logs/lesson1.log"].decode().startswith(f"$ {sys.executable} ")
    traces = members(out / "traces.tar.gz")
    trace = json.loads(gzip.decompress(traces["lesson1.trace.json.gz"]))
    assert trace["traceEvents"]


@pytest.mark.slow
def test_the_steps_log_says_what_ran_and_what_was_skipped(
    cpu_run: tuple[Path, subprocess.CompletedProcess[str], float],
) -> None:
    out, done, _ = cpu_run
    steps = steps_of(out)
    assert list(steps) == STEPS
    triton = _triton()
    for step in STEPS:
        status, _, _, _, detail = steps[step]
        if step == "gpu":
            assert (status, detail) == ("skipped", "--device cpu: the run stays on the CPU")
        elif step in ("ncu", "nsys"):
            assert status == "skipped"
            assert detail.startswith(f"--device cpu: {step} ")
            assert f"{step} is {'' if shutil.which(step) else 'not '}on PATH" in detail
        elif "triton" in step and not triton:
            assert status == "skipped" and detail.startswith("no Triton: ")
        else:
            assert status == "ok", (step, steps[step])
    header = (out / "steps.log").read_text()
    assert "# device: cpu\n" in header and "# tiny: 1\n" in header and "# finished: " in header
    # what the terminal showed is the same table
    assert "colocate" in done.stdout and "skipped" in done.stdout


@pytest.mark.slow
def test_analyze_reads_the_cpu_run_back(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, cpu_run: tuple[Path, subprocess.CompletedProcess[str], float]
) -> None:
    out, _, _ = cpu_run
    r = analyze(capsys, out, "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["kind"] == "gpu-run" and doc["device"] == "cpu" and doc["tiny"] is True
    assert {"records", "sanity", "notes", "steps", "facts"} <= set(doc)
    kinds = [(x["step"], x["kind"]) for x in doc["records"]]
    want = [("lesson1", "profile"), ("sweep-torch-float16", "sweep"), ("sweep-torch-float32", "sweep"),
            ("decode-1b-class", "decode"), ("decode-8b-class", "decode"), ("colocate", "pack")]  # fmt: skip
    if _triton():
        want += [("sweep-triton-float16", "sweep"), ("sweep-scale-add-triton-float16", "sweep")]
        want += [("sweep-torch-float32 vs sweep-triton-float32", "sweep-impls")]
    assert set(want) <= set(kinds)
    for x in doc["records"]:
        assert x["headline"] and x["result"]["kind"] == x["kind"]
    lesson1 = next(x["result"] for x in doc["records"] if x["step"] == "lesson1")
    assert lesson1["profiler"] == "torch" and {r["name"] for r in lesson1["ranges"]} >= {"memory_bound_scale"}
    # the CPU's checks: the plateau against the cache peak (not reachable at tiny sizes inside a
    # large cache: said so), and each decode step against its floor at the run's fastest rate
    rows = {row["check"]: row for row in doc["sanity"]}
    assert all(set(row) >= {"check", "value", "bound", "source", "ok"} for row in rows.values())
    plateau = [row for c, row in rows.items() if c.startswith("sweep-torch-float32") and "cache peak" in c]
    assert len(plateau) == 1
    if plateau[0]["ok"] is None:
        assert plateau[0]["value"] is None and "no DRAM plateau" in plateau[0]["note"]
    floors = [row for c, row in rows.items() if c.startswith("decode-") and "floor" in c]
    assert len(floors) == 2
    for row in floors:
        assert row["ok"] is True and row["value"] >= row["bound"] > 0
        assert "fastest rate this run measured" in row["source"]
    assert not any("DRAM spec" in c or "graphs" in c for c in rows)  # no GPU check on a CPU run
    # nothing of the private folder the archive was read into is left in what is shown
    assert "nsightlab-gpurun-" not in r.out


@pytest.mark.slow
def test_analyze_draws_the_run_with_the_sanity_table_last(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, cpu_run: tuple[Path, subprocess.CompletedProcess[str], float]
) -> None:
    out, _, _ = cpu_run
    r = analyze(capsys, out)
    assert r.code == 0, r
    assert r.out.startswith(f"GPU run on the CPU: {out} (tiny sizes)")
    for heading in ("== lesson1: records/lesson1/torchprof.json", "== decode-8b-class: records/decode-8b-class/",
                    "Steps", "Sanity: measured figures against physical bounds"):  # fmt: skip
        assert heading in r.out
    assert r.out.index("Steps") < r.out.index("Sanity: measured") < r.out.index("files: gpu-run.tar.gz")
    assert "nsightlab-gpurun-" not in r.out


@pytest.mark.slow
def test_a_step_faster_than_its_floor_is_a_finding(
    capsys: pytest.CaptureFixture[str],
    nsl_home: Path,
    tmp_path: Path,
    cpu_run: tuple[Path, subprocess.CompletedProcess[str], float],
) -> None:
    folder = unpacked(cpu_run[0], tmp_path / "copy")
    record = folder / "records" / "decode-1b-class" / "decode.json"
    data = json.loads(record.read_text())
    for entry in data["modes"]:  # a timer that read a thousandth of the time
        entry["step_seconds"] = [t / 1e3 for t in entry["step_seconds"]]
        for key in ("median_step_s", "p90_step_s", "mean_step_s"):
            entry[key] /= 1e3
    record.write_text(json.dumps(data))
    r = analyze(capsys, folder, "--json")  # the unpacked folder reads as the packed one does
    assert r.code == 0, r
    doc = json.loads(r.out)
    bad = [row for row in doc["sanity"] if row["ok"] is False]
    assert [row["check"].split(" ")[0] for row in bad] == ["decode-1b-class"]
    assert bad[0]["value"] < bad[0]["bound"] and "faster than reading the weights" in bad[0]["note"]
    assert any("outside their physical bounds" in n for n in doc["notes"])
    text = analyze(capsys, folder)
    assert "FINDING" in text.out and "faster than reading the weights" in text.out


@pytest.mark.slow
def test_ncu_counters_read_or_refused(
    capsys: pytest.CaptureFixture[str],
    nsl_home: Path,
    tmp_path: Path,
    cpu_run: tuple[Path, subprocess.CompletedProcess[str], float],
) -> None:
    folder = unpacked(cpu_run[0], tmp_path / "copy")
    (folder / "records" / "ncu").mkdir()
    ncu_csv = folder / "records" / "ncu" / "ncu.csv"
    ncu_csv.write_text("==PROF== Connected to process 4242 (python3)\n" + PERM + "\n")
    doc = json.loads(analyze(capsys, folder, "--json").out)
    assert not [x for x in doc["records"] if x["kind"] == "ncu"]
    assert any("ERR_NVGPUCTRPERM" in n and "a finding" in n for n in doc["notes"])
    # the refusal on ncu's stderr (the step's log), its stdout holding only the program's lines
    ncu_csv.write_text("memory_bound_scale   268435456 elems float16\n")
    (folder / "logs" / "ncu.log").write_text("$ ncu --csv ...\n" + PERM + "\n")
    doc = json.loads(analyze(capsys, folder, "--json").out)
    assert any("ERR_NVGPUCTRPERM" in n and "a finding" in n for n in doc["notes"])
    assert not any("records/ncu: cannot be read" in n for n in doc["notes"])
    (folder / "logs" / "ncu.log").unlink()
    shutil.copyfile(NCU_CSV, ncu_csv)  # a real capture: the counters were read
    doc = json.loads(analyze(capsys, folder, "--json").out)
    (ncu,) = [x for x in doc["records"] if x["kind"] == "ncu"]
    assert ncu["headline"].startswith("counters read: vectorized_elementwise_kernel")
    assert "DRAM 6.3%" in ncu["headline"]  # the capture's own Speed Of Light figure, as the table writes it
    assert ncu["result"]["kernels"][0]["dram_throughput_pct"] == pytest.approx(6, abs=1)


# ------------------------------------------------------------------ GPU checks on published figures


def _gpu_folder(tmp_path: Path, sweep: dict[str, Any]) -> Path:
    """A run folder holding one record: the tutorial's published sweep, as sweep.py writes it."""
    folder = tmp_path / "run"
    (folder / "records" / "sweep-torch-float16").mkdir(parents=True)
    (folder / "records" / "sweep-torch-float16" / "sweep.json").write_text(json.dumps(sweep))
    name = sweep["device"]["name"]
    (folder / "facts.json").write_text(json.dumps({"summary": name, "torch": {"device": {"name": name}}}))
    (folder / "steps.log").write_text(
        "# gpu_run.sh steps: step, status (ok, blocked, failed, timeout, skipped), seconds, budget_s, exit, detail\n"
        "# device: cuda\n"
        "sweep-torch-float16\tok\t9.5\t40\t0\trecords/sweep-torch-float16/sweep.json\n"
    )
    return folder


def test_a_gpu_sweep_is_checked_against_the_datasheet(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, tmp_path: Path
) -> None:
    from nsightlab.specs.gpus import REFERENCE_SWEEPS

    published = REFERENCE_SWEEPS["tutorial-rtx-pro-6000"].as_sweep_json()
    folder = _gpu_folder(tmp_path, published)
    doc = json.loads(analyze(capsys, folder, "--json").out)
    rows = {row["check"].split(": ", 1)[1]: row for row in doc["sanity"]}
    plateau, floor = rows["DRAM plateau below the spec"], rows["launch floor at least 1 us"]
    assert plateau["ok"] is True and plateau["value"] == pytest.approx(1.46, abs=0.01) and plateau["bound"] == 1.597
    assert "RTX PRO 6000 Blackwell Server Edition datasheet" in plateau["source"]
    assert floor["ok"] is True and floor["value"] == pytest.approx(5.7)
    # the same curve with its DRAM sizes four times faster: above the spec, a finding
    fast = copy.deepcopy(published)
    for row in fast["rows"]:
        if row["log2"] >= 28:
            row["seconds_per_call"] /= 4
    (folder / "records" / "sweep-torch-float16" / "sweep.json").write_text(json.dumps(fast))
    doc = json.loads(analyze(capsys, folder, "--json").out)
    (bad,) = [row for row in doc["sanity"] if row["ok"] is False]
    assert bad["value"] > bad["bound"] == 1.597 and "served from the L2" in bad["note"]


def test_graphs_and_floor_checks_of_a_gpu_decode(tmp_path: Path) -> None:
    """The GPU's decode checks, on decode.py's record shape: graphs against eager at batch 1,
    each mode against its floor at the spec bandwidth."""
    from nsightlab.analysis.sanity import RunFigures, check_run
    from nsightlab.parse.records.decode_record import DecodeRecord
    from nsightlab.specs.gpus import lookup

    data = json.loads((ROOT / "tests" / "data" / "decode_cpu_tiny_xeon-2c.json").read_text())
    record = DecodeRecord.model_validate(data)
    (eager,) = [e for e in record.modes if e.batch == min(x.batch for x in record.modes)][:1]
    h200 = lookup("NVIDIA H200")
    assert h200 is not None
    floor_s = eager.bytes_per_step_floor / 4.8e12

    bf16 = {"dtype": "bfloat16", "element_size": 2}

    def with_graphs(graphs_s: float) -> DecodeRecord:
        twin = eager.model_copy(update={"mode": "graphs", "median_step_s": graphs_s})
        slow = eager.model_copy(update={"median_step_s": 10 * floor_s})
        # in bfloat16, as decode.py runs on a GPU
        return record.model_copy(update={"modes": [slow, twin], "model": record.model.model_copy(update=bf16)})

    rows = check_run(RunFigures(device_type="cuda", spec=h200, decodes=[("decode-1b-class", with_graphs(5 * floor_s))]))
    by = {r.check.split(": ", 1)[1]: r for r in rows}
    graphs = by[f"graphs faster than eager at batch {eager.batch}"]
    assert graphs.ok is True and graphs.value == pytest.approx(5 * floor_s * 1e3)
    assert all(r.ok is True for r in rows) and len(rows) == 4  # graphs, the matrix rate, a floor row per mode
    (matmul,) = [r for r in rows if "matrix TFLOP/s" in r.check]
    assert matmul.bound == 989.0 and matmul.value < 989.0 and "H200 dense FP16/BF16 tensor peak" in matmul.source
    rows = check_run(
        RunFigures(device_type="cuda", spec=h200, decodes=[("decode-1b-class", with_graphs(0.5 * floor_s))])
    )
    bad = {r.check.split(": ", 1)[1].split(" (")[0]: r for r in rows if r.ok is False}
    assert list(bad) == ["step at or above its floor"]
    assert bad["step at or above its floor"].bound == pytest.approx(floor_s * 1e3)
    rows = check_run(
        RunFigures(device_type="cuda", spec=h200, decodes=[("decode-1b-class", with_graphs(12 * floor_s))])
    )
    (slower,) = [r for r in rows if r.ok is False]
    assert "graphs faster than eager" in slower.check and "% slower than eager's" in (slower.note or "")
    assert slower.value == pytest.approx(12 * floor_s * 1e3) and slower.bound == pytest.approx(10 * floor_s * 1e3)


# ------------------------------------------------------------------ budgets, timeouts, signals


def test_a_gone_budget_skips_every_step_and_still_packs(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    done = gpu_run(out, "--device", "cpu", tmp=tmp_path, GPU_RUN_BUDGET_S="12")
    assert done.returncode == 0, done.stderr
    steps = steps_of(out)
    assert list(steps) == STEPS
    assert steps["facts"][0] == "skipped" and steps["facts"][4].startswith("budget gone: ")
    assert all(s[0] == "skipped" for s in steps.values())
    assert sorted(p.name for p in out.iterdir()) == ["gpu-run.tar.gz", "steps.log"]
    doc = json.loads(analyze(capsys, out, "--json").out)
    assert doc["records"] == [] and doc["sanity"] == []
    assert any("no facts.json" in n for n in doc["notes"])
    (out / "gpu-run.tar.gz").unlink()  # a run killed before it packed: the steps log alone
    doc = json.loads(analyze(capsys, out, "--json").out)
    assert len(doc["steps"]) == len(STEPS) and doc["records"] == []
    assert any(n.startswith("no gpu-run.tar.gz: the run ended before it packed") for n in doc["notes"])


@pytest.fixture
def hanging_python(tmp_path: Path) -> Path:
    """A `python3` whose every script hangs: the step that runs it must be stopped."""
    path = tmp_path / "hanging-python"
    path.write_text("#!/bin/sh\nexec sleep 60\n")
    path.chmod(0o755)
    return path


@pytest.mark.slow
def test_a_step_over_its_budget_is_stopped_and_the_run_goes_on(tmp_path: Path, hanging_python: Path) -> None:
    out = tmp_path / "out"
    t0 = time.monotonic()
    # 17 s: 10 kept back for packing, so facts gets what is left (7 s, or 6 if a second turned
    # since the start), at least the 5 a step needs
    done = gpu_run(out, tmp=tmp_path, GPU_RUN_BUDGET_S="17", GPU_RUN_PYTHON=str(hanging_python))
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - t0 < 55  # not the 60 s the step would have taken
    steps = steps_of(out)
    status, _seconds, budget, code, detail = steps["facts"]
    assert (status, code) == ("timeout", "124") and 5 <= int(budget) <= 7
    assert detail.startswith(f"over its {budget}s budget")
    # no facts: nothing says a GPU is there; the budget went with the hanging step
    assert steps["gpu"][0] == "skipped" and "the facts step did not finish" in steps["gpu"][4]
    assert steps["lesson1"][0] == "skipped" and steps["lesson1"][4].startswith("budget gone: ")


def test_a_signal_packs_what_ran_and_exits_130(tmp_path: Path, hanging_python: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen(
        ["bash", str(SCRIPT), str(out)],
        env=_env(tmp_path, GPU_RUN_PYTHON=str(hanging_python)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (out / "steps.log").exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # the log is written once the traps are set
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        _stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    log = (out / "steps.log").read_text()
    assert "\tinterrupted by SIGTERM\n" in log and "# note: interrupted by SIGTERM" in log
    assert "gpu-run/steps.log" in members(out / "gpu-run.tar.gz")


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--device", "gpu", "OUT"], "--device takes cuda or cpu, not 'gpu'"),
        (["--frobnicate", "OUT"], "unknown option --frobnicate"),
        (["--device"], "--device needs a value"),
        (["--device", "cpu"], "OUTDIR is missing"),
        (["OUT", "OUT2"], "one OUTDIR only"),
    ],
)
def test_a_bad_command_line_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    argv = [str(tmp_path / a) if a.startswith("OUT") else a for a in args]
    done = subprocess.run(
        ["bash", str(SCRIPT), *argv], capture_output=True, text=True, env=_env(tmp_path), timeout=60, check=False
    )
    assert done.returncode == 2
    assert not (tmp_path / "OUT").exists()
    assert done.stderr.count("\n") == 1 and message in done.stderr and done.stdout == ""


def test_a_folder_holding_other_files_is_refused_untouched(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    done = gpu_run(out, "--device", "cpu", tmp=tmp_path)
    assert done.returncode == 2
    assert "holds notes.txt, not a file of this script" in done.stderr and done.stderr.count("\n") == 1
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_a_damaged_steps_log_is_exit_2_naming_the_line(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, tmp_path: Path
) -> None:
    from nsightlab.specs.gpus import REFERENCE_SWEEPS

    folder = _gpu_folder(tmp_path, REFERENCE_SWEEPS["tutorial-rtx-pro-6000"].as_sweep_json())
    with open(folder / "steps.log", "a") as f:
        f.write("lesson1\tok\t3.0\n")
    r = analyze(capsys, folder)
    assert r.code == 2 and r.out == ""
    assert f"{folder / 'steps.log'}:4: expected 6 tab-separated fields, found 3" in r.err
    assert "Traceback" not in r.err
    r = analyze(capsys, folder, "--step-range", "decode_step")
    assert r.code == 2


def _hostile_run(tmp_path: Path) -> Path:
    """A packed folder whose archive holds a link out, a climb out and a plain record."""
    out = tmp_path / "hostile"
    out.mkdir()
    (out / "steps.log").write_text("# gpu_run.sh steps: x\n# device: cpu\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        link = tarfile.TarInfo("gpu-run/records/lesson1/torchprof.json")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
        for name in ("gpu-run/../escaped.json", "elsewhere/facts.json"):
            body = b"{}"
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    (out / "gpu-run.tar.gz").write_bytes(buf.getvalue())
    return out


def test_an_archive_is_read_member_by_member_and_nothing_leaves(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _hostile_run(tmp_path)
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))  # where the archive is read into
    r = analyze(capsys, out, "--json")
    assert r.code == 0, r
    notes = json.loads(r.out)["notes"]
    for name in ("gpu-run/records/lesson1/torchprof.json", "gpu-run/../escaped.json", "elsewhere/facts.json"):
        assert any(f"left out {name!r}" in n for n in notes), name
    assert list(private.iterdir()) == []  # read, and removed
    assert not list(tmp_path.rglob("escaped.json")) and not (tmp_path / "elsewhere").exists()
    (out / "gpu-run.tar.gz").write_bytes((out / "gpu-run.tar.gz").read_bytes()[:40])  # cut short
    r = analyze(capsys, out)
    assert r.code == 2 and "gpu-run.tar.gz: cannot read the archive" in r.err and r.err.count("\n") <= 2


@pytest.mark.slow
def test_without_a_gpu_every_gpu_step_is_a_skipped_line(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, tmp_path: Path
) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    out = tmp_path / "out"
    done = gpu_run(out, tmp=tmp_path)  # the GPU run, where torch sees none
    assert done.returncode == 0, done.stderr
    steps = steps_of(out)
    assert steps["facts"][0] == "ok"
    reason = steps["gpu"][4]
    assert steps["gpu"][0] == "skipped" and reason.startswith("no GPU: torch cannot see one (")
    assert "bench/gpu_run.sh --device cpu runs on the CPU" in reason
    for step in STEPS[2:]:
        status, _, _, _, detail = steps[step]
        assert status == "skipped", step
        if step in ("ncu", "nsys") and not shutil.which(step):
            assert detail.endswith("is not on PATH"), detail
        else:
            assert detail == reason, step
    doc = json.loads(analyze(capsys, out, "--json").out)
    assert doc["device"] == "cuda" and doc["records"] == [] and doc["sanity"] == []
    assert doc["facts"]["torch"]["cuda_available"] is False


@pytest.mark.slow
def test_a_trace_over_the_cap_is_dropped_with_a_note(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "out"
    # a cap smaller than lesson1's real trace (a couple of KiB compressed)
    done = gpu_run(
        out, "--device", "cpu", tmp=tmp_path, GPU_RUN_TINY="1", GPU_RUN_ONLY="lesson1", GPU_RUN_CAP_BYTES="512"
    )
    assert done.returncode == 0, done.stderr
    assert steps_of(out)["lesson1"][0] == "ok"
    assert not (out / "traces.tar.gz").exists()
    log = (out / "steps.log").read_text()
    assert "# note: trace lesson1.trace.json.gz dropped: " in log and "past the 512-byte cap" in log
    doc = json.loads(analyze(capsys, out, "--json").out)
    assert [x["step"] for x in doc["records"]] == ["lesson1"]  # the record stays; only the trace went
    assert any("trace lesson1.trace.json.gz dropped" in n for n in doc["notes"])


def test_a_record_no_device_could_make_is_a_finding_not_a_silence(
    capsys: pytest.CaptureFixture[str],
    nsl_home: Path,
    tmp_path: Path,
    cpu_run: tuple[Path, subprocess.CompletedProcess[str], float],
) -> None:
    """A decode record whose steps take nanoseconds is refused by the record reader (no call
    is that fast on any device); in a device run's read-back it is a sanity row outside its
    bound, naming why, beside the note."""
    folder = unpacked(cpu_run[0], tmp_path / "copy")
    record = folder / "records" / "decode-1b-class" / "decode.json"
    data = json.loads(record.read_text())
    for entry in data["modes"]:
        entry["step_seconds"] = [t / 1e9 for t in entry["step_seconds"]]
        for key in ("median_step_s", "p90_step_s", "mean_step_s"):
            entry[key] /= 1e9
    record.write_text(json.dumps(data))
    r = analyze(capsys, folder, "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    (row,) = [row for row in doc["sanity"] if row["ok"] is False]
    assert row["check"] == "decode-1b-class plausible" and "not a plausible measurement" in row["note"]
    assert "nsightlab/specs/bounds.py" in row["source"]
    assert any(n.startswith("records/decode-1b-class: cannot be read") for n in doc["notes"])
