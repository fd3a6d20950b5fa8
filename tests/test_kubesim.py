"""Tests of the Kubernetes API emulator itself, through the official ``kubernetes`` client."""

from __future__ import annotations

import json
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kmock
import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException
from kubesim import (
    GPU_RESOURCE,
    KubeSim,
    generate_cluster,
    realistic_cluster,
)

Obj = dict[str, Any]
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def core(sim: KubeSim) -> Any:
    """A CoreV1Api for ``sim`` (typed Any: tests pass plain dicts as bodies)."""
    return client.CoreV1Api(sim.api_client())


def new_watch() -> Any:
    return watch.Watch()  # type: ignore[no-untyped-call]


def client_from(kubeconfig: Path, context: str) -> Any:
    return config.new_client_from_config(str(kubeconfig), context=context)  # type: ignore[no-untyped-call]


@pytest.fixture
def sim() -> Iterator[KubeSim]:
    """These API-level tests run without the scheduler and kubelet, so pods stay as created."""
    with KubeSim(tls=True, scheduler=False) as server:
        server.load(realistic_cluster())
        yield server


@pytest.fixture
def api(sim: KubeSim) -> Any:
    return core(sim)


def raw_get(
    sim: KubeSim, path: str, *, token: str | None = "sim-token", accept: str = "application/json"
) -> tuple[int, Any, dict[str, str]]:
    """GET with urllib (no kubernetes client), returning status, parsed body, headers."""
    req = urllib.request.Request(sim.url + path, headers={"Accept": accept})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    ctx = ssl.create_default_context(cafile=sim.ca_file) if sim.ca_file else None
    try:
        with urllib.request.urlopen(req, context=ctx) as resp:
            body = resp.read()
            status, headers = resp.status, dict(resp.headers)
    except urllib.error.HTTPError as e:
        body = e.read()
        status, headers = e.code, dict(e.headers)
    try:
        return status, json.loads(body), headers
    except ValueError:
        return status, body.decode(), headers


def status_of(e: ApiException) -> Obj:
    body: Obj = json.loads(e.body or "{}")
    return body


def lab_pod(name: str = "nsight-lab", gpus: int = 1, **spec: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"purpose": "nsight-learning"}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"node.kubernetes.io/instance-type": "g7e.8xlarge"},
            "tolerations": [{"key": GPU_RESOURCE, "operator": "Exists"}],
            "containers": [
                {
                    "name": "lab",
                    "image": "registry.example.com/triton-vllm-container:1.0-1",
                    "command": ["sleep", "infinity"],
                    "resources": {"limits": {"cpu": "4", "memory": "24Gi", GPU_RESOURCE: str(gpus)}},
                }
            ],
            **spec,
        },
    }


def names(items: list[Any]) -> list[str]:
    return [i.metadata.name for i in items]


# ---- seed data ------------------------------------------------------------------------------


def _gpu_request(pod: Obj) -> int:
    """Effective GPU request with the scheduler's native-sidecar rule."""
    spec = pod["spec"]

    def gpus(c: Obj) -> int:
        res = c.get("resources") or {}
        return int((res.get("requests") or res.get("limits") or {}).get(GPU_RESOURCE, 0))

    init_peak, sidecars = 0, 0
    for c in spec.get("initContainers") or []:
        if c.get("restartPolicy") == "Always":
            sidecars += gpus(c)
        else:
            init_peak = max(init_peak, sidecars + gpus(c))
    return max(init_peak, sidecars + sum(gpus(c) for c in spec["containers"]))


def test_realistic_cluster_has_the_gpu_shapes_the_lab_needs() -> None:
    objs = realistic_cluster()
    nodes = [o for o in objs if o["kind"] == "Node"]
    pods = [o for o in objs if o["kind"] == "Pod"]
    by_type: dict[str, list[Obj]] = {}
    for n in nodes:
        by_type.setdefault(n["metadata"]["labels"]["node.kubernetes.io/instance-type"], []).append(n)
    assert {"g6.xlarge", "g6.12xlarge", "g7e.8xlarge"} <= set(by_type)
    assert any(t.startswith("c8i.") for t in by_type)
    g7e = by_type["g7e.8xlarge"][0]
    labels = g7e["metadata"]["labels"]
    assert labels["karpenter.k8s.aws/instance-gpu-name"] == "rtx-pro-server-6000"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"
    assert g7e["status"]["allocatable"][GPU_RESOURCE] == "1"
    assert g7e["spec"]["taints"] == [{"key": GPU_RESOURCE, "value": "true", "effect": "NoSchedule"}]
    assert by_type["g6.12xlarge"][0]["metadata"]["labels"]["karpenter.k8s.aws/instance-gpu-count"] == "4"
    # GPU use per node, counted with the sidecar rule; at least two g7e GPUs stay free.
    used: dict[str, int] = {}
    for p in pods:
        if p["status"]["phase"] in ("Running", "Pending") and p["spec"].get("nodeName"):
            used[p["spec"]["nodeName"]] = used.get(p["spec"]["nodeName"], 0) + _gpu_request(p)
    free_g7e = sum(1 - used.get(n["metadata"]["name"], 0) for n in by_type["g7e.8xlarge"])
    assert free_g7e >= 2
    assert used[by_type["g6.xlarge"][0]["metadata"]["name"]] == 1  # the decoy
    serving = [p for p in pods if p["metadata"]["name"].startswith("llmqu-v1-s2-")]
    runtime = serving[0]["spec"]["initContainers"][1]
    assert runtime["name"] == "model-runtime" and runtime["restartPolicy"] == "Always"
    assert runtime["resources"]["limits"][GPU_RESOURCE] == "1"
    assert GPU_RESOURCE not in str(serving[0]["spec"]["containers"])
    assert {p["status"]["phase"] for p in pods} >= {"Running", "Pending", "Succeeded"}
    decoy = [p for p in pods if _gpu_request(p) and not p["spec"].get("initContainers")]
    assert [p["metadata"]["name"] for p in decoy] == ["gpu-smoke-test"]


