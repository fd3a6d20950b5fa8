"""`nsightlab pack` against the test API server: GPU serving workloads with real-looking
specs (a native sidecar, engine flags in args) and container logs holding real vLLM
start-up lines (kubesim/_serving.py). Read-only (GET requests only, no access reviews),
on any context; namespace permissions suffice; every way a log goes wrong is a note."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from clirun import Result, run_cli
from conftest import PRD_CONTEXT, STG_CONTEXT
from kubesim import KubeSim, load_serving
from kubesim._serving import BIG, CHAT, CHAT_PODS, CHAT_RS

from nsightlab.analysis.pack_plan import PackReport
from nsightlab.cluster import pack_reads as reads
from nsightlab.cluster.permissions import LAB_PERMISSIONS
from nsightlab.runs import store
from nsightlab.runs.store import RunMeta
from nsightlab.runs.sweeps import analyze_record_file
from nsightlab.specs import gpus

NS = "serving"
LOGS = Path(__file__).resolve().parent / "data" / "vllm_logs"
EMBED_POD = "embed-v3-s1-5c6d7b8f9-h4k9m"  # the first of embed-v3-s1's pods by name: its log is read
TARGET = ("--target-concurrency", "8", "--max-len", "4096", "--step-ms", "5")


@pytest.fixture
def served(sim: KubeSim, nsl_home: Path) -> KubeSim:
    load_serving(sim)
    return sim


def pack(capsys: pytest.CaptureFixture[str], kubeconfig: Path, *args: str, context: str = STG_CONTEXT) -> Result:
    return run_cli(capsys, "pack", "--context", context, "--kubeconfig", str(kubeconfig), *args)


def pack_json(capsys: pytest.CaptureFixture[str], kubeconfig: Path, *args: str) -> dict[str, Any]:
    r = pack(capsys, kubeconfig, "--json", *args)
    assert r.code == 0, r
    report: dict[str, Any] = json.loads(r.out)
    return report


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["name"]: w for w in report["workloads"]}


def test_pack_sizes_every_gpu_workload_of_the_namespace(
    capsys: pytest.CaptureFixture[str], served: KubeSim, kubeconfig: Path
) -> None:
    served.clear_requests()
    report = pack_json(capsys, kubeconfig, *TARGET)
    PackReport.model_validate(report)
    assert (report["kind"], report["context"], report["namespace"]) == ("pack", STG_CONTEXT, NS)
    w = by_name(report)
    assert sorted(w) == [BIG, CHAT, "embed-v3-s1", "llmqu-v1-s2", "rerank-v2-s1"]
    chat = w[CHAT]
    # held: its Deployment (through its ReplicaSet), 2 pods of 1 H100 each, the sidecar's flags
    assert (chat["owner_kind"], chat["pods"], chat["gpus"], chat["gpus_per_pod"]) == ("Deployment", 2, 2, 1)
    assert chat["gpu_type"] == "NVIDIA H100 80GB HBM3" and chat["gpu_source"] == "node labels"
    assert chat["held_gib"] == pytest.approx(81559 / 1024)
    assert (chat["engine"], chat["container"]) == ("vllm", "vllm")
    assert chat["engine_flags"] == {
        "model": "Qwen/Qwen3-0.6B",
        "gpu_memory_utilization": 0.8,
        "max_model_len": 8192,
        "max_num_seqs": 64,
    }
    assert chat["reserved_gib"] == 63.35  # total x utilization, as its log says
    # needed: the log's own accounting, KV at 8 x 4096
    n = chat["needed"]
    assert n["source"] == "log" and (n["weights_gib"], n["activation_gib"], n["graphs_gib"], n["other_gib"]) == (
        1.12,
        0.23,
        0.13,
        0.16,
    )
    assert n["kv_bytes_per_token"] == pytest.approx(61.84 * (1 << 30) / 578944)
    assert n["kv_gib"] == pytest.approx(n["kv_bytes_per_token"] * 8 * 4096 / (1 << 30))
    assert n["total_gib"] == pytest.approx(1.12 + 0.23 + 0.13 + 0.16 + n["kv_gib"])
    # bandwidth: the H100's spec (nothing measured here); the floor of a step at the target
    assert chat["bandwidth"]["basis"] == "spec" and chat["bandwidth"]["tbps"] == 3.35
    assert chat["floor_ms"] == pytest.approx((1.12 + n["kv_gib"]) * (1 << 30) / 3.35e12 * 1e3)
    # CPU: 7 per pod (sidecar 6 + router 1), vLLM's minimum 2 + 1 cores, the p5's 190 CPU over 8 GPUs
    assert chat["cpu"] == {
        "requested": 7.0,
        "engine_minimum": 3,
        "engine_minimum_vcpus": 6,
        "node_allocatable": 189.99,
        "copies_per_gpu": 3,
        "tokenizer_tokens_per_s": None,
        "tokenizer_run": None,
    }
    modes = {(m["mode"], m["profile"]): m for m in chat["modes"]}
    assert set(modes) >= {
        ("whole", None),
        ("time-slicing", None),
        ("mps", None),
        ("mig", "1g.10gb"),
        ("mig", "7g.80gb"),
    }
    assert (modes["mig", "1g.10gb"]["copies"], modes["mig", "1g.10gb"]["binding"]) == (0, "bandwidth")
    assert chat["best"]["mode"] == "mps" and chat["best"]["copies"] == 3 and chat["gpus_needed"] == 1
    assert any("--kv-cache-memory-bytes=" in s for s in chat["settings"])
    assert any("#55827" in s for s in chat["settings"])
    # the others: each a clean note, each counted as needing what it holds
    assert w[BIG]["gpus_per_pod"] == 2 and w[BIG]["owner_kind"] == "StatefulSet" and w[BIG]["modes"] == []
    assert w["rerank-v2-s1"]["gpus"] == 0  # Pending: holds nothing
    assert w["embed-v3-s1"]["needed"]["source"] == "missing" and w["embed-v3-s1"]["gpus_needed"] == 3
    notes = "\n".join(report["notes"])
    assert f"{BIG}: each pod holds 2 GPUs (tensor parallel 2): a model split over GPUs is not packed here" in notes
    assert "embed-v3-s1: the log of embed-v3-s1-5c6d7b8f9-h4k9m (model-runtime) holds no start-up accounting" in notes
    assert "rerank-v2-s1: 1 pod not on a node yet (rerank-v2-s1-6b8c9d7f4-n5j2r): it holds no GPU" in notes
    assert "models: {llmqu-v1-s2: {weights_gib" in notes  # how to give what its log lacks
    assert report["plan"]["gpus_now"] == 9 and report["plan"]["gpus_needed"] == 8
    # read-only: GET only, no access review, nothing changed
    assert {q.method for q in served.requests} == {"GET"}
    assert not [q for q in served.requests if "authorization.k8s.io" in q.path]
    logs = [q for q in served.requests if q.path.endswith("/log")]
    assert logs and all(int(q.query["limitBytes"]) == reads.LOG_CAP + 1 for q in logs)


def test_pack_prints_tables_the_plan_and_says_it_changed_nothing(
    capsys: pytest.CaptureFixture[str], served: KubeSim, kubeconfig: Path
) -> None:
    r = pack(capsys, kubeconfig, "--match", "chat", *TARGET)
    assert r.code == 0, r
    assert r.out.startswith(
        "1 GPU workload matching 'chat' in namespace serving (context stg-online-use1): 2 GPUs held"
    )
    for title in ("Held vs needed, per GPU", "Needed, per GPU", "Bandwidth", "Copies per GPU", "Plan:"):
        assert title in r.out
    assert "chat-vllm  mps *" in r.out and "Per-copy settings to ask for" in r.out
    assert r.out.rstrip().endswith("it changed no node, pod or deployment")
    assert "embed" not in r.out


def test_pack_reads_a_protected_context(capsys: pytest.CaptureFixture[str], served: KubeSim, kubeconfig: Path) -> None:
    r = pack(capsys, kubeconfig, "--json", context=PRD_CONTEXT)
    assert r.code == 0, r
    assert json.loads(r.out)["context"] == PRD_CONTEXT


def test_models_in_config_give_what_the_log_lacks(
    capsys: pytest.CaptureFixture[str], served: KubeSim, kubeconfig: Path, nsl_home: Path
) -> None:
    nsl_home.mkdir(parents=True, exist_ok=True)
    (nsl_home / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "models": {
                    # llmqu's log (Triton with vLLM inside) has weights and KV tokens, no KV memory: the shape gives it
                    "llmqu-v1-s2": {
                        "layers": 32,
                        "kv_heads": 8,
                        "head_dim": 128,
                        "activation_gib": 1.5,
                        "other_gib": 0.4,
                        "graphs_gib": 0.5,
                        "target_concurrency": 16,
                        "max_len": 4096,
                    },
                    # embed's log says nothing: all of it from here
                    "embed-v3-s1": {
                        "weights_gib": 1.2,
                        "layers": 24,
                        "kv_heads": 16,
                        "head_dim": 64,
                        "target_concurrency": 32,
                        "max_len": 512,
                    },
                },
                "prices": {"g7e.8xlarge": 3.14},
            }
        )
    )
    w = by_name(pack_json(capsys, kubeconfig, "--step-ms", "40"))
    q = w["llmqu-v1-s2"]
    assert q["needed"]["source"] == "config" and q["needed"]["weights_gib"] == 14.9889
    assert q["needed"]["origins"]["weights_gib"] == "log" and q["needed"]["origins"]["kv_bytes_per_token"] == "config"
    assert q["needed"]["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2
    assert q["needed"]["kv_gib"] == pytest.approx(131072 * 16 * 4096 / (1 << 30))
    assert q["gpu_type"] == gpus.BY_KEY["rtx-pro-6000-server"].name and q["engine"] == "triton"
    assert [m["profile"] for m in q["modes"] if m["mode"] == "mig"] == ["1g.24gb", "2g.48gb", "4g.96gb"]
    assert q["best"]["copies"] >= 2 and q["gpus_needed"] == 1
    e = w["embed-v3-s1"]
    assert e["needed"]["source"] == "config" and e["gpu_type"] == "NVIDIA L4"
    assert [m["mode"] for m in e["modes"]] == ["whole", "time-slicing", "mps"]  # the L4 has no MIG


def test_prices_give_dollars_and_what_if_other_types(
    capsys: pytest.CaptureFixture[str], served: KubeSim, kubeconfig: Path, nsl_home: Path
) -> None:
    nsl_home.mkdir(parents=True, exist_ok=True)
    (nsl_home / "config.yaml").write_text("prices: {p5.48xlarge: 98.32, g6.xlarge: 0.805, g7e.8xlarge: 3.14}\n")
    report = pack_json(capsys, kubeconfig, "--match", "chat", *TARGET, "--what-if", "g6.xlarge,g7e.8xlarge,h9.xlarge")
    (line,) = report["plan"]["workloads"]
    assert line["usd_per_gpu_hour"] == pytest.approx(98.32 / 8)
    assert line["usd_per_hour_saved"] == pytest.approx(98.32 / 8) == report["plan"]["usd_per_hour_saved"]
    what = {x["instance_type"]: x for x in report["what_if"]}
    assert what["g6.xlarge"]["gpu_type"] == "NVIDIA L4" and what["g6.xlarge"]["usd_per_gpu_hour"] == 0.805
    # the RTX PRO 6000's 1.6 TB/s: one copy's floor is 3.1 ms of the 5 ms to keep: bandwidth binds at one copy
    g7e = {(m["mode"], m["profile"]): m for m in what["g7e.8xlarge"]["modes"]}
    assert (g7e["time-slicing", None]["copies"], g7e["time-slicing", None]["binding"]) == (1, "bandwidth")
    assert what["g7e.8xlarge"]["best"]["mode"] == "whole" and what["g7e.8xlarge"]["usd_per_hour"] == 2 * 3.14
    assert what["h9.xlarge"]["modes"] == [] and what["h9.xlarge"]["gpus_needed"] is None
    assert "--what-if h9.xlarge: its GPU is not in the spec table: no copies computed" in report["notes"]


def test_a_stored_sweep_gives_the_measured_plateau(
    capsys: pytest.CaptureFixture[str], served: KubeSim, kubeconfig: Path, nsl_home: Path, tmp_path: Path
) -> None:
    """The tutorial's RTX PRO 6000 sweep in the store: llmqu's floor divides by its 1.46 TB/s, not the spec."""
    ref = gpus.REFERENCE_SWEEPS["tutorial-rtx-pro-6000"].as_sweep_json()
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(ref))
    result = analyze_record_file(path)
    run, run_id = store.new_run("sweep", "float16")
    result.run_id = run_id
    run.write_meta(
        RunMeta(
            id=run_id,
            kind="sweep",
            name="float16",
            created=datetime.now(timezone.utc),
            target="pod x",
            gpu=ref["device"]["name"],
            device=ref["device"]["name"],
            device_type="cuda",
        )
    )
    run.write_result(result)
    q = by_name(pack_json(capsys, kubeconfig, "--match", "llmqu"))["llmqu-v1-s2"]
    assert q["bandwidth"]["basis"] == "measured" and q["bandwidth"]["tbps"] == pytest.approx(1.46, abs=0.01)
    assert run_id in q["bandwidth"]["label"]


def test_pack_with_namespace_permissions_only(
    capsys: pytest.CaptureFixture[str], served: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user bound to the lab's Role (pods, pods/log; no ReplicaSets, no nodes) in serving."""
    rules: dict[str, list[str]] = {}
    for p in LAB_PERMISSIONS:
        rules.setdefault(f"{p.resource}/{p.subresource}" if p.subresource else p.resource, []).append(p.verb)
    served.enable_rbac()
    served.load(
        [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "lab", "namespace": NS},
                "rules": [{"apiGroups": [""], "resources": [r], "verbs": v} for r, v in rules.items()],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "lab", "namespace": NS},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lab"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "ana"}],
            },
        ]
    )
    token = served.add_user("ana")
    kc = served.write_kubeconfig(tmp_path / "kc", {"team": {"namespace": NS, "token": token, "user": "ana"}})
    served.clear_requests()
    r = run_cli(capsys, "pack", "--context", "team", "--kubeconfig", str(kc), "--json", *TARGET)
    assert r.code == 0, r
    w = by_name(json.loads(r.out))
    # its ReplicaSet could not be read: the workload is named by it; the GPU from the nodeSelector
    assert CHAT not in w and w[CHAT_RS]["owner_kind"] == "ReplicaSet"
    assert w[CHAT_RS]["gpu_source"] == "nodeSelector and the spec table" and w[CHAT_RS]["held_gib"] == 80.0
    assert w[CHAT_RS]["needed"]["source"] == "log" and w[CHAT_RS]["cpu"]["node_allocatable"] is None
    assert r.err.count("cannot get replicaset") == 1 and r.err.count("cannot get node") == 1
    assert "(forbidden): workloads are named by their ReplicaSet" in r.err
    assert {q.method for q in served.requests} == {"GET"}
    assert {q.user for q in served.requests} == {"ana"}


