"""Nothing from outside drives the terminal: every view the CLI has, fed the hostile strings
of tests/hostile.py (OSC 52 clipboard writes, title changes, screen clears, hidden text,
C1 controls, lone CR and BS, bidi overrides, Rich markup), is run through the console
entry point (`python -m nsightlab`) under a real pty, and what reaches the terminal holds
no escape sequence, no C1 control and no lone carriage return or backspace; Rich markup
in a name stays literal. The same commands with their output in a pipe (what `| less`
shows) hold none either, and `--json` keeps the data: the names decode to what they were.

The walker is `VIEWS`: each entry names the command line and what it needs (files, a
stored run, the API server with hostile objects, a lab session). A new renderer gets a
line there.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import threading
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hostile
import pytest
from conftest import CONTEXTS, STG_CONTEXT
from kubesim import KubeSim, realistic_cluster
from reportstore import _store

from nsightlab.present.safe import json_text, terminal_safe
from nsightlab.runs import store
from nsightlab.runs.analyze import analyze_path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
NCU04 = HERE / "fixtures" / "ncu" / "04_ncu_csv_section_SpeedOfLight_cutlass_gemm_rtx5090.csv"
NS = "ml-lab"
OWNER = "ana"
POD = f"nsight-lab-{OWNER}"
TIMEOUT = 120.0  # one command, on a loaded machine
MARKUP = hostile.TERMINAL["markup"]
EVIL_ALIAS = "evil\x1b[2Jalias"  # an alias in config.yaml (a read-only command may use it)

# Rich's own cursor controls (the spinner of a slow step hides the cursor and redraws its
# line): the only escape sequences a run may hold. TERM=dumb keeps Rich from styling.
RICH_CONTROLS = (b"\x1b[?25l", b"\x1b[?25h", b"\x1b[2K", b"\x1b[1A", b"\x1b[1G")


@dataclass
class Shown:
    code: int
    raw: bytes

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", errors="replace")


def run_in_pty(args: list[str], env: dict[str, str]) -> Shown:
    """`python -m nsightlab ARGS` with stdin, stdout and stderr on one pty (200 columns),
    as a person at a terminal runs it; every byte the terminal receives."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "nsightlab", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
        start_new_session=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError as e:  # EIO: the child closed its end
                    if e.errno != errno.EIO:
                        raise
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
            pytest.fail(f"{args} did not end within {TIMEOUT:.0f} s: {b''.join(chunks)[-2000:]!r}")
        code = proc.wait(timeout=30)
    finally:
        os.close(master)
    return Shown(code=code, raw=b"".join(chunks))


