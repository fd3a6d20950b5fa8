"""`explore` drawn: the nodes, the pods, one pod, one node."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsightlab.present.render import Column, blank, heading, lines, table

if TYPE_CHECKING:
    from nsightlab.k8s.inventory import NodeDetail, NodesReport, PodDetail, PodsReport
    from nsightlab.present.console import Env


def nodes(env: Env, report: NodesReport) -> None:
    cols = [
        Column("NAME"),
        Column("INSTANCE-TYPE"),
        Column("GPU"),
        Column("PRODUCT"),
        Column("ALLOC", justify="right"),
        Column("USED", justify="right"),
        Column("FREE", justify="right"),
        Column("STATUS"),
        Column("AGE", justify="right"),
    ]
    rows = [
        [
            n.name,
            n.instance_type or "<none>",
            "yes" if n.gpu else "",
            n.gpu_product or "",
            n.gpu_allocatable if n.gpu else "",
            n.gpu_requested if n.gpu else "",
            n.gpu_free if n.gpu else "",
            n.status,
            n.age,
        ]
        for n in report.nodes
    ]
    table(env, cols, rows)
    blank(env)
    type_cols = [
        Column("NODES", justify="right"),
        Column("INSTANCE-TYPE"),
        Column("GPU PRODUCT"),
        Column("GPUS", justify="right"),
        Column("USED", justify="right"),
        Column("FREE", justify="right"),
    ]
    type_rows = [
        [
            t.nodes,
            t.instance_type,
            t.gpu_product or "",
            t.gpu_allocatable or "",
            t.gpu_requested if t.gpu_allocatable else "",
            t.gpu_free if t.gpu_allocatable else "",
        ]
        for t in report.instance_types
    ]
    table(env, type_cols, type_rows, title="Nodes per instance type")
    blank(env)
    total = len(report.nodes)
    summary = f"{total} nodes, {report.gpu_nodes} with GPUs. "
    if report.lab_nodes:
        summary += (
            f"{report.lab_gpus_free} GPU{'s' if report.lab_gpus_free != 1 else ''} of the lab's instance type "
            f"{report.lab_instance_type} free right now (on {report.lab_nodes} "
            f"node{'s' if report.lab_nodes != 1 else ''})."
        )
    else:
        summary += (
            f"No node of the lab's instance type {report.lab_instance_type} in this cluster (set lab.instance_type "
            "in config.yaml)."
        )
    lines(env, [summary], bullet="")


def pods(env: Env, report: PodsReport) -> None:
    cols = [
        Column("NAMESPACE"),
        Column("NAME"),
        Column("READY"),
        Column("STATUS"),
        Column("RESTARTS", justify="right"),
        Column("AGE", justify="right"),
        Column("NODE"),
        Column("GPUS", justify="right"),
    ]
    rows = [
        [p.namespace, p.name, p.ready, p.status, p.restarts, p.age, p.node or "<none>", p.gpus or ""]
        for p in report.pods
    ]
    if report.namespace is not None:
        cols = cols[1:]
        rows = [row[1:] for row in rows]
    table(env, cols, rows)
    if not report.pods:
        where = f"namespace {report.namespace}" if report.namespace else "any namespace"
        what = f" matching '{report.match}'" if report.match else ""
        env.note(f"No pods{what} in {where}.")


def _resources(d: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items()) or "-"


def pod_detail(env: Env, d: PodDetail) -> None:
    heading(env, f"Pod {d.namespace}/{d.name}: {d.status}, ready {d.ready}")
    where = d.node or "<not scheduled>"
    if d.instance_type:
        where += f" ({d.instance_type}{', ' + d.gpu_product if d.gpu_product else ''})"
    lines(env, [f"node: {where}", f"GPUs held: {d.gpus}"])
    blank(env)
    cols = [
        Column("CONTAINER"),
        Column("KIND"),
        Column("RESTART-POLICY"),
        Column("GPU", justify="right"),
        Column("LIMITS"),
        Column("REQUESTS"),
    ]
    rows = [
        [
            c.name + (" *" if c.holds_gpu else ""),
            c.kind,
            c.restart_policy or "",
            c.gpus or "",
            _resources(c.limits),
            _resources(c.requests),
        ]
        for c in d.init_containers + d.containers
    ]
    table(env, cols, rows)
    if any(c.holds_gpu for c in d.init_containers + d.containers):
        lines(env, ["* holds a GPU"], bullet="")
    blank(env)
    heading(env, "What to notice")
    lines(env, d.notes)


def node_detail(env: Env, d: NodeDetail) -> None:
    heading(env, f"Node {d.name}: {d.instance_type or '<no instance type>'}, {d.status}")
    facts = [
        f"GPU: {d.gpu_product or 'none'}; allocatable {d.gpu_allocatable}, requested {d.gpu_requested}, free "
        f"{d.gpu_free}"
    ]
    facts.append("taints: " + (", ".join(d.taints) or "none"))
    facts.append("allocatable: " + _resources(d.allocatable))
    lines(env, facts)
    if d.gpu_labels:
        blank(env)
        heading(env, "GPU labels")
        lines(env, [f"{k}={v}" for k, v in sorted(d.gpu_labels.items())])
    blank(env)
    cols = [
        Column("NAMESPACE"),
        Column("POD"),
        Column("READY"),
        Column("STATUS"),
        Column("GPUS", justify="right"),
        Column("AGE", justify="right"),
    ]
    if d.pods:
        table(
            env,
            cols,
            [[p.namespace, p.name, p.ready, p.status, p.gpus or "", p.age] for p in d.pods],
            title=f"Pods on {d.name}",
        )
    else:
        lines(env, [f"no pods on {d.name}"], bullet="")
    blank(env)
    heading(env, "What to notice")
    lines(env, d.notes)
