"""Seed clusters: a small realistic EKS GPU cluster, and a big generated one for benchmarks."""

from __future__ import annotations

import datetime as dt
import random
import uuid
from typing import Any

Obj = dict[str, Any]

NODE_GROUP_LABEL = "example.com/node-group"
GPU_RESOURCE = "nvidia.com/gpu"
LAB_NAMESPACE = "ml-lab"
SERVING_NAMESPACE = "serving"
REGISTRY = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
KUBELET_VERSION = "v1.31.7-eks-473151a"


# instance type -> (vCPU, memory GiB, GPUs, GPU karpenter name, GPU product label, GPU MiB)
INSTANCE_TYPES: dict[str, tuple[int, int, int, str, str, int]] = {
    "c8i.2xlarge": (8, 16, 0, "", "", 0),
    "c8i.4xlarge": (16, 32, 0, "", "", 0),
    "c8i.8xlarge": (32, 64, 0, "", "", 0),
    "c8i.16xlarge": (64, 128, 0, "", "", 0),
    "g6.xlarge": (4, 16, 1, "l4", "NVIDIA-L4", 23034),
    "g6.12xlarge": (48, 192, 4, "l4", "NVIDIA-L4", 23034),
    "g7e.8xlarge": (32, 256, 1, "rtx-pro-server-6000", "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", 97887),
    "p5.48xlarge": (192, 2048, 8, "h100", "NVIDIA-H100-80GB-HBM3", 81559),
}
_ZONES = (("us-east-1a", "use1-az1"), ("us-east-1b", "use1-az2"), ("us-east-1c", "use1-az4"))


def _ts(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _suffix(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))


def namespace(name: str, created: dt.datetime, rng: random.Random) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "uid": _uid(rng),
            "creationTimestamp": _ts(created),
            "labels": {"kubernetes.io/metadata.name": name},
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def node(
    name: str,
    instance_type: str,
    *,
    ip: str,
    zone: int,
    nodepool: str,
    group: str,
    created: dt.datetime,
    rng: random.Random,
) -> Obj:
    """A node labelled, tainted and reported the way EKS with Karpenter and the NVIDIA
    GPU operator show it."""
    cpu, mem_gib, gpus, gpu_name, gpu_product, gpu_mib = INSTANCE_TYPES[instance_type]
    family, size = instance_type.split(".")
    zone_name, zone_id = _ZONES[zone % len(_ZONES)]
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": instance_type,
        "beta.kubernetes.io/os": "linux",
        "failure-domain.beta.kubernetes.io/region": "us-east-1",
        "failure-domain.beta.kubernetes.io/zone": zone_name,
        "k8s.io/cloud-provider-aws": "2c4d1f3e8a9b",
        "karpenter.k8s.aws/instance-category": family[0],
        "karpenter.k8s.aws/instance-cpu": str(cpu),
        "karpenter.k8s.aws/instance-family": family,
        "karpenter.k8s.aws/instance-generation": "".join(ch for ch in family if ch.isdigit()),
        "karpenter.k8s.aws/instance-hypervisor": "nitro",
        "karpenter.k8s.aws/instance-memory": str(mem_gib * 1024),
        "karpenter.k8s.aws/instance-size": size,
        "karpenter.sh/capacity-type": "on-demand",
        "karpenter.sh/initialized": "true",
        "karpenter.sh/nodepool": nodepool,
        "karpenter.sh/registered": "true",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance_type,
        "topology.k8s.aws/zone-id": zone_id,
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": zone_name,
        NODE_GROUP_LABEL: group,
    }
    capacity = {
        "cpu": str(cpu),
        "ephemeral-storage": "209702892Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_gib * 1024 * 1024 - 1_400_000}Ki",
        "pods": "110" if cpu < 32 else "234",
    }
    allocatable = {
        "cpu": f"{cpu * 1000 - 90 - cpu * 10}m",
        "ephemeral-storage": "192188443124",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_gib * 1024 * 1024 - 1_400_000 - 900_000}Ki",
        "pods": capacity["pods"],
    }
    taints: list[Obj] = []
    if gpus:
        labels.update(
            {
                "karpenter.k8s.aws/instance-gpu-count": str(gpus),
                "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
                "karpenter.k8s.aws/instance-gpu-memory": str(gpu_mib),
                "karpenter.k8s.aws/instance-gpu-name": gpu_name,
                "nvidia.com/cuda.driver.major": "570",
                "nvidia.com/cuda.runtime.major": "12",
                "nvidia.com/gpu.count": str(gpus),
                "nvidia.com/gpu.memory": str(gpu_mib),
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": gpu_product,
                "nvidia.com/mig.capable": "false",
            }
        )
        capacity[GPU_RESOURCE] = str(gpus)
        allocatable[GPU_RESOURCE] = str(gpus)
        taints.append({"key": GPU_RESOURCE, "value": "true", "effect": "NoSchedule"})
    instance_id = "i-0" + "".join(rng.choice("0123456789abcdef") for _ in range(16))
    heartbeat = _ts(dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=rng.randint(1, 40)))
    started = _ts(created + dt.timedelta(seconds=35))

    def cond(type_: str, status: str, reason: str, message: str) -> Obj:
        return {
            "type": type_,
            "status": status,
            "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": started,
            "reason": reason,
            "message": message,
        }

    spec: Obj = {"providerID": f"aws:///{zone_name}/{instance_id}"}
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": _uid(rng),
            "creationTimestamp": _ts(created),
            "labels": labels,
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": ip,
                "karpenter.k8s.aws/ec2nodeclass-hash": "1492845627112235342",
                "karpenter.sh/nodepool-hash": "6821555240594823858",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "finalizers": ["karpenter.sh/termination"],
        },
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [
                cond(
                    "MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"
                ),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "InternalDNS", "address": name},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": _uid(rng),
                "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.1.141-155.222.amzn2023.x86_64",
                "kubeProxyVersion": KUBELET_VERSION,
                "kubeletVersion": KUBELET_VERSION,
                "machineID": "ec2" + "".join(rng.choice("0123456789abcdef") for _ in range(29)),
                "operatingSystem": "linux",
                "osImage": "Amazon Linux 2023.7.20250623",
                "systemUUID": "ec2" + "".join(rng.choice("0123456789abcdef") for _ in range(29)),
            },
        },
    }


