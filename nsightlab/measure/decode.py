"""`profile decode`: an LLM decode loop (lab_scripts/decode.py) profiled on a target, and
where a token's time goes.

`run_decode()` copies decode.py and labcommon.py to the target and runs them under a
profiler, brings the raw outputs into the run store, and returns the result
(`nsightlab.analysis.decode.build_decode`) for printing:

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

`--device auto|cuda|cpu` goes to the script. In the lab pod `auto` asks for the GPU
(the pod requests one): a torch there that cannot see it stops the script with its exit
code 3, which is exit 6 here with the script's reason, never a quiet CPU run.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from nsightlab import assets
from nsightlab.analysis.decode import DecodeResult, load_decode_record
from nsightlab.analysis.steps import TraceAnatomy
from nsightlab.config import atomic_write_json
from nsightlab.errors import ParseError, RemoteCommandError, UsageError
from nsightlab.parse import nsys
from nsightlab.runs.decode import (
    TIMELINE_FILE,
    TRACE_REPORTS,
    decode_build,
    gpu_anatomy,
    kineto_anatomy,
    listed_name,
    report_names,
    split_csvs,
)
from nsightlab.runs.store import RunMeta, new_run

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
SCRIPT_NO_GPU_EXIT = 3
SCRIPT_NO_ROOM_EXIT = 4
_DTYPES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16", "half": "float16", "float32": "float32", "fp32": "float32"}
_MODES = ("eager", "graphs")
# Kineto's own two lines around every profile (lab_scripts/README.md): noise, not output.
_KINETO_NOISE = re.compile(r"^USDT:\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \d+:\d+ SyncActivityProfilerHandler\.cpp:\d+\] profiler_(start|stop)$")


@dataclass
class DecodeOptions:
    """What `profile decode` passes to decode.py (None: the script's default)."""

    preset: str | None = None
    batch: str | None = None
    tokens: int | None = None
    prompt_len: int | None = None
    modes: str | None = None
    dtype: str | None = None
    device: str | None = None  # auto | cuda | cpu
    extra: list[str] = field(default_factory=list)  # more of the script's options, after --

    def check(self) -> None:
        """Refuse what decode.py would refuse, before anything runs (exit 2)."""
        if self.batch is not None:
            parts = [p.strip() for p in self.batch.split(",")]
            if not parts or not all(p.isdigit() and int(p) > 0 for p in parts):
                raise UsageError(f"--batch must be positive whole numbers separated by commas (1,8,32), got '{self.batch}'")
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
        if self.device is not None and self.device not in ("auto", "cuda", "cpu"):
            raise UsageError(f"--device must be auto, cuda or cpu, got '{self.device}'")

    def script_args(self, *, on_pod: bool) -> list[str]:
        # The device rule: the lab pod requests a GPU, so `auto` there insists on it.
        device = self.device or "auto"
        if device == "auto" and on_pod:
            device = "cuda"
        args = ["--device", device]
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


def _streamer(env: Env) -> tuple[Any, Any, list[str]]:
    """Callbacks that show the remote output live on stderr (Kineto's noise left out),
    keeping the tail of its stderr for error messages."""
    tail: list[str] = []
    partial = {1: b"", 2: b""}

    def make(channel: int) -> Any:
        def sink(data: bytes) -> None:
            buf = partial[channel] + data
            *lines, partial[channel] = buf.split(b"\n")
            for raw in lines:
                text = raw.decode("utf-8", "replace").rstrip("\r")
                if _KINETO_NOISE.match(text):
                    continue
                env.note(f"  {text}")
                if channel == 2 and text.strip():
                    tail.append(text.strip())
                    del tail[:-20]

        return sink

    return make(1), make(2), tail


def _script_failed(code: int, tail: list[str], label: str, place: str) -> Exception:
    """nsightlab's error for decode.py's own exit codes (else a remote failure)."""
    last = tail[-1][:300] if tail else ""
    if code == SCRIPT_USAGE_EXIT and last.startswith("decode.py"):
        return UsageError(f"decode.py refused its options: {last}")
    if code == SCRIPT_NO_GPU_EXIT and "cannot see the GPU" in last:
        reason = last.split("cannot see the GPU", 1)[1].lstrip(": ").strip()
        remedy = "install a CUDA build of torch here" if place == "on this machine" else "use an image with CUDA torch"
        return RemoteCommandError(f"torch {place} cannot see the GPU: {reason}; {remedy}, or --device cpu", returncode=code)
    if code == SCRIPT_NO_ROOM_EXIT:
        return RemoteCommandError(f"the model does not fit {place}: {last}", returncode=code)
    return RemoteCommandError(f"decode.py failed on {label} (exit {code}): {last}", returncode=code)


def run_decode(
    env: Env,
    target: Target,
    meta_fields: dict[str, Any],
    *,
    options: DecodeOptions,
    profiler: DecodeProfiler,
    nsys_args: list[str],
) -> DecodeResult:
    """Profile decode.py on `target`; the run is stored before the result is returned."""
    options.check()
    on_pod = not str(meta_fields.get("target", "")).startswith("this machine")
    place = "in the pod" if on_pod else "on this machine"
    if profiler == "nsys" and target.which("nsys") is None:
        raise RemoteCommandError(
            f"nsys (Nsight Systems) is not installed on {target.label}",
            returncode=127,
            hint="Use an image that ships it, or `--profiler torch` (torch.profiler's trace), or `--profiler none` (the script's own step times)",
        )
    wd = target.workdir()
    remote_script = posixpath.join(wd, SCRIPT)
    target.put(assets.lab_script(SCRIPT), remote_script)
    target.put(assets.lab_script(assets.LAB_COMMON), posixpath.join(wd, assets.LAB_COMMON))
    work_json = posixpath.join(wd, WORK_JSON)
    argv_script = [target.python, remote_script, "--json", work_json, *options.script_args(on_pod=on_pod)]
    out_cb, err_cb, tail = _streamer(env)
    versions: dict[str, str | None] = {}
    wanted: list[str] = []
    if profiler == "nsys":
        versions["nsys"] = nsys.parse_nsys_version(target.run(["nsys", "--version"], what="nsys --version").out)
        base = posixpath.join(wd, BASE)
        argv = ["nsys", "profile", "-o", base, "-f", "true", *NSYS_TRACE_ARGS, *nsys_args, *argv_script]
        env.note(f"running on {target.label}: {shlex.join(argv)}")
        code = target.stream(argv, on_stdout=out_cb, on_stderr=err_cb, env={"TMPDIR": wd})
        if code != 0:
            raise _script_failed(code, tail, target.label, place)
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
    elif profiler == "torch":
        prof_script = posixpath.join(wd, "torchprof.py")
        target.put(assets.lab_script("torchprof.py"), prof_script)
        prof_json = posixpath.join(wd, "torchprof.json")
        argv = [target.python, prof_script, "--out", prof_json, "--trace", posixpath.join(wd, TRACE), "--ranges", "decode_step", *argv_script[1:]]
        env.note(f"running on {target.label} under torch.profiler: {shlex.join(argv_script[1:])}")
        code = target.stream(argv, on_stdout=out_cb, on_stderr=err_cb)
        if code != 0:
            raise _script_failed(code, tail, target.label, place)
        wanted = ["torchprof.json", TRACE]
        listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
    else:
        env.note(f"running on {target.label}: {shlex.join(argv_script[1:])} (no profiler: the script's own step times)")
        code = target.stream(argv_script, on_stdout=out_cb, on_stderr=err_cb)
        if code != 0:
            raise _script_failed(code, tail, target.label, place)
        listing = target.run(["ls", "-1", wd], what="listing the work folder").out.split()
    if WORK_JSON not in listing:
        raise RemoteCommandError(f"decode.py wrote no {WORK_JSON} on {target.label}", hint="Its output above says why.")
    wanted = [f for f in wanted if f in listing] + [WORK_JSON]
    # everything comes back before anything is analysed or printed
    probe = load_preset_name(options)
    run, run_id = new_run("decode", probe)
    fetched = []
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
    timelines = build.timelines
    timelines.run_id = run_id
    command = ["nsightlab", "profile", "decode", "--profiler", profiler, *options.script_args(on_pod=on_pod)]
    meta = RunMeta(
        id=run_id,
        kind="decode",
        name=record.model.preset or probe,
        created=datetime.now(timezone.utc),
        versions=versions,
        command=command,
        gpu=None if result.device.startswith("cpu") else result.device,
        dtype=record.model.dtype,
        headline=build.headline,
        **{k: v for k, v in meta_fields.items() if k in RunMeta.model_fields and k not in ("gpu", "dtype")},
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
        return None, "no profiler (--profiler none): steps come from the script's own timing, without kernels or idle time"
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
