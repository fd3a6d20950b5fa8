"""`profile`: a script under Nsight Systems (or torch.profiler) -> kernel table, rates, lesson.

`build_profile()` is pure: parsed tables + the script's work description in, a
`ProfileResult` out. `run_profile()` drives a Target: copies the script, runs the
tutorial's `nsys profile -o BASE -f true -t cuda,nvtx python3 SCRIPT`, exports the
reports that matter with one `nsys stats --force-export=true --format csv`, brings the
CSVs, the script's JSON and the .nsys-rep back into the run store, and only then
returns the result for printing.
"""

from __future__ import annotations

import json
import posixpath
import shlex
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from nsightlab.analysis import gpus
from nsightlab.analysis import rates as analysis
from nsightlab.errors import ParseError, RemoteCommandError, UsageError
from nsightlab.parse import names, nsys
from nsightlab.runs.store import RunMeta, new_run

if TYPE_CHECKING:
    from nsightlab.measure.targets import Target
    from nsightlab.present.console import Env

Profiler = Literal["nsys", "torch"]
BUILTIN = {"lesson1": "lesson1.py"}
BASE = "nsightlab"
# The reports that matter, in this order of preference for per-range timing.
WANTED: tuple[nsys.ReportId, ...] = (
    "cuda_gpu_kern_sum",
    "nvtx_sum",
    "nvtx_kern_sum",
    "nvtx_gpu_proj_sum",
    "cuda_gpu_trace",
    "cuda_gpu_mem_time_sum",
)


class KernelLine(BaseModel):
    name: str
    short_name: str
    kind: str
    instances: int
    total_ns: float
    avg_ns: float | None
    time_pct: float | None


class RangeLine(BaseModel):
    """One timed NVTX range of the script: its kernels, and its rates."""

    name: str
    calls: int | None
    kernel: str | None  # the kernel that takes most of the range's GPU time (short name)
    kernel_full: str | None
    kernel_instances: int | None  # launches inside the timed range
    gpu_ns: float | None  # GPU time of the range's kernels, all calls
    rates: analysis.Rates | None


class ProfileResult(BaseModel):
    kind: Literal["profile"] = "profile"
    run_id: str | None = None
    script: str
    profiler: Profiler
    target: str
    device_name: str | None
    device_type: str | None
    spec_name: str | None
    versions: dict[str, str | None] = Field(default_factory=dict)
    kernels: list[KernelLine]
    ranges: list[RangeLine]
    timing_source: str
    lesson: list[str]
    notes: list[str]
    files: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------------------- pure part


def _range_name(name: str) -> str:
    # newer nsys prefixes pushed ranges with ':'
    return name.lstrip(":").strip()


def kernel_lines(report: nsys.NsysReport) -> list[KernelLine]:
    rows = sorted(report.kernels or [], key=lambda k: -k.total_ns)
    return [
        KernelLine(
            name=k.name,
            short_name=names.short_kernel_name(k.name),
            kind=names.kernel_kind(k.name),
            instances=k.instances,
            total_ns=k.total_ns,
            avg_ns=k.avg_ns,
            time_pct=k.time_pct,
        )
        for k in rows
    ]


def range_gpu_time(report: nsys.NsysReport, profiler: Profiler = "nsys") -> tuple[dict[str, tuple[float, int, str | None]], str]:
    """GPU time of each range's kernels: {range: (total ns, launches, main kernel)}, source."""
    out: dict[str, tuple[float, int, str | None]] = {}
    if report.nvtx_kernels:
        by_range: dict[str, list[nsys.NvtxKernelRow]] = {}
        for row in report.nvtx_kernels:
            by_range.setdefault(_range_name(row.range_name), []).append(row)
        for rname, rows in by_range.items():
            main = max(rows, key=lambda r: r.total_ns)
            out[rname] = (sum(r.total_ns for r in rows), sum(r.kernel_instances for r in rows), main.kernel_name)
        if profiler == "torch":
            return out, "ops inside each labelled range (torch.profiler)"
        return out, "kernels inside each NVTX range (nvtx_kern_sum)"
    if report.nvtx_gpu_proj:
        for proj in report.nvtx_gpu_proj:
            out[_range_name(proj.range_name)] = (proj.total_proj_ns, proj.total_gpu_ops or 0, None)
        return out, "GPU projection of each NVTX range (nvtx_gpu_proj_sum)"
    return out, ""