def run_in_pipe(args: list[str], env: dict[str, str]) -> Shown:
    proc = subprocess.run(
        [sys.executable, "-m", "nsightlab", *args],
        capture_output=True,
        env=env,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    return Shown(code=proc.returncode, raw=proc.stdout + proc.stderr)


def assert_inert(shown: Shown, what: str) -> None:
    """No escape sequence but Rich's own cursor controls, no C1 control (raw or in UTF-8),
    no BEL, BS or DEL, no carriage return but a line end's."""
    raw = shown.raw
    for ours in RICH_CONTROLS:
        raw = raw.replace(ours, b"")
    text = raw.decode("utf-8", errors="replace")
    bad = [
        (i, repr(ch))
        for i, ch in enumerate(text)
        if ch in "\x1b\x07\x08\x7f" or "\x80" <= ch <= "\x9f" or (ch == "\r" and text[i + 1 : i + 2] != "\n")
    ]
    assert not bad, f"{what}: {bad[:5]} in {text[max(0, bad[0][0] - 200) : bad[0][0] + 200]!r}"
    assert "\ufffd" not in text, f"{what}: bytes that are not UTF-8 reached the terminal"
    assert "\u202e" not in text, f"{what}: a bidi override reached the terminal"


# ---------------------------------------------------------------------------- the world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Hostile inputs on disk, a store holding a hostile run, and the API server serving
    hostile objects with a lab session on it: made once for the whole walk."""
    base = tmp_path_factory.mktemp("hostile")
    files = base / "files"
    files.mkdir()
    nsys_dir = hostile.nsys_exports(files / "nsys")
    trace = hostile.kineto_trace(files / "steps.pt.trace.json")
    ncu = hostile.ncu_csv(files / "ncu.csv", NCU04)
    home = base / "home"
    with KubeSim(tls=True, kubelet_delay=0.05) as sim:
        sim.load(hostile.hostile_cluster(realistic_cluster(), NS))
        kubeconfig = sim.write_kubeconfig(base / "kubeconfig", CONTEXTS)
        config = base / "config.yaml"
        config.write_text(
            f"clusters:\n  stg:\n    context: {STG_CONTEXT}\n    namespace: {NS}\n"
            '  "evil\\e[2Jalias":\n    context: dev-ml-use1\n'
            f"lab:\n  image: registry.example.com/triton-vllm-container:1.0-1\n  owner: {OWNER}\n"
        )
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "NSIGHTLAB_HOME": str(home),
            "NSIGHTLAB_CONFIG": str(config),
            "KUBECONFIG": str(kubeconfig),
            "TERM": "dumb",
            "COLUMNS": "200",
            "LINES": "50",
        }
        for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
            env.pop(name, None)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("NSIGHTLAB_HOME", str(home))
            run_id = _store("profile", "evil", hostile.hostile_profile(analyze_path(nsys_dir)), _now())
            meta_path = store.resolve(run_id).path / "meta.json"
            meta = json.loads(meta_path.read_text())
            meta.update(node=hostile.EVIL_NODE, gpu=hostile.TERMINAL["c1-csi"], headline=hostile.TERMINAL["hidden"])
            meta_path.write_text(json.dumps(meta))
            pack_run = _store("pack", "evil", _hostile_colocate(), _now(), gpu=hostile.TERMINAL["osc52"])
            tokenizer_run = _store("tokenizer", "evil", _hostile_tokenizer(), _now(), gpu=None)
        yield {
            "sim": sim,
            "env": env,
            "home": home,
            "nsys": nsys_dir,
            "trace": trace,
            "ncu": ncu,
            "run": run_id,
            "pack_run": pack_run,
            "tokenizer_run": tokenizer_run,
        }


def _hostile_colocate() -> Any:
    """A `pack colocate` result whose device name, notes and model come from a hostile pod
    (colocate.py's JSON is what the pod wrote)."""
    from nsightlab.analysis.colocate_result import build_colocate
    from nsightlab.parse.records.colocate_record import ColocateRecord

    copy = {"copy": 0, "median_step_s": 0.002, "p90_step_s": 0.002, "tokens_per_s": 500.0, "bytes_per_step": 1 << 20}
    run = {
        "sharing": "time-slicing",
        "copies": 1,
        "per_copy": [copy],
        "median_step_s": 0.002,
        "p90_step_s": 0.002,
        "aggregate_tokens_per_s": 500.0,
        "aggregate_bytes_per_s": 5.2e8,
    }
    record = ColocateRecord.model_validate(
        {
            "kind": "colocate",
            "device": {"type": "cuda", "name": f"GPU {hostile.TERMINAL['title']}"},
            "model": {"preset": f"evil {hostile.TERMINAL['osc52']}"},
            "batch": 1,
            "tokens": 8,
            "prompt_len": 16,
            "runs": [run],
            "notes": [f"note {v}" for v in hostile.TERMINAL.values()],
        }
    )
    return build_colocate(record, plateau_tbps=None, basis=None, label=None)


def _hostile_tokenizer() -> Any:
    """A `pack tokenizer` result whose tokenizer name, CPU and notes came from a hostile pod."""
    from nsightlab.analysis.tokenizer_result import build_tokenizer
    from nsightlab.parse.records.tokenizer_record import TokenizerRecord

    record = TokenizerRecord.model_validate(
        {
            "kind": "tokenizer",
            "tokenizer": f"/models/{hostile.TERMINAL['osc52']}/tokenizer.json",
            "vocab_size": 1000,
            "prompts": {"count": 10, "source": f"file {hostile.TERMINAL['title']}", "mean_tokens": 100.0},
            "cpu_s": 0.1,
            "wall_s": 0.1,
            "tokens": 1000,
            "ms_per_request": 10.0,
            "requests_per_s_per_vcpu": 100.0,
            "tokens_per_s_per_vcpu": 10000.0,
            "device": {"type": "cpu", "name": f"CPU {hostile.TERMINAL['title']}"},
            "notes": [f"note {v}" for v in hostile.TERMINAL.values()],
        }
    )
    return build_tokenizer(record, pod_cpu=4.0)


def _now() -> Any:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc)


def _lab(world: dict[str, Any]) -> None:
    """A lab session (made once), and Events about its pod whose messages are hostile."""
    if world.get("lab"):
        return
    shown = run_in_pipe(["create", "--context", "stg", "--yes"], world["env"])
    assert shown.code == 0, shown.text
    sim: KubeSim = world["sim"]
    pod = sim.get("pods", NS, POD)
    assert pod is not None
    for i, message in enumerate(hostile.event_messages()):
        sim.record_event(pod, f"Evil{i}", message, type="Warning", source=hostile.TERMINAL["title"])
    # as a broken or hostile server may say it: the pod is on a node whose name is hostile
    pod["spec"]["nodeName"] = hostile.EVIL_NODE
    sim.put(pod)
    world["lab"] = True


def _fleet_labels(world: dict[str, Any]) -> None:
    """A fleet's Job whose fleet id (a label) is hostile: `fleet status` lists it."""
    if world.get("fleet"):
        return
    sim: KubeSim = world["sim"]
    sim.put(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "nsl-fleet-evil-g7e",
                "namespace": NS,
                "labels": {
                    "app.kubernetes.io/managed-by": "nsightlab",
                    "nsightlab/owner": OWNER,
                    "nsightlab/fleet": hostile.TERMINAL["clear"],
                },
            },
            "spec": {
                "suspend": True,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}},
            },
        }
    )
    world["fleet"] = True


