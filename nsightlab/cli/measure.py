"""Lab work on a target: profile, ncu, sweep."""

from enum import Enum
from functools import partial
from typing import Annotated

import typer

from nsightlab.analysis.profile_models import ProfileResult
from nsightlab.cli.common import (
    STATE,
    ContextOpt,
    JsonOpt,
    KubeconfigOpt,
    LocalOpt,
    NamespaceOpt,
    make_env,
    number,
    show,
)
from nsightlab.measure import commands as run
from nsightlab.measure.commands import NcuRequest, ProfileRequest, SweepRequest, TargetChoice
from nsightlab.measure.decode_profile import DecodeOptions
from nsightlab.present import decodeview, profileview
from nsightlab.present.resultviews import draw_result

commands = typer.Typer(rich_markup_mode=None)


class ProfilerChoice(str, Enum):
    nsys = "nsys"
    torch = "torch"
    none = "none"


# `profile decode` only: passed to lab_scripts/decode.py (None: the script's default)
_DECODE = "decode (options for `profile decode`)"
PresetOpt = Annotated[
    str | None,
    typer.Option(
        "--preset",
        help="decode: the model's shape: tiny, llama-1b, llama-3b, llama-8b, qwen-0.5b (default: llama-1b on a GPU, "
        "tiny on a CPU).",
        show_default=False,
        rich_help_panel=_DECODE,
    ),
]
BatchOpt = Annotated[
    str | None,
    typer.Option(
        "--batch",
        metavar="B,B,...",
        help="decode: batch sizes, e.g. 1,8,32,128 (default 1).",
        show_default=False,
        rich_help_panel=_DECODE,
    ),
]
TokensOpt = Annotated[
    int | None,
    typer.Option(
        "--tokens",
        help="decode: timed decode steps per mode and batch (default 128).",
        parser=number(int, minimum=1),
        show_default=False,
        rich_help_panel=_DECODE,
    ),
]
PromptOpt = Annotated[
    int | None,
    typer.Option(
        "--prompt-len",
        help="decode: prompt positions before the first step (default 128).",
        parser=number(int, minimum=1),
        show_default=False,
        rich_help_panel=_DECODE,
    ),
]
ModesOpt = Annotated[
    str | None,
    typer.Option(
        "--modes",
        metavar="eager,graphs",
        help="decode: launch each kernel from Python (eager), replay a CUDA graph (graphs), or both (the default on a "
        "GPU).",
        show_default=False,
        rich_help_panel=_DECODE,
    ),
]
DtypeOpt = Annotated[
    str | None,
    typer.Option(
        "--dtype",
        help="decode: bfloat16, float16 or float32 (default bfloat16 on a GPU, float32 on a CPU).",
        show_default=False,
        rich_help_panel=_DECODE,
    ),
]


class _Device(str, Enum):
    auto = "auto"
    cuda = "cuda"
    cpu = "cpu"


DeviceOpt = Annotated[
    _Device,
    typer.Option(
        "--device",
        help="auto (the GPU where the target requests one, else what torch sees), cuda, or cpu (measure the CPU on "
        "purpose).",
    ),
]


