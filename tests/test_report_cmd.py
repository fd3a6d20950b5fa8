"""`nsightlab report`: which runs, what the files hold, how they are written."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from reportstore import SESSION_UID, Recorded, copy_home, recorded

pytest.importorskip("torch")
pytest.importorskip("matplotlib")

from nsightlab.present import docblocks as report_doc
from nsightlab.present import report as rep
from nsightlab.present import writers
from nsightlab.userconfig import Session, save_session


@pytest.fixture
def rec(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Recorded:
    return copy_home(recorded(tmp_path_factory), tmp_path, monkeypatch)


def _session(uid: str = SESSION_UID) -> None:
    save_session(
        Session(
            context="stg-online-use1", server="https://127.0.0.1:6443", namespace="ml-lab", pod="nsight-lab-me",
            uid=uid, owner="me", gpu_product="NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
            created="2026-01-01T00:00:00Z",  # type: ignore[arg-type]
        )
    )  # fmt: skip


class _Page(HTMLParser):
    """Tags with their attributes, and the text, of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


# --- the files ---


def test_report_of_everything(capsys: pytest.CaptureFixture[str], rec: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "lab-report"
    r = run_cli(capsys, "report", *sorted(rec.all_ids), "--out", str(out), "--weights-gb", "16", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["kind"] == "report-files" and doc["out_dir"] == str(out)
    assert doc["html"] == str(out / "report.html") and doc["markdown"] == str(out / "report.md")
    assert set(doc["runs"]) == rec.all_ids and doc["selection"].startswith("the runs given")
    keys = [f["key"] for f in doc["figures"]]
    assert keys == [
        "sweep",
        "roofline",
        f"kernels-{rec.cpu_profile}",
        f"kernels-{rec.kern03}",
    ]  # ref lesson1 has no kernels
    for f in doc["figures"]:
        assert Path(f["png"]).is_file() and Path(f["svg"]).is_file() and f["caption"]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["report.html", "report.md"] + [f"{k}.{e}" for k in keys for e in ("png", "svg")]
    )
    assert not list(tmp_path.glob(".lab-report.*"))  # no temporary folder left behind
    floor = doc["decode_floor"]
    measured = [x for x in floor["lines"] if x["basis"] == "measured"]
    assert [x["run_id"] for x in measured] == [rec.ref_sweep]
    assert measured[0]["ms_per_token"] == pytest.approx(10.94, abs=0.02)

    md = (out / "report.md").read_text()
    for k in keys:
        assert f"]({k}.png)" in md  # the Markdown shows the PNGs beside it
    for heading in (
        "## Runs",
        "## Environment",
        "## Bandwidth sweep",
        "## Profiles",
        "## Nsight Compute",
        "## Decode floor",
    ):
        assert heading in md
    assert "| instance type |" in md and "g7e.8xlarge" in md
    # < escaped in a table cell; the two gemvx kernels show the template flag they differ in
    assert "gemvx::kernel\\<…7, 0, cublasGemvParamsEx\\<" in md and "gemvx::kernel\\<…6, 0, " in md
    assert md.count("| SIZE | TENSOR (") == 3  # one table per sweep
    assert md.count("| SPREAD | TB/S |") == 3
    # each table row has as many cells as its header
    for block in re.findall(r"((?:^\|.*\n)+)", md, flags=re.M):
        counts = {len(re.split(r"(?<!\\)\|", row)) for row in block.strip().splitlines()}
        assert len(counts) == 1, block


def test_html_is_self_contained_and_escaped(capsys: pytest.CaptureFixture[str], rec: Recorded, tmp_path: Path) -> None:
    r = run_cli(
        capsys, "report", rec.kern03, rec.ref_sweep, rec.ref_profile, rec.ncu05, "--out", str(tmp_path / "r"), "--json"
    )
    assert r.code == 0, r
    files = json.loads(r.out)
    text = Path(files["html"]).read_text()
    page = _parse(text)
    # no URL that would need a network: nothing in src/href but data: URIs
    for tag, attrs in page.tags:
        for name in ("src", "href"):
            value = attrs.get(name)
            if value is not None:
                assert value.startswith("data:image/png;base64,"), (tag, name, value[:80])
    assert not re.search(r"https?://", text)
    assert not re.search(r"""(src|href)\s*=\s*["']?//""", text)
    csp = [a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp == ["default-src 'none'; img-src data:; style-src 'unsafe-inline'"]
    imgs = [a for t, a in page.tags if t == "img"]
    assert len(imgs) == len(files["figures"]) == 3  # sweep, roofline, kernels of fixture 03
    # kernel names (< > &) are escaped in the source and come back intact when parsed
    kernel = next(k for k in rep.select_runs([rec.kern03]).runs[0].result.kernels if "&" in k.name)  # type: ignore[attr-defined]
    assert html.escape(kernel.name, quote=True) in text
    titles = [a.get("title") for t, a in page.tags if t == "td" and a.get("title")]
    assert kernel.name in titles
    assert "gemvx::kernel<…7, 0, cublasGemvParamsEx<" in "".join(page.text)
    assert "<int, int" not in text  # never raw
    # the ncu verdict and the tutorial's lesson are there as text
    body = " ".join(page.text)
    assert "Verdicts:" in body and "latency" in body
    assert "The lesson:" in body and "memory_bound_scale" in body


def test_figures_are_the_pngs_written(capsys: pytest.CaptureFixture[str], rec: Recorded, tmp_path: Path) -> None:
    import base64

    r = run_cli(capsys, "report", rec.ref_sweep, "--out", str(tmp_path / "r"), "--json")
    files = json.loads(r.out)
    (fig,) = files["figures"]
    text = Path(files["html"]).read_text()
    (src,) = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    assert base64.b64decode(src) == Path(fig["png"]).read_bytes()


# --- which runs ---


def _selected(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    """The report's document (--terminal --json: chosen and built, nothing drawn)."""
    r = run_cli(capsys, "report", *args, "--terminal", "--json")
    assert r.code == 0, r
    doc: dict[str, Any] = json.loads(r.out)
    return doc


def test_default_is_the_lab_sessions_runs(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    _session()
    doc = _selected(capsys)
    assert {x["id"] for x in doc["runs"]} == rec.session_ids
    assert doc["selection"] == "the runs of the current lab session (pod nsight-lab-me, context stg-online-use1)"


def test_default_without_session_is_the_latest_of_each_kind(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    # latest profile (fixture 03), latest ncu, latest sweep of each dtype (the session's
    # float16 is newer than the CPU one; float32 only on the CPU)
    latest = {rec.kern03, rec.ncu05, rec.ref_sweep, rec.cpu_f32}
    doc = _selected(capsys)
    assert {x["id"] for x in doc["runs"]} == latest
    assert doc["selection"] == "the latest run of each kind (of each dtype for sweeps)"
    _session(uid="some-other-pod")
    doc = _selected(capsys)
    assert {x["id"] for x in doc["runs"]} == latest
    assert any("has no runs yet" in n for n in doc["notes"])


def test_no_runs_and_bad_refs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rec: Recorded
) -> None:
    bad = run_cli(capsys, "report", "nope99")
    assert bad.code == 2 and "no run matches 'nope99'" in bad.err
    monkeypatch.setenv("NSIGHTLAB_HOME", str(tmp_path / "empty"))
    r = run_cli(capsys, "report")
    assert r.code == 2 and "there are no runs yet" in r.err


def test_unfinished_run_is_skipped_with_a_note(
    capsys: pytest.CaptureFixture[str], rec: Recorded, tmp_path: Path
) -> None:
    folder = next(p for p in (rec.home / "runs").iterdir() if p.name.endswith(rec.cpu_f32))
    (folder / "result.json").unlink()
    doc = _selected(capsys, rec.cpu_f32, rec.cpu_f16)
    assert [x["id"] for x in doc["runs"]] == [rec.cpu_f16]
    assert any(rec.cpu_f32 in n and "did not finish" in n for n in doc["notes"])
    only = run_cli(capsys, "report", rec.cpu_f32, "--out", str(tmp_path / "r2"))
    assert only.code == 2 and "none of the chosen runs has a result" in only.err


# --- terminal, paths, --open ---


def test_terminal_writes_nothing(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    r = run_cli(capsys, "report", rec.ref_sweep, rec.cpu_profile, rec.ncu05, "--terminal", "--weights-gb", "16")
    assert r.code == 0, r
    assert not (rec.home / "reports").exists()
    out = r.out
    assert out.startswith("nsightlab report: 1 sweep, 1 profile, 1 ncu run")
    for part in ("Runs", "Environment", "Bandwidth sweep", "Profiles", "Nsight Compute", "Decode floor"):
        assert f"\n{part}\n" in out
    bars = [line for line in out.splitlines() if line.startswith("2^") and line.rstrip()[-1] in "█▉▊▋▌▍▎▏#"]
    assert len(bars) == 7  # the reference sweep's rows, each with a bar
    assert "measured" in out and "10.9" in out and "10.0" in out
    none = run_cli(capsys, "report", rec.cpu_f16, "--terminal", "--weights-gb", "16")
    assert "No floor from these runs" in none.out and f"run {rec.cpu_f16} (float16) reached no DRAM plateau" in none.out
    as_json = json.loads(run_cli(capsys, "report", rec.ref_sweep, "--terminal", "--json").out)
    assert as_json["kind"] == "report" and [s["heading"] for s in as_json["sections"]][:3] == [
        "Runs",
        "Environment",
        "Bandwidth sweep",
    ]
    table = next(i for s in as_json["sections"] for i in s["items"] if i["type"] == "table" and i.get("bars"))
    assert (
        table["columns"][:5] == ["SIZE", "TENSOR (GiB)", "TIME/CALL (ms)", "SPREAD", "TB/S"]
        and len(table["bars"]) == len(table["rows"]) == 7
    )


def test_default_folder_and_printed_paths(capsys: pytest.CaptureFixture[str], rec: Recorded) -> None:
    r = run_cli(capsys, "report", rec.cpu_f16)
    assert r.code == 0, r
    (folder,) = (rec.home / "reports").iterdir()
    lines = r.out.splitlines()
    assert lines[0] == f"report: {folder / 'report.html'}" and lines[1] == f"markdown: {folder / 'report.md'}"
    assert lines[2] == f"figure: {folder / 'sweep.png'} (and .svg)"


def test_open_uses_the_browser(rec: Recorded, tmp_path: Path) -> None:
    """--open hands the file:// URL to $BROWSER (here a script that writes it down)."""
    seen = tmp_path / "opened.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(f"import sys\nopen({str(seen)!r}, 'w').write(sys.argv[1])\n")
    env = {**os.environ, "BROWSER": f"{sys.executable} {browser} %s", "NSIGHTLAB_HOME": str(rec.home)}
    out = tmp_path / "r"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from nsightlab.cli import main; main()",
            "report",
            rec.cpu_f16,
            "--out",
            str(out),
            "--open",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert seen.read_text() == (out / "report.html").as_uri()


# --- writing ---


def test_existing_folder_keeps_other_files(capsys: pytest.CaptureFixture[str], rec: Recorded, tmp_path: Path) -> None:
    parent = tmp_path / "reports"
    out = parent / "r"
    out.mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    (out / "report.html").write_text("old")
    r = run_cli(capsys, "report", rec.cpu_f16, "--out", str(out))
    assert r.code == 0, r
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in parent.iterdir()) == ["r"]  # the temporary folder is gone
    afile = tmp_path / "afile"
    afile.write_text("x")
    bad = run_cli(capsys, "report", rec.cpu_f16, "--out", str(afile))
    assert bad.code == 2 and "is not a folder" in bad.err


def test_missing_matplotlib_writes_nothing(rec: Recorded, tmp_path: Path) -> None:
    code = "import sys\nsys.modules['matplotlib'] = None\nfrom nsightlab.cli import main\nmain()\n"
    parent = tmp_path / "reports"
    parent.mkdir()
    out = parent / "r"
    env = {**os.environ, "NSIGHTLAB_HOME": str(rec.home)}
    proc = subprocess.run(
        [sys.executable, "-c", code, "report", rec.cpu_f16, "--out", str(out)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "error: plotting needs matplotlib: pip install 'nsightlab[report]'."
    assert list(parent.iterdir()) == []  # neither the folder nor a temporary one
    # the terminal report needs no matplotlib
    proc = subprocess.run(
        [sys.executable, "-c", code, "report", rec.cpu_f16, "--terminal"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0 and "Bandwidth sweep" in proc.stdout


def test_environment_table(rec: Recorded) -> None:
    sel = rep.select_runs([rec.ref_sweep, rec.kern03, rec.cpu_profile])
    doc = rep.build_report(sel).doc
    env = next(s for s in doc.sections if s.heading == "Environment").items[0]
    assert isinstance(env, report_doc.Table)
    # one column per environment, in the order the runs ran: this machine, then the pod
    # with two different GPUs
    assert env.columns == ["", f"runs {rec.cpu_profile}", f"runs {rec.ref_sweep}", f"runs {rec.kern03}"]
    rows = {row[0]: row[1:] for row in env.rows}
    assert "stg-online-use1" in rows["context"] and "local" in rows["context"]
    assert "g7e.8xlarge" in rows["instance type"]
    assert "registry.example.com/triton-vllm-container:1.0-1" in rows["image"]
    assert any(v.startswith("2.") for v in rows["torch"])  # the CPU profile's torch version


def test_markdown_escaping() -> None:
    assert writers._md("a|b<c>*d_e") == "a\\|b\\<c\\>\\*d\\_e"
