"""docs/ and the code, kept together: the JSON page is what the models give, every JSON
shape a page shows is its model's, every command and option is in its page, every command
line a page shows parses, and the README stays short and links every page. Each check is
also fed a page that drifted, to show it catches the drift.

(The quick start's commands run against the API server emulator in tests/test_first_run.py.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import docjson
import pytest
from clirun import run_cli
from cliwalk import commands
from conftest import STG_CONTEXT
from doccheck import (
    command_line_problems,
    coverage_problems,
    explained,
    json_block_problems,
    readme_problems,
)
from docshape import Shape, data_problems, model_at, problems, read_documents, shape_of, write_shape

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
DATA = Path(__file__).resolve().parent / "data"

# The page of each command (its path): the command is named there and its options written.
PAGE_OF: dict[tuple[str, ...], str] = {
    (): "configuration.md",  # the program's own options
    ("init",): "configuration.md",
    ("config",): "configuration.md",
    **{("explore", *sub): "explore.md" for sub in [(), ("nodes",), ("pods",), ("pod",), ("node",)]},
    **{(c,): "lab.md" for c in ["create", "status", "logs", "events", "shell", "copy", "cleanup", "doctor"]},
    **{(c,): "profile.md" for c in ["profile", "ncu", "analyze"]},
    ("sweep",): "sweep.md",
    **{("fleet", *sub): "fleet.md" for sub in [(), ("sweep",), ("status",), ("collect",)]},
    **{("pack", *sub): "packing.md" for sub in [(), ("colocate",), ("tokenizer",)]},
    **{
        c: "runs.md"
        for c in [("runs",), ("runs", "list"), ("runs", "show"), ("runs", "rm"), ("report",), ("roofline",)]
    },
}

# The placeholders in capitals each page may use in its command lines (the page says what
# each stands for), with a value of the kind it stands for, to parse the line with.
PLACEHOLDERS: dict[str, dict[str, str]] = {
    "README.md": {"CTX": "stg-online-use1", "NS": "ml-lab", "IMG": "registry.example.com/lab:1.0"},
    "configuration.md": {"REGISTRY": "registry.example.com", "IMAGE": "lab", "TAG": "1.0", "TAG2": "1.1"},
    "explore.md": {"NODE": "ip-10-0-3-17.ec2.internal"},
    "benchmarks.md": {"OUTDIR": "gpu-run-h200"},
}
# Words in capitals that are values, not placeholders (a GPU's product name).
VALUES_IN_CAPITALS = {"NVIDIA": "NVIDIA", "H200": "H200"}


def _pages() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))}


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------- docs/json.md


def test_json_page_is_what_the_models_give() -> None:
    problem = docjson.page_problem(docjson.PAGE.read_text(encoding="utf-8"))
    assert problem is None, problem


def test_a_json_page_behind_the_models_is_caught() -> None:
    stale = docjson.page().replace('"fleet_id", "context"', '"fleet_id", "cluster"', 1)
    problem = docjson.page_problem(stale)
    assert problem is not None and "python tests/docjson.py --write" in problem


def test_every_command_with_json_has_its_documents() -> None:
    with_json = {" ".join(c.path) for c in commands() if any("--json" in o.opts for o in c.options())}
    assert sorted(with_json - set(docjson.SECTIONS)) == [], "a command takes --json but docs/json.md lacks it"
    assert sorted(set(docjson.SECTIONS) - with_json) == [], "docs/json.md documents a command without --json"


def test_every_model_of_the_page_imports_by_its_path() -> None:
    for name, dotted in docjson.MODELS.items():
        assert model_at(dotted).__name__ == name, dotted
    titles = [shape_of(docjson.model(n)).title for n in docjson.MODELS]
    assert len(set(titles)) == len(titles), "two shown models share a name: a quoted name would be ambiguous"


def test_the_prose_names_fields_that_exist() -> None:
    assert docjson.prose_problems() == []


def test_prose_for_a_field_that_is_gone_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(docjson.PROSE, "SweepResult.plateau", "a field renamed since")
    assert docjson.prose_problems() == ["PROSE['SweepResult.plateau']: no model on the page has this field"]


# What the commands print, offline: each document against the shape json.md shows for it.
OFFLINE = [
    (["analyze", str(FIXTURES / "nsys" / "06_nsys_stats_console_nvtx_osrt_api_kern_mem_a100.txt")], "ProfileResult"),
    (["analyze", str(DATA / "lesson1_cpu_float32_epyc-2c-l3-32mib.json")], "ProfileResult"),
    (["analyze", str(FIXTURES / "ncu" / "05_ncu_csv_page_details_vectorized_elementwise_rtx5090.csv")], "NcuResult"),
    (["analyze", str(DATA / "sweep_cpu_float32_epyc-2c-l3-32mib.json")], "SweepResult"),
    (["analyze", str(DATA / "decode_cpu_tiny_xeon-2c.json")], "DecodeResult"),
    (["analyze", str(DATA / "decode_cpu_tiny_xeon-2c.pt.trace.json.gz")], "TraceResult"),
    (["roofline", "--weights-gb", "16", "--gpu", "NVIDIA H200"], "DecodeFloor"),
    (["config"], "ConfigView"),
]


@pytest.mark.parametrize(("argv", "name"), OFFLINE, ids=[f"{a[0]}-{n}" for a, n in OFFLINE])
def test_what_a_command_prints_has_the_page_s_shape(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, argv: list[str], name: str
) -> None:
    r = run_cli(capsys, *argv, "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data_problems(data, shape_of(docjson.model(name))) == []


def test_what_explore_prints_has_the_page_s_shape(
    capsys: pytest.CaptureFixture[str], nsl_home: Path, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    for argv, name, rows in [
        (["explore", "nodes"], "NodesReport", "nodes"),
        (["explore", "pods", "--all-namespaces"], "PodsReport", "pods"),
    ]:
        r = run_cli(capsys, *argv, "--context", STG_CONTEXT, "--json")
        assert r.code == 0, r
        data = json.loads(r.out)
        assert data[rows], "an empty list would check nothing of its items"
        assert data_problems(data, shape_of(docjson.model(name))) == []


def test_a_printed_document_unlike_its_shape_is_caught() -> None:
    shape = shape_of(docjson.model("DecodeFloor"))
    line = {
        "basis": "measured",
        "label": "x",
        "source": "s",
        "gpu": None,
        "run_id": None,
        "dtype": None,
        "bandwidth_tbps": 1.0,
        "ms_per_token": 1.0,
        "tokens_per_s": 1.0,
        "estimate": False,
    }
    good: dict[str, Any] = {
        "kind": "decode-floor",
        "weights_gb": 16,
        "weight_bytes": 16,
        "lines": [line],
        "measured_pct_of_spec": None,
        "summary": [],
        "notes": [],
    }
    assert data_problems(good, shape) == []
    assert data_problems({**good, "extra": 1}, shape) == ["the document: the shape lacks 'extra'"]
    assert data_problems({k: v for k, v in good.items() if k != "notes"}, shape) == [
        "the document: 'notes' of the shape is not printed"
    ]
    assert data_problems({**good, "lines": [{**line, "basis": "guessed"}]}, shape) == [
        "lines[0].basis: 'guessed' is not one of measured|spec"
    ]


# ---------------------------------------------------------------------------- JSON blocks of the pages


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_each_json_block_shows_its_model_s_own_keys(page: str) -> None:
    assert json_block_problems((DOCS / page).read_text(encoding="utf-8"), page) == []


FLEET_STATUS = """\
`fleet status --json`:

