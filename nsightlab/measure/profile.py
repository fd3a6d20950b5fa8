"""`profile`: a script under Nsight Systems (or torch.profiler) on a target.

`run_profile()` drives a Target: copies the script, runs the
tutorial's `nsys profile -o BASE -f true -t cuda,nvtx python3 SCRIPT`, exports the
reports that matter with one `nsys stats --force-export=true --format csv`, brings the
CSVs, the script's JSON and the .nsys-rep back into the run store, and only then
returns the result (`nsightlab.analysis.profile.build_profile`) for printing.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsightlab import assets
from nsightlab.analysis.profile import (
    Profiler,
    ProfileResult,
    build_profile,
    headline,
    load_record,
    report_from_torch,
)
from nsightlab.errors import ParseError, RemoteCommandError, UsageError
from nsightlab.measure.work import LabWork
from nsightlab.parse import nsys
from nsightlab.runs.store import Run, RunMeta

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
)


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


def _require_nsys(target: Target) -> None:
    if target.which("nsys") is None:
        raise RemoteCommandError(
            f"nsys (Nsight Systems) is not installed on {target.label}",
            returncode=127,
            hint="Use an image that ships it, or run the same tables under torch.profiler: `--profiler torch`.",
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
) -> tuple[list[str], list[str], str | None]:
    """`nsys profile` of `command`, then one `nsys stats` export of the reports that
    matter. Returns the files to fetch from `wd`, the listing of `wd` and nsys's version.

    A server does not exit by itself: nsys ends it when the collection is over, so its
    exit code says nothing; only a missing report is a failure then."""
    version = nsys.parse_nsys_version(target.run(["nsys", "--version"], what="nsys --version").out)
    base = posixpath.join(wd, BASE)
    argv = ["nsys", "profile", "-o", base, "-f", "true", "-t", "cuda,nvtx", *options, *command]
    env.note(f"running on {target.label}: {shlex.join(argv)}")
    out_cb, err_cb, tail = _streamer(env)
    code = target.stream(argv, on_stdout=out_cb, on_stderr=err_cb, env={"TMPDIR": wd, **env_vars})
    if code != 0 and not server:
        raise RemoteCommandError(f"nsys profile failed on {target.label} (exit {code}): {_last_error(tail)}", returncode=code)
    listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
    if f"{BASE}.nsys-rep" not in listing:
        text = b"\n".join(tail).decode("utf-8", "replace")
        importer = nsys.detect_importer_error(text)
        if server and code != 0 and not importer:
            raise RemoteCommandError(f"the server ended on {target.label} (exit {code}) before nsys wrote a report: {_last_error(tail)}", returncode=code)
        raise RemoteCommandError(
            f"nsys wrote no {BASE}.nsys-rep on {target.label}" + (f": {importer}" if importer else ""),
            hint="A target-only nsys install writes only a .qdstrm: use the full Nsight Systems CLI in the image."
            if importer or not server
            else "Nothing was collected: the server never called cudaProfilerStart (see `nsightlab profile --help`), or use --duration.",
        )
    if server and code != 0:
        env.note(f"the server ended with exit {code} (nsys ends it when the collection is over)")
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
    wanted = [f for f in listing if f.startswith(f"{BASE}_") and f.endswith(".csv")] + [f"{BASE}.nsys-rep"]
    return wanted, listing, version


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
) -> ProfileResult:
    """Profile `script` on `target`; the run is stored before the result is returned
    (Ctrl-C: no run is stored).

    With `serving`, `script_args` is a server's command, run as it is (nothing is copied
    over), under the nsys options a server needs (see Serving)."""
    with LabWork("profile", target) as work:
        return _profile(work, env, target, meta_fields, script=script, script_args=script_args, profiler=profiler, nsys_args=nsys_args, serving=serving)


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
) -> ProfileResult:
    if serving is not None:
        if profiler != "nsys":
            raise UsageError("--serving profiles under nsys only (drop --profiler torch)")
        if not script_args:
            raise UsageError("--serving needs the server's command after --", hint="e.g. `nsightlab profile --serving -- vllm serve MODEL --profiler-config.profiler cuda`.")
        _require_nsys(target)
        name = command_name(script_args)
        run, run_id = work.new_run("profile", name)
        wd = target.workdir()
        env.note(f"profiling a server: {serving.describe()}")
        wanted_files, _, version = _nsys_run(env, target, wd, list(script_args), options=[*serving.nsys_options(), *nsys_args], env_vars=SERVING_ENV, server=True)
        command = ["nsightlab", "profile", "--serving", *_serving_flags(serving), "--", *script_args]
        return _finish(run, run_id, target, wd, wanted_files, meta_fields, name=name, profiler="nsys", versions={"nsys": version}, work_json=None, command=command)
    local_script, name = resolve_script(script)
    builtin = script in BUILTIN
    if profiler == "nsys":
        _require_nsys(target)
    run, run_id = work.new_run("profile", name)
    wd = target.workdir()
    remote_script = posixpath.join(wd, local_script.name)
    target.put(local_script, remote_script)
    if builtin:
        target.put(assets.lab_script(assets.LAB_COMMON), posixpath.join(wd, assets.LAB_COMMON))
    work_json = posixpath.join(wd, f"{name}.json")
    argv_script = [target.python, remote_script, *(["--json", work_json] if builtin else []), *script_args]
    versions: dict[str, str | None] = {}
    if profiler == "nsys":
        wanted_files, listing, versions["nsys"] = _nsys_run(env, target, wd, argv_script, options=nsys_args, env_vars={})
    else:
        prof_script = posixpath.join(wd, "torchprof.py")
        target.put(assets.lab_script("torchprof.py"), prof_script)
        prof_json = posixpath.join(wd, "torchprof.json")
        argv = [target.python, prof_script, "--out", prof_json, *argv_script[1:]]
        env.note(f"running on {target.label} under torch.profiler: {shlex.join(argv_script[1:])}")
        out_cb, err_cb, tail = _streamer(env)
        code = target.stream(argv, on_stdout=out_cb, on_stderr=err_cb)
        if code != 0:
            raise RemoteCommandError(f"the script failed on {target.label} (exit {code}): {_last_error(tail)}", returncode=code)
        wanted_files = ["torchprof.json"]
        listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
    if builtin and posixpath.basename(work_json) in listing:
        wanted_files.append(posixpath.basename(work_json))
    command = ["nsightlab", "profile", script, *(["--profiler", profiler]), *(["--", *script_args] if script_args else [])]
    return _finish(run, run_id, target, wd, wanted_files, meta_fields, name=name, profiler=profiler, versions=versions, work_json=work_json, command=command)


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
) -> ProfileResult:
    """Bring the files back into the run, parse and analyse them, store meta and result."""
    fetched: list[str] = []
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
    record = load_record(run.raw / posixpath.basename(work_json)) if work_json else None
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
        command=command,
        gpu=result.device_name or meta_fields.get("gpu"),
        headline=headline(result),
        **{k: v for k, v in meta_fields.items() if k in RunMeta.model_fields and k != "gpu"},
    )
    run.write_meta(meta)
    run.write_result(result)
    return result