def test_generate_cluster_sizes_and_gpu_share() -> None:
    objs = generate_cluster(nodes=300, pods=1000, seed=1)
    nodes = [o for o in objs if o["kind"] == "Node"]
    pods = [o for o in objs if o["kind"] == "Pod"]
    assert len(nodes) == 300 and len(pods) == 1000
    gpu_nodes = [n for n in nodes if GPU_RESOURCE in n["status"]["capacity"]]
    assert 0 < len(gpu_nodes) < len(nodes) * 0.1
    assert len({p["metadata"]["name"] for p in pods}) == 1000
    assert (
        generate_cluster(nodes=10, pods=10, seed=1)[-1]["metadata"]["name"]
        == generate_cluster(nodes=10, pods=10, seed=1)[-1]["metadata"]["name"]
    )


# ---- discovery -------------------------------------------------------------------------------


def test_discovery_documents(sim: KubeSim) -> None:
    status, version, _ = raw_get(sim, "/version", token=None)
    assert status == 200 and version["gitVersion"].startswith("v1.31.")
    _, core, _ = raw_get(sim, "/api/v1")
    assert core["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["pods"]["namespaced"] is True and "po" in by_name["pods"]["shortNames"]
    assert by_name["nodes"]["namespaced"] is False and by_name["nodes"]["kind"] == "Node"
    assert {"pods/exec", "pods/log", "pods/status"} <= set(by_name)
    assert "watch" in by_name["pods"]["verbs"]
    _, groups, _ = raw_get(sim, "/apis")
    assert "authorization.k8s.io" in [g["name"] for g in groups["groups"]]
    _, authz, _ = raw_get(sim, "/apis/authorization.k8s.io/v1")
    assert authz["groupVersion"] == "authorization.k8s.io/v1"
    status, agg, headers = raw_get(
        sim, "/api", accept="application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    )
    assert status == 200 and "as=APIGroupDiscoveryList" in headers["Content-Type"]
    assert agg["items"][0]["versions"][0]["version"] == "v1"
    status, _, _ = raw_get(sim, "/apis/coordination.k8s.io/v1")
    assert status == 404


# ---- auth and access ---------------------------------------------------------------------------


def test_requests_need_a_valid_token(sim: KubeSim) -> None:
    status, body, _ = raw_get(sim, "/api/v1/nodes", token=None)
    assert status == 401 and body["reason"] == "Unauthorized" and body["kind"] == "Status"
    status, _, _ = raw_get(sim, "/api/v1/nodes", token="wrong")
    assert status == 401
    status, _, _ = raw_get(sim, "/api/v1/nodes")
    assert status == 200
    tokens = [(r.path, r.token, r.status) for r in sim.requests]
    assert tokens == [
        ("/api/v1/nodes", None, 401),
        ("/api/v1/nodes", "wrong", 401),
        ("/api/v1/nodes", "sim-token", 200),
    ]
    assert sim.requests[-1].user == "sim-user"


def test_no_auth_server_accepts_anonymous() -> None:
    with KubeSim(token=None) as sim:
        sim.load(realistic_cluster())
        status, body, _ = raw_get(sim, "/api/v1/namespaces", token=None)
        assert status == 200 and len(body["items"]) == 6


def test_deny_answers_forbidden_in_rbac_words(sim: KubeSim, api: Any) -> None:
    sim.deny("create", "pods", namespace="serving")
    sim.deny("list", "nodes")
    sim.deny("create", "pods/exec", namespace="ml-lab")
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_pod("serving", lab_pod())
    body = status_of(exc.value)
    assert exc.value.status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == (
        'pods is forbidden: User "sim-user" cannot create resource "pods" in API group "" in the namespace "serving"'
    )
    with pytest.raises(ApiException) as exc:
        api.list_node()
    assert status_of(exc.value)["message"] == (
        'nodes is forbidden: User "sim-user" cannot list resource "nodes" in API group "" at the cluster scope'
    )
    # Other namespaces and verbs are not affected.
    assert api.create_namespaced_pod("ml-lab", lab_pod()).metadata.name == "nsight-lab"
    assert (
        api.read_node(api.list_namespaced_pod("serving").items[0].spec.node_name or "x", _preload_content=False).status
        == 200
    )
    # Access reviews answer from the same rules.
    authz: Any = client.AuthorizationV1Api(sim.api_client())

    def can(verb: str, resource: str, ns: str, sub: str | None = None) -> bool:
        review = authz.create_self_subject_access_review(
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {
                    "resourceAttributes": {"verb": verb, "resource": resource, "namespace": ns, "subresource": sub}
                },
            }
        )
        return bool(review.status.allowed)

    assert not can("create", "pods", "serving")
    assert can("create", "pods", "ml-lab")
    assert not can("create", "pods", "ml-lab", "exec")
    assert can("get", "pods", "serving")


# ---- create / get / errors ---------------------------------------------------------------------


def test_create_fills_server_metadata_and_defaults(sim: KubeSim, api: Any) -> None:
    before = int(api.list_namespaced_pod("ml-lab").metadata.resource_version)
    created = api.create_namespaced_pod("ml-lab", lab_pod())
    meta = created.metadata
    assert meta.namespace == "ml-lab" and meta.uid and meta.creation_timestamp is not None
    assert int(meta.resource_version) > before and meta.generation == 1
    c = created.spec.containers[0]
    assert c.resources.requests == {"cpu": "4", "memory": "24Gi", GPU_RESOURCE: "1"}
    assert created.spec.scheduler_name == "default-scheduler"
    assert created.status.phase == "Pending" and created.status.qos_class == "Guaranteed"
    again = api.create_namespaced_pod("ml-lab", {**lab_pod(), "metadata": {"generateName": "lab-"}})
    assert again.metadata.name.startswith("lab-") and len(again.metadata.name) == len("lab-") + 5
    assert int(again.metadata.resource_version) > int(meta.resource_version)
    stored = sim.get("pods", "ml-lab", "nsight-lab")
    assert stored is not None and stored["metadata"]["uid"] == meta.uid
    # kmock's store keeps every version of the object.
    assert sim.objects["v1/pods", "ml-lab", "nsight-lab"] >= {"metadata": {"uid": meta.uid}}


def test_create_errors_have_kubernetes_reasons(api: Any) -> None:
    api.create_namespaced_pod("ml-lab", lab_pod())
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_pod("ml-lab", lab_pod())
    body = status_of(exc.value)
    assert (exc.value.status, body["reason"], body["message"]) == (
        409,
        "AlreadyExists",
        'pods "nsight-lab" already exists',
    )
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_pod("no-such-ns", lab_pod())
    body = status_of(exc.value)
    assert (exc.value.status, body["reason"], body["message"]) == (404, "NotFound", 'namespaces "no-such-ns" not found')
    bad = lab_pod("bad")
    bad["spec"]["containers"] = []
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_pod("ml-lab", bad)
    body = status_of(exc.value)
    assert exc.value.status == 422 and body["reason"] == "Invalid"
    assert body["message"] == 'Pod "bad" is invalid: spec.containers: Required value'
    assert body["details"]["causes"][0]["field"] == "spec.containers"
    other_ns = lab_pod("x")
    other_ns["metadata"]["namespace"] = "serving"
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_pod("ml-lab", other_ns)
    assert exc.value.status == 400 and status_of(exc.value)["reason"] == "BadRequest"
    with pytest.raises(ApiException) as exc:
        api.read_namespaced_pod("missing", "serving")
    body = status_of(exc.value)
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "missing" not found',
        "reason": "NotFound",
        "code": 404,
        "details": {"name": "missing", "kind": "pods"},
    }


