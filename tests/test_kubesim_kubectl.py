"""The real kubectl is the judge of the emulator: what it prints against kubesim."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

import pytest
import yaml
from kubesim import KubeSim, kubectl

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

STG = "stg-online-use1"
G7E = "ip-10-0-14-201.ec2.internal"
LLM_POD = "llmqu-v1-s2-7d9f8c6b5-x2x9q"

POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: nsight-lab
  labels: {owner: seanb, purpose: nsight-learning}
spec:
  activeDeadlineSeconds: 14400
  restartPolicy: Never
  nodeSelector:
    node.kubernetes.io/instance-type: g7e.8xlarge
  tolerations:
  - {key: nvidia.com/gpu, operator: Exists}
  containers:
  - name: lab
    image: registry.example.com/triton-vllm-container:1.0-1
    command: ["sleep", "infinity"]
    resources:
      limits:   {cpu: "4", memory: 24Gi, nvidia.com/gpu: "1"}
      requests: {cpu: "4", memory: 24Gi, nvidia.com/gpu: "1"}
"""


def ok(kubeconfig: Path, *args: str, context: str = STG) -> str:
    result = kubectl(kubeconfig, context, *args)
    assert result.returncode == 0, result.stderr
    return str(result.stdout)


def test_get_nodes_with_instance_type_column(sim: KubeSim, kubeconfig: Path) -> None:
    lines = ok(kubeconfig, "get", "nodes", "-L", "node.kubernetes.io/instance-type").splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INSTANCE-TYPE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert len(rows) == 10
    assert rows[G7E][1] == "Ready" and rows[G7E][2] == "<none>"
    assert rows[G7E][4] == "v1.31.7-eks-473151a" and rows[G7E][5] == "g7e.8xlarge"
    # The server sent one table request, not a list of full objects.
    gets = [r for r in sim.requests if r.path == "/api/v1/nodes"]
    assert len(gets) == 1 and "as=Table" in gets[0].headers["Accept"]


def test_requests_tell_which_context_was_used(sim: KubeSim, kubeconfig: Path) -> None:
    ok(kubeconfig, "get", "nodes", context="dev-ml-use1")
    assert {r.user for r in sim.requests} == {"dev-user"}
    config = yaml.safe_load(kubeconfig.read_text())
    assert config["current-context"] == "prd-online-use1"


def test_count_nodes_per_instance_type(kubeconfig: Path) -> None:
    out = ok(kubeconfig, "get", "nodes", "-L", "node.kubernetes.io/instance-type", "--no-headers")
    counts: dict[str, int] = {}
    for line in out.splitlines():
        counts[line.split()[-1]] = counts.get(line.split()[-1], 0) + 1
    assert counts == {
        "c8i.4xlarge": 2,
        "c8i.8xlarge": 1,
        "c8i.16xlarge": 1,
        "g6.xlarge": 1,
        "g6.12xlarge": 1,
        "g7e.8xlarge": 4,
    }


def test_get_pods_wide(kubeconfig: Path) -> None:
    lines = ok(kubeconfig, "-n", "serving", "get", "pods", "-o", "wide").splitlines()
    assert lines[0].split() == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows[LLM_POD][1:3] == ["2/2", "Running"] and rows[LLM_POD][6] == G7E
    assert rows["rerank-v2-s1-6b8c9d7f4-n5j2r"][1:3] == ["0/2", "Pending"]
    assert rows["model-warmup-29140515-8xk2d"][2] == "Completed"


def test_describe_g7e_node(kubeconfig: Path) -> None:
    out = ok(kubeconfig, "describe", "node", G7E)
    assert "karpenter.k8s.aws/instance-gpu-name=rtx-pro-server-6000" in out
    assert "Taints:             nvidia.com/gpu=true:NoSchedule" in out
    allocatable = out.split("Allocatable:")[1].split("System Info:")[0]
    assert "nvidia.com/gpu:     1" in allocatable
    pods = out.split("Non-terminated Pods:")[1].split("Allocated resources:")[0]
    assert "(4 in total)" in pods and LLM_POD in pods
    # kubectl adds the sidecar's 6 CPUs to the app container's 2, as the scheduler does.
    assert "8 (25%)" in pods.split(LLM_POD)[1].splitlines()[0]


