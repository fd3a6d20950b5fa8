"""`nsightlab fleet` end to end against the API server emulator, whose Jobs run for real:
the sweep script runs in each Job's sandbox with this machine's CPU torch (hence
`--device cpu`, and tiny sizes). kubectl judges the dry run; RBAC, Ctrl-C (a real SIGINT)
and decoys are real too. Outliers and the decode economics are tested on recorded rows
in test_fleet_analysis.py; here the mechanics."""

from __future__ import annotations

import copy
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from clirun import Result, run_cli, sigint_default
from conftest import STG_CONTEXT
from kubesim import KubeSim, kubectl, realistic_cluster

from nsightlab.cluster.fleetjobs import job_names
from nsightlab.cluster.permissions import FLEET_PERMISSIONS, rules

ROOT = Path(__file__).resolve().parents[1]
NS = "serving"
OWNER = "ana"
IMAGE = "registry.example.com/triton-vllm-container:1.0-1"
# Each Job imports torch and times two tiny sizes: start-up dominated, a second or two.
TINY = ["--device", "cpu", "--sizes", "10,12", "--iters", "2", "--warmup", "0"]
ENTRY_KEYS = [
    "instance_type",
    "node",
    "gpu_product",
    "status",
    "reason",
    "run_id",
    "launch_floor_us",
    "cache_peak_tbps",
    "dram_tbps",
    "dram_pct_of_spec",
    "outlier",
]
TYPE_KEYS = [
    "instance_type",
    "gpu_product",
    "measured",
    "launch_floor_us",
    "cache_peak_tbps",
    "dram_tbps",
    "dram_pct_of_spec",
    "decode",
]
DECODE_KEYS = ["weights_gb", "fits", "ms_per_token", "tokens_per_s", "usd_per_hour", "usd_per_million_tokens"]
RTX = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kubeconfig: Path) -> Path:
    h = tmp_path / "home"
    config = tmp_path / "config.yaml"
    config.write_text(
        f"clusters:\n  stg:\n    context: {STG_CONTEXT}\n    namespace: {NS}\nlab:\n  image: {IMAGE}\n  owner: "
        f"{OWNER}\n"
    )
    monkeypatch.setenv("NSIGHTLAB_HOME", str(h))
    monkeypatch.setenv("NSIGHTLAB_CONFIG", str(config))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("COLUMNS", "200")
    return h


