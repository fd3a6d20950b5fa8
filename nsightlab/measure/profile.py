"""`profile`: a script under Nsight Systems (or torch.profiler) on a target.

`run_profile()` drives a Target: copies the script, runs the
tutorial's `nsys profile -o BASE -f true -t cuda,nvtx python3 SCRIPT`, exports the report
to SQLite with one `nsys export --type sqlite` (an nsys that cannot: the reports that
matter with one `nsys stats --force-export=true --format csv`), brings the export, the
script's JSON and the .nsys-rep back into the run store, and only then returns the result
(`nsightlab.runs.sqlite_input`, else `nsightlab.analysis.profile_result.build_profile` over the
CSVs) for printing; `nsys_input` in the result says which.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsightlab import assets
from nsightlab.analysis.explain.profile_words import headline
from nsightlab.analysis.profile_models import Profiler, ProfileResult
from nsightlab.analysis.profile_result import build_profile
from nsightlab.errors import ParseError, RemoteCommandError, UsageError
from nsightlab.measure.device import DevicePlan, no_gpu_error, ran_on_cpu_warning
from nsightlab.measure.work import LabWork
from nsightlab.models import NonFiniteError, loads
from nsightlab.parse import nsys
from nsightlab.parse.noise import is_library_noise
from nsightlab.parse.records.lesson1_record import load_record
from nsightlab.parse.records.torchprof_record import report_from_torch, torch_info
from nsightlab.runs.sqlite_input import sqlite_result
from nsightlab.runs.store import Run, RunMeta
from nsightlab.runs.store import remove as remove_run
from nsightlab.runs.timeline import TraceOptions

if TYPE_CHECKING:
    from nsightlab.env import Env
    from nsightlab.measure.targets import Target

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
    "cuda_gpu_mem_size_sum",
    "cuda_api_sum",
)
RAW_LOG = "profile.log"  # the command's output as it came, library noise included
TRACE = "trace.json.gz"  # torch.profiler's own Chrome trace (opens in Perfetto)


# ---------------------------------------------------------------------------- a server


@dataclass(frozen=True)
class Serving:
    """How the trace of a server (`profile --serving -- vllm serve ...`) is windowed.

    vLLM's profiling guide asks nsys to follow the worker processes it forks
    (`--trace-fork-before-exec=true`) and to trace the kernels inside CUDA graphs one by
    one (`--cuda-graph-trace=node`). A server never exits by itself, so the collection
    needs an end: by default the server's own cudaProfilerStart/Stop calls mark it (vLLM
    makes them on POST /start_profile and /stop_profile when started with
    `--profiler-config.profiler cuda`), and nsys ends the server when that range is over;
    with `duration`, a window of time after `delay` seconds instead, then nsys ends it.
    """

    delay: int | None = None
    duration: int | None = None

    def nsys_options(self) -> list[str]:
        opts = ["--trace-fork-before-exec=true", "--cuda-graph-trace=node"]
        if self.duration is not None:
            if self.delay:
                opts.append(f"--delay={self.delay}")
            opts.append(f"--duration={self.duration}")
        else:
            opts += ["--capture-range=cudaProfilerApi", "--capture-range-end=stop-shutdown"]
        return opts

    def describe(self) -> str:
        if self.duration is not None:
            start = f"after {self.delay} s" if self.delay else "from the start"
            return f"collecting for {self.duration} s {start}; then nsys ends the server"
        return (
            "collecting between the server's cudaProfilerStart and cudaProfilerStop (vLLM: start it with "
            "`--profiler-config.profiler cuda`, then POST /start_profile and /stop_profile, or run "
            "`vllm bench serve --profile`); then nsys ends the server"
        )


#: Environment for a server under nsys: vLLM's guide advises spawned workers, not forked.
SERVING_ENV = {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}


def command_name(command: list[str]) -> str:
    """A run name for a command: `vllm serve ...` is vllm-serve."""
    words = [posixpath.basename(command[0])]
    if len(command) > 1 and not command[1].startswith("-") and "/" not in command[1]:
        words.append(command[1])
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", "-".join(words)).strip("-.") or "command"


# ---------------------------------------------------------------------------- running it


def resolve_script(script: str) -> tuple[Path, str]:
    """A built-in lab script name or a path to the user's .py file."""

    if script in BUILTIN:
        return assets.lab_script(BUILTIN[script]), script
    path = Path(script).expanduser()
    if not path.is_file():
        known = ", ".join(BUILTIN)
        what = "not a regular file" if path.exists() else "no such file"
        raise UsageError(f"no script {script!r}: not a built-in ({known}) and {what}")
    if path.suffix != ".py":
        raise UsageError(f"{script} is not a Python script (.py)")
    return path, path.stem


