"""A fleet against hostile or broken Job logs and a run store that fails, end to end
against kubesim (whose Jobs run for real): figures no device can produce, numbers that
are not finite, a device that contradicts the node, a log too large to hold, a full disk
and a home that cannot be written. The Jobs' script is swapped for one that writes the
record under test, as a hostile image would; everything else is the fleet's own."""

from __future__ import annotations

import errno
import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from kubesim import KubeSim
from test_fleet import NS, TINY, fleet_objects, home, nsl

from nsightlab.measure import fleet_runner as fl
from nsightlab.parse.records import fleetrun_log
from nsightlab.userconfig import atomic_write_json

__all__ = ["home"]  # the fixture, imported to be used

SWEEP = Path(__file__).resolve().parent / "data" / "sweep_cpu_float32_epyc-2c-l3-32mib.json"


def a_record(**device: Any) -> dict[str, Any]:
    """A real CPU sweep record (its device changed by `device`)."""
    doc: dict[str, Any] = json.loads(SWEEP.read_text())
    doc["device"].update(device)
    return doc


def job_writes(monkeypatch: pytest.MonkeyPatch, text: str, *, noise_lines: int = 0, long_line: int = 0) -> None:
    """The Jobs' sweep.py, replaced: it prints `noise_lines` lines of 1000 characters and
    one of `long_line` characters, then writes `text` where its --json option says."""
    script = (
        "import sys\n"
        f"for i in range({noise_lines}):\n"
        "    print(f'{i:09d} ' + 'x' * 990)\n"
        f"print('y' * {long_line})\n"
        "out = sys.argv[sys.argv.index('--json') + 1]\n"
        f"open(out, 'w').write({text!r})\n"
    )
    real = fl.fleet_scripts

    def scripts() -> dict[str, str]:
        return {**real(), "sweep.py": script}

    monkeypatch.setattr(fl, "fleet_scripts", scripts)


def sweep(capsys: pytest.CaptureFixture[str], itype: str = "g6.12xlarge", *extra: str) -> Any:
    return nsl(capsys, "fleet", "sweep", "--context", "stg", "--types", itype, *TINY, *extra, "--yes", "--json")