<!-- json: nsightlab.analysis.fleet_models.FleetStatusReport -->
```json
{"context", "namespace", "owner", "fleets": [{"fleet_id", "created", "age", "planned",
 "jobs": {"waiting", "pending", "running", "succeeded", "failed"}}]}  # a comment
```
"""


def test_a_block_true_to_its_model_passes() -> None:
    assert json_block_problems(FLEET_STATUS, "p.md") == []


@pytest.mark.parametrize(
    ("edit", "caught"),
    [
        (('"owner", ', ""), "p.md:4: FleetStatusReport: missing owner (fields of FleetStatusReport)"),
        (('"age", ', '"age", "eta", '), "p.md:4: FleetStatusReport.fleets[]: eta not a field of FleetStatusLine"),
        (('"failed"}', '"failed", "lost"}'), "p.md:4: FleetStatusReport.fleets[].jobs: lost not a field of FleetJobs"),
        (('"jobs": {', '"jobs": {..., '), "p.md:4: FleetStatusReport.fleets[].jobs: keys left out (...)"),
        (('"fleets": [{', '"fleets": {'), None),
        (
            ("<!-- json: nsightlab.analysis.fleet_models.FleetStatusReport -->\n", ""),
            "p.md:3: a json block without its model",
        ),
        (("analysis.fleet_models.FleetStatusReport", "analysis.gone.FleetStatusReport"), "does not import"),
    ],
)
def test_a_block_that_drifted_is_caught(edit: tuple[str, str], caught: str | None) -> None:
    drifted = FLEET_STATUS.replace(*edit)
    assert drifted != FLEET_STATUS
    found = json_block_problems(drifted, "p.md")
    assert found, drifted
    if caught is not None:
        assert any(caught in p for p in found), found


def test_fixed_values_and_kinds_are_checked() -> None:
    marker = "<!-- json: nsightlab.analysis.roofline.DecodeFloor -->\n```json\n{}\n```\n"
    good = write_shape(shape_of(docjson.model("DecodeFloor")))
    assert json_block_problems(marker.replace("{}", good), "p.md") == []
    wrong_value = good.replace('"basis": "measured|spec"', '"basis": "measured|guessed"')
    assert json_block_problems(marker.replace("{}", wrong_value), "p.md") == [
        "p.md:2: DecodeFloor.lines[].basis: 'guessed' is not one of measured|spec"
    ]
    as_object = good.replace('"weight_bytes"', '"weight_bytes": {"count"}')
    assert json_block_problems(marker.replace("{}", as_object), "p.md") == [
        "p.md:2: DecodeFloor.weight_bytes: a plain value, written as an object or a list"
    ]


def test_the_kinds_a_value_may_be_are_checked() -> None:
    sections = shape_of(docjson.model("ReportDoc")).sub("sections")
    assert sections is not None and sections.item is not None
    items = sections.item.sub("items")  # a list of paragraphs, bullets, tables and figures
    assert items is not None and items.item is not None and items.item.kind == "union"
    section = Shape("object", "Section", (("items", items),))
    assert problems(read_documents(write_shape(section))[0], section, "Section") == []
    two_kinds = read_documents('{"items": [{"type": "para", "text"} | {"type": "figure", "key"}]}')[0]
    assert problems(two_kinds, section, "Section") == ["Section.items[]: may also be Bullets, Table; write each kind"]
    named = read_documents('{"items": "Para|Bullets|Table|FigureRef"}')[0]
    assert problems(named, section, "Section") == ["Section.items: a list of objects; write one, [{...}]"]
    bare = read_documents('{"items"}')[0]
    assert problems(bare, section, "Section") == ["Section.items: holds objects; write its keys"]


def test_generated_shapes_read_back_as_their_models() -> None:
    refs = frozenset(docjson.shown_models())
    for name in docjson.MODELS:
        shape = shape_of(docjson.model(name))
        text = write_shape(shape, refs=refs - {name})
        assert problems(read_documents(text)[0], shape, name) == [], name


# ---------------------------------------------------------------------------- commands and options


def test_every_command_and_option_is_in_its_page() -> None:
    assert coverage_problems(_pages(), PAGE_OF, commands()) == []


def test_a_command_or_option_missing_from_its_page_is_caught() -> None:
    pages = _pages()
    pages["lab.md"] = pages["lab.md"].replace("--recreate", "--re-create")
    pages["runs.md"] = (
        pages["runs.md"].replace("nsightlab roofline", "nsightlab roof-line").replace("`roofline", "`roof-line")
    )
    found = coverage_problems(pages, PAGE_OF, commands())
    assert "nsightlab create --recreate: not in lab.md" in found
    assert "nsightlab roofline: not named in runs.md (as `roofline` in code)" in found
    unmapped = {k: v for k, v in PAGE_OF.items() if k != ("fleet", "collect")}
    assert "nsightlab fleet collect: no page in the test's map of commands to pages" in coverage_problems(
        pages, unmapped, commands()
    )


def test_hidden_options_need_no_line() -> None:
    hidden = {n for c in commands() if c.path for o in c.options() if o.hidden for n in o.opts}
    assert hidden == {"--config", "--request-timeout", "--traceback"}  # the program's, copied onto each command


# ---------------------------------------------------------------------------- command lines


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home of its own: a page's `--install-completion bash` installs there when parsed."""
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("NSIGHTLAB_HOME", str(tmp_path / "nsightlab"))
    monkeypatch.delenv("NSIGHTLAB_CONFIG", raising=False)