# What every view needs, then its command line. `{run}`, `{trace}`... are filled from the world.
# Each shows at least one hostile string (escaped), so the walk really reaches its renderer.
VIEWS: list[tuple[str, str | None, list[str]]] = [
    ("analyze nsys exports", None, ["analyze", "{nsys}"]),
    ("analyze a Kineto trace", None, ["analyze", "{trace}"]),
    ("analyze an ncu CSV", None, ["analyze", "{ncu}"]),
    ("runs", None, ["runs"]),
    ("runs show", None, ["runs", "show", "{run}"]),
    ("analyze a stored run", None, ["analyze", "{run}"]),
    ("report --terminal", None, ["report", "{run}", "--terminal"]),
    ("config", None, ["config"]),
    ("explore nodes", None, ["explore", "nodes", "--context", "stg"]),
    ("explore pods", None, ["explore", "pods", "--context", "stg", "-n", NS]),
    ("explore pod", None, ["explore", "pod", "{evil_pod}", "--context", "stg", "-n", NS]),
    ("explore node", None, ["explore", "node", "{evil_node}", "--context", "stg"]),
    ("doctor", None, ["doctor", "--context", "{evil_alias}"]),
    ("status", "lab", ["status"]),
    ("events", "lab", ["events"]),
    ("create (reused)", "lab", ["create", "--context", "stg", "--yes"]),
    ("fleet status", "fleet", ["fleet", "status", "--context", "stg"]),
    ("pack", None, ["pack", "--context", "stg"]),
    ("runs show (pack colocate)", None, ["runs", "show", "{pack_run}"]),
    ("report --terminal (pack colocate)", None, ["report", "{pack_run}", "--terminal"]),
    ("runs show (pack tokenizer)", None, ["runs", "show", "{tokenizer_run}"]),
    ("report --terminal (pack tokenizer)", None, ["report", "{tokenizer_run}", "--terminal"]),
]


def _args(world: dict[str, Any], args: list[str]) -> list[str]:
    values = {k: str(v) for k, v in world.items() if isinstance(v, (str, Path))}
    values["evil_pod"] = f"evil-0-{hostile.TERMINAL['osc52']}"
    values["evil_node"] = hostile.EVIL_NODE
    values["evil_alias"] = EVIL_ALIAS
    return [a.format(**values) if a.startswith("{") else a for a in args]


def _prepare(world: dict[str, Any], needs: str | None) -> None:
    if needs == "lab":
        _lab(world)
    elif needs == "fleet":
        _fleet_labels(world)


@pytest.mark.parametrize(("what", "needs", "args"), VIEWS, ids=[v[0] for v in VIEWS])
def test_a_view_under_a_pty_gets_no_escape_from_outside(
    world: dict[str, Any], what: str, needs: str | None, args: list[str]
) -> None:
    _prepare(world, needs)
    argv = _args(world, args)
    shown = run_in_pty(argv, world["env"])
    assert shown.code == 0, (what, shown.text[-3000:])
    assert_inert(shown, what)
    piped = run_in_pipe(argv, world["env"])
    assert piped.code == 0, (what, piped.text[-3000:])
    assert_inert(piped, f"{what} (piped)")
    # something hostile was shown (escaped), so the view was really walked
    assert "\\x1b" in shown.text or "\\x9b" in shown.text or "\\x07" in shown.text, (what, shown.text[-2000:])