def test_dry_run_validates_without_storing(sim: KubeSim, api: Any) -> None:
    rv = sim.resource_version
    out = api.create_namespaced_pod("ml-lab", lab_pod(), dry_run="All")
    assert out.metadata.uid and sim.get("pods", "ml-lab", "nsight-lab") is None
    assert sim.resource_version == rv
    pod = sim.list("pods", "serving")[0]["metadata"]["name"]
    api.delete_namespaced_pod(pod, "serving", dry_run="All")
    assert sim.get("pods", "serving", pod) is not None


# ---- list: selectors, paging ---------------------------------------------------------------------


def test_list_shape_and_all_namespaces(sim: KubeSim) -> None:
    status, body, headers = raw_get(sim, "/api/v1/pods")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert int(body["metadata"]["resourceVersion"]) == sim.resource_version
    namespaces = {p["metadata"]["namespace"] for p in body["items"]}
    assert {"kube-system", "serving", "ml-lab"} <= namespaces
    keys = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in body["items"]]
    assert keys == sorted(keys)


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app.kubernetes.io/name=llmqu-v1-s2", {"llmqu-v1-s2-7d9f8c6b5-k8mzt", "llmqu-v1-s2-7d9f8c6b5-x2x9q"}),
        ("app.kubernetes.io/name==gateway", {"gateway-6f7c9d8b4-b9x4d", "gateway-6f7c9d8b4-r2m7c"}),
        (
            "app.kubernetes.io/name in (gateway, rerank-v2-s1)",
            {"gateway-6f7c9d8b4-b9x4d", "gateway-6f7c9d8b4-r2m7c", "rerank-v2-s1-6b8c9d7f4-n5j2r"},
        ),
        (
            "app.kubernetes.io/component=model,app.kubernetes.io/name notin (embed-v3-s1,llmqu-v1-s2)",
            {"rerank-v2-s1-6b8c9d7f4-n5j2r"},
        ),
        ("job-name", {"model-warmup-29140515-8xk2d"}),
        ("!pod-template-hash", {"model-warmup-29140515-8xk2d"}),
        (
            "app.kubernetes.io/name!=embed-v3-s1,app.kubernetes.io/component=model",
            {"llmqu-v1-s2-7d9f8c6b5-k8mzt", "llmqu-v1-s2-7d9f8c6b5-x2x9q", "rerank-v2-s1-6b8c9d7f4-n5j2r"},
        ),
    ],
)
def test_label_selectors(api: Any, selector: str, expected: set[str]) -> None:
    assert set(names(api.list_namespaced_pod("serving", label_selector=selector).items)) == expected


