"""The lab with namespace permissions only: a user bound to docs/permissions.md's Role, against an
API server that authorises every request by RBAC (kubesim) and answers 403 as a real one
words it. The whole life of a lab pod works; cluster-wide reads are notes; explore nodes
says which permission it lacks; doctor passes and says what it could not see."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from clirun import Result, run_cli
from kubesim import KubeSim, realistic_cluster
from labenv import PENDING

from nsightlab.cluster.permissions import FLEET_PERMISSIONS, LAB_PERMISSIONS, Permission

PERMISSIONS = Path(__file__).resolve().parent.parent / "docs" / "permissions.md"
NS = "ml-lab"
OWNER = "ana"
POD = f"nsight-lab-{OWNER}"
IMAGE = "registry.example.com/triton-vllm-container:1.0-1"


def readme_roles() -> dict[str, list[dict[str, Any]]]:
    """The YAML documents of docs/permissions.md, by the Role they hold."""
    section = PERMISSIONS.read_text()
    roles: dict[str, list[dict[str, Any]]] = {}
    for block in re.findall(r"```yaml\n(.*?)```", section, re.S):
        docs = [d for d in yaml.safe_load_all(block) if d]
        role = next(d for d in docs if d["kind"] == "Role")
        roles[role["metadata"]["name"]] = docs
    return roles


def granted(role: dict[str, Any]) -> set[Permission]:
    """What a Role's rules allow, one permission per verb and resource."""
    out: set[Permission] = set()
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                name, _, sub = resource.partition("/")
                out.update(Permission(verb, group, name, sub or None) for verb in rule["verbs"])
    return out


def test_the_readme_roles_grant_exactly_what_the_code_asks_for() -> None:
    roles = readme_roles()
    lab = next(d for d in roles["nsightlab-lab"] if d["kind"] == "Role")
    fleet = next(d for d in roles["nsightlab-fleet"] if d["kind"] == "Role")
    assert granted(lab) == set(LAB_PERMISSIONS) and len(set(LAB_PERMISSIONS)) == len(LAB_PERMISSIONS)
    assert granted(fleet) == set(FLEET_PERMISSIONS) and len(set(FLEET_PERMISSIONS)) == len(FLEET_PERMISSIONS)
    # both verbs of a websocket exec (get before Kubernetes 1.35, get and create from it)
    assert {Permission("get", "", "pods", "exec"), Permission("create", "", "pods", "exec")} <= set(LAB_PERMISSIONS)
    binding = next(d for d in roles["nsightlab-lab"] if d["kind"] == "RoleBinding")
    assert (
        binding["roleRef"]["name"] == "nsightlab-lab"
        and binding["metadata"]["namespace"] == lab["metadata"]["namespace"] == NS
    )


