"""The bandwidth sweep: run `lab_scripts/sweep.py` on a target and store the run.

`run_sweep` copies the script into the target's work folder and runs it, forwarding its
rows live to stderr; then it fetches the script's JSON into a new run's `raw/`, analyses
it (`nsightlab.analysis.sweep_result`) and writes `meta.json` and, last, `result.json`: a run
folder is complete, or it is removed. `run_impls` runs the same op with torch and with a
Triton kernel on the same target and compares them (`analysis.sweep_impls.compare_impls`).

The script's options are passed only when the user gave them: its defaults are per device
(float16 and 5 + 50 calls on a GPU, float32 and 2 + 10 on a CPU, where 16-bit floats
measure conversion, not memory). The stored run records what ran, from the script's JSON.

Triton needs a GPU, or its interpreter: where the sweep runs on a CPU (`--device cpu`, or
a target whose torch sees no GPU) nsightlab sets `TRITON_INTERPRET=1` for that run, and
the run says it checks correctness only.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nsightlab import __version__, assets, units
from nsightlab.analysis.sweep_impls import SweepImpls, compare_impls
from nsightlab.analysis.sweep_options import (
    SIZE_MAX_LOG2,
    SIZE_MIN_LOG2,
    canonical_dtype,
    counterpart_dtype,
    dtype_choices,
)
from nsightlab.analysis.sweep_result import SweepResult, build_result
from nsightlab.env import Env
from nsightlab.errors import RemoteCommandError, UsageError
from nsightlab.measure.device import DevicePlan, no_gpu_error, plan_device
from nsightlab.measure.targets import LocalTarget, Target, Where
from nsightlab.measure.work import LabWork
from nsightlab.models import loads
from nsightlab.parse.noise import is_library_noise
from nsightlab.parse.records.sweep_record import SweepRecord
from nsightlab.runs import store
from nsightlab.runs.store import RunMeta
from nsightlab.runs.sweeps import load_record, load_sweep_run

SCRIPT = "sweep.py"
RAW_JSON = "sweep.json"
# sweep.py --progress json writes each row as this prefix and a JSON object (its PROGRESS_PREFIX)
PROGRESS_PREFIX = "nsightlab-row "
RAW_LOG = "sweep.log"
IMPLS = ("torch", "triton")
OPS = ("scale", "scale-add")
#: Element types a Triton kernel takes (its scalars are 32-bit: float64 could not match torch).
TRITON_DTYPES = ("float16", "bfloat16", "float32")
#: lab_scripts/sweep.py's exit codes (its README): triton missing, Triton's result differs.
SCRIPT_NO_TRITON_EXIT = 4
SCRIPT_CHECK_FAILED_EXIT = 5
INTERPRET_ENV = {"TRITON_INTERPRET": "1"}
#: Asks the target's torch whether it sees a GPU (exit 0) or not (exit 1).
_GPU_PROBE = "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"


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


def parse_impls(text: str) -> list[str]:
    """`--impl torch`, `triton`, or both (`torch,triton`): the implementations to run."""
    parts = [p.strip().lower() for p in text.split(",")]
    bad = [p for p in parts if p not in IMPLS]
    if not text.strip() or bad:
        raise UsageError(f"--impl: '{text}' is not torch, triton or torch,triton")
    return [i for i in IMPLS if i in parts]  # torch first, each once


@dataclass
class SweepPlan:
    """What to run. Options left as None are the script's own (per device) defaults; with
    a run to compare with, what was not given follows it."""

    dtype: str | None
    sizes: list[int] | None
    iters: int | None
    warmup: int | None
    device: str | None
    against: SweepResult | None = None
    notes: list[str] = field(default_factory=list)
    impls: list[str] = field(default_factory=lambda: ["torch"])
    op: str = "scale"


def plan_sweep(
    *,
    dtype: str | None,
    sizes: str | None,
    iters: int | None,
    warmup: int | None,
    device: str | None,
    compare: str | None = None,
    impl: str | None = None,
    op: str | None = None,
) -> SweepPlan:
    """Validate the options. With a run to compare with, what is not given follows it: the
    other element size (float16 <-> float32; on a CPU float32 <-> float64), the same sizes,
    the same device type, implementation and op."""
    if dtype is not None:
        known = canonical_dtype(dtype)
        if known is None:
            raise UsageError(
                f"--dtype '{dtype}' is not an element type the sweep knows", hint=f"Use one of {dtype_choices()}."
            )
        dtype = known
    impls = parse_impls(impl) if impl is not None else None
    if op is not None and op not in OPS:
        raise UsageError(f"--op: '{op}' is not scale or scale-add")
    size_list = parse_sizes(sizes) if sizes is not None else None
    if compare is not None and impls is not None and len(impls) > 1:
        raise UsageError(
            "--compare checks one implementation against a stored run: give --impl torch or --impl triton with it"
        )
    against = load_sweep_run(compare) if compare is not None else None
    notes: list[str] = []
    if against is not None:
        theirs = against.record
        if dtype is None:
            dtype = counterpart_dtype(theirs.dtype, theirs.device.type)
        if size_list is None:
            size_list = sorted({r.log2 for r in theirs.rows} | {s.log2 for s in theirs.skipped}) or None
        if device is None and theirs.device.type in ("cpu", "cuda"):
            device = theirs.device.type
        impls = impls or [theirs.impl]
        op = op or theirs.op
        what = (
            f"{dtype}"
            + (f" at 2^{size_list[0]}..2^{size_list[-1]}" if size_list else "")
            + (f" on {device}" if device else "")
        )
        notes.append(
            f"comparing with run {against.run_id} ({theirs.dtype} on "
            f"{theirs.device.name or theirs.device.type}, {against.target}): this run measures {what}"
        )
    impls = impls or ["torch"]
    if "triton" in impls and dtype is not None and dtype not in TRITON_DTYPES:
        raise UsageError(
            f"--impl triton takes {', '.join(TRITON_DTYPES)}, not {dtype}",
            hint="Triton passes a Python float as a 32-bit scalar, so float64 could not match torch.",
        )
    return SweepPlan(
        dtype=dtype,
        sizes=size_list,
        iters=iters,
        warmup=warmup,
        device=device,
        against=against,
        notes=notes,
        impls=impls,
        op=op or "scale",
    )


# ---------------------------------------------------------------------------- files and stored runs


# ---------------------------------------------------------------------------- running it


def row_text(row: dict[str, Any]) -> str:
    """A streamed row in the number format of the sweep's table (units: three
    significant figures, binary sizes, TB/s): `2^16 elements  128 KiB  5.90 us per call
    0.0444 TB/s`."""
    seconds = float(row["seconds_per_call"])
    parts = [
        f"2^{int(row['log2'])} elements",
        units.size(float(row["tensor_bytes"])),
        f"{units.duration(seconds)} per call",
    ]
    if row.get("interpreted"):
        parts.append("interpreted: no TB/s")
    elif seconds > 0 and math.isfinite(seconds):
        parts.append(units.tbps(float(row["bytes_per_call"]) / seconds))
    if "max_abs_error" in row:
        parts.append(f"max err {units.sig(float(row['max_abs_error']))}")
    config = row.get("triton_config") or {}
    if config:
        parts.append(f"BLOCK_SIZE {config.get('BLOCK_SIZE')}, {config.get('num_warps')} warps")
    return "  ".join(parts)


def _rows_shown(emit: Callable[[str], None]) -> Callable[[str], None]:
    """The script's stdout as the user sees it: its rows in nsightlab's number format, any
    other line as it came."""

    def show(text: str) -> None:
        if text.startswith(PROGRESS_PREFIX):
            try:
                row = loads(text[len(PROGRESS_PREFIX) :])
                text = row_text(row)
            except (ValueError, KeyError, TypeError):
                pass  # not a row after all: shown as it came
        emit(text)

    return show


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


def _command(record: SweepRecord, device: str | None, where: dict[str, Any]) -> list[str]:
    """The nsightlab command line that repeats this run: what ran, from the script's JSON."""
    cmd = ["nsightlab", "sweep", "--dtype", record.dtype]
    if record.impl != "torch":
        cmd += ["--impl", record.impl]
    if record.op != "scale":
        cmd += ["--op", record.op]
    sizes = sorted({r.log2 for r in record.rows} | {s.log2 for s in record.skipped})
    if sizes:
        cmd += ["--sizes", ",".join(str(n) for n in sizes)]
    cmd += ["--iters", str(record.iters), "--warmup", str(record.warmup)]
    ran_on = record.device.type if record.device.type in ("cpu", "cuda") else device
    if ran_on:
        cmd += ["--device", ran_on]
    if where.get("context"):
        cmd += ["--context", str(where["context"]), "--namespace", str(where.get("namespace"))]
    else:
        cmd.append("--local")
    return cmd


