"""Properties over every file a user feeds nsightlab: whatever the bytes, the result is a
parse or a documented error (with its exit code, on one line), never another exception.

Inputs are the real fixtures cut, duplicated, spliced and corrupted (where the bugs hide:
almost-right files), plus arbitrary text and bytes. The hypothesis profile in conftest.py
makes the examples the same on every run and writes nothing into the repository.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from decimal import Decimal
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from nsightlab import kubevalues
from nsightlab.cluster.kubeconfig import load_kubeconfig, plain_connection
from nsightlab.cluster.safety import Intent, _glob_bounds, protection_reason, resolve_context
from nsightlab.configure import config_view
from nsightlab.errors import (
    ClusterError,
    ConfigError,
    NsightlabError,
    ParseError,
    SafetyError,
    UsageError,
)
from nsightlab.parse import ncu_csv as ncu_parse
from nsightlab.parse import nsys
from nsightlab.present.safe import terminal_safe
from nsightlab.runs import store
from nsightlab.runs.analyze import analyze_path
from nsightlab.runs.listing import line, show_run
from nsightlab.userconfig import Config, load_config

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NSYS_CSV = [FIXTURES / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv"]
NSYS_CONSOLE = sorted((FIXTURES / "nsys").glob("*.txt"))
NCU_CSV = sorted((FIXTURES / "ncu").glob("*.csv"))
T = TypeVar("T")

# Cells that break naive number parsing: empty, signs, exponents, NaN, huge, other digits.
ODD_CELLS = [
    "",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e400",
    "-1",
    "0",
    '"',
    '""',
    "1,2",
    "x",
    " ",
    "9" * 60,
    "٣",
    "1_000",
    "0x1F",
    "(1, 2, 3)",
    "n/a",
]


def _ends_well(call: Callable[[], T], *kinds: type[NsightlabError]) -> T | None:
    """The call's result, or None when it raised one of `kinds` as one line; any other
    exception fails the property."""
    try:
        return call()
    except kinds as e:
        text = terminal_safe(e.line())  # as the CLI's handler writes it
        assert text.startswith("error: ") and "\n" not in text and "\r" not in text, text
        return None


@st.composite
def mutated(draw: st.DrawFn, texts: list[str]) -> str:
    """One of `texts` with a few lines deleted, duplicated, cut, inserted, or a cell or a
    character replaced."""
    lines = draw(st.sampled_from(texts)).splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "cut", "insert", "cell", "char"]))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(draw(st.integers(0, len(lines))), lines[i])
        elif op == "cut":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif op == "insert":
            lines.insert(i, draw(st.text(max_size=60)) + "\n")
        elif op == "cell":
            cells = lines[i].rstrip("\n").split(",")
            cells[draw(st.integers(0, len(cells) - 1))] = draw(st.sampled_from(ODD_CELLS) | st.text(max_size=12))
            lines[i] = ",".join(cells) + "\n"
        elif lines[i]:
            j = draw(st.integers(0, len(lines[i]) - 1))
            lines[i] = lines[i][:j] + draw(st.sampled_from(list(',"0.-e9 \t;|x\x00\u2028'))) + lines[i][j + 1 :]
    return "".join(lines)


def _texts(paths: list[Path]) -> list[str]:
    return [p.read_text(encoding="utf-8", errors="replace") for p in paths]


# ---------------------------------------------------------------------------- Nsight outputs


@settings(max_examples=100)
@given(mutated(_texts(NSYS_CSV)) | st.text(max_size=300))
def test_nsys_stats_csv_parses_or_names_the_line(text: str) -> None:
    report = _ends_well(lambda: nsys.parse_stats_csv(text, source="f.csv"), ParseError)
    if report is not None:
        assert all(k.instances >= 0 for k in report.kernels)


@settings(max_examples=100)
@given(mutated(_texts(NSYS_CONSOLE)) | st.text(max_size=300))
def test_nsys_console_output_parses_or_names_the_line(text: str) -> None:
    _ends_well(lambda: nsys.check_stats_output(text, source="f.txt"), ParseError)
    _ends_well(lambda: nsys.parse_stats_console(text, source="f.txt"), ParseError)


@settings(max_examples=100)
@given(mutated(_texts(NCU_CSV)) | st.text(max_size=300))
def test_ncu_csv_parses_or_names_the_line(text: str) -> None:
    report = _ends_well(lambda: ncu_parse.parse_ncu_csv(text, source="f.csv"), ParseError)
    if report is not None:
        assert all(isinstance(k.name, str) for k in report.kernels)


@settings(max_examples=60)
@given(st.sampled_from(NSYS_CSV + NSYS_CONSOLE + NCU_CSV), st.data())
def test_analyze_of_a_damaged_export_file_is_a_result_or_exit_2(fixture: Path, data: st.DataObject) -> None:
    text = data.draw(mutated(_texts([fixture])))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / fixture.name
        path.write_text(text, encoding="utf-8")
        _ends_well(lambda: analyze_path(path), UsageError)


# ---------------------------------------------------------------------------- the run store


@cache
def _real_run_files() -> tuple[bytes, bytes]:
    """meta.json and result.json of a real run (a profile of fixture 03)."""
    result = analyze_path(NSYS_CSV[0])
    result.run_id = "abc123"
    meta = store.RunMeta(
        id="abc123", kind="profile", name="x", created=datetime(2026, 1, 1, tzinfo=timezone.utc), target="this machine"
    )
    return meta.model_dump_json(indent=2).encode(), result.model_dump_json(indent=2).encode()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)


@st.composite
def run_file(draw: st.DrawFn, real: bytes) -> bytes | None:
    """A run file's bytes: absent, the real one cut or with one field changed, any JSON, any bytes."""
    kind = draw(st.sampled_from(["absent", "real", "cut", "field", "json", "bytes"]))
    if kind == "absent":
        return None
    if kind == "real":
        return real
    if kind == "cut":
        return real[: draw(st.integers(0, len(real)))]
    if kind == "field":
        doc = json.loads(real)
        key = draw(st.sampled_from(sorted(doc)))
        doc[key] = draw(JSON)
        return json.dumps(doc).encode()
    if kind == "json":
        return json.dumps(draw(JSON)).encode()
    return draw(st.binary(max_size=80))


