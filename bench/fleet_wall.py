"""Wall time of `nsightlab fleet sweep` by the number of Jobs (run by hand, not a test).

    python bench/fleet_wall.py [--repeat 3] [--delay 0.05]

Against kubesim (HTTPS, scheduler and kubelet steps of --delay seconds), whose Jobs run
their containers as local processes: each Job runs the real lab_scripts/sweep.py with
this machine's CPU torch at tiny sizes (`--device cpu --sizes 10,12 --iters 2 --warmup
0`), so a Job's work is almost all Python and torch starting up. Times the whole console
command (start, plan, ConfigMap, Jobs, results stored, Jobs deleted) for one type, two
types, five nodes (`--every-node` on five free g7e nodes) and the same five nodes one at
a time (`--max-parallel 1`); and, for scale, the wrapper and the script run once here
without any cluster. Runs alternate; medians are reported.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from _timing import compile_package, run_once  # noqa: E402
from kubesim import KubeSim, realistic_cluster  # noqa: E402

CTX = "stg-online-use1"
TINY = ["--device", "cpu", "--sizes", "10,12", "--iters", "2", "--warmup", "0"]


def five_free_g7e() -> list[dict[str, Any]]:
    """The realistic cluster with five g7e.8xlarge nodes, none of their GPUs in use."""
    objs = realistic_cluster()
    g7e = [
        o
        for o in objs
        if o["kind"] == "Node" and o["metadata"]["labels"].get("node.kubernetes.io/instance-type") == "g7e.8xlarge"
    ]
    names = {n["metadata"]["name"] for n in g7e}
    objs = [o for o in objs if not (o["kind"] == "Pod" and o.get("spec", {}).get("nodeName") in names)]
    extra = copy.deepcopy(g7e[0])
    extra["metadata"]["name"] = extra["metadata"]["labels"]["kubernetes.io/hostname"] = "ip-10-0-200-1.ec2.internal"
    extra["metadata"]["uid"] = "00000000-0000-4000-8000-000000000001"
    return [*objs, extra]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.05)
    args = parser.parse_args()
    compile_package()
    tmp = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    (tmp / "config.yaml").write_text(
        "lab:\n  image: registry.example.com/triton-vllm-container:1.0-1\n  owner: bench\n"
    )
    fleet = [sys.executable, "-m", "nsightlab", "fleet", "sweep", "--context", CTX, *TINY, "--yes"]
    cases = {
        "1 type (g7e.8xlarge)": [*fleet, "--types", "g7e.8xlarge"],
        "2 types (g7e.8xlarge, g6.12xlarge)": [*fleet, "--types", "g7e.8xlarge,g6.12xlarge"],
        "5 nodes (--every-node)": [*fleet, "--every-node", "--types", "g7e.8xlarge", "--max-parallel", "5"],
        "5 nodes, one at a time (--max-parallel 1)": [
            *fleet,
            "--every-node",
            "--types",
            "g7e.8xlarge",
            "--max-parallel",
            "1",
        ],
    }
    walls: dict[str, list[float]] = {name: [] for name in cases}
    with KubeSim(tls=True, kubelet_delay=args.delay) as sim:
        sim.load(five_free_g7e())
        kubeconfig = sim.write_kubeconfig(tmp / "kubeconfig", {CTX: {"namespace": "serving"}})
        env = {
            **os.environ,
            "NSIGHTLAB_HOME": str(tmp / "home"),
            "NSIGHTLAB_CONFIG": str(tmp / "config.yaml"),
            "KUBECONFIG": str(kubeconfig),
            "PYTHONPATH": str(ROOT),
        }
        alone = [
            sys.executable,
            "-u",
            str(ROOT / "lab_scripts" / "fleetrun.py"),
            str(ROOT / "lab_scripts" / "sweep.py"),
            "--dtype",
            "float32",
            *TINY,
        ]
        by_hand: list[float] = []
        for _ in range(args.repeat):
            for name, argv in cases.items():
                wall, _rss, code, _cpu = run_once(argv, env)
                if code != 0:
                    raise SystemExit(f"{name} failed (exit {code})")
                walls[name].append(wall)
            wall, _rss, code, _cpu = run_once(alone, env)
            by_hand.append(wall if code == 0 else float("nan"))
    print(f"{'case':44} {'median':>8} {'min':>8} {'max':>8}")
    print(
        f"{'one Job`s work alone (wrapper + sweep.py here)':44} {statistics.median(by_hand):8.2f} "
        f"{min(by_hand):8.2f} {max(by_hand):8.2f}"
    )
    for name, values in walls.items():
        print(f"{name:44} {statistics.median(values):8.2f} {min(values):8.2f} {max(values):8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