@pytest.mark.parametrize("selector", ["a in (b", "=x", "a,,b", "a=b=c"])
def test_bad_label_selector_is_bad_request(api: Any, selector: str) -> None:
    with pytest.raises(ApiException) as exc:
        api.list_namespaced_pod("serving", label_selector=selector)
    assert exc.value.status == 400 and status_of(exc.value)["reason"] == "BadRequest"


def test_field_selectors(sim: KubeSim, api: Any) -> None:
    node = sim.get("pods", "serving", "llmqu-v1-s2-7d9f8c6b5-x2x9q")["spec"]["nodeName"]  # type: ignore[index]
    on_node = api.list_pod_for_all_namespaces(
        field_selector=f"spec.nodeName={node},status.phase!=Failed,status.phase!=Succeeded"
    ).items
    assert set(names(on_node)) >= {"llmqu-v1-s2-7d9f8c6b5-x2x9q"}
    assert {p.spec.node_name for p in on_node} == {node}
    not_running = api.list_namespaced_pod("serving", field_selector="status.phase!=Running").items
    assert set(names(not_running)) == {"rerank-v2-s1-6b8c9d7f4-n5j2r", "model-warmup-29140515-8xk2d"}
    one = api.list_namespaced_pod("serving", field_selector="metadata.name=gateway-6f7c9d8b4-b9x4d")
    assert names(one.items) == ["gateway-6f7c9d8b4-b9x4d"]
    events = (
        core(sim)
        .list_namespaced_event(
            "serving", field_selector="involvedObject.name=rerank-v2-s1-6b8c9d7f4-n5j2r,reason=FailedScheduling"
        )
        .items
    )
    assert len(events) == 1 and events[0].message.startswith("0/10 nodes are available: 4 Insufficient nvidia.com/gpu")
    with pytest.raises(ApiException) as exc:
        api.list_namespaced_pod("serving", field_selector="spec.containers=x")
    assert exc.value.status == 400
    assert status_of(exc.value)["message"] == "field label not supported: spec.containers"