def streamer(env: Env, log: bytearray | None = None) -> tuple[Any, Any, list[str]]:
    """Callbacks that show a remote command's output live on stderr, keeping the last
    lines of its stderr (stripped, blank ones left out) for error messages.

    Lines that libraries print by themselves (kineto's profiler_start/stop) stay off the
    terminal and out of the tail; `log`, when given, receives everything as it came.
    """
    tail: list[str] = []
    partial = {1: b"", 2: b""}

    def make(channel: int) -> Any:
        def sink(data: bytes) -> None:
            if log is not None:
                log.extend(data)
            buf = partial[channel] + data
            *lines, partial[channel] = buf.split(b"\n")
            for line in lines:
                text = line.decode("utf-8", "replace").rstrip("\r")
                if is_library_noise(text):
                    continue
                env.note(f"  {text}")
                if channel == 2 and text.strip():
                    tail.append(text.strip())
                    del tail[:-20]

        return sink

    return make(1), make(2), tail


def last_error(tail: list[str]) -> str:
    """The last line the command printed on stderr (what to show when it failed)."""
    return tail[-1][:300] if tail else ""


def _failed(target: Target, what: str, code: int, tail: list[str], plan: DevicePlan | None) -> RemoteCommandError:
    """The error for a script (or nsys around it) that exited non-zero: torch's missing GPU
    in nsightlab's words (exit 6, `nsightlab.measure.device`), else the last line it wrote."""
    lines = tail
    no_gpu = no_gpu_error(plan, code, lines) if plan is not None else None
    return no_gpu or RemoteCommandError(
        f"{what} failed on {target.label} (exit {code}): {last_error(tail)}", returncode=code
    )


@contextmanager
def _complete_or_removed(run: Run) -> Iterator[None]:
    """A run folder is complete, or it is not there."""
    try:
        yield
    except BaseException:
        remove_run(run)
        raise


def _require_nsys(target: Target, script: str | None) -> None:
    """nsys on the target, else what fits there: this machine can install it, a pod needs
    an image with it; a script (not a server) can run under torch.profiler instead."""
    if target.which("nsys") is not None:
        return
    here = getattr(target, "kube", None) is None  # this machine: no cluster behind it
    fix = "Install Nsight Systems here (`nsys` on PATH)" if here else "Use an image that ships it (lab.image)"
    if script is not None:
        torch = shlex.join(["nsightlab", "profile", script, *(["--local"] if here else []), "--profiler", "torch"])
        fix += f", or run the same tables under torch.profiler: `{torch}`"
    raise RemoteCommandError(
        f"nsys (Nsight Systems) is not installed on {target.label}", returncode=127, hint=fix + "."
    )


