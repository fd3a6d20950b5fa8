"""Command-line interface. Thin: parse options, resolve the context, call one function,
render the typed result it returns. No cluster calls and no parsing here.

Start-up must stay fast: nothing heavy (kubernetes, torch, matplotlib, even rich) is
imported at module level; each command imports what it needs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from nsightlab import __version__

if TYPE_CHECKING:
    from nsightlab.config import Config, LoadedConfig, Session
    from nsightlab.console import Env
    from nsightlab.kube import Kube
    from nsightlab.safety import Intent, ResolvedContext

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


def _env(json_out: bool = False) -> Env:
    from nsightlab.console import Env

    return Env.create(json=json_out)


def _config() -> LoadedConfig:
    from nsightlab.config import load_config

    return load_config(STATE.config_path)


@dataclass
class Cluster:
    """What a cluster command works with: config, checked context, client."""

    config: Config
    ctx: ResolvedContext
    kube: Kube
    session: Session | None


@contextmanager
def _cluster(
    context: str | None,
    kubeconfig: Path | None,
    *,
    intent: Intent,
    namespace: str | None = None,
    use_session: bool = False,
    action: str = "change the cluster",
) -> Iterator[Cluster]:
    """Resolve the context through the safety guard, then build the client for it."""
    from nsightlab.config import load_session
    from nsightlab.kube import Kube
    from nsightlab.kubeconfig import load_kubeconfig
    from nsightlab.safety import resolve_context

    cfg = _config().config
    session = load_session() if use_session else None
    kc_path = kubeconfig
    if kc_path is None and context is None and session is not None and session.kubeconfig:
        kc_path = Path(session.kubeconfig) if os.pathsep not in session.kubeconfig else None
    kc = load_kubeconfig(kc_path)
    ctx = resolve_context(context, config=cfg, kubeconfig=kc, intent=intent, session=session, namespace=namespace, action=action)
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
    if env.json:
        env.print_json(view)
    else:
        configure.render_config(env, view)


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
    from nsightlab import explore, render
    from nsightlab.safety import Intent

    env = _env(json_out)
    with _cluster(context, kubeconfig, intent=Intent.READ) as c, env.status(f"listing nodes and pods on {c.ctx.name}"):
        report = explore.explore_nodes(c.kube, lab_instance_type=c.config.lab.instance_type, gpu_only=gpu_only)
    if env.json:
        env.print_json(report)
    else:
        render.nodes(env, report)


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
    from nsightlab import explore, render
    from nsightlab.safety import Intent

    env = _env(json_out)
    with _cluster(context, kubeconfig, intent=Intent.READ, namespace=namespace) as c:
        report = explore.explore_pods(c.kube, namespace=None if all_namespaces else c.ctx.namespace, match=match)
    if env.json:
        env.print_json(report)
    else:
        render.pods(env, report)


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
    from nsightlab import explore, render
    from nsightlab.safety import Intent

    env = _env(json_out)
    with _cluster(context, kubeconfig, intent=Intent.READ, namespace=namespace) as c:
        detail = explore.explore_pod(c.kube, name, namespace=c.ctx.namespace)
    if env.json:
        env.print_json(detail)
    else:
        render.pod_detail(env, detail)


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
    from nsightlab import explore, render
    from nsightlab.safety import Intent

    env = _env(json_out)
    with _cluster(context, kubeconfig, intent=Intent.READ) as c:
        detail = explore.explore_node(c.kube, name)
    if env.json:
        env.print_json(detail)
    else:
        render.node_detail(env, detail)


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
