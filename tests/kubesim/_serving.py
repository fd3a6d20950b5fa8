"""GPU serving workloads beside ``realistic_cluster()``, for ``nsightlab pack``: vLLM
deployments whose engine runs in a native sidecar with its flags in ``args``, a
tensor-parallel StatefulSet holding two GPUs per pod, and container logs holding real
vLLM start-up lines (``tests/data/vllm_logs``, their sources in its SOURCES.md).

    sim.load(realistic_cluster())
    load_serving(sim)

Adds to the namespace ``serving``:

- node ``ip-10-0-70-21.ec2.internal``, a ``p5.48xlarge`` (8 x H100 80GB);
- ``chat-vllm``: a Deployment (its ReplicaSet readable) of 2 pods on the p5 node; init
  container ``fetch-weights``, native sidecar ``vllm`` (1 GPU, 6 CPU) running ``vllm
  serve Qwen/Qwen3-0.6B --gpu-memory-utilization 0.8 --max-model-len 8192
  --max-num-seqs 64``, app container ``router``; its log: the V0 0.7 start-up on an H100
  (weights 1.12 GiB, KV 61.84 GiB in 578,944 tokens);
- ``big-llm``: a StatefulSet of 1 pod on the p5 node whose app container ``vllm`` holds
  2 GPUs (``--tensor-parallel-size 2``); its log: a V1 0.11 tensor-parallel start-up;
- logs for ``realistic_cluster``'s ``llmqu-v1-s2`` pods (Triton with vLLM inside, in the
  ``model-runtime`` sidecar: a V1 0.8 start-up that gives weights and KV tokens but no KV
  memory) and ``embed-v3-s1`` pods (Triton lines, no vLLM accounting).
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

from ._cluster import (
    GPU_RESOURCE,
    NODE_GROUP_LABEL,
    REGISTRY,
    SERVING_NAMESPACE,
    _completed_status,
    _conditions,
    _container,
    _resources,
    _running_status,
    _ts,
    _uid,
    node,
)

Obj = dict[str, Any]
LOGS = Path(__file__).resolve().parent.parent / "data" / "vllm_logs"
P5_NODE = "ip-10-0-70-21.ec2.internal"
VLLM_IMAGE = "vllm/vllm-openai:v0.7.3"
CHAT = "chat-vllm"
CHAT_RS = "chat-vllm-5f7d8c9b6"
CHAT_PODS = (f"{CHAT_RS}-q2w4e", f"{CHAT_RS}-r7t9y")
BIG = "big-llm"
BIG_POD = "big-llm-0"
CHAT_ARGS = [
    "Qwen/Qwen3-0.6B",
    "--gpu-memory-utilization",
    "0.8",
    "--max-model-len",
    "8192",
    "--max-num-seqs",
    "64",
    "--port",
    "8000",
]
BIG_ARGS = [
    "--model",
    "moonshotai/Kimi-Linear-48B-A3B-Instruct",
    "--tensor-parallel-size",
    "2",
    "--max-model-len",
    "120000",
    "--trust-remote-code",
]
TRITON_LOG = """I0321 20:15:40.182311 1 pinned_memory_manager.cc:277] Pinned memory pool is created with size 268435456
I0321 20:15:40.184522 1 cuda_memory_manager.cc:107] CUDA memory pool is created on device 0 with size 67108864
I0321 20:15:41.902114 1 model_lifecycle.cc:469] loading: embed-v3:1
I0321 20:15:44.311020 1 model_lifecycle.cc:835] successfully loaded 'embed-v3'
I0321 20:15:44.311902 1 grpc_server.cc:2463] Started GRPCInferenceService at 0.0.0.0:8001
I0321 20:15:44.312207 1 http_server.cc:4692] Started HTTPService at 0.0.0.0:8000
"""


def log_text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def _owner(kind: str, name: str, uid: str) -> list[Obj]:
    return [
        {
            "apiVersion": "apps/v1",
            "kind": kind,
            "name": name,
            "uid": uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _pod(
    name: str,
    *,
    labels: dict[str, str],
    owner: list[Obj],
    created: dt.datetime,
    rng: random.Random,
    init: list[Obj],
    apps: list[Obj],
    itype: str,
) -> Obj:
    started = created + dt.timedelta(seconds=4)
    statuses: list[Obj] = []
    for c in init:
        if c.get("restartPolicy") == "Always":
            statuses.append(_running_status(c["name"], c["image"], started + dt.timedelta(seconds=30), rng=rng))
        else:
            statuses.append(_completed_status(c["name"], c["image"], started, started + dt.timedelta(seconds=25), rng))
    ip = f"10.0.{rng.randint(64, 127)}.{rng.randint(2, 254)}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": SERVING_NAMESPACE,
            "uid": _uid(rng),
            "creationTimestamp": _ts(created),
            "labels": labels,
            "ownerReferences": owner,
        },
        "spec": {
            "initContainers": init,
            "containers": apps,
            "nodeName": P5_NODE,
            "nodeSelector": {"node.kubernetes.io/instance-type": itype, NODE_GROUP_LABEL: "online-gpu-workers"},
            "tolerations": [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}],
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "volumes": [{"name": "models", "emptyDir": {}}, {"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        },
        "status": {
            "phase": "Running",
            "qosClass": "Guaranteed",
            "conditions": _conditions(started + dt.timedelta(seconds=90)),
            "hostIP": "10.0.70.21",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": _ts(started),
            "initContainerStatuses": statuses,
            "containerStatuses": [
                _running_status(c["name"], c["image"], started + dt.timedelta(seconds=31), rng=rng) for c in apps
            ],
        },
    }


def serving_workloads(now: dt.datetime | None = None, seed: int = 11) -> list[Obj]:
    """The p5 node, chat-vllm (Deployment, ReplicaSet, 2 pods) and big-llm (StatefulSet, 1 pod)."""
    rng = random.Random(seed)
    now = now or dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    created = now - dt.timedelta(days=2)
    p5 = node(
        P5_NODE,
        "p5.48xlarge",
        ip="10.0.70.21",
        zone=1,
        nodepool="gpu-p5",
        group="online-gpu-workers",
        created=now - dt.timedelta(days=12),
        rng=rng,
    )
    objs: list[Obj] = [p5]

    chat_labels = {"app.kubernetes.io/name": CHAT, "app.kubernetes.io/component": "model"}
    deploy_uid, rs_uid = _uid(rng), _uid(rng)
    weights = _container(
        "fetch-weights",
        f"{REGISTRY}/model-fetcher:2.4.1",
        _resources("1", "2Gi"),
        command=["/bin/fetch-model", "--model", "Qwen/Qwen3-0.6B", "--dest", "/models"],
        volumeMounts=[{"name": "models", "mountPath": "/models"}],
    )
    vllm = _container(
        "vllm",
        VLLM_IMAGE,
        _resources("6", "48Gi", 1),
        restartPolicy="Always",
        command=["vllm", "serve"],
        args=list(CHAT_ARGS),
        env=[{"name": "HF_HOME", "value": "/models"}],
        ports=[{"containerPort": 8000, "name": "http", "protocol": "TCP"}],
        volumeMounts=[{"name": "models", "mountPath": "/models"}, {"name": "dshm", "mountPath": "/dev/shm"}],
    )
    router = _container("router", f"{REGISTRY}/model-server:3.2.0", _resources("1", "1Gi"))
    template = {
        "metadata": {"labels": chat_labels},
        "spec": {"initContainers": [weights, vllm], "containers": [router]},
    }
    objs.append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": CHAT,
                "namespace": SERVING_NAMESPACE,
                "uid": deploy_uid,
                "generation": 2,
                "creationTimestamp": _ts(created),
                "labels": chat_labels,
            },
            "spec": {"replicas": 2, "selector": {"matchLabels": chat_labels}, "template": template},
            "status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "updatedReplicas": 2},
        }
    )
    rs_labels = {**chat_labels, "pod-template-hash": "5f7d8c9b6"}
    objs.append(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": CHAT_RS,
                "namespace": SERVING_NAMESPACE,
                "uid": rs_uid,
                "labels": rs_labels,
                "creationTimestamp": _ts(created),
                "ownerReferences": _owner("Deployment", CHAT, deploy_uid),
            },
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": rs_labels},
                "template": {**template, "metadata": {"labels": rs_labels}},
            },
            "status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2},
        }
    )
    for name in CHAT_PODS:
        objs.append(
            _pod(
                name,
                labels=rs_labels,
                owner=_owner("ReplicaSet", CHAT_RS, rs_uid),
                created=created,
                rng=rng,
                init=[dict(weights), dict(vllm)],
                apps=[dict(router)],
                itype="p5.48xlarge",
            )
        )

    big_labels = {"app.kubernetes.io/name": BIG, "app.kubernetes.io/component": "model"}
    sts_uid = _uid(rng)
    big = _container(
        "vllm",
        VLLM_IMAGE,
        _resources("16", "256Gi", 2),
        command=["python3", "-m", "vllm.entrypoints.openai.api_server"],
        args=list(BIG_ARGS),
    )
    objs.append(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {
                "name": BIG,
                "namespace": SERVING_NAMESPACE,
                "uid": sts_uid,
                "labels": big_labels,
                "creationTimestamp": _ts(created),
            },
            "spec": {
                "replicas": 1,
                "serviceName": BIG,
                "selector": {"matchLabels": big_labels},
                "template": {"metadata": {"labels": big_labels}, "spec": {"containers": [big]}},
            },
            "status": {"replicas": 1, "readyReplicas": 1},
        }
    )
    objs.append(
        _pod(
            BIG_POD,
            labels={**big_labels, "apps.kubernetes.io/pod-index": "0"},
            owner=_owner("StatefulSet", BIG, sts_uid),
            created=created,
            rng=rng,
            init=[],
            apps=[dict(big)],
            itype="p5.48xlarge",
        )
    )
    return objs


#: (pod, container, log text) for the workloads above and realistic_cluster's serving pods.
def serving_logs() -> list[tuple[str, str, str]]:
    chat = log_text("v0.7_single-gpu_mellea-416.log")
    llmqu = log_text("v1-0.8_l40s_vllm-17122.log")
    return [
        (CHAT_PODS[0], "vllm", chat),
        (CHAT_PODS[1], "vllm", chat),
        (BIG_POD, "vllm", log_text("v1-0.11_tp2_vllm-28228.log")),
        ("llmqu-v1-s2-7d9f8c6b5-x2x9q", "model-runtime", llmqu),
        ("llmqu-v1-s2-7d9f8c6b5-k8mzt", "model-runtime", llmqu),
        ("embed-v3-s1-5c6d7b8f9-h4k9m", "model-runtime", TRITON_LOG),
        ("embed-v3-s1-5c6d7b8f9-q7w2z", "model-runtime", TRITON_LOG),
        ("embed-v3-s1-5c6d7b8f9-t6p3v", "model-runtime", TRITON_LOG),
    ]


def load_serving(sim: Any) -> None:
    """Add the workloads and every container log above to a KubeSim loaded with realistic_cluster()."""
    sim.load(serving_workloads())
    for pod, container, text in serving_logs():
        sim.append_log(SERVING_NAMESPACE, pod, text, container=container)
