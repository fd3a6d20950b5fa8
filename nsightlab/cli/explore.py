"""`explore`: the read-only tour of a cluster."""

from typing import Annotated, Optional

import typer

from nsightlab.cli.common import (
    STATE,
    ContextOpt,
    JsonOpt,
    KubeconfigOpt,
    NamespaceOpt,
    make_env,
    show,
)
from nsightlab.cluster import inventory_reads
from nsightlab.cluster.connect import connect
from nsightlab.cluster.safety import Intent
from nsightlab.present import exploreview

commands = typer.Typer(rich_markup_mode=None)
explore_app = typer.Typer(
    help="Read-only tour of a cluster: nodes, GPUs, pods (works on protected contexts too).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
commands.add_typer(explore_app, name="explore")


@explore_app.command("nodes")
def explore_nodes(
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    gpu_only: Annotated[
        bool, typer.Option("--gpu-only", help="List GPU nodes only (the counts per type still cover all).")
    ] = False,
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
    env = make_env(json_out)
    with (
        connect(context, kubeconfig, config_path=STATE.config_path, intent=Intent.READ) as c,
        env.status(f"listing nodes and pods on {c.ctx.name}"),
    ):
        report = inventory_reads.explore_nodes(c.kube, lab_instance_type=c.config.lab.instance_type, gpu_only=gpu_only)
    show(env, report, exploreview.nodes)


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
    env = make_env(json_out)
    with connect(context, kubeconfig, config_path=STATE.config_path, intent=Intent.READ, namespace=namespace) as c:
        report = inventory_reads.explore_pods(
            c.kube, namespace=None if all_namespaces else c.ctx.namespace, match=match
        )
    show(env, report, exploreview.pods)


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
    env = make_env(json_out)
    with connect(context, kubeconfig, config_path=STATE.config_path, intent=Intent.READ, namespace=namespace) as c:
        detail = inventory_reads.explore_pod(c.kube, name, namespace=c.ctx.namespace, note=env.note)
    show(env, detail, exploreview.pod_detail)


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
    env = make_env(json_out)
    with connect(context, kubeconfig, config_path=STATE.config_path, intent=Intent.READ) as c:
        detail = inventory_reads.explore_node(c.kube, name)
    show(env, detail, exploreview.node_detail)