def _nsys_run(
    env: Env,
    target: Target,
    wd: str,
    command: list[str],
    *,
    options: list[str],
    env_vars: dict[str, str],
    server: bool = False,
    log: bytearray | None = None,
    plan: DevicePlan | None = None,
) -> tuple[list[str], list[str], str | None]:
    """`nsys profile` of `command`, then one `nsys stats` export of the reports that
    matter. Returns the files to fetch from `wd`, the listing of `wd` and nsys's version.

    A server does not exit by itself: nsys ends it when the collection is over, so its
    exit code says nothing; only a missing report is a failure then."""
    version = nsys.parse_nsys_version(target.run(["nsys", "--version"], what="nsys --version").out)
    base = posixpath.join(wd, BASE)
    argv = ["nsys", "profile", "-o", base, "-f", "true", "-t", "cuda,nvtx", *options, *command]
    env.note(f"running on {target.label}: {shlex.join(argv)}")
    out_cb, err_cb, tail = streamer(env, log)
    code = target.stream(argv, on_stdout=out_cb, on_stderr=err_cb, env={"TMPDIR": wd, **env_vars})
    if code != 0 and not server:
        raise _failed(target, "nsys profile", code, tail, plan)
    listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
    if f"{BASE}.nsys-rep" not in listing:
        text = "\n".join(tail)
        importer = nsys.detect_importer_error(text)
        if server and code != 0 and not importer:
            raise RemoteCommandError(
                f"the server ended on {target.label} (exit {code}) before nsys wrote a report: {last_error(tail)}",
                returncode=code,
            )
        raise RemoteCommandError(
            f"nsys wrote no {BASE}.nsys-rep on {target.label}" + (f": {importer}" if importer else ""),
            hint="A target-only nsys install writes only a .qdstrm: use the full Nsight Systems CLI in the image."
            if importer or not server
            else "Nothing was collected: the server never called cudaProfilerStart (see `nsightlab profile --help`), "
            "or use --duration.",
        )
    if server and code != 0:
        env.note(f"the server ended with exit {code} (nsys ends it when the collection is over)")
    exported = export_sqlite(env, target, wd)
    if exported is not None:
        return exported, listing, version
    helptext = target.run(["nsys", "stats", "--help-reports"], check=False).out
    have = nsys.available_reports(helptext)
    reports = [have[r] for r in WANTED if r in have] or ["cuda_gpu_kern_sum", "nvtx_sum"]
    wanted, listing = export_stats(env, target, wd, reports)
    return wanted, listing, version


def export_sqlite(env: Env, target: Target, wd: str) -> list[str] | None:
    """One `nsys export --type sqlite` of `wd`'s report: the files to fetch (the export and
    the report), or None when this nsys could not (too old: the CSV exports instead)."""
    base = posixpath.join(wd, BASE)
    argv = ["nsys", "export", "--type", "sqlite", "--output", f"{base}.sqlite", "--force-overwrite", "true"]
    argv.append(f"{base}.nsys-rep")
    env.note(f"exporting: {shlex.join(argv)}")
    done = target.run(argv, check=False)
    listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
    if done.returncode == 0 and f"{BASE}.sqlite" in listing:
        return [f"{BASE}.nsys-rep", f"{BASE}.sqlite"]  # the export copied last: not older than its report
    why = last_error([line for line in done.err.splitlines() if line.strip()]) or f"exit {done.returncode}"
    env.note(f"nsys export to SQLite did not work ({why}): exporting CSV tables with nsys stats instead")
    return None


def export_stats(env: Env, target: Target, wd: str, reports: Sequence[str]) -> tuple[list[str], list[str]]:
    """One `nsys stats --force-export=true --format csv` of `reports` (the names this nsys
    lists) from `wd`'s report. Returns the files to fetch and the listing of `wd`; the
    WARNING of a stale export is an error."""
    base = posixpath.join(wd, BASE)
    stats = [
        "nsys",
        "stats",
        "--force-export=true",
        "--format",
        "csv",
        "-o",
        base,
        "-r",
        ",".join(reports),
        f"{base}.nsys-rep",
    ]
    env.note(f"exporting: {shlex.join(stats)}")
    done = target.run(stats, check=False)
    try:
        nsys.check_stats_output(done.out + "\n" + done.err, source="nsys stats")
    except ParseError as e:
        raise RemoteCommandError(
            e.message,
            hint="nsightlab always passes --force-export=true; if you see this, the export on the target is stale or "
            "broken.",
        ) from None
    if done.returncode != 0:
        raise RemoteCommandError(
            f"nsys stats failed on {target.label} (exit {done.returncode}): {done.err.strip()[-300:]}",
            returncode=done.returncode,
        )
    listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
    wanted = [f for f in listing if f.startswith(f"{BASE}_") and f.endswith(".csv")] + [f"{BASE}.nsys-rep"]
    return wanted, listing


def run_profile(
    env: Env,
    target: Target,
    meta_fields: dict[str, Any],
    *,
    script: str,
    script_args: list[str],
    profiler: Profiler,
    nsys_args: list[str],
    serving: Serving | None = None,
    device: DevicePlan | None = None,
) -> ProfileResult:
    """Profile `script` on `target`; the run is stored before the result is returned
    (Ctrl-C: no run is stored).

    With `serving`, `script_args` is a server's command, run as it is (nothing is copied
    over), under the nsys options a server needs (see Serving).

    `device` (`nsightlab.measure.device.plan_device`): a built-in lab script gets its
    `--device`; a user's own script gets none, and where its ops ran is read from the
    profile afterwards (a CPU run on a target that requests a GPU is warned about)."""
    with LabWork("profile", target) as work:
        return _profile(
            work,
            env,
            target,
            meta_fields,
            script=script,
            script_args=script_args,
            profiler=profiler,
            nsys_args=nsys_args,
            serving=serving,
            device=device,
        )