def nsl(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    return run_cli(capsys, *args)


def fleet_objects(sim: KubeSim) -> list[str]:
    jobs = [f"job/{j['metadata']['name']}" for j in sim.list("jobs", NS)]
    cms = [
        f"configmap/{c['metadata']['name']}"
        for c in sim.list("configmaps", NS)
        if c["metadata"]["name"].startswith("nsightlab-fleet-")
    ]
    return jobs + cms


def instance_type_of(sim: KubeSim, node: str) -> str:
    found = sim.get("nodes", None, node)
    assert found is not None
    return str(found["metadata"]["labels"]["node.kubernetes.io/instance-type"])


def gpu_nodes(objs: list[dict[str, Any]], itype: str) -> list[dict[str, Any]]:
    return [
        o
        for o in objs
        if o["kind"] == "Node" and o["metadata"]["labels"].get("node.kubernetes.io/instance-type") == itype
    ]


def more_g7e_nodes(total: int) -> list[dict[str, Any]]:
    """The realistic cluster with `total` g7e.8xlarge nodes, every GPU of them free."""
    objs = realistic_cluster()
    g7e = gpu_nodes(objs, "g7e.8xlarge")
    names = {n["metadata"]["name"] for n in g7e}
    objs = [o for o in objs if not (o["kind"] == "Pod" and o.get("spec", {}).get("nodeName") in names)]
    for i in range(total - len(g7e)):
        node = copy.deepcopy(g7e[0])
        name = f"ip-10-0-200-{i + 1}.ec2.internal"
        node["metadata"]["name"] = name
        node["metadata"]["uid"] = f"00000000-0000-4000-8000-{i:012d}"
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        objs.append(node)
    return objs


# ---------------------------------------------------------------------------- measuring


@pytest.mark.slow
def test_two_types_measured_while_a_third_has_no_free_gpu(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, tmp_path: Path
) -> None:
    r = nsl(
        capsys,
        "fleet",
        "sweep",
        "--context",
        "stg",
        "--types",
        "g7e.8xlarge,g6.12xlarge,g6.xlarge",
        *TINY,
        "--schedule-timeout",
        "1",
        "--weights-gb",
        "0.5",
        "--price",
        "g7e.8xlarge=3.14",
        "--json",
    )
    assert r.code == 0, r
    data = json.loads(r.out)
    assert list(data) == ["kind", "fleet_id", "context", "namespace", "dtype", "entries", "types", "notes"]
    fleet_id = data["fleet_id"]
    assert (data["kind"], data["context"], data["namespace"], data["dtype"]) == ("fleet", STG_CONTEXT, NS, "float32")
    assert all(list(e) == ENTRY_KEYS for e in data["entries"]) and all(list(t) == TYPE_KEYS for t in data["types"])
    by = {e["instance_type"]: e for e in data["entries"]}
    assert [e["status"] for e in data["entries"]] == ["measured", "measured", "not-scheduled"]
    for itype in ("g7e.8xlarge", "g6.12xlarge"):  # each measured on a node of its own type
        assert instance_type_of(sim, by[itype]["node"]) == itype
        assert by[itype]["run_id"]
        assert by[itype]["dram_pct_of_spec"] is None  # a CPU: no GPU spec to compare with
    assert by["g7e.8xlarge"]["gpu_product"] == RTX and by["g6.12xlarge"]["gpu_product"] == "NVIDIA L4"
    unscheduled = by["g6.xlarge"]
    assert (
        unscheduled["reason"].startswith("0/10 nodes are available: ")
        and "Insufficient nvidia.com/gpu" in unscheduled["reason"]
    )
    assert unscheduled["run_id"] is None and unscheduled["node"] is None
    assert f"g6.xlarge: not scheduled within 1.00 s ({unscheduled['reason']}); its Job was deleted" in data["notes"]
    g7e = data["types"][0]
    assert list(g7e["decode"]) == DECODE_KEYS
    # no DRAM plateau at these sizes: no floor, but the fit (96 GiB from the spec table) and the price
    assert g7e["decode"] == {
        "weights_gb": 0.5,
        "fits": True,
        "ms_per_token": None,
        "tokens_per_s": None,
        "usd_per_hour": 3.14,
        "usd_per_million_tokens": None,
    }
    assert "g7e.8xlarge: no DRAM plateau was measured, so no decode floor (sweep larger sizes)" in data["notes"]
    # the before-change line, and the live lines (no terminal: plain)
    assert (
        f"start fleet {fleet_id}: 3 Jobs (one per instance type, 1 GPU each, at most 4 at once): context stg "
        f"({STG_CONTEXT}), server https://127.0.0.1:" in r.err
    )
    assert f"  g7e.8xlarge: Running on {by['g7e.8xlarge']['node']}" in r.err
    assert "  g6.xlarge: not-scheduled (0/10 nodes are available: " in r.err
    # the Job as the server stored it: the lab's image and tolerations, one GPU, one try, pinned to its type
    job = sim.history("jobs", NS, f"nsl-fleet-{fleet_id}-g7e-8xlarge")[0]
    assert job is not None
    pod = job["spec"]["template"]["spec"]
    assert job["spec"]["backoffLimit"] == 0 and job["metadata"]["labels"]["nsightlab/fleet"] == fleet_id
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "g7e.8xlarge"}
    assert (
        pod["containers"][0]["image"] == IMAGE and pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    )
    assert {"key": "nvidia.com/gpu", "operator": "Exists"} in pod["tolerations"]
    # all in: the Jobs and the ConfigMap are gone, and only this context's user spoke
    assert fleet_objects(sim) == []
    assert {q.user for q in sim.requests} == {"stg-user"}
    # stored: a sweep run per measured type (with the fleet's facts) and the fleet run
    runs = {x["id"]: x for x in json.loads(nsl(capsys, "runs", "--json").out)["runs"]}
    assert runs[fleet_id]["kind"] == "fleet" and runs[fleet_id]["complete"]
    for itype in ("g7e.8xlarge", "g6.12xlarge"):
        line = runs[by[itype]["run_id"]]
        assert (line["kind"], line["context"], line["instance_type"], line["node"], line["gpu"]) == (
            "sweep",
            STG_CONTEXT,
            itype,
            by[itype]["node"],
            by[itype]["gpu_product"],
        )
        meta = json.loads(nsl(capsys, "runs", "show", line["id"], "--json").out)["meta"]
        assert meta["fleet_id"] == fleet_id
        # the entry's figure is its stored sweep's (2^10 and 2^12 elements on a busy CPU may
        # or may not show a cache regime: the figure, when there is one, is a rate)
        swept = json.loads(nsl(capsys, "analyze", line["id"], "--json").out)["summary"]
        assert by[itype]["cache_peak_tbps"] == swept["cache_peak_tbps"]
        assert by[itype]["cache_peak_tbps"] is None or by[itype]["cache_peak_tbps"] > 0
    shown = nsl(capsys, "runs", "show", fleet_id)
    assert shown.code == 0 and f"Fleet {fleet_id}: float32 bandwidth sweep on 3 instance types" in shown.out
    # the report draws the types' curves on one figure, with the per-type table
    pytest.importorskip("matplotlib")
    rep = nsl(capsys, "report", fleet_id, "--out", str(tmp_path / "rep"), "--json")
    assert rep.code == 0, rep
    files = json.loads(rep.out)
    assert [f["key"] for f in files["figures"]] == [f"fleet-{fleet_id}"] and Path(
        files["figures"][0]["png"]
    ).stat().st_size > 10_000
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"## Fleet {fleet_id}" in md and "| g7e.8xlarge | NVIDIA RTX PRO 6000 Blackwell Server Edition | 1 |" in md


