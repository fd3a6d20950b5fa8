"""kubesim runs batch/v1 Jobs: the controller, real container processes, volumes, garbage
collection; the real kubectl and the official client are the judges."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from kubesim import GPU_RESOURCE, KubeSim, has_condition, job_finished, kubectl, realistic_cluster
from kubesim._defaults import validate_configmap

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

Obj = dict[str, Any]
NS = "ml-lab"
CTX = "dev-ml-use1"


@pytest.fixture
def sim() -> Iterator[KubeSim]:
    with KubeSim(tls=True, kubelet_delay=0.02) as server:
        server.load(realistic_cluster())
        yield server


@pytest.fixture
def kubeconfig(sim: KubeSim, tmp_path: Path) -> Path:
    return sim.write_kubeconfig(tmp_path / "kubeconfig", {CTX: {"namespace": NS}})


def k(kubeconfig: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    result: subprocess.CompletedProcess[str] = kubectl(kubeconfig, CTX, *args, input=input)
    return result


def ok(kubeconfig: Path, *args: str, input: str | None = None) -> str:
    result = k(kubeconfig, *args, input=input)
    assert result.returncode == 0, result.stderr
    return result.stdout


def job(name: str, command: list[str], *, restart: str = "Never", **spec: Any) -> Obj:
    """A Job of one container running ``command``; ``pod_spec`` entries go to the template's
    spec, ``container`` entries to the container, the rest to the Job's spec."""
    pod_spec = {"restartPolicy": restart, **spec.pop("pod_spec", {})}
    container = {"name": "main", "image": "busybox:1.36", "command": command, **spec.pop("container", {})}
    pod_spec["containers"] = [container]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {**spec, "template": {"spec": pod_spec}},
    }


def create(kubeconfig: Path, obj: Obj) -> None:
    ok(kubeconfig, "create", "-f", "-", input=yaml.safe_dump(obj))


def submit(sim: KubeSim, obj: Obj) -> None:
    """Create a Job with the official client (where kubectl is not what is being judged)."""
    api: Any = client.BatchV1Api(sim.api_client())
    api.create_namespaced_job(NS, obj)


def gpu_spec(instance_type: str) -> Obj:
    return {
        "nodeSelector": {"node.kubernetes.io/instance-type": instance_type},
        "tolerations": [{"key": GPU_RESOURCE, "operator": "Exists"}],
    }


GPU_LIMITS = {"resources": {"limits": {"cpu": "1", "memory": "1Gi", GPU_RESOURCE: "1"}}}


def finished(sim: KubeSim, name: str, timeout: float = 20) -> Obj:
    found = sim.wait_for("jobs", NS, name, job_finished, timeout=timeout)
    assert found is not None
    return found


def running_pod(sim: KubeSim, job_name: str) -> str:
    """The name of the Job's first pod, once it runs."""
    sim.wait_until(
        lambda: bool(sim.job_pods(NS, job_name)) and sim.job_pods(NS, job_name)[0]["status"].get("phase") == "Running",
        what=f"{job_name} running",
    )
    return str(sim.job_pods(NS, job_name)[0]["metadata"]["name"])


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie waiting to be reaped does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def removed_at(list_fn: Any, name: str, since: str) -> int:
    """The resourceVersion at which a watch from ``since`` saw the object deleted."""
    w = watch.Watch()  # type: ignore[no-untyped-call]
    for event in w.stream(
        list_fn,
        NS,
        resource_version=since,
        timeout_seconds=5,  # type: ignore[no-untyped-call]
        field_selector=f"metadata.name={name}",
    ):
        if event["type"] == "DELETED":
            w.stop()  # type: ignore[no-untyped-call]
            return int(event["object"].metadata.resource_version)
    raise AssertionError(f"no DELETED event for {name}")


def conditions(found: Obj) -> list[tuple[str, str, str]]:
    return [(c["type"], c["reason"], c["message"]) for c in found["status"]["conditions"]]


