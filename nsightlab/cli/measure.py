"""Lab work on a target: profile, ncu, sweep."""

from enum import Enum
from typing import Annotated, Optional

import typer

from nsightlab.cli.common import (
    STATE,
    ContextOpt,
    JsonOpt,
    KubeconfigOpt,
    LocalOpt,
    NamespaceOpt,
    app,
    make_env,
    show,
)


class ProfilerChoice(str, Enum):
    nsys = "nsys"
    torch = "torch"
    none = "none"

# `profile decode` only: passed to lab_scripts/decode.py (None: the script's default)
_DECODE = "decode (options for `profile decode`)"
PresetOpt = Annotated[Optional[str], typer.Option("--preset", help="decode: the model's shape: tiny, llama-1b, llama-3b, llama-8b, qwen-0.5b (default: llama-1b on a GPU, tiny on a CPU).", show_default=False, rich_help_panel=_DECODE)]  # noqa: UP045
BatchOpt = Annotated[Optional[str], typer.Option("--batch", metavar="B,B,...", help="decode: batch sizes, e.g. 1,8,32,128 (default 1).", show_default=False, rich_help_panel=_DECODE)]  # noqa: UP045
TokensOpt = Annotated[Optional[int], typer.Option("--tokens", help="decode: timed decode steps per mode and batch (default 128).", show_default=False, rich_help_panel=_DECODE)]  # noqa: UP045
PromptOpt = Annotated[Optional[int], typer.Option("--prompt-len", help="decode: prompt positions before the first step (default 128).", show_default=False, rich_help_panel=_DECODE)]  # noqa: UP045
ModesOpt = Annotated[Optional[str], typer.Option("--modes", metavar="eager,graphs", help="decode: launch each kernel from Python (eager), replay a CUDA graph (graphs), or both (the default on a GPU).", show_default=False, rich_help_panel=_DECODE)]  # noqa: UP045
DtypeOpt = Annotated[Optional[str], typer.Option("--dtype", help="decode: bfloat16, float16 or float32 (default bfloat16 on a GPU, float32 on a CPU).", show_default=False, rich_help_panel=_DECODE)]  # noqa: UP045
DecodeDeviceOpt = Annotated[Optional[str], typer.Option("--device", metavar="auto|cuda|cpu", help="decode: auto (in the lab pod: its GPU), cuda (the GPU, else exit 6), cpu (on purpose).", show_default=False, rich_help_panel=_DECODE)]  # noqa: UP045