@pytest.fixture
def team(sim: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """RBAC on; ana, of the group ml-team, bound to docs/permissions.md's lab Role in ml-lab (and to
    nothing else); her contexts `lab` and `prd-lab`, and a config with the lab image.
    Returns NSIGHTLAB_HOME."""
    sim.enable_rbac()  # the server's own user stays an admin
    sim.load(readme_roles()["nsightlab-lab"])
    token = sim.add_user(OWNER, groups=["ml-team"])
    user = {"namespace": NS, "token": token, "user": OWNER}
    kubeconfig = sim.write_kubeconfig(
        tmp_path / "kubeconfig", {"lab": user, "prd-lab": user, "admin": {"namespace": NS}}, current="prd-lab"
    )
    config = tmp_path / "config.yaml"
    config.write_text(f"lab:\n  image: {IMAGE}\n  owner: {OWNER}\n")
    home = tmp_path / "home"
    monkeypatch.setenv("NSIGHTLAB_HOME", str(home))
    monkeypatch.setenv("NSIGHTLAB_CONFIG", str(config))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("COLUMNS", "200")
    return home


def nsl(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    return run_cli(capsys, *args)


def _profile_device() -> list[str]:
    """`--device cpu` where profile has that option: the pod asks for a GPU, this torch has none."""
    from nsightlab.cli.measure import profile

    return ["--device", "cpu"] if "device" in inspect.signature(profile).parameters else []


@pytest.mark.slow
def test_the_whole_lab_with_namespace_permissions(
    capsys: pytest.CaptureFixture[str], team: Path, sim: KubeSim, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    # doctor: every permission the lab needs is granted; what it cannot see is info
    r = nsl(capsys, "doctor", "--context", "lab", "--json")
    assert r.code == 0, r
    report = json.loads(r.out)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"] and not [c for c in checks.values() if c["ok"] is False]
    allowed = f'in {NS} (RBAC: allowed by RoleBinding "nsightlab-lab/{NS}" of Role "nsightlab-lab" to Group "ml-team")'
    for name in (
        "may create/get/list/watch/delete pods",
        "may create/get pods/exec",
        "may get pods/log",
        "may list events",
    ):
        assert (checks[name]["ok"], checks[name]["detail"]) == (True, allowed), name
    assert checks["namespace"] == {
        "name": "namespace",
        "ok": None,
        "detail": f"cannot get namespace {NS} here (forbidden): not needed; the checks below are for {NS}",
        "fix": None,
    }
    assert checks["nodes of g7e.8xlarge"]["ok"] is None
    assert (
        checks["nodes of g7e.8xlarge"]["detail"]
        == "cannot list nodes here (forbidden): no free-GPU count before create, no explore nodes; the lab runs "
        "without them"
    )
    assert checks["fleet: may create/get/list/watch/delete jobs.batch"]["ok"] is None  # the fleet's Role is not bound
    assert not [c for c in checks.values() if "nsightlab doctor" in (c["fix"] or "")]
    text = nsl(capsys, "doctor", "--context", "lab")
    assert text.code == 0 and "info  nodes of g7e.8xlarge: cannot list nodes here (forbidden)" in text.out

    # create: the line before the change as ever, one note for the skipped free-GPU check
    r = nsl(capsys, "create", "--context", "lab", "--yes", "--json")
    assert r.code == 0, r
    assert f"create lab pod {POD} (1 GPU on a g7e.8xlarge): context lab, server {sim.url}, namespace {NS}" in r.err
    assert r.err.count("cannot list nodes here (forbidden): free-GPU check skipped") == 1
    lab = json.loads(r.out)
    assert lab["ready"] and lab["node"] and lab["instance_type"] == "g7e.8xlarge" and lab["gpu_product"] is None

    r = nsl(capsys, "status", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["lab"]["instance_type"] == "g7e.8xlarge"
    assert f"cannot get node {lab['node']} here (forbidden): the node's GPU model is not shown" in r.err

    r = nsl(capsys, "shell", "--", "sh", "-c", "echo in-the-pod")
    assert (r.code, r.out) == (0, "in-the-pod\n")

    script = tmp_path / "note.txt"
    script.write_text("namespace permissions only\n")
    assert nsl(capsys, "copy", str(script), ":/tmp/").code == 0
    back = tmp_path / "back"
    assert nsl(capsys, "copy", ":/tmp/note.txt", str(back)).code == 0
    assert back.read_text() == "namespace permissions only\n"

    r = nsl(
        capsys,
        "profile",
        "lesson1",
        "--profiler",
        "torch",
        *_profile_device(),
        "--json",
        "--",
        "--scale-log2",
        "10",
        "--gemm-n",
        "16",
    )
    assert r.code == 0, r
    assert json.loads(r.out)["target"] == f"pod {NS}/{POD}"
    meta = json.loads((next((team / "runs").iterdir()) / "meta.json").read_text())
    assert (meta["node"], meta["instance_type"], meta["node_gpu"]) == (
        lab["node"],
        "g7e.8xlarge",
        None,
    )  # from the pod's node selector
    assert (
        r.err.count(
            f"cannot get node {lab['node']} here (forbidden): the node's GPU label is not recorded with the run"
        )
        == 1
    )

    sim.append_log(NS, POD, "hello from the lab\n")
    r = nsl(capsys, "logs")
    assert (r.code, r.out) == (0, "hello from the lab\n")
    r = nsl(capsys, "events", "--json")
    assert r.code == 0 and "Scheduled" in {e["reason"] for e in json.loads(r.out)["events"]}

    r = nsl(capsys, "explore", "pods", "--context", "lab", "--json")
    assert r.code == 0 and POD in {p["name"] for p in json.loads(r.out)["pods"]}

    r = nsl(capsys, "cleanup", "--yes")
    assert r.code == 0, r
    assert sim.get("pods", NS, POD) is None

    # everything ana was refused is a cluster-wide read (or the events watch, which the
    # lab does without): never anything the lab needs
    refused = {(q.method, q.path, q.query.get("watch")) for q in sim.requests if q.status == 403}
    assert {q.user for q in sim.requests if q.status == 403} == {OWNER}
    assert refused == {
        ("GET", f"/api/v1/namespaces/{NS}", None),
        ("GET", "/api/v1/nodes", None),
        ("GET", f"/api/v1/nodes/{lab['node']}", None),
        ("GET", f"/api/v1/namespaces/{NS}/events", "true"),
    }


def test_explore_nodes_names_the_missing_permission(capsys: pytest.CaptureFixture[str], team: Path) -> None:
    r = nsl(capsys, "explore", "nodes", "--context", "lab")
    assert (r.code, r.out) == (4, "")
    assert r.err == (
        "error: cannot list nodes: your account may not read nodes on context lab. Ask for a ClusterRole with get/list "
        f"on nodes, or run `nsightlab explore pods --context lab -n {NS}`.\n"
    )
    r = nsl(capsys, "explore", "node", "ip-10-0-19-150.ec2.internal", "--context", "lab")
    assert r.code == 4 and r.err.startswith(
        "error: cannot get node ip-10-0-19-150.ec2.internal: your account may not read nodes on context lab."
    )
    r = nsl(capsys, "explore", "pods", "-A", "--context", "lab")
    assert r.code == 4 and r.err == (
        "error: cannot list pods in all namespaces: your account may read pods only in its own namespace on "
        "context lab. "
        f"Ask for a ClusterRole with list on pods, or run `nsightlab explore pods --context lab -n {NS}`.\n"
    )
    # the hint runs as printed
    r = nsl(capsys, "explore", "pods", "--context", "lab", "-n", NS)
    assert r.code == 0, r
    # one pod's detail needs no node: its node's facts are a note
    r = nsl(capsys, "explore", "pod", "gpu-smoke-test", "--context", "lab", "--json")
    assert r.code == 0 and json.loads(r.out)["name"] == "gpu-smoke-test"
    assert r.err.count("here (forbidden): the node's instance type and GPU model are not shown") == 1


def test_namespace_permissions_never_relax_the_protected_context_rules(
    capsys: pytest.CaptureFixture[str], team: Path, sim: KubeSim
) -> None:
    sim.clear_requests()
    for command in (
        ["create", "--context", "prd-lab", "--yes"],
        ["cleanup", "--context", "prd-lab", "--yes"],
        ["shell", "--context", "prd-lab", "--", "true"],
        ["copy", "--context", "prd-lab", str(PERMISSIONS), ":/tmp/"],
        ["profile", "lesson1", "--context", "prd-lab", "--profiler", "torch"],
    ):
        r = nsl(capsys, *command)
        assert r.code == 3 and "refusing to" in r.err and "protected context 'prd-lab'" in r.err, (command, r)
    assert sim.requests == []  # refused before any request
    # read-only commands work there, with what the Role allows
    r = nsl(capsys, "doctor", "--context", "prd-lab", "--json")
    assert r.code == 0, r


def test_a_missing_namespace_is_found_by_the_create(
    capsys: pytest.CaptureFixture[str], team: Path, sim: KubeSim
) -> None:
    # an account that may create pods in any namespace, but not read Namespace objects
    sim.load(
        yaml.safe_load_all(f"""\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: pods-anywhere}}
rules:
- {{apiGroups: [""], resources: [pods], verbs: [create, get, list, watch, delete]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: ana-pods-anywhere}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pods-anywhere}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: {OWNER}}}
""")
    )
    sim.clear_requests()
    r = nsl(capsys, "create", "--context", "lab", "-n", "nope", "--yes")
    assert (r.code, r.err.splitlines()[-1]) == (
        4,
        "error: namespace 'nope' does not exist on context 'lab'. Pass --namespace NS, or set the namespace of "
        "the alias in config.yaml.",
    )
    assert not [q for q in sim.requests if q.path == "/api/v1/namespaces/nope"]  # never read, the create said so


def test_the_wait_lists_events_when_it_may_not_watch_them(
    capsys: pytest.CaptureFixture[str], team: Path, tmp_path: Path, sim: KubeSim
) -> None:
    # a node group with no node: the pod stays Pending and the scheduler says why
    config = tmp_path / "pending.yaml"
    config.write_text(f"lab:\n  image: {IMAGE}\n  owner: {OWNER}\n  node_selector: {json.dumps(PENDING)}\n")
    r = nsl(capsys, "--config", str(config), "create", "--context", "lab", "--yes", "--timeout", "2")
    assert r.code == 5, r
    assert "event Warning/FailedScheduling: 0/10 nodes are available" in r.err  # listed, as watching is not granted
    # the explanation says what it could not add, in the same line
    assert "cannot list nodes here (forbidden): free GPUs per type not shown" in r.err.splitlines()[-1]
    assert f"nsightlab cleanup --context lab --namespace {NS}" in r.err


def test_doctor_in_a_namespace_where_nothing_is_granted(capsys: pytest.CaptureFixture[str], team: Path) -> None:
    r = nsl(capsys, "doctor", "--context", "lab", "-n", "serving", "--json")
    assert r.code == 4 and r.err == "error: 4 doctor check(s) failed. See the fixes above.\n"
    checks = {c["name"]: c for c in json.loads(r.out)["checks"]}
    pods = checks["may create/get/list/watch/delete pods"]
    assert (pods["ok"], pods["detail"]) == (False, "in serving: denied create, get, list, watch, delete")
    assert pods["fix"] == (
        "Ask for create, get, list, watch, delete on pods in namespace serving: docs/permissions.md has "
        "the lab's Role. Nothing is granted in serving: if it is not your team's namespace, pass -n NAMESPACE."
    )
    # cluster-wide views stay information, whatever the namespace
    assert checks["nodes of g7e.8xlarge"]["ok"] is None and checks["namespace"]["ok"] is None


def _exec_role(verbs: str) -> list[dict[str, Any]]:
    """The README's lab Role with other verbs on pods/exec."""
    docs = readme_roles()["nsightlab-lab"]
    role = next(d for d in docs if d["kind"] == "Role")
    for rule in role["rules"]:
        if rule["resources"] == ["pods/exec"]:
            rule["verbs"] = verbs.split()
    return docs


def test_from_kubernetes_1_35_an_exec_needs_create_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with KubeSim(tls=True, kubelet_delay=0.05, rbac=True, version="v1.35.0") as sim:
        sim.load(realistic_cluster())
        sim.load(_exec_role("get"))  # enough before 1.35
        token = sim.add_user(OWNER, groups=["ml-team"])
        kubeconfig = sim.write_kubeconfig(
            tmp_path / "kubeconfig", {"lab": {"namespace": NS, "token": token, "user": OWNER}}
        )
        config = tmp_path / "config.yaml"
        config.write_text(f"lab:\n  image: {IMAGE}\n  owner: {OWNER}\n")
        monkeypatch.setenv("NSIGHTLAB_HOME", str(tmp_path / "home"))
        monkeypatch.setenv("NSIGHTLAB_CONFIG", str(config))
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        assert nsl(capsys, "create", "--context", "lab", "--yes").code == 0
        r = nsl(capsys, "shell", "--", "true")
        assert r.code == 4 and f'User "{OWNER}" cannot create resource "pods/exec"' in r.err
        doctor = {c["name"]: c for c in json.loads(nsl(capsys, "doctor", "--context", "lab", "--json").out)["checks"]}
        assert (doctor["may create/get pods/exec"]["ok"], doctor["may create/get pods/exec"]["detail"]) == (
            False,
            f"in {NS}: denied create",
        )
        sim.load(readme_roles()["nsightlab-lab"])  # docs/permissions.md's Role grants both
        assert nsl(capsys, "shell", "--", "true").code == 0


def test_doctor_passes_the_fleet_checks_once_its_role_is_bound(
    capsys: pytest.CaptureFixture[str], team: Path, sim: KubeSim
) -> None:
    fleet = readme_roles()["nsightlab-fleet"]
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "nsightlab-fleet", "namespace": NS},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "nsightlab-fleet"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "ml-team"}],
    }
    sim.load([*fleet, binding])
    r = nsl(capsys, "doctor", "--context", "lab", "--json")
    checks = {c["name"]: c for c in json.loads(r.out)["checks"]}
    assert r.code == 0 and checks["fleet: may create/get/list/watch/delete jobs.batch"]["ok"] is True
    assert checks["fleet: may create/get/delete configmaps"]["ok"] is True