def test_paging_serves_a_consistent_snapshot(sim: KubeSim, api: Any) -> None:
    everything = names(api.list_pod_for_all_namespaces().items)
    pages: list[list[str]] = []
    token = None
    remaining = []
    while True:
        page = api.list_pod_for_all_namespaces(limit=7, _continue=token)
        pages.append(names(page.items))
        remaining.append(page.metadata.remaining_item_count)
        if len(pages) == 1:
            # Changes after the first page do not show up in later pages.
            api.create_namespaced_pod("default", lab_pod("aaa-new"))
            api.delete_namespaced_pod(
                everything[-1], sim.list("pods")[-1]["metadata"]["namespace"], grace_period_seconds=0
            )
        token = page.metadata._continue
        if not token:
            break
    assert [n for p in pages for n in p] == everything
    assert all(len(p) == 7 for p in pages[:-1]) and len(pages) == -(-len(everything) // 7)
    assert remaining[0] == len(everything) - 7 and remaining[-1] is None
    # A forgotten snapshot gives 410 Expired, as an etcd compaction would.
    first = api.list_pod_for_all_namespaces(limit=5)
    sim.faults.expire_continue_tokens()
    with pytest.raises(ApiException) as exc:
        api.list_pod_for_all_namespaces(limit=5, _continue=first.metadata._continue)
    assert exc.value.status == 410 and status_of(exc.value)["reason"] == "Expired"


# ---- watch ------------------------------------------------------------------------------------------


def read_events(resp: Any, n: int) -> list[Obj]:
    """Read ``n`` watch events from a raw (``_preload_content=False``) response."""
    events: list[Obj] = []
    buf = b""
    while len(events) < n:
        chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(1)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf and len(events) < n:
            line, buf = buf.split(b"\n", 1)
            events.append(json.loads(line))
    return events


def test_raw_watch_streams_events_as_json_lines(sim: KubeSim, api: Any) -> None:
    rv = api.list_namespaced_pod("ml-lab").metadata.resource_version
    resp = api.list_namespaced_pod(
        "ml-lab", watch=True, resource_version=rv, timeout_seconds=10, _preload_content=False
    )
    assert resp.headers["Content-Type"] == "application/json"
    api.create_namespaced_pod("ml-lab", lab_pod())
    api.patch_namespaced_pod("nsight-lab", "ml-lab", {"metadata": {"labels": {"x": "y"}}})
    events = read_events(resp, 2)
    resp.release_conn()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "nsight-lab"),
        ("MODIFIED", "nsight-lab"),
    ]
    assert events[1]["object"]["metadata"]["labels"]["x"] == "y"
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) > int(
        events[0]["object"]["metadata"]["resourceVersion"]
    )


def watch_until(fn: Any, *args: Any, last: str = "zz-end", **kwargs: Any) -> list[tuple[str, str]]:
    """Watch until an event about the object named ``last`` arrives; (type, name) pairs."""
    w = new_watch()
    seen: list[tuple[str, str]] = []
    for event in w.stream(fn, *args, timeout_seconds=20, **kwargs):
        seen.append((event["type"], event["object"].metadata.name))
        if seen[-1][1] == last:
            w.stop()
    return seen


def test_watch_path_form_for_one_object(sim: KubeSim, api: Any) -> None:
    rv = api.list_namespaced_pod("ml-lab").metadata.resource_version
    api.create_namespaced_pod("ml-lab", lab_pod("other"))
    api.create_namespaced_pod("ml-lab", lab_pod())
    http = urllib3.PoolManager(ca_certs=sim.ca_file)
    resp = http.request(
        "GET",
        f"{sim.url}/api/v1/watch/namespaces/ml-lab/pods/nsight-lab?resourceVersion={rv}&timeoutSeconds=10",
        headers={"Authorization": f"Bearer {sim.token}"},
        preload_content=False,
    )
    events = read_events(resp, 1)
    resp.release_conn()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "nsight-lab")]


def test_watch_resumes_after_a_resource_version(sim: KubeSim, api: Any) -> None:
    rv = api.list_namespaced_pod("ml-lab").metadata.resource_version
    api.create_namespaced_pod("ml-lab", lab_pod())
    api.patch_namespaced_pod("nsight-lab", "ml-lab", {"metadata": {"labels": {"step": "2"}}})
    api.delete_namespaced_pod("nsight-lab", "ml-lab")
    api.create_namespaced_pod("ml-lab", lab_pod("zz-end"))
    assert watch_until(api.list_namespaced_pod, "ml-lab", resource_version=rv) == [
        ("ADDED", "nsight-lab"),
        ("MODIFIED", "nsight-lab"),
        ("DELETED", "nsight-lab"),
        ("ADDED", "zz-end"),
    ]


def test_watch_without_resource_version_starts_with_current_objects(api: Any) -> None:
    api.create_namespaced_pod("ml-lab", lab_pod("zz-end"))
    assert watch_until(api.list_namespaced_pod, "ml-lab") == [("ADDED", "gpu-smoke-test"), ("ADDED", "zz-end")]


def test_watch_from_a_compacted_resource_version_is_gone(sim: KubeSim, api: Any) -> None:
    rv = api.list_namespaced_pod("ml-lab").metadata.resource_version
    api.create_namespaced_pod("ml-lab", lab_pod())
    sim.faults.compact()
    resp = api.list_namespaced_pod("ml-lab", watch=True, resource_version=rv, _preload_content=False)
    events = read_events(resp, 1)
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"
    with pytest.raises(ApiException) as exc:
        list(new_watch().stream(api.list_namespaced_pod, "ml-lab", resource_version=rv))
    assert exc.value.status == 410


def _watch_in_thread(fn: Any, *args: Any, **kwargs: Any) -> tuple[threading.Thread, list[Any]]:
    seen: list[Any] = []

    def run() -> None:
        for event in new_watch().stream(fn, *args, **kwargs):
            seen.append((event["type"], event["object"].metadata.name))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, seen