@pytest.mark.parametrize(
    "args",
    [["analyze", "{nsys}"], ["runs", "show", "{run}"], ["report", "{run}", "--terminal"], ["events"]],
    ids=["analyze", "runs show", "report --terminal", "events"],
)
def test_rich_markup_in_a_name_stays_literal(world: dict[str, Any], args: list[str]) -> None:
    if args == ["events"]:
        _lab(world)
    shown = run_in_pty(_args(world, args), world["env"])
    assert shown.code == 0, shown.text[-2000:]
    assert MARKUP in shown.text.replace("\r\n", "\n"), shown.text[-3000:]


def test_json_keeps_the_data_and_no_raw_control_reaches_the_terminal(world: dict[str, Any]) -> None:
    shown = run_in_pty(_args(world, ["analyze", "{nsys}", "--json"]), world["env"])
    assert shown.code == 0, shown.text[-2000:]
    assert_inert(shown, "analyze --json")
    data = json.loads(shown.text.replace("\r\n", "\n"))
    ranges = {r["name"] for r in data["ranges"]}
    for name in hostile.csv_safe():
        assert f"range {name}" in ranges, name  # the data as it was, escapes and all


def test_a_failed_fleet_jobs_log_lines_and_reason_are_shown_escaped(world: dict[str, Any], tmp_path: Path) -> None:
    """A fleet whose Job fails (this machine's torch is a CPU build) with hostile lines in
    its log: the live view on the pty, the result's log tails, the error line."""
    sim: KubeSim = world["sim"]
    env = {**world["env"], "NSIGHTLAB_HOME": str(tmp_path / "home")}
    stop = threading.Event()

    def poison() -> None:
        # as soon as the Job's pod exists, its log gets the hostile lines (the script's own
        # failure follows them)
        done: set[str] = set()
        while not stop.is_set():
            for pod in sim.list("pods", NS):
                name = pod["metadata"]["name"]
                if name.startswith("nsl-fleet-") and name not in done:
                    lines = reversed(hostile.TERMINAL.values())  # the clipboard write last: in the tail
                    sim.append_log(NS, name, "".join(f"{line}\n" for line in lines))
                    done.add(name)
            stop.wait(0.05)

    thread = threading.Thread(target=poison, daemon=True)
    thread.start()
    try:
        args = ["fleet", "sweep", "--context", "stg", "--types", "g7e.8xlarge", "--sizes", "10,12", "--iters", "2"]
        shown = run_in_pty([*args, "--warmup", "0", "--yes"], env)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert shown.code == 6, shown.text[-3000:]
    assert_inert(shown, "fleet sweep (a failed Job)")
    assert "\\x1b]52;c;" in shown.text, shown.text[-3000:]  # the log lines were shown, escaped
    assert "torch cannot see the GPU" in shown.text


def test_the_corpus_reaches_the_csv_readers_whole() -> None:
    """The hostile strings the CSV builders leave out are only those a line-based reader
    cannot carry in a cell; every terminal one is among those fed to the CSV readers."""
    kept = set(hostile.csv_safe())
    assert {s for s in hostile.TERMINAL.values() if "\r" not in s} <= kept
    assert len(kept) >= len(hostile.every()) - 9


# ---------------------------------------------------------------------------- the function itself

_UNSAFE = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp")]


def test_terminal_safe_leaves_no_control_format_or_separator_character() -> None:
    text = "".join(_UNSAFE)
    shown = terminal_safe("a" + text + "b")
    assert not [ch for ch in shown if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")]
    assert shown.startswith("a\\x00\\x01") and shown.endswith("b") and "\\u202e" in shown and "\\x9b" in shown
    # plain text of any script is kept, and escaping twice changes nothing
    for kept in ("void at::native::kernel<float>(T1)", "ｐｒｄ Ωmega 核 🙂 a\u00a0b", "back\\slash"):
        assert terminal_safe(kept) == kept
    assert terminal_safe(shown) == shown
    assert terminal_safe(42) == "42"


def test_json_text_escapes_what_a_terminal_acts_on_and_keeps_the_data() -> None:
    raw_in_json = [ch for ch in _UNSAFE if ord(ch) >= 0x7F]  # C0 is always escaped by JSON encoders
    document = json.dumps({"names": [*raw_in_json, "µs ok"]}, ensure_ascii=False)
    safe = json_text(document)
    assert not [ch for ch in safe if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")]
    assert json.loads(safe) == json.loads(document)
    assert "µs ok" in safe  # other characters stay as they are