def test_init_container_jsonpath_from_the_tutorial(kubeconfig: Path) -> None:
    names = ok(kubeconfig, "get", "pods", "-o", "name").split()
    pod = next(n for n in names if "llmqu-v1-s2" in n)
    out = ok(
        kubeconfig,
        "get",
        pod,
        "-o",
        'jsonpath={range .spec.initContainers[*]}{.name}{"  "}{.restartPolicy}{"  "}{.resources.limits}{"\\n"}{end}',
    )
    lines = out.splitlines()
    assert lines[0] == 'fetch-model    {"cpu":"1","memory":"2Gi"}'
    assert lines[1] == 'model-runtime  Always  {"cpu":"6","memory":"24Gi","nvidia.com/gpu":"1"}'
    node = ok(kubeconfig, "get", pod, "-o", "jsonpath={.spec.nodeName}")
    assert node.startswith("ip-10-0-") and node.endswith(".ec2.internal")


def test_get_pod_yaml(sim: KubeSim, kubeconfig: Path) -> None:
    doc = yaml.safe_load(ok(kubeconfig, "get", "pod", LLM_POD, "-o", "yaml"))
    stored = sim.get("pods", "serving", LLM_POD)
    assert stored is not None
    assert doc["kind"] == "Pod" and doc["metadata"]["uid"] == stored["metadata"]["uid"]
    assert doc["spec"]["initContainers"][1]["restartPolicy"] == "Always"