@pytest.mark.slow
def test_every_node_runs_one_job_per_node_pinned_at_most_max_parallel_at_once(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim
) -> None:
    sim.reset(more_g7e_nodes(5))
    nodes = sorted(n["metadata"]["name"] for n in gpu_nodes(sim.list("nodes"), "g7e.8xlarge"))
    assert len(nodes) == 5
    r = nsl(
        capsys,
        "fleet",
        "sweep",
        "--context",
        "stg",
        "--every-node",
        "--types",
        "g7e.8xlarge",
        *TINY,
        "--max-parallel",
        "3",
        "--json",
    )
    assert r.code == 0, r
    data = json.loads(r.out)
    assert [(e["node"], e["status"]) for e in data["entries"]] == [(n, "measured") for n in nodes]
    assert data["types"][0]["measured"] == 5
    # without a DRAM plateau there is nothing to compare: no outlier verdict either way
    assert [e["outlier"] for e in data["entries"]] == [None] * 5
    assert (
        "no node reached a DRAM plateau, so none could be compared with its siblings (sweep larger sizes)"
        in data["notes"]
    )
    # each Job was pinned to its node, and at most three were alive at once (by the server's resourceVersions)
    spans = []
    for name, node in zip(job_names(data["fleet_id"], nodes), nodes, strict=True):
        versions = [v for v in sim.history("jobs", NS, name) if v is not None]
        assert versions[0]["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": node}
        done = next(v for v in versions if any(c["type"] == "Complete" for c in v["status"].get("conditions") or []))
        spans.append((int(versions[0]["metadata"]["resourceVersion"]), int(done["metadata"]["resourceVersion"])))
    assert max(sum(1 for a, b in spans if a <= t <= b) for t, _ in spans) == 3
    assert fleet_objects(sim) == []