def reasons(sim: KubeSim, name: str) -> list[tuple[str, str, str]]:
    events = sorted(sim.events_for(NS, name), key=lambda e: e["metadata"]["name"])
    return [(e["type"], e["reason"], e["message"]) for e in events]


# ---- the lifecycle, judged by kubectl ---------------------------------------------------------


def test_job_runs_its_command_and_kubectl_sees_it_complete(sim: KubeSim, kubeconfig: Path) -> None:
    create(kubeconfig, job("hello", ["sh", "-c", "echo hello; echo done >&2"]))
    assert (
        ok(kubeconfig, "wait", "--for=condition=complete", "job/hello", "--timeout=20s").strip()
        == "job.batch/hello condition met"
    )
    assert ok(kubeconfig, "logs", "job/hello") == "hello\ndone\n"
    lines = ok(kubeconfig, "get", "jobs").splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert lines[1].split()[:3] == ["hello", "Complete", "1/1"]
    wide = ok(kubeconfig, "get", "jobs", "-o", "wide").splitlines()
    found = sim.get("jobs", NS, "hello")
    assert found is not None
    uid = found["metadata"]["uid"]
    assert wide[0].split()[5:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1].split()[5:] == ["main", "busybox:1.36", f"batch.kubernetes.io/controller-uid={uid}"]
    # As 1.31 ends a Job: SuccessCriteriaMet, then Complete, same reason and message.
    assert conditions(found) == [
        ("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods"),
        ("Complete", "CompletionsReached", "Reached expected number of succeeded pods"),
    ]
    status = found["status"]
    assert status["succeeded"] == 1 and "failed" not in status and "active" not in status
    assert status["ready"] == 0 and status["terminating"] == 0 and status["uncountedTerminatedPods"] == {}
    assert status["completionTime"] == found["status"]["conditions"][1]["lastTransitionTime"]
    pods = sim.job_pods(NS, "hello")
    assert len(pods) == 1
    pod = pods[0]
    assert pod["metadata"]["generateName"] == "hello-" and pod["status"]["phase"] == "Succeeded"
    assert pod["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "hello",
            "uid": uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert reasons(sim, "hello") == [
        ("Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}"),
        ("Normal", "Completed", "Job completed"),
    ]
    # kubectl deletes in the background: the Job goes, then its pods.
    assert ok(kubeconfig, "delete", "job", "hello").strip() == 'job.batch "hello" deleted'
    sim.wait_until(lambda: sim.get("pods", NS, pod["metadata"]["name"]) is None, what="the pod collected")
    result = k(kubeconfig, "get", "pods", "-l", "job-name=hello")
    assert (
        result.returncode == 0
        and result.stdout == ""
        and result.stderr.strip() == "No resources found in ml-lab namespace."
    )
    assert sim.server_errors == []


def test_server_fills_the_defaults_and_checks_restart_policy(sim: KubeSim, kubeconfig: Path) -> None:
    body = job("defaults", ["true"])
    body["spec"]["template"]["metadata"] = {"labels": {"app": "probe"}}
    create(kubeconfig, body)
    got = json.loads(ok(kubeconfig, "get", "job", "defaults", "-o", "json"))
    uid = got["metadata"]["uid"]
    spec = got["spec"]
    assert (spec["backoffLimit"], spec["completions"], spec["parallelism"]) == (6, 1, 1)
    assert (spec["completionMode"], spec["suspend"], spec["podReplacementPolicy"]) == (
        "NonIndexed",
        False,
        "TerminatingOrFailed",
    )
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    generated = {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "defaults",
        "controller-uid": uid,
        "job-name": "defaults",
    }
    assert spec["template"]["metadata"]["labels"] == {"app": "probe", **generated}
    assert got["metadata"]["labels"] == {"app": "probe", **generated}  # a Job without labels takes its template's
    container = spec["template"]["spec"]["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent" and container["terminationMessagePolicy"] == "File"
    assert spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    # restartPolicy must be Never or OnFailure, and a Job has no default for it.
    missing = job("no-policy", ["true"])
    del missing["spec"]["template"]["spec"]["restartPolicy"]
    result = k(kubeconfig, "create", "-f", "-", input=yaml.safe_dump(missing))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'The Job "no-policy" is invalid: spec.template.spec.restartPolicy: '
        'Required value: valid values: "OnFailure", "Never"'
    )
    result = k(kubeconfig, "create", "-f", "-", input=yaml.safe_dump(job("always", ["true"], restart="Always")))
    assert result.stderr.strip() == (
        'The Job "always" is invalid: spec.template.spec.restartPolicy: '
        'Unsupported value: "Always": supported values: "OnFailure", "Never"'
    )
    api: Any = client.BatchV1Api(sim.api_client())
    with pytest.raises(ApiException) as err:
        api.create_namespaced_job(NS, job("negative", ["true"], backoffLimit=-1))
    assert err.value.status == 422
    assert (
        json.loads(str(err.value.body))["message"]
        == 'Job.batch "negative" is invalid: spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0'
    )
    assert sim.get("jobs", NS, "no-policy") is None and sim.get("jobs", NS, "always") is None


def test_discovery_lists_jobs_in_batch(sim: KubeSim, kubeconfig: Path) -> None:
    lines = ok(kubeconfig, "api-resources", "--api-group=batch").splitlines()
    assert [line.split() for line in lines] == [
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
        ["jobs", "batch/v1", "true", "Job"],
    ]
    submit(sim, job("listed", ["true"]))
    finished(sim, "listed")
    assert "job.batch/listed" in ok(kubeconfig, "get", "all", "-o", "name").split()
    assert (
        ok(kubeconfig, "get", "jobs", "--field-selector", "status.successful=1", "-o", "name").strip()
        == "job.batch/listed"
    )


def test_configmap_volume_and_env_reach_the_process(sim: KubeSim, kubeconfig: Path) -> None:
    sweep = (
        "import json, os, sys\n"
        "out = {'gpu': os.environ['GPU'], 'pod': os.environ['POD'], 'args': sys.argv[1:]}\n"
        "print('noise before the result')\n"
        "print('---BEGIN RESULT---'); print(json.dumps(out)); print('---END RESULT---')\n"
    )
    ok(
        kubeconfig,
        "create",
        "configmap",
        "fleet-sweep",
        "--from-literal=sweep.py=" + sweep,
        "--from-literal=note.txt=read from the mount",
    )
    body = job(
        "sweep",
        ["python3", "/lab/sweep.py", "--json", "-"],
        pod_spec={"volumes": [{"name": "lab", "configMap": {"name": "fleet-sweep"}}]},
        container={
            "volumeMounts": [{"name": "lab", "mountPath": "/lab"}],
            "env": [
                {"name": "GPU", "value": "l4"},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            ],
        },
    )
    create(kubeconfig, body)
    ok(kubeconfig, "wait", "--for=condition=complete", "job/sweep", "--timeout=20s")
    log = ok(kubeconfig, "logs", "job/sweep")
    result = json.loads(log.split("---BEGIN RESULT---\n")[1].split("---END RESULT---")[0])
    pod = sim.job_pods(NS, "sweep")[0]["metadata"]["name"]
    assert result == {"gpu": "l4", "pod": pod, "args": ["--json", "-"]}
    # A python3 one-liner reading a mounted file; the files are read-only.
    one_liner = job(
        "reader",
        ["python3", "-c", "print(open('/lab/note.txt').read())"],
        pod_spec={
            "volumes": [
                {
                    "name": "lab",
                    "configMap": {"name": "fleet-sweep", "items": [{"key": "note.txt", "path": "note.txt"}]},
                }
            ]
        },
        container={
            "volumeMounts": [{"name": "lab", "mountPath": "/lab"}],
            "command": [
                "python3",
                "-c",
                "print(open('/lab/note.txt').read(), flush=True); import time; time.sleep(30)",
            ],
        },
    )
    submit(sim, one_liner)
    reader = running_pod(sim, "reader")
    mounted = sim.pod_path(NS, reader, "/lab")
    assert sorted(p.name for p in mounted.iterdir()) == ["note.txt"]  # only the item asked for
    assert (mounted / "note.txt").stat().st_mode & 0o777 == 0o444
    sim.wait_until(lambda: "read from the mount" in sim.logs(NS, reader), what="the one-liner's output")
    assert sim.logs(NS, reader) == "read from the mount\n"


def test_configmap_over_one_mebibyte_is_refused(sim: KubeSim) -> None:
    core: Any = client.CoreV1Api(sim.api_client())
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(NS, {"metadata": {"name": "big"}, "data": {"sweep.py": "#" * (1 << 20)}})
    assert err.value.status == 422
    assert (
        json.loads(str(err.value.body))["message"]
        == 'ConfigMap "big" is invalid: []: Too long: must have at most 1048576 bytes'
    )
    # Keys count too; exactly 1 MiB is allowed.
    assert validate_configmap({"data": {"a": "#" * ((1 << 20) - 1)}}) == []
    assert validate_configmap({"data": {"ab": "#" * ((1 << 20) - 1)}}) != []


def test_missing_configmap_keeps_the_pod_in_container_creating(sim: KubeSim, kubeconfig: Path) -> None:
    body = job(
        "needs-cm",
        ["cat", "/cfg/x"],
        pod_spec={"volumes": [{"name": "cfg", "configMap": {"name": "later"}}]},
        container={"volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}]},
    )
    create(kubeconfig, body)
    sim.wait_until(
        lambda: any(
            e["reason"] == "FailedMount"
            for p in sim.job_pods(NS, "needs-cm")
            for e in sim.events_for(NS, p["metadata"]["name"])
        ),
        what="FailedMount",
    )
    pod = sim.job_pods(NS, "needs-cm")[0]
    name = pod["metadata"]["name"]
    event = next(e for e in sim.events_for(NS, name) if e["reason"] == "FailedMount")
    assert (event["type"], event["message"]) == (
        "Warning",
        'MountVolume.SetUp failed for volume "cfg" : configmap "later" not found',
    )
    assert ok(kubeconfig, "get", "pod", name, "--no-headers").split()[1:3] == ["0/1", "ContainerCreating"]
    assert "podIP" not in sim.get("pods", NS, name)["status"]  # type: ignore[index]
    # The kubelet keeps trying: once the ConfigMap exists the Job runs.
    ok(kubeconfig, "create", "configmap", "later", "--from-literal=x=arrived")
    assert finished(sim, "needs-cm")["status"]["succeeded"] == 1
    assert sim.logs(NS, name) == "arrived"


# ---- failure ----------------------------------------------------------------------------------


def test_failing_job_with_backoff_limit_zero_fails_once(sim: KubeSim, kubeconfig: Path) -> None:
    create(kubeconfig, job("broken", ["sh", "-c", "echo about to fail >&2; exit 3"], backoffLimit=0))
    assert (
        ok(kubeconfig, "wait", "--for=condition=failed", "job/broken", "--timeout=20s").strip()
        == "job.batch/broken condition met"
    )
    found = sim.get("jobs", NS, "broken")
    assert found is not None
    assert conditions(found) == [
        ("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    ]
    assert found["status"]["failed"] == 1 and "completionTime" not in found["status"]
    pods = sim.job_pods(NS, "broken")
    assert len(pods) == 1 and pods[0]["status"]["phase"] == "Failed"  # a failed pod stays, with its log
    term = pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (3, "Error")
    assert ok(kubeconfig, "logs", "job/broken") == "about to fail\n"
    assert ok(kubeconfig, "get", "job", "broken", "--no-headers").split()[1:3] == ["Failed", "0/1"]
    assert reasons(sim, "broken")[-1] == (
        "Warning",
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
    )


def test_backoff_limit_one_makes_two_pods(sim: KubeSim) -> None:
    submit(sim, job("twice", ["sh", "-c", "echo attempt; exit 1"], backoffLimit=1))
    found = finished(sim, "twice")
    assert found["status"]["failed"] == 2 and conditions(found)[-1][:2] == ("Failed", "BackoffLimitExceeded")
    pods = sim.job_pods(NS, "twice")
    assert len(pods) == 2 and {p["status"]["phase"] for p in pods} == {"Failed"}
    assert [sim.logs(NS, p["metadata"]["name"]) for p in pods] == ["attempt\n", "attempt\n"]
    created = [e for e in reasons(sim, "twice") if e[1] == "SuccessfulCreate"]
    assert len(created) == 2


def test_on_failure_restarts_the_container_then_gives_up(sim: KubeSim) -> None:
    submit(sim, job("flaky", ["sh", "-c", "echo try; exit 2"], restart="OnFailure", backoffLimit=2))
    found = finished(sim, "flaky")
    assert conditions(found)[-1][:2] == ("Failed", "BackoffLimitExceeded")
    # The restarted pod is deleted when the Job gives up, and counts as failed.
    assert found["status"]["failed"] == 1 and sim.job_pods(NS, "flaky") == []
    events = reasons(sim, "flaky")
    pod = next(message.split(": ")[1] for _, reason, message in events if reason == "SuccessfulCreate")
    assert ("Normal", "SuccessfulDelete", f"Deleted pod: {pod}") in events
    restarts = [
        cs["restartCount"] for v in sim.history("pods", NS, pod) if v for cs in v["status"].get("containerStatuses", [])
    ]
    assert max(restarts) == 2  # one run and two restarts, then backoffLimit 2 is reached
    assert sim.logs(NS, pod, "main") == "try\ntry\n"  # both runs, one after the other


def test_a_program_that_does_not_exist_ends_with_start_error(sim: KubeSim) -> None:
    submit(sim, job("typo", ["pyhton3", "-c", "pass"], backoffLimit=0))
    assert conditions(finished(sim, "typo"))[-1][0] == "Failed"
    pod = sim.job_pods(NS, "typo")[0]
    term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (128, "StartError")
    assert term["message"].endswith('exec: "pyhton3": executable file not found in $PATH: unknown')


def test_active_deadline_stops_a_sleeping_job(sim: KubeSim, kubeconfig: Path) -> None:
    # (In a command, Kubernetes turns "$$" into "$": the pid is written by python instead.)
    sleeper = "import os; open('/tmp/pid', 'w').write(str(os.getpid())); os.execvp('sleep', ['sleep', '30'])"
    create(kubeconfig, job("slow", ["python3", "-c", sleeper], activeDeadlineSeconds=1))
    sim.wait_until(
        lambda: (
            bool(sim.job_pods(NS, "slow"))
            and sim.pod_path(NS, sim.job_pods(NS, "slow")[0]["metadata"]["name"], "/tmp/pid").is_file()
        ),
        what="the process",
    )
    pod = sim.job_pods(NS, "slow")[0]["metadata"]["name"]
    sim.wait_until(lambda: sim.pod_path(NS, pod, "/tmp/pid").read_text().strip() != "", what="the pid")
    pid = int(sim.pod_path(NS, pod, "/tmp/pid").read_text())
    assert alive(pid)
    assert (
        ok(kubeconfig, "wait", "--for=condition=failed", "job/slow", "--timeout=20s").strip()
        == "job.batch/slow condition met"
    )
    found = sim.get("jobs", NS, "slow")
    assert found is not None
    assert conditions(found) == [
        ("FailureTarget", "DeadlineExceeded", "Job was active longer than specified deadline"),
        ("Failed", "DeadlineExceeded", "Job was active longer than specified deadline"),
    ]
    assert found["status"]["failed"] == 1 and found["status"]["terminating"] == 0
    assert sim.job_pods(NS, "slow") == []  # the running pod was deleted, its process killed
    sim.wait_until(lambda: not alive(pid), timeout=5, what="the sleep killed")
    assert ("Normal", "SuccessfulDelete", f"Deleted pod: {pod}") in reasons(sim, "slow")
    assert reasons(sim, "slow")[-1] == ("Warning", "DeadlineExceeded", "Job was active longer than specified deadline")


# ---- deletion ---------------------------------------------------------------------------------


def test_ttl_after_finished_deletes_the_job_and_its_pods(sim: KubeSim) -> None:
    submit(sim, job("short-lived", ["true"], ttlSecondsAfterFinished=1))
    done = finished(sim, "short-lived")
    pods = [p["metadata"]["name"] for p in sim.job_pods(NS, "short-lived")]
    assert len(pods) == 1
    sim.wait_until(lambda: sim.get("jobs", NS, "short-lived") is None, timeout=10, what="the TTL")
    assert sim.get("pods", NS, pods[0]) is None
    # The TTL controller deletes in the foreground: pods first, then the Job.
    history = sim.history("jobs", NS, "short-lived")
    assert history[-1] is None
    holding = history[-2]
    assert holding is not None and holding["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert holding["metadata"]["deletionTimestamp"] >= done["status"]["completionTime"]


def test_official_client_creates_reads_and_deletes_with_propagation(sim: KubeSim) -> None:
    api_client = sim.api_client()
    batch: Any = client.BatchV1Api(api_client)
    created = batch.create_namespaced_job(
        NS,
        client.V1Job(
            metadata=client.V1ObjectMeta(name="probe"),
            spec=client.V1JobSpec(
                template=client.V1PodTemplateSpec(
                    spec=client.V1PodSpec(
                        restart_policy="Never",
                        containers=[client.V1Container(name="main", image="busybox", command=["sh", "-c", "sleep 30"])],
                    )
                )
            ),
        ),
    )
    assert created.spec.backoff_limit == 6 and created.metadata.labels["job-name"] == "probe"
    sim.wait_for("jobs", NS, "probe", lambda j: j is not None and j["status"].get("ready") == 1)
    status = batch.read_namespaced_job_status("probe", NS).status
    assert (status.active, status.ready, status.succeeded) == (1, 1, None) and status.start_time is not None
    pod = sim.job_pods(NS, "probe")[0]["metadata"]["name"]
    # Foreground: the Job is kept, marked, until its running pod is gone.
    rv = batch.list_namespaced_job(NS).metadata.resource_version
    answer = json.loads(
        batch.delete_namespaced_job("probe", NS, propagation_policy="Foreground", _preload_content=False).data
    )
    assert answer["metadata"]["finalizers"] == ["foregroundDeletion"] and answer["metadata"]["deletionTimestamp"]
    sim.wait_until(lambda: sim.get("jobs", NS, "probe") is None, what="foreground deletion")
    core: Any = client.CoreV1Api(api_client)
    assert removed_at(core.list_namespaced_pod, pod, rv) < removed_at(batch.list_namespaced_job, "probe", rv)
    # No policy: batch/v1 orphans the pods, and the server says so.
    batch.create_namespaced_job(NS, job("kept", ["sh", "-c", "sleep 30"]))
    sim.wait_until(lambda: bool(sim.job_pods(NS, "kept")), what="the pod")
    kept = sim.job_pods(NS, "kept")[0]["metadata"]["name"]
    _, code, headers = batch.delete_namespaced_job_with_http_info("kept", NS)
    assert code == 200
    assert headers["Warning"] == (
        '299 - "child pods are preserved by default when jobs are deleted; set '
        "propagationPolicy=Background to remove them or set propagationPolicy=Orphan "
        'to suppress this warning"'
    )
    sim.wait_until(lambda: sim.get("jobs", NS, "kept") is None, what="orphaning")
    assert [v["metadata"].get("finalizers") for v in sim.history("jobs", NS, "kept") if v][-1] == ["orphan"]
    orphan = sim.get("pods", NS, kept)
    assert orphan is not None and "ownerReferences" not in orphan["metadata"]
    assert orphan["metadata"]["labels"]["job-name"] == "kept"
    # Background: the Job goes at once, then its pods.
    batch.create_namespaced_job(NS, job("gone", ["true"]))
    finished(sim, "gone")
    gone_pod = sim.job_pods(NS, "gone")[0]["metadata"]["name"]
    batch.delete_namespaced_job("gone", NS, body=client.V1DeleteOptions(propagation_policy="Background"))
    assert sim.get("jobs", NS, "gone") is None
    sim.wait_until(lambda: sim.get("pods", NS, gone_pod) is None, what="background collection")
    assert sim.server_errors == []


# ---- scheduling, parallelism, logs ------------------------------------------------------------


def test_gpu_job_waits_for_a_gpu_and_two_types_run_side_by_side(sim: KubeSim, kubeconfig: Path) -> None:
    # The g6.xlarge's only L4 is held: a Job asking for it stays Pending, in the scheduler's words.
    create(kubeconfig, job("on-g6x", ["true"], pod_spec=gpu_spec("g6.xlarge"), container=GPU_LIMITS))
    sim.wait_until(
        lambda: any(
            e["reason"] == "FailedScheduling"
            for p in sim.job_pods(NS, "on-g6x")
            for e in sim.events_for(NS, p["metadata"]["name"])
        ),
        what="FailedScheduling",
    )
    pending = sim.job_pods(NS, "on-g6x")[0]
    assert pending["status"]["phase"] == "Pending" and "nodeName" not in pending["spec"]
    assert pending["status"]["conditions"][0]["message"] == (
        "0/10 nodes are available: 1 Insufficient nvidia.com/gpu, 9 node(s) didn't match Pod's node "
        "affinity/selector. preemption: 0/10 nodes are available: 1 No preemption victims found for "
        "incoming pod, 9 Preemption is not helpful for scheduling."
    )
    assert ok(kubeconfig, "get", "job", "on-g6x", "--no-headers").split()[1:3] == ["Running", "0/1"]
    # One Job per GPU type: both run at once, each on its own node type, until told to finish.
    wait_go = ["sh", "-c", "echo started on $NODE; while [ ! -f /tmp/go ]; do sleep 0.02; done; echo finished"]
    node_env = {"env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}
    for name, itype in (("sweep-g7e", "g7e.8xlarge"), ("sweep-l4", "g6.12xlarge")):
        submit(sim, job(name, wait_go, pod_spec=gpu_spec(itype), container={**GPU_LIMITS, **node_env}))
    both = ("sweep-g7e", "sweep-l4")
    sim.wait_until(
        lambda: all(sim.job_pods(NS, n) and sim.job_pods(NS, n)[0]["status"].get("phase") == "Running" for n in both),
        what="both Jobs running",
    )
    pods = {n: sim.job_pods(NS, n)[0] for n in both}
    nodes = {n: sim.get("nodes", None, p["spec"]["nodeName"]) for n, p in pods.items()}
    assert {
        n: node["metadata"]["labels"]["node.kubernetes.io/instance-type"]  # type: ignore[index]
        for n, node in nodes.items()
    } == {"sweep-g7e": "g7e.8xlarge", "sweep-l4": "g6.12xlarge"}
    assert all(sim.get("jobs", NS, n)["status"]["active"] == 1 for n in both)  # type: ignore[index]
    for pod in pods.values():
        sim.pod_path(NS, pod["metadata"]["name"], "/tmp/go").write_text("")
    for n in both:
        assert finished(sim, n)["status"]["succeeded"] == 1
        assert sim.logs(NS, pods[n]["metadata"]["name"]) == f"started on {pods[n]['spec']['nodeName']}\nfinished\n"
    # The GPUs they held are free again: the waiting Job is still waiting for the g6.xlarge only.
    assert sim.get("jobs", NS, "on-g6x")["status"]["active"] == 1  # type: ignore[index]


def test_logs_follow_streams_until_the_container_exits(sim: KubeSim, kubeconfig: Path) -> None:
    submit(sim, job("talker", ["sh", "-c", "echo first; while [ ! -f /tmp/go ]; do sleep 0.02; done; echo second"]))
    pod = running_pod(sim, "talker")
    exe = shutil.which("kubectl")
    assert exe is not None
    proc = subprocess.Popen(
        [
            exe,
            "--kubeconfig",
            str(kubeconfig),
            "--context",
            CTX,
            "--cache-dir",
            str(kubeconfig.parent / "cache"),
            "logs",
            "-f",
            "--timestamps",
            "job/talker",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"HOME": str(kubeconfig.parent), "PATH": "/usr/bin:/bin"},
    )
    timer = threading.Timer(30, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.split(" ", 1)[1] == "first\n" and first.startswith("20")
        sim.pod_path(NS, pod, "/tmp/go").write_text("")
        rest = proc.stdout.read()  # ends when the container does
        assert [line.split(" ", 1)[1] for line in rest.splitlines()] == ["second"]
        assert proc.wait() == 0
    finally:
        proc.kill()
        proc.wait()
        timer.cancel()
    assert ok(kubeconfig, "logs", pod, "--tail=1") == "second\n"


def test_indexed_job_runs_every_index(sim: KubeSim) -> None:
    submit(
        sim,
        job(
            "indexed",
            ["sh", "-c", "echo index $JOB_COMPLETION_INDEX"],
            completions=3,
            parallelism=2,
            completionMode="Indexed",
        ),
    )
    found = finished(sim, "indexed")
    assert found["status"]["succeeded"] == 3 and found["status"]["completedIndexes"] == "0-2"
    pods = sim.job_pods(NS, "indexed")
    by_index = {p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]: p for p in pods}
    assert sorted(by_index) == ["0", "1", "2"]
    for index, pod in by_index.items():
        assert pod["metadata"]["generateName"] == f"indexed-{index}-"
        assert pod["spec"]["hostname"] == f"indexed-{index}"
        assert sim.logs(NS, pod["metadata"]["name"]) == f"index {index}\n"


def test_init_container_runs_first_and_suspend_holds_the_job(sim: KubeSim) -> None:
    api: Any = client.BatchV1Api(sim.api_client())
    body = job("prepared", ["cat", "/workspace/input"], suspend=True)
    body["spec"]["template"]["spec"]["initContainers"] = [
        {
            "name": "prep",
            "image": "busybox:1.36",
            "command": ["sh", "-c", "echo from the init container > /workspace/input"],
        }
    ]
    api.create_namespaced_job(NS, body)
    held = sim.wait_for("jobs", NS, "prepared", has_condition("Suspended"))
    assert held is not None and sim.job_pods(NS, "prepared") == [] and "startTime" not in held["status"]
    api.patch_namespaced_job("prepared", NS, {"spec": {"suspend": False}})
    found = finished(sim, "prepared")
    first = found["status"]["conditions"][0]
    assert (first["type"], first["status"], first["reason"]) == ("Suspended", "False", "JobResumed")
    pod = sim.job_pods(NS, "prepared")[0]
    assert pod["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert sim.logs(NS, pod["metadata"]["name"]) == "from the init container\n"