@commands.command(context_settings={"allow_interspersed_args": True})
def profile(
    script: Annotated[str, typer.Argument(help="a built-in lab script (lesson1) or a path to your .py file.")],
    script_args: Annotated[
        list[str] | None, typer.Argument(help="arguments for the script (after --).", show_default=False)
    ] = None,
    profiler: Annotated[
        ProfilerChoice,
        typer.Option(
            "--profiler",
            help="nsys, or torch (torch.profiler: for targets without Nsight); `profile decode` also takes none (the "
            "script's own step times).",
        ),
    ] = ProfilerChoice.nsys,
    nsys_args: Annotated[
        str, typer.Option("--nsys-args", help="extra options for `nsys profile`, e.g. '--sample=none'.")
    ] = "",
    serving: Annotated[
        bool,
        typer.Option(
            "--serving",
            help="Profile a server: the command after -- runs as given (e.g. vllm serve ...), with the nsys options "
            "vLLM's profiling guide asks for.",
        ),
    ] = False,
    delay: Annotated[
        int | None,
        typer.Option(
            "--delay",
            metavar="SECONDS",
            parser=number(int, minimum=0),
            help="with --serving and --duration: start collecting this many seconds after the server starts.",
            show_default=False,
        ),
    ] = None,
    duration: Annotated[
        int | None,
        typer.Option(
            "--duration",
            metavar="SECONDS",
            parser=number(int, minimum=1),
            help="with --serving: collect this many seconds, then nsys ends the server (default: between the server's "
            "cudaProfilerStart and Stop).",
            show_default=False,
        ),
    ] = None,
    device: DeviceOpt = _Device.auto,
    local: LocalOpt = False,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    top: Annotated[
        int, typer.Option("--top", help="kernels to show (all of them are in --json).", parser=number(int, minimum=1))
    ] = 15,
    preset: PresetOpt = None,
    batch: BatchOpt = None,
    tokens: TokensOpt = None,
    prompt_len: PromptOpt = None,
    modes: ModesOpt = None,
    dtype: DtypeOpt = None,
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

    With --serving, the command after -- is a server, run as given under
    `--trace-fork-before-exec=true --cuda-graph-trace=node`: nsys records between the
    server's cudaProfilerStart and Stop (vLLM: start it with --profiler-config.profiler
    cuda, then POST /start_profile and /stop_profile, or `vllm bench serve --profile`),
    or for --duration seconds after --delay; then nsys ends the server and the trace
    comes back as a run.

    In a lab pod (which requests a GPU) torch must see the GPU: a CPU-only torch is
    exit 6, unless --device cpu asks for the CPU on purpose. Your own script gets no
    --device; the profile tells where its ops ran.

    \b
    Example:
      nsightlab profile lesson1
      nsightlab profile lesson1 --local --profiler torch
      nsightlab profile my_model.py -- --batch 8
      nsightlab profile decode --preset llama-1b --batch 1,8,32 --modes eager,graphs
      nsightlab profile decode --local --profiler torch --preset tiny
      nsightlab profile --serving -- vllm serve Qwen/Qwen2.5-0.5B --profiler-config.profiler cuda
      nsightlab profile --serving --delay 60 --duration 20 -- vllm serve Qwen/Qwen2.5-0.5B
    """
    env = make_env(json_out)
    decode = DecodeOptions(preset=preset, batch=batch, tokens=tokens, prompt_len=prompt_len, modes=modes, dtype=dtype)
    request = ProfileRequest(
        script=script,
        script_args=list(script_args or []),
        profiler=profiler.value,
        nsys_args=nsys_args,
        serving=serving,
        serving_command=STATE.after_dashes,
        delay=delay,
        duration=duration,
        device=device.value,
        decode=decode,
    )
    result = run.profile(env, TargetChoice(local, context, kubeconfig, namespace, STATE.config_path), request)
    show(env, result, partial(profileview.profile, top=top) if isinstance(result, ProfileResult) else decodeview.decode)


@commands.command(context_settings={"allow_interspersed_args": True})
def ncu(
    script: Annotated[
        str, typer.Argument(help="a built-in lab script (lesson1) or a path to your .py file.")
    ] = "lesson1",
    script_args: Annotated[
        list[str] | None, typer.Argument(help="arguments for the script (after --).", show_default=False)
    ] = None,
    kernel: Annotated[
        str, typer.Option("--kernel", "-k", help="regex of the kernel to profile (default: lesson1's scale kernel).")
    ] = "vectorized_elementwise",
    section: Annotated[
        list[str] | None, typer.Option("--section", help="ncu section(s) to collect.", show_default=False)
    ] = None,
    count: Annotated[
        int, typer.Option("--count", help="kernel launches to profile.", parser=number(int, minimum=1))
    ] = 1,
    device: DeviceOpt = _Device.auto,
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
    env = make_env(json_out)
    request = NcuRequest(
        script=script,
        script_args=list(script_args or []),
        kernel=kernel,
        sections=list(section or ["SpeedOfLight"]),
        count=count,
        device=device.value,
    )
    result = run.ncu(env, TargetChoice(local, context, kubeconfig, namespace, STATE.config_path), request)
    show(env, result, profileview.ncu)


class _Op(str, Enum):
    scale = "scale"
    scale_add = "scale-add"


@commands.command()
def sweep(
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            metavar="TYPE",
            help="element type: float16 (fp16, half), bfloat16 (bf16), float32 (fp32, float) or float64 (fp64, "
            "double); default float16 on a GPU, float32 on a CPU (16-bit floats on a CPU time conversion, not "
            "memory); with --compare the other element size.",
            show_default=False,
        ),
    ] = None,
    sizes: Annotated[
        str | None,
        typer.Option(
            "--sizes",
            metavar="N,N,...",
            help="log2 of the element counts, 10..34, e.g. 16,20,24 (default: 16..30 on a GPU; on a CPU from 12 to "
            "two sizes 4x past the last-level cache).",
            show_default=False,
        ),
    ] = None,
    iters: Annotated[
        int | None,
        typer.Option(
            "--iters",
            help="timed calls per size (default 50 on a GPU, 10 on a CPU).",
            parser=number(int, minimum=1),
            show_default=False,
        ),
    ] = None,
    warmup: Annotated[
        int | None,
        typer.Option(
            "--warmup",
            help="warm-up calls per size (default 5 on a GPU, 2 on a CPU).",
            parser=number(int, minimum=0),
            show_default=False,
        ),
    ] = None,
    impl: Annotated[
        str | None,
        typer.Option(
            "--impl",
            metavar="torch|triton|torch,triton",
            help="torch (default), a Triton kernel of the same op, or both side by side on the same target.",
            show_default=False,
        ),
    ] = None,
    op: Annotated[
        _Op | None,
        typer.Option(
            "--op",
            help="scale: x *= 1.0001 (default); scale-add: x = x * 0.999 + 0.001 (torch: two kernels, Triton: one "
            "fused).",
            show_default=False,
        ),
    ] = None,
    compare: Annotated[
        list[str] | None,
        typer.Option(
            "--compare",
            metavar="RUN",
            help="a stored sweep (id, prefix or 'latest') to check against; give it twice to compare two stored runs "
            "without running anything.",
            show_default=False,
        ),
    ] = None,
    local: LocalOpt = False,
    device: Annotated[
        _Device | None,
        typer.Option(
            "--device",
            help="auto (the GPU where the target requests one, else what torch sees), cuda, or cpu (on purpose); with "
            "--compare, the stored run's. [default: auto]",
            show_default=False,
        ),
    ] = None,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Memory-bandwidth sweep: time an in-place scale at many sizes and name the launch,
    cache and DRAM regimes, with the DRAM plateau against the GPU's spec.

    Runs lab_scripts/sweep.py in the lab pod (or on this machine with --local), rows
    appearing as they are measured, then stores the run and shows the table (with the
    spread of the timed batches), the summary and the lesson. Bytes per call = 2 x
    kernels x elements x element size (read + write). A plateau needs two DRAM-bound
    sizes within 10%. --compare checks the tutorial's prediction: in the DRAM regime,
    float32 takes twice float16's time at the same TB/s. --impl torch,triton runs a
    Triton kernel of the same op beside torch's and compares them size by size (on a
    CPU, Triton runs in its interpreter: correctness only).

    \b
    Example:
      nsightlab sweep --dtype fp16
      nsightlab sweep --compare latest          # the other element size now, checked against it
      nsightlab sweep --local --device cpu --sizes 12,16,20,24
      nsightlab sweep --impl torch,triton --op scale-add
      nsightlab sweep --compare 3fa2c1 --compare 9b07d4 --json
    """
    env = make_env(json_out)
    request = SweepRequest(
        dtype=dtype,
        sizes=sizes,
        iters=iters,
        warmup=warmup,
        impl=impl,
        op=op.value if op else None,
        compare=list(compare or []),
        device=device.value if device else None,
    )
    result = run.sweep(env, TargetChoice(local, context, kubeconfig, namespace, STATE.config_path), request)
    show(env, result, draw_result)