def run_name(record: SweepRecord) -> str:
    """The run's name in the store and in `runs`: the dtype, then what is not the default
    (`float32`, `float32-triton`, `float32-scale-add`, `float32-triton-scale-add`)."""
    parts = [record.dtype]
    if record.impl != "torch":
        parts.append(record.impl)
    if record.op != "scale":
        parts.append(record.op)
    return "-".join(parts)


def _sees_gpu(target: Target) -> bool:
    """Whether torch on the target sees a GPU (a missing torch sees none)."""
    return target.run([target.python, "-c", _GPU_PROBE], check=False).returncode == 0


def triton_env(env: Env, target: Target, plan: DevicePlan) -> dict[str, str]:
    """The environment a Triton run needs: its interpreter where the sweep runs on a CPU
    (`--device cpu`, or `auto` on a target whose torch sees no GPU), else nothing. A
    target that requests a GPU runs the script with `--device cuda` (`plan_device`)."""
    if plan.script_arg == "cuda":
        return {}
    if plan.script_arg == "cpu" or not _sees_gpu(target):
        env.note(
            f"no GPU for Triton on {target.label}: it runs in its interpreter (TRITON_INTERPRET=1), "
            "which checks correctness only; its times say nothing about bandwidth"
        )
        return dict(INTERPRET_ENV)
    return {}


