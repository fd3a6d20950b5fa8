"""Production names as a person reads them: whitespace and Unicode separators read as gaps
(or not at all), and names holding invisible format or control characters refused for any
change, before any request."""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from clirun import Result, run_cli
from conftest import CONTEXTS
from hypothesis import given, settings
from hypothesis import strategies as st
from kubesim import KubeSim, realistic_cluster
from labenv import write_config

from nsightlab.cluster.kubeconfig import load_kubeconfig
from nsightlab.cluster.safety import Intent, protection_reason, resolve_context
from nsightlab.errors import ConfigError, SafetyError
from nsightlab.userconfig import DEFAULT_PROTECTED, ClusterAlias, Config, load_config

DEFAULTS = list(DEFAULT_PROTECTED)
SEPARATORS = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)).startswith("Z")]
FORMATS = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]
WHITESPACE = [c for c in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85"]

# The names the adversarial pass wrote production through (issue 24, item 1).
REPORTED = ["online-prd ", "online-prod\u00a0", "online-\u202edorp"]


def test_the_character_classes_are_what_the_property_says() -> None:
    assert len(SEPARATORS) == 19 and "\u00a0" in SEPARATORS and "\u2028" in SEPARATORS and "\u3000" in SEPARATORS
    assert len(FORMATS) > 150 and "\u200b" in FORMATS and "\u00ad" in FORMATS and "\ufeff" in FORMATS
    assert all(ch in FORMATS for ch in BIDI)


@pytest.mark.parametrize(
    "name",
    [
        *REPORTED,
        "online prd",  # a space as the only separator
        "online\u3000prod",  # an ideographic space
        "pr d-online",  # a space inside the token
        "x-p\u2028rd",  # a line separator inside it
        "\tprod",
        "prod\u2029",
        "online-prd\u0085",
        "online-prd\u200b",  # a zero-width space after it (Cf)
        "\u2066prd-eu\u2069",  # wrapped in an isolate
        "online-prd\x1b[8m",  # a control character
    ],
)
def test_names_that_read_as_production_are_protected(name: str) -> None:
    assert protection_reason(name, DEFAULTS) is not None, repr(name)


@pytest.mark.parametrize("name", ["stg online", "stg-online\u00a0", "reproduce bug", "products stg ", " dev-ml"])
def test_gaps_do_not_make_other_names_protected(name: str) -> None:
    assert protection_reason(name, DEFAULTS) is None, repr(name)


def test_patterns_and_aliases_go_through_the_same_reading(tmp_path: Path) -> None:
    # a glob over the whole name: a leading space, a no-break space for the dash
    assert protection_reason(" live-eu", [*DEFAULTS, "live-*"]) is not None
    assert protection_reason("live\u00a0eu", [*DEFAULTS, "live-*"]) is not None
    assert protection_reason("online prd ", [*DEFAULTS, "*-prd"]) is not None
    # a pattern's own gaps are not part of it
    assert protection_reason("team-42", [*DEFAULTS, "42 "]) is not None
    # an alias that reads as production protects the context it names
    assert protection_reason("cluster-a", DEFAULTS, alias="prod a") is not None
    assert protection_reason("cluster-a", DEFAULTS, alias="a\u202e") is not None
    # a protected pattern that does not read as written is refused when the config loads
    path = tmp_path / "config.yaml"
    path.write_text('protected_contexts: ["live\\u202e-*"]\n', encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in err.value.message and err.value.exit_code == 2


def _kubeconfig(sim: KubeSim, path: Path, *names: str) -> Path:
    contexts = {**CONTEXTS, **{n: {"namespace": "serving", "token": "odd-token", "user": "odd-user"} for n in names}}
    return sim.write_kubeconfig(path, contexts)


@pytest.mark.parametrize("name", REPORTED)
@pytest.mark.parametrize("command", [["create"], ["cleanup"]])
def test_create_and_cleanup_on_the_reported_names_are_refused_before_any_request(
    capsys: pytest.CaptureFixture[str], sim: KubeSim, tmp_path: Path, nsl_home: Path, name: str, command: list[str]
) -> None:
    kubeconfig = _kubeconfig(sim, tmp_path / "kubeconfig", name)
    config = write_config(tmp_path / "config.yaml")
    sim.clear_requests()
    r = run_cli(capsys, "--config", str(config), *command, "--context", name, "--kubeconfig", str(kubeconfig), "--yes")
    assert r.code == 3, r
    assert r.err.startswith("error: refusing to ") and r.err.count("\n") == 1, r.err
    assert "\u202e" not in r.err and "\u00a0" not in r.err.split("read as")[-1]
    if "\u202e" in name:
        # the name is shown escaped, and the line says why
        assert "'online-\\u202edorp'" in r.err and "U+202E RIGHT-TO-LEFT OVERRIDE" in r.err
    else:
        assert "read as 'online-pr" in r.err
    assert sim.requests == []


def test_an_alias_to_a_hidden_name_is_refused_for_change_and_read_allowed(tmp_path: Path) -> None:
    from nsightlab.userconfig import atomic_write_text

    name = "stg-\u2067online"
    path = tmp_path / "kubeconfig"
    atomic_write_text(
        path,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        f'contexts: [{{name: "{name.encode("unicode_escape").decode()}", context: {{cluster: c, user: u}}}}]\n',
    )
    kc = load_kubeconfig(path)
    assert name in kc.contexts
    cfg = Config(clusters={"stg": ClusterAlias(context=name, namespace="serving")})
    with pytest.raises(SafetyError) as err:
        resolve_context("stg", config=cfg, kubeconfig=kc, intent=Intent.CHANGE, action="create the lab pod")
    assert "U+2067 RIGHT-TO-LEFT ISOLATE" in err.value.message and err.value.exit_code == 3
    assert "rename-context" in (err.value.hint or "")
    # reading is allowed (nothing changes), and the context is marked protected
    ctx = resolve_context("stg", config=cfg, kubeconfig=kc, intent=Intent.READ)
    assert ctx.protected_reason is not None


# ---------------------------------------------------------------------------- the property


@pytest.fixture(scope="module")
def shared_sim() -> Iterator[KubeSim]:
    """One server for every example of the property (a fixture per example would be a new
    server each time)."""
    with KubeSim(tls=True, kubelet_delay=0.05) as server:
        server.load(realistic_cluster())
        yield server


_TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=6)


@st.composite
def protected_names(draw: st.DrawFn) -> str:
    """A name with a protected token among ordinary ones, joined by the separators."""
    words = draw(st.lists(_TOKEN.filter(lambda t: t not in DEFAULTS), max_size=3))
    words.insert(draw(st.integers(0, len(words))), draw(st.sampled_from(DEFAULTS)))
    seps = draw(st.lists(st.sampled_from("-_.:/@"), min_size=len(words), max_size=len(words)))
    return "".join(w + s for w, s in zip(words, seps, strict=True))[:-1]


@st.composite
def disguised(draw: st.DrawFn) -> tuple[str, str]:
    """(a protected name, the name with a separator or a format character inserted or
    appended, or wrapped in bidi controls)."""
    name = draw(protected_names())
    how = draw(st.sampled_from(["separator", "whitespace", "format", "bidi"]))
    if how == "bidi":
        opening = draw(st.sampled_from(BIDI))
        return name, opening + name + draw(st.sampled_from(["", "\u202c", "\u2069"]))
    ch = draw(st.sampled_from({"separator": SEPARATORS, "whitespace": WHITESPACE, "format": FORMATS}[how]))
    at = draw(st.integers(0, len(name)))
    return name, name[:at] + ch + name[at:]


@settings(max_examples=400)
@given(disguised())
def test_a_protected_name_disguised_stays_protected(case: tuple[str, str]) -> None:
    name, odd = case
    assert protection_reason(name, DEFAULTS) is not None
    assert protection_reason(odd, DEFAULTS) is not None, repr(odd)


@settings(max_examples=40, deadline=None)
@given(disguised())
def test_a_disguised_name_is_refused_before_any_request(
    shared_sim: KubeSim, tmp_path_factory: pytest.TempPathFactory, case: tuple[str, str]
) -> None:
    _, odd = case
    tmp = tmp_path_factory.mktemp("odd")
    kubeconfig = _kubeconfig(shared_sim, tmp / "kubeconfig", odd)
    shared_sim.clear_requests()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NSIGHTLAB_HOME", str(tmp / "home"))
        mp.delenv("NSIGHTLAB_CONFIG", raising=False)
        out = _run(["cleanup", "--context", odd, "--kubeconfig", str(kubeconfig), "--yes"])
    assert out.code == 3, (odd, out)
    assert out.err.startswith("error: refusing to ") and out.err.count("\n") == 1, out.err
    assert shared_sim.requests == []


def _run(args: list[str]) -> Result:
    """The CLI in-process with its streams captured (no capsys: the property runs many times
    in one test)."""
    import contextlib
    import io

    from nsightlab.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return Result(code=code, out=out.getvalue(), err=err.getvalue())