def _resources(cpu: str, memory: str, gpus: int = 0) -> Obj:
    q: Obj = {"cpu": cpu, "memory": memory}
    if gpus:
        q[GPU_RESOURCE] = str(gpus)
    return {"limits": dict(q), "requests": dict(q)}


_DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def _container(name: str, image: str, resources: Obj, **extra: Any) -> Obj:
    c: Obj = {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": resources,
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    c.update(extra)
    return c


def _running_status(
    name: str,
    image: str,
    started: dt.datetime,
    *,
    restarts: int = 0,
    ready: bool = True,
    rng: random.Random,
    last_exit: int = 1,
) -> Obj:
    cs: Obj = {
        "name": name,
        "image": image,
        "imageID": f"{image.split(':')[0]}@sha256:{rng.getrandbits(256):064x}",
        "containerID": f"containerd://{rng.getrandbits(256):064x}",
        "ready": ready,
        "started": True,
        "restartCount": restarts,
        "state": {"running": {"startedAt": _ts(started)}},
        "lastState": {},
    }
    if restarts:
        cs["lastState"] = {
            "terminated": {
                "exitCode": last_exit,
                "reason": "Error",
                "startedAt": _ts(started - dt.timedelta(hours=2)),
                "finishedAt": _ts(started - dt.timedelta(seconds=12)),
                "containerID": f"containerd://{rng.getrandbits(256):064x}",
            }
        }
    return cs


def _completed_status(name: str, image: str, started: dt.datetime, finished: dt.datetime, rng: random.Random) -> Obj:
    return {
        "name": name,
        "image": image,
        "imageID": f"{image.split(':')[0]}@sha256:{rng.getrandbits(256):064x}",
        "containerID": f"containerd://{rng.getrandbits(256):064x}",
        "ready": False,
        "started": False,
        "restartCount": 0,
        "state": {
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": _ts(started),
                "finishedAt": _ts(finished),
                "containerID": f"containerd://{rng.getrandbits(256):064x}",
            }
        },
        "lastState": {},
    }


def _conditions(t: dt.datetime, *, ready: bool = True, scheduled: bool = True, initialized: bool = True) -> list[Obj]:
    ts = _ts(t)
    out = [
        {
            "type": "PodReadyToStartContainers",
            "status": "True" if scheduled else "False",
            "lastProbeTime": None,
            "lastTransitionTime": ts,
        },
        {
            "type": "Initialized",
            "status": "True" if initialized else "False",
            "lastProbeTime": None,
            "lastTransitionTime": ts,
        },
        {"type": "Ready", "status": "True" if ready else "False", "lastProbeTime": None, "lastTransitionTime": ts},
        {
            "type": "ContainersReady",
            "status": "True" if ready else "False",
            "lastProbeTime": None,
            "lastTransitionTime": ts,
        },
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": ts},
    ]
    if not ready:
        for c in out[2:4]:
            c["reason"] = "ContainersNotReady"
    return out


