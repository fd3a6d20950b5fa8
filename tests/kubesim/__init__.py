"""kubesim: a Kubernetes API server for nsightlab's tests, built on kmock.

A real HTTP(S) server on 127.0.0.1 (its own thread and event loop) that the official
``kubernetes`` client and the real ``kubectl`` talk to: discovery, tables, list with
selectors and paging, watch with resourceVersion and timeouts, create/update/patch/delete
with server-filled metadata and real ``Status`` errors, logs, access reviews, TLS, bearer
tokens and exec credential plugins; with its scheduler and kubelet, batch/v1 Jobs whose
containers run as local processes (``_jobs``, ``_containers``).

    from kubesim import KubeSim, realistic_cluster
    with KubeSim() as sim:
        sim.load(realistic_cluster())
        path = sim.write_kubeconfig(tmp / "config", {"stg-online-use1": {"namespace": "serving"}})
"""

from __future__ import annotations

from ._api import DenyRule, Recorded, SimEmulator
from ._cluster import (
    GPU_RESOURCE,
    INSTANCE_TYPES,
    LAB_NAMESPACE,
    NODE_GROUP_LABEL,
    SERVING_NAMESPACE,
    generate_cluster,
    realistic_cluster,
)
from ._jobs import has_condition, job_finished
from ._resources import RESOURCES, ResourceType, lookup
from ._serving import load_serving, serving_logs, serving_workloads
from ._sim import EXEC_PLUGIN, Faults, KubeSim, kubectl

__all__ = [
    "EXEC_PLUGIN",
    "GPU_RESOURCE",
    "INSTANCE_TYPES",
    "LAB_NAMESPACE",
    "NODE_GROUP_LABEL",
    "RESOURCES",
    "SERVING_NAMESPACE",
    "DenyRule",
    "Faults",
    "KubeSim",
    "Recorded",
    "ResourceType",
    "SimEmulator",
    "generate_cluster",
    "has_condition",
    "job_finished",
    "kubectl",
    "load_serving",
    "lookup",
    "realistic_cluster",
    "serving_logs",
    "serving_workloads",
]
