"""The first five minutes, as a new user has them: the README's quick start from an empty
home against the API server emulator, `init` asking or refusing, placeholders refused,
the end of a session said as it is, and mistakes on the command line in plain words."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from clirun import Result, run_cli
from conftest import CONTEXTS, STG_CONTEXT
from kubesim import KubeSim
from reportstore import copy_home, recorded

from nsightlab.cluster.kubeconfig import load_kubeconfig
from nsightlab.cluster.safety import Intent, resolve_context
from nsightlab.errors import SafetyError
from nsightlab.userconfig import ClusterAlias, Config, EndedSession, load_config, load_ended_session, load_session

ROOT = Path(__file__).resolve().parents[1]
NS = "ml-lab"
OWNER = "ana"
POD = f"nsight-lab-{OWNER}"
IMAGE = "registry.example.com/triton-vllm-container:1.0-1"
# what no error line may carry: Click's and pydantic's own words
FOREIGN = ("Invalid value for", "Value error,", "Input should be", "Usage:", "Try '", "Error:", "Traceback")


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kubeconfig: Path) -> Path:
    """An empty NSIGHTLAB_HOME, the emulator's kubeconfig, no config file anywhere."""
    home = tmp_path / "home"
    monkeypatch.setenv("NSIGHTLAB_HOME", str(home))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("USER", OWNER)
    monkeypatch.delenv("NSIGHTLAB_CONFIG", raising=False)
    return home