def serving_pod(
    name: str,
    *,
    model: str,
    node: Obj | None,
    created: dt.datetime,
    rng: random.Random,
    owner: Obj | None = None,
    restarts: int = 0,
    phase: str = "Running",
    instance_type: str = "g7e.8xlarge",
    gpus: int = 1,
    pod_ip: str | None = None,
) -> Obj:
    """A model-serving pod: a one-shot ``fetch-model`` init container, the GPU held by the
    native sidecar ``model-runtime`` (init container with ``restartPolicy: Always``), and a
    ``model-server`` app container with no GPU."""
    runtime_image = f"{REGISTRY}/triton-vllm-container:1.0-1"
    server_image = f"{REGISTRY}/model-server:3.2.0"
    fetch_image = f"{REGISTRY}/model-fetcher:2.4.1"
    labels = {
        "app.kubernetes.io/name": model,
        "app.kubernetes.io/component": "model",
        "pod-template-hash": name.rsplit("-", 2)[-2] if name.count("-") >= 2 else "0",
    }
    meta: Obj = {
        "name": name,
        "namespace": SERVING_NAMESPACE,
        "uid": _uid(rng),
        "creationTimestamp": _ts(created),
        "generateName": name.rsplit("-", 1)[0] + "-",
        "labels": labels,
        "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "8002"},
    }
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    spec: Obj = {
        "initContainers": [
            _container(
                "fetch-model",
                fetch_image,
                _resources("1", "2Gi"),
                command=["/bin/fetch-model", "--model", model, "--dest", "/models"],
                volumeMounts=[{"name": "models", "mountPath": "/models"}],
            ),
            _container(
                "model-runtime",
                runtime_image,
                _resources("6", "24Gi", gpus),
                restartPolicy="Always",
                command=["tritonserver", "--model-repository=/models", "--http-port=8000"],
                ports=[
                    {"containerPort": 8000, "name": "http", "protocol": "TCP"},
                    {"containerPort": 8002, "name": "metrics", "protocol": "TCP"},
                ],
                volumeMounts=[{"name": "models", "mountPath": "/models"}],
            ),
        ],
        "containers": [
            _container(
                "model-server",
                server_image,
                _resources("2", "4Gi"),
                env=[{"name": "TRITON_URL", "value": "localhost:8000"}, {"name": "MODEL_NAME", "value": model}],
                ports=[{"containerPort": 8080, "name": "grpc", "protocol": "TCP"}],
            ),
        ],
        "nodeSelector": {"node.kubernetes.io/instance-type": instance_type, NODE_GROUP_LABEL: "online-gpu-workers"},
        "tolerations": [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}, *_DEFAULT_TOLERATIONS],
        "volumes": [{"name": "models", "emptyDir": {}}],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 60,
        "dnsPolicy": "ClusterFirst",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "securityContext": {},
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
    }
    status: Obj = {"phase": phase, "qosClass": "Guaranteed"}
    if node is not None:
        spec["nodeName"] = node["metadata"]["name"]
        host_ip = node["status"]["addresses"][0]["address"]
        ip = pod_ip or f"10.0.{rng.randint(64, 127)}.{rng.randint(2, 254)}"
        started = created + dt.timedelta(seconds=4)
        ready_at = created + dt.timedelta(seconds=95)
        status.update(
            {
                "conditions": _conditions(ready_at),
                "hostIP": host_ip,
                "hostIPs": [{"ip": host_ip}],
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "startTime": _ts(started),
                "initContainerStatuses": [
                    _completed_status("fetch-model", fetch_image, started, started + dt.timedelta(seconds=40), rng),
                    _running_status(
                        "model-runtime", runtime_image, started + dt.timedelta(seconds=41), restarts=restarts, rng=rng
                    ),
                ],
                "containerStatuses": [
                    _running_status("model-server", server_image, started + dt.timedelta(seconds=42), rng=rng),
                ],
            }
        )
    else:
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": _ts(created),
                "reason": "Unschedulable",
                "message": "",  # filled by realistic_cluster once the node counts are known
            }
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def simple_pod(
    name: str,
    ns: str,
    image: str,
    *,
    node: Obj,
    created: dt.datetime,
    rng: random.Random,
    labels: dict[str, str] | None = None,
    cpu: str = "100m",
    memory: str = "128Mi",
    gpus: int = 0,
    tolerate_gpu: bool = False,
    restarts: int = 0,
    owner_kind: str | None = None,
    owner_name: str | None = None,
    command: list[str] | None = None,
    host_network: bool = False,
) -> Obj:
    res = _resources(cpu, memory, gpus)
    container = _container(name.rsplit("-", 1)[0] if owner_kind else name, image, res)
    if command:
        container["command"] = command
    tolerations = list(_DEFAULT_TOLERATIONS)
    if tolerate_gpu:
        tolerations.insert(0, {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"})
    meta: Obj = {
        "name": name,
        "namespace": ns,
        "uid": _uid(rng),
        "creationTimestamp": _ts(created),
        "labels": dict(labels or {}),
    }
    if owner_kind and owner_name:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner_kind,
                "name": owner_name,
                "uid": _uid(rng),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    host_ip = node["status"]["addresses"][0]["address"]
    ip = host_ip if host_network else f"10.0.{rng.randint(128, 191)}.{rng.randint(2, 254)}"
    started = created + dt.timedelta(seconds=3)
    spec: Obj = {
        "containers": [container],
        "nodeName": node["metadata"]["name"],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "securityContext": {},
        "tolerations": tolerations,
        "enableServiceLinks": True,
        "priority": 0,
    }
    if host_network:
        spec["hostNetwork"] = True
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {
            "phase": "Running",
            "qosClass": "Guaranteed",
            "conditions": _conditions(started + dt.timedelta(seconds=5)),
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": _ts(started),
            "containerStatuses": [_running_status(container["name"], image, started, restarts=restarts, rng=rng)],
        },
    }


def _event(
    involved: Obj,
    reason: str,
    message: str,
    *,
    type_: str = "Normal",
    component: str = "kubelet",
    host: str | None = None,
    count: int = 1,
    first: dt.datetime,
    last: dt.datetime,
    rng: random.Random,
    field_path: str | None = None,
) -> Obj:
    meta = involved["metadata"]
    kind = involved["kind"]
    ns = meta.get("namespace", "default")
    inv: Obj = {
        "kind": kind,
        "name": meta["name"],
        "apiVersion": "v1",
        "uid": meta["uid"] if kind != "Node" else meta["name"],
    }
    if kind != "Node":
        inv["namespace"] = ns
    if field_path:
        inv["fieldPath"] = field_path
    source: Obj = {"component": component}
    if host:
        source["host"] = host
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta['name']}.{rng.getrandbits(64):x}",
            "namespace": ns,
            "uid": _uid(rng),
            "creationTimestamp": _ts(first),
        },
        "involvedObject": inv,
        "reason": reason,
        "message": message,
        "type": type_,
        "count": count,
        "firstTimestamp": _ts(first),
        "lastTimestamp": _ts(last),
        "source": source,
        "reportingComponent": component,
        "reportingInstance": host or "",
        "eventTime": None,
    }