@pytest.mark.slow
def test_a_job_whose_torch_cannot_see_the_gpu_fails_with_the_scripts_reason(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim
) -> None:
    # without --device cpu the Job insists on its GPU, and this machine's torch is a CPU build
    r = nsl(
        capsys,
        "fleet",
        "sweep",
        "--context",
        "stg",
        "--types",
        "g7e.8xlarge",
        "--sizes",
        "10,12",
        "--iters",
        "2",
        "--warmup",
        "0",
        "--keep",
    )
    assert r.code == 6, r
    fleet_id = r.out.split()[1].rstrip(":")
    node = next(
        line.split(" on ")[1].split()[0] for line in r.err.splitlines() if line.startswith("  g7e.8xlarge: Running on ")
    )
    assert (
        r.err.splitlines()[-1]
        == f"error: 1 Job of fleet {fleet_id} failed or timed out (g7e.8xlarge on {node}). The reasons and the "
        "logs' last lines are above."
    )
    assert "- g7e.8xlarge: failed: exit 3: sweep.py: torch cannot see the GPU: CPU-only build" in r.out
    assert "    | sweep.py: torch cannot see the GPU: CPU-only build" in r.out  # the log's last lines
    kinds = [x["kind"] for x in json.loads(nsl(capsys, "runs", "--json").out)["runs"]]
    assert kinds == ["fleet"]  # nothing measured, nothing stored as a sweep
    # --keep left the Job and the ConfigMap; cleanup --fleet (where the fleet ran) takes them, the pod after the Job
    job = f"nsl-fleet-{fleet_id}-g7e-8xlarge"
    assert fleet_objects(sim) == [f"job/{job}", f"configmap/nsightlab-fleet-{fleet_id}"]
    gone = nsl(capsys, "cleanup", "--fleet", fleet_id, "--yes")
    assert gone.code == 0, gone
    assert gone.out.splitlines() == [
        f"deleted fleet {fleet_id}",
        f"deleted job {job}",
        f"deleted configmap nsightlab-fleet-{fleet_id}",
    ]
    assert fleet_objects(sim) == []
    sim.wait_until(
        lambda: not [p for p in sim.list("pods", NS) if p["metadata"]["name"].startswith(job)],
        what="the Job's pod collected",
    )


def test_a_job_past_its_deadline_is_a_timeout_seen_through_broken_watches(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim
) -> None:
    # activeDeadlineSeconds counts from the Job's start: Pending for a GPU counts too. While
    # the Job waits, the server forgets its watch history and closes every watch: the
    # fleet must watch again (a 410 makes it list again) to see the Job fail.
    def break_watches() -> None:
        sim.wait_until(
            lambda: any(p["metadata"]["name"].startswith("nsl-fleet-") for p in sim.list("pods", NS)),
            timeout=30,
            what="the Job's pod",
        )
        sim.faults.compact()
        sim.faults.close_watches()

    breaker = threading.Thread(target=break_watches, daemon=True)
    breaker.start()
    r = nsl(
        capsys, "fleet", "sweep", "--context", "stg", "--types", "g6.xlarge", *TINY, "--job-deadline", "3", "--json"
    )
    breaker.join(timeout=30)
    assert r.code == 6, r
    [entry] = json.loads(r.out)["entries"]
    assert (entry["status"], entry["reason"]) == (
        "timeout",
        "not done within --job-deadline 3 s (Job was active longer than specified deadline)",
    )
    watched = [
        q
        for q in sim.requests
        if q.method == "GET" and q.path.endswith("/jobs") and "nsightlab/owner" in q.query.get("labelSelector", "")
    ]
    lists = [q for q in watched if "watch" not in q.query]
    assert len(lists) == 2 and len(watched) - len(lists) >= 2  # listed, watched; 410: listed again, watched again
    assert fleet_objects(sim) == []


def test_no_job_scheduled_anywhere_is_exit_5(capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim) -> None:
    r = nsl(capsys, "fleet", "sweep", "--context", "stg", "--types", "g6.xlarge", *TINY, "--schedule-timeout", "0.5")
    assert r.code == 5, r
    assert (
        r.err.splitlines()[-1].startswith("error: no Job of fleet ")
        and ": no free GPU of g6.xlarge. See the free GPUs with `nsightlab explore nodes --context stg-online-use1`"
        in r.err
    )
    assert fleet_objects(sim) == []


