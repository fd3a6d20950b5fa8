"""RBAC in kubesim, judged by the real kubectl and raw HTTP: roles applied by an admin,
a namespace-scoped user, the API server's denial messages, access and rules reviews."""

from __future__ import annotations

import http.client
import json
import shutil
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
import yaml
from kubesim import KubeSim, kubectl, realistic_cluster
from kubesim._rbac import request_info

F = TypeVar("F", bound=Callable[..., None])


def needs_kubectl(test: F) -> F:
    """The real kubectl judges this test (marked ``kubectl``; skipped without it)."""
    skip = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
    return cast(F, pytest.mark.kubectl(skip(test)))


NS = "serving"
LLM_POD = "llmqu-v1-s2-7d9f8c6b5-x2x9q"

# What a platform team gives a lab user in one namespace. pods/exec carries both verbs: a
# websocket exec (kubectl 1.30+, the Python client) is a GET and needs "get" on pods/exec
# (and "create" too from Kubernetes 1.35); SPDY's POST needs "create".
LAB_ROLE = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: lab-user, namespace: serving}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [create, get, list, watch, delete]
- apiGroups: [""]
  resources: [pods/exec]
  verbs: [create, get]
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
- apiGroups: [""]
  resources: [events]
  verbs: [list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lab-user, namespace: serving}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: lab-user}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
"""

NODE_READER = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: node-reader}
rules:
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-reads-nodes}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: node-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
"""


def forbidden(what: str, verb: str, resource: str, scope: str, user: str = "alice", group: str = "") -> str:
    """kubectl's line for the API server's RBAC denial."""
    where = "at the cluster scope" if scope == "" else f'in the namespace "{scope}"'
    return (
        f'Error from server (Forbidden): {what} is forbidden: User "{user}" cannot {verb} resource '
        f'"{resource}" in API group "{group}" {where}'
    )


@pytest.fixture
def sim() -> Iterator[KubeSim]:
    with KubeSim(tls=True, kubelet_delay=0.05, rbac=True) as server:
        server.load(realistic_cluster())
        yield server


@pytest.fixture
def cfg(sim: KubeSim, tmp_path: Path) -> Path:
    """Contexts ``admin`` (the server's own user, an admin) and ``alice`` (no rights yet)."""
    token = sim.add_user("alice")
    return sim.write_kubeconfig(
        tmp_path / "kubeconfig",
        {
            "admin": {"namespace": NS},
            "alice": {"namespace": NS, "token": token, "user": "alice"},
        },
    )