def realistic_cluster(now: dt.datetime | None = None, seed: int = 7) -> list[Obj]:
    """A small EKS cluster as the lab sees it.

    Nodes: four CPU nodes (``c8i.*``), one ``g6.xlarge`` (1 x NVIDIA L4), one
    ``g6.12xlarge`` (4 x L4) and four ``g7e.8xlarge`` (1 x RTX PRO 6000 Blackwell Server
    Edition each); GPU nodes carry the ``nvidia.com/gpu=true:NoSchedule`` taint.
    GPU use: two g7e GPUs held by ``llmqu-v1-s2`` serving pods (two g7e free), three of the
    four L4s on the g6.12xlarge held by ``embed-v3-s1``, the g6.xlarge's L4 held by a decoy
    pod that asks for its GPU in a plain container. A ``rerank-v2-s1`` pod asking for 2 GPUs
    is Pending (FailedScheduling); a warm-up pod has Succeeded; one serving pod restarted.
    Namespaces: default, kube-system, kube-public, kube-node-lease, serving, ml-lab.
    """
    rng = random.Random(seed)
    now = now or dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    day = dt.timedelta(days=1)
    objs: list[Obj] = []
    cluster_born = now - 412 * day
    for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
        objs.append(namespace(name, cluster_born, rng))
    objs.append(namespace(SERVING_NAMESPACE, cluster_born + 3 * day, rng))
    objs.append(namespace(LAB_NAMESPACE, now - 20 * day, rng))

    nodes: list[Obj] = []

    def add_node(itype: str, ip: str, zone: int, pool: str, group: str, age_days: float) -> Obj:
        name = f"ip-{ip.replace('.', '-')}.ec2.internal"
        n = node(
            name,
            itype,
            ip=ip,
            zone=zone,
            nodepool=pool,
            group=group,
            created=now - dt.timedelta(days=age_days),
            rng=rng,
        )
        nodes.append(n)
        return n

    cpu_nodes = [
        add_node("c8i.4xlarge", "10.0.12.31", 0, "system", "system", 61),
        add_node("c8i.4xlarge", "10.0.45.17", 1, "system", "system", 61),
        add_node("c8i.16xlarge", "10.0.77.102", 2, "cpu-general", "online-cpu-workers", 9),
        add_node("c8i.8xlarge", "10.0.21.240", 0, "cpu-general", "online-cpu-workers", 2.5),
    ]
    g6_small = add_node("g6.xlarge", "10.0.33.8", 1, "gpu-g6", "online-gpu-workers", 14)
    g6_big = add_node("g6.12xlarge", "10.0.90.66", 2, "gpu-g6", "online-gpu-workers", 30)
    g7e = [
        add_node("g7e.8xlarge", "10.0.14.201", 0, "gpu-g7e", "online-gpu-workers", 21),
        add_node("g7e.8xlarge", "10.0.52.119", 1, "gpu-g7e", "online-gpu-workers", 21),
        add_node("g7e.8xlarge", "10.0.83.47", 2, "gpu-g7e", "online-gpu-workers", 6),
        add_node("g7e.8xlarge", "10.0.19.150", 0, "gpu-g7e", "online-gpu-workers", 0.8),
    ]
    objs.extend(nodes)

    def deployment(
        name: str, replicas: int, template_hash: str, created: dt.datetime, itype: str, gpus: int
    ) -> tuple[Obj, Obj]:
        labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "model"}
        template = serving_pod(
            f"{name}-{template_hash}-xxxxx",
            model=name,
            node=None,
            created=created,
            rng=random.Random(0),
            instance_type=itype,
            gpus=gpus,
        )
        tmpl_spec = template["spec"]
        deploy: Obj = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": name,
                "namespace": SERVING_NAMESPACE,
                "uid": _uid(rng),
                "generation": 4,
                "creationTimestamp": _ts(created - 30 * day),
                "labels": labels,
            },
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": tmpl_spec},
            },
            "status": {
                "replicas": replicas,
                "updatedReplicas": replicas,
                "readyReplicas": replicas,
                "availableReplicas": replicas,
                "observedGeneration": 4,
            },
        }
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{name}-{template_hash}",
                "namespace": SERVING_NAMESPACE,
                "uid": _uid(rng),
                "creationTimestamp": _ts(created),
                "labels": {**labels, "pod-template-hash": template_hash},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": name,
                        "uid": deploy["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {**labels, "pod-template-hash": template_hash}},
                "template": {"metadata": {"labels": {**labels, "pod-template-hash": template_hash}}, "spec": tmpl_spec},
            },
            "status": {
                "replicas": replicas,
                "readyReplicas": replicas,
                "availableReplicas": replicas,
                "fullyLabeledReplicas": replicas,
                "observedGeneration": 1,
            },
        }
        return deploy, rs

    pods: list[Obj] = []
    events: list[Obj] = []

    # llmqu-v1-s2: two replicas on g7e nodes (one restarted twice); two g7e nodes stay free.
    llm_created = now - 3 * day - dt.timedelta(hours=5)
    llm_deploy, llm_rs = deployment("llmqu-v1-s2", 2, "7d9f8c6b5", llm_created, "g7e.8xlarge", 1)
    objs += [llm_deploy, llm_rs]
    for pod_name, n, restarts in (
        ("llmqu-v1-s2-7d9f8c6b5-x2x9q", g7e[0], 0),
        ("llmqu-v1-s2-7d9f8c6b5-k8mzt", g7e[1], 2),
    ):
        p = serving_pod(
            pod_name, model="llmqu-v1-s2", node=n, created=llm_created, rng=rng, owner=llm_rs, restarts=restarts
        )
        pods.append(p)
        host = n["metadata"]["name"]
        t0 = llm_created
        events += [
            _event(
                p,
                "Scheduled",
                f"Successfully assigned serving/{pod_name} to {host}",
                component="default-scheduler",
                first=t0,
                last=t0,
                rng=rng,
            ),
            _event(
                p,
                "Pulled",
                f'Container image "{REGISTRY}/triton-vllm-container:1.0-1" already present on machine',
                host=host,
                first=t0,
                last=t0,
                rng=rng,
                field_path="spec.initContainers{model-runtime}",
            ),
            _event(
                p,
                "Started",
                "Started container model-runtime",
                host=host,
                first=t0,
                last=t0,
                count=1 + restarts,
                rng=rng,
                field_path="spec.initContainers{model-runtime}",
            ),
        ]
        if restarts:
            events.append(
                _event(
                    p,
                    "BackOff",
                    "Back-off restarting failed container model-runtime in pod "
                    f"{pod_name}_serving({p['metadata']['uid']})",
                    type_="Warning",
                    host=host,
                    first=now - dt.timedelta(hours=2),
                    last=now - dt.timedelta(minutes=3),
                    count=restarts,
                    rng=rng,
                    field_path="spec.initContainers{model-runtime}",
                )
            )

    # embed-v3-s1: three replicas on the g6.12xlarge (one L4 left free there).
    emb_created = now - 9 * day
    emb_deploy, emb_rs = deployment("embed-v3-s1", 3, "5c6d7b8f9", emb_created, "g6.12xlarge", 1)
    objs += [emb_deploy, emb_rs]
    for suffix in ("q7w2z", "h4k9m", "t6p3v"):
        pods.append(
            serving_pod(
                f"embed-v3-s1-5c6d7b8f9-{suffix}",
                model="embed-v3-s1",
                node=g6_big,
                created=emb_created,
                rng=rng,
                owner=emb_rs,
                instance_type="g6.12xlarge",
            )
        )

    # rerank-v2-s1 asks for 2 GPUs on a g7e (1 GPU each): Pending for ever.
    rr_created = now - dt.timedelta(minutes=47)
    rr_deploy, rr_rs = deployment("rerank-v2-s1", 1, "6b8c9d7f4", rr_created, "g7e.8xlarge", 2)
    rr_deploy["status"].update({"readyReplicas": 0, "availableReplicas": 0, "unavailableReplicas": 1})
    rr_rs["status"].update({"readyReplicas": 0, "availableReplicas": 0})
    objs += [rr_deploy, rr_rs]
    pending = serving_pod(
        "rerank-v2-s1-6b8c9d7f4-n5j2r",
        model="rerank-v2-s1",
        node=None,
        created=rr_created,
        rng=rng,
        owner=rr_rs,
        phase="Pending",
        gpus=2,
    )
    # Scheduler's view: g7e nodes lack a second GPU; every other node fails the selector.
    n_total = len(nodes)
    n_g7e = len(g7e)
    message = (
        f"0/{n_total} nodes are available: {n_g7e} Insufficient {GPU_RESOURCE}, "
        f"{n_total - n_g7e} node(s) didn't match Pod's node affinity/selector. preemption: "
        f"0/{n_total} nodes are available: {n_g7e} No preemption victims found for incoming pod, "
        f"{n_total - n_g7e} Preemption is not helpful for scheduling."
    )
    pending["status"]["conditions"][0]["message"] = message
    pods.append(pending)
    events.append(
        _event(
            pending,
            "FailedScheduling",
            message,
            type_="Warning",
            component="default-scheduler",
            first=rr_created,
            last=now - dt.timedelta(minutes=2),
            count=14,
            rng=rng,
        )
    )

    # A finished warm-up job pod (Succeeded) on a CPU node.
    warm = simple_pod(
        "model-warmup-29140515-8xk2d",
        SERVING_NAMESPACE,
        f"{REGISTRY}/model-warmup:1.1.0",
        node=cpu_nodes[2],
        created=now - dt.timedelta(hours=6),
        rng=rng,
        labels={"job-name": "model-warmup-29140515", "batch.kubernetes.io/job-name": "model-warmup-29140515"},
    )
    warm["spec"]["restartPolicy"] = "Never"
    cs = warm["status"]["containerStatuses"][0]
    started = now - dt.timedelta(hours=6) + dt.timedelta(seconds=3)
    warm["status"]["containerStatuses"] = [
        _completed_status(cs["name"], cs["image"], started, started + dt.timedelta(minutes=4), rng)
    ]
    warm["status"]["phase"] = "Succeeded"
    warm["status"]["conditions"] = _conditions(started, ready=False)
    for c in warm["status"]["conditions"][2:4]:
        c["reason"] = "PodCompleted"
    pods.append(warm)

    # CPU-only gateway pods in serving.
    for i, suffix in enumerate(("b9x4d", "r2m7c")):
        pods.append(
            simple_pod(
                f"gateway-6f7c9d8b4-{suffix}",
                SERVING_NAMESPACE,
                f"{REGISTRY}/gateway:5.0.3",
                node=cpu_nodes[2 + i],
                created=now - 9 * day,
                rng=rng,
                cpu="2",
                memory="4Gi",
                labels={"app.kubernetes.io/name": "gateway", "pod-template-hash": "6f7c9d8b4"},
                owner_kind="ReplicaSet",
                owner_name="gateway-6f7c9d8b4",
            )
        )

    # The decoy: a GPU asked for in a plain container, on the g6.xlarge.
    decoy = simple_pod(
        "gpu-smoke-test",
        LAB_NAMESPACE,
        "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
        node=g6_small,
        created=now - 2 * day,
        rng=rng,
        cpu="1",
        memory="2Gi",
        gpus=1,
        tolerate_gpu=True,
        labels={"purpose": "smoke-test"},
        command=["sleep", "infinity"],
    )
    pods.append(decoy)

    # System pods: daemonsets on every node, coredns and karpenter on the system nodes.
    for n in nodes:
        nname = n["metadata"]["name"]
        short = nname.split(".")[0].split("-", 1)[1].replace("-", "")[-5:]
        is_gpu = GPU_RESOURCE in n["status"]["capacity"]
        created = dt.datetime.fromisoformat(n["metadata"]["creationTimestamp"].replace("Z", "+00:00")) + dt.timedelta(
            seconds=20
        )
        pods.append(
            simple_pod(
                f"aws-node-{short}",
                "kube-system",
                "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.19.2",
                node=n,
                created=created,
                rng=rng,
                cpu="25m",
                memory="64Mi",
                tolerate_gpu=True,
                labels={"k8s-app": "aws-node"},
                owner_kind="DaemonSet",
                owner_name="aws-node",
                host_network=True,
            )
        )
        pods.append(
            simple_pod(
                f"kube-proxy-{short}",
                "kube-system",
                "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/kube-proxy:v1.31.3-eksbuild.2",
                node=n,
                created=created,
                rng=rng,
                cpu="100m",
                memory="64Mi",
                tolerate_gpu=True,
                labels={"k8s-app": "kube-proxy"},
                owner_kind="DaemonSet",
                owner_name="kube-proxy",
                host_network=True,
            )
        )
        if is_gpu:
            pods.append(
                simple_pod(
                    f"nvidia-device-plugin-daemonset-{short}",
                    "kube-system",
                    "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                    node=n,
                    created=created,
                    rng=rng,
                    cpu="50m",
                    memory="64Mi",
                    tolerate_gpu=True,
                    labels={"name": "nvidia-device-plugin-ds"},
                    owner_kind="DaemonSet",
                    owner_name="nvidia-device-plugin-daemonset",
                )
            )
    for i, suffix in enumerate(("7h5xq", "m2c8k")):
        pods.append(
            simple_pod(
                f"coredns-789f8477df-{suffix}",
                "kube-system",
                "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/coredns:v1.11.4-eksbuild.2",
                node=cpu_nodes[i],
                created=now - 61 * day,
                rng=rng,
                cpu="100m",
                memory="170Mi",
                labels={"k8s-app": "kube-dns", "pod-template-hash": "789f8477df"},
                owner_kind="ReplicaSet",
                owner_name="coredns-789f8477df",
            )
        )
        pods.append(
            simple_pod(
                f"karpenter-5d8c7b9f6-{suffix}",
                "kube-system",
                "public.ecr.aws/karpenter/controller:1.3.3",
                node=cpu_nodes[i],
                created=now - 40 * day,
                rng=rng,
                cpu="1",
                memory="1Gi",
                labels={"app.kubernetes.io/name": "karpenter", "pod-template-hash": "5d8c7b9f6"},
                owner_kind="ReplicaSet",
                owner_name="karpenter-5d8c7b9f6",
                restarts=1 if i else 0,
            )
        )
    objs += pods
    objs += events
    return objs


