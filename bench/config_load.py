"""config.yaml with many `protected_contexts`: load it and check one context, at 10k, 20k
and 40k patterns, side by side (the time per pattern must stay flat: linear).

    python bench/config_load.py [--repeat 3] [--sizes 10000,20000,40000] [--against REV]

What is timed, in a fresh interpreter for each run (its start-up not counted): what every
cluster command does with the file, `load_config(path)`, then `all_protected_patterns()`
and `protection_reason()` for one ASCII context name against them. `--against REV` times
the same code at a git revision (a temporary worktree), in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs inside the tree being timed (its nsightlab first on sys.path); prints seconds.
PROBE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from nsightlab.cluster.safety import protection_reason
from nsightlab.userconfig import load_config
t0 = time.perf_counter()
config = load_config(Path(sys.argv[2])).config
patterns = config.all_protected_patterns()
reason = protection_reason("stg-online-use1", patterns)
elapsed = time.perf_counter() - t0
assert reason is None and len(patterns) == int(sys.argv[3]) + 3, (reason, len(patterns))
print(elapsed)
"""


def write_config(path: Path, n: int) -> None:
    """n distinct patterns, half tokens and half globs, as a team might list its clusters."""
    lines = ["protected_contexts:"]
    lines += [f"  - team-{i}-live" if i % 2 else f"  - 'eu-{i}-*'" for i in range(n)]
    path.write_text("\n".join(lines) + "\n")


def time_once(tree: Path, config: Path, n: int) -> float:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tree), str(config), str(n)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"the probe failed in {tree}:\n{done.stderr}")
    return float(done.stdout.strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", default="10000,20000,40000")
    parser.add_argument("--against", metavar="REV", help="also time the code at this git revision")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="nsightlab-config-") as tmp:
        trees = {"here": ROOT}
        if args.against:
            old = Path(tmp) / "old"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(old), args.against], check=True
            )
            trees[args.against] = old
        try:
            configs = {}
            for n in sizes:
                configs[n] = Path(tmp) / f"config-{n}.yaml"
                write_config(configs[n], n)
            results: dict[tuple[str, int], list[float]] = {(name, n): [] for name in trees for n in sizes}
            for _ in range(args.repeat):  # interleaved, so that a slow moment hits every cell
                for n in sizes:
                    for name, tree in trees.items():
                        results[(name, n)].append(time_once(tree, configs[n], n))
        finally:
            if args.against:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(Path(tmp) / "old")], check=False
                )
    print(f"{'code':<12} {'patterns':>9} {'median':>9} {'min':>9} {'max':>9} {'per pattern':>12}")
    for (name, n), times in results.items():
        med = statistics.median(times)
        print(
            f"{name:<12} {n:>9,} {med * 1000:>7.0f}ms {min(times) * 1000:>7.0f}ms {max(times) * 1000:>7.0f}ms "
            f"{med / n * 1e6:>9.1f} us"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
