"""`analyze` of nsys's own database: a report's SQLite export (`NAME.sqlite`), and a
`.nsys-rep` exported to one with this machine's nsys.

From one file, the tables the `nsys stats` CSV exports of the same report give (kernels by
demangled name as `cuda_gpu_kern_sum` groups them, NVTX ranges with the kernels launched
inside them, CUDA API calls, memory operations, the GPU's name from the report's own GPU
table) and the step anatomy of its timeline (`steps`, `trace_summary`, `trace_notes`), as a
`ProfileResult` with `nsys_input: "sqlite"`. The file is only read (see
`nsightlab.parse.nsys_sqlite`); a `.nsys-rep` is exported into a temporary folder, never
beside it.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from nsightlab.errors import ParseError, UsageError
from nsightlab.parse.apicalls import is_kernel_launch
from nsightlab.parse.nsys_sqlite import CUDA_TABLES, MEMCPY, MEMSET, NVTX, RUNTIME, NsysSqlite
from nsightlab.parse.nsys_sqlite_report import NO_NVTX, build_report
from nsightlab.parse.nsys_sqlite_trace import SqliteTrace
from nsightlab.runs.timeline import TraceOptions, attach_steps, sqlite_anatomy

if TYPE_CHECKING:
    from nsightlab.analysis.profile_models import ProfileResult

# How long a local `nsys export` may take (a large report takes minutes).
EXPORT_TIMEOUT_S = 1800
GROUPING: Literal["demangled"] = "demangled"  # cuda_gpu_kern_sum's default: a kernel per demangled name


def export_command(rep: Path, out: Path, nsys_bin: str = "nsys") -> list[str]:
    """The `nsys export` that writes `rep`'s SQLite export to `out`."""
    return [nsys_bin, "export", "--type", "sqlite", "--output", str(out), "--force-overwrite", "true", str(rep)]


@contextmanager
def exported_sqlite(rep: Path) -> Iterator[Path]:
    """`rep`'s SQLite export, made with the local nsys in a temporary folder (removed after).

    Without nsys here: UsageError (exit 2) with the command to run where nsys is."""
    nsys_bin = shutil.which("nsys")
    if nsys_bin is None:
        beside = rep.with_suffix(".sqlite")
        raise UsageError(
            f"{rep} is an Nsight Systems report and nsys is not installed here to export it",
            hint=f"Run where nsys is: `{shlex.join(export_command(rep, beside))}`, then "
            f"`{shlex.join(['nsightlab', 'analyze', str(beside)])}`.",
        )
    with tempfile.TemporaryDirectory(prefix="nsightlab-export-") as tmp:
        out = Path(tmp) / (rep.stem + ".sqlite")
        try:
            done = subprocess.run(
                export_command(rep, out, nsys_bin),
                capture_output=True,
                text=True,
                check=False,
                timeout=EXPORT_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            raise UsageError(f"nsys export of {rep} took over {EXPORT_TIMEOUT_S} s: stopped") from None
        if done.returncode != 0 or not out.is_file():
            tail = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or [""])[-1][:300]
            raise UsageError(
                f"nsys export could not export {rep} (exit {done.returncode}): {tail}",
                hint="Check that the report opens in nsys",
            )
        yield out