def _profile(
    work: LabWork,
    env: Env,
    target: Target,
    meta_fields: dict[str, Any],
    *,
    script: str,
    script_args: list[str],
    profiler: Profiler,
    nsys_args: list[str],
    serving: Serving | None,
    device: DevicePlan | None,
) -> ProfileResult:
    if serving is not None:
        if profiler != "nsys":
            raise UsageError("--serving profiles under nsys only (drop --profiler torch)")
        if not script_args:
            raise UsageError(
                "--serving needs the server's command after --",
                hint="e.g. `nsightlab profile --serving -- vllm serve Qwen/Qwen2.5-0.5B --profiler-config.profiler "
                "cuda`.",
            )
        _require_nsys(target, None)
        name = command_name(script_args)
        run, run_id = work.new_run("profile", name)
        with _complete_or_removed(run):
            wd = target.workdir()
            env.note(f"profiling a server: {serving.describe()}")
            log = bytearray()
            wanted_files, _, version = _nsys_run(
                env,
                target,
                wd,
                list(script_args),
                options=[*serving.nsys_options(), *nsys_args],
                env_vars=SERVING_ENV,
                server=True,
                log=log,
            )
            command = ["nsightlab", "profile", "--serving", *_serving_flags(serving), "--", *script_args]
            return _finish(
                run,
                run_id,
                target,
                wd,
                wanted_files,
                meta_fields,
                name=name,
                profiler="nsys",
                versions={"nsys": version},
                work_json=None,
                command=command,
                log=bytes(log),
            )
    plan = device or DevicePlan(requested="auto", script_arg="auto", wants_gpu=False, place=f"on {target.label}")
    local_script, name = resolve_script(script)
    builtin = script in BUILTIN
    if profiler == "nsys":
        _require_nsys(target, script)
    if plan.note():
        env.note(str(plan.note()))
    run, run_id = work.new_run("profile", name)
    with _complete_or_removed(run):
        wd = target.workdir()
        remote_script = posixpath.join(wd, local_script.name)
        target.put(local_script, remote_script)
        # labcommon.py travels with every lab script: torchprof.py describes the device with it too
        if builtin or profiler == "torch":
            target.put(assets.lab_script(assets.LAB_COMMON), posixpath.join(wd, assets.LAB_COMMON))
        work_json = posixpath.join(wd, f"{name}.json")
        own_args = ["--json", work_json, "--device", plan.script_arg] if builtin else []
        argv_script = [target.python, remote_script, *own_args, *script_args]
        versions: dict[str, str | None] = {}
        log = bytearray()
        if profiler == "nsys":
            wanted_files, listing, versions["nsys"] = _nsys_run(
                env, target, wd, argv_script, options=nsys_args, env_vars={}, log=log, plan=plan
            )
        else:
            prof_script = posixpath.join(wd, "torchprof.py")
            target.put(assets.lab_script("torchprof.py"), prof_script)
            prof_json = posixpath.join(wd, "torchprof.json")
            argv = [
                target.python,
                prof_script,
                "--out",
                prof_json,
                "--trace",
                posixpath.join(wd, TRACE),
                *argv_script[1:],
            ]
            env.note(f"running on {target.label} under torch.profiler: {shlex.join(argv_script[1:])}")
            out_cb, err_cb, tail = streamer(env, log)
            code = target.stream(argv, on_stdout=out_cb, on_stderr=err_cb)
            if code != 0:
                raise _failed(target, "the script", code, tail, plan)
            listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
            wanted_files = ["torchprof.json"] + ([TRACE] if TRACE in listing else [])
        if builtin and posixpath.basename(work_json) in listing:
            wanted_files.append(posixpath.basename(work_json))
        command = [
            "nsightlab",
            "profile",
            script,
            *(["--profiler", profiler]),
            *(["--device", plan.requested] if plan.requested != "auto" else []),
            *(["--", *script_args] if script_args else []),
        ]
        result = _finish(
            run,
            run_id,
            target,
            wd,
            wanted_files,
            meta_fields,
            name=name,
            profiler=profiler,
            versions=versions,
            work_json=work_json,
            command=command,
            log=bytes(log),
            plan=plan,
            script_file=None if builtin else local_script.name,
        )
    for warning in result.warnings:
        env.warn(warning)
    return result