def generate_cluster(nodes: int = 5000, pods: int = 20000, seed: int = 0) -> list[Obj]:
    """A big cluster in the same style for benchmarks: ~3% GPU nodes, each running the NVIDIA
    device plugin (kube-system) and model-serving pods whose GPU is held by a native sidecar
    (namespace ``serving``, most GPUs taken, some free), and CPU workloads spread over 20
    namespaces (``team-00``..``team-19``) on the CPU nodes only, mostly Running. The total
    number of pods is ``pods``. Fast: shared sub-structures."""
    rng = random.Random(seed)
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    created = now - dt.timedelta(days=30)
    ts = _ts(created)
    namespaces = [f"team-{i:02d}" for i in range(20)]
    objs: list[Obj] = [namespace(n, created, rng) for n in ("default", "kube-system", *namespaces)]
    cpu_types = ("c8i.2xlarge", "c8i.4xlarge", "c8i.8xlarge", "c8i.16xlarge")
    gpu_types = ("g6.xlarge", "g6.12xlarge", "g7e.8xlarge")
    templates: dict[str, Obj] = {}
    node_objs: list[Obj] = []
    for i in range(nodes):
        gpu = i % 33 == 0
        itype = gpu_types[(i // 33) % 3] if gpu else cpu_types[i % 4]
        ip = f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"
        name = f"ip-{ip.replace('.', '-')}.ec2.internal"
        tmpl = templates.get(itype)
        if tmpl is None:
            tmpl = node(
                "template",
                itype,
                ip="10.0.0.1",
                zone=0,
                nodepool="gpu" if gpu else "cpu",
                group="online-gpu-workers" if gpu else "online-cpu-workers",
                created=created,
                rng=rng,
            )
            templates[itype] = tmpl
        labels = dict(tmpl["metadata"]["labels"])
        labels["kubernetes.io/hostname"] = name
        zone_name, zone_id = _ZONES[i % 3]
        labels["topology.kubernetes.io/zone"] = zone_name
        labels["topology.k8s.aws/zone-id"] = zone_id
        status = dict(tmpl["status"])
        status["addresses"] = [
            {"type": "InternalIP", "address": ip},
            {"type": "InternalDNS", "address": name},
            {"type": "Hostname", "address": name},
        ]
        node_objs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "uid": _uid(rng),
                    "creationTimestamp": ts,
                    "labels": labels,
                    "annotations": tmpl["metadata"]["annotations"],
                },
                "spec": tmpl["spec"],
                "status": status,
            }
        )
    objs += node_objs
    gpu_nodes = [n for n in node_objs if GPU_RESOURCE in n["status"]["allocatable"]]
    cpu_nodes = [n for n in node_objs if GPU_RESOURCE not in n["status"]["allocatable"]] or node_objs
    gpu_pods: list[Obj] = []
    if "serving" not in namespaces:
        objs.append(namespace("serving", created, rng))
    for k, n in enumerate(gpu_nodes):
        short = n["metadata"]["name"].split(".")[0][3:]
        gpu_pods.append(
            simple_pod(
                f"nvidia-device-plugin-daemonset-{short}",
                "kube-system",
                "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                node=n,
                created=created,
                rng=rng,
                cpu="50m",
                memory="64Mi",
                tolerate_gpu=True,
                labels={"name": "nvidia-device-plugin-ds"},
                owner_kind="DaemonSet",
                owner_name="nvidia-device-plugin-daemonset",
            )
        )
        itype = n["metadata"]["labels"]["node.kubernetes.io/instance-type"]
        taken = int(n["status"]["allocatable"][GPU_RESOURCE]) - (1 if k % 4 == 0 else 0)  # a quarter keep one free
        for g in range(taken):
            model = f"model-{(k + g) % 12:02d}-v1"
            gpu_pods.append(
                serving_pod(
                    f"{model}-{rng.getrandbits(36):09x}-{_suffix(rng)}",
                    model=model,
                    node=n,
                    created=created,
                    rng=rng,
                    instance_type=itype,
                )
            )
    objs += gpu_pods[:pods]
    pods = max(0, pods - len(gpu_pods))
    pod_tmpl = simple_pod(
        "tmpl",
        "team-00",
        f"{REGISTRY}/worker:1.0.0",
        node=cpu_nodes[0],
        created=created,
        rng=rng,
        cpu="500m",
        memory="1Gi",
    )
    spec_t, status_t = pod_tmpl["spec"], pod_tmpl["status"]
    cstatus_t = status_t["containerStatuses"][0]
    for i in range(pods):
        ns = namespaces[i % len(namespaces)]
        n = cpu_nodes[rng.randrange(len(cpu_nodes))]
        host_ip = n["status"]["addresses"][0]["address"]
        app = f"svc-{i % 97:02d}"
        name = f"{app}-{rng.getrandbits(36):09x}-{_suffix(rng)}"
        spec = dict(spec_t)
        spec["nodeName"] = n["metadata"]["name"]
        status = dict(status_t)
        pod_ip = f"100.{64 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}"
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
        status["hostIP"] = host_ip
        status["hostIPs"] = [{"ip": host_ip}]
        if i % 50 == 7:
            status["phase"] = "Pending"
        elif i % 50 == 11:
            status["phase"] = "Succeeded"
        if i % 40 == 3:
            cs = dict(cstatus_t)
            cs["restartCount"] = 1 + i % 5
            status["containerStatuses"] = [cs]
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "uid": _uid(rng),
                    "creationTimestamp": ts,
                    "labels": {"app": app, "tier": "backend" if i % 3 else "frontend"},
                },
                "spec": spec,
                "status": status,
            }
        )
    return objs