def test_watch_timeout_seconds_ends_the_stream(api: Any) -> None:
    t, seen = _watch_in_thread(api.list_namespaced_pod, "ml-lab", resource_version="0", timeout_seconds=1)
    t.join(20)
    assert not t.is_alive()
    assert seen == [("ADDED", "gpu-smoke-test")]


def test_close_watches_ends_open_streams(sim: KubeSim, api: Any) -> None:
    rv = api.list_node().metadata.resource_version
    t, seen = _watch_in_thread(api.list_node, resource_version=rv, timeout_seconds=120)
    node = sim.list("nodes")[0]
    sim.wait_until(lambda: sim.open_watches == 1, what="the watch to open")
    sim.put({**node, "metadata": {**node["metadata"], "labels": {**node["metadata"]["labels"], "drained": "yes"}}})
    assert sim.faults.close_watches() == 1
    t.join(20)
    assert not t.is_alive()
    assert seen == [("MODIFIED", node["metadata"]["name"])]


def test_watch_with_selector_sees_objects_leave_and_enter(sim: KubeSim, api: Any) -> None:
    api.create_namespaced_pod("ml-lab", lab_pod())
    rv = api.list_namespaced_pod("ml-lab").metadata.resource_version
    api.patch_namespaced_pod("nsight-lab", "ml-lab", {"metadata": {"labels": {"purpose": "other"}}})
    api.patch_namespaced_pod("nsight-lab", "ml-lab", {"metadata": {"labels": {"purpose": "nsight-learning"}}})
    api.create_namespaced_pod("ml-lab", lab_pod("not-selected") | {"metadata": {"name": "not-selected"}})
    api.create_namespaced_pod("ml-lab", lab_pod("zz-end"))
    assert watch_until(
        api.list_namespaced_pod, "ml-lab", resource_version=rv, label_selector="purpose=nsight-learning"
    ) == [("DELETED", "nsight-lab"), ("ADDED", "nsight-lab"), ("ADDED", "zz-end")]


# ---- update, patch, delete --------------------------------------------------------------------------


def test_patch_types_and_status_subresource(sim: KubeSim, api: Any) -> None:
    api.create_namespaced_pod("ml-lab", lab_pod())
    # strategic merge: containers merge by name
    api.patch_namespaced_pod("nsight-lab", "ml-lab", {"spec": {"containers": [{"name": "lab", "image": "img:2"}]}})
    pod = api.read_namespaced_pod("nsight-lab", "ml-lab")
    assert pod.spec.containers[0].image == "img:2" and pod.spec.containers[0].command == ["sleep", "infinity"]
    # JSON patch
    api.patch_namespaced_pod(
        "nsight-lab",
        "ml-lab",
        [
            {"op": "add", "path": "/metadata/labels/jp", "value": "1"},
            {"op": "remove", "path": "/metadata/labels/purpose"},
        ],
    )
    assert sim.requests[-1].headers["Content-Type"] == "application/json-patch+json"
    labels = sim.get("pods", "ml-lab", "nsight-lab")["metadata"]["labels"]  # type: ignore[index]
    assert labels == {"jp": "1"}
    # status goes through /status only
    api.patch_namespaced_pod("nsight-lab", "ml-lab", {"status": {"phase": "Running"}})
    assert api.read_namespaced_pod("nsight-lab", "ml-lab").status.phase == "Pending"
    api.patch_namespaced_pod_status("nsight-lab", "ml-lab", {"status": {"phase": "Running"}})
    assert api.read_namespaced_pod_status("nsight-lab", "ml-lab").status.phase == "Running"
    # PUT with a stale resourceVersion conflicts
    current = api.read_namespaced_pod("nsight-lab", "ml-lab")
    stale = api.api_client.sanitize_for_serialization(current)
    api.patch_namespaced_pod("nsight-lab", "ml-lab", {"metadata": {"labels": {"bump": "1"}}})
    with pytest.raises(ApiException) as exc:
        api.replace_namespaced_pod("nsight-lab", "ml-lab", stale)
    body = status_of(exc.value)
    assert exc.value.status == 409 and body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on pods "nsight-lab": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
    history = sim.history("pods", "ml-lab", "nsight-lab")
    assert len(history) >= 5 and history[0]["spec"]["containers"][0]["image"].endswith("1.0-1")  # type: ignore[index]