def runs(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = json.loads(nsl(capsys, "runs", "--json").out)["runs"]
    return listed


def fleet_run(home: Path) -> Path:
    [path] = [p for p in (home / "runs").iterdir() if "-fleet-" in p.name]
    return path


# ---------------------------------------------------------------------------- impossible figures


def test_a_log_claiming_1e_30_s_a_call_is_not_a_plausible_measurement(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = a_record()
    for row in doc["rows"]:
        row["seconds_per_call"] = 1e-30
        row["batch_seconds_per_call"] = [1e-30] * len(row["batch_seconds_per_call"])
    job_writes(monkeypatch, json.dumps(doc))
    r = sweep(capsys)
    assert r.code == 6, r
    [entry] = json.loads(r.out)["entries"]
    assert entry["status"] == "failed" and entry["run_id"] is None
    assert entry["reason"].startswith("not a plausible measurement: size 2^10: 1e-30 s per call, under the 100 ns")
    assert [x["kind"] for x in runs(capsys)] == ["fleet"]  # no sweep stored for it
    job = f"nsl-fleet-{json.loads(r.out)['fleet_id']}-g6-12xlarge"
    assert "==nsightlab-result-begin==" in (fleet_run(home) / "raw" / "logs" / f"{job}.log").read_text()
    assert fleet_objects(sim) == []


@pytest.mark.parametrize("token", ["Infinity", "NaN", "1e999"])
def test_a_log_holding_a_non_finite_number_is_a_failed_entry_and_the_fleet_cleans_up(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    text = json.dumps(a_record()).replace('"seconds_per_call": 2.4246000009497946e-06', f'"seconds_per_call": {token}')
    assert token in text
    job_writes(monkeypatch, text)
    r = sweep(capsys)
    assert r.code == 6, r
    [entry] = json.loads(r.out)["entries"]
    assert entry["status"] == "failed" and "holds a number no measurement has" in entry["reason"], entry
    assert "is not a number a record may hold" in entry["reason"]  # Infinity (1e999 arrives so, via json.dumps)
    assert [x["kind"] for x in runs(capsys)] == ["fleet"]
    assert fleet_objects(sim) == []  # its Job and ConfigMap deleted
    assert r.err.strip().splitlines()[-1].startswith("error: 1 Job of fleet ")


def test_a_device_the_log_names_against_the_nodes_label_is_noted_and_the_label_kept(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a CPU Job (--device cpu) on an L4 node whose log says it ran on an H200
    job_writes(monkeypatch, json.dumps(a_record(type="cuda", name="NVIDIA H200")))
    r = sweep(capsys)
    assert r.code == 0, r
    data = json.loads(r.out)
    [entry] = data["entries"]
    assert entry["status"] == "measured"
    assert entry["reason"] == (
        "its log says it ran on NVIDIA H200 (cuda), but --device cpu was asked and the node's label says NVIDIA L4; "
        "the node's GPU is kept as node_gpu"
    )
    assert f"g6.12xlarge: {entry['reason']}" in data["notes"]
    meta = json.loads(nsl(capsys, "runs", "show", entry["run_id"], "--json").out)["meta"]
    assert (meta["node_gpu"], meta["gpu"], meta["device_requested"]) == ("NVIDIA L4", "NVIDIA H200", "cpu")


def test_a_plain_cpu_job_contradicts_nothing(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = sweep(capsys)  # the real sweep.py on this machine's CPU
    assert r.code == 0, r
    [entry] = json.loads(r.out)["entries"]
    assert (entry["status"], entry["reason"]) == ("measured", None)
    meta = json.loads(nsl(capsys, "runs", "show", entry["run_id"], "--json").out)["meta"]
    assert (meta["node_gpu"], meta["device_type"]) == ("NVIDIA L4", "cpu")


# ---------------------------------------------------------------------------- a large log


def test_a_large_log_is_streamed_to_one_file_and_stored_once(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fleetrun_log, "LINE_MAX", 200)  # lowered caps: the suite's log is a few MiB
    monkeypatch.setattr(fleetrun_log, "RESULT_MAX", 64 << 10)
    job_writes(monkeypatch, json.dumps(a_record()), noise_lines=4000, long_line=300_000)
    r = sweep(capsys, "g6.12xlarge", "--keep")  # the Job and its pod stay: their log to compare with
    assert r.code == 0, r
    data = json.loads(r.out)
    [entry] = data["entries"]
    assert entry["status"] == "measured"
    job = f"nsl-fleet-{data['fleet_id']}-g6-12xlarge"
    [pod] = sim.job_pods(NS, job)
    log = fleet_run(home) / "raw" / "logs" / f"{job}.log"
    size = log.stat().st_size
    assert size > 4000 * 1000 + 300_000
    assert log.read_text() == sim.logs(NS, pod["metadata"]["name"])  # the whole log, as the server has it
    sweep_run = next(p for p in (home / "runs").iterdir() if "-sweep-" in p.name)
    assert sorted(p.name for p in (sweep_run / "raw").iterdir()) == ["sweep.json"]  # no second copy
    stored = sum(p.stat().st_size for p in (home / "runs").rglob("*") if p.is_file())
    assert stored < size + (1 << 20)


def test_a_result_block_beyond_the_cap_fails_the_entry(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fleetrun_log, "RESULT_MAX", 4 << 10)  # the record is ~8 KiB
    job_writes(monkeypatch, json.dumps(a_record()))
    r = sweep(capsys)
    assert r.code == 6, r
    [entry] = json.loads(r.out)["entries"]
    assert entry["reason"] == "the result in the Job's log is larger than 4.00 KiB: no sweep's is"
    assert fleet_objects(sim) == []


def test_the_log_scan_holds_a_bounded_amount_whatever_the_log() -> None:
    chunk = b"z" * (64 << 10)  # one line of 64 MiB, then a result block and a last line
    scan = fleetrun_log.LogScan()
    tracemalloc.start()
    try:
        for _ in range(1024):
            scan.feed(chunk)
        scan.feed(b'\n==nsightlab-result-begin==\n{"kind": "sweep"}\n==nsightlab-result-end==\nbye\n')
        scan.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    assert scan.result() == ({"kind": "sweep"}, None)
    assert [len(t) for t in scan.tail] == [fleetrun_log.LINE_MAX + 3, 3]  # cut, with "..."


# ---------------------------------------------------------------------------- the run store fails


def test_a_full_disk_while_storing_stops_the_fleet_naming_the_folder_and_collect_finishes_it(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(path: Path, data: Any) -> None:
        if path.name == "result.json" and "-sweep-" in path.parent.name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        atomic_write_json(path, data)

    monkeypatch.setattr("nsightlab.runs.store.atomic_write_json", full)
    r = nsl(capsys, "fleet", "sweep", "--context", "stg", "--types", "g6.12xlarge", *TINY, "--yes")
    assert r.code == 2, r
    fleet_id = r.err.split("start fleet ")[1].split(":")[0]
    line = r.err.strip().splitlines()[-1]
    assert line == (
        f"error: cannot store the results of fleet {fleet_id} in {home / 'runs'} (No space left on device): its Jobs "
        f"and ConfigMap are left as they are. Free some space there (or fix NSIGHTLAB_HOME), then collect the fleet "
        f"with `nsightlab fleet collect {fleet_id} --context stg --namespace serving`, or remove it with "
        f"`nsightlab cleanup --fleet {fleet_id} --context stg --namespace serving`."
    )
    assert "Traceback" not in r.err
    assert fleet_objects(sim) == [f"job/nsl-fleet-{fleet_id}-g6-12xlarge", f"configmap/nsightlab-fleet-{fleet_id}"]
    assert [x["kind"] for x in runs(capsys)] == ["fleet"]  # no half-stored sweep
    monkeypatch.setattr("nsightlab.runs.store.atomic_write_json", atomic_write_json)  # space again: collect
    done = nsl(capsys, "fleet", "collect", fleet_id, "--context", "stg", "--namespace", "serving", "--yes", "--json")
    assert done.code == 0, done
    assert [e["status"] for e in json.loads(done.out)["entries"]] == ["measured"]
    assert fleet_objects(sim) == []


def _unwritable_homes(tmp_path: Path) -> list[tuple[Path, str]]:
    """A home under a file (mkdir fails for real, even as root), and a read-only one
    where chmod means something (not as root)."""
    afile = tmp_path / "a-file"
    afile.write_text("not a folder\n")
    homes = [(afile / "home", "Not a directory")]
    if os.geteuid() != 0:
        ro = tmp_path / "read-only"
        ro.mkdir(mode=0o500)
        homes.append((ro, "Permission denied"))
    return homes


def test_fleet_sweep_and_collect_refuse_a_home_they_cannot_write_before_any_request(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for bad, why in _unwritable_homes(tmp_path):
        monkeypatch.setenv("NSIGHTLAB_HOME", str(bad))
        for args in (["sweep", "--types", "g6.12xlarge", *TINY], ["collect", "abc123"]):
            r = nsl(capsys, "fleet", *args, "--context", "stg", "--yes")
            assert r.code == 2, r
            assert r.err == (
                f"error: cannot write in {bad} (NSIGHTLAB_HOME): {why}. Point NSIGHTLAB_HOME at a folder you can "
                "write in.\n"
            )
    assert sim.requests == []


def test_report_refuses_a_home_it_cannot_write_and_a_full_disk_leaves_nothing(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    made = nsl(capsys, "sweep", "--local", "--device", "cpu", "--sizes", "10,12", "--iters", "2", "--warmup", "0")
    assert made.code == 0, made
    for bad, why in _unwritable_homes(tmp_path):
        monkeypatch.setenv("NSIGHTLAB_HOME", str(bad))
        r = nsl(capsys, "report")
        assert r.code == 2, r
        assert r.err.startswith(f"error: cannot write in {bad} (NSIGHTLAB_HOME): {why}."), r
    monkeypatch.setenv("NSIGHTLAB_HOME", str(home))
    under_file = tmp_path / "a-file" / "report"
    r = nsl(capsys, "report", "--out", str(under_file))
    assert r.code == 2, r
    assert r.err.startswith(f"error: cannot write the report in {under_file.parent} (File exists)"), r
    real = os.replace

    def full(src: Any, dst: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))

    out = tmp_path / "rep"
    before = sorted(os.listdir(tmp_path))
    monkeypatch.setattr(os, "replace", full)
    r = nsl(capsys, "report", "--out", str(out))
    monkeypatch.setattr(os, "replace", real)
    assert r.code == 2, r
    assert r.err == (
        f"error: cannot write the report in {tmp_path} (No space left on device). Give --out a folder you can write "
        "in (or free some space there).\n"
    )
    assert sorted(os.listdir(tmp_path)) == before  # no report, no staging folder left