# ---------------------------------------------------------------------------- safety, dry run, permissions


def test_protected_context_is_refused_before_any_request(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim
) -> None:
    for args in (
        ["fleet", "sweep", "--types", "g7e.8xlarge"],
        ["fleet", "collect", "abc123"],
        ["cleanup", "--fleet", "abc123", "--yes"],
    ):
        r = nsl(capsys, *args, "--context", "prd-online-use1")
        assert r.code == 3, r
        assert r.err.startswith("error: refusing to ") and "on protected context 'prd-online-use1'" in r.err
    assert sim.requests == []


def test_a_placeholder_in_the_config_reaches_no_job(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "placeholder.yaml"
    config.write_text(f"lab:\n  image: CHANGE-ME.registry.example.com/triton-vllm-container:1.0-1\n  owner: {OWNER}\n")
    monkeypatch.setenv("NSIGHTLAB_CONFIG", str(config))
    for extra in ([], ["--dry-run"]):
        r = nsl(capsys, "fleet", "sweep", "--context", STG_CONTEXT, "--types", "g7e.8xlarge", *extra)
        assert r.code == 2, r
        assert r.err.startswith(f"error: the config still holds placeholder (CHANGE-ME): lab.image ({config}:2)")
    assert sim.requests == []


@needs_kubectl
def test_dry_run_yaml_is_what_kubectl_would_create_and_creates_nothing(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, kubeconfig: Path
) -> None:
    r = nsl(capsys, "fleet", "sweep", "--context", "stg", "--types", "g7e.8xlarge,g6.12xlarge", *TINY, "--dry-run")
    assert r.code == 0, r
    assert sim.requests == []  # the types were named: nothing to read
    docs = list(yaml.safe_load_all(r.out))
    assert [d["kind"] for d in docs] == ["Job", "Job", "ConfigMap"]  # what a reader looks for first
    assert sorted(docs[2]["data"]) == ["fleetrun.py", "labcommon.py", "plan.json", "sweep.py"]
    fleet_id = docs[2]["metadata"]["labels"]["nsightlab/fleet"]
    lines = r.out.splitlines()
    assert lines.index("kind: Job") < 5, lines[:5]
    # the scripts read as the files they are (literal blocks), and are those files exactly
    assert "  sweep.py: |" in lines and "  labcommon.py: |" in lines
    assert docs[2]["data"]["sweep.py"] == (ROOT / "lab_scripts" / "sweep.py").read_text()
    judged = kubectl(kubeconfig, STG_CONTEXT, "create", "--dry-run=client", "-f", "-", "-o", "name", input=r.out)
    assert judged.returncode == 0, judged.stderr
    assert judged.stdout.split() == [
        f"job.batch/nsl-fleet-{fleet_id}-g7e-8xlarge",
        f"job.batch/nsl-fleet-{fleet_id}-g6-12xlarge",
        f"configmap/nsightlab-fleet-{fleet_id}",
    ]
    # an id that Go's YAML reads as a number (12e456: an exponent without a point) is
    # written quoted: kubectl takes its labels as the strings they are
    from nsightlab.cluster.fleetjobs import manifests_yaml

    odd = manifests_yaml(yaml.safe_load_all(r.out.replace(fleet_id, "12e456")))
    assert "nsightlab/fleet: '12e456'" in odd
    judged = kubectl(kubeconfig, STG_CONTEXT, "create", "--dry-run=client", "-f", "-", "-o", "name", input=odd)
    assert judged.returncode == 0, judged.stderr
    every = nsl(capsys, "fleet", "sweep", "--context", "stg", "--every-node", "--dry-run")
    assert every.code == 0, every
    jobs = [d for d in yaml.safe_load_all(every.out) if d["kind"] == "Job"]
    assert sorted(j["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/hostname"] for j in jobs) == sorted(
        n["metadata"]["name"] for n in sim.list("nodes") if "nvidia.com/gpu" in n["status"]["capacity"]
    )
    judged = kubectl(kubeconfig, STG_CONTEXT, "create", "--dry-run=client", "-f", "-", input=every.out)
    assert judged.returncode == 0, judged.stderr
    assert {q.method for q in sim.requests} == {"GET"} and fleet_objects(sim) == []


def test_every_node_above_16_nodes_needs_yes(capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim) -> None:
    sim.reset(more_g7e_nodes(17))
    r = nsl(capsys, "fleet", "sweep", "--context", "stg", "--every-node", "--types", "g7e.8xlarge", *TINY)
    assert r.code == 2, r
    assert r.err == (
        "error: --every-node would start 17 Jobs (one per GPU node, each holding a GPU while it runs); refusing "
        "without "
        "confirmation. Pass --yes to start them, or measure one per type without --every-node.\n"
    )
    assert {q.method for q in sim.requests} == {"GET"} and fleet_objects(sim) == []


def test_a_namespace_scoped_user_runs_it_with_types(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim.enable_rbac()
    token = sim.add_user("alice")
    sim.load(
        [  # a Role granting exactly FLEET_PERMISSIONS, in the fleet's namespace only
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "fleet", "namespace": NS},
                "rules": [
                    {"apiGroups": [r.group], "resources": [r.resource], "verbs": list(r.verbs)}
                    for r in rules(FLEET_PERMISSIONS)
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "fleet", "namespace": NS},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "fleet"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
            },
        ]
    )
    monkeypatch.setenv(
        "KUBECONFIG",
        str(sim.write_kubeconfig(tmp_path / "alice", {"alice": {"namespace": NS, "token": token, "user": "alice"}})),
    )
    refused = nsl(capsys, "fleet", "sweep", "--context", "alice", *TINY, "--yes")
    assert refused.code == 4, refused
    assert refused.err.startswith(
        "error: cannot list the nodes to find the GPU instance types (forbidden: cannot list nodes (nodes is "
        'forbidden: User "alice" cannot list resource "nodes"'
    )
    hint = refused.err.split("`")[1]
    assert (
        hint == "nsightlab fleet sweep --context alice --namespace serving --types g7e.8xlarge --sizes 10,12 --iters 2 "
        "--warmup 0 --device cpu"
    )
    sim.clear_requests()
    r = nsl(capsys, *shlex.split(hint)[1:], "--yes", "--json")  # the hint, as printed
    assert r.code == 0, r
    assert [(e["instance_type"], e["status"]) for e in json.loads(r.out)["entries"]] == [("g7e.8xlarge", "measured")]
    assert [q for q in sim.requests if q.status == 403] == []
    assert {q.user for q in sim.requests} == {"alice"}
    assert nsl(capsys, "fleet", "status", "--context", "alice", "--json").code == 0