def test_a_huge_log_is_read_bounded(
    capsys: pytest.CaptureFixture[str], served: KubeSim, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Start-up lines after megabytes of other lines: read up to the cap (lowered here) and no
    further, and said; under a cap that reaches them they are read, and reading stops there."""
    filler = "INFO 08-06 10:20:01 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Running: 1 reqs\n"
    engine = (LOGS / "v0.7_single-gpu_mellea-416.log").read_text()
    served.append_log(NS, EMBED_POD, filler * 40_000 + engine, container="model-runtime")  # ~4 MiB, then vLLM
    monkeypatch.setattr(reads, "LOG_CAP", 256 << 10)
    served.clear_requests()
    report = pack_json(capsys, kubeconfig, "--match", "embed")
    e = by_name(report)["embed-v3-s1"]
    assert e["needed"]["source"] == "missing"
    assert (
        f"embed-v3-s1: the log of {EMBED_POD} (model-runtime) holds no start-up accounting of vLLM in its first "
        "0.25 MiB (read no further)" in report["notes"]
    )
    (q,) = [q for q in served.requests if q.path.endswith("/log")]
    assert q.query == {"container": "model-runtime", "limitBytes": str((256 << 10) + 1)}
    monkeypatch.setattr(reads, "LOG_CAP", 8 << 20)
    e = by_name(pack_json(capsys, kubeconfig, "--match", "embed", *TARGET))["embed-v3-s1"]
    assert e["needed"]["source"] == "log" and e["needed"]["weights_gib"] == 1.12


def test_absurd_figures_in_a_log_are_notes_not_a_plan(
    capsys: pytest.CaptureFixture[str], served: KubeSim, kubeconfig: Path
) -> None:
    served.append_log(
        NS,
        "llmqu-v1-s2-7d9f8c6b5-k8mzt",
        "INFO 04-24 16:33:13 [gpu_worker.py:298] Available KV cache memory: 123456789.00 GiB\n"
        "INFO 04-24 16:33:14 [kv_cache_utils.py:634] GPU KV cache size: -5 tokens\n",
        container="model-runtime",
    )
    report = pack_json(capsys, kubeconfig, "--match", "llmqu", *TARGET)
    q = by_name(report)["llmqu-v1-s2"]
    assert q["needed"]["source"] == "missing" and q["modes"] == [] and q["gpus_needed"] == q["gpus"] == 2
    assert (
        "llmqu-v1-s2: its log: the KV cache memory 123456789.00 GiB is more than any device holds (1024 GiB): not used"
        in report["notes"]
    )


def test_a_log_that_cannot_be_read_yet_is_a_note(
    capsys: pytest.CaptureFixture[str], served: KubeSim, kubeconfig: Path
) -> None:
    for p in (CHAT_PODS[0], CHAT_PODS[1]):
        pod = served.get("pods", NS, p)
        assert pod is not None
        for cs in pod["status"]["initContainerStatuses"]:
            if cs["name"] == "vllm":
                cs["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}
                cs["lastState"] = {}
        served.put(pod)
    report = pack_json(capsys, kubeconfig, "--match", "chat", *TARGET)
    assert by_name(report)[CHAT]["needed"]["source"] == "missing"
    assert any("container vllm of pod" in n and "has not started (CrashLoopBackOff)" in n for n in report["notes"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--what-if", "g6.xlarge,not a type"), "--what-if takes instance types separated by commas"),
        (("--target-concurrency", "0"), "--target-concurrency"),
        (("--step-ms", "nan"), "--step-ms"),
        (("--decode-run", "ffffff"), "no run matches 'ffffff'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], served: KubeSim, kubeconfig: Path, args: tuple[str, ...], message: str
) -> None:
    r = pack(capsys, kubeconfig, *args)
    assert r.code == 2, r
    assert message in r.err and len(r.err.strip().splitlines()) <= 2 and "Traceback" not in r.err


def test_a_bad_models_entry_names_the_key(
    capsys: pytest.CaptureFixture[str], served: KubeSim, kubeconfig: Path, nsl_home: Path
) -> None:
    nsl_home.mkdir(parents=True, exist_ok=True)
    (nsl_home / "config.yaml").write_text("models:\n  chat-vllm:\n    weights_gib: .inf\n    kv_head: 8\n")
    r = pack(capsys, kubeconfig)
    assert r.code == 2, r
    assert "config.yaml:3: bad value for 'models.chat-vllm.weights_gib'" in r.err


def test_an_empty_or_missing_namespace(capsys: pytest.CaptureFixture[str], served: KubeSim, kubeconfig: Path) -> None:
    report = pack_json(capsys, kubeconfig, "-n", "kube-public")
    assert report["workloads"] == [] and report["plan"]["gpus_now"] == 0
    assert report["notes"] == ["no pod in namespace kube-public holds a GPU"]
    r = pack(capsys, kubeconfig, "-n", "nope")
    assert r.code == 4 and "namespace 'nope' does not exist on context 'stg-online-use1'" in r.err


def test_pack_help_has_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    for path in (["pack"], ["pack", "colocate"], ["pack", "tokenizer"]):
        r = run_cli(capsys, *path, "--help")
        assert r.code == 0 and "Example" in r.out and "nsightlab pack" in r.out.split("Example", 1)[1], path


def test_the_step_to_keep_from_a_stored_decode_run(
    capsys: pytest.CaptureFixture[str], served: KubeSim, kubeconfig: Path, nsl_home: Path
) -> None:
    """decode.py's real JSON (tests/data) stored as a decode run: its median step at the largest batch up to the
    target concurrency is the step each copy keeps."""
    from nsightlab.parse.records.decode_record import load_decode_record
    from nsightlab.runs.trace_files import decode_build

    record = load_decode_record(Path(__file__).resolve().parent / "data" / "decode_cpu_tiny_xeon-2c.json")
    assert record is not None
    build = decode_build(record, None, no_trace_reason="stored by the test")
    run, run_id = store.new_run("decode", "tiny")
    build.result.run_id = run_id
    run.write_meta(
        RunMeta(
            id=run_id,
            kind="decode",
            name="tiny",
            created=datetime.now(timezone.utc),
            target="this machine",
            device_type="cpu",
        )
    )
    run.write_result(build.result)
    report = pack_json(
        capsys, kubeconfig, "--match", "chat", "--target-concurrency", "1", "--max-len", "4096", "--decode-run", run_id
    )
    chat = by_name(report)[CHAT]
    assert chat["step_ms"] == pytest.approx(record.modes[0].median_step_s * 1e3, rel=1e-3)  # batch 1 <= 1
    assert chat["target_step_ms"] == chat["step_ms"]
    assert any(f"of decode run {run_id} (tiny on" in n for n in report["notes"])
    # a run of another kind is one line, exit 2
    ref = gpus.REFERENCE_SWEEPS["tutorial-rtx-pro-6000"].as_sweep_json()
    path = nsl_home / "sweep.json"
    path.write_text(json.dumps(ref))
    sweep = analyze_record_file(path)
    srun, sweep_id = store.new_run("sweep", "float16")
    sweep.run_id = sweep_id
    srun.write_meta(
        RunMeta(id=sweep_id, kind="sweep", name="float16", created=datetime.now(timezone.utc), target="pod x")
    )
    srun.write_result(sweep)
    r = pack(capsys, kubeconfig, "--decode-run", sweep_id)
    assert r.code == 2 and f"run {sweep_id} is a sweep run, not a decode run" in r.err, r
