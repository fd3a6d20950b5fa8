"""`profile decode`: an LLM decode loop (lab_scripts/decode.py) profiled on a target, and
where a token's time goes.

`run_decode()` copies decode.py, decode_model.py and labcommon.py to the target and runs them under a
profiler, brings the raw outputs into the run store, and returns the result
(`nsightlab.analysis.decode_result.build_decode`) for printing:

- `nsys` (the default): `nsys profile -o BASE -f true -t cuda,nvtx
  --cuda-graph-trace=node` (so a graph replay shows its kernels, not one opaque launch),
  then one `nsys stats --force-export=true --format csv` with the trace reports the step
  anatomy reads (`cuda_gpu_trace`, `nvtx_pushpop_trace`, `nvtx_gpu_proj_trace`,
  `cuda_api_trace`) and the summaries `profile` exports, with the names this nsys gives
  them (`--help-reports`). Steps: the NVTX `decode_step` ranges (`source: nvtx`).
- `torch`: torchprof.py with `--trace`, whose Chrome trace feeds the same anatomy;
  steps are the `decode_step` record_function ranges (`source: record_function`). On a
  CPU the profiler's top-level CPU ops stand in for kernels.
- `none`: the script alone; steps come from its own per-step timing (CUDA events on a
  GPU, perf_counter on a CPU; `source: script`): step times, tokens/s, the floor, but no
  kernels and no idle split. Also what a mode gets when the trace holds none of its steps
  (nsys on a run that stayed on the CPU records no GPU work).

The run is stored as kind `decode`: `raw/` (the CSVs or the trace, the script's JSON,
the .nsys-rep), `meta.json`, `timeline.json` (each mode's median step, op by op, for the
report's figure), and `result.json` last.

`--device auto|cuda|cpu` is decided once (`nsightlab.measure.device.plan_device`) and
goes to the script: on a target that requests a GPU `auto` insists on it, and a torch
there that cannot see it stops the script with its exit code 3, which is exit 6 here with
the script's reason (`no_gpu_error`), never a quiet CPU run.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from nsightlab import assets
from nsightlab.analysis.decode_models import DecodeResult
from nsightlab.analysis.steps import TraceAnatomy
from nsightlab.errors import ParseError, RemoteCommandError, UsageError
from nsightlab.measure.device import DevicePlan, no_gpu_error
from nsightlab.measure.profile import export_stats, streamer
from nsightlab.measure.work import LabWork
from nsightlab.parse import nsys
from nsightlab.parse.records.decode_record import load_decode_record
from nsightlab.runs.inputs import TRACE_REPORTS, split_csvs
from nsightlab.runs.store import RunMeta
from nsightlab.runs.timeline import gpu_anatomy, kineto_anatomy
from nsightlab.runs.trace_files import TIMELINE_FILE, decode_build, listed_name, report_names
from nsightlab.userconfig import atomic_write_json

if TYPE_CHECKING:
    from nsightlab.env import Env
    from nsightlab.measure.targets import Target

DecodeProfiler = Literal["nsys", "torch", "none"]
SCRIPT = "decode.py"
BASE = "nsightlab"
WORK_JSON = "decode.json"
TRACE = "trace.json.gz"
# The summaries `profile` exports (nsightlab.measure.profile.WANTED), then the traces.
SUMMARIES: tuple[nsys.ReportId, ...] = (
    "cuda_gpu_kern_sum",
    "nvtx_sum",
    "nvtx_kern_sum",
    "nvtx_gpu_proj_sum",
    "cuda_gpu_mem_time_sum",
)
NSYS_TRACE_ARGS = ("-t", "cuda,nvtx", "--cuda-graph-trace=node")
# decode.py's exit codes (lab_scripts/README.md)
SCRIPT_USAGE_EXIT = 2
SCRIPT_NO_ROOM_EXIT = 4  # (3, no GPU: measure.device.SCRIPT_NO_GPU_EXIT)
_DTYPES = {
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "float32": "float32",
    "fp32": "float32",
}
_MODES = ("eager", "graphs")
RAW_LOG = "profile.log"  # the command's output as it came, library noise included


@dataclass
class DecodeOptions:
    """What `profile decode` passes to decode.py (None: the script's default)."""

    preset: str | None = None
    batch: str | None = None
    tokens: int | None = None
    prompt_len: int | None = None
    modes: str | None = None
    dtype: str | None = None
    extra: list[str] = field(default_factory=list)  # more of the script's options, after --

    def check(self) -> None:
        """Refuse what decode.py would refuse, before anything runs (exit 2)."""
        if self.batch is not None:
            parts = [p.strip() for p in self.batch.split(",")]
            if not parts or not all(p.isdigit() and int(p) > 0 for p in parts):
                raise UsageError(
                    f"--batch must be positive whole numbers separated by commas (1,8,32), got '{self.batch}'"
                )
        if self.modes is not None:
            modes = [m.strip() for m in self.modes.split(",")]
            bad = [m for m in modes if m not in _MODES]
            if bad or not modes:
                raise UsageError(f"--modes takes eager, graphs or both (eager,graphs), got '{self.modes}'")
        if self.dtype is not None and self.dtype.lower() not in _DTYPES:
            raise UsageError(f"--dtype must be bfloat16, float16 or float32, got '{self.dtype}'")
        for name, value in (("--tokens", self.tokens), ("--prompt-len", self.prompt_len)):
            if value is not None and value < 1:
                raise UsageError(f"{name} must be at least 1, got {value}")

    def script_args(self, device: DevicePlan) -> list[str]:
        """decode.py's options; `--device` is the plan's (`measure.device.plan_device`):
        `auto` on a target that requests a GPU insists on it."""
        args = ["--device", device.script_arg]
        for flag, value in (
            ("--preset", self.preset),
            ("--batch", self.batch),
            ("--tokens", self.tokens),
            ("--prompt-len", self.prompt_len),
            ("--modes", self.modes),
            ("--dtype", _DTYPES[self.dtype.lower()] if self.dtype else None),
        ):
            if value is not None:
                args += [flag, str(value)]
        return [*args, *self.extra]


def _script_failed(code: int, tail: list[str], label: str, plan: DevicePlan) -> Exception:
    """nsightlab's error for decode.py's own exit codes (else a remote failure)."""
    last = tail[-1][:300] if tail else ""
    no_gpu = no_gpu_error(plan, code, tail)
    if no_gpu is not None:
        return no_gpu
    if code == SCRIPT_USAGE_EXIT and last.startswith("decode.py"):
        return UsageError(f"decode.py refused its options: {last}")
    if code == SCRIPT_NO_ROOM_EXIT:
        return RemoteCommandError(f"the model does not fit {plan.place}: {last}", returncode=code)
    return RemoteCommandError(f"decode.py failed on {label} (exit {code}): {last}", returncode=code)


def run_decode(
    env: Env,
    target: Target,
    meta_fields: dict[str, Any],
    *,
    options: DecodeOptions,
    profiler: DecodeProfiler,
    nsys_args: list[str],
    device: DevicePlan,
) -> DecodeResult:
    """Profile decode.py on `target`; the run is stored before the result is returned.
    `device` is the `--device` decision (`nsightlab.measure.device.plan_device`). Ctrl-C
    stores the run whole or not at all (`LabWork`)."""
    with LabWork("decode profile", target) as work:
        return _run_decode(
            env, target, meta_fields, work, options=options, profiler=profiler, nsys_args=nsys_args, device=device
        )


def _run_decode(
    env: Env,
    target: Target,
    meta_fields: dict[str, Any],
    work: LabWork,
    *,
    options: DecodeOptions,
    profiler: DecodeProfiler,
    nsys_args: list[str],
    device: DevicePlan,
) -> DecodeResult:
    options.check()
    if device.note():
        env.note(str(device.note()))
    if profiler == "nsys" and target.which("nsys") is None:
        here = getattr(target, "kube", None) is None  # this machine: no cluster behind it
        fix = "Install Nsight Systems here (`nsys` on PATH)" if here else "Use an image that ships it (lab.image)"
        again = "nsightlab profile decode" + (" --local" if here else "")
        raise RemoteCommandError(
            f"nsys (Nsight Systems) is not installed on {target.label}",
            returncode=127,
            hint=f"{fix}, or `{again} --profiler torch` (torch.profiler's trace), or `{again} --profiler none` "
            "(the script's own step times)",
        )
    wd = target.workdir()
    remote_script = posixpath.join(wd, SCRIPT)
    target.put(assets.lab_script(SCRIPT), remote_script)
    for beside in (assets.DECODE_MODEL, assets.LAB_COMMON):
        target.put(assets.lab_script(beside), posixpath.join(wd, beside))
    work_json = posixpath.join(wd, WORK_JSON)
    argv_script = [target.python, remote_script, "--json", work_json, *options.script_args(device)]
    log = bytearray()
    out_cb, err_cb, tail = streamer(env, log)
    versions: dict[str, str | None] = {}
    wanted: list[str] = []
    if profiler == "nsys":
        versions["nsys"] = nsys.parse_nsys_version(target.run(["nsys", "--version"], what="nsys --version").out)
        base = posixpath.join(wd, BASE)
        argv = ["nsys", "profile", "-o", base, "-f", "true", *NSYS_TRACE_ARGS, *nsys_args, *argv_script]
        env.note(f"running on {target.label}: {shlex.join(argv)}")
        code = target.stream(argv, on_stdout=out_cb, on_stderr=err_cb, env={"TMPDIR": wd})
        if code != 0:
            raise _script_failed(code, tail, target.label, device)
        listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
        if f"{BASE}.nsys-rep" not in listing:
            importer = nsys.detect_importer_error("\n".join(tail))
            raise RemoteCommandError(
                f"nsys wrote no {BASE}.nsys-rep on {target.label}" + (f": {importer}" if importer else ""),
                hint="A target-only nsys install writes only a .qdstrm: use the full Nsight Systems CLI in the image.",
            )
        helptext = target.run(["nsys", "stats", "--help-reports"], check=False).out
        listed = report_names(helptext)
        reports = [r for r in (listed_name(x, listed) for x in (*SUMMARIES, *TRACE_REPORTS)) if r is not None]
        wanted, listing = export_stats(env, target, wd, reports)
    elif profiler == "torch":
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
            "--ranges",
            "decode_step",
            *argv_script[1:],
        ]
        env.note(f"running on {target.label} under torch.profiler: {shlex.join(argv_script[1:])}")
        code = target.stream(argv, on_stdout=out_cb, on_stderr=err_cb)
        if code != 0:
            raise _script_failed(code, tail, target.label, device)
        wanted = ["torchprof.json", TRACE]
        listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
    else:
        env.note(f"running on {target.label}: {shlex.join(argv_script[1:])} (no profiler: the script's own step times)")
        code = target.stream(argv_script, on_stdout=out_cb, on_stderr=err_cb)
        if code != 0:
            raise _script_failed(code, tail, target.label, device)
        listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
    if WORK_JSON not in listing:
        raise RemoteCommandError(f"decode.py wrote no {WORK_JSON} on {target.label}", hint="Its output above says why.")
    wanted = [f for f in wanted if f in listing] + [WORK_JSON]
    # everything comes back before anything is analysed or printed
    probe = load_preset_name(options)
    run, run_id = work.new_run("decode", probe)
    (run.raw / RAW_LOG).write_bytes(bytes(log))
    fetched = [f"raw/{RAW_LOG}"]
    for f in wanted:
        target.get(posixpath.join(wd, f), run.raw / f)
        fetched.append(f"raw/{f}")
    record = load_decode_record(run.raw / WORK_JSON)
    if record is None:
        raise RemoteCommandError(f"{WORK_JSON} from {target.label} is not decode.py's JSON")
    versions.update({k: record.device.get(k) for k in ("torch", "cuda", "python", "driver")})
    anatomy, reason = _anatomy(run.raw, profiler)
    build = decode_build(record, anatomy, no_trace_reason=reason)
    result = build.result
    result.run_id = run_id
    if device.on_purpose_cpu:
        result.notes.append(f"measured on the CPU on purpose (--device cpu), {device.place} with a GPU")
    timelines = build.timelines
    timelines.run_id = run_id
    command = [
        "nsightlab",
        "profile",
        "decode",
        "--profiler",
        profiler,
        *(["--device", device.requested] if device.requested != "auto" else []),
        *options.script_args(device)[2:],
    ]
    cpu = result.device.startswith("cpu")
    meta = RunMeta(
        id=run_id,
        kind="decode",
        name=record.model.preset or probe,
        created=datetime.now(timezone.utc),
        versions=versions,
        command=command,
        gpu=None if cpu else result.device,
        dtype=record.model.dtype,
        headline=build.headline,
        device=record.device_name if cpu else result.device,
        device_type="cpu" if cpu else "cuda",
        device_requested=device.requested,
        **{
            k: v
            for k, v in meta_fields.items()
            if k in RunMeta.model_fields and k not in ("gpu", "dtype", "device", "device_type", "device_requested")
        },
    )
    run.write_meta(meta)
    atomic_write_json(run.path / TIMELINE_FILE, timelines.model_dump(mode="json"))
    run.write_result(result)
    env.note(f"stored as run {run_id} ({run.path}): {', '.join(fetched)}")
    return result


def load_preset_name(options: DecodeOptions) -> str:
    """The run folder's name: the preset asked for, else `decode`."""
    return options.preset or "decode"


def _anatomy(raw: Path, profiler: DecodeProfiler) -> tuple[TraceAnatomy | None, str | None]:
    """The step anatomy of what came back, or None and why there is none."""
    if profiler == "none":
        return (
            None,
            "no profiler (--profiler none): steps come from the script's own timing, without kernels or idle time",
        )
    if profiler == "torch":
        trace = raw / TRACE
        if not trace.is_file():
            return None, "torch.profiler wrote no trace: steps come from the script's own timing"
        return kineto_anatomy(trace), None
    traces, _ = split_csvs(sorted(raw.glob("*.csv")))
    if not any(p.name.endswith(("cuda_gpu_trace.csv", "gputrace.csv")) for p in traces):
        return None, (
            "nsys recorded no GPU work (no cuda_gpu_trace: did the script run on the CPU?); steps come "
            "from the script's own timing; `--profiler torch` shows a CPU run's ops"
        )
    try:
        return gpu_anatomy(traces), None
    except ParseError:
        raise
    except UsageError as e:  # an empty GPU trace: the script ran on the CPU
        return None, f"{e.message}: steps come from the script's own timing"
