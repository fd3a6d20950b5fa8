from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from clirun import run_cli

from nsightlab import assets
from nsightlab.cluster.labmanifest import MANAGED_BY, OWNER, build_manifest, load_template, owner_label
from nsightlab.errors import UsageError
from nsightlab.userconfig import Config, LabConfig


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch) -> Config:
    monkeypatch.setenv("USER", "sean.b")
    return Config(
        lab=LabConfig(
            image="registry.example.com/triton-vllm-container:1.0-1",
            node_selector={"eks.amazonaws.com/nodegroup": "stg-2-gpu-workers"},
        )
    )


def test_template_is_the_tutorials_pod() -> None:
    t = load_template(assets.pod_template())
    spec = t["spec"]
    assert spec["restartPolicy"] == "Never" and spec["activeDeadlineSeconds"] == 14400
    c = spec["containers"][0]
    assert c["command"] == ["sleep", "infinity"]
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert {"key": "nvidia.com/gpu", "operator": "Exists"} in spec["tolerations"]


def test_filled_manifest(config: Config) -> None:
    m = build_manifest(load_template(assets.pod_template()), config, namespace="ml-lab")
    meta, spec = m["metadata"], m["spec"]
    assert meta["name"] == "nsight-lab-sean-b" and meta["namespace"] == "ml-lab"
    assert meta["labels"][MANAGED_BY] == "nsightlab" and meta["labels"][OWNER] == "sean.b"
    assert spec["nodeSelector"] == {
        "node.kubernetes.io/instance-type": "g7e.8xlarge",
        "eks.amazonaws.com/nodegroup": "stg-2-gpu-workers",
    }
    res = spec["containers"][0]["resources"]
    assert res["limits"] == res["requests"] == {"cpu": "4", "memory": "24Gi", "nvidia.com/gpu": "1"}
    assert spec["containers"][0]["image"] == "registry.example.com/triton-vllm-container:1.0-1"
    assert "add" not in spec["containers"][0]["securityContext"]["capabilities"]


def test_profiling_caps_adds_sys_admin_only(config: Config) -> None:
    m = build_manifest(load_template(assets.pod_template()), config, namespace="ml", profiling_caps=True)
    caps = m["spec"]["containers"][0]["securityContext"]["capabilities"]
    assert caps == {"drop": ["ALL"], "add": ["SYS_ADMIN"]}
    assert m["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] is False


def test_image_placeholder_is_refused(config: Config) -> None:
    config.lab.image = "CHANGE-ME.registry.example.com/x:1"
    with pytest.raises(UsageError, match="lab.image"):
        build_manifest(load_template(assets.pod_template()), config, namespace="ml")


def test_owner_label_sanitised() -> None:
    assert owner_label("Jane Doe@corp") == "Jane-Doe-corp"
    assert len(owner_label("x" * 100)) == 63


def test_custom_template_validated(tmp_path: Path, config: Config) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nspec:\n  containers: []\n")
    with pytest.raises(UsageError, match="spec.containers"):
        load_template(bad)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("apiVersion: apps/v1\nkind: Deployment\nspec:\n  containers: [{name: a}]\n")
    with pytest.raises(UsageError, match="kind Pod"):
        load_template(wrong)
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x, labels: {team: ml}}\nspec:\n  containers: [{name: main, "
        "image: x, command: [sleep, '3600']}]\n"
    )
    m = build_manifest(load_template(mine), config, namespace="ml")
    assert m["metadata"]["labels"]["team"] == "ml" and m["spec"]["containers"][0]["command"] == ["sleep", "3600"]


def test_dry_run_prints_yaml_and_needs_no_cluster(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSIGHTLAB_HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("lab:\n  image: reg.example.com/lab:1\n  owner: ana\n")
    r = run_cli(capsys, "--config", str(cfg), "create", "--dry-run")
    assert r.code == 0, r
    m = yaml.safe_load(r.out)
    assert m["metadata"]["name"] == "nsight-lab-ana" and m["kind"] == "Pod"
