"""Command-line interface. Thin: parse options, resolve the context, call one function,
render the typed result it returns. No cluster calls and no parsing here.

Start-up must stay fast: nothing heavy (kubernetes, torch, matplotlib, even rich) is
imported at module level; each command imports what it needs. This module alone does not
use `from __future__ import annotations`: Typer reads every command's annotations at run
time, and string annotations would make it compile and evaluate each one on every start.
"""

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from nsightlab import __version__

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube
    from nsightlab.cluster.safety import Intent, ResolvedContext
    from nsightlab.config import Config, LoadedConfig, Session
    from nsightlab.measure.targets import Target
    from nsightlab.present.console import Env

app = typer.Typer(
    name="nsightlab",
    help="A lab driver for GPU profiling on Kubernetes: explore GPU nodes, run a lab pod, "
    "profile with Nsight Systems, sweep memory bandwidth, report, clean up.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,  # locals can hold kubeconfig tokens
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
explore_app = typer.Typer(
    help="Read-only tour of a cluster: nodes, GPUs, pods (works on protected contexts too).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(explore_app, name="explore")
runs_app = typer.Typer(rich_markup_mode=None)  # help: the docstring of runs_main
app.add_typer(runs_app, name="runs")


@dataclass
class _State:
    config_path: Path | None = None


STATE = _State()

# Options shared by many commands.
ContextOpt = Annotated[
    Optional[str],  # noqa: UP045 - Typer needs Optional at runtime on 3.10
    typer.Option("--context", "-c", help="kubeconfig context or alias from config.yaml (the current-context is never used).", show_default=False),
]
KubeconfigOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, merged, else ~/.kube/config).", show_default=False),
]
NamespaceOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--namespace", "-n", help="namespace (default: the alias's, else the context's, else 'default').", show_default=False),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout instead of tables.")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"nsightlab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")] = False,
    config: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--config", help="config file (default: $NSIGHTLAB_HOME/config.yaml).", envvar="NSIGHTLAB_CONFIG", show_default=False),
    ] = None,
    traceback: Annotated[bool, typer.Option("--traceback", help="Show the full traceback of an unexpected error.")] = False,
) -> None:
    """A lab driver for GPU profiling on Kubernetes.

    \b
    Example, the tutorial in five commands:
      nsightlab explore nodes --context stg
      nsightlab create --context stg
      nsightlab profile lesson1
      nsightlab sweep --dtype float32
      nsightlab cleanup
    """
    STATE.config_path = config


# ---------------------------------------------------------------------------- plumbing


def _env(json_out: bool = False) -> "Env":
    from nsightlab.present.console import Env

    return Env.create(json=json_out)


def _show(env: "Env", result: Any, draw: "Callable[[Env, Any], None]") -> None:
    """One JSON document on stdout with --json, else the human rendering."""
    if env.json:
        env.print_json(result)
    else:
        draw(env, result)


def _config() -> "LoadedConfig":
    from nsightlab.config import load_config

    return load_config(STATE.config_path)


@dataclass
class Cluster:
    """What a cluster command works with: config, checked context, client."""

    config: "Config"
    ctx: "ResolvedContext"
    kube: "Kube"
    session: "Session | None"


@contextmanager
def _cluster(
    context: str | None,
    kubeconfig: Path | None,
    *,
    intent: "Intent",
    namespace: str | None = None,
    use_session: bool = False,
    action: str = "change the cluster",
    allowed: Callable[[], None] | None = None,
) -> Iterator[Cluster]:
    """Resolve the context through the safety guard, then build the client for it
    (`allowed` runs in between: local work that may start once the guard said yes)."""
    from nsightlab.cluster.kube import Kube
    from nsightlab.cluster.kubeconfig import load_kubeconfig
    from nsightlab.cluster.safety import resolve_context
    from nsightlab.config import load_session

    cfg = _config().config
    session = load_session() if use_session else None
    kc_path = kubeconfig
    if kc_path is None and context is None and session is not None and session.kubeconfig:
        kc_path = Path(session.kubeconfig) if os.pathsep not in session.kubeconfig else None
    kc = load_kubeconfig(kc_path)
    ctx = resolve_context(context, config=cfg, kubeconfig=kc, intent=intent, session=session, namespace=namespace, action=action)
    if allowed is not None:
        allowed()
    kube = Kube(ctx)
    try:
        yield Cluster(config=cfg, ctx=ctx, kube=kube, session=session)
    finally:
        kube.close()