@contextmanager
def _home() -> Iterator[Path]:
    before = os.environ.get("NSIGHTLAB_HOME")
    tmp = Path(tempfile.mkdtemp(prefix="nsl-prop-"))
    os.environ["NSIGHTLAB_HOME"] = str(tmp / "home")
    try:
        yield tmp / "home"
    finally:
        if before is None:
            del os.environ["NSIGHTLAB_HOME"]
        else:
            os.environ["NSIGHTLAB_HOME"] = before
        shutil.rmtree(tmp)


@settings(max_examples=60)
@given(st.data())
def test_any_run_folder_is_a_run_or_one_error_line(data: st.DataObject) -> None:
    meta_bytes, result_bytes = _real_run_files()
    meta, result = data.draw(run_file(meta_bytes)), data.draw(run_file(result_bytes))
    with _home() as home:
        folder = home / "runs" / "20260101T000000Z-profile-x-abc123"
        (folder / "raw").mkdir(parents=True)
        for name, body in (("meta.json", meta), ("result.json", result)):
            if body is not None:
                (folder / name).write_bytes(body)
        status = store.inspect(store.Run(folder))  # never raises
        assert status.state in ("complete", "incomplete", "damaged")
        assert (status.result is not None) == status.complete
        if not status.complete:
            assert status.error is not None and status.problem
        entry = line(status)
        assert entry.damaged == (status.state == "damaged") and entry.complete == status.complete
        assert entry.id == "abc123" or status.meta is not None
        _ends_well(lambda: show_run("abc1"), UsageError)
        _ends_well(lambda: analyze_path(folder), UsageError)
        if meta == meta_bytes and result == result_bytes:
            assert status.complete  # the real files always read


# ---------------------------------------------------------------------------- config.yaml


CONFIG_KEYS = [
    "protected_contexts",
    "clusters",
    "lab",
    "context",
    "namespace",
    "protected",
    "pod_name",
    "image",
    "instance_type",
    "node_selector",
    "cpu",
    "memory",
    "gpus",
    "deadline_seconds",
    "owner",
    "stg",
]
YAML_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-5, 10**20)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["4", "500m", "24Gi", "1e3", "infGi", ".inf", "nsight-lab-{user}", "x;y", "{user}"])
)
YAML_DOC = st.recursive(
    YAML_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(CONFIG_KEYS) | st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=15,
)


def _yaml(doc: Any) -> str:
    return yaml.safe_dump(doc, allow_unicode=True)


