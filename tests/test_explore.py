"""explore and the foundation's contracts against a real API server on loopback (kubesim),
with the real kubectl as the independent judge where it is installed."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from clirun import Result, run_cli
from conftest import CONTEXTS, PRD_CONTEXT, STG_CONTEXT
from kubesim import KubeSim, generate_cluster, kubectl, realistic_cluster

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kubeconfig: Path) -> None:
    monkeypatch.setenv("NSIGHTLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("NSIGHTLAB_CONFIG", raising=False)


def nsl(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    return run_cli(capsys, *args)


def _nodes(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    r = nsl(capsys, "explore", "nodes", "--context", STG_CONTEXT, "--json", *extra)
    assert r.code == 0, r
    data: dict[str, object] = json.loads(r.out)
    return data


def test_explore_nodes_counts_gpus_with_the_sidecar_rule(capsys: pytest.CaptureFixture[str]) -> None:
    data = _nodes(capsys)
    nodes = {n["name"]: n for n in data["nodes"]}  # type: ignore[attr-defined]
    assert {"name", "instance_type", "gpu_product", "gpu_allocatable", "gpu_requested", "gpu_free"} <= set(
        next(iter(nodes.values()))
    )
    # the two llmqu pods hold their GPU through the model-runtime native sidecar only
    assert nodes["ip-10-0-14-201.ec2.internal"]["gpu_requested"] == 1
    assert nodes["ip-10-0-52-119.ec2.internal"]["gpu_requested"] == 1
    assert nodes["ip-10-0-14-201.ec2.internal"]["gpu_product"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert nodes["ip-10-0-90-66.ec2.internal"]["gpu_product"] == "NVIDIA L4"
    assert nodes["ip-10-0-12-31.ec2.internal"]["gpu_allocatable"] == 0
    types = {t["instance_type"]: t for t in data["instance_types"]}  # type: ignore[attr-defined]
    assert types["g7e.8xlarge"] == {
        "instance_type": "g7e.8xlarge",
        "nodes": 4,
        "gpu_product": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        "gpu_allocatable": 4,
        "gpu_requested": 2,
        "gpu_free": 2,
    }
    assert data["lab_instance_type"] == "g7e.8xlarge" and data["lab_gpus_free"] == 2
    # the counts per type are sorted like `sort | uniq -c | sort -rn`
    counts = [t["nodes"] for t in data["instance_types"]]  # type: ignore[attr-defined]
    assert counts == sorted(counts, reverse=True)


def test_a_naive_count_would_miss_the_sidecar_gpus(sim: KubeSim) -> None:
    # the rule matters on this very cluster: summing app containers finds no GPU on llmqu pods
    pod = sim.get("pods", "serving", "llmqu-v1-s2-7d9f8c6b5-x2x9q")
    assert pod is not None
    apps = sum(
        int((c.get("resources", {}).get("limits") or {}).get("nvidia.com/gpu", 0)) for c in pod["spec"]["containers"]
    )
    assert apps == 0
    from nsightlab.k8s.pods import pod_gpus

    assert pod_gpus(pod) == 1


def test_human_output_and_lab_line(capsys: pytest.CaptureFixture[str]) -> None:
    r = nsl(capsys, "explore", "nodes", "--context", STG_CONTEXT)
    assert r.code == 0, r
    assert "Nodes per instance type" in r.out
    assert "2 GPUs of the lab's instance type g7e.8xlarge free right now (on 4 nodes)" in r.out
    assert "\x1b[" not in r.out  # plain when not a TTY


@needs_kubectl
def test_kubectl_agrees_on_nodes_and_types(capsys: pytest.CaptureFixture[str], kubeconfig: Path) -> None:
    data = _nodes(capsys)
    proc = kubectl(kubeconfig, STG_CONTEXT, "get", "nodes", "-L", "node.kubernetes.io/instance-type", "--no-headers")
    assert proc.returncode == 0, proc.stderr
    lines = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    kubectl_types = Counter(cols[-1] for cols in lines)
    ours = {t["instance_type"]: t["nodes"] for t in data["instance_types"]}  # type: ignore[attr-defined]
    assert dict(kubectl_types) == ours
    assert {cols[0] for cols in lines} == {n["name"] for n in data["nodes"]}  # type: ignore[attr-defined]


@needs_kubectl
def test_kubectl_agrees_on_pods(capsys: pytest.CaptureFixture[str], kubeconfig: Path) -> None:
    r = nsl(capsys, "explore", "pods", "--context", STG_CONTEXT, "--json")
    assert r.code == 0, r
    ours = {p["name"]: p for p in json.loads(r.out)["pods"]}
    proc = kubectl(kubeconfig, STG_CONTEXT, "-n", "serving", "get", "pods", "-o", "wide", "--no-headers")
    assert proc.returncode == 0, proc.stderr
    for line in proc.stdout.splitlines():
        # columns are separated by 2+ spaces; RESTARTS may read "2 (3h ago)"
        name, ready, status, restarts, _age, _ip, node, *_ = re.split(r"\s{2,}", line.strip())
        p = ours[name]
        assert (p["ready"], p["status"], str(p["restarts"]), p["node"] or "<none>") == (
            ready,
            status,
            restarts.split("(")[0].strip(),
            node,
        ), name
    assert len(ours) == len(proc.stdout.splitlines())


def test_explore_pod_marks_the_sidecar(capsys: pytest.CaptureFixture[str]) -> None:
    r = nsl(capsys, "explore", "pod", "llmqu-v1-s2", "--context", STG_CONTEXT, "--json")
    assert r.code == 0, r
    d = json.loads(r.out)
    inits = {c["name"]: c for c in d["init_containers"]}
    assert inits["model-runtime"]["kind"] == "sidecar" and inits["model-runtime"]["restart_policy"] == "Always"
    assert inits["model-runtime"]["holds_gpu"] and inits["model-runtime"]["limits"]["nvidia.com/gpu"] == "1"
    assert [c["name"] for c in d["containers"]] == ["model-server"] and not d["containers"][0]["holds_gpu"]
    assert d["instance_type"] == "g7e.8xlarge" and d["gpus"] == 1
    assert any("native sidecar" in n for n in d["notes"])


def test_explore_node_and_missing_names(capsys: pytest.CaptureFixture[str]) -> None:
    r = nsl(capsys, "explore", "node", "ip-10-0-90-66.ec2.internal", "--context", STG_CONTEXT, "--json")
    assert r.code == 0, r
    d = json.loads(r.out)
    assert d["gpu_allocatable"] == 4 and d["gpu_requested"] == 3 and d["gpu_free"] == 1
    assert "nvidia.com/gpu=true:NoSchedule" in d["taints"]
    assert d["gpu_labels"]["karpenter.k8s.aws/instance-gpu-name"] == "l4"
    missing = nsl(capsys, "explore", "node", "no-such-node", "--context", STG_CONTEXT)
    assert missing.code == 4 and "no node named 'no-such-node'" in missing.err
    nopod = nsl(capsys, "explore", "pod", "zzz", "--context", STG_CONTEXT)
    assert nopod.code == 4 and "no pod matching 'zzz'" in nopod.err
    # each hint is a command that runs as printed
    assert f"`nsightlab explore nodes --context {STG_CONTEXT}`" in missing.err
    hint = re.search(r"`nsightlab (explore pods [^`]+)`", nopod.err)
    assert hint is not None and nsl(capsys, *hint.group(1).split()).code == 0


def test_read_only_commands_work_on_protected_contexts(capsys: pytest.CaptureFixture[str]) -> None:
    r = nsl(capsys, "explore", "nodes", "--context", PRD_CONTEXT, "--json")
    assert r.code == 0, r


def test_no_context_is_exit_3_and_sends_nothing(capsys: pytest.CaptureFixture[str], sim: KubeSim) -> None:
    sim.clear_requests()
    r = nsl(capsys, "explore", "nodes")
    assert r.code == 3
    assert "current-context" in r.err and "--context" in r.err and STG_CONTEXT in r.err
    assert sim.requests == []


@pytest.mark.parametrize(
    "command", [["create", "--yes"], ["cleanup", "--yes"], ["shell", "--", "true"], ["copy", "x", ":/tmp/"], ["status"]]
)
def test_changes_refused_on_protected_context_before_any_request(
    capsys: pytest.CaptureFixture[str], sim: KubeSim, tmp_path: Path, command: list[str]
) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("lab:\n  image: reg.example.com/lab:1\n")
    sim.clear_requests()
    r = nsl(capsys, "--config", str(cfg), *command[:1], "--context", PRD_CONTEXT, *command[1:])
    if command[0] == "status":  # read-only: allowed
        assert r.code != 3, r
        return
    assert r.code == 3, r
    assert "protected" in r.err and "prd" in r.err
    assert sim.requests == []


def test_unknown_context_lists_known_ones(capsys: pytest.CaptureFixture[str], sim: KubeSim) -> None:
    sim.clear_requests()
    r = nsl(capsys, "explore", "nodes", "--context", "stg-typo")
    assert r.code == 4 and "unknown context 'stg-typo'" in r.err
    assert all(name in r.err for name in CONTEXTS)
    assert sim.requests == []


def test_alias_from_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"clusters:\n  stg:\n    context: {STG_CONTEXT}\n    namespace: ml-lab\n")
    r = nsl(capsys, "--config", str(cfg), "explore", "pods", "--context", "stg", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["namespace"] == "ml-lab"
    assert [p["name"] for p in json.loads(r.out)["pods"]] == ["gpu-smoke-test"]


def test_paged_lists_and_no_per_node_requests(capsys: pytest.CaptureFixture[str], sim: KubeSim) -> None:
    sim.reset(generate_cluster(nodes=1200, pods=1300, seed=3))
    sim.clear_requests()
    data = _nodes(capsys)
    assert len(data["nodes"]) == 1200  # type: ignore[arg-type]
    paths = Counter(r.path for r in sim.requests)
    assert paths == {"/api/v1/nodes": 3, "/api/v1/pods": 3}
    assert all(r.query.get("limit") == "500" for r in sim.requests)
    assert sum("continue" in r.query for r in sim.requests) == 4


def test_exec_credential_plugin_and_ca(
    capsys: pytest.CaptureFixture[str], sim: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kc = sim.write_kubeconfig(tmp_path / "exec-kc", {STG_CONTEXT: {"namespace": "serving"}}, auth="exec")
    sim.clear_requests()
    r = nsl(capsys, "explore", "pods", "--context", STG_CONTEXT, "--kubeconfig", str(kc), "--json")
    assert r.code == 0, r
    assert sim.exec_log.read_text().strip()  # the plugin really ran
    assert {q.token for q in sim.requests} == {sim.exec_token}
    assert sim.url.startswith("https://")


def test_kubeconfig_list_merged_from_env(
    capsys: pytest.CaptureFixture[str], sim: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = sim.write_kubeconfig(tmp_path / "a", {"team-a-stg": {"namespace": "serving"}})
    b = sim.write_kubeconfig(tmp_path / "b", {"team-b-stg": {"namespace": "ml-lab"}})
    monkeypatch.setenv("KUBECONFIG", f"{a}:{b}")
    r = nsl(capsys, "explore", "pods", "--context", "team-b-stg", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["namespace"] == "ml-lab"


def test_wrong_token_is_401_exit_4(capsys: pytest.CaptureFixture[str], sim: KubeSim, tmp_path: Path) -> None:
    kc = sim.write_kubeconfig(tmp_path / "bad", {STG_CONTEXT: {"namespace": "serving", "token": "good-token"}})
    kc.write_text(kc.read_text().replace("good-token", "expired-token"))  # a token the server does not know
    r = nsl(capsys, "explore", "nodes", "--context", STG_CONTEXT, "--kubeconfig", str(kc))
    assert r.code == 4 and "401 Unauthorized" in r.err and r.err.count("\n") == 1


def test_forbidden_says_which_verb_and_resource(capsys: pytest.CaptureFixture[str], sim: KubeSim) -> None:
    sim.deny("list", "nodes")
    r = nsl(capsys, "explore", "nodes", "--context", STG_CONTEXT)
    assert (r.code, r.err) == (
        4,
        (
            f"error: cannot list nodes: your account may not read nodes on context {STG_CONTEXT}. Ask for a "
            "ClusterRole "
            f"with get/list on nodes, or run `nsightlab explore pods --context {STG_CONTEXT} -n serving`.\n"
        ),
    )
    # a refusal in another namespace keeps the API server's own words
    sim.deny("list", "pods", namespace="ml-lab")
    r = nsl(capsys, "explore", "pods", "--context", STG_CONTEXT, "-n", "ml-lab")
    assert (
        r.code == 4
        and "forbidden: cannot list pods in namespace ml-lab" in r.err
        and 'cannot list resource "pods"' in r.err
    )


def test_namespace_not_found(capsys: pytest.CaptureFixture[str]) -> None:
    r = nsl(capsys, "explore", "pods", "--context", STG_CONTEXT, "-n", "nope")
    assert r.code == 4 and "namespace 'nope' does not exist" in r.err


def test_unreachable_server_fails_fast(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = tmp_path / "down"
    kc.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: stg-down, context: {cluster: c, user: u}}]\n"
    )
    start = time.monotonic()
    r = nsl(capsys, "explore", "nodes", "--context", "stg-down", "--kubeconfig", str(kc))
    assert r.code == 4 and "cannot reach the API server" in r.err and "connection refused" in r.err
    assert time.monotonic() - start < 10  # a bound, not a benchmark: it must never hang


def test_malformed_kubeconfig_is_exit_4(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.write_text("clusters: [unclosed\n")
    r = nsl(capsys, "explore", "nodes", "--context", STG_CONTEXT, "--kubeconfig", str(bad))
    assert r.code == 4 and "not valid YAML" in r.err


def test_traceback_flag_shows_the_traceback_of_a_bug(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from nsightlab.cluster import inventory_reads as explore

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(explore, "explore_nodes", broken)  # inject a bug: nothing real produces one
    plain = nsl(capsys, "explore", "nodes", "--context", STG_CONTEXT)
    assert plain.code == 1 and "unexpected RuntimeError: boom" in plain.err and "Traceback" not in plain.err
    verbose = nsl(capsys, "--traceback", "explore", "nodes", "--context", STG_CONTEXT)
    assert verbose.code == 1 and "Traceback (most recent call last)" in verbose.err


def test_realistic_cluster_is_what_the_tutorial_describes() -> None:
    objs = realistic_cluster()
    types = Counter(o["metadata"]["labels"]["node.kubernetes.io/instance-type"] for o in objs if o["kind"] == "Node")
    assert (
        any(t.startswith("c8i.") for t in types)
        and any(t.startswith("g6.") for t in types)
        and types["g7e.8xlarge"] >= 2
    )


def test_skipping_pages_without_gpu_pods_changes_nothing(capsys: pytest.CaptureFixture[str], sim: KubeSim) -> None:
    from nsightlab.k8s.inventory import build_nodes

    objs = generate_cluster(nodes=700, pods=2600, seed=5)
    sim.reset(objs)
    data = _nodes(capsys)
    nodes = [o for o in objs if o["kind"] == "Node"]
    pods = [o for o in objs if o["kind"] == "Pod" and o["status"].get("phase") not in ("Succeeded", "Failed")]
    full = build_nodes(
        nodes, pods, context=STG_CONTEXT, server=None, lab_instance_type="g7e.8xlarge"
    )  # decodes every pod
    assert {n["name"]: n["gpu_requested"] for n in data["nodes"]} == {n.name: n.gpu_requested for n in full.nodes}  # type: ignore[attr-defined]
    assert sum(n.gpu_requested for n in full.nodes) > 0  # the generated cluster does hold GPUs


# ---------------------------------------------------------------------------- the console script


def _script(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nsightlab", *args], capture_output=True, text=True, timeout=60, **kw)  # type: ignore[call-overload,no-any-return]


def test_console_script_output_and_exit_codes_survive_the_quick_exit(capsys: pytest.CaptureFixture[str]) -> None:
    # `nsightlab` and `python -m nsightlab` leave without the interpreter's teardown:
    # everything printed must still arrive, and the exit code must be the command's
    inproc = nsl(capsys, "explore", "nodes", "--context", STG_CONTEXT)
    done = _script("explore", "nodes", "--context", STG_CONTEXT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == inproc.out and done.stdout.rstrip().endswith(".")
    as_json = _script("explore", "nodes", "--context", STG_CONTEXT, "--json")
    assert json.loads(as_json.stdout)["lab_gpus_free"] == 2
    refused = _script("explore", "nodes")
    assert refused.returncode == 3 and refused.stdout == ""
    assert refused.stderr.startswith("error: ") and "Traceback" not in refused.stderr


def test_console_script_with_a_reader_that_stops_early() -> None:
    # `nsightlab explore nodes | head -1`: the pipe closes under us; no traceback
    proc = subprocess.Popen(
        [sys.executable, "-m", "nsightlab", "explore", "pods", "--context", STG_CONTEXT, "-A"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) in (0, 1)
    assert "Traceback" not in err and "Exception ignored" not in err


def test_a_node_without_pods_says_so(capsys: pytest.CaptureFixture[str], sim: KubeSim) -> None:
    import copy

    node = copy.deepcopy(
        next(n for n in sim.list("nodes", None) if n["metadata"]["name"] == "ip-10-0-90-66.ec2.internal")
    )
    node["metadata"] = {"name": "ip-10-0-99-1.ec2.internal", "labels": node["metadata"].get("labels", {})}
    sim.put(node)  # a new node: nothing runs there yet
    r = nsl(capsys, "explore", "node", "ip-10-0-99-1.ec2.internal", "--context", STG_CONTEXT)
    assert r.code == 0, r
    assert "no pods on ip-10-0-99-1.ec2.internal" in r.out and "Pods on" not in r.out
    assert "NAMESPACE" not in r.out  # no header over no rows
    busy = nsl(capsys, "explore", "node", "ip-10-0-90-66.ec2.internal", "--context", STG_CONTEXT)
    assert "Pods on ip-10-0-90-66.ec2.internal" in busy.out and "no pods on" not in busy.out