def test_graceful_pod_delete_marks_then_removes(sim: KubeSim, api: Any) -> None:
    name = "llmqu-v1-s2-7d9f8c6b5-x2x9q"
    uid = sim.get("pods", "serving", name)["metadata"]["uid"]  # type: ignore[index]
    with pytest.raises(ApiException) as exc:
        api.delete_namespaced_pod(
            name, "serving", body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-" + uid))
        )
    body = status_of(exc.value)
    assert exc.value.status == 409 and body["message"] == (
        f'Operation cannot be fulfilled on pods "{name}": Precondition failed: UID in precondition: '
        f"not-{uid}, UID in object meta: {uid}"
    )
    rv = api.list_namespaced_pod("serving").metadata.resource_version
    out = api.delete_namespaced_pod(
        name, "serving", body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid))
    )
    assert out.metadata.deletion_timestamp is not None and out.metadata.deletion_grace_period_seconds == 60
    seen: list[tuple[str, bool]] = []
    w = new_watch()
    for e in w.stream(
        api.list_namespaced_pod,
        "serving",
        resource_version=rv,
        timeout_seconds=20,
        field_selector=f"metadata.name={name}",
    ):
        seen.append((e["type"], e["object"].metadata.deletion_timestamp is not None))
        if e["type"] == "DELETED":
            w.stop()
    assert seen == [("MODIFIED", True), ("DELETED", True)]
    assert sim.get("pods", "serving", name) is None


def test_delete_collection_by_label(sim: KubeSim, api: Any) -> None:
    for i in range(3):
        api.create_namespaced_pod("ml-lab", lab_pod(f"lab-{i}"))
    api.delete_collection_namespaced_pod("ml-lab", label_selector="purpose=nsight-learning")
    assert names(api.list_namespaced_pod("ml-lab").items) == ["gpu-smoke-test"]


def test_namespace_delete_terminates_then_removes_contents(sim: KubeSim, api: Any) -> None:
    api.create_namespace({"metadata": {"name": "scratch"}})
    assert api.read_namespace("scratch").status.phase == "Active"
    api.create_namespaced_config_map("scratch", {"metadata": {"name": "cm"}, "data": {"a": "b"}})
    api.delete_namespace("scratch")
    assert api.read_namespace("scratch").status.phase == "Terminating"
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_config_map("scratch", {"metadata": {"name": "cm2"}})
    assert exc.value.status == 403
    sim.wait_for("namespaces", None, "scratch", lambda ns: ns is None)
    assert sim.get("configmaps", "scratch", "cm") is None


# ---- logs, tables, events ----------------------------------------------------------------------------


def test_pod_log(sim: KubeSim, api: Any) -> None:
    sim.append_log("ml-lab", "gpu-smoke-test", "one\ntwo\nthree\n")
    assert api.read_namespaced_pod_log("gpu-smoke-test", "ml-lab") == "one\ntwo\nthree\n"
    assert api.read_namespaced_pod_log("gpu-smoke-test", "ml-lab", tail_lines=1) == "three\n"
    two = sim.get("pods", "serving", "llmqu-v1-s2-7d9f8c6b5-x2x9q")
    assert two is not None
    two["spec"]["containers"].append({**two["spec"]["containers"][0], "name": "probe"})
    sim.put(two)
    with pytest.raises(ApiException) as exc:
        api.read_namespaced_pod_log("llmqu-v1-s2-7d9f8c6b5-x2x9q", "serving")
    assert status_of(exc.value)["message"] == (
        "a container name must be specified for pod llmqu-v1-s2-7d9f8c6b5-x2x9q, choose one of: "
        "[model-server probe] or one of the init containers: [fetch-model model-runtime]"
    )
    sim.append_log("serving", "llmqu-v1-s2-7d9f8c6b5-x2x9q", "ready\n", container="model-runtime")
    assert api.read_namespaced_pod_log("llmqu-v1-s2-7d9f8c6b5-x2x9q", "serving", container="model-runtime") == "ready\n"
    with pytest.raises(ApiException) as exc:
        api.read_namespaced_pod_log("rerank-v2-s1-6b8c9d7f4-n5j2r", "serving", container="model-server")
    assert status_of(exc.value)["message"] == (
        'container "model-server" in pod "rerank-v2-s1-6b8c9d7f4-n5j2r" is waiting to start: ContainerCreating'
    )


