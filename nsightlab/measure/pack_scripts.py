"""`pack colocate` and `pack tokenizer`: lab scripts run on a target (the lab pod, or this
machine with --local), their JSON brought into the run store, then read.

- colocate: `lab_scripts/colocate.py` (with decode.py, decode_model.py and labcommon.py
  beside it) runs K copies of the decode loop at once for each K; stored as kind `pack`,
  with the DRAM plateau of the device from the store (a sweep of it, else its spec).
- tokenizer: `lab_scripts/tokenizer_cpu.py` times a tokenizer the target has over a
  prompts file (copied there) or generated prompts; stored as kind `tokenizer`.

Both are stored whole or not at all (`LabWork`); the result is on disk before it is
printed.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsightlab import assets, kubevalues
from nsightlab.analysis.colocate_models import ColocateResult
from nsightlab.analysis.colocate_result import build_colocate
from nsightlab.analysis.tokenizer_result import TokenizerResult, build_tokenizer
from nsightlab.errors import RemoteCommandError, UsageError
from nsightlab.measure.device import DevicePlan, no_gpu_error
from nsightlab.measure.profile import streamer
from nsightlab.measure.work import LabWork
from nsightlab.parse.records.colocate_record import load_colocate_record
from nsightlab.parse.records.tokenizer_record import check_prompts, load_tokenizer_record
from nsightlab.runs.floor import floor_bandwidth
from nsightlab.runs.store import RunMeta
from nsightlab.userconfig import read_text_file

if TYPE_CHECKING:
    from nsightlab.env import Env
    from nsightlab.measure.targets import Target

COLOCATE = "colocate.py"
TOKENIZER = "tokenizer_cpu.py"
RAW_LOG = "run.log"
# the scripts' exit codes (lab_scripts/README.md)
SCRIPT_USAGE_EXIT = 2
SCRIPT_NO_ROOM_EXIT = 4
SCRIPT_WORKER_EXIT = 5


@dataclass
class ColocateOptions:
    preset: str | None = None
    copies: str = "1,2,4,8"
    batch: int | None = None
    tokens: int | None = None
    prompt_len: int | None = None

    def check(self) -> None:
        parts = [p.strip() for p in self.copies.split(",")]
        if not parts or not all(p.isdigit() and 0 < int(p) <= 64 for p in parts):
            raise UsageError(
                f"--copies must be whole numbers from 1 to 64 separated by commas (1,2,4,8), got '{self.copies}'"
            )

    def script_args(self, device: DevicePlan) -> list[str]:
        args = ["--device", device.script_arg, "--copies", self.copies]
        for flag, value in (
            ("--preset", self.preset),
            ("--batch", self.batch),
            ("--tokens", self.tokens),
            ("--prompt-len", self.prompt_len),
        ):
            if value is not None:
                args += [flag, str(value)]
        return args


def _failed(script: str, code: int, tail: list[str], label: str, plan: DevicePlan | None) -> Exception:
    last = tail[-1][:300] if tail else ""
    if plan is not None:
        no_gpu = no_gpu_error(plan, code, tail)
        if no_gpu is not None:
            return no_gpu
    if code == SCRIPT_USAGE_EXIT and last.startswith(script):
        return UsageError(f"{script} refused its options: {last}")
    if code == SCRIPT_NO_ROOM_EXIT:
        return RemoteCommandError(f"{script} on {label}: {last}", returncode=code)
    return RemoteCommandError(f"{script} failed on {label} (exit {code}): {last}", returncode=code)


def _run_script(
    env: Env,
    target: Target,
    script: str,
    extra_files: list[str],
    args: list[str],
    out_name: str,
    plan: DevicePlan | None,
) -> tuple[str, bytes]:
    """Copy the script (and what it needs) to the target, run it streaming its output;
    the remote path of its JSON and the output as it came."""
    wd = target.workdir()
    for name in (script, *extra_files, assets.LAB_COMMON):
        target.put(assets.lab_script(name), posixpath.join(wd, name))
    out = posixpath.join(wd, out_name)
    argv = [target.python, posixpath.join(wd, script), *args, "--out", out]
    env.note(f"running on {target.label}: {shlex.join(argv[1:])}")
    log = bytearray()
    out_cb, err_cb, tail = streamer(env, log)
    code = target.stream(argv, on_stdout=out_cb, on_stderr=err_cb)
    if code != 0:
        raise _failed(script, code, tail, target.label, plan)
    return out, bytes(log)


def _meta(
    kind: str, name: str, run_id: str, command: list[str], headline: str, device: str, fields: dict[str, Any]
) -> RunMeta:
    cpu = device.startswith("cpu")
    return RunMeta(
        id=run_id,
        kind=kind,
        name=name,
        created=datetime.now(timezone.utc),
        command=command,
        headline=headline,
        gpu=None if cpu else device,
        device=device,
        device_type="cpu" if cpu else "cuda",
        **{k: v for k, v in fields.items() if k in RunMeta.model_fields and k not in ("gpu", "device", "device_type")},
    )


def run_colocate(
    env: Env, target: Target, meta_fields: dict[str, Any], *, options: ColocateOptions, device: DevicePlan
) -> ColocateResult:
    """K copies of the decode loop at once on the target; stored as kind `pack`."""
    options.check()
    with LabWork("colocate run", target) as work:
        if device.note():
            env.note(str(device.note()))
        remote, log = _run_script(
            env,
            target,
            COLOCATE,
            ["decode.py", assets.DECODE_MODEL],
            options.script_args(device),
            "colocate.json",
            device,
        )
        run, run_id = work.new_run("pack", options.preset or "colocate")
        (run.raw / RAW_LOG).write_bytes(log)
        target.get(remote, run.raw / "colocate.json")
        record = load_colocate_record(run.raw / "colocate.json")
        cpu = record.device_type == "cpu"
        bandwidth, _ = floor_bandwidth(record.device_name, "cpu" if cpu else "cuda", record.model.get("dtype"))
        result = build_colocate(
            record,
            plateau_tbps=bandwidth.tbps if bandwidth else None,
            basis=bandwidth.basis if bandwidth else None,
            label=bandwidth.label if bandwidth else None,
        )
        result.run_id = run_id
        command = ["nsightlab", "pack", "colocate", *options.script_args(device)]
        run.write_meta(
            _meta("pack", options.preset or "colocate", run_id, command, result.headline, result.device, meta_fields)
        )
        run.write_result(result)
        env.note(f"stored as run {run_id} ({run.path})")
        return result


def run_tokenizer(
    env: Env,
    target: Target,
    meta_fields: dict[str, Any],
    *,
    tokenizer: str,
    prompts: Path | None,
    prompt_len: int | None,
    requests: int | None,
    pod_cpu: str | None,
) -> TokenizerResult:
    """The tokenizer's CPU cost on the target; stored as kind `tokenizer`."""
    cpu = None
    if pod_cpu is not None:
        try:
            cpu = float(kubevalues.parse_quantity(kubevalues.check_quantity(pod_cpu)))
        except ValueError as e:
            raise UsageError(f"--pod-cpu {pod_cpu!r} is not a CPU quantity (4, 500m): {e}") from None
    if prompts is not None:
        if not prompts.is_file():
            raise UsageError(f"--prompts {prompts} is not a file", hint="Give a JSON-lines or text file of prompts.")
        check_prompts(read_text_file(prompts, what="prompts file", error=UsageError), source=str(prompts))
    with LabWork("tokenizer run", target) as work:
        args = ["--tokenizer", tokenizer]
        if prompts is not None:
            remote_prompts = posixpath.join(target.workdir(), "prompts" + prompts.suffix)
            target.put(prompts, remote_prompts)
            args += ["--prompts", remote_prompts]
        for flag, value in (("--prompt-len", prompt_len), ("--requests", requests)):
            if value is not None:
                args += [flag, str(value)]
        remote, log = _run_script(env, target, TOKENIZER, [], args, "tokenizer.json", None)
        name = Path(tokenizer).name or "tokenizer"
        run, run_id = work.new_run("tokenizer", name)
        (run.raw / RAW_LOG).write_bytes(log)
        target.get(remote, run.raw / "tokenizer.json")
        result = build_tokenizer(load_tokenizer_record(run.raw / "tokenizer.json"), pod_cpu=cpu)
        result.run_id = run_id
        command = ["nsightlab", "pack", "tokenizer", *args]
        run.write_meta(_meta("tokenizer", name, run_id, command, result.headline, result.device, meta_fields))
        run.write_result(result)
        env.note(f"stored as run {run_id} ({run.path})")
        return result