def run(cfg: Path, context: str, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = kubectl(cfg, context, *args, input=stdin)
    return result.returncode, str(result.stdout), str(result.stderr).strip()


def ok(cfg: Path, context: str, *args: str) -> str:
    code, out, err = run(cfg, context, *args)
    assert code == 0, err
    return out


def grant(sim: KubeSim, docs: str) -> None:
    """Store roles and bindings directly (the kubectl path is covered by its own test)."""
    sim.load(yaml.safe_load_all(docs))


def raw(
    sim: KubeSim, method: str, path: str, token: str | None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    ctx = ssl.create_default_context(cafile=sim.ca_file)
    conn = http.client.HTTPSConnection("127.0.0.1", sim.port, context=ctx, timeout=10)
    all_headers = dict(headers or {})
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    conn.request(method, path, headers=all_headers)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    try:
        return response.status, json.loads(body)
    except ValueError:
        return response.status, body.decode()


# ---- the namespace-scoped user, through kubectl ----------------------------------------------------


@needs_kubectl
def test_admin_applies_a_role_and_the_user_works_in_its_namespace(sim: KubeSim, cfg: Path, tmp_path: Path) -> None:
    # Before any binding the user may only discover the API.
    assert run(cfg, "alice", "get", "pods")[2] == forbidden("pods", "list", "pods", NS)
    role = tmp_path / "role.yaml"
    role.write_text(LAB_ROLE)
    assert ok(cfg, "admin", "apply", "-f", str(role)).splitlines() == [
        "role.rbac.authorization.k8s.io/lab-user created",
        "rolebinding.rbac.authorization.k8s.io/lab-user created",
    ]
    roles = ok(cfg, "admin", "get", "roles").splitlines()
    assert roles[0].split() == ["NAME", "CREATED", "AT"] and roles[1].split()[0] == "lab-user"
    bindings = ok(cfg, "admin", "get", "rolebindings", "-o", "wide").splitlines()
    assert bindings[0].split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert bindings[1].split()[:2] == ["lab-user", "Role/lab-user"] and bindings[1].split()[3] == "alice"

    assert LLM_POD in ok(cfg, "alice", "get", "pods")
    assert (
        ok(cfg, "alice", "run", "lab", "--image=busybox", "--restart=Never", "--", "sleep", "infinity")
        == "pod/lab created\n"
    )
    sim.wait_for("pods", NS, "lab", lambda p: p is not None and p["status"].get("phase") == "Running")
    sim.append_log(NS, "lab", "step 1 done\n")
    assert ok(cfg, "alice", "logs", "lab") == "step 1 done\n"
    assert ok(cfg, "alice", "exec", "lab", "--", "echo", "from-the-pod") == "from-the-pod\n"
    assert "lab" in ok(cfg, "alice", "get", "events", "--field-selector", "involvedObject.name=lab")
    assert ok(cfg, "alice", "delete", "pod", "lab", "--wait=false") == 'pod "lab" deleted\n'
    users = {r.user for r in sim.requests if r.path.startswith("/api/v1/namespaces/serving/pods")}
    assert users == {"alice"}


@needs_kubectl
def test_the_user_is_refused_outside_its_grant_in_the_api_servers_words(sim: KubeSim, cfg: Path) -> None:
    grant(sim, LAB_ROLE)
    refused = {
        ("get", "nodes"): forbidden("nodes", "list", "nodes", ""),
        ("get", "namespaces"): forbidden("namespaces", "list", "namespaces", ""),
        # A namespace is "in" itself: the API server puts its name in the namespace field.
        ("get", "namespace", NS): forbidden(f'namespaces "{NS}"', "get", "namespaces", NS),
        ("get", "pods", "-A"): forbidden("pods", "list", "pods", ""),
        ("get", "pods", "-n", "ml-lab"): forbidden("pods", "list", "pods", "ml-lab"),
        ("get", "deployments"): forbidden("deployments.apps", "list", "deployments", NS, group="apps"),
        # kubectl does not read the Status of a refused watch: this is its real line.
        ("get", "events", "-w", "--request-timeout=2s"): "Error from server (Forbidden): unknown (get events)",
        ("label", "pod", LLM_POD, "x=y"): forbidden(f'pods "{LLM_POD}"', "patch", "pods", NS),
    }
    for args, message in refused.items():
        code, _, err = run(cfg, "alice", *args)
        assert (code, err) == (1, message), args
    # Raw requests get the Status object itself, for any resource, even one this server
    # does not serve (authorisation comes before routing, as on a real server).
    token = sim.add_user("alice")
    status, body = raw(sim, "GET", f"/apis/batch/v1/namespaces/{NS}/jobs", token)
    assert status == 403 and body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'jobs.batch is forbidden: User "alice" cannot list resource "jobs" in API group "batch" '
        'in the namespace "serving"',
        "reason": "Forbidden",
        "details": {"group": "batch", "kind": "jobs"},
        "code": 403,
    }
    status, body = raw(sim, "GET", "/api/v1/namespaces/ml-lab/pods/gpu-smoke-test/log", token)
    assert (status, body["message"], body["details"]) == (
        403,
        'pods "gpu-smoke-test" is forbidden: User "alice" cannot get resource "pods/log" in API group "" '
        'in the namespace "ml-lab"',
        {"name": "gpu-smoke-test", "kind": "pods"},
    )
    status, body = raw(sim, "GET", "/", token)
    assert (status, body["message"], body["details"]) == (403, 'forbidden: User "alice" cannot get path "/"', {})


def review(sim: KubeSim, token: str, attributes: dict[str, str], kind: str = "resourceAttributes") -> Any:
    """POST a SelfSubjectAccessReview as the token's user; its status."""
    ctx = ssl.create_default_context(cafile=sim.ca_file)
    conn = http.client.HTTPSConnection("127.0.0.1", sim.port, context=ctx, timeout=10)
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {kind: attributes}}
    conn.request(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        json.dumps(body),
        {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    assert response.status == 201
    return json.loads(response.read())["status"]


@needs_kubectl
def test_auth_can_i_answers_from_the_same_rules(sim: KubeSim, cfg: Path) -> None:
    grant(sim, LAB_ROLE)
    for args, answer in {
        ("create", "pods", "--subresource=exec"): "yes",
        ("get", "pods", "--subresource=status"): "no",
        ("list", "pods", "-A"): "no",
        ("get", "/api/v1"): "yes",  # discovery is open to every authenticated user
    }.items():
        assert run(cfg, "alice", "auth", "can-i", *args)[1].strip() == answer, args
    # kubectl reads "pods/exec" as the pod named "exec": the answer is the one for pods.
    assert run(cfg, "alice", "auth", "can-i", "update", "pods/exec")[1].strip() == "no"
    assert run(cfg, "admin", "auth", "can-i", "*", "*", "-A")[1].strip() == "yes"
    # Every verb, through the API kubectl uses.
    token = sim.add_user("alice")
    expected = {
        ("create", "pods", ""): True,
        ("get", "pods", ""): True,
        ("list", "pods", ""): True,
        ("watch", "pods", ""): True,
        ("delete", "pods", ""): True,
        ("update", "pods", ""): False,
        ("patch", "pods", ""): False,
        ("deletecollection", "pods", ""): False,
        ("create", "pods", "exec"): True,
        ("get", "pods", "exec"): True,
        ("get", "pods", "log"): True,
        ("get", "pods", "status"): False,
        ("create", "pods", "attach"): False,
        ("list", "events", ""): True,
        ("watch", "events", ""): False,
        ("create", "events", ""): False,
        ("list", "secrets", ""): False,
        ("get", "configmaps", ""): False,
    }
    for (verb, resource, sub), allowed in expected.items():
        status = review(sim, token, {"namespace": NS, "verb": verb, "resource": resource, "subresource": sub})
        assert status["allowed"] is allowed, (verb, resource, sub)
        if allowed:
            assert (
                status["reason"] == 'RBAC: allowed by RoleBinding "lab-user/serving" of Role "lab-user" to User "alice"'
            )
    assert review(sim, token, {"namespace": "ml-lab", "verb": "list", "resource": "pods"}) == {"allowed": False}
    assert review(sim, token, {"namespace": NS, "verb": "get", "resource": "namespaces", "name": NS}) == {
        "allowed": False
    }
    assert review(sim, token, {"verb": "get", "path": "/version"}, "nonResourceAttributes") == {
        "allowed": True,
        "reason": 'RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" '
        'to Group "system:authenticated"',
    }


@needs_kubectl
def test_auth_can_i_list_shows_the_rules_of_the_namespace(sim: KubeSim, cfg: Path) -> None:
    grant(sim, LAB_ROLE)
    rows = [line.split() for line in ok(cfg, "alice", "auth", "can-i", "--list").splitlines()]
    assert rows[0] == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    by_resource = {row[0]: row[-len(row) + 3 :] for row in rows[1:] if not row[0].startswith("[")}
    assert by_resource["pods"] == ["[create", "get", "list", "watch", "delete]"]
    assert by_resource["pods/exec"] == ["[create", "get]"]
    assert by_resource["pods/log"] == ["[get]"] and by_resource["events"] == ["[list]"]
    assert by_resource["selfsubjectaccessreviews.authorization.k8s.io"] == ["[create]"]
    assert ["[/api/*]", "[]", "[get]"] in rows
    # In another namespace only the cluster-wide defaults remain.
    other = ok(cfg, "alice", "auth", "can-i", "--list", "-n", "ml-lab")
    assert "pods" not in {line.split()[0] for line in other.splitlines()}


@needs_kubectl
def test_a_cluster_role_binding_lets_nodes_through(sim: KubeSim, cfg: Path, tmp_path: Path) -> None:
    assert run(cfg, "alice", "get", "nodes")[2] == forbidden("nodes", "list", "nodes", "")
    path = tmp_path / "nodes.yaml"
    path.write_text(NODE_READER)
    ok(cfg, "admin", "apply", "-f", str(path))
    assert len(ok(cfg, "alice", "get", "nodes", "--no-headers").splitlines()) == 10
    assert run(cfg, "alice", "auth", "can-i", "list", "nodes")[1].strip() == "yes"
    # get and list only: no watch, no writes.
    assert run(cfg, "alice", "get", "nodes", "-w", "--request-timeout=2s")[2] == (
        "Error from server (Forbidden): unknown (get nodes)"
    )
    refused_watch = [r for r in sim.requests if r.query.get("watch") == "true"]
    assert [(r.user, r.status) for r in refused_watch] == [("alice", 403)]
    node = sim.list("nodes")[0]["metadata"]["name"]
    assert run(cfg, "alice", "label", "node", node, "x=y")[2] == forbidden(f'nodes "{node}"', "patch", "nodes", "")


@needs_kubectl
def test_resource_names_restrict_to_one_object(sim: KubeSim, cfg: Path) -> None:
    grant(
        sim,
        f"""\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: one-pod, namespace: serving}}
rules:
- apiGroups: [""]
  resources: [pods]
  resourceNames: [{LLM_POD}]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: one-pod, namespace: serving}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: one-pod}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}}
""",
    )
    assert LLM_POD in ok(cfg, "alice", "get", "pod", LLM_POD)
    other = "gateway-6f7c9d8b4-b9x4d"
    assert run(cfg, "alice", "get", "pod", other)[2] == forbidden(f'pods "{other}"', "get", "pods", NS)
    assert run(cfg, "alice", "get", "pods")[2] == forbidden("pods", "list", "pods", NS)
    # A list or watch that names the object in a field selector is allowed (the API server
    # takes the name from metadata.name=...).
    token = sim.add_user("alice")
    status, body = raw(sim, "GET", f"/api/v1/namespaces/{NS}/pods?fieldSelector=metadata.name%3D{LLM_POD}", token)
    assert status == 200 and [p["metadata"]["name"] for p in body["items"]] == [LLM_POD]
    status, body = raw(sim, "GET", f"/api/v1/namespaces/{NS}/pods?fieldSelector=metadata.name%3D{other}", token)
    assert status == 403 and body["message"].startswith(f'pods "{other}" is forbidden: User "alice" cannot list')


@needs_kubectl
def test_admins_are_unaffected(sim: KubeSim, cfg: Path) -> None:
    grant(sim, LAB_ROLE)
    assert len(ok(cfg, "admin", "get", "nodes", "--no-headers").splitlines()) == 10
    assert "ml-lab" in ok(cfg, "admin", "get", "pods", "-A")
    assert ok(cfg, "admin", "auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}") == (
        '["system:masters","system:authenticated"]'
    )
    rows = [line.split() for line in ok(cfg, "admin", "auth", "can-i", "--list").splitlines()]
    assert ["*.*", "[]", "[]", "[*]"] in rows
    assert sim.requests and {r.status for r in sim.requests if r.user == "sim-user"} <= {200, 201}


# ---- exec, watch and the authorizer's other rules -------------------------------------------------------


def exec_handshake(sim: KubeSim, token: str, pod: str = LLM_POD, ns: str = NS) -> tuple[int, Any]:
    """The websocket upgrade the Python client and kubectl 1.30+ send for exec."""
    headers = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Protocol": "v5.channel.k8s.io",
    }
    return raw(
        sim,
        "GET",
        f"/api/v1/namespaces/{ns}/pods/{pod}/exec?command=true&stdout=1&container=model-runtime",
        token,
        headers,
    )


def test_websocket_exec_needs_get_and_from_1_35_also_create() -> None:
    create_only = LAB_ROLE.replace("verbs: [create, get]", "verbs: [create]")
    get_only = LAB_ROLE.replace("verbs: [create, get]", "verbs: [get]")
    with KubeSim(tls=True, rbac=True) as sim:  # v1.31
        sim.load(realistic_cluster())
        token = sim.add_user("alice")
        grant(sim, create_only)
        status, body = exec_handshake(sim, token)
        assert (status, body["message"]) == (
            403,
            (
                f'pods "{LLM_POD}" is forbidden: User "alice" cannot get resource "pods/exec" in API group "" '
                f'in the namespace "{NS}"'
            ),
        )
        grant(sim, get_only)
        assert exec_handshake(sim, token)[0] == 101
    with KubeSim(tls=True, rbac=True, version="v1.35.0") as sim:
        sim.load(realistic_cluster())
        token = sim.add_user("alice")
        grant(sim, get_only)
        status, body = exec_handshake(sim, token)
        assert (status, body["message"]) == (
            403,
            (
                f'pods "{LLM_POD}" is forbidden: User "alice" cannot create resource "pods/exec" in API group "" '
                f'in the namespace "{NS}"'
            ),
        )
        grant(sim, LAB_ROLE)
        assert exec_handshake(sim, token)[0] == 101


@needs_kubectl
def test_a_binding_to_a_missing_role_is_named_in_the_denial(sim: KubeSim, cfg: Path) -> None:
    grant(
        sim,
        """\
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dangling, namespace: serving}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ghost}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
""",
    )
    assert run(cfg, "alice", "get", "pods")[2] == (
        forbidden("pods", "list", "pods", NS) + ': RBAC: clusterrole.rbac.authorization.k8s.io "ghost" not found'
    )
    # Another namespace does not see that binding.
    assert run(cfg, "alice", "get", "pods", "-n", "ml-lab")[2] == forbidden("pods", "list", "pods", "ml-lab")


@needs_kubectl
def test_groups_service_accounts_and_the_default_roles(sim: KubeSim, tmp_path: Path) -> None:
    grant(
        sim,
        """\
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ml-viewers, namespace: serving}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: ml-team}
- {kind: ServiceAccount, name: runner}
""",
    )
    carol = sim.add_user("carol", groups=["ml-team"])
    runner = sim.add_user("system:serviceaccount:serving:runner", token="runner-token")
    cfg = sim.write_kubeconfig(
        tmp_path / "kubeconfig",
        {
            "carol": {"namespace": NS, "token": carol, "user": "carol"},
            "runner": {"namespace": NS, "token": runner, "user": "system:serviceaccount:serving:runner"},
        },
    )
    assert LLM_POD in ok(cfg, "carol", "get", "pods")
    assert LLM_POD in ok(cfg, "runner", "get", "pods")
    for token in (carol, runner):
        # view reads pods and their logs but grants no exec and no secrets.
        can = {
            (verb, res, sub): review(sim, token, {"namespace": NS, "verb": verb, "resource": res, "subresource": sub})[
                "allowed"
            ]
            for verb, res, sub in [("get", "pods", "log"), ("create", "pods", "exec"), ("list", "secrets", "")]
        }
        assert can == {("get", "pods", "log"): True, ("create", "pods", "exec"): False, ("list", "secrets", ""): False}
    assert ok(cfg, "carol", "auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}") == (
        '["ml-team","system:authenticated"]'
    )
    assert ok(cfg, "runner", "auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}") == (
        '["system:serviceaccounts","system:serviceaccounts:serving","system:authenticated"]'
    )
    names = {r["metadata"]["name"] for r in sim.list("clusterroles")}
    assert {"cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user"} <= names


@needs_kubectl
def test_a_deny_rule_still_wins(sim: KubeSim, cfg: Path) -> None:
    grant(sim, LAB_ROLE)
    sim.deny("list", "pods", namespace=NS)
    assert run(cfg, "alice", "get", "pods")[2] == forbidden("pods", "list", "pods", NS)
    assert run(cfg, "alice", "auth", "can-i", "list", "pods")[1].strip() == "no"
    assert run(cfg, "admin", "get", "pods")[2] == forbidden("pods", "list", "pods", NS, user="sim-user")
    sim.allow_all()
    assert LLM_POD in ok(cfg, "alice", "get", "pods")


def test_discovery_is_open_and_unauthenticated_is_still_401(sim: KubeSim) -> None:
    token = sim.add_user("nobody-special")
    for path in (
        "/api",
        "/api/v1",
        "/apis",
        "/apis/rbac.authorization.k8s.io/v1",
        "/version",
        "/openapi/v3",
        "/healthz",
    ):
        assert raw(sim, "GET", path, token)[0] == 200, path
    assert raw(sim, "GET", "/api/v1/pods", None)[0] == 401
    assert raw(sim, "GET", "/api/v1/pods", "wrong")[0] == 401
    assert raw(sim, "GET", "/version", None)[0] == 200  # public info, as on a real cluster
    status, body = raw(sim, "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", token)
    assert (status, body["message"]) == (400, "no namespace on request")


@needs_kubectl
def test_rbac_objects_are_validated_as_the_api_server_does(sim: KubeSim, cfg: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("""\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:bad"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: x}
subjects:
- {kind: Robot, name: r2}
""")
    code, _, err = run(cfg, "admin", "create", "-f", str(bad))
    assert code == 1 and err == (
        'The ClusterRoleBinding "system:bad" is invalid: \n'
        '* roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"\n'
        '* subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"'
    )


def test_rbac_is_off_by_default(tmp_path: Path) -> None:
    with KubeSim(tls=True) as sim:
        sim.load(realistic_cluster())
        token = sim.add_user("alice")
        assert raw(sim, "GET", "/api/v1/nodes", token)[0] == 200
        assert sim.list("clusterroles") == []
        sim.enable_rbac()
        assert raw(sim, "GET", "/api/v1/nodes", token)[0] == 403
        assert raw(sim, "GET", "/api/v1/nodes", "sim-token")[0] == 200
        sim.disable_rbac()
        assert raw(sim, "GET", "/api/v1/nodes", token)[0] == 200


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/pods", {}, ("list", "", "pods", "", "ns", "")),
        ("GET", "/api/v1/namespaces/ns/pods", {"watch": "true"}, ("watch", "", "pods", "", "ns", "")),
        (
            "GET",
            "/api/v1/namespaces/ns/pods",
            {"fieldSelector": "metadata.name=a"},
            ("list", "", "pods", "", "ns", "a"),
        ),
        ("GET", "/api/v1/watch/namespaces/ns/pods/a", {}, ("watch", "", "pods", "", "ns", "a")),
        ("GET", "/api/v1/namespaces/ns/pods/a", {}, ("get", "", "pods", "", "ns", "a")),
        ("GET", "/api/v1/namespaces/ns/pods/a/log", {"follow": "true"}, ("get", "", "pods", "log", "ns", "a")),
        ("GET", "/api/v1/namespaces/ns/pods/a/exec", {}, ("get", "", "pods", "exec", "ns", "a")),
        ("POST", "/api/v1/namespaces/ns/pods/a/exec", {}, ("create", "", "pods", "exec", "ns", "a")),
        ("PUT", "/api/v1/namespaces/ns/pods/a/status", {}, ("update", "", "pods", "status", "ns", "a")),
        ("DELETE", "/api/v1/namespaces/ns/pods", {}, ("deletecollection", "", "pods", "", "ns", "")),
        ("GET", "/api/v1/namespaces/ns", {}, ("get", "", "namespaces", "", "ns", "ns")),
        ("PUT", "/api/v1/namespaces/ns/finalize", {}, ("update", "", "namespaces", "finalize", "ns", "ns")),
        ("GET", "/api/v1/namespaces", {}, ("list", "", "namespaces", "", "", "")),
        (
            "PATCH",
            "/apis/apps/v1/namespaces/ns/deployments/d/scale",
            {},
            ("patch", "apps", "deployments", "scale", "ns", "d"),
        ),
        ("GET", "/apis/batch/v1/jobs", {}, ("list", "batch", "jobs", "", "", "")),
    ],
)
def test_requests_map_to_the_api_servers_attributes(
    method: str, path: str, query: dict[str, str], expected: tuple[str, ...]
) -> None:
    info = request_info(method, path, query)
    assert info.resource_request
    assert (info.verb, info.api_group, info.resource, info.subresource, info.namespace, info.name) == expected


@pytest.mark.parametrize("path", ["/", "/api", "/api/v1", "/apis/apps/v1", "/version", "/openapi/v3/api/v1"])
def test_discovery_paths_are_non_resource_requests(path: str) -> None:
    info = request_info("GET", path, {})
    assert not info.resource_request and (info.verb, info.path) == ("get", path)