@pytest.mark.parametrize("page", ["README.md", *sorted(p.name for p in DOCS.glob("*.md"))])
def test_every_command_line_of_a_page_parses(page: str, elsewhere: None) -> None:
    text = _readme() if page == "README.md" else (DOCS / page).read_text(encoding="utf-8")
    allowed = {**VALUES_IN_CAPITALS, **PLACEHOLDERS.get(page, {})}
    assert command_line_problems(text, page, allowed) == []


@pytest.mark.parametrize("page", sorted(PLACEHOLDERS))
def test_each_placeholder_is_said_in_its_page(page: str) -> None:
    text = _readme() if page == "README.md" else (DOCS / page).read_text(encoding="utf-8")
    assert [p for p in PLACEHOLDERS[page] if not explained(text, p)] == []


@pytest.mark.parametrize(
    ("line", "caught"),
    [
        ("nsightlab sweep --dtype fp32 --no-such-option", "No such option: --no-such-option"),
        ("nsightlab explore nodez --context stg", "No such command 'nodez'"),
        ("nsightlab profile lesson1 --top many", "'--top': Value error, is not a whole number"),
        ("nsightlab roofline", "Missing option '--weights-gb'"),
        ("nsightlab explore node NODE --context stg", "placeholder 'NODE'"),
        ("nsightlab runs show <id>", "placeholder '<id>'"),
        ("nsightlab create --context stg --no-wait && nsightlab event", "No such command 'event'"),
        ("$ OMP_NUM_THREADS=1 nsightlab sweep --itres 3", "No such option: --itres"),
    ],
)
def test_a_command_line_that_does_not_parse_is_caught(line: str, caught: str, elsewhere: None) -> None:
    page = f"# p\n\n```\n{line}   # a comment\n```\n"
    found = command_line_problems(page, "p.md", {})
    assert len(found) == 1 and found[0].startswith("p.md:4: ") and caught in found[0], found


