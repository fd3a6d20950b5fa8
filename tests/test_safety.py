from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from nsightlab.cluster.kubeconfig import Kubeconfig, load_kubeconfig
from nsightlab.cluster.safety import Intent, name_tokens, protection_reason, resolve_context
from nsightlab.errors import ClusterError, SafetyError
from nsightlab.userconfig import ClusterAlias, Config, Session


def _kubeconfig_file(
    path: Path, contexts: dict[str, str | None], current: str | None = None, server: str = "https://127.0.0.1:6443"
) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": f"cl-{c}", "cluster": {"server": server}} for c in contexts],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [
            {"name": c, "context": {"cluster": f"cl-{c}", "user": "u", **({"namespace": ns} if ns else {})}}
            for c, ns in contexts.items()
        ],
    }
    if current:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def kc(tmp_path: Path) -> Kubeconfig:
    path = _kubeconfig_file(
        tmp_path / "config",
        {
            "stg-online-use1": "serving",
            "prd-online-use1": "serving",
            "dev-ml-use1": None,
            "reproduce-bug": None,
            "eu.production.main": None,
        },
        current="prd-online-use1",
    )
    return load_kubeconfig(path)


@pytest.mark.parametrize(
    ("name", "protected"),
    [
        ("prd-online-use1", True),
        ("stg-online-use1", False),
        ("eks:prod", True),
        ("arn:aws:eks:us-east-1:123:cluster/production", True),
        ("me@prod.example", True),
        ("reproduce-bug", False),  # "prod" inside a word is not a token
        ("products-stg", False),
        ("PRD_eu", True),
    ],
)
def test_token_rule(name: str, protected: bool) -> None:
    assert (protection_reason(name, ["prd", "prod", "production"]) is not None) is protected


def test_tokens_split_on_all_separators() -> None:
    assert name_tokens("a-b_c.d:e/f@g") == ["a", "b", "c", "d", "e", "f", "g"]


def test_glob_patterns_and_alias_flag() -> None:
    assert protection_reason("live-eu-1", ["live-*"]) is not None
    assert protection_reason("stg-eu-1", ["live-*"]) is None
    assert protection_reason("stg", [], alias="stg", alias_flag=True) == "its alias 'stg' sets protected: true"
    # an alias whose own name carries a protected token is protected too
    assert protection_reason("cluster-a", ["prod"], alias="prod-a") is not None


def test_no_context_is_refused_and_lists_contexts(kc: Kubeconfig) -> None:
    with pytest.raises(SafetyError) as err:
        resolve_context(None, config=Config(), kubeconfig=kc, intent=Intent.READ)
    assert err.value.exit_code == 3
    assert "current-context" in err.value.message
    assert "--context" in (err.value.hint or "")
    assert "stg-online-use1" in (err.value.hint or "") and "dev-ml-use1" in (err.value.hint or "")


def test_current_context_is_never_used(kc: Kubeconfig) -> None:
    assert kc.current_context == "prd-online-use1"
    ctx = resolve_context("stg-online-use1", config=Config(), kubeconfig=kc, intent=Intent.CHANGE)
    assert ctx.name == "stg-online-use1" and ctx.namespace == "serving"


def test_unknown_context_is_exit_4_with_known_list(kc: Kubeconfig) -> None:
    with pytest.raises(ClusterError) as err:
        resolve_context("stg-typo", config=Config(), kubeconfig=kc, intent=Intent.READ)
    assert err.value.exit_code == 4
    assert "stg-typo" in err.value.message and "stg-online-use1" in (err.value.hint or "")


def test_protected_refused_for_change_allowed_for_read(kc: Kubeconfig) -> None:
    ro = resolve_context("prd-online-use1", config=Config(), kubeconfig=kc, intent=Intent.READ)
    assert ro.protected_reason is not None
    with pytest.raises(SafetyError) as err:
        resolve_context(
            "prd-online-use1", config=Config(), kubeconfig=kc, intent=Intent.CHANGE, action="create the lab pod"
        )
    assert err.value.exit_code == 3 and "prd" in err.value.message and "create the lab pod" in err.value.message
    with pytest.raises(SafetyError):
        resolve_context("eu.production.main", config=Config(), kubeconfig=kc, intent=Intent.CHANGE)


def test_config_patterns_add_to_defaults(kc: Kubeconfig) -> None:
    cfg = Config(protected_contexts=["dev-*"])
    with pytest.raises(SafetyError, match="dev-\\*"):
        resolve_context("dev-ml-use1", config=cfg, kubeconfig=kc, intent=Intent.CHANGE)
    with pytest.raises(SafetyError):  # defaults still apply
        resolve_context("prd-online-use1", config=cfg, kubeconfig=kc, intent=Intent.CHANGE)


def test_alias_resolution_namespace_and_flag(kc: Kubeconfig) -> None:
    cfg = Config(
        clusters={
            "stg": ClusterAlias(context="stg-online-use1", namespace="ml-lab"),
            "dev": ClusterAlias(context="dev-ml-use1", protected=True),
        }
    )
    ctx = resolve_context("stg", config=cfg, kubeconfig=kc, intent=Intent.CHANGE)
    assert (ctx.name, ctx.alias, ctx.namespace) == ("stg-online-use1", "stg", "ml-lab")
    assert ctx.label == "stg (stg-online-use1)"
    assert resolve_context("stg", config=cfg, kubeconfig=kc, intent=Intent.READ, namespace="other").namespace == "other"
    with pytest.raises(SafetyError, match="protected: true"):
        resolve_context("dev", config=cfg, kubeconfig=kc, intent=Intent.CHANGE)
    assert resolve_context("dev-ml-use1", config=Config(), kubeconfig=kc, intent=Intent.READ).namespace == "default"


def test_session_stands_in_for_context(kc: Kubeconfig) -> None:
    s = Session(
        context="stg-online-use1",
        server="https://x",
        namespace="ml-lab",
        pod="p",
        uid="u",
        owner="me",
        created=datetime.now(timezone.utc),
    )
    ctx = resolve_context(None, config=Config(), kubeconfig=kc, intent=Intent.CHANGE, session=s)
    assert ctx.from_session and ctx.name == "stg-online-use1" and ctx.namespace == "ml-lab"


def test_kubeconfig_merge_first_file_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = _kubeconfig_file(tmp_path / "a", {"stg": "ns-a", "only-a": None}, current="only-a", server="https://a")
    b = _kubeconfig_file(tmp_path / "b", {"stg": "ns-b", "only-b": None}, current="only-b", server="https://b")
    monkeypatch.setenv("KUBECONFIG", f"{a}:{tmp_path / 'missing'}:{b}")
    kc = load_kubeconfig()
    assert kc.context_names() == ["only-a", "only-b", "stg"]
    assert kc.namespace("stg") == "ns-a" and kc.server("stg") == "https://a" and kc.server("only-b") == "https://b"
    assert kc.paths == [a, b]


def test_kubeconfig_missing_and_malformed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    with pytest.raises(ClusterError, match="no kubeconfig found"):
        load_kubeconfig()
    with pytest.raises(ClusterError, match="does not exist"):
        load_kubeconfig(tmp_path / "none")
    bad = tmp_path / "bad"
    bad.write_text("contexts: [\n")
    with pytest.raises(ClusterError, match="not valid YAML") as err:
        load_kubeconfig(bad)
    assert err.value.exit_code == 4
    bad.write_text("contexts: {a: 1}\n")
    with pytest.raises(ClusterError, match="malformed"):
        load_kubeconfig(bad)
