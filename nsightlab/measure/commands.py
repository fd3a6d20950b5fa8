"""The commands that run lab work on a target, each the one call its CLI command makes:
`profile` (and `profile decode`), `ncu`, `sweep`, `pack colocate` and `pack tokenizer`.

Each takes the request its command's options make and the target the user chose
(`TargetChoice`: this machine with --local, else the lab pod of --context/-n or of the lab
session), checks the request before anything runs, opens the target, runs the work,
stores it and returns the typed result.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from nsightlab.analysis.colocate_models import ColocateResult
from nsightlab.analysis.decode_models import DecodeResult
from nsightlab.analysis.ncu_result import NcuResult
from nsightlab.analysis.profile_models import ProfileResult
from nsightlab.analysis.sweep_impls import SweepImpls
from nsightlab.analysis.sweep_result import SweepCompare, SweepResult
from nsightlab.analysis.tokenizer_result import TokenizerResult
from nsightlab.errors import UsageError
from nsightlab.measure import bandwidth_sweep as sw
from nsightlab.measure.decode_profile import DecodeOptions, DecodeProfiler, run_decode
from nsightlab.measure.device import plan_device
from nsightlab.measure.ncu import run_ncu
from nsightlab.measure.pack_scripts import ColocateOptions, run_colocate, run_tokenizer
from nsightlab.measure.profile import Serving, run_profile
from nsightlab.measure.targets import Where, open_target
from nsightlab.runs.sweeps import compare_runs
from nsightlab.userconfig import load_config

if TYPE_CHECKING:
    from nsightlab.env import Env


@dataclass(frozen=True)
class TargetChoice:
    """Where the user asked for the work to run: this machine (`local`), else the lab
    pod of `context` (or the lab session's) in `namespace`."""

    local: bool = False
    context: str | None = None
    kubeconfig: Path | None = None
    namespace: str | None = None
    config_path: Path | None = None

    @contextmanager
    def open(self, env: Env, action: str) -> Iterator[Where]:
        """The target, open (`nsightlab.measure.targets.open_target`); `action` names the
        change a protected context refuses."""
        with open_target(
            env,
            local=self.local,
            context=self.context,
            kubeconfig=self.kubeconfig,
            namespace=self.namespace,
            config_path=self.config_path,
            action=action,
        ) as where:
            yield where

    def command_line(self, words: Sequence[str], *, after_dashes: Sequence[str] = ()) -> str:
        """`nsightlab WORDS` on this target, then `-- AFTER_DASHES`, shell-quoted: a hint's
        command line, pasted as printed (it carries what the user gave, never a placeholder)."""
        argv = ["nsightlab", *words]
        if self.local:
            argv.append("--local")
        else:
            argv += ["--context", self.context] if self.context else []
            argv += ["-n", self.namespace] if self.namespace else []
        if after_dashes:
            argv += ["--", *after_dashes]
        return shlex.join(argv)


# ---------------------------------------------------------------------------- profile


@dataclass(frozen=True)
class ProfileRequest:
    """What `nsightlab profile` was given. `serving_command` is what followed `--` on the
    command line as typed (None: no `--`): with --serving, the server's command."""

    script: str
    script_args: list[str] = field(default_factory=list)
    profiler: DecodeProfiler = "nsys"  # none: `profile decode` only
    nsys_args: str = ""
    serving: bool = False
    serving_command: list[str] | None = None
    delay: int | None = None
    duration: int | None = None
    device: str = "auto"
    decode: DecodeOptions = field(default_factory=DecodeOptions)  # `profile decode`'s own options


def profile(env: Env, target: TargetChoice, request: ProfileRequest) -> ProfileResult | DecodeResult:
    """A script (or a server, or decode.py's loop) profiled on the target and stored."""
    plan, args = _serving(request)
    if request.script == "decode" and not request.serving:
        options = replace(request.decode, extra=args)
        options.check()
        with target.open(env, "profile decode in a pod") as w:
            return run_decode(
                env,
                w.target,
                w.meta,
                options=options,
                profiler=request.profiler,
                nsys_args=shlex.split(request.nsys_args),
                device=plan_device(w, request.device),
            )
    given = {flag: str(value) for flag, value in _decode_flags(request.decode).items() if value is not None}
    if given or request.profiler == "none":
        raise _decode_only(target, request.script, given)
    with target.open(env, "profile in a pod") as w:
        return run_profile(
            env,
            w.target,
            w.meta,
            script=request.script,
            script_args=args,
            profiler=request.profiler,
            nsys_args=shlex.split(request.nsys_args),
            serving=plan,
            device=plan_device(w, request.device),
        )


def _serving(request: ProfileRequest) -> tuple[Serving | None, list[str]]:
    """The server's window and command with --serving (everything after `--`, verbatim:
    none of it is ours); else no window, and the script's arguments."""
    if not request.serving:
        if request.delay is not None or request.duration is not None:
            raise UsageError(
                "--delay and --duration go with --serving",
                hint="For a script, pass nsys's own with --nsys-args, e.g. --nsys-args '--delay=5'.",
            )
        return None, list(request.script_args)
    command = request.serving_command
    if not command or [request.script, *request.script_args] != command:
        raise UsageError(
            "with --serving, the server's command goes after --, and nothing else",
            hint="e.g. `nsightlab profile --serving -- vllm serve Qwen/Qwen2.5-0.5B --profiler-config.profiler cuda`.",
        )
    if request.delay is not None and request.duration is None:
        raise UsageError(
            "--delay needs --duration: a server does not stop by itself, so a window that starts late needs an end"
        )
    return Serving(delay=request.delay, duration=request.duration), list(command)


def _decode_flags(options: DecodeOptions) -> dict[str, object]:
    return {
        "--preset": options.preset,
        "--batch": options.batch,
        "--tokens": options.tokens,
        "--prompt-len": options.prompt_len,
        "--modes": options.modes,
        "--dtype": options.dtype,
    }


def _decode_only(target: TargetChoice, script: str, given: dict[str, str]) -> UsageError:
    """The error for `profile SCRIPT` given options only `profile decode` takes: the
    script's own go after `--`, and the command that passes them there."""
    mine = [word for pair in given.items() for word in pair]
    line = target.command_line(["profile", script], after_dashes=mine)
    if given:
        flags = ", ".join(given)
        hint = f"To pass them to your script: `{line}`."
    else:
        flags = "--profiler none"
        hint = f"A script runs under nsys or torch.profiler: `{line}`."
    these = "this option" if len(given) < 2 else "these options"
    return UsageError(f"{flags}: only `profile decode` takes {these}", hint=hint)


# ---------------------------------------------------------------------------- ncu


@dataclass(frozen=True)
class NcuRequest:
    """What `nsightlab ncu` was given."""

    script: str = "lesson1"
    script_args: list[str] = field(default_factory=list)
    kernel: str = "vectorized_elementwise"
    sections: list[str] = field(default_factory=lambda: ["SpeedOfLight"])
    count: int = 1
    device: str = "auto"


def ncu(env: Env, target: TargetChoice, request: NcuRequest) -> NcuResult:
    """Nsight Compute on the kernels `request.kernel` matches, on the target, stored."""
    if request.device == "cpu":  # nothing for ncu there; torch.profiler times the same script on the CPU
        torch = target.command_line(["profile", request.script, "--profiler", "torch", "--device", "cpu"])
        raise UsageError(
            "ncu profiles GPU kernels: --device cpu leaves it nothing to measure",
            hint=f"On the CPU, torch.profiler times its ops: `{torch}`.",
        )
    with target.open(env, "run ncu in a pod") as w:
        return run_ncu(
            env,
            w.target,
            w.meta,
            script=request.script,
            script_args=request.script_args,
            kernel=request.kernel,
            sections=request.sections,
            count=request.count,
            device=plan_device(w, request.device),
        )


# ---------------------------------------------------------------------------- sweep


@dataclass(frozen=True)
class SweepRequest:
    """What `nsightlab sweep` was given (None: the script's or the compared run's)."""

    dtype: str | None = None
    sizes: str | None = None
    iters: int | None = None
    warmup: int | None = None
    impl: str | None = None
    op: str | None = None
    compare: list[str] = field(default_factory=list)
    device: str | None = None


def sweep(env: Env, target: TargetChoice, request: SweepRequest) -> SweepResult | SweepImpls | SweepCompare:
    """The sweep run on the target and stored (torch and Triton side by side with two
    implementations); two runs given to --compare: those compared, nothing run."""
    refs = request.compare
    if len(refs) > 2:
        raise UsageError("--compare takes one stored run (checked against a new one) or two (compared as they are)")
    if len(refs) == 2:
        return compare_runs(refs[0], refs[1])
    plan = sw.plan_sweep(
        dtype=request.dtype,
        sizes=request.sizes,
        iters=request.iters,
        warmup=request.warmup,
        device=request.device,
        compare=refs[0] if refs else None,
        impl=request.impl,
        op=request.op,
    )
    for line in plan.notes:
        env.note(line)
    with target.open(env, "run a sweep in a pod") as w:
        if len(plan.impls) > 1:
            return sw.run_impls(
                env,
                w,
                op=plan.op,
                dtype=plan.dtype,
                sizes=plan.sizes,
                iters=plan.iters,
                warmup=plan.warmup,
                device=plan.device,
            )
        return sw.run_sweep(
            env,
            w,
            dtype=plan.dtype,
            sizes=plan.sizes,
            iters=plan.iters,
            warmup=plan.warmup,
            device=plan.device,
            against=plan.against,
            impl=plan.impls[0],
            op=plan.op,
        )


# ---------------------------------------------------------------------------- pack's measurements


def colocate(env: Env, target: TargetChoice, options: ColocateOptions, *, device: str = "auto") -> ColocateResult:
    """K copies of decode.py's loop at once on the target's GPU, stored (kind pack)."""
    options.check()
    with target.open(env, "run copies of a decode loop in a pod") as w:
        return run_colocate(env, w.target, w.meta, options=options, device=plan_device(w, device))


@dataclass(frozen=True)
class TokenizerRequest:
    """What `nsightlab pack tokenizer` was given (`pod_cpu` None: lab.cpu of config.yaml)."""

    tokenizer: str
    prompts: Path | None = None
    prompt_len: int | None = None
    requests: int | None = None
    pod_cpu: str | None = None


def tokenizer(env: Env, target: TargetChoice, request: TokenizerRequest) -> TokenizerResult:
    """A tokenizer's CPU cost on the target, stored (kind tokenizer)."""
    cpu = request.pod_cpu if request.pod_cpu is not None else load_config(target.config_path).config.lab.cpu
    with target.open(env, "time a tokenizer in a pod") as w:
        return run_tokenizer(
            env,
            w.target,
            w.meta,
            tokenizer=request.tokenizer,
            prompts=request.prompts,
            prompt_len=request.prompt_len,
            requests=request.requests,
            pod_cpu=cpu,
        )