# ---------------------------------------------------------------------------- init / config


@app.command()
def init(
    context: Annotated[Optional[str], typer.Option("--context", help="kubeconfig context for the 'stg' alias.")] = None,  # noqa: UP045
    namespace: Annotated[Optional[str], typer.Option("--namespace", help="namespace for the lab pod.")] = None,  # noqa: UP045
    image: Annotated[Optional[str], typer.Option("--image", help="lab pod image (with nsys, ncu, PyTorch).")] = None,  # noqa: UP045
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing config file.")] = False,
) -> None:
    """Write a commented starter config.yaml with the tutorial's lab pod settings.

    \b
    Example:
      nsightlab init --context stg-online-use1 --namespace ml-lab \\
          --image registry.example.com/triton-vllm-container:1.0-1
    """
    from nsightlab import configure

    env = _env()
    path = configure.write_starter_config(STATE.config_path, context=context, namespace=namespace, image=image, force=force)
    env.note(f"wrote {path}")
    env.write(f"{path}\n")


@app.command("config")
def config_cmd(json_out: JsonOpt = False) -> None:
    """Show the effective configuration and where each value came from.

    \b
    Example:
      nsightlab config
      nsightlab --config ./lab.yaml config --json
    """
    from nsightlab import configure

    env = _env(json_out)
    view = configure.config_view(_config())
    _show(env, view, configure.render_config)


# ---------------------------------------------------------------------------- explore