def sqlite_result(
    path: Path,
    opts: TraceOptions,
    *,
    record_path: Path | None = None,
    script: str | None = None,
    target: str | None = None,
    anywork: bool = False,
    source: Path | None = None,
) -> ProfileResult:
    """The tables and the step anatomy of an nsys SQLite export (with the lesson1 JSON of
    its run, when given). ParseError (exit 2) for a file that is not a readable nsys
    export, or (unless `anywork`: a profile's own capture) one that holds neither CUDA nor
    NVTX data (a CPU-only capture). `source` is what a command the notes offer names (default:
    `path`; a run's folder for a run's own export, so the stored notes and `analyze RUN` agree)."""
    from nsightlab.analysis.profile_result import build_profile
    from nsightlab.parse.records.lesson1_record import load_record

    with SqliteTrace.open(path) as trace:
        db = trace.db
        if not anywork and not any(db.has(t, "start") for t in CUDA_TABLES) and not db.has(NVTX, "start"):
            raise ParseError(
                "holds no CUDA and no NVTX data: a capture of CPU activity only",
                source=path,
                hint="Profile with CUDA and NVTX traced (nsys profile -t cuda,nvtx)",
            )
        report = build_report(trace)
        anatomy = sqlite_anatomy(trace, opts.step_range)
        device = _device(trace)
        impossible = _impossible_memops(db)
        cuda_asked = _cuda_was_traced(db)
    cuda = any(db.has(t, "start") for t in CUDA_TABLES)
    if not cuda:
        why = (
            "CUDA was traced, and nsys collected no CUDA event (the process made no CUDA call nsys saw)"
            if cuda_asked
            else "traced without `-t cuda`"
        )
        report.skipped.insert(0, f"no CUDA in this report (no kernel, memory or CUDA API table): {why}")
    if impossible:
        report.skipped.append(impossible)
    launched = [a for a in report.cuda_api or [] if is_kernel_launch(a.name)]
    if launched and not report.kernels:
        calls = sum(a.num_calls for a in launched)
        report.skipped.insert(
            0,
            f"the CUDA API table holds {calls} kernel launch{'es' if calls != 1 else ''} "
            f"({', '.join(a.name for a in launched[:3])}) but the report has no kernel records: nsys recorded the "
            "calls, not the GPU's work (as where it cannot trace GPU activity, such as some WSL 2 set-ups, or when "
            "the process ended before its activity was flushed), so nothing here times a kernel",
        )
    record = load_record(record_path) if record_path else None
    result = build_profile(
        report,
        record,
        script=script or path.stem,
        profiler="nsys",
        target=target or str(path),
        versions={"nsys": report.nsys_version},
        device_name=device,
    )
    if result.timing_source == "none: no kernel times per NVTX range":  # the CSV's advice does not apply
        why = (
            ""
            if db.has(RUNTIME, "start")
            else " (the report has no CUDA API calls to tell where kernels were launched)"
        )
        # without CUDA, one note says so already
        result.notes = [
            f"no kernel was launched inside the NVTX ranges{why}, so no rates" if "nvtx_kern_sum" in n else n
            for n in result.notes
            if cuda or "nvtx_kern_sum" not in n
        ]
    if NO_NVTX in report.skipped and result.timing_source == "none: no NVTX ranges":
        # one note for the missing ranges: the report's (what the export lacks), with the how-to
        from nsightlab.analysis.explain.profile_words import NVTX_HOWTO

        result.notes = [n for n in result.notes if not n.startswith("no NVTX ranges in this profile")]
        report.skipped[report.skipped.index(NO_NVTX)] = (
            f"no NVTX in this report (it has no NVTX_EVENTS table), so no per-range times or rates: {NVTX_HOWTO}"
        )
    result.notes.extend(report.skipped)
    result.notes.extend(stale_notes(path))
    result.kernel_grouping = GROUPING if report.kernels is not None else None
    result.nsys_input = "sqlite"
    if anatomy is not None:
        attach_steps(result, anatomy, opts, source or path)
    elif opts.used:
        raise UsageError(
            f"--step-range and --weights-gb need a GPU timeline, and {path} holds no GPU operation",
            hint="Give a report captured with `-t cuda`",
        )
    return result


def stale_notes(path: Path) -> list[str]:
    """A note when the report beside the export is newer than it: nsys stats reuses such
    an export without complaint only when it is fresh."""
    rep = path.with_suffix(".nsys-rep")
    try:
        if rep.is_file() and rep.stat().st_mtime > path.stat().st_mtime:
            cmd = shlex.join(export_command(rep, path))
            return [f"{path.name} is older than {rep.name} beside it: it may not hold that report; `{cmd}`"]
    except OSError:
        pass
    return []


def _cuda_was_traced(db: NsysSqlite) -> bool:
    """Whether the capture asked for CUDA (`CAPTURE_EVENT_TYPE` `Cuda` in META_DATA_CAPTURE,
    nsys 2023 and later); False where the export does not say."""
    if not db.has("META_DATA_CAPTURE", "name", "value"):
        return False
    sql = "SELECT 1 FROM META_DATA_CAPTURE WHERE name = 'CAPTURE_EVENT_TYPE' AND value = 'Cuda' LIMIT 1"
    return any(True for _ in db.query(sql))


def _impossible_memops(db: NsysSqlite) -> str | None:
    """A note for memory copies and sets whose bytes no memory moves in their recorded
    time (over `bounds.MAX_BYTES_PER_S`): the export's figures, shown as recorded."""
    from nsightlab import units
    from nsightlab.specs.bounds import MAX_BYTES_PER_S

    per_ns = MAX_BYTES_PER_S / 1e9
    found: list[tuple[float, int, int, str]] = []  # (bytes per ns, bytes, ns, what)
    for table, what in ((MEMCPY, "copy"), (MEMSET, "set")):
        if not db.has(table, "start", "end", "bytes"):
            continue
        sql = f'SELECT bytes, "end" - start FROM {table} WHERE "end" > start AND bytes > ? * ("end" - start)'
        for size, ns in db.query(sql, (per_ns,)):
            if isinstance(size, int) and isinstance(ns, int) and ns > 0:
                found.append((size / ns, size, ns, what))
    if not found:
        return None
    rate, size, ns, what = max(found)
    return (
        f"{len(found)} memory operation(s) record more bytes than any memory moves in their time (the fastest, a "
        f"{what}: {units.size(size)} in {units.duration(ns / 1e9)}, {rate / 1e3:,.0f} TB/s, where no memory is "
        f"faster than {units.tbps(MAX_BYTES_PER_S)}): the export's own figures, shown as recorded, not a measurement"
    )


def _device(trace: SqliteTrace) -> str | None:
    """The name of the GPU the first GPU operation ran on (`NAME (ID)` without its ID);
    without GPU operations, the report's one GPU where its GPU table names one product."""
    from nsightlab.analysis.decode_models import device_name_of

    cols = trace.gpu_columns()
    if len(cols.stream):
        return device_name_of(cols.streams[cols.stream[0]][0])
    names = set(trace.db.gpu_names().values())
    return names.pop() if len(names) == 1 else None