def run_sweep(
    env: Env,
    where: Where,
    *,
    dtype: str | None,
    sizes: Sequence[int] | None,
    iters: int | None,
    warmup: int | None,
    device: str | None,
    against: SweepResult | None = None,
    impl: str = "torch",
    op: str = "scale",
) -> SweepResult:
    """Run the sweep on `where.target`, store it (raw JSON and log, meta.json, result.json)
    and return the result. `dtype`, `iters` and `warmup` are passed to the script only
    when given (None: its per-device defaults). A failing script raises RemoteCommandError
    (exit 6) and leaves no run folder behind. `device` is --device (None: auto): on a
    target that requests a GPU, auto insists on it (`nsightlab.measure.device`)."""
    if dtype is not None:
        known = canonical_dtype(dtype)
        if known is None:
            raise UsageError(
                f"--dtype '{dtype}' is not an element type the sweep knows", hint=f"Use one of {dtype_choices()}."
            )
        dtype = known
    if impl not in IMPLS or op not in OPS:
        raise UsageError(
            f"--impl {impl} --op {op}: the sweep knows --impl {' or '.join(IMPLS)} and --op {' or '.join(OPS)}"
        )
    if impl == "triton" and dtype is not None and dtype not in TRITON_DTYPES:
        raise UsageError(f"--impl triton takes {', '.join(TRITON_DTYPES)}, not {dtype}")
    plan = plan_device(where, device)
    if plan.note():
        env.note(str(plan.note()))
    here = str(where.meta.get("target") or where.target.label)
    if against is not None and against.target != here:
        env.note(
            f"note: run {against.run_id} ran on {against.target} and this one runs on {here}: the comparison is "
            "across two targets"
        )
    with LabWork("sweep", where.target) as work:
        return _sweep(
            work,
            env,
            where,
            dtype=dtype,
            sizes=sizes,
            iters=iters,
            warmup=warmup,
            against=against,
            plan=plan,
            impl=impl,
            op=op,
        )