@app.command(context_settings={"allow_interspersed_args": True})
def profile(
    script: Annotated[str, typer.Argument(help="a built-in lab script (lesson1) or a path to your .py file.")],
    script_args: Annotated[Optional[list[str]], typer.Argument(help="arguments for the script (after --).", show_default=False)] = None,  # noqa: UP045
    profiler: Annotated[ProfilerChoice, typer.Option("--profiler", help="nsys, or torch (torch.profiler: for targets without Nsight); `profile decode` also takes none (the script's own step times).")] = ProfilerChoice.nsys,
    nsys_args: Annotated[str, typer.Option("--nsys-args", help="extra options for `nsys profile`, e.g. '--sample=none'.")] = "",
    local: LocalOpt = False,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    top: Annotated[int, typer.Option("--top", help="kernels to show (all of them are in --json).", min=1)] = 15,
    preset: PresetOpt = None,
    batch: BatchOpt = None,
    tokens: TokensOpt = None,
    prompt_len: PromptOpt = None,
    modes: ModesOpt = None,
    dtype: DtypeOpt = None,
    decode_device: DecodeDeviceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Profile a script under Nsight Systems: kernel table, then TB/s and TFLOPS per range.

    Runs the tutorial's `nsys profile -o BASE -f true -t cuda,nvtx python3 SCRIPT` on
    the lab pod (or this machine with --local), exports the reports with
    `nsys stats --force-export=true`, stores everything (CSVs, the script's JSON and
    the .nsys-rep) as a run, then shows the kernels, the rates of the timed ranges
    against the GPU's spec, and what they mean.

    `profile decode` profiles an LLM decode loop (lab_scripts/decode.py) and tells where
    a token's time goes: step time, GPU idle between kernels, the top kernels, the
    memory floor (bytes per step / DRAM bandwidth) and a verdict, per mode and batch.
    `--profiler none` runs it without a profiler (the script's own step times).

    \b
    Example:
      nsightlab profile lesson1
      nsightlab profile lesson1 --local --profiler torch
      nsightlab profile my_model.py -- --batch 8
      nsightlab profile decode --preset llama-1b --batch 1,8,32 --modes eager,graphs
      nsightlab profile decode --local --profiler torch --preset tiny
    """
    import shlex

    from nsightlab.measure.profile import run_profile
    from nsightlab.measure.targets import open_target
    from nsightlab.present import render

    env = make_env(json_out)
    decode_opts = {"--preset": preset, "--batch": batch, "--tokens": tokens, "--prompt-len": prompt_len, "--modes": modes, "--dtype": dtype, "--device": decode_device}
    if script == "decode":
        from nsightlab.measure.decode import DecodeOptions, run_decode

        options = DecodeOptions(preset=preset, batch=batch, tokens=tokens, prompt_len=prompt_len, modes=modes, dtype=dtype, device=decode_device, extra=list(script_args or []))
        options.check()
        with open_target(env, local=local, context=context, kubeconfig=kubeconfig, namespace=namespace, config_path=STATE.config_path, action="profile decode in a pod") as w:
            decoded = run_decode(env, w.target, w.meta, options=options, profiler=profiler.value, nsys_args=shlex.split(nsys_args))
        show(env, decoded, render.decode)
        return
    given = [flag for flag, value in decode_opts.items() if value is not None]
    if given or profiler is ProfilerChoice.none:
        from nsightlab.errors import UsageError

        flags = ", ".join(given) or "--profiler none"
        raise UsageError(f"{flags}: only `profile decode` takes {'this option' if len(given) < 2 else 'these options'}", hint=f"Pass your script's own options after --: `nsightlab profile {script} -- ...`.")
    with open_target(env, local=local, context=context, kubeconfig=kubeconfig, namespace=namespace, config_path=STATE.config_path, action="profile in a pod") as w:
        result = run_profile(
            env,
            w.target,
            w.meta,
            script=script,
            script_args=list(script_args or []),
            profiler=profiler.value,
            nsys_args=shlex.split(nsys_args),
        )
    if env.json:
        env.print_json(result)
    else:
        render.profile(env, result, top=top)

@app.command(context_settings={"allow_interspersed_args": True})
def ncu(
    script: Annotated[str, typer.Argument(help="a built-in lab script (lesson1) or a path to your .py file.")] = "lesson1",
    script_args: Annotated[Optional[list[str]], typer.Argument(help="arguments for the script (after --).", show_default=False)] = None,  # noqa: UP045
    kernel: Annotated[str, typer.Option("--kernel", "-k", help="regex of the kernel to profile (default: lesson1's scale kernel).")] = "vectorized_elementwise",
    section: Annotated[Optional[list[str]], typer.Option("--section", help="ncu section(s) to collect.", show_default=False)] = None,  # noqa: UP045
    count: Annotated[int, typer.Option("--count", "-c", help="kernel launches to profile.", min=1)] = 1,
    local: LocalOpt = False,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Nsight Compute on one kernel: DRAM, memory, L2 and SM throughput, with a verdict.

    Runs the tutorial's `ncu -k regex:vectorized_elementwise -c 1 --section SpeedOfLight`.
    If the GPU's counters are locked (ERR_NVGPUCTRPERM) it exits 7 and says what to do.

    \b
    Example:
      nsightlab ncu
      nsightlab ncu lesson1 --kernel gemm --section SpeedOfLight --section MemoryWorkloadAnalysis
    """
    from nsightlab.measure.ncu import run_ncu
    from nsightlab.measure.targets import open_target
    from nsightlab.present import render

    env = make_env(json_out)
    with open_target(env, local=local, context=context, kubeconfig=kubeconfig, namespace=namespace, config_path=STATE.config_path, action="run ncu in a pod") as w:
        result = run_ncu(env, w.target, w.meta, script=script, script_args=list(script_args or []), kernel=kernel, sections=list(section or ["SpeedOfLight"]), count=count)
    show(env, result, render.ncu)

class _Dtype(str, Enum):
    float16 = "float16"
    bfloat16 = "bfloat16"
    float32 = "float32"
    float64 = "float64"

class _Device(str, Enum):
    cpu = "cpu"
    cuda = "cuda"

@app.command()
def sweep(
    dtype: Annotated[Optional[_Dtype], typer.Option("--dtype", help="element type (default float16; with --compare, the other element size).", show_default=False)] = None,  # noqa: UP045
    sizes: Annotated[Optional[str], typer.Option("--sizes", metavar="N,N,...", help="log2 of the element counts, 10..34, e.g. 16,20,24 (default: 16..30 on a GPU, 12..26 on a CPU).", show_default=False)] = None,  # noqa: UP045
    iters: Annotated[Optional[int], typer.Option("--iters", help="timed calls per size (default 50).", min=1, show_default=False)] = None,  # noqa: UP045
    warmup: Annotated[Optional[int], typer.Option("--warmup", help="warm-up calls per size (default 5).", min=0, show_default=False)] = None,  # noqa: UP045
    compare: Annotated[Optional[list[str]], typer.Option("--compare", metavar="RUN", help="a stored sweep (id, prefix or 'latest') to check against; give it twice to compare two stored runs without running anything.", show_default=False)] = None,  # noqa: UP045
    local: LocalOpt = False,
    device: Annotated[Optional[_Device], typer.Option("--device", help="cuda or cpu (default: cuda if the target has one).", show_default=False)] = None,  # noqa: UP045
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Memory-bandwidth sweep: time an in-place scale at many sizes and name the launch,
    cache and DRAM regimes, with the DRAM plateau against the GPU's spec.

    Runs lab_scripts/sweep.py in the lab pod (or on this machine with --local), rows
    appearing as they are measured, then stores the run and shows the table, the
    summary and the lesson. Bytes per call = 2 x elements x element size (read + write).
    --compare checks the tutorial's prediction: in the DRAM regime, float32 takes twice
    float16's time at the same TB/s.

    \b
    Example:
      nsightlab sweep --dtype float16
      nsightlab sweep --compare latest          # float32 now, checked against it
      nsightlab sweep --local --device cpu --sizes 12,16,20,24
      nsightlab sweep --compare 3fa2c1 --compare 9b07d4 --json
    """
    from nsightlab.errors import UsageError
    from nsightlab.measure import sweep as sw
    from nsightlab.measure.targets import open_target
    from nsightlab.present import render
    from nsightlab.runs.sweeps import compare_runs

    env = make_env(json_out)
    refs = list(compare or [])
    if len(refs) > 2:
        raise UsageError("--compare takes one stored run (checked against a new one) or two (compared as they are)")
    if len(refs) == 2:
        cmp = compare_runs(refs[0], refs[1])
        if env.json:
            env.print_json(cmp)
        else:
            render.sweep_compare(env, cmp)
        return
    plan = sw.plan_sweep(
        dtype=dtype.value if dtype else None,
        sizes=sizes,
        iters=iters,
        warmup=warmup,
        device=device.value if device else None,
        compare=refs[0] if refs else None,
    )
    for line in plan.notes:
        env.note(line)
    with open_target(env, local=local, context=context, kubeconfig=kubeconfig, namespace=namespace, config_path=STATE.config_path, action="run a sweep in a pod") as w:
        result = sw.run_sweep(env, w, dtype=plan.dtype, sizes=plan.sizes, iters=plan.iters, warmup=plan.warmup, device=plan.device, against=plan.against)
    show(env, result, render.sweep)
