from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from clirun import run_cli

from nsightlab.errors import ConfigError
from nsightlab.userconfig import Config, Session, load_config, load_session, save_session

pytestmark = pytest.mark.usefixtures("nsl_home")


def test_missing_default_config_means_defaults() -> None:
    loaded = load_config()
    assert not loaded.exists
    assert loaded.config.lab.instance_type == "g7e.8xlarge"
    assert loaded.config.lab.cpu == "4" and loaded.config.lab.memory == "24Gi"
    assert loaded.config.lab.gpus == 1 and loaded.config.lab.deadline_seconds == 14400
    assert set(loaded.sources.values()) == {"default"}


def test_explicit_missing_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")


def test_unknown_key_names_file_key_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("lab:\n  image: x\n  instance_typ: g7e.8xlarge\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert f"{path}:3" in err.value.message
    assert "lab.instance_typ" in err.value.message
    assert err.value.exit_code == 2


def test_mistyped_value_names_key_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("protected_contexts: []\nlab:\n  gpus: lots\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert f"{path}:3" in err.value.message and "lab.gpus" in err.value.message


def test_bad_quantity_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("lab:\n  memory: twenty\n")
    with pytest.raises(ConfigError, match=r"lab\.memory"):
        load_config(path)


def test_invalid_yaml_names_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("lab:\n  image: [unclosed\n  cpu: 4\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in err.value.message and "not valid YAML" in err.value.message


def test_alias_and_sources(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("clusters:\n  stg:\n    context: stg-online-use1\n    namespace: serving\nlab:\n  cpu: '8'\n")
    loaded = load_config(path)
    assert loaded.config.clusters["stg"].context == "stg-online-use1"
    assert loaded.sources["clusters.stg.context"] == f"{path}:3"
    assert loaded.sources["lab.cpu"] == f"{path}:6"
    assert loaded.sources["lab.memory"] == "default"


def test_pod_name_uses_owner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", "Sean.B")
    cfg = Config()
    assert cfg.owner() == "Sean.B"
    assert cfg.pod_name() == "nsight-lab-sean-b"


def test_session_roundtrip_and_damage(nsl_home: Path) -> None:
    from datetime import datetime, timezone

    assert load_session() is None
    s = Session(
        context="stg",
        server="https://x",
        namespace="ml",
        pod="p",
        uid="u",
        owner="me",
        created=datetime.now(timezone.utc),
    )
    path = save_session(s)
    assert load_session() == s
    path.write_text("{not json")
    assert load_session() is None


def test_init_writes_valid_commented_config(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))  # none to check the context against
    r = run_cli(
        capsys, "init", "--context", "stg-online-use1", "--namespace", "ml-lab", "--image", "reg.example.com/lab:0"
    )
    assert r.code == 0, r
    path = nsl_home / "config.yaml"
    text = path.read_text()
    assert "# " in text and "CHANGE-ME" not in text  # comments, and no placeholder left to fill
    data = yaml.safe_load(text)
    assert data["clusters"]["stg"] == {"context": "stg-online-use1", "namespace": "ml-lab", "protected": False}
    lab = load_config(path).config.lab
    assert (lab.instance_type, lab.cpu, lab.memory, lab.gpus, lab.deadline_seconds) == (
        "g7e.8xlarge",
        "4",
        "24Gi",
        1,
        14400,
    )
    assert lab.image == "reg.example.com/lab:0"
    assert "nsightlab doctor --context stg" in r.err and "nsightlab create --context stg" in r.err  # what comes next
    assert (r.out + r.err).count(str(path)) == 1 and f"wrote {path}" in r.err  # the path once
    again = run_cli(capsys, "init")
    assert again.code == 2 and "already exists" in again.err and "--force" in again.err
    assert path.read_text() == text
    # --force keeps what is not given: a new image, the same alias
    forced = run_cli(capsys, "init", "--force", "--image", "reg.example.com/lab:1")
    assert forced.code == 0, forced
    again_data = load_config(path).config
    assert again_data.lab.image == "reg.example.com/lab:1"
    assert (again_data.clusters["stg"].context, again_data.clusters["stg"].namespace) == ("stg-online-use1", "ml-lab")


def test_config_command_json_and_text(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import json

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    assert (
        run_cli(capsys, "init", "--context", "stg-online-use1", "-n", "ml-lab", "--image", "reg.example.com/lab:0").code
        == 0
    )
    r = run_cli(capsys, "config", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    by_key = {v["key"]: v for v in data["values"]}
    assert by_key["clusters.stg.context"]["value"] == "stg-online-use1"
    assert by_key["clusters.stg.context"]["source"].endswith("config.yaml:14")
    assert data["placeholders"] == []
    assert data["protected_patterns"][:3] == ["prd", "prod", "production"]
    text = run_cli(capsys, "config")
    assert text.code == 0 and "lab.instance_type" in text.out and "g7e.8xlarge" in text.out
    # what a value means, not how Python spells it: the owner nsightlab will use, yes/no
    monkeypatch.setenv("USER", "zed")
    rows = {
        line.split()[0]: line.split(maxsplit=1)[1] for line in run_cli(capsys, "config").out.splitlines()[3:] if line
    }
    assert rows["lab.owner"].split()[0] == "zed" and rows["lab.owner"].endswith("(your user name)")
    assert rows["clusters.stg.protected"].split()[0] == "no"
    assert "null" not in rows["lab.owner"] and "False" not in run_cli(capsys, "config").out
    assert {v["key"]: v["value"] for v in json.loads(run_cli(capsys, "config", "--json").out)["values"]}[
        "clusters.stg.protected"
    ] is False  # --json keeps JSON's own values


def test_config_command_reports_bad_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("lab:\n  colour: blue\n")
    r = run_cli(capsys, "--config", str(path), "config")
    assert r.code == 2
    assert r.err.count("\n") == 1 and f"{path}:2" in r.err and "lab.colour" in r.err
    assert "Traceback" not in r.err