def test_server_side_tables(sim: KubeSim) -> None:
    _, table, _ = raw_get(sim, "/api/v1/namespaces/serving/pods?includeObject=None", accept=TABLE)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
        "IP",
        "Node",
        "Nominated Node",
        "Readiness Gates",
    ]
    rows = {r["cells"][0]: r for r in table["rows"]}
    assert rows["llmqu-v1-s2-7d9f8c6b5-x2x9q"]["cells"][1:3] == ["2/2", "Running"]
    assert rows["llmqu-v1-s2-7d9f8c6b5-k8mzt"]["cells"][3].startswith("2 (")
    assert rows["rerank-v2-s1-6b8c9d7f4-n5j2r"]["cells"][1:3] == ["0/2", "Pending"]
    assert rows["model-warmup-29140515-8xk2d"]["cells"][2] == "Completed"
    assert "object" not in rows["rerank-v2-s1-6b8c9d7f4-n5j2r"]
    _, nodes, _ = raw_get(sim, "/api/v1/nodes?includeObject=Object", accept=TABLE)
    assert [c["name"] for c in nodes["columnDefinitions"]][:5] == ["Name", "Status", "Roles", "Age", "Version"]
    assert nodes["rows"][0]["object"]["kind"] == "Node"
    assert nodes["rows"][0]["cells"][1] == "Ready"
    _, one, _ = raw_get(sim, "/api/v1/namespaces/serving", accept=TABLE)
    assert one["rows"][0]["cells"][:2] == ["serving", "Active"]
    assert one["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_record_event_counts_repeats(sim: KubeSim, api: Any) -> None:
    pod = sim.get("pods", "ml-lab", "gpu-smoke-test")
    assert pod is not None
    sim.record_event(pod, "Pulling", 'Pulling image "x"')
    sim.record_event(pod, "Pulling", 'Pulling image "x"')
    events = api.list_namespaced_event("ml-lab", field_selector="involvedObject.name=gpu-smoke-test").items
    assert len(events) == 1 and events[0].count == 2 and events[0].involved_object.uid == pod["metadata"]["uid"]


# ---- server lifecycle, TLS, exec credentials, kmock ------------------------------------------------


def test_stop_and_start_keeps_port_and_objects(sim: KubeSim) -> None:
    url = sim.url
    core(sim).create_namespaced_pod("ml-lab", lab_pod())
    sim.stop()
    sim.start()
    assert sim.url == url
    assert "nsight-lab" in names(core(sim).list_namespaced_pod("ml-lab").items)


def test_tls_needs_the_ca(sim: KubeSim, kubeconfig: Path) -> None:
    assert sim.url.startswith("https://") and sim.ca_file and Path(sim.ca_file).is_file()
    api = client.CoreV1Api(client_from(kubeconfig, "stg-online-use1"))
    assert len(api.list_node().items) == 10
    cfg = client.Configuration()
    cfg.host = sim.url
    cfg.api_key = {"authorization": "Bearer sim-token"}
    cfg.retries = 0
    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
        client.CoreV1Api(client.ApiClient(cfg)).list_node()


def test_exec_credential_plugin_is_run_by_the_client(sim: KubeSim, tmp_path: Path) -> None:
    path = sim.write_kubeconfig(tmp_path / "kubeconfig", {"stg-online-use1": {"namespace": "serving"}}, auth="exec")
    api = client.CoreV1Api(client_from(path, "stg-online-use1"))
    assert len(api.list_namespaced_pod("serving").items) > 0
    runs = [json.loads(line) for line in sim.exec_log.read_text().splitlines()]
    assert runs and runs[0]["cluster"] == "stg-online-use1"
    last = sim.requests[-1]
    assert last.token == sim.exec_token and last.user == "sim-exec-user"


def test_kmock_reactions_take_precedence(sim: KubeSim, api: Any) -> None:
    (
        sim.emulator["get /api/v1/nodes"][:1]
        << 503
        << {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "ServiceUnavailable", "code": 503}
    )
    with pytest.raises(ApiException) as exc:
        api.list_node()
    assert exc.value.status == 503
    assert len(api.list_node().items) == 10  # the reaction was for one request only
    assert len(list(sim.emulator[kmock.resource("v1/nodes")])) == 2


def test_no_server_errors_after_a_busy_test(sim: KubeSim, api: Any) -> None:
    api.create_namespaced_pod("ml-lab", lab_pod())
    api.list_pod_for_all_namespaces(label_selector="x in (a,b)", field_selector="status.phase=Running")
    api.delete_namespaced_pod("nsight-lab", "ml-lab", grace_period_seconds=0)
    assert sim.server_errors == []


@pytest.fixture
def many_pods_sim() -> Iterator[KubeSim]:
    with KubeSim() as server:
        server.load(generate_cluster(nodes=200, pods=2000, seed=3))
        yield server


def test_big_cluster_pages(many_pods_sim: KubeSim) -> None:
    api = core(many_pods_sim)
    total, token = 0, None
    while True:
        resp = api.list_pod_for_all_namespaces(limit=500, _continue=token, _preload_content=False)
        body = json.loads(resp.data)
        total += len(body["items"])
        token = body["metadata"].get("continue")
        if not token:
            break
    assert total == 2000


def test_reset_forgets_everything_but_the_server(sim: KubeSim, api: Any) -> None:
    url = sim.url
    api.create_namespaced_pod("ml-lab", lab_pod())
    sim.deny("list", "nodes")
    sim.append_log("ml-lab", "gpu-smoke-test", "x\n")
    sim.reset(realistic_cluster())
    assert sim.url == url and sim.requests == []
    assert sim.get("pods", "ml-lab", "nsight-lab") is None
    assert len(api.list_node().items) == 10
    assert api.read_namespaced_pod_log("gpu-smoke-test", "ml-lab") == ""
