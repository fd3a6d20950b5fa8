"""`nsightlab explore nodes` against `kubectl get nodes -L node.kubernetes.io/instance-type`,
side by side against the same emulated API server (HTTPS, bearer token) holding a big
cluster (default: 5,000 nodes and 20,000 pods).

    python bench/explore_nodes.py [--nodes 5000] [--pods 20000] [--repeat 7] [--against REV ...]

nsightlab lists nodes AND every non-terminated pod (to count requested GPUs); kubectl
lists nodes only. Both page in chunks of 500. Output goes to /dev/null for both. The
nsightlab timed is this checkout's; `--against REV` (repeatable) adds `explore nodes`
from a checkout of REV, interleaved with the rest, so a change is measured against the
code before it in the same run. `--no-json` leaves out the `--json` variant.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _timing import ROOT, checkouts, compare, nsightlab_argv, side_by_side, table
from kubesim import KubeSim, generate_cluster

CONTEXT = "bench-stg"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--against",
        metavar="REV",
        action="append",
        default=[],
        help="also time explore nodes from this git revision (repeatable)",
    )
    parser.add_argument("--no-json", action="store_true", help="leave out `explore nodes --json`")
    args = parser.parse_args()
    kubectl = shutil.which("kubectl") or sys.exit("kubectl is not installed")
    tmp = Path(tempfile.mkdtemp(prefix="bench-explore-"))
    with checkouts(args.against) as trees, KubeSim(tls=True, token="bench-token") as sim:
        t0 = time.perf_counter()
        sim.load(generate_cluster(args.nodes, args.pods))
        print(f"cluster generated and loaded in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        kc = sim.write_kubeconfig(tmp / "kubeconfig", {CONTEXT: {"namespace": "default"}}, current=CONTEXT)
        env = {**os.environ, "KUBECONFIG": str(kc), "HOME": str(tmp), "NSIGHTLAB_HOME": str(tmp / "nsl")}
        commands = {
            "kubectl get nodes -L instance-type": [
                kubectl,
                "--context",
                CONTEXT,
                "get",
                "nodes",
                "-L",
                "node.kubernetes.io/instance-type",
            ],
            "nsightlab explore nodes": nsightlab_argv(ROOT, "explore", "nodes", "--context", CONTEXT),
        }
        if not args.no_json:
            commands["nsightlab explore nodes --json"] = nsightlab_argv(
                ROOT, "explore", "nodes", "--context", CONTEXT, "--json"
            )
        for rev, tree in trees.items():
            commands[f"explore nodes at {rev}"] = nsightlab_argv(tree, "explore", "nodes", "--context", CONTEXT)
        results = side_by_side(commands, repeat=args.repeat, env=env)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{args.nodes} nodes, {args.pods} pods, {os.cpu_count()} CPUs (the emulator shares them)")
    print(table(results, "kubectl get nodes -L instance-type"))
    for rev in trees:
        print(compare(results, "nsightlab explore nodes", f"explore nodes at {rev}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