def test_lines_that_parse_pass(elsewhere: None) -> None:
    page = (
        "Run\n\n```\nnsightlab sweep --compare 3fa2c1 --compare 9b07d4 --json | jq .verdict\n"
        "nsightlab shell -- sh -c 'which nsys'\nnsightlab fleet sweep --context stg \\\n    --every-node\n```\n\n"
        "    nsightlab analyze OUTDIR\n"
    )
    assert command_line_problems(page, "p.md", {"OUTDIR": "out"}) == []
    assert command_line_problems(page.replace("--every-node", "--every-nod"), "p.md", {"OUTDIR": "out"}) != []


def test_an_unexplained_placeholder_is_caught() -> None:
    assert explained("`CTX` is your context.\n\n```\nnsightlab doctor --context CTX\n```\n", "CTX")
    assert not explained("Run it.\n\n```\nnsightlab doctor --context CTX\n```\n", "CTX")


# ---------------------------------------------------------------------------- the README


def test_readme_is_short_and_links_every_page() -> None:
    assert readme_problems(_readme(), [p.name for p in DOCS.glob("*.md")]) == []


def test_a_long_readme_or_a_missing_link_is_caught() -> None:
    readme = _readme()
    unlinked = "\n".join(line for line in readme.splitlines() if "(docs/json.md)" not in line)
    assert readme_problems(unlinked, ["json.md"]) == ["docs/json.md is not linked from README.md's table of the manual"]
    long = readme + "more\n" * (250 - readme.count("\n"))
    assert readme_problems(long, []) == ["README.md has 250 lines; it must stay under 250 (the manual is in docs/)"]
