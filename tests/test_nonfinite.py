"""No NaN or infinity enters a record, whatever a file holds: every reader of records and
exports, fed `Infinity`, `NaN` or `1e999` where a number goes, refuses the file in one
line naming it (exit 2) through `analyze`, and a lab script's record whose figures no
device can produce (1e-30 s a call: 5e26 TB/s) is "not a plausible measurement". The
fleet's Job logs are in test_fleet_trust.py; the bounds themselves in specs/bounds.py."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import Result, run_cli

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
FIXTURES = HERE / "fixtures"
BAD = ["Infinity", "-Infinity", "NaN", "1e999"]
CSV_BAD = ["inf", "Infinity", "NaN", "1e999"]


@pytest.fixture(autouse=True)
def _home(nsl_home: Path) -> Path:
    return nsl_home


def analyze(capsys: pytest.CaptureFixture[str], path: Path) -> Result:
    return run_cli(capsys, "analyze", str(path), "--json")


def refused(r: Result, path: Path) -> str:
    """The one error line of a refused file: exit 2, the file named, no traceback."""
    assert r.code == 2, r
    assert r.out == "" and "Traceback" not in r.err and "This is a bug" not in r.err, r
    [line] = r.err.strip().splitlines()
    assert line.startswith(f"error: {path}"), line
    return line


def _first(text: str, key: str, value: str) -> str:
    """`text` with the first JSON number under `key` replaced by `value` (raw)."""
    out, n = re.subn(rf'("{key}"\s*:\s*)-?[0-9][0-9.eE+-]*', lambda m: m.group(1) + value, text, count=1)
    assert n == 1, key
    return out


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------- the JSON reader


@pytest.mark.parametrize("token", [*BAD, "-1e400", "123456789012345678901234567890"])
def test_the_reader_of_outside_json_refuses_what_no_record_holds(token: str) -> None:
    from nsightlab.models import loads

    with pytest.raises(json.JSONDecodeError) as e:
        loads('{"rows": [\n {"seconds_per_call": ' + token + "}]}")
    assert e.value.lineno == 2 and "a record may hold" in e.value.msg
    assert loads('{"a": 1.5e300, "b": -2, "c": "NaN"}') == {"a": 1.5e300, "b": -2, "c": "NaN"}


# ---------------------------------------------------------------------------- lab scripts' records

RECORDS: dict[str, tuple[Path, str]] = {
    "sweep": (DATA / "sweep_cpu_float32_epyc-2c-l3-32mib.json", "seconds_per_call"),
    "lesson1": (DATA / "lesson1_cpu_float32_epyc-2c-l3-32mib.json", "seconds_per_call"),
    "decode": (DATA / "decode_cpu_tiny_xeon-2c.json", "median_step_s"),
    "torchprof": (DATA / "torchprof_before_ranges_user_step_cpu.json", "total_ns"),
    "sweep-device": (DATA / "sweep_cpu_float32_epyc-2c-l3-32mib.json", "memory_bytes"),  # a dict of Any
}


@pytest.mark.parametrize("token", BAD)
@pytest.mark.parametrize("reader", sorted(RECORDS))
def test_a_record_holding_a_non_finite_number_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reader: str, token: str
) -> None:
    source, key = RECORDS[reader]
    path = _write(tmp_path, f"{reader}.json", _first(source.read_text(), key, token))
    line = refused(analyze(capsys, path), path)
    assert "a record may hold" in line, line


@pytest.mark.parametrize("reader", ["sweep", "lesson1", "decode"])
def test_a_record_faster_than_any_device_is_not_a_plausible_measurement(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reader: str
) -> None:
    source, key = RECORDS[reader]
    path = _write(tmp_path, f"{reader}.json", _first(source.read_text(), key, "1e-30"))
    line = refused(analyze(capsys, path), path)
    assert ": not a plausible measurement: " in line, line
    assert "s per call, under the 100 ns that any call takes on any device" in line, line


def test_a_sweep_claiming_bandwidth_beyond_any_memory_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # 2 us a call, as measured, for 2^50 elements of 4 bytes, read and written: ~4e3 TB/s
    data = json.loads((DATA / "sweep_cpu_float32_epyc-2c-l3-32mib.json").read_text())
    data["rows"][0].update(log2=50, elements=2**50, tensor_bytes=2**52, bytes_per_call=2**53)
    path = _write(tmp_path, "sweep.json", json.dumps(data))
    line = refused(analyze(capsys, path), path)
    from nsightlab import units  # the bound follows the spec table's fastest memory
    from nsightlab.specs import bounds

    assert "not a plausible measurement: size 2^50: " in line, line
    assert f"above {units.tbps(bounds.MAX_BYTES_PER_S)} (20x the fastest memory in the spec table" in line, line


def test_the_tutorials_own_records_are_plausible(capsys: pytest.CaptureFixture[str]) -> None:
    for source, _ in RECORDS.values():
        r = analyze(capsys, source)
        assert r.code == 0, r


def test_a_stored_run_holding_infinity_is_damaged_naming_its_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nsl_home: Path
) -> None:
    made = run_cli(capsys, "analyze", str(DATA / "sweep_cpu_float32_epyc-2c-l3-32mib.json"), "--json")
    assert made.code == 0
    r = run_cli(capsys, "sweep", "--local", "--device", "cpu", "--sizes", "10,12", "--iters", "2", "--warmup", "0")
    assert r.code == 0, r
    [run] = list((nsl_home / "runs").iterdir())
    result = run / "result.json"
    result.write_text(_first(result.read_text(), "seconds_per_call", "Infinity"))
    line = refused(analyze(capsys, run), result)
    assert "Infinity is not a number a record may hold" in line, line
    shown = run_cli(capsys, "runs", "show", run.name[-6:])
    assert shown.code == 2 and str(result) in shown.err, shown


def test_a_fleet_result_holding_nan_is_damaged_naming_its_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nsl_home: Path
) -> None:
    run = nsl_home / "runs" / "20260101T000000Z-fleet-float32-abc123"
    (run / "raw").mkdir(parents=True)
    (run / "meta.json").write_text(
        json.dumps(
            {"id": "abc123", "kind": "fleet", "name": "float32", "created": "2026-01-01T00:00:00Z", "target": "x"}
        )
    )
    entry = {"instance_type": "g6.xlarge", "node": None, "gpu_product": None, "status": "measured", "dram_tbps": 1}
    doc = {"kind": "fleet", "fleet_id": "abc123", "context": "c", "namespace": "n", "dtype": "float32"}
    text = json.dumps({**doc, "entries": [entry], "types": [], "notes": []}).replace(
        '"dram_tbps": 1', '"dram_tbps": NaN'
    )
    (run / "result.json").write_text(text)
    line = refused(analyze(capsys, run), run / "result.json")
    assert "NaN is not a number a record may hold" in line, line


# ---------------------------------------------------------------------------- exports: nsys, ncu, Kineto


def _csv_cell(path: Path, line: int, column: int, value: str) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        rows = path.read_text().splitlines(keepends=True)
        cells = rows[line].split(",")
        cells[column] = value
        rows[line] = ",".join(cells)
        out = tmp_path / path.name
        out.write_text("".join(rows))
        return out

    return make


EXPORTS = {
    "nsys-kern-sum": (FIXTURES / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv", 1, 1),
    "nsys-gpu-trace-start": (DATA / "traces" / "vernier_nsys2026.3.1_rtx5000ada_cuda_gpu_trace.csv", 1, 0),
    "nsys-gpu-trace-duration": (DATA / "traces" / "vernier_nsys2026.3.1_rtx5000ada_cuda_gpu_trace.csv", 1, 1),
}


@pytest.mark.parametrize("value", CSV_BAD)
@pytest.mark.parametrize("export", sorted(EXPORTS))
def test_an_nsys_export_holding_a_non_finite_number_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, export: str, value: str
) -> None:
    source, line, column = EXPORTS[export]
    path = _csv_cell(source, line, column, value)(tmp_path)
    text = refused(analyze(capsys, path), path)
    assert f"{path}:2: " in text and ("not a finite number" in text or "out of range" in text or "not a number" in text)


@pytest.mark.parametrize("value", CSV_BAD)
def test_an_ncu_export_holding_a_non_finite_number_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: str
) -> None:
    source = FIXTURES / "ncu" / "04_ncu_csv_section_SpeedOfLight_cutlass_gemm_rtx5090.csv"
    text = source.read_text().replace('"DRAM Frequency","Ghz","13.78"', f'"DRAM Frequency","Ghz","{value}"', 1)
    assert text != source.read_text()
    path = _write(tmp_path, source.name, text)
    r = analyze(capsys, path)
    if value == "NaN":  # ncu writes n/a (and nan) for a metric it has no value for: no value, not a number
        assert r.code == 0, r
        return
    line = refused(r, path)
    assert f"{path}:2: '{value}' is not a finite number" in line, line


@pytest.mark.parametrize("value", [*BAD, "1e30", "99999999999999999999999"])
@pytest.mark.parametrize("key", ["ts", "dur"])
def test_a_kineto_trace_with_a_non_finite_time_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, key: str, value: str
) -> None:
    with gzip.open(DATA / "traces" / "hta_ns_resolution_rank0.pt.trace.json.gz", "rt") as f:
        text = f.read()
    kernel = text.index('"cat": "kernel"')
    start = text.rindex("{", 0, kernel)
    event = text[start : text.index("}", kernel) + 1]
    text = text.replace(event, _first(event, key, value), 1)
    path = tmp_path / "trace.pt.trace.json"
    path.write_text(text)
    line = refused(analyze(capsys, path), path)
    assert "event without a numeric ts/dur" in line, line


def test_a_lab_command_reads_its_scripts_record_with_the_same_check(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nsl_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `sweep --local` whose script (a stand-in for a broken timer) reports 1e-30 s a call
    from nsightlab import assets

    doc = json.loads((DATA / "sweep_cpu_float32_epyc-2c-l3-32mib.json").read_text())
    for row in doc["rows"]:
        row["seconds_per_call"], row["batch_seconds_per_call"] = 1e-30, [1e-30] * 5
    script = tmp_path / "sweep.py"
    script.write_text(f"import sys\nopen(sys.argv[sys.argv.index('--json') + 1], 'w').write({json.dumps(doc)!r})\n")
    real = assets.lab_script
    monkeypatch.setattr(assets, "lab_script", lambda name: script if name == "sweep.py" else real(name))
    r = run_cli(capsys, "sweep", "--local", "--device", "cpu", "--sizes", "10,12")
    assert r.code == 2, r
    line = r.err.strip().splitlines()[-1]
    assert ": not a plausible measurement: size 2^10: 1e-30 s per call, under the 100 ns" in line, line
    assert not (nsl_home / "runs").exists() or not any((nsl_home / "runs").iterdir())  # nothing stored


def _colocate_record(step_s: str) -> str:
    """colocate.py's JSON (the fields nsightlab reads) with one copy's median step as given, raw."""
    copy = '{"copy": 0, "median_step_s": %s, "p90_step_s": 0.002, "tokens_per_s": 500.0, "bytes_per_step": 1048576}'
    run = (
        '{"sharing": "time-slicing", "copies": 1, "per_copy": [' + copy % step_s + '], "median_step_s": 0.002, '
        '"p90_step_s": 0.002, "aggregate_tokens_per_s": 500.0, "aggregate_bytes_per_s": 5.2e8}'
    )
    return '{"kind": "colocate", "batch": 1, "tokens": 8, "prompt_len": 16, "runs": [' + run + "]}"


@pytest.mark.parametrize("step_s", [*BAD, "1e-30"])
def test_a_colocate_record_holding_no_measurement_is_refused(tmp_path: Path, step_s: str) -> None:
    """`pack colocate` and a device run's read-back take colocate.py's JSON through the same
    checks: no non-finite number, no step faster than any call can be."""
    from nsightlab.errors import ParseError
    from nsightlab.parse.records.colocate_record import load_colocate_record

    assert load_colocate_record(_write(tmp_path, "ok.json", _colocate_record("0.002"))).runs[0].copies == 1
    with pytest.raises(ParseError) as e:
        load_colocate_record(_write(tmp_path, "colocate.json", _colocate_record(step_s)))
    expected = "not a plausible measurement" if step_s == "1e-30" else "a record may hold"
    assert expected in str(e.value) and "colocate.json" in str(e.value)
