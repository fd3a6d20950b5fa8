"""The bandwidth sweep: run `lab_scripts/sweep.py` on a target and store the run.

`run_sweep` copies the script into the target's work folder and runs it, forwarding its
rows live to stderr; then it fetches the script's JSON into a new run's `raw/`, analyses
it (`nsightlab.analysis.sweep`) and writes `meta.json` and, last, `result.json`: a run
folder is complete, or it is removed.
"""

from __future__ import annotations

import contextlib
import shutil
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from nsightlab import __version__, assets
from nsightlab.analysis.sweep import (
    COUNTERPART_DTYPE,
    DEFAULT_DTYPE,
    DEFAULT_ITERS,
    DEFAULT_WARMUP,
    SIZE_MAX_LOG2,
    SIZE_MIN_LOG2,
    SweepResult,
    build_result,
    canonical_dtype,
    dtype_choices,
)
from nsightlab.env import Env
from nsightlab.errors import RemoteCommandError, UsageError
from nsightlab.measure.device import DevicePlan, no_gpu_error, plan_device
from nsightlab.measure.targets import LocalTarget, Target, Where
from nsightlab.measure.work import LabWork
from nsightlab.parse.noise import is_library_noise
from nsightlab.runs import store
from nsightlab.runs.store import RunMeta
from nsightlab.runs.sweeps import load_record, load_sweep_run

SCRIPT = "sweep.py"
RAW_JSON = "sweep.json"
RAW_LOG = "sweep.log"


# ---------------------------------------------------------------------------- inputs