# ---------------------------------------------------------------------------- Ctrl-C, status, collect, cleanup


@pytest.mark.slow
def test_ctrl_c_leaves_the_jobs_and_collect_finishes_them(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim
) -> None:
    # One Job at a time: the g6.xlarge waits for a GPU; the g7e's Job is not created yet.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nsightlab",
            "fleet",
            "sweep",
            "--context",
            "stg",
            "--types",
            "g6.xlarge,g7e.8xlarge",
            "--max-parallel",
            "1",
            *TINY,
            "--schedule-timeout",
            "300",
            "--yes",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=dict(os.environ),
        preexec_fn=sigint_default,
    )
    assert proc.stderr is not None
    seen = ""
    deadline = time.monotonic() + 60
    while "g6.xlarge: Pending (" not in seen and time.monotonic() < deadline and proc.poll() is None:
        seen += proc.stderr.readline()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, seen + err
    fleet_id = seen.split("start fleet ")[1].split(":")[0]
    assert err.strip().splitlines()[-1] == (
        f"error: interrupted: the Jobs of fleet {fleet_id} are left running (1 of 2 created). Collect the fleet with "
        f"`nsightlab fleet collect {fleet_id} --context stg --namespace serving` (or remove it with "
        f"`nsightlab cleanup --fleet {fleet_id} --context stg --namespace serving`)."
    )
    assert fleet_objects(sim) == [f"job/nsl-fleet-{fleet_id}-g6-xlarge", f"configmap/nsightlab-fleet-{fleet_id}"]
    status = json.loads(nsl(capsys, "fleet", "status", "--context", "stg", "--json").out)
    assert [(f["fleet_id"], f["planned"], f["jobs"]) for f in status["fleets"]] == [
        (fleet_id, 2, {"waiting": 1, "pending": 1, "running": 0, "succeeded": 0, "failed": 0})
    ]
    # collect: where the fleet was started (said so), the missing Job created, everything removed at the end
    r = nsl(capsys, "fleet", "collect", fleet_id, "--schedule-timeout", "0.5", "--yes", "--json")
    assert r.code == 0, r
    assert f"using the context of fleet {fleet_id} as it was started here: {STG_CONTEXT}, namespace serving" in r.err
    data = json.loads(r.out)
    assert [(e["instance_type"], e["status"]) for e in data["entries"]] == [
        ("g6.xlarge", "not-scheduled"),
        ("g7e.8xlarge", "measured"),
    ]
    assert fleet_objects(sim) == []
    assert json.loads(nsl(capsys, "fleet", "status", "--context", "stg", "--json").out)["fleets"] == []


