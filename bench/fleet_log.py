"""A fleet Job whose log is large: peak RSS of `nsightlab fleet sweep` and the bytes it
stores, for logs of --mib MiB (repeatable), this checkout and `--against REV`.

    python bench/fleet_log.py [--mib 100 --mib 300] [--against REV ...]

Against kubesim (its Jobs run for real): the Job's sweep.py is swapped (in the fleet's
ConfigMap, as the command runs) for one that prints --mib MiB of 1 KB lines, then writes
a real CPU sweep record; the fleet stores it as a sweep run. The log is held whole by
kubesim (in this process), never by the nsightlab measured (a process of its own, its
peak RSS from GNU time). "stored" is every byte under NSIGHTLAB_HOME after the run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from _timing import checkouts, compile_package, run_once  # noqa: E402
from kubesim import KubeSim, realistic_cluster  # noqa: E402

CTX = "stg-online-use1"
TINY = ["--device", "cpu", "--sizes", "10,12", "--iters", "2", "--warmup", "0"]
RECORD = ROOT / "tests" / "data" / "sweep_cpu_float32_epyc-2c-l3-32mib.json"


def noisy_sweep(mib: int) -> str:
    return (
        "import sys\n"
        "line = 'x' * 1023 + '\\n'\n"
        f"for _ in range({mib} * 1024):\n"
        "    sys.stdout.write(line)\n"
        "sys.stdout.flush()\n"
        "out = sys.argv[sys.argv.index('--json') + 1]\n"
        f"open(out, 'w').write({RECORD.read_text()!r})\n"
    )


def argv(root: Path, script: str) -> list[str]:
    """nsightlab of the checkout at `root`, its fleet's sweep.py swapped for `script`."""
    code = (
        f"import sys; sys.path.insert(0, {str(root)!r}); sys.argv[0] = 'nsightlab'\n"
        "from nsightlab.measure import fleet as fl\n"
        "real = fl.fleet_scripts\n"
        f"fl.fleet_scripts = lambda: {{**real(), 'sweep.py': {script!r}}}\n"
        "from nsightlab.cli import entry\n"
        "entry()\n"
    )
    return [sys.executable, "-c", code, "fleet", "sweep", "--context", CTX, "--types", "g6.12xlarge", *TINY, "--yes"]


def stored(home: Path) -> int:
    return sum(p.stat().st_size for p in home.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, action="append", default=[])
    parser.add_argument("--against", metavar="REV", action="append", default=[])
    args = parser.parse_args()
    sizes = args.mib or [100, 300]
    compile_package()
    tmp = Path(tempfile.mkdtemp(prefix="fleet-log-bench-"))
    (tmp / "config.yaml").write_text("lab:\n  image: registry.example.com/lab:1\n  owner: bench\n")
    print(f"{'log':>8} {'checkout':<16} {'exit':>4} {'wall':>8} {'peak RSS':>9} {'stored':>10}")
    try:
        with checkouts(args.against) as trees, KubeSim(tls=True, kubelet_delay=0.05) as sim:
            sim.load(realistic_cluster())
            kubeconfig = sim.write_kubeconfig(tmp / "kubeconfig", {CTX: {"namespace": "serving"}})
            for mib in sizes:
                for tag, root in {"this checkout": ROOT, **{f"at {r}": t for r, t in trees.items()}}.items():
                    home = tmp / "home"
                    shutil.rmtree(home, ignore_errors=True)
                    env = {
                        **os.environ,
                        "NSIGHTLAB_HOME": str(home),
                        "NSIGHTLAB_CONFIG": str(tmp / "config.yaml"),
                        "KUBECONFIG": str(kubeconfig),
                    }
                    wall, rss, code, _cpu = run_once(argv(root, noisy_sweep(mib)), env)
                    print(
                        f"{mib:>4} MiB {tag:<16} {code:>4} {wall:>7.1f}s {rss / 1024:>6.0f}MiB "
                        f"{stored(home) / (1 << 20):>7.1f}MiB",
                        flush=True,
                    )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