def build_profile(
    report: nsys.NsysReport,
    record: analysis.Lesson1Record | None,
    *,
    script: str,
    profiler: Profiler,
    target: str,
    versions: dict[str, str | None] | None = None,
    device_name: str | None = None,
) -> ProfileResult:
    """Kernel table + per-range rates from the parsed tables and the script's JSON."""
    kernels = kernel_lines(report)
    per_range, source = range_gpu_time(report, profiler)
    notes: list[str] = []
    lesson: list[str] = []
    ranges: list[RangeLine] = []
    spec = gpus.lookup(record.device.name if record else device_name)
    timing_source = (source if profiler == "torch" else f"nsys: {source}") if source else "the script's own timing"
    seconds: dict[str, float] = {}
    if record is not None:
        for work in record.ranges:
            got = per_range.get(work.name)
            if got and got[0] > 0 and work.calls:
                seconds[work.name] = got[0] / 1e9 / work.calls
        if record.ranges and not seconds:
            notes.append("no per-range GPU times in the profile: rates use the script's own timing (CUDA events)")
            timing_source = "the script's own timing"
        analysed = analysis.analyze_lesson1(record, spec, seconds_per_call=seconds or None, timing_source=timing_source)
        by_name = {r.name: r for r in analysed.ranges}
        for work in record.ranges:
            got = per_range.get(work.name)
            ranges.append(
                RangeLine(
                    name=work.name,
                    calls=work.calls,
                    kernel=names.short_kernel_name(got[2]) if got and got[2] else None,
                    kernel_full=got[2] if got else None,
                    kernel_instances=got[1] if got else None,
                    gpu_ns=got[0] if got else None,
                    rates=by_name.get(work.name),
                )
            )
        lesson.extend(analysed.lesson)
        notes.extend(analysed.notes)
        device_type: str | None = analysed.device_type
        spec_name = analysed.spec_name
        device_name = analysed.device_name
        if record.scaled_down:
            notes.append("the script ran scaled down (no GPU): sizes are smaller than the tutorial's")
        lesson.extend(_instances_lesson(kernels, record, per_range))
    else:
        for rname, (total, launches, main) in sorted(per_range.items()):
            ranges.append(RangeLine(name=rname, calls=None, kernel=names.short_kernel_name(main) if main else None, kernel_full=main, kernel_instances=launches, gpu_ns=total, rates=None))
        if per_range:
            notes.append("the script wrote no work description (bytes, FLOPs per call): ranges are shown without rates")
        device_type = None
        spec_name = spec.name if spec else None
    return ProfileResult(
        script=script,
        profiler=profiler,
        target=target,
        device_name=device_name,
        device_type=device_type,
        spec_name=spec_name,
        versions=versions or {},
        kernels=kernels,
        ranges=ranges,
        timing_source=timing_source,
        lesson=lesson,
        notes=notes,
    )


def _instances_lesson(kernels: list[KernelLine], record: analysis.Lesson1Record, per_range: dict[str, tuple[float, int, str | None]]) -> list[str]:
    """Why the kernel summary says 23 and the rates use 20."""
    out: list[str] = []
    for work in record.ranges:
        got = per_range.get(work.name)
        if not got or not got[2]:
            continue
        summary = next((k for k in kernels if k.name == got[2]), None)
        if summary is None:
            continue
        if summary.instances > got[1]:
            out.append(
                f"The kernel summary counts {summary.instances} launches of {summary.short_name}: "
                f"{work.warmup} warm-up{'s' if work.warmup != 1 else ''} + {work.calls} timed (and any other use). "
                f"The rates use only the {got[1]} inside the timed range {work.name}, "
                "so first-use costs (CUDA init, kernel selection) do not pollute them."
            )
    return out


