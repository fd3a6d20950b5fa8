"""Look-alikes of production names are protected: NFKC and Unicode's confusables (UTS #39)."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from clirun import run_cli
from conftest import CONTEXTS
from kubesim import KubeSim

from nsightlab.cluster.safety import protection_reason
from nsightlab.userconfig import DEFAULT_PROTECTED

DEFAULTS = list(DEFAULT_PROTECTED)


@pytest.mark.parametrize(
    "name",
    [
        "ｐｒｄ-online",  # full-width letters
        "prоd-online",  # Cyrillic о
        "prοd-online",  # Greek ο (omicron)
        "Ρrоd-eu",  # mixed scripts: Greek capital rho, Cyrillic о
        "ＰＲＯＤ_eu",  # full-width capitals
        "PRD-eu",  # plain upper case
        "eu.PRODUCΤION.main",  # a Greek capital tau, whose small letter looks like no t
        "prd\u200b-online",  # a zero-width space inside the token
        "pród-x",  # an accent
        "𝐩𝐫𝐝:use1",  # mathematical bold
        "me@prԁ",  # Cyrillic komi de
        "prd‐online",  # U+2010 HYPHEN as the separator
    ],
)
def test_lookalikes_of_the_default_tokens_are_protected(name: str) -> None:
    reason = protection_reason(name, DEFAULTS)
    assert reason is not None, name
    assert reason.startswith(f"'{name}'")


@pytest.mark.parametrize(
    "name", ["stg-online-use1", "ｓｔｇ-online", "reproduce-bug", "products-stg", "ПPOD-x", "prodigy-eu", "пpд-x"]
)
def test_names_that_do_not_read_as_production_are_not(name: str) -> None:
    assert protection_reason(name, DEFAULTS) is None


def test_fullwidth_digits_and_lookalike_patterns_and_aliases() -> None:
    # full-width digits read as ASCII ones, in a token and in a glob
    assert protection_reason("team-４２", [*DEFAULTS, "42"]) is not None
    assert protection_reason("live-０７-eu", [*DEFAULTS, "live-07*"]) is not None
    assert protection_reason("live-08-eu", [*DEFAULTS, "live-07*"]) is None
    # a pattern written with look-alikes protects the plain name, and the other way round
    assert protection_reason("live-eu-1", [*DEFAULTS, "ｌｉｖｅ-*"]) is not None
    assert protection_reason("mlops-eu", [*DEFAULTS, "mlοps"]) is not None
    # an alias whose name is a look-alike protects the context it names
    reason = protection_reason("cluster-a", DEFAULTS, alias="ｐｒｏｄ-a")
    assert reason is not None and "ｐｒｏｄ-a" in reason and "read as 'prod-a'" in reason


def test_folding_reads_the_table_only_for_names_that_are_not_ascii() -> None:
    from nsightlab.cluster import lookalike

    for cached in (lookalike.confusables, lookalike.folds, lookalike._fold_char):
        cached.cache_clear()
    assert protection_reason("stg-online-use1", [*DEFAULTS, "live-*", "team-42"], alias="stg") is None
    assert protection_reason("prd-online-use1", DEFAULTS) is not None
    assert lookalike.confusables.cache_info().currsize == 0  # ordinary names: no table
    assert protection_reason("prоd-online", DEFAULTS) is not None
    assert lookalike.confusables.cache_info().currsize == 1


def test_the_table_is_unicodes_confusables_file() -> None:
    from nsightlab.cluster import lookalike

    text = Path(lookalike.__file__).parents[1].joinpath(lookalike.TABLE).read_text(encoding="utf-8")
    assert "# Version: 17.0.0" in text and "# total: 6565" in text
    table = lookalike.confusables()
    assert len(table) == 6565
    assert (
        table["\u043e"] == "o" and table["\u03bf"] == "o" and table["\u0440"] == "p"
    )  # Cyrillic о, Greek ο, Cyrillic р
    assert table["m"] == "rn" and table["0"] == "O"  # its own prototypes, not ours
    # a prototype never maps further: one pass of the table is the skeleton
    assert not any(ch in table for target in table.values() for ch in target)
    assert lookalike.skeleton("prоd") == "prod" and lookalike.skeleton("p\u200brod") == "prod"
    # full-width letters are NFKC's to fold, not the table's: both steps are needed
    assert lookalike.skeleton("ｒ") == "ｒ" and unicodedata.normalize("NFKC", "ｒ") == "r"


@pytest.mark.parametrize("context", ["ｐｒｄ-online", "prоd-online"])
def test_cleanup_on_a_lookalike_context_is_refused_before_any_request(
    capsys: pytest.CaptureFixture[str], sim: KubeSim, tmp_path: Path, nsl_home: Path, context: str
) -> None:
    contexts = {**CONTEXTS, context: {"namespace": "serving", "token": "lookalike-token", "user": "lookalike-user"}}
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig", contexts)
    sim.clear_requests()
    r = run_cli(capsys, "cleanup", "--context", context, "--kubeconfig", str(kubeconfig), "--yes")
    assert r.code == 3, r
    assert r.err.startswith("error: refusing to ")
    assert f"protected context '{context}'" in r.err and "read as" in r.err
    assert r.err.count("\n") == 1
    assert sim.requests == []  # nothing was sent