def parse_sizes(text: str) -> list[int]:
    """`--sizes 16,20,24`: log2 of the element counts, each in SIZE_MIN_LOG2..SIZE_MAX_LOG2."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise UsageError(f"--sizes wants comma-separated integers such as 16,20,24, got '{text}'")
    sizes: list[int] = []
    for p in parts:
        try:
            n = int(p)
        except ValueError:
            raise UsageError(
                f"--sizes: '{p}' is not an integer (sizes are log2 of the element count, e.g. 16,20,24)"
            ) from None
        if not SIZE_MIN_LOG2 <= n <= SIZE_MAX_LOG2:
            raise UsageError(f"--sizes: {n} is out of range {SIZE_MIN_LOG2}..{SIZE_MAX_LOG2} (2^{n} elements)")
        sizes.append(n)
    return sorted(set(sizes))


@dataclass
class SweepPlan:
    """What to run, with the gaps filled (from the run to compare with, else the defaults)."""

    dtype: str
    sizes: list[int] | None
    iters: int
    warmup: int
    device: str | None
    against: SweepResult | None = None
    notes: list[str] = field(default_factory=list)


def plan_sweep(
    *,
    dtype: str | None,
    sizes: str | None,
    iters: int | None,
    warmup: int | None,
    device: str | None,
    compare: str | None = None,
) -> SweepPlan:
    """Validate the options. With a run to compare with, what is not given follows it: the
    other element size (float16 <-> float32), the same sizes, the same device type."""
    if dtype is not None:
        known = canonical_dtype(dtype)
        if known is None:
            raise UsageError(f"--dtype '{dtype}' is not an element type the sweep knows", hint=f"Use one of {dtype_choices()}.")
        dtype = known
    size_list = parse_sizes(sizes) if sizes is not None else None
    against = load_sweep_run(compare) if compare is not None else None
    notes: list[str] = []
    if against is not None:
        theirs = against.record
        if dtype is None:
            dtype = COUNTERPART_DTYPE.get(theirs.dtype, DEFAULT_DTYPE)
        if size_list is None:
            size_list = sorted({r.log2 for r in theirs.rows} | {s.log2 for s in theirs.skipped}) or None
        if device is None and theirs.device.type in ("cpu", "cuda"):
            device = theirs.device.type
        what = f"{dtype}" + (f" at 2^{size_list[0]}..2^{size_list[-1]}" if size_list else "") + (f" on {device}" if device else "")
        notes.append(f"comparing with run {against.run_id} ({theirs.dtype} on {theirs.device.name or theirs.device.type}): this run measures {what}")
    return SweepPlan(
        dtype=dtype or DEFAULT_DTYPE,
        sizes=size_list,
        iters=iters if iters is not None else DEFAULT_ITERS,
        warmup=warmup if warmup is not None else DEFAULT_WARMUP,
        device=device,
        against=against,
        notes=notes,
    )


# ---------------------------------------------------------------------------- files and stored runs


# ---------------------------------------------------------------------------- running it


class _Lines:
    """Bytes in, whole lines out (to `emit`); keeps the last few for error messages."""

    def __init__(self, emit: Callable[[str], None], log: Callable[[bytes], object]) -> None:
        self._emit = emit
        self._log = log
        self._buf = b""
        self.tail: deque[str] = deque(maxlen=5)

    def __call__(self, data: bytes) -> None:
        self._log(data)
        self._buf += data
        *done, self._buf = self._buf.split(b"\n")
        for raw in done:
            self._line(raw)

    def _line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if is_library_noise(text):  # in the raw log, not on the terminal
            return
        if text.strip():
            self.tail.append(text.strip())
        self._emit(text)

    def flush(self) -> None:
        if self._buf:
            self._line(self._buf)
            self._buf = b""


def _command(args: dict[str, Any], where: dict[str, Any]) -> list[str]:
    """The nsightlab command line that repeats this run."""
    cmd = ["nsightlab", "sweep", "--dtype", args["dtype"]]
    if args["sizes"]:
        cmd += ["--sizes", ",".join(str(n) for n in args["sizes"])]
    cmd += ["--iters", str(args["iters"]), "--warmup", str(args["warmup"])]
    if args["device"]:
        cmd += ["--device", args["device"]]
    if where.get("context"):
        cmd += ["--context", str(where["context"]), "--namespace", str(where.get("namespace"))]
    else:
        cmd.append("--local")
    return cmd


def run_sweep(
    env: Env,
    where: Where,
    *,
    dtype: str,
    sizes: Sequence[int] | None,
    iters: int,
    warmup: int,
    device: str | None,
    against: SweepResult | None = None,
) -> SweepResult:
    """Run the sweep on `where.target`, store it (raw JSON and log, meta.json, result.json)
    and return the result. A failing script raises RemoteCommandError (exit 6) and leaves
    no run folder behind. `device` is --device (None: auto): on a target that requests a
    GPU, auto insists on it (`nsightlab.measure.device`)."""
    known = canonical_dtype(dtype)
    if known is None:
        raise UsageError(f"--dtype '{dtype}' is not an element type the sweep knows", hint=f"Use one of {dtype_choices()}.")
    plan = plan_device(where, device)
    if plan.note():
        env.note(str(plan.note()))
    with LabWork("sweep", where.target) as work:
        return _sweep(work, env, where, dtype=known, sizes=sizes, iters=iters, warmup=warmup, device=device, against=against, plan=plan)


def _sweep(
    work: LabWork,
    env: Env,
    where: Where,
    *,
    dtype: str,
    sizes: Sequence[int] | None,
    iters: int,
    warmup: int,
    device: str | None,
    against: SweepResult | None,
    plan: DevicePlan,
) -> SweepResult:
    target = where.target
    started = datetime.now(timezone.utc)
    workdir: str | None = None
    try:
        workdir = target.workdir()
        remote_script = f"{workdir}/{SCRIPT}"
        remote_json = f"{workdir}/{RAW_JSON}"
        target.put(assets.lab_script(SCRIPT), remote_script)
        target.put(assets.lab_script(assets.LAB_COMMON), f"{workdir}/{assets.LAB_COMMON}")
        argv = [target.python, remote_script, "--dtype", dtype, "--iters", str(iters), "--warmup", str(warmup)]
        if sizes:
            argv += ["--sizes", ",".join(str(n) for n in sizes)]
        argv += ["--device", plan.script_arg, "--json", remote_json]

        log = bytearray()
        out = _Lines(env.note, log.extend)
        err = _Lines(env.note, log.extend)
        with env.status(f"sweeping {dtype} on {target.label}"):
            code = target.stream(argv, on_stdout=out, on_stderr=err)
        out.flush()
        err.flush()
        if code != 0:
            no_gpu = no_gpu_error(plan, code, err.tail)
            if no_gpu is not None:
                raise no_gpu
            last = err.tail[-1] if err.tail else "no output on stderr"
            raise RemoteCommandError(
                f"the sweep script failed on {target.label} (exit {code}): {last[:300]}",
                returncode=code,
                hint=_failure_hint(last, code, where),
            )
        args = {"dtype": dtype, "sizes": list(sizes or []), "iters": iters, "warmup": warmup, "device": device}
        return _store(work, target, where, remote_json, bytes(log), started, argv, _command(args, where.meta), against, plan)
    finally:
        if workdir is not None and isinstance(target, LocalTarget):
            with contextlib.suppress(OSError):
                shutil.rmtree(workdir)


def _store(
    work: LabWork,
    target: Target,
    where: Where,
    remote_json: str,
    log: bytes,
    started: datetime,
    argv: list[str],
    command: list[str],
    against: SweepResult | None,
    plan: DevicePlan | None = None,
) -> SweepResult:
    """A new run folder with what came back, meta.json, and result.json written last."""
    run, run_id = work.new_run("sweep", argv[argv.index("--dtype") + 1], now=started)
    try:
        (run.raw / RAW_LOG).write_bytes(log)
        local_json = run.raw / RAW_JSON
        target.get(remote_json, local_json)
        record = load_record(local_json)
        result = build_result(
            record,
            target=str(where.meta.get("target") or target.label),
            where=where.meta,
            run_id=run_id,
            run_dir=str(run.path),
            created=started,
            command=command,
            script_argv=argv,
            against=against,
        )
        dev = record.device
        if plan is not None and plan.on_purpose_cpu:
            result.summary.notes.append(f"measured on the CPU on purpose (--device cpu), {plan.place} with a GPU")
        meta = RunMeta(
            id=run_id,
            kind="sweep",
            name=record.dtype,
            created=started,
            target=result.target,
            context=_str(where.meta.get("context")),
            namespace=_str(where.meta.get("namespace")),
            pod=_str(where.meta.get("pod")),
            node=_str(where.meta.get("node")),
            instance_type=_str(where.meta.get("instance_type")),
            gpu=dev.name if dev.type == "cuda" else None,  # what the sweep ran on, never the node's label
            node_gpu=_str(where.meta.get("node_gpu")),
            device=dev.name,
            device_type=dev.type,
            device_requested=plan.requested if plan is not None else None,
            image=_str(where.meta.get("image")),
            versions={"torch": dev.torch, "cuda": dev.cuda, "python": dev.python, "driver": dev.driver, "nsightlab": __version__},
            command=command,
            dtype=record.dtype,
            headline=result.headline,
            session_uid=_str(where.meta.get("session_uid")),
        )
        run.write_meta(meta)
        run.write_result(result)  # last: a run with a result.json is complete
    except BaseException:
        store.remove(run)
        raise
    return result


def _str(value: object) -> str | None:
    return None if value is None else str(value)


def _failure_hint(last: str, code: int, where: Where) -> str | None:
    local = not where.meta.get("context")
    if "No module named 'torch'" in last:
        return "Install torch here (pip install torch) or run in the lab pod." if local else "The lab pod's image needs PyTorch."
    if code == 127:
        return "Python was not found on the target."
    return "The script's output is above."