def nsl(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    return run_cli(capsys, *args)


def one_error_line(r: Result) -> str:
    """The error line, checked to be the only line on stderr and in our words."""
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r
    assert not any(word in lines[0] for word in FOREIGN), lines[0]
    return lines[0]


def _init(capsys: pytest.CaptureFixture[str]) -> Result:
    return nsl(capsys, "init", "--context", STG_CONTEXT, "--namespace", NS, "--image", IMAGE)


# ---------------------------------------------------------------------------- the quick start


def _quick_start() -> list[list[str]]:
    """The README's first code block, as argument lists (comments dropped)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```\n(.*?)```", text, re.S)
    assert block is not None
    return [shlex.split(line.split("#", 1)[0]) for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_opens_with_three_commands_that_work_from_nothing(
    capsys: pytest.CaptureFixture[str], fresh: Path, sim: KubeSim
) -> None:
    commands = _quick_start()
    assert commands == [
        ["nsightlab", "init", "--context", "CTX", "--namespace", "NS", "--image", "IMG"],
        ["nsightlab", "doctor", "--context", "stg"],
        ["nsightlab", "create", "--context", "stg"],
    ]
    values = {"CTX": STG_CONTEXT, "NS": NS, "IMG": IMAGE}
    for argv in commands:
        r = nsl(capsys, *[values.get(a, a) for a in argv[1:]])
        assert r.code == 0, (argv, r)
    assert (fresh / "config.yaml").is_file()
    session = load_session()
    assert session is not None and (session.alias, session.context, session.namespace, session.pod) == (
        "stg",
        STG_CONTEXT,
        NS,
        POD,
    )
    pod = sim.get("pods", NS, POD)
    assert pod is not None and pod["spec"]["containers"][0]["image"] == IMAGE


def test_init_without_a_terminal_names_what_is_missing_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], fresh: Path
) -> None:
    r = nsl(capsys, "init", "--context", STG_CONTEXT)
    assert r.code == 2, r
    line = one_error_line(r)
    assert "needs --namespace, --image" in line and "--context" not in line.split("needs")[1].split("(")[0]
    assert "Give --namespace, the lab pod's (the context's is serving); --image, one with nsys, ncu and PyTorch" in line
    nothing = nsl(capsys, "init")
    assert nothing.code == 2 and "needs --context, --namespace, --image" in nothing.err
    assert all(name in nothing.err for name in CONTEXTS)  # the contexts to choose from
    assert not (fresh / "config.yaml").exists()
    typo = nsl(capsys, "init", "--context", "stg-onlin-use1", "--namespace", NS, "--image", IMAGE)
    assert typo.code == 2 and f"Did you mean {STG_CONTEXT}?" in one_error_line(typo)
    bad_ns = nsl(capsys, "init", "--context", STG_CONTEXT, "--namespace", "ML_Lab", "--image", IMAGE)
    assert bad_ns.code == 2 and "not a Kubernetes namespace name" in one_error_line(bad_ns)
    placeholder = nsl(
        capsys, "init", "--context", STG_CONTEXT, "--namespace", NS, "--image", "CHANGE-ME.example.com/x:1"
    )
    assert placeholder.code == 2 and "--image needs a real value" in placeholder.err
    assert not (fresh / "config.yaml").exists()


def _pty_run(
    argv: list[str], env: dict[str, str], answers: list[tuple[bytes, bytes]], timeout: float = 30
) -> tuple[int, bytes]:
    """Run nsightlab on a pseudo-terminal, answering each prompt when it appears."""
    import pty
    import select

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nsightlab", *argv],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    os.close(slave)
    seen = b""
    try:
        end = time.monotonic() + timeout
        pending = list(answers)
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            if pending and pending[0][0] in seen:
                os.write(master, pending.pop(0)[1])
                seen += b"\n<answered>\n"
            if proc.poll() is not None and not ready:
                break
        return proc.wait(timeout=10), seen
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)


def test_init_asks_on_a_terminal_offering_the_kubeconfigs_contexts(fresh: Path, kubeconfig: Path) -> None:
    env = {**os.environ, "TERM": "dumb", "NO_COLOR": "1"}
    names = load_kubeconfig(kubeconfig).context_names()
    number = str(names.index(STG_CONTEXT) + 1).encode()
    code, seen = _pty_run(
        ["init"],
        env,
        [
            (b"(number or name)", number + b"\n"),
            (b"Namespace for the lab pod [serving]", b"Bad_Namespace\n"),  # refused, asked again
            (b"start and end with a letter or digit", b"\n"),  # the context's own namespace, offered as the default
            (b"Lab pod image", IMAGE.encode() + b"\n"),
        ],
    )
    text = seen.decode("utf-8", "replace")
    assert code == 0, text
    assert all(name in text for name in CONTEXTS)
    assert re.search(r"prd-online-use1\s+\(protected", text)  # offered, and marked
    cfg = load_config(fresh / "config.yaml").config
    assert (cfg.clusters["stg"].context, cfg.clusters["stg"].namespace, cfg.lab.image) == (
        STG_CONTEXT,
        "serving",
        IMAGE,
    )
    assert "CHANGE-ME" not in (fresh / "config.yaml").read_text()


OLD_STARTER = """clusters:
  stg:
    context: {context}
    namespace: CHANGE-ME-namespace
lab:
  image: CHANGE-ME.registry.example.com/triton-vllm-container:1.0-1
  owner: ana
"""


def test_create_refuses_placeholders_naming_the_key_and_the_command(
    capsys: pytest.CaptureFixture[str], fresh: Path, sim: KubeSim
) -> None:
    fresh.mkdir()
    (fresh / "config.yaml").write_text(OLD_STARTER.format(context=STG_CONTEXT))
    sim.clear_requests()
    for extra in (["--dry-run"], ["--yes"]):
        r = nsl(capsys, "create", "--context", "stg", *extra)
        assert r.code == 2, r
        line = one_error_line(r)
        assert (
            f"clusters.stg.namespace ({fresh / 'config.yaml'}:4)" in line
            and f"lab.image ({fresh / 'config.yaml'}:6)" in line
        )
        assert "`nsightlab init --force`, which asks for --namespace, --image on a terminal" in line
        assert r.out == ""  # no manifest in a placeholder namespace
    # -n given on the command line: the alias's namespace does not matter, the image does
    r = nsl(capsys, "create", "--context", "stg", "-n", NS, "--dry-run")
    assert r.code == 2 and "lab.image" in r.err and "clusters.stg.namespace" not in r.err
    assert sim.requests == []
    assert sim.list("pods", NS) == [] or all(p["metadata"]["name"] != POD for p in sim.list("pods", NS))
    # the command it names does set them (keeping the alias's context)
    fixed = nsl(capsys, "init", "--force", "--namespace", NS, "--image", IMAGE)
    assert fixed.code == 0, fixed
    dry = nsl(capsys, "create", "--context", "stg", "--dry-run", "--json")
    assert dry.code == 0, dry
    manifest = json.loads(dry.out)
    assert manifest["metadata"]["namespace"] == NS and manifest["spec"]["containers"][0]["image"] == IMAGE


def test_create_without_a_config_says_to_run_init(capsys: pytest.CaptureFixture[str], fresh: Path) -> None:
    r = nsl(capsys, "create", "--context", "stg", "--dry-run")
    assert r.code == 2
    assert "there is no config file yet" in one_error_line(r) and "`nsightlab init`" in r.err


# ---------------------------------------------------------------------------- the end of a session


def test_after_cleanup_the_next_command_says_the_session_ended(
    capsys: pytest.CaptureFixture[str], fresh: Path, sim: KubeSim
) -> None:
    assert _init(capsys).code == 0
    assert nsl(capsys, "create", "--context", "stg", "--yes").code == 0
    before = datetime.now().astimezone()
    assert nsl(capsys, "cleanup", "--yes").code == 0
    assert load_session() is None and not (fresh / "session.json").exists()
    ended = load_ended_session()
    assert ended is not None and (ended.pod, ended.alias, ended.how) == (POD, "stg", "deleted")
    lines = set()
    # (cleanup itself has nothing left to delete: exit 0, see tests/test_cleanup_twice.py)
    for command in (["status"], ["shell", "--", "true"], ["logs"], ["events"]):
        r = nsl(capsys, *command)
        assert r.code == 3, (command, r)
        lines.add(one_error_line(r))
    (line,) = lines  # the same words, whichever command
    at = re.search(r"at (\d\d:\d\d)\)", line)
    assert at is not None and at.group(1) in {
        before.strftime("%H:%M"),
        (before + timedelta(minutes=1)).strftime("%H:%M"),
    }
    assert (
        line
        == f"error: no lab session ({POD} was deleted at {at.group(1)}); start one with nsightlab create --context stg"
    )
    # the command it prints runs as printed, and the new session replaces the record
    command = line.split("start one with ", 1)[1]
    again = nsl(capsys, *shlex.split(command)[1:])
    assert again.code == 0, again
    assert load_session() is not None and load_ended_session() is None


def test_a_pod_found_gone_ends_the_session_too(capsys: pytest.CaptureFixture[str], fresh: Path, sim: KubeSim) -> None:
    assert _init(capsys).code == 0
    assert nsl(capsys, "create", "--context", "stg", "--yes").code == 0
    sim.remove("pods", NS, POD)  # e.g. deleted by hand, or by the cluster
    gone = nsl(capsys, "status")
    assert gone.code == 0 and "is gone" in gone.out and f"`nsightlab create --context stg -n {NS}`" in gone.out
    r = nsl(capsys, "status")
    assert r.code == 3 and f"({POD} was found gone at " in one_error_line(r)


def test_the_ended_record_names_a_namespace_that_is_not_the_usual_one(tmp_path: Path) -> None:
    kc = load_kubeconfig(sim_free_kubeconfig(tmp_path))
    cfg = Config(clusters={"stg": ClusterAlias(context=STG_CONTEXT, namespace=NS)})
    yesterday = datetime.now(timezone.utc) - timedelta(days=2)
    ended = EndedSession(context=STG_CONTEXT, alias="stg", namespace="team-b", pod=POD, ended=yesterday, how="deleted")
    with pytest.raises(SafetyError) as err:
        resolve_context(None, config=cfg, kubeconfig=kc, intent=Intent.READ, ended=ended)
    when = yesterday.astimezone().strftime("%Y-%m-%d %H:%M")  # not today: the date too
    assert (
        err.value.line()
        == f"error: no lab session ({POD} was deleted at {when}); start one with nsightlab create --context stg -n "
        "team-b"
    )
    assert err.value.exit_code == 3
    # without the record it is the old refusal: no context, never the current-context
    with pytest.raises(SafetyError, match="current-context"):
        resolve_context(None, config=cfg, kubeconfig=kc, intent=Intent.READ)


def sim_free_kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kc"
    ctxs = [
        {"name": n, "context": {"cluster": "c", "user": "u", "namespace": o["namespace"]}} for n, o in CONTEXTS.items()
    ]
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": ctxs,
    }
    path.write_text(json.dumps(doc))
    return path


# ---------------------------------------------------------------------------- what people type


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["sweep", "--dtype", "fp17"], "--dtype 'fp17' is not an element type the sweep knows"),
        (["sweep", "--iters", "x"], "--iters 'x' is not a whole number; see `nsightlab sweep --help`"),
        (["sweep", "--iters", "0"], "--iters '0' must be at least 1"),
        (["sweep", "--itres", "5"], "nsightlab sweep has no option --itres (did you mean --iters?)"),
        (["crate", "--context", "stg"], "nsightlab has no command 'crate' (did you mean create?)"),
        (["copy", "lesson1.py"], "missing argument DST; see `nsightlab copy --help`"),
        (["status", "extra"], "unexpected extra argument(s): extra"),
        (["explore", "nodes", "--context"], "--context needs a value; see `nsightlab explore nodes --help`"),
        (["profile", "lesson1", "--profiler", "perf"], "bad value for --profiler"),
    ],
)
def test_usage_errors_are_one_line_in_our_words(
    capsys: pytest.CaptureFixture[str], fresh: Path, argv: list[str], words: str
) -> None:
    r = nsl(capsys, *argv)
    assert r.code == 2, r
    assert words in one_error_line(r)
    assert r.out == ""


def test_a_bad_config_value_is_said_without_pydantic(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("lab:\n  gpus: lots\n")
    r = nsl(capsys, "--config", str(path), "config")
    assert r.code == 2
    assert f"{path}:2: bad value for 'lab.gpus': 'lots' is not a whole number" in one_error_line(r)
    path.write_text("lab:\n  memory: twenty\n")
    r = nsl(capsys, "--config", str(path), "config")
    assert "bad value for 'lab.memory': 'twenty' is not a Kubernetes quantity" in one_error_line(r)


def test_a_mistyped_context_gets_the_closest_name(
    capsys: pytest.CaptureFixture[str], fresh: Path, sim: KubeSim
) -> None:
    assert _init(capsys).code == 0
    sim.clear_requests()
    r = nsl(capsys, "explore", "nodes", "--context", "stg-onlin-use1")
    assert r.code == 4 and f"Did you mean {STG_CONTEXT}?" in one_error_line(r)
    alias = nsl(capsys, "status", "--context", "stgg")
    assert alias.code == 4 and "Did you mean stg?" in one_error_line(alias)
    far = nsl(capsys, "status", "--context", "qa-cluster-9")
    assert far.code == 4 and "Did you mean" not in far.err and "Known aliases: stg" in far.err
    assert sim.requests == []


@pytest.mark.parametrize(
    ("typed", "canonical"),
    [
        ("fp16", "float16"),
        ("half", "float16"),
        ("bf16", "bfloat16"),
        ("fp32", "float32"),
        ("float", "float32"),
        ("fp64", "float64"),
        ("double", "float64"),
        ("Float32", "float32"),
        ("torch.float16", "float16"),
    ],
)
def test_dtype_aliases_become_the_canonical_name(typed: str, canonical: str, fresh: Path) -> None:
    from nsightlab.measure.bandwidth_sweep import plan_sweep

    assert plan_sweep(dtype=typed, sizes=None, iters=None, warmup=None, device=None).dtype == canonical


def test_a_sweep_asked_for_as_fp32_is_stored_and_shown_as_float32(
    capsys: pytest.CaptureFixture[str],
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("torch")
    rec = copy_home(recorded(tmp_path_factory), tmp_path, monkeypatch)  # its float32 sweep ran as `--dtype fp32`
    (run,) = [p for p in (rec.home / "runs").iterdir() if p.name.endswith(rec.cpu_f32)]
    assert "-sweep-float32-" in run.name
    meta = json.loads((run / "meta.json").read_text())
    assert meta["dtype"] == "float32" and meta["name"] == "float32" and "fp32" not in meta["command"]
    assert json.loads((run / "raw" / "sweep.json").read_text())["dtype"] == "float32"  # what the script was asked for
    shown = nsl(capsys, "runs", "show", rec.cpu_f32)
    assert shown.code == 0 and "dtype: float32" in shown.out and re.search(r"\bfp32\b", shown.out) is None


# ---------------------------------------------------------------------------- hints that run


@pytest.fixture
def configured(capsys: pytest.CaptureFixture[str], fresh: Path) -> Iterator[Path]:
    assert _init(capsys).code == 0
    yield fresh


def test_the_hint_for_a_missing_pod_is_a_command_that_runs(
    capsys: pytest.CaptureFixture[str], configured: Path, sim: KubeSim
) -> None:
    r = nsl(capsys, "shell", "--context", "stg", "--", "true")
    assert r.code == 5, r
    hint = re.search(r"`(nsightlab [^`]+)`", one_error_line(r))
    assert hint is not None and hint.group(1) == f"nsightlab create --context stg -n {NS}"
    ran = nsl(capsys, *shlex.split(hint.group(1))[1:])
    assert ran.code == 0, ran
    assert sim.get("pods", NS, POD) is not None


def test_cleanup_all_mine_with_nothing_to_delete_says_so(capsys: pytest.CaptureFixture[str], configured: Path) -> None:
    r = nsl(capsys, "cleanup", "--context", "stg", "--all-mine", "--yes")
    assert r.code == 0, r
    assert r.out.strip() == f"there were no lab pods of {OWNER} in {NS}"
    assert "already gone" not in r.out


def _readme_block(index: int) -> list[list[str]]:
    """The README's `index`-th code block (0 is the quick start), as argument lists."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.findall(r"```\n(.*?)```", text, re.S)[index]
    return [shlex.split(line.split("#", 1)[0]) for line in block.splitlines() if line.strip()]


@pytest.mark.slow
@pytest.mark.torch
def test_the_readme_from_the_top_reaches_a_profile_and_a_report(
    capsys: pytest.CaptureFixture[str], fresh: Path, sim: KubeSim
) -> None:
    """A newcomer's walk, command by command as the README prints them: the quick start,
    then the tutorial. The emulated pod's torch is a CPU build, so the printed `profile`
    and `sweep` end in the documented exit 6 with its one line, and the walk goes on as
    that line says, with `--device cpu` (and small sizes, so the walk takes seconds)."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine's torch sees a GPU")
    values = {"CTX": STG_CONTEXT, "NS": NS, "IMG": IMAGE}
    for argv in _readme_block(0):
        r = nsl(capsys, *[values.get(a, a) for a in argv[1:]])
        assert r.code == 0, (argv, r)
    # the lab image brings Nsight Systems: here a stand-in that replays a real nsys export
    fixture = ROOT / "tests" / "fixtures" / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv"
    sim.put_tool(NS, POD, "nsys", (ROOT / "tests" / "standins" / "nsys").read_text().replace("@FIXTURE@", str(fixture)))
    small = {
        "profile": ["--", "--scale-log2", "14", "--gemm-n", "32"],
        "sweep": ["--sizes", "12,14", "--iters", "2", "--warmup", "1"],
    }
    tutorial = _readme_block(1)
    assert [argv[1] for argv in tutorial] == ["profile", "sweep", "report", "cleanup"]
    for argv in tutorial:
        command = argv[1]
        r = nsl(capsys, *argv[1:])
        if command in small:
            assert r.code == 6, (argv, r)
            line = r.err.strip().splitlines()[-1]  # after the progress the command printed
            assert sum(x.startswith("error: ") for x in r.err.splitlines()) == 1
            assert (
                line == f"error: torch in the pod cannot see the GPU: CPU-only build {torch.__version__}; use an image "
                "with CUDA torch, or --device cpu."
            )
            extra = small[command]
            cut = extra.index("--") if "--" in extra else len(extra)
            r = nsl(capsys, *argv[1:], "--device", "cpu", *extra[:cut], *extra[cut:])
        assert r.code == 0, (argv, r)
        if command == "report":
            html = next(p for p in r.out.split() if p.endswith("report.html"))
            page = Path(html).read_text(encoding="utf-8")
            assert "Bandwidth sweep" in page and "lesson1" in page
    assert sim.get("pods", NS, POD) is None or sim.get("pods", NS, POD)["metadata"].get("deletionTimestamp")
