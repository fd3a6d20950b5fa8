"""Sweeps on disk: a sweep JSON file, a stored sweep run, and two stored sweeps compared
(nothing run)."""

from __future__ import annotations

from pathlib import Path

from nsightlab.analysis.sweep_result import SweepCompare, SweepResult, build_result, compare_results
from nsightlab.errors import ParseError, UsageError
from nsightlab.models import NonFiniteError, loads
from nsightlab.parse.records.sweep_record import SweepRecord, record_from_json
from nsightlab.runs import store


def load_record(path: Path) -> SweepRecord:
    """A sweep JSON from disk: the script's own, or the `record` inside a stored result."""
    try:
        data = loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path} does not exist") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    except NonFiniteError as e:
        raise ParseError(e.msg, source=path, line=e.lineno) from None
    except ValueError as e:
        raise ParseError(f"not valid JSON ({e})", source=path) from None

    return record_from_json(data, source=path)


def analyze_record_file(path: Path) -> SweepResult:
    """The analysed result of a sweep JSON on disk (what `nsightlab analyze FILE` shows)."""

    return build_result(load_record(path), target=f"file {path}", source=str(path))


def load_sweep_run(ref: str) -> SweepResult:
    """A finished sweep from the run store: id prefix, folder prefix, path, or `latest`
    (the latest complete one: a damaged or unfinished sweep is passed over)."""

    if ref in ("latest", "last"):
        done = [
            s
            for s in map(store.inspect, store.all_runs())
            if s.complete and s.meta is not None and s.meta.kind == "sweep"
        ]
        if not done:
            raise UsageError("there is no finished sweep run yet", hint="Make one with `nsightlab sweep`.")
        status = done[-1]
    else:
        status = store.inspect(store.resolve(ref))
    if status.meta is not None and status.meta.kind != "sweep":
        raise UsageError(f"run {status.run.folder} is a {status.meta.kind} run, not a sweep")
    if not isinstance(status.result, SweepResult):
        assert status.error is not None
        raise status.error
    return status.result


def compare_runs(ref_a: str, ref_b: str) -> SweepCompare:
    """Compare two stored sweeps without running anything."""

    a, b = load_sweep_run(ref_a), load_sweep_run(ref_b)
    if a.run_id is not None and a.run_id == b.run_id:
        raise UsageError(f"'{ref_a}' and '{ref_b}' are the same run ({a.run_id})")
    return compare_results(a, b)
