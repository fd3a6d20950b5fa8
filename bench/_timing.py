"""Side-by-side timing of whole commands: alternate them, report medians (wall and CPU
time) and peak RSS."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

GNU_TIME = "/usr/bin/time"
ROOT = Path(__file__).resolve().parents[1]


def nsightlab_argv(root: Path, *args: str) -> list[str]:
    """The command line that runs the nsightlab of the checkout at `root`, as the console
    script does (its package first on sys.path, whatever is installed)."""
    code = (
        f"import sys; sys.path.insert(0, {str(root)!r}); sys.argv[0] = 'nsightlab'; from nsightlab.cli import entry; "
        "entry()"
    )
    return [sys.executable, "-c", code, *args]


@contextmanager
def checkouts(revs: Sequence[str]) -> Iterator[dict[str, Path]]:
    """Temporary git worktrees of `revs` (byte-compiled like this tree), removed after:
    a change is timed against the code before it in the same run."""
    import compileall

    made: dict[str, Path] = {}
    with tempfile.TemporaryDirectory(prefix="nsightlab-against-") as tmp:
        try:
            for i, rev in enumerate(revs):
                path = Path(tmp) / f"rev{i}"
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(path), rev], check=True
                )
                compileall.compile_dir(str(path / "nsightlab"), quiet=1)
                made[rev] = path
            yield made
        finally:
            for path in made.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], check=False)


def run_once(argv: Sequence[str], env: Mapping[str, str] | None = None) -> tuple[float, int, int, float]:
    """(wall seconds, peak RSS in KiB, exit code, CPU seconds) of one run, output discarded.

    The CPU time (user and system, the command's own process tree) is steadier than the
    wall time on a shared machine: other work delays a command without adding to it.

    The peak RSS comes from GNU time where it is installed: a child forked from this
    (large) process would otherwise report this process's size as its own peak.
    """
    rss_file = None
    cmd = list(argv)
    if os.path.exists(GNU_TIME):
        fd, rss_file = tempfile.mkstemp(prefix="rss-")
        os.close(fd)
        cmd = [GNU_TIME, "-f", "%M", "-o", rss_file, *cmd]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(env) if env else None)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    rss = usage.ru_maxrss
    cpu = usage.ru_utime + usage.ru_stime
    if rss_file:
        try:
            with open(rss_file) as fh:
                rss = int(fh.read().split()[-1])
        except (OSError, ValueError, IndexError):
            pass
        os.unlink(rss_file)
    return wall, rss, code, cpu


def compile_package() -> None:
    """Byte-compile nsightlab as `pip install` does for a regular install.

    An editable install writes its .pyc files on first run, unless PYTHONDONTWRITEBYTECODE
    is set (it is on some CI images); then every start compiles every module again and
    the benchmark would time the compiler, not nsightlab.
    """
    import compileall

    compileall.compile_dir(str(ROOT / "nsightlab"), quiet=1)


def side_by_side(
    commands: Mapping[str, Sequence[str]], *, repeat: int, warmup: int = 1, env: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Run each command `repeat` times, interleaved (the order turning each round), after
    `warmup` untimed rounds."""
    compile_package()
    for _ in range(warmup):
        for argv in commands.values():
            run_once(argv, env)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    rss: dict[str, list[int]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for round_ in range(repeat):
        # the order turns each round: no command always runs after the same one (a copy
        # leaves dirty pages to be written back, a big list a busy server behind it)
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            argv = commands[name]
            wall, peak, code, cpu = run_once(argv, env)
            if code != 0:
                raise SystemExit(f"{name} failed (exit {code}): {' '.join(argv)}")
            walls[name].append(wall)
            rss[name].append(peak)
            cpus[name].append(cpu)
    return {
        name: {
            "median_s": statistics.median(walls[name]),
            "min_s": min(walls[name]),
            "max_s": max(walls[name]),
            "cpu_s": statistics.median(cpus[name]),
            "peak_rss_mib": max(rss[name]) / 1024,
            "walls": walls[name],
            "cpus": cpus[name],
        }
        for name in commands
    }


def compare(results: Mapping[str, Mapping[str, Any]], a: str, b: str) -> str:
    """One line: a against b, as the ratio of medians (wall and CPU) and the median of the
    rounds' own ratios (each round ran both back to back, so a drift in the machine's
    speed cancels out)."""
    wall = results[a]["median_s"] / results[b]["median_s"]
    cpu = results[a]["cpu_s"] / results[b]["cpu_s"]
    paired = statistics.median(x / y for x, y in zip(results[a]["walls"], results[b]["walls"], strict=True))
    return f"{a} / {b}: wall {wall:.2f}x (paired rounds {paired:.2f}x), CPU {cpu:.2f}x"


def table(results: Mapping[str, Mapping[str, Any]], baseline: str) -> str:
    base = results[baseline]["median_s"]
    lines = [f"{'command':<34} {'median':>9} {'min':>9} {'max':>9} {'CPU':>9} {'peak RSS':>10} {'vs ' + baseline:>14}"]
    for name, r in results.items():
        lines.append(
            f"{name:<34} {r['median_s'] * 1000:>7.0f}ms {r['min_s'] * 1000:>7.0f}ms {r['max_s'] * 1000:>7.0f}ms "
            f"{r['cpu_s'] * 1000:>7.0f}ms {r['peak_rss_mib']:>7.0f}MiB {r['median_s'] / base:>13.2f}x"
        )
    return "\n".join(lines)