def load_record(path: Path) -> analysis.Lesson1Record | None:
    """The script's work description (lesson1 JSON), or None for a script that wrote none."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ParseError(f"not valid JSON ({e.msg})", source=path, line=e.lineno) from None
    if not isinstance(data, dict) or data.get("kind") != "lesson1":
        return None
    try:
        return analysis.Lesson1Record.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ParseError(f"bad work description at {'.'.join(str(p) for p in err['loc'])}: {err['msg']}", source=path) from None


def report_from_torch(data: dict[str, Any], source: str) -> nsys.NsysReport:
    """torchprof.py's JSON as the same tables nsys gives."""
    try:
        return nsys.NsysReport(
            kernels=[nsys.KernelSummaryRow.model_validate(k) for k in data.get("kernels") or []],
            nvtx=[nsys.NvtxRangeRow.model_validate(r) for r in data.get("nvtx") or []],
            nvtx_kernels=[nsys.NvtxKernelRow.model_validate(r) for r in data.get("nvtx_kernels") or []],
            sources={"torch.profiler": source},
        )
    except ValidationError as e:
        err = e.errors()[0]
        raise ParseError(f"bad torch.profiler table at {'.'.join(str(p) for p in err['loc'])}: {err['msg']}", source=source) from None


# ---------------------------------------------------------------------------- running it


def resolve_script(script: str) -> tuple[Path, str]:
    """A built-in lab script name or a path to the user's .py file."""
    from nsightlab import assets

    if script in BUILTIN:
        return assets.lab_script(BUILTIN[script]), script
    path = Path(script).expanduser()
    if not path.is_file():
        known = ", ".join(BUILTIN)
        raise UsageError(f"no script {script!r}: not a built-in ({known}) and no such file")
    if path.suffix != ".py":
        raise UsageError(f"{script} is not a Python script (.py)")
    return path, path.stem


def _streamer(env: Env) -> tuple[Any, Any, list[bytes]]:
    """Callbacks that show a remote command's output live on stderr, keeping its tail."""
    tail: list[bytes] = []
    partial = {1: b"", 2: b""}

    def make(channel: int) -> Any:
        def sink(data: bytes) -> None:
            buf = partial[channel] + data
            *lines, partial[channel] = buf.split(b"\n")
            for line in lines:
                text = line.decode("utf-8", "replace").rstrip("\r")
                env.note(f"  {text}")
                if channel == 2:
                    tail.append(line)
                    del tail[:-20]

        return sink

    return make(1), make(2), tail


def _last_error(tail: list[bytes]) -> str:
    for line in reversed(tail):
        text = line.decode("utf-8", "replace").strip()
        if text:
            return text[:300]
    return ""


