"""`nsightlab explore nodes` against `kubectl get nodes -L node.kubernetes.io/instance-type`,
side by side against the same emulated API server (HTTPS, bearer token) holding a big
cluster (default: 5,000 nodes and 20,000 pods).

    python bench/explore_nodes.py [--nodes 5000] [--pods 20000] [--repeat 7]

nsightlab lists nodes AND every non-terminated pod (to count requested GPUs); kubectl
lists nodes only. Both page in chunks of 500. Output goes to /dev/null for both.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _timing import side_by_side, table
from kubesim import KubeSim, generate_cluster

CONTEXT = "bench-stg"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    nsl = shutil.which("nsightlab") or sys.exit("nsightlab is not on PATH (pip install -e .)")
    kubectl = shutil.which("kubectl") or sys.exit("kubectl is not installed")
    tmp = Path(tempfile.mkdtemp(prefix="bench-explore-"))
    with KubeSim(tls=True, token="bench-token") as sim:
        sim.load(generate_cluster(args.nodes, args.pods))
        kc = sim.write_kubeconfig(tmp / "kubeconfig", {CONTEXT: {"namespace": "default"}}, current=CONTEXT)
        env = {**os.environ, "KUBECONFIG": str(kc), "HOME": str(tmp), "NSIGHTLAB_HOME": str(tmp / "nsl")}
        results = side_by_side(
            {
                "kubectl get nodes -L instance-type": [kubectl, "--context", CONTEXT, "get", "nodes", "-L", "node.kubernetes.io/instance-type"],
                "nsightlab explore nodes": [nsl, "explore", "nodes", "--context", CONTEXT],
                "nsightlab explore nodes --json": [nsl, "explore", "nodes", "--context", CONTEXT, "--json"],
            },
            repeat=args.repeat,
            env=env,
        )
    print(f"{args.nodes} nodes, {args.pods} pods, {os.cpu_count()} CPUs (the emulator shares them)")
    print(table(results, "kubectl get nodes -L instance-type"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