@st.composite
def config_bytes(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["doc", "mutated", "bytes"]))
    if kind == "doc":
        return _yaml(draw(YAML_DOC)).encode()
    if kind == "mutated":
        return draw(
            mutated(
                [
                    _yaml(draw(YAML_DOC)),
                    (Path(__file__).parents[1] / "nsightlab" / "data" / "config-starter.yaml").read_text(),
                ]
            )
        ).encode("utf-8", "surrogatepass")
    return draw(st.binary(max_size=120))


@settings(max_examples=80)
@given(config_bytes())
def test_any_config_file_loads_or_is_exit_2(body: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.yaml"
        path.write_bytes(body)
        loaded = _ends_well(lambda: load_config(path), ConfigError)
    if loaded is None:
        return
    assert isinstance(loaded.config, Config)
    assert kubevalues.dns1123_subdomain_problem(loaded.config.pod_name()) is None
    for value in (loaded.config.lab.cpu, loaded.config.lab.memory):
        assert 0 <= kubevalues.parse_quantity(value) <= kubevalues.MAX_QUANTITY
    config_view(loaded)
    patterns = loaded.config.all_protected_patterns()
    assert patterns[:3] == ["prd", "prod", "production"] and len(set(patterns)) == len(patterns)


# ---------------------------------------------------------------------------- kubeconfig


# no '/': a file named in a kubeconfig is read, and these must not name /dev/zero
KC_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.text(alphabet=st.characters(blacklist_characters="/\\"), max_size=10)
)
KC_VALUES = st.recursive(
    KC_SCALARS,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=6,
)
KC_NAME = st.sampled_from(["stg", "dev", "prd-eu", "ｐｒｄ"])
KC_REF = st.one_of(
    KC_NAME, st.lists(KC_SCALARS, max_size=2), st.dictionaries(st.text(max_size=3), KC_SCALARS, max_size=2), KC_SCALARS
)
KC_CONTEXT = st.fixed_dictionaries({"cluster": KC_REF}, optional={"user": KC_REF, "namespace": KC_REF})
KC_CLUSTER = st.fixed_dictionaries(
    {"server": st.sampled_from(["https://127.0.0.1:1", "http://[::1", "ftp://x"]) | KC_VALUES},
    optional={
        "certificate-authority-data": KC_VALUES,
        "insecure-skip-tls-verify": KC_VALUES,
        "tls-server-name": KC_VALUES,
    },
)
KC_USER = st.fixed_dictionaries(
    {},
    optional={
        "token": KC_VALUES,
        "client-certificate-data": KC_VALUES,
        "client-key-data": KC_VALUES,
        "exec": KC_VALUES,
    },
)


def _entries(body_key: str, body: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Named entries whose fields hold anything; or entries without a usable name; or not
    a list at all."""
    named = st.fixed_dictionaries({"name": KC_NAME, body_key: body})
    odd = st.fixed_dictionaries({"name": KC_SCALARS}, optional={body_key: body | KC_VALUES}) | KC_VALUES
    return st.lists(named, min_size=1, max_size=3) | st.lists(odd, max_size=2) | KC_VALUES


KC_DOC = st.fixed_dictionaries(
    {"contexts": _entries("context", KC_CONTEXT)},
    optional={
        "clusters": _entries("cluster", KC_CLUSTER),
        "users": _entries("user", KC_USER),
        "current-context": KC_NAME | KC_VALUES,
    },
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a YAML document: each key of a mapping, each item of a list."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield (*prefix, key)
        yield from _paths(child, (*prefix, key))


# Values in the wrong place: every type YAML can hold, and the empty ones.
ODD_VALUES: list[Any] = [None, 0, -1, 1.5, True, "", "x", [], ["a"], [["a"]], {}, {"a": 1}, {"name": "x"}]


@st.composite
def corrupted_kubeconfig(draw: st.DrawFn) -> Any:
    """A well-formed kubeconfig (contexts, their clusters and users) with one or two places
    given any value: where a loader's assumptions about shapes break."""
    names = draw(st.lists(KC_NAME, min_size=1, max_size=2, unique=True))
    doc: dict[str, Any] = {
        "contexts": [
            {"name": n, "context": {"cluster": f"c-{n}", "user": f"u-{n}", "namespace": "ml-lab"}} for n in names
        ],
        "clusters": [
            {
                "name": f"c-{n}",
                "cluster": {"server": "https://127.0.0.1:1", "certificate-authority-data": "bm90IGEgY2VydA=="},
            }
            for n in names
        ],
        "users": [{"name": f"u-{n}", "user": {"token": "t"}} for n in names],
    }
    for _ in range(draw(st.sampled_from([1, 1, 1, 2]))):
        places = list(_paths(doc))
        leaves = [p for p in places if not any(q[: len(p)] == p and q != p for q in places)]
        *parent, key = draw(st.sampled_from(leaves) | st.sampled_from(places))  # the fields, mostly
        node = doc
        for step in parent:
            node = node[step]
        node[key] = draw(st.sampled_from(ODD_VALUES) | KC_VALUES)
    return doc


@st.composite
def kubeconfig_bytes(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["corrupted", "corrupted", "doc", "values", "mutated", "bytes"]))
    if kind == "corrupted":
        return _yaml(draw(corrupted_kubeconfig())).encode()
    if kind == "doc":
        return _yaml(draw(KC_DOC)).encode()
    if kind == "values":
        return _yaml(draw(KC_VALUES)).encode()
    if kind == "mutated":
        return draw(mutated([_yaml(draw(KC_DOC))])).encode("utf-8", "surrogatepass")
    return draw(st.binary(max_size=120))