def _job(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": ["true"]}],
                }
            },
        },
    }


def _configmap(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "data": {},
    }


def test_cleanup_of_a_fleet_touches_only_objects_with_both_labels(
    capsys: pytest.CaptureFixture[str], home: Path, sim: KubeSim
) -> None:
    ours = {"app.kubernetes.io/managed-by": "nsightlab", "nsightlab/owner": OWNER, "nsightlab/fleet": "f00001"}
    sim.load(
        [
            _job("nsl-fleet-f00001-g7e", ours),
            _job("nsl-fleet-f00001-bob", {**ours, "nsightlab/owner": "bob"}),  # someone else's
            _job(
                "nsl-fleet-f00001-hand", {"nsightlab/owner": OWNER, "nsightlab/fleet": "f00001"}
            ),  # not managed by nsightlab
            _configmap("nsightlab-fleet-f00001", ours),
            _configmap("nsightlab-fleet-f00002", {**ours, "nsightlab/fleet": "f00002", "nsightlab/owner": "bob"}),
            _configmap("nsightlab-fleet-f00003", {**ours, "nsightlab/fleet": "f00003"}),
        ]
    )
    r = nsl(capsys, "cleanup", "--fleet", "f00001", "--context", "stg", "--yes", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["fleets"] == {
        "fleets": ["f00001"],
        "jobs": ["nsl-fleet-f00001-g7e"],
        "configmaps": ["nsightlab-fleet-f00001"],
        "skipped": ["job/nsl-fleet-f00001-bob", "job/nsl-fleet-f00001-hand"],
    }
    assert "warning: not deleting job nsl-fleet-f00001-bob: it is not an nsightlab fleet Job of ana" in r.err
    deletes = [q for q in sim.requests if q.method == "DELETE"]
    assert [q.path.rsplit("/", 1)[1] for q in deletes] == ["nsl-fleet-f00001-g7e", "nsightlab-fleet-f00001"]
    assert (
        json.loads(deletes[0].body)["propagationPolicy"] == "Background"
    )  # the pods go with the Job (batch/v1 would orphan them)
    # --all-mine: this owner's other fleet too, and still nobody else's
    r = nsl(capsys, "cleanup", "--all-mine", "--context", "stg", "--yes", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["fleets"]["configmaps"] == ["nsightlab-fleet-f00003"]
    assert sorted(fleet_objects(sim)) == [
        "configmap/nsightlab-fleet-f00002",
        "job/nsl-fleet-f00001-bob",
        "job/nsl-fleet-f00001-hand",
    ]