@explore_app.command("nodes")
def explore_nodes(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    gpu_only: Annotated[bool, typer.Option("--gpu-only", help="List GPU nodes only (the counts per type still cover all).")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Every node with its instance type and GPUs (allocatable, requested, free).

    Requested GPUs count native sidecars the way the scheduler does. Ends with the
    nodes per instance type and how many GPUs of the lab's instance type are free.

    \b
    Example:
      nsightlab explore nodes --context stg
      nsightlab explore nodes --context stg --json | jq '.instance_types'
    """
    from nsightlab.cluster import explore
    from nsightlab.cluster.safety import Intent
    from nsightlab.present import render

    env = _env(json_out)
    with _cluster(context, kubeconfig, intent=Intent.READ) as c, env.status(f"listing nodes and pods on {c.ctx.name}"):
        report = explore.explore_nodes(c.kube, lab_instance_type=c.config.lab.instance_type, gpu_only=gpu_only)
    _show(env, report, render.nodes)


@explore_app.command("pods")
def explore_pods(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Pods of every namespace.")] = False,
    match: Annotated[Optional[str], typer.Option("--match", "-m", help="Only pods whose name contains TEXT.")] = None,  # noqa: UP045
    json_out: JsonOpt = False,
) -> None:
    """Pods with READY, STATUS, RESTARTS, AGE, NODE and the GPUs each holds.

    \b
    Example:
      nsightlab explore pods --context stg -n serving --match llmqu
    """
    from nsightlab.cluster import explore
    from nsightlab.cluster.safety import Intent
    from nsightlab.present import render

    env = _env(json_out)
    with _cluster(context, kubeconfig, intent=Intent.READ, namespace=namespace) as c:
        report = explore.explore_pods(c.kube, namespace=None if all_namespaces else c.ctx.namespace, match=match)
    _show(env, report, render.pods)


@explore_app.command("pod")
def explore_pod(
    name: Annotated[str, typer.Argument(help="pod name, or text its name contains (the first match is shown).")],
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Inside one pod: init containers, native sidecars, limits, who holds the GPU.

    \b
    Example:
      nsightlab explore pod llmqu-v1-s2 --context stg -n serving
    """
    from nsightlab.cluster import explore
    from nsightlab.cluster.safety import Intent
    from nsightlab.present import render

    env = _env(json_out)
    with _cluster(context, kubeconfig, intent=Intent.READ, namespace=namespace) as c:
        detail = explore.explore_pod(c.kube, name, namespace=c.ctx.namespace)
    _show(env, detail, render.pod_detail)


@explore_app.command("node")
def explore_node(
    name: Annotated[str, typer.Argument(help="node name.")],
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """One node: instance type, GPU labels, allocatable, taints, pods and their GPUs.

    \b
    Example:
      nsightlab explore node ip-10-0-3-17.ec2.internal --context stg
    """
    from nsightlab.cluster import explore
    from nsightlab.cluster.safety import Intent
    from nsightlab.present import render

    env = _env(json_out)
    with _cluster(context, kubeconfig, intent=Intent.READ) as c:
        detail = explore.explore_node(c.kube, name)
    _show(env, detail, render.node_detail)


# ---------------------------------------------------------------------------- the lab pod


def _lab_pod(c: Cluster, *, require_ready: bool = True) -> str:
    """The lab pod a command acts on: the session's, else the configured name."""
    from nsightlab.analysis import pods as r
    from nsightlab.errors import PodNotReadyError

    s = c.session
    name = s.pod if s and s.context == c.ctx.name and s.namespace == c.ctx.namespace else c.config.pod_name()
    if require_ready:
        pod = c.kube.get_pod(c.ctx.namespace, name)
        if pod is None:
            from nsightlab.cluster.lab import forget_session

            forget_session(c.ctx, [name])
            raise PodNotReadyError(
                f"no lab pod {name} in namespace {c.ctx.namespace} (context {c.ctx.name})",
                hint="Create one with `nsightlab create --context CTX`.",
            )
        if not r.pod_is_ready(pod):
            raise PodNotReadyError(f"lab pod {name} is {r.pod_status(pod)}, not Ready", hint="Wait for it with `nsightlab create`, or see `nsightlab status`.")
    return name


def _note_session(env: "Env", c: Cluster) -> None:
    if c.ctx.from_session:
        env.note(f"using the lab session: context {c.ctx.label}, namespace {c.ctx.namespace}")


@app.command()
def create(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    manifest: Annotated[Optional[Path], typer.Option("--manifest", help="pod template to fill instead of manifests/pod.yaml.")] = None,  # noqa: UP045
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the final manifest as YAML and send nothing.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="seconds to wait for Ready before giving up (exit 5).", min=1)] = 600,
    profiling_caps: Annotated[bool, typer.Option("--profiling-caps", help="Add CAP_SYS_ADMIN so ncu can read GPU counters (weakens isolation: only with your platform team's OK).")] = False,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Create your GPU lab pod (or reuse it) and wait until it is Ready.

    The pod is the tutorial's: 1 GPU on a g7e.8xlarge, 4 CPU, 24Gi, deleted after 4 h,
    labelled as yours. Refused on protected contexts.

    \b
    Example:
      nsightlab create --context stg
      nsightlab create --context stg --dry-run
    """
    from nsightlab import assets
    from nsightlab.cluster import lab
    from nsightlab.cluster.kubeconfig import load_kubeconfig
    from nsightlab.cluster.safety import Intent, confirm_change, resolve_context
    from nsightlab.present import render

    env = _env(json_out)
    cfg = _config().config
    template = lab.load_template(manifest or assets.pod_template())
    if dry_run:
        kc = load_kubeconfig(kubeconfig) if context else None
        ns = namespace or "default"
        if kc is not None:
            ns = resolve_context(context, config=cfg, kubeconfig=kc, intent=Intent.READ, namespace=namespace).namespace
        m = lab.build_manifest(template, cfg, namespace=ns, profiling_caps=profiling_caps)
        if env.json:
            env.print_json(m)
        else:
            env.write(lab.manifest_yaml(m))
        return
    if profiling_caps:
        env.warn("--profiling-caps adds CAP_SYS_ADMIN to the lab pod: it weakens isolation; use it only with your platform team's OK.")
    with _cluster(context, kubeconfig, intent=Intent.CHANGE, namespace=namespace, action="create the lab pod") as c:
        m = lab.build_manifest(template, c.config, namespace=c.ctx.namespace, profiling_caps=profiling_caps)
        confirm_change(env, c.ctx, f"create lab pod {m['metadata']['name']} ({c.config.lab.gpus} GPU on a {c.config.lab.instance_type})", yes=yes)
        result = lab.create(env, c.kube, c.ctx, c.config, m, timeout=timeout)
    if env.json:
        env.print_json(result)
    else:
        render.lab_pod(env, result, title="Lab pod ready" if not result.reused else "Lab pod ready (reused)")


@app.command()
def status(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """The lab pod: phase, node, GPU, age and time left before it deletes itself.

    \b
    Example:
      nsightlab status
      nsightlab status --context stg --json
    """
    from nsightlab.cluster import lab
    from nsightlab.cluster.safety import Intent
    from nsightlab.present import render

    env = _env(json_out)
    with _cluster(context, kubeconfig, intent=Intent.READ, namespace=namespace, use_session=True) as c:
        _note_session(env, c)
        report = lab.status(c.kube, c.ctx, _lab_pod(c, require_ready=False))
    _show(env, report, render.status)


@app.command(context_settings={"allow_interspersed_args": False})
def shell(
    command: Annotated[Optional[list[str]], typer.Argument(help="a command to run instead of an interactive shell (after --).", show_default=False)] = None,  # noqa: UP045
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    stdin: Annotated[bool, typer.Option("--stdin", "-i", help="Pass this terminal's stdin to the command.")] = False,
) -> None:
    """A shell in the lab pod (bash, else sh), or one command with its output streamed.

    The exit code is the remote command's. Refused on protected contexts.

    \b
    Example:
      nsightlab shell
      nsightlab shell -- nvidia-smi
      nsightlab shell -- sh -c 'which nsys ncu nvcc python3'
    """
    from nsightlab.cluster import shell as sh
    from nsightlab.cluster.safety import Intent

    env = _env()
    with _cluster(context, kubeconfig, intent=Intent.CHANGE, namespace=namespace, use_session=True, action="exec into a pod") as c:
        _note_session(env, c)
        pod = _lab_pod(c)
        if command:
            code = sh.run_command(c.kube, c.ctx.namespace, pod, list(command), forward_stdin=stdin)
        else:
            code = sh.interactive(c.kube, c.ctx.namespace, pod)
    raise typer.Exit(code)


@app.command()
def copy(
    src: Annotated[str, typer.Argument(help="source: a local path, or :PATH in the pod.")],
    dst: Annotated[str, typer.Argument(help="destination: :PATH in the pod, or a local path.")],
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Copy files or folders into or out of the lab pod, verified by sha256.

    A path in the pod is written :PATH, as with scp. Streams through tar over exec;
    local files appear only once complete and verified.

    \b
    Example:
      nsightlab copy lesson1.py :/tmp/
      nsightlab copy :/tmp/l1.nsys-rep .
    """
    from nsightlab.cluster import transfer
    from nsightlab.cluster.safety import Intent
    from nsightlab.errors import UsageError
    from nsightlab.present import render

    remote_src, remote_dst = transfer.parse_remote(src), transfer.parse_remote(dst)
    if (remote_src is None) == (remote_dst is None):
        raise UsageError("exactly one of SRC and DST must be in the pod, written :PATH", hint="e.g. `nsightlab copy lesson1.py :/tmp/`")
    env = _env(json_out)
    hashing: list[transfer.Hashing] = []

    def allowed() -> None:
        if remote_dst is not None:
            if not Path(src).exists() and not Path(src).is_symlink():
                raise UsageError(f"local source {src} does not exist")  # before any request
            # the local side's checksums are worked out while the client starts and connects
            hashing.append(transfer.Hashing(Path(src)))

    with _cluster(context, kubeconfig, intent=Intent.CHANGE, namespace=namespace, use_session=True, action="copy files to or from a pod", allowed=allowed) as c:
        _note_session(env, c)
        pod = _lab_pod(c)
        with _progress(env, "copying") as progress:
            if remote_dst is not None:
                result = transfer.copy_in(c.kube, c.ctx.namespace, pod, Path(src), remote_dst, progress=progress, hashed=hashing[0])
            else:
                assert remote_src is not None
                result = transfer.copy_out(c.kube, c.ctx.namespace, pod, remote_src, Path(dst), progress=progress)
    _show(env, result, render.copy_result)


@contextmanager
def _progress(env: "Env", label: str) -> Iterator[Callable[[int], None]]:
    """A byte counter on stderr (only on a terminal)."""
    if not env.err_tty:
        yield lambda n: None
        return
    from rich.progress import (
        DownloadColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TransferSpeedColumn,
    )

    with Progress(SpinnerColumn(), TextColumn(label), DownloadColumn(), TransferSpeedColumn(), console=env.err, transient=True) as p:
        task = p.add_task(label, total=None)
        yield lambda n: p.update(task, completed=n)


@app.command()
def cleanup(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    all_mine: Annotated[bool, typer.Option("--all-mine", help="Delete every lab pod of yours in the namespace.")] = False,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Delete your lab pod and give the GPU back; waits until it is gone.

    Only pods labelled as nsightlab lab pods of yours are ever deleted. Refused on
    protected contexts.

    \b
    Example:
      nsightlab cleanup
      nsightlab cleanup --context stg --all-mine
    """
    from nsightlab.cluster import lab
    from nsightlab.cluster.safety import Intent, confirm_change
    from nsightlab.present import render

    env = _env(json_out)
    with _cluster(context, kubeconfig, intent=Intent.CHANGE, namespace=namespace, use_session=True, action="delete pods") as c:
        _note_session(env, c)
        name = _lab_pod(c, require_ready=False)
        what = f"delete every lab pod of {c.config.owner()}" if all_mine else f"delete lab pod {name}"
        confirm_change(env, c.ctx, what, yes=yes)
        report = lab.cleanup(env, c.kube, c.ctx, owner=c.config.owner(), names=[name], all_mine=all_mine)
    _show(env, report, render.cleanup)


@app.command()
def doctor(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Pre-flight checks, each pass/fail with the fix: access, RBAC, GPUs, and in the pod
    nvidia-smi, nsys, ncu, /tmp, perf_event_paranoid and RmProfilingAdminOnly.

    Exits 4 when a check fails. Read-only; works on protected contexts (without the
    in-pod checks).

    \b
    Example:
      nsightlab doctor --context stg
    """
    from nsightlab.cluster import doctor as doc
    from nsightlab.cluster.safety import Intent
    from nsightlab.errors import ClusterError
    from nsightlab.present import render

    env = _env(json_out)
    with _cluster(context, kubeconfig, intent=Intent.READ, namespace=namespace, use_session=True) as c:
        report = doc.run(c.kube, c.ctx, c.config, session=c.session)
    if env.json:
        env.print_json({**report.model_dump(mode="json"), "ok": not report.failed})
    else:
        render.doctor(env, report)
    if report.failed:
        raise ClusterError(f"{len(report.failed)} doctor check(s) failed", hint="See the fixes above.")


# ---------------------------------------------------------------------------- targets for lab work

LocalOpt = Annotated[bool, typer.Option("--local", help="Run on this machine (its GPU, or the CPU) instead of the lab pod.")]


@dataclass
class Where:
    """Where lab work runs, and what a run's meta.json should say about it."""

    target: "Target"
    meta: dict[str, object]


@contextmanager
def _where(
    env: "Env",
    *,
    local: bool,
    context: str | None,
    kubeconfig: Path | None,
    namespace: str | None,
    action: str,
) -> Iterator[Where]:
    """The lab pod (from the session or --context) or, with --local, this machine."""
    if local:
        from nsightlab.measure.targets import LocalTarget

        yield Where(LocalTarget(), {"target": "this machine"})
        return
    from nsightlab.analysis import pods as r
    from nsightlab.cluster.explore import gpu_product
    from nsightlab.cluster.safety import Intent
    from nsightlab.measure.targets import PodTarget

    with _cluster(context, kubeconfig, intent=Intent.CHANGE, namespace=namespace, use_session=True, action=action) as c:
        _note_session(env, c)
        pod_name = _lab_pod(c)
        pod = c.kube.get_pod(c.ctx.namespace, pod_name) or {}
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = c.kube.get_node(node_name) if node_name else None
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        meta: dict[str, object] = {
            "target": f"pod {c.ctx.namespace}/{pod_name}",
            "context": c.ctx.name,
            "namespace": c.ctx.namespace,
            "pod": pod_name,
            "node": node_name,
            "instance_type": r.instance_type(node) if node else None,
            "gpu": gpu_product(node) if node else None,
            "image": containers[0].get("image"),
            "session_uid": (pod.get("metadata") or {}).get("uid"),
        }
        yield Where(PodTarget(c.kube, c.ctx.namespace, pod_name), meta)


# ---------------------------------------------------------------------------- profiling


class ProfilerChoice(str, Enum):
    nsys = "nsys"
    torch = "torch"


@app.command(context_settings={"allow_interspersed_args": True})
def profile(
    script: Annotated[str, typer.Argument(help="a built-in lab script (lesson1) or a path to your .py file.")],
    script_args: Annotated[Optional[list[str]], typer.Argument(help="arguments for the script (after --).", show_default=False)] = None,  # noqa: UP045
    profiler: Annotated[ProfilerChoice, typer.Option("--profiler", help="nsys, or torch (torch.profiler: for targets without Nsight).")] = ProfilerChoice.nsys,
    nsys_args: Annotated[str, typer.Option("--nsys-args", help="extra options for `nsys profile`, e.g. '--sample=none'.")] = "",
    local: LocalOpt = False,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    top: Annotated[int, typer.Option("--top", help="kernels to show (all of them are in --json).", min=1)] = 15,
    json_out: JsonOpt = False,
) -> None:
    """Profile a script under Nsight Systems: kernel table, then TB/s and TFLOPS per range.

    Runs the tutorial's `nsys profile -o BASE -f true -t cuda,nvtx python3 SCRIPT` on
    the lab pod (or this machine with --local), exports the reports with
    `nsys stats --force-export=true`, stores everything (CSVs, the script's JSON and
    the .nsys-rep) as a run, then shows the kernels, the rates of the timed ranges
    against the GPU's spec, and what they mean.

    \b
    Example:
      nsightlab profile lesson1
      nsightlab profile lesson1 --local --profiler torch
      nsightlab profile my_model.py -- --batch 8
    """
    import shlex

    from nsightlab.measure.profile import run_profile
    from nsightlab.present import render

    env = _env(json_out)
    with _where(env, local=local, context=context, kubeconfig=kubeconfig, namespace=namespace, action="profile in a pod") as w:
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
    from nsightlab.present import render

    env = _env(json_out)
    with _where(env, local=local, context=context, kubeconfig=kubeconfig, namespace=namespace, action="run ncu in a pod") as w:
        result = run_ncu(env, w.target, w.meta, script=script, script_args=list(script_args or []), kernel=kernel, sections=list(section or ["SpeedOfLight"]), count=count)
    _show(env, result, render.ncu)


@app.command()
def analyze(
    path: Annotated[Path, typer.Argument(help="a run folder, nsys CSV exports (folder), nsys console output, an ncu CSV, or a lesson1/sweep JSON.")],
    json_out: JsonOpt = False,
) -> None:
    """Offline: the same tables as the live commands, from files you already have.

    \b
    Example:
      nsightlab analyze l1_stats.txt
      nsightlab analyze ./exports/ --json
      nsightlab analyze ncu_speedoflight.csv
    """
    from nsightlab.measure.ncu import NcuResult
    from nsightlab.measure.profile import ProfileResult
    from nsightlab.present import render
    from nsightlab.runs.analyze import analyze_path

    env = _env(json_out)
    result = analyze_path(path)
    if env.json:
        env.print_json(result)
    elif isinstance(result, ProfileResult):
        render.profile(env, result)
    elif isinstance(result, NcuResult):
        render.ncu(env, result)
    else:
        render.sweep(env, result)  # type: ignore[arg-type]


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
    from nsightlab.present import render

    env = _env(json_out)
    refs = list(compare or [])
    if len(refs) > 2:
        raise UsageError("--compare takes one stored run (checked against a new one) or two (compared as they are)")
    if len(refs) == 2:
        cmp = sw.compare_runs(refs[0], refs[1])
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
    with _where(env, local=local, context=context, kubeconfig=kubeconfig, namespace=namespace, action="run a sweep in a pod") as w:
        result = sw.run_sweep(env, w, dtype=plan.dtype, sizes=plan.sizes, iters=plan.iters, warmup=plan.warmup, device=plan.device, against=plan.against)
    _show(env, result, render.sweep)


# ---------------------------------------------------------------------------- runs, report, roofline

KindOpt = Annotated[Optional[str], typer.Option("--kind", help="only runs of this kind: profile, sweep or ncu.", show_default=False)]  # noqa: UP045


def _runs_list(kind: str | None, json_out: bool) -> None:
    from nsightlab.present import render
    from nsightlab.runs.listing import list_runs

    env = _env(json_out)
    listing = list_runs(kind)
    _show(env, listing, render.runs_list)


@runs_app.callback(invoke_without_command=True)
def runs_main(ctx: typer.Context, kind: KindOpt = None, json_out: JsonOpt = False) -> None:
    """Stored runs: list them (the default), show one, remove some.

    The list is oldest first: id, kind, when, where (context or local), node, device,
    dtype and the headline figure. Any unambiguous prefix of an id finds a run.

    \b
    Example:
      nsightlab runs
      nsightlab runs --kind sweep --json
      nsightlab runs show 3fa2
      nsightlab runs rm 3fa2c1 9b07
    """
    if ctx.invoked_subcommand is None:
        _runs_list(kind, json_out)


@runs_app.command("list")
def runs_list(kind: KindOpt = None, json_out: JsonOpt = False) -> None:
    """List stored runs (the same as `nsightlab runs`).

    \b
    Example:
      nsightlab runs list --kind profile
    """
    _runs_list(kind, json_out)


@runs_app.command("show")
def runs_show(
    run: Annotated[str, typer.Argument(help="run id, an unambiguous prefix, a run folder, or 'latest'.")],
    json_out: JsonOpt = False,
) -> None:
    """One run: where and how it ran, its files, and its result as the live command shows it.

    \b
    Example:
      nsightlab runs show 3fa2
      nsightlab runs show latest --json
    """
    from nsightlab.present import render
    from nsightlab.runs.listing import show_run

    env = _env(json_out)
    detail = show_run(run)
    _show(env, detail, render.run_detail)


@runs_app.command("rm")
def runs_rm(
    runs: Annotated[list[str], typer.Argument(help="run ids or unambiguous prefixes.")],
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Remove stored runs. Every id is checked first: one that matches nothing, or more
    than one run, removes nothing (exit 2). Asks on a terminal unless --yes.

    \b
    Example:
      nsightlab runs rm 3fa2c1 9b07
    """
    from nsightlab.errors import Interrupted
    from nsightlab.present import render
    from nsightlab.runs.listing import line, remove_runs, resolve_all

    env = _env(json_out)
    chosen = resolve_all(list(runs), in_store=True)
    if not yes and env.stdin_tty:
        for r in chosen:
            x = line(r)
            env.note(f"  {x.id}  {x.kind} {x.name}  {x.folder}")
        try:
            ok = typer.confirm(f"Remove {len(chosen)} run{'s' if len(chosen) != 1 else ''}?", default=False, err=True)
        except (EOFError, KeyboardInterrupt, typer.Abort):
            ok = False
        if not ok:
            raise Interrupted("cancelled; nothing was removed")
    removed = remove_runs(chosen)
    _show(env, removed, render.runs_removed)


WeightsOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option("--weights-gb", help="model weights in GB (10^9 bytes), e.g. 16 for 8B parameters in fp16: the per-token decode floor.", show_default=False),
]


@app.command()
def report(
    runs: Annotated[Optional[list[str]], typer.Argument(help="runs to report (ids, prefixes, 'latest'); default: the lab session's runs, else the latest of each kind.", show_default=False)] = None,  # noqa: UP045
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="folder for report.html, report.md and the figures (default: $NSIGHTLAB_HOME/reports/<time>).", show_default=False)] = None,  # noqa: UP045
    weights_gb: WeightsOpt = None,
    terminal: Annotated[bool, typer.Option("--terminal", help="Show the report here (Rich, bars for sweeps) instead of writing files; with --out, both.")] = False,
    open_html: Annotated[bool, typer.Option("--open", help="Open report.html in the browser once written.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Plots and a report of your runs: a self-contained report.html (images inside, no
    network needed), report.md, and the figures as PNG and SVG.

    Figures: the sweep (TB/s by size, regimes shaded, DRAM spec and L2 marked, runs
    overlaid, the tutorial's curve on its GPU), the roofline (each profiled range under
    its GPU's roofs) and the top kernels. Text: environment, tables, lessons, ncu
    verdicts. Prints the paths; nothing opens unless --open.

    \b
    Example:
      nsightlab report
      nsightlab report 3fa2 9b07 --out ./lab-report --weights-gb 16
      nsightlab report --terminal
    """
    from nsightlab.present import render
    from nsightlab.present import report as rep

    env = _env(json_out)
    selection = rep.select_runs(list(runs or []))
    bundle = rep.build_report(selection, weights_gb=weights_gb)
    if terminal and out is None and not open_html:
        if env.json:
            env.print_json(bundle.doc)
        else:
            render.report_doc(env, bundle.doc)
        return
    files = rep.write_report(bundle, out if out is not None else rep.default_out_dir())
    if terminal and not env.json:
        render.report_doc(env, bundle.doc)
        render.blank(env)
    _show(env, files, render.report_files)
    if open_html and not rep.open_in_browser(files.html):
        env.warn(f"could not open a browser; open {files.html} yourself")


@app.command()
def roofline(
    weights_gb: Annotated[float, typer.Option("--weights-gb", help="model weights in GB (10^9 bytes), e.g. 16 for 8B parameters in fp16.")],
    run: Annotated[Optional[str], typer.Option("--run", help="a stored sweep (its measured DRAM plateau and its GPU's spec); default: the latest sweep.", show_default=False)] = None,  # noqa: UP045
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="a GPU's spec only: product name, table key or instance type (g7e.8xlarge).", show_default=False)] = None,  # noqa: UP045
    json_out: JsonOpt = False,
) -> None:
    """Roofline math for your model: the floor on one decode step, weight bytes /
    bandwidth, from the DRAM plateau a sweep measured and from the spec, side by side.

    \b
    Example:
      nsightlab roofline --weights-gb 16
      nsightlab roofline --weights-gb 16 --run 3fa2
      nsightlab roofline --weights-gb 70 --gpu "NVIDIA H200"
    """
    from nsightlab.present import render
    from nsightlab.present.report import decode_floor_for

    env = _env(json_out)
    floor = decode_floor_for(weights_gb, run=run, gpu=gpu)
    _show(env, floor, render.decode_floor)


# ---------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> None:
    """Run the CLI: one handler turns nsightlab errors into one line and an exit code."""
    from nsightlab.errors import ExitCode, NsightlabError

    args = list(sys.argv[1:] if argv is None else argv)
    own_args = args[: args.index("--")] if "--" in args else args
    show_traceback = "--traceback" in own_args or bool(os.environ.get("NSIGHTLAB_TRACEBACK"))
    try:
        app(args=args, prog_name="nsightlab")
    except NsightlabError as e:
        if show_traceback:
            import traceback

            traceback.print_exc()
        sys.stderr.write(e.line() + "\n")
        sys.exit(int(e.exit_code))
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted.\n")
        sys.exit(int(ExitCode.INTERRUPTED))
    except SystemExit:
        raise
    except Exception as e:
        if show_traceback:
            import traceback

            traceback.print_exc()
            sys.exit(int(ExitCode.BUG))
        sys.stderr.write(
            f"error: unexpected {type(e).__name__}: {e}. This is a bug in nsightlab; rerun with --traceback and report it.\n"
        )
        sys.exit(int(ExitCode.BUG))


def entry() -> None:
    """The console script (and `python -m nsightlab`): `main()`, then a quick exit.

    An interpreter's normal shutdown frees every object and module one by one; after a
    command that read a large cluster that alone takes tens of milliseconds. When the
    command is done and no other thread is left, do what shutdown would do that matters
    (flush the output streams, run the `atexit` handlers: logging, the kubernetes
    client's temporary certificate files) and leave without the teardown. Tests call
    `main()` and keep the normal path.
    """
    import atexit
    import contextlib
    import threading

    try:
        main()
        code = 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            sys.stderr.write(f"{e.code}\n")
            code = 1
    if threading.active_count() > 1:
        sys.exit(code)
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `nsightlab explore nodes | head`: the reader is gone
        code = code or 1
    with contextlib.suppress(OSError):
        sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)