def _serving_flags(serving: Serving) -> list[str]:
    flags = [f"--delay={serving.delay}"] if serving.delay else []
    return flags + ([f"--duration={serving.duration}"] if serving.duration is not None else [])


def _finish(
    run: Run,
    run_id: str,
    target: Target,
    wd: str,
    wanted_files: list[str],
    meta_fields: dict[str, Any],
    *,
    name: str,
    profiler: Profiler,
    versions: dict[str, str | None],
    work_json: str | None,
    command: list[str],
    log: bytes = b"",
    plan: DevicePlan | None = None,
    script_file: str | None = None,
) -> ProfileResult:
    """Bring the files back into the run, parse and analyse them, store meta and result.

    Where the work ran comes from what came back (the profile, the script's JSON), never
    from the node: `script_file` (a user's own script) gets the warning of a CPU run on a
    target that requests a GPU."""
    (run.raw / RAW_LOG).write_bytes(log)
    fetched: list[str] = [f"raw/{RAW_LOG}"]
    for f in wanted_files:
        target.get(posixpath.join(wd, f), run.raw / f)
        fetched.append(f"raw/{f}")
    # everything is here: parse, analyse, store, then return for printing
    info = None
    report: nsys.NsysReport | None = None
    export = next((f for f in wanted_files if f.endswith(".sqlite")), None)
    record_path = run.raw / posixpath.basename(work_json) if work_json else None
    if profiler == "nsys" and export is None:
        report = nsys.merge_reports(nsys.parse_file(run.raw / f) for f in sorted(wanted_files) if f.endswith(".csv"))
        report.nsys_version = versions.get("nsys")
    elif profiler == "torch":
        path = run.raw / "torchprof.json"
        try:
            data = loads(path.read_text(encoding="utf-8"))
        except ValueError as e:
            raise ParseError(f"not valid JSON ({e.msg if isinstance(e, NonFiniteError) else e})", source=path) from None
        report = report_from_torch(data, str(path))
        info = torch_info(data)
    record = load_record(record_path) if record_path else None
    if record is not None:
        versions.update(
            {
                "torch": record.device.torch,
                "cuda": record.device.cuda,
                "python": record.device.python,
                "driver": record.device.driver,
            }
        )
    elif info is not None and info.device:
        versions.update({k: info.device.get(k) for k in ("torch", "cuda", "python", "driver") if k in info.device})
    if report is None:
        assert export is not None
        result = sqlite_result(
            run.raw / export,
            TraceOptions(),
            record_path=record_path,
            script=name,
            target=target.label,
            anywork=True,
            source=run.path,
        )
        result.versions = versions
    else:
        result = build_profile(
            report, record, script=name, profiler=profiler, target=target.label, versions=versions, torch=info
        )
        if profiler == "nsys":
            result.nsys_input = "stats"
    result.run_id = run_id
    result.run_dir = str(run.path)
    result.files = fetched
    if TRACE in wanted_files:
        result.trace = f"raw/{TRACE}"
    if plan is not None:
        result.device_requested = plan.requested
        if plan.on_purpose_cpu:
            result.notes.append(f"measured on the CPU on purpose (--device cpu), {plan.place} with a GPU")
        warning = ran_on_cpu_warning(plan, result.device_type, script_file) if script_file else None
        if warning:
            result.warnings.append(warning)
    meta = RunMeta(
        id=run_id,
        kind="profile",
        name=name,
        created=datetime.now(timezone.utc),
        versions=versions,
        command=command,
        gpu=result.device_name if result.device_type == "cuda" else None,
        headline=headline(result),
        device=result.device_name,
        device_type=result.device_type,
        device_requested=result.device_requested,
        **{
            k: v
            for k, v in meta_fields.items()
            if k in RunMeta.model_fields and k not in ("gpu", "device", "device_type", "device_requested")
        },
    )
    run.write_meta(meta)
    run.write_result(result)
    return result
