"""`nsightlab pack`: the namespace's GPU workloads, read (GET only), then analysed.

The reads are `nsightlab.cluster.pack_reads`'s; the grouping `k8s/workloads.py`'s; the
arithmetic `analysis/pack_plan.py` and `analysis/sharing.py`'s; the bandwidth, a decode
step time and a tokenizer measurement come from the run store (`runs/pack_inputs.py`).
Nothing here changes a node, a pod or a deployment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from nsightlab.analysis.pack_plan import (
    Given,
    PackOptions,
    PackReport,
    PackWorkload,
    WhatIf,
    build_plan,
    build_workload,
    per_gpu_price,
    what_if,
)
from nsightlab.cluster import pack_reads as reads
from nsightlab.errors import UsageError
from nsightlab.k8s.workloads import WorkloadFacts, build_workloads
from nsightlab.runs.pack_inputs import bandwidth_for, decode_step_ms, latest_tokenizer
from nsightlab.specs import gpus
from nsightlab.specs.mig import builtin_profiles

if TYPE_CHECKING:
    from nsightlab.cluster.connect import Cluster

GiB = 1 << 30
_TYPE = re.compile(r"^[a-z0-9][a-z0-9-]*\.[a-z0-9-]+$")


def parse_types(text: str | None) -> list[str]:
    """`--what-if g6.2xlarge,g6e.xlarge` as a list; a usage error for anything else."""
    if text is None:
        return []
    types = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in types if not _TYPE.match(t)]
    if not types or bad:
        raise UsageError(
            f"--what-if takes instance types separated by commas (g6.2xlarge,g6e.xlarge), got '{text}'",
            hint="An instance type is a node's node.kubernetes.io/instance-type label (explore nodes lists them).",
        )
    return list(dict.fromkeys(types))


def _workload(
    c: Cluster,
    w: WorkloadFacts,
    pods: dict[str, dict[str, object]],
    options: PackOptions,
    note: Callable[[str], None],
) -> PackWorkload:
    startup = None
    if w.log_pod is not None and w.container is not None:
        startup, why = reads.startup_figures(c.kube, c.ctx.namespace, dict(pods[w.log_pod]), w.container)
        if why is not None:
            w.notes.append(f"{w.name}: {why}")
        elif startup is not None and not startup.found:
            w.notes.append(
                f"{w.name}: the log of {w.log_pod} ({w.container}) holds no start-up accounting of vLLM"
                + (
                    f" in its first {startup.bytes_read / (1 << 20):.3g} MiB (read no further)"
                    if startup.capped
                    else " (not a vLLM engine, or its log was rotated since it started)"
                )
            )
            startup = None
        elif startup is not None:
            w.notes += [f"{w.name}: its log: {p}" for p in startup.problems]
    mig = builtin_profiles().for_gpu(w.gpu_key)
    return build_workload(
        w,
        startup=startup,
        config=_given(c, w.name),
        options=options,
        bandwidth=bandwidth_for(w.gpu_name, w.instance_type) if w.gpu_name else None,
        mig=mig,
        tokenizer=latest_tokenizer(),
    )


def _what_ifs(
    workloads: Sequence[PackWorkload], types: Sequence[str], prices: dict[str, float], per_node: dict[str, int | None]
) -> list[WhatIf]:
    out = []
    for itype in types:
        spec = gpus.for_instance_type(itype)
        mig = builtin_profiles().for_gpu(spec.key) if spec is not None else None
        for w in workloads:
            out.append(
                what_if(
                    w,
                    instance_type=itype,
                    gpu_type=spec.name if spec else None,
                    memory_gib=spec.memory_bytes / GiB if spec is not None and spec.memory_bytes else None,
                    bandwidth=bandwidth_for(spec.name if spec else None, itype),
                    mig=mig,
                    usd_per_gpu_hour=per_gpu_price(itype, per_node.get(itype), prices),
                )
            )
    return out


def _what_if_notes(types: Sequence[str], prices: dict[str, float], per_node: dict[str, int | None]) -> list[str]:
    notes = []
    for itype in types:
        spec = gpus.for_instance_type(itype)
        if spec is None:
            notes.append(f"--what-if {itype}: its GPU is not in the spec table: no copies computed")
        if itype in prices and not per_node.get(itype):
            notes.append(f"--what-if {itype}: no node of this type could be read to count its GPUs: no price per GPU")
    if types:
        notes.append(
            "--what-if: the needs measured on one GPU are assumed on the other (weights and KV per token do not "
            "change; the activation peak and memory outside torch can, a little)"
        )
    return notes


def _given(c: Cluster, name: str) -> Given | None:
    """`models.NAME` of config.yaml, if there is one."""
    entry = c.config.models.get(name)
    return None if entry is None else Given(**entry.model_dump())


def analyze_namespace(
    c: Cluster,
    *,
    match: str | None,
    options: PackOptions,
    what_if_types: Sequence[str] = (),
    decode_run: str | None = None,
    note: Callable[[str], None],
) -> PackReport:
    """Every GPU-holding workload of the namespace: held, needed, copies per mode, plan."""
    notes: list[str] = []
    if decode_run is not None:
        options.step_ms, said = decode_step_ms(decode_run, options.target_concurrency)
        notes.append(said)
    objs = reads.read_objects(c.kube, c.ctx.namespace, note=note)
    facts = build_workloads(objs.pods, replicasets=objs.replicasets, nodes=objs.nodes, match=match)
    pods = {str(p["metadata"]["name"]): p for p in objs.pods}
    workloads = [_workload(c, w, pods, options, note) for w in facts]
    prices = dict(c.config.prices)
    plan, plan_notes = build_plan(
        workloads, {w.name: f.gpus_per_node for w, f in zip(workloads, facts, strict=True)}, prices
    )
    for w in workloads:
        notes += w.notes
    notes += plan_notes
    if not workloads:
        notes.append(
            f"no pod in namespace {c.ctx.namespace} holds a GPU"
            + (f" under a workload whose name contains '{match}'" if match else "")
        )
    per_node = {w.instance_type: f.gpus_per_node for w, f in zip(workloads, facts, strict=True) if w.instance_type}
    if what_if_types:
        per_node.update(reads.gpus_per_node(c.kube, [t for t in what_if_types if t not in per_node], note=note))
        notes += _what_if_notes(what_if_types, prices, per_node)
    unknown = [w.name for w in workloads if w.needed.source == "missing" and w.gpus]
    if unknown:
        held = "they hold" if len(unknown) > 1 else "it holds"
        notes.append(f"{', '.join(unknown)}: needs not known: counted in the plan as needing what {held}")
    return PackReport(
        context=c.ctx.name,
        namespace=c.ctx.namespace,
        match=match,
        workloads=workloads,
        plan=plan,
        what_if=_what_ifs(workloads, what_if_types, prices, per_node) if what_if_types else None,
        notes=list(dict.fromkeys(notes)),
    )