def _sweep(
    work: LabWork,
    env: Env,
    where: Where,
    *,
    dtype: str | None,
    sizes: Sequence[int] | None,
    iters: int | None,
    warmup: int | None,
    against: SweepResult | None,
    plan: DevicePlan,
    impl: str,
    op: str,
) -> SweepResult:
    target = where.target
    started = datetime.now(timezone.utc)
    workdir: str | None = None
    try:
        workdir = target.workdir()
        remote_script = f"{workdir}/{SCRIPT}"
        remote_json = f"{workdir}/{RAW_JSON}" if impl == "torch" else f"{workdir}/{impl}-{RAW_JSON}"
        target.put(assets.lab_script(SCRIPT), remote_script)
        target.put(assets.lab_script(assets.LAB_COMMON), f"{workdir}/{assets.LAB_COMMON}")
        argv = [target.python, remote_script, "--impl", impl, "--op", op]
        for flag, value in (("--dtype", dtype), ("--iters", iters), ("--warmup", warmup)):
            if value is not None:
                argv += [flag, str(value)]
        if sizes:
            argv += ["--sizes", ",".join(str(n) for n in sizes)]
        argv += ["--device", plan.script_arg, "--json", remote_json, "--progress", "json"]
        script_env = triton_env(env, target, plan) if impl == "triton" else {}

        log = bytearray()
        out = _Lines(_rows_shown(env.note), log.extend)
        err = _Lines(env.note, log.extend)
        what = f"{dtype or 'the default type'}" + ("" if impl == "torch" else f" with {impl}")
        with env.status(f"sweeping {what} on {target.label}"):
            code = target.stream(argv, on_stdout=out, on_stderr=err, env=script_env or None)
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
        shown_argv = ["env", *(f"{k}={v}" for k, v in script_env.items()), *argv] if script_env else argv
        return _store(work, target, where, remote_json, bytes(log), started, shown_argv, against, plan)
    finally:
        if workdir is not None and isinstance(target, LocalTarget):
            with contextlib.suppress(OSError):
                shutil.rmtree(workdir)


def run_impls(
    env: Env,
    where: Where,
    *,
    op: str,
    dtype: str | None,
    sizes: Sequence[int] | None,
    iters: int | None,
    warmup: int | None,
    device: str | None,
) -> SweepImpls:
    """The same op with a Triton kernel, then with torch, on one target, each stored as a
    sweep run, and the two compared size by size. Triton goes first (a missing triton or
    a wrong result stops it before the longer torch run), and torch then runs at the type
    and sizes Triton ran, so that every size has both."""
    triton = run_sweep(
        env, where, dtype=dtype, sizes=sizes, iters=iters, warmup=warmup, device=device, impl="triton", op=op
    )
    ran = sorted({r.log2 for r in triton.record.rows} | {s.log2 for s in triton.record.skipped})
    torch = run_sweep(
        env,
        where,
        dtype=triton.dtype,
        sizes=sizes or ran or None,
        iters=iters,
        warmup=warmup,
        device=device,
        impl="torch",
        op=op,
    )
    return compare_impls(torch, triton)


def _store(
    work: LabWork,
    target: Target,
    where: Where,
    remote_json: str,
    log: bytes,
    started: datetime,
    argv: list[str],
    against: SweepResult | None,
    plan: DevicePlan,
) -> SweepResult:
    """A new run folder with what came back, meta.json, and result.json written last."""
    with tempfile.TemporaryDirectory(prefix="nsightlab-sweep-") as tmp:
        fetched = Path(tmp) / RAW_JSON
        target.get(remote_json, fetched)
        record = load_record(fetched)  # before the run folder: its name is what ran
        run, run_id = work.new_run("sweep", run_name(record), now=started)
        try:
            (run.raw / RAW_LOG).write_bytes(log)
            shutil.copyfile(fetched, run.raw / RAW_JSON)
            command = _command(record, plan.requested if plan.requested != "auto" else None, where.meta)
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
            if plan.on_purpose_cpu:
                result.summary.notes.append(f"measured on the CPU on purpose (--device cpu), {plan.place} with a GPU")
            meta = RunMeta(
                id=run_id,
                kind="sweep",
                name=run_name(record),
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
                device_requested=plan.requested,
                image=_str(where.meta.get("image")),
                versions={
                    "torch": dev.torch,
                    "cuda": dev.cuda,
                    "python": dev.python,
                    "driver": dev.driver,
                    "nsightlab": __version__,
                    **({"triton": record.triton} if record.impl == "triton" else {}),
                },
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
        return (
            "Install torch here (pip install torch) or run in the lab pod."
            if local
            else "The lab pod's image needs PyTorch."
        )
    if code == 127:
        return "Python was not found on the target."
    if code == SCRIPT_NO_TRITON_EXIT:
        return (
            "Install triton here (pip install 'nsightlab[triton]'), or use --impl torch."
            if local
            else "The lab pod's image needs triton for --impl triton; use --impl torch there."
        )
    if code == SCRIPT_CHECK_FAILED_EXIT:
        return "The Triton kernel's result differs from torch's: the numbers would mean nothing, so nothing was stored."
    return "The script's output is above."