@settings(max_examples=100)
@given(kubeconfig_bytes())
def test_any_kubeconfig_loads_or_is_exit_4(body: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kubeconfig"
        path.write_bytes(body)
        kc = _ends_well(lambda: load_kubeconfig(path), ClusterError)
        if kc is None:
            return
        for name in kc.context_names():
            for value in (kc.server(name), kc.namespace(name), kc.user_of(name)):
                assert value is None or isinstance(value, str)
            plain_connection(kc, name)
            ctx = _ends_well(
                lambda n=name: resolve_context(n, config=Config(), kubeconfig=kc, intent=Intent.CHANGE),
                SafetyError,
                ClusterError,
            )  # type: ignore[misc]
            assert ctx is None or (ctx.protected_reason is None and ctx.namespace)


# ---------------------------------------------------------------------------- names and values


@settings(max_examples=300)
@given(st.text(alphabet="ab-*?[]!", max_size=8), st.text(alphabet="ab-[]!", min_size=1, max_size=8))
def test_a_globs_literal_head_and_tail_never_reject_a_match(pattern: str, name: str) -> None:
    head, tail = _glob_bounds(pattern)
    if fnmatch.fnmatchcase(name, pattern):
        assert name.startswith(head) and name.endswith(tail), (pattern, name, head, tail)
        # and the guard says so too
        assert protection_reason(name, [pattern if set("*?[") & set(pattern) else f"{pattern}*"]) is not None


SUFFIXES = {
    "": 1,
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


@st.composite
def quantity(draw: st.DrawFn) -> tuple[str, Fraction]:
    """A quantity written from the grammar, and the number it stands for."""
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(st.text(alphabet="0123456789", max_size=6))
    frac = draw(st.text(alphabet="0123456789", max_size=4))
    if not whole and not frac:
        whole = "0"
    number = whole + ("." + frac if frac or draw(st.booleans()) else "") if whole else "." + frac
    value = Fraction(f"{whole or 0}.{frac or 0}") * (-1 if sign == "-" else 1)
    if draw(st.booleans()):
        exponent = draw(st.integers(-30, 30))
        return f"{sign}{number}{draw(st.sampled_from('eE'))}{exponent}", value * Fraction(10) ** exponent
    suffix = draw(st.sampled_from(sorted(SUFFIXES)))
    return f"{sign}{number}{suffix}", value * SUFFIXES[suffix]


@settings(max_examples=150)
@given(quantity())
def test_quantities_from_the_grammar_parse_to_their_value(q: tuple[str, Fraction]) -> None:
    text, value = q
    assert Fraction(kubevalues.parse_quantity(text)) == value, text


@settings(max_examples=150)
@given(
    st.text(max_size=20)
    | st.from_regex(r"[+-]?[0-9.]{0,6}([eE][+-]?[0-9]{0,4})?(Ki|Mi|Gi|[numkMGTPEe])?", fullmatch=True)
)
def test_any_text_is_a_quantity_or_a_value_error(text: str) -> None:
    try:
        value = kubevalues.parse_quantity(text)
    except ValueError:
        return
    assert isinstance(value, Decimal) and value.is_finite()