def run_profile(
    env: Env,
    target: Target,
    meta_fields: dict[str, Any],
    *,
    script: str,
    script_args: list[str],
    profiler: Profiler,
    nsys_args: list[str],
) -> ProfileResult:
    """Profile `script` on `target`; the run is stored before the result is returned."""
    from nsightlab import assets

    local_script, name = resolve_script(script)
    builtin = script in BUILTIN
    if profiler == "nsys" and target.which("nsys") is None:
        raise RemoteCommandError(
            f"nsys (Nsight Systems) is not installed on {target.label}",
            returncode=127,
            hint="Use an image that ships it, or run the same tables under torch.profiler: `--profiler torch`.",
        )
    run, run_id = new_run("profile", name)
    wd = target.workdir()
    remote_script = posixpath.join(wd, local_script.name)
    target.put(local_script, remote_script)
    if builtin:
        target.put(assets.lab_script(assets.LAB_COMMON), posixpath.join(wd, assets.LAB_COMMON))
    work_json = posixpath.join(wd, f"{name}.json")
    argv_script = [target.python, remote_script, *(["--json", work_json] if builtin else []), *script_args]
    out_cb, err_cb, tail = _streamer(env)
    versions: dict[str, str | None] = {}
    fetched: list[str] = []
    if profiler == "nsys":
        versions["nsys"] = nsys.parse_nsys_version(target.run(["nsys", "--version"], what="nsys --version").out)
        base = posixpath.join(wd, BASE)
        argv = ["nsys", "profile", "-o", base, "-f", "true", "-t", "cuda,nvtx", *nsys_args, *argv_script]
        env.note(f"running on {target.label}: {shlex.join(argv)}")
        code = target.stream(argv, on_stdout=out_cb, on_stderr=err_cb, env={"TMPDIR": wd})
        if code != 0:
            raise RemoteCommandError(f"nsys profile failed on {target.label} (exit {code}): {_last_error(tail)}", returncode=code)
        listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
        if f"{BASE}.nsys-rep" not in listing:
            text = b"\n".join(tail).decode("utf-8", "replace")
            importer = nsys.detect_importer_error(text)
            raise RemoteCommandError(
                f"nsys wrote no {BASE}.nsys-rep on {target.label}" + (f": {importer}" if importer else ""),
                hint="A target-only nsys install writes only a .qdstrm: use the full Nsight Systems CLI in the image.",
            )
        helptext = target.run(["nsys", "stats", "--help-reports"], check=False).out
        have = nsys.available_reports(helptext)
        reports = [have[r] for r in WANTED if r in have] or ["cuda_gpu_kern_sum", "nvtx_sum"]
        stats = ["nsys", "stats", "--force-export=true", "--format", "csv", "-o", base, "-r", ",".join(reports), f"{base}.nsys-rep"]
        env.note(f"exporting: {shlex.join(stats)}")
        done = target.run(stats, check=False)
        try:
            nsys.check_stats_output(done.out + "\n" + done.err, source="nsys stats")
        except ParseError as e:
            raise RemoteCommandError(e.message, hint="nsightlab always passes --force-export=true; if you see this, the export on the target is stale or broken.") from None
        if done.returncode != 0:
            raise RemoteCommandError(f"nsys stats failed on {target.label} (exit {done.returncode}): {done.err.strip()[-300:]}", returncode=done.returncode)
        listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
        wanted_files = [f for f in listing if f.startswith(f"{BASE}_") and f.endswith(".csv")] + [f"{BASE}.nsys-rep"]
    else:
        prof_script = posixpath.join(wd, "torchprof.py")
        target.put(assets.lab_script("torchprof.py"), prof_script)
        prof_json = posixpath.join(wd, "torchprof.json")
        argv = [target.python, prof_script, "--out", prof_json, *argv_script[1:]]
        env.note(f"running on {target.label} under torch.profiler: {shlex.join(argv_script[1:])}")
        code = target.stream(argv, on_stdout=out_cb, on_stderr=err_cb)
        if code != 0:
            raise RemoteCommandError(f"the script failed on {target.label} (exit {code}): {_last_error(tail)}", returncode=code)
        wanted_files = ["torchprof.json"]
        listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
    if builtin and posixpath.basename(work_json) in listing:
        wanted_files.append(posixpath.basename(work_json))
    for f in wanted_files:
        target.get(posixpath.join(wd, f), run.raw / f)
        fetched.append(f"raw/{f}")
    # everything is here: parse, analyse, store, then return for printing
    if profiler == "nsys":
        report = nsys.merge_reports(nsys.parse_file(run.raw / f) for f in sorted(wanted_files) if f.endswith(".csv"))
        report.nsys_version = versions.get("nsys")
    else:
        path = run.raw / "torchprof.json"
        report = report_from_torch(json.loads(path.read_text(encoding="utf-8")), str(path))
    record = load_record(run.raw / posixpath.basename(work_json))
    if record is not None:
        versions.update({"torch": record.device.torch, "cuda": record.device.cuda, "python": record.device.python, "driver": record.device.driver})
    result = build_profile(report, record, script=name, profiler=profiler, target=target.label, versions=versions, device_name=meta_fields.get("gpu"))
    result.run_id = run_id
    result.files = fetched
    meta = RunMeta(
        id=run_id,
        kind="profile",
        name=name,
        created=datetime.now(timezone.utc),
        versions=versions,
        command=["nsightlab", "profile", script, *(["--profiler", profiler]), *(["--", *script_args] if script_args else [])],
        gpu=result.device_name or meta_fields.get("gpu"),
        headline=headline(result),
        **{k: v for k, v in meta_fields.items() if k in RunMeta.model_fields and k != "gpu"},
    )
    run.write_meta(meta)
    run.write_result(result)
    return result


def headline(result: ProfileResult) -> str | None:
    parts = []
    for r in result.ranges:
        if r.rates is None:
            continue
        if r.rates.flops_per_call and r.rates.intensity and r.rates.intensity > 10:
            parts.append(f"{r.name} {r.rates.tflops:.1f} TFLOPS")
        else:
            parts.append(f"{r.name} {r.rates.tbps:.2f} TB/s")
    return ", ".join(parts) or None
