"""kubesim's scheduler and kubelet: binding, GPU accounting, pod lifecycles, events."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, watch
from kubesim import GPU_RESOURCE, KubeSim, realistic_cluster
from kubesim._kubelet import pod_requests, unschedulable_message

Obj = dict[str, Any]
NS = "ml-lab"
G7E_FREE = {"ip-10-0-19-150.ec2.internal", "ip-10-0-83-47.ec2.internal"}
UNSCHEDULABLE_G7E = (
    "0/10 nodes are available: 4 Insufficient nvidia.com/gpu, 6 node(s) didn't match Pod's node "
    "affinity/selector. preemption: 0/10 nodes are available: 4 No preemption victims found for "
    "incoming pod, 6 Preemption is not helpful for scheduling."
)


@pytest.fixture
def sim() -> Iterator[KubeSim]:
    with KubeSim(tls=True, kubelet_delay=0.02) as server:
        server.load(realistic_cluster())
        yield server


@pytest.fixture
def api(sim: KubeSim) -> Any:
    return client.CoreV1Api(sim.api_client())


def lab_pod(
    name: str = "nsight-lab",
    *,
    gpus: int = 1,
    image: str = "registry.example.com/triton-vllm-container:1.0-1",
    command: list[str] | None = None,
    restart: str = "Never",
    tolerate: bool = True,
    instance_type: str = "g7e.8xlarge",
    **spec: Any,
) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"purpose": "nsight-learning"}},
        "spec": {
            "restartPolicy": restart,
            "nodeSelector": {"node.kubernetes.io/instance-type": instance_type},
            "tolerations": [{"key": GPU_RESOURCE, "operator": "Exists"}] if tolerate else [],
            "containers": [
                {
                    "name": "lab",
                    "image": image,
                    "command": command or ["sleep", "infinity"],
                    "resources": {"limits": {"cpu": "4", "memory": "24Gi", GPU_RESOURCE: str(gpus)}},
                }
            ],
            **spec,
        },
    }


def phase_is(*phases: str) -> Any:
    return lambda p: p is not None and p.get("status", {}).get("phase") in phases


def reasons(sim: KubeSim, name: str) -> list[str]:
    return [e["reason"] for e in sorted(sim.events_for(NS, name), key=lambda e: e["metadata"]["name"])]


def test_lab_pod_goes_pending_then_running_on_a_free_g7e(sim: KubeSim, api: Any) -> None:
    rv = api.list_namespaced_pod(NS).metadata.resource_version
    api.create_namespaced_pod(NS, lab_pod())
    pod = sim.wait_for("pods", NS, "nsight-lab", phase_is("Running"))
    assert pod is not None
    node = pod["spec"]["nodeName"]
    assert node in G7E_FREE
    status = pod["status"]
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "PodReadyToStartContainers": "True",
        "Initialized": "True",
        "Ready": "True",
        "ContainersReady": "True",
        "PodScheduled": "True",
    }
    node_ip = sim.get("nodes", None, node)["status"]["addresses"][0]["address"]  # type: ignore[index]
    assert status["hostIP"] == node_ip and status["podIP"].startswith("10.0.") and status["startTime"]
    cs = status["containerStatuses"][0]
    assert cs["ready"] and cs["started"] and "running" in cs["state"] and cs["restartCount"] == 0
    assert reasons(sim, "nsight-lab") == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
    scheduled = next(e for e in sim.events_for(NS, "nsight-lab") if e["reason"] == "Scheduled")
    assert scheduled["message"] == f"Successfully assigned {NS}/nsight-lab to {node}"
    assert scheduled["source"] == {"component": "default-scheduler"}
    # Every step was a watch event: ADDED, bound, ContainerCreating, ..., Running.
    phases = []
    w = watch.Watch()  # type: ignore[no-untyped-call]
    for e in w.stream(
        api.list_namespaced_pod,
        NS,
        resource_version=rv,
        timeout_seconds=10,  # type: ignore[no-untyped-call]
        field_selector="metadata.name=nsight-lab",
    ):
        obj = e["object"]
        phases.append((e["type"], obj.status.phase, bool(obj.spec.node_name)))
        if obj.status.phase == "Running":
            w.stop()  # type: ignore[no-untyped-call]
    assert phases[0] == ("ADDED", "Pending", False)
    assert ("MODIFIED", "Pending", True) in phases and phases[-1] == ("MODIFIED", "Running", True)


def test_no_free_gpu_means_pending_with_the_schedulers_words(sim: KubeSim, api: Any) -> None:
    for name in ("lab-a", "lab-b", "lab-c"):
        api.create_namespaced_pod(NS, lab_pod(name))
    sim.wait_for("pods", NS, "lab-a", phase_is("Running"))
    sim.wait_for("pods", NS, "lab-b", phase_is("Running"))
    pending = sim.wait_for("pods", NS, "lab-c", lambda p: p is not None and bool(p["status"].get("conditions")))
    assert pending is not None and "nodeName" not in pending["spec"]
    assert pending["status"]["conditions"] == [
        {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": pending["status"]["conditions"][0]["lastTransitionTime"],
            "reason": "Unschedulable",
            "message": UNSCHEDULABLE_G7E,
        }
    ]
    failed = [e for e in sim.events_for(NS, "lab-c") if e["reason"] == "FailedScheduling"]
    assert failed and failed[0]["type"] == "Warning" and failed[0]["message"] == UNSCHEDULABLE_G7E
    # Freeing a GPU lets the scheduler place it.
    api.delete_namespaced_pod("lab-a", NS)
    placed = sim.wait_for("pods", NS, "lab-c", phase_is("Running"))
    assert placed is not None and placed["spec"]["nodeName"] in G7E_FREE


def test_untolerated_taint_and_selector_counts(sim: KubeSim, api: Any) -> None:
    api.create_namespaced_pod(NS, lab_pod("no-toleration", tolerate=False))
    pod = sim.wait_for("pods", NS, "no-toleration", lambda p: p is not None and bool(p["status"].get("conditions")))
    assert pod is not None
    assert pod["status"]["conditions"][0]["message"] == (
        "0/10 nodes are available: 4 node(s) didn't match Pod's node affinity/selector, 6 node(s) had "
        "untolerated taint {nvidia.com/gpu: true}. preemption: 0/10 nodes are available: 10 Preemption "
        "is not helpful for scheduling."
    )


def _sidecar_pod(name: str, order: list[tuple[str, int, bool]], app_gpus: int = 0) -> Obj:
    pod = lab_pod(name, instance_type="g6.12xlarge", gpus=app_gpus)
    pod["spec"]["initContainers"] = [
        {
            "name": n,
            "image": "img:1",
            "command": ["sleep", "infinity"] if sidecar else ["true"],
            **({"restartPolicy": "Always"} if sidecar else {}),
            "resources": {"limits": {GPU_RESOURCE: str(g)}} if g else {},
        }
        for n, g, sidecar in order
    ]
    if not app_gpus:
        pod["spec"]["containers"][0]["resources"]["limits"].pop(GPU_RESOURCE)
    return pod


def test_native_sidecar_gpu_accounting_rule() -> None:
    gpu = GPU_RESOURCE

    def need(order: list[tuple[str, int, bool]], app: int = 0) -> int:
        return int(pod_requests(_sidecar_pod("x", order, app))[gpu])

    assert need([("runtime", 1, True)]) == 1  # sidecar holds the GPU
    assert need([("runtime", 1, True)], app=1) == 2  # sidecar + app
    assert need([("fetch", 1, False), ("runtime", 1, True)]) == 1  # init before the sidecar
    assert need([("runtime", 1, True), ("fetch", 1, False)]) == 2  # init beside the sidecar
    assert need([("fetch", 3, False), ("runtime", 1, True)], app=1) == 3  # init peak wins


def test_sidecar_gpus_count_when_scheduling(sim: KubeSim, api: Any) -> None:
    # The g6.12xlarge has one free L4: a sidecar-only GPU pod fits, sidecar + app does not.
    api.create_namespaced_pod(NS, _sidecar_pod("two-gpus", [("runtime", 1, True)], app_gpus=1))
    pod = sim.wait_for("pods", NS, "two-gpus", lambda p: p is not None and bool(p["status"].get("conditions")))
    assert pod is not None and "nodeName" not in pod["spec"]
    assert "1 Insufficient nvidia.com/gpu" in pod["status"]["conditions"][0]["message"]
    api.create_namespaced_pod(NS, _sidecar_pod("one-gpu", [("fetch", 0, False), ("runtime", 1, True)]))
    pod = sim.wait_for("pods", NS, "one-gpu", phase_is("Running"))
    assert pod is not None and pod["spec"]["nodeName"] == "ip-10-0-90-66.ec2.internal"
    inits = {cs["name"]: cs for cs in pod["status"]["initContainerStatuses"]}
    assert inits["fetch"]["state"]["terminated"]["reason"] == "Completed"
    assert "running" in inits["runtime"]["state"] and inits["runtime"]["ready"]


def test_image_pull_failure(sim: KubeSim, api: Any) -> None:
    image = "registry.example.com/does-not-exist:1.0"
    api.create_namespaced_pod(NS, lab_pod(image=image))

    def waiting(reason: str) -> Any:
        return lambda p: (
            p is not None
            and (p["status"].get("containerStatuses") or [{}])[0].get("state", {}).get("waiting", {}).get("reason")
            == reason
        )

    sim.wait_for("pods", NS, "nsight-lab", waiting("ErrImagePull"))
    pod = sim.wait_for("pods", NS, "nsight-lab", waiting("ImagePullBackOff"))
    assert pod is not None and pod["status"]["phase"] == "Pending"
    assert pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"] == f'Back-off pulling image "{image}"'
    msgs = [(e["reason"], e["message"]) for e in sim.events_for(NS, "nsight-lab")]
    assert ("Failed", "Error: ErrImagePull") in msgs and ("Failed", "Error: ImagePullBackOff") in msgs
    assert ("BackOff", f'Back-off pulling image "{image}"') in msgs


def test_crashing_container_restarts_with_back_off(sim: KubeSim, api: Any) -> None:
    api.create_namespaced_pod(NS, lab_pod("crasher", command=["false"], restart="Always"))
    pod = sim.wait_for(
        "pods",
        NS,
        "crasher",
        lambda p: p is not None and (p["status"].get("containerStatuses") or [{}])[0].get("restartCount", 0) >= 2,
    )
    assert pod is not None and pod["status"]["phase"] == "Running"
    cs = pod["status"]["containerStatuses"][0]
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    back_offs = [e for e in sim.events_for(NS, "crasher") if e["reason"] == "BackOff"]
    assert back_offs and back_offs[0]["type"] == "Warning"
    assert back_offs[0]["message"].startswith("Back-off restarting failed container lab in pod crasher_ml-lab(")
    crash = sim.wait_for(
        "pods", NS, "crasher", lambda p: p is not None and "waiting" in p["status"]["containerStatuses"][0]["state"]
    )
    assert (
        crash is not None
        and crash["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    )


def test_restart_never_failure_and_success(sim: KubeSim, api: Any) -> None:
    api.create_namespaced_pod(NS, lab_pod("fails", command=["sh", "-c", "exit 3"], gpus=0, instance_type="c8i.4xlarge"))
    api.create_namespaced_pod(NS, lab_pod("works", command=["true"], gpus=0, instance_type="c8i.4xlarge"))
    failed = sim.wait_for("pods", NS, "fails", phase_is("Failed", "Succeeded"))
    done = sim.wait_for("pods", NS, "works", phase_is("Failed", "Succeeded"))
    assert failed is not None and failed["status"]["phase"] == "Failed"
    assert failed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    assert done is not None and done["status"]["phase"] == "Succeeded"
    assert done["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"


def test_active_deadline_fails_the_pod(sim: KubeSim, api: Any) -> None:
    api.create_namespaced_pod(NS, lab_pod(activeDeadlineSeconds=1))
    pod = sim.wait_for("pods", NS, "nsight-lab", phase_is("Failed"))
    assert pod is not None and pod["status"]["reason"] == "DeadlineExceeded"
    assert pod["status"]["message"] == "Pod was active on the node longer than the specified deadline"
    assert "DeadlineExceeded" in reasons(sim, "nsight-lab")


def test_delete_stops_containers_then_removes_the_pod(sim: KubeSim, api: Any) -> None:
    api.create_namespaced_pod(NS, lab_pod())
    sim.wait_for("pods", NS, "nsight-lab", phase_is("Running"))
    sandbox = sim.sandbox(NS, "nsight-lab")
    out = api.delete_namespaced_pod("nsight-lab", NS)
    assert out.metadata.deletion_timestamp is not None
    sim.wait_for("pods", NS, "nsight-lab", lambda p: p is None)
    assert not sandbox.exists()
    history = sim.history("pods", NS, "nsight-lab")
    assert history[-1] is None and history[-2]["metadata"]["deletionTimestamp"]  # type: ignore[index]
    killing = [e for e in sim.list("events", NS) if e["reason"] == "Killing"]
    assert killing and killing[0]["message"] == "Stopping container lab"


def test_scheduler_can_be_switched_off() -> None:
    with KubeSim(scheduler=False) as sim:
        sim.load(realistic_cluster())
        api: Any = client.CoreV1Api(sim.api_client())
        api.create_namespaced_pod(NS, lab_pod())
        sim.put({**lab_pod("seeded"), "metadata": {"name": "seeded", "namespace": NS}, "status": {"phase": "Running"}})
        assert sim.get("pods", NS, "nsight-lab")["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}  # type: ignore[index]
        assert sim.get("pods", NS, "seeded")["status"] == {"phase": "Running"}  # type: ignore[index]
        assert sim.events_for(NS, "nsight-lab") == []


def test_unschedulable_message_format() -> None:
    assert unschedulable_message(0, []) == "no nodes available to schedule pods"
    assert unschedulable_message(
        3, [["Insufficient cpu", "Insufficient nvidia.com/gpu"], ["node(s) were unschedulable"], []]
    ) == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient nvidia.com/gpu, 1 node(s) were "
        "unschedulable. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod."
    )