def test_create_get_apply_delete(sim: KubeSim, kubeconfig: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD_YAML)
    assert ok(kubeconfig, "create", "-f", str(manifest)).strip() == "pod/nsight-lab created"
    stored = sim.get("pods", "serving", "nsight-lab")
    assert stored is not None and stored["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert ok(kubeconfig, "get", "pod", "nsight-lab", "--no-headers").split()[0] == "nsight-lab"
    manifest.write_text(POD_YAML.replace("owner: seanb", "owner: someone"))
    assert ok(kubeconfig, "apply", "-f", str(manifest)).strip() == "pod/nsight-lab configured"
    assert sim.get("pods", "serving", "nsight-lab")["metadata"]["labels"]["owner"] == "someone"  # type: ignore[index]
    assert ok(kubeconfig, "delete", "pod", "nsight-lab").strip() == 'pod "nsight-lab" deleted'
    assert sim.get("pods", "serving", "nsight-lab") is None
    result = kubectl(kubeconfig, STG, "get", "pod", "nsight-lab")
    assert result.returncode == 1
    assert result.stderr.strip() == 'Error from server (NotFound): pods "nsight-lab" not found'


def test_delete_bound_pod_waits_for_removal(sim: KubeSim, kubeconfig: Path) -> None:
    assert ok(kubeconfig, "delete", "pod", LLM_POD).strip() == f'pod "{LLM_POD}" deleted'
    assert sim.get("pods", "serving", LLM_POD) is None
    history = sim.history("pods", "serving", LLM_POD)
    assert history[-1] is None and history[-2]["metadata"]["deletionTimestamp"]  # type: ignore[index]


def test_get_pods_watch_sees_a_new_pod(sim: KubeSim, kubeconfig: Path) -> None:
    exe = shutil.which("kubectl")
    assert exe is not None
    proc = subprocess.Popen(
        [
            exe,
            "--kubeconfig",
            str(kubeconfig),
            "--context",
            STG,
            "--cache-dir",
            str(kubeconfig.parent / "cache"),
            "-n",
            "ml-lab",
            "get",
            "pods",
            "-w",
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
        header = proc.stdout.readline()
        assert header.split()[:3] == ["NAME", "READY", "STATUS"]
        assert proc.stdout.readline().split()[0] == "gpu-smoke-test"
        sim.wait_until(lambda: sim.open_watches == 1, what="kubectl's watch")
        pod = yaml.safe_load(POD_YAML)
        pod["metadata"]["namespace"] = "ml-lab"
        pod["status"] = {"phase": "Pending"}
        sim.put(pod)
        line = proc.stdout.readline().split()
        assert line[:3] == ["nsight-lab", "0/1", "Pending"]
    finally:
        proc.kill()
        proc.wait()
        timer.cancel()


def test_chunked_list_over_tls(sim: KubeSim, kubeconfig: Path) -> None:
    lines = ok(kubeconfig, "get", "nodes", "--chunk-size=2").splitlines()
    assert len(lines) == 11 and lines[0].split()[0] == "NAME"
    pages = [r for r in sim.requests if r.path == "/api/v1/nodes"]
    assert len(pages) == 5
    assert all(r.query["limit"] == "2" for r in pages)
    assert "continue" not in pages[0].query and all("continue" in r.query for r in pages[1:])


def test_exec_credential_plugin(sim: KubeSim, tmp_path: Path) -> None:
    path = sim.write_kubeconfig(
        tmp_path / "exec-kubeconfig", {STG: {"namespace": "serving"}}, current=None, auth="exec"
    )
    out = ok(path, "get", "nodes", "--chunk-size=2", "--no-headers")
    assert len(out.splitlines()) == 10
    assert sim.exec_log.read_text().count(STG) >= 1
    api_requests = [r for r in sim.requests if r.path.startswith("/api/v1/nodes")]
    assert api_requests and {r.token for r in api_requests} == {sim.exec_token}
    assert ok(path, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}") == "sim-exec-user"


def test_auth_can_i_follows_deny_rules(sim: KubeSim, kubeconfig: Path) -> None:
    sim.deny("create", "pods", subresource="exec", namespace="serving")
    assert kubectl(kubeconfig, STG, "auth", "can-i", "create", "pods", "--subresource=exec").stdout.strip() == "no"
    assert kubectl(kubeconfig, STG, "auth", "can-i", "create", "pods").stdout.strip() == "yes"
    sim.deny("get", "pods", namespace="serving")
    result = kubectl(kubeconfig, STG, "get", "pod", LLM_POD)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f'Error from server (Forbidden): pods "{LLM_POD}" is forbidden: User "stg-user" cannot get '
        'resource "pods" in API group "" in the namespace "serving"'
    )


def test_events_and_namespaces_tables(kubeconfig: Path) -> None:
    events = ok(kubeconfig, "get", "events", "--field-selector", "reason=FailedScheduling").splitlines()
    assert events[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert "pod/rerank-v2-s1-6b8c9d7f4-n5j2r" in events[1] and "Insufficient nvidia.com/gpu" in events[1]
    namespaces = ok(kubeconfig, "get", "namespaces").splitlines()
    assert namespaces[0].split() == ["NAME", "STATUS", "AGE"]
    assert {line.split()[0] for line in namespaces[1:]} >= {"serving", "ml-lab", "kube-system"}


def test_exec_passes_exit_code_and_stdin(kubeconfig: Path) -> None:
    result = kubectl(
        kubeconfig, "dev-ml-use1", "exec", "gpu-smoke-test", "--", "sh", "-c", "echo hi; echo err >&2; exit 3"
    )
    assert (result.returncode, result.stdout) == (3, "hi\n")
    assert result.stderr == "err\ncommand terminated with exit code 3\n"
    result = kubectl(kubeconfig, "dev-ml-use1", "exec", "-i", "gpu-smoke-test", "--", "cat", input="from stdin\n")
    assert (result.returncode, result.stdout) == (0, "from stdin\n")


def test_cp_in_and_out(sim: KubeSim, kubeconfig: Path, tmp_path: Path) -> None:
    local = tmp_path / "lesson1.py"
    local.write_text('print("lesson 1")\n')
    ok(kubeconfig, "cp", str(local), "gpu-smoke-test:/tmp/lesson1.py", context="dev-ml-use1")
    assert sim.pod_path("ml-lab", "gpu-smoke-test", "/tmp/lesson1.py").read_text() == 'print("lesson 1")\n'
    assert (
        ok(kubeconfig, "exec", "gpu-smoke-test", "--", "python3", "/tmp/lesson1.py", context="dev-ml-use1")
        == "lesson 1\n"
    )
    back = tmp_path / "back.py"
    ok(kubeconfig, "cp", "gpu-smoke-test:/tmp/lesson1.py", str(back), context="dev-ml-use1")
    assert back.read_text() == 'print("lesson 1")\n'


def test_apply_lab_pod_runs_or_says_why_not(sim: KubeSim, kubeconfig: Path, tmp_path: Path) -> None:
    for name in ("nsight-lab", "lab-2", "lab-3"):
        manifest = tmp_path / f"{name}.yaml"
        manifest.write_text(POD_YAML.replace("name: nsight-lab", f"name: {name}"))
        ok(kubeconfig, "apply", "-f", str(manifest))
    sim.wait_for("pods", "serving", "nsight-lab", lambda p: p is not None and p["status"]["phase"] == "Running")
    sim.wait_for("pods", "serving", "lab-2", lambda p: p is not None and p["status"]["phase"] == "Running")
    sim.wait_for("pods", "serving", "lab-3", lambda p: p is not None and bool(p["status"].get("conditions")))
    row = ok(kubeconfig, "get", "pod", "nsight-lab", "--no-headers").split()
    assert row[1:3] == ["1/1", "Running"]
    described = ok(kubeconfig, "describe", "pod", "lab-3")
    assert "Warning  FailedScheduling" in described
    assert "0/10 nodes are available: 4 Insufficient nvidia.com/gpu" in described
