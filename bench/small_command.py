"""A small command on a small cluster: `nsightlab status` against `kubectl get pod`, side
by side against the same emulated API server (HTTPS, bearer token) holding the small
realistic cluster (10 nodes, the lab pod running).

    python bench/small_command.py [--repeat 20] [--against REV ...]

`nsightlab status` reads the lab pod and its node (two requests) and prints one panel;
`kubectl get pod NAME` reads the pod (one request, as a table). Here the fixed cost of a
command is what a user feels: interpreter, imports, reading the kubeconfig, the TLS
handshake. The nsightlab timed is this checkout's; `--against REV` (repeatable) adds
`status` from a checkout of REV, interleaved with the rest.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _timing import ROOT, checkouts, compare, nsightlab_argv, side_by_side, table
from kubesim import KubeSim, realistic_cluster

CONTEXT, NS, POD = "stg-online-use1", "ml-lab", "gpu-smoke-test"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument(
        "--against",
        metavar="REV",
        action="append",
        default=[],
        help="also time status from this git revision (repeatable)",
    )
    args = parser.parse_args()
    kubectl = shutil.which("kubectl") or sys.exit("kubectl is not installed")
    tmp = Path(tempfile.mkdtemp(prefix="bench-small-"))
    cfg = tmp / "config.yaml"
    cfg.write_text(f"lab:\n  pod_name: {POD}\n  image: registry.example.com/lab:1\n")
    with checkouts(args.against) as trees, KubeSim(tls=True, token="bench-token") as sim:
        sim.load(realistic_cluster())
        kc = sim.write_kubeconfig(tmp / "kubeconfig", {CONTEXT: {"namespace": NS}})
        env = {
            **os.environ,
            "KUBECONFIG": str(kc),
            "HOME": str(tmp),
            "NSIGHTLAB_HOME": str(tmp / "nsl"),
            "NSIGHTLAB_CONFIG": str(cfg),
        }
        commands = {
            "kubectl get pod": [kubectl, "--context", CONTEXT, "-n", NS, "get", "pod", POD],
            "nsightlab status": nsightlab_argv(ROOT, "status", "--context", CONTEXT),
        }
        for rev, tree in trees.items():
            commands[f"status at {rev}"] = nsightlab_argv(tree, "status", "--context", CONTEXT)
        results = side_by_side(commands, repeat=args.repeat, env=env)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"realistic cluster (10 nodes), {os.cpu_count()} CPUs (the emulator shares them)")
    print(table(results, "kubectl get pod"))
    for rev in trees:
        print(compare(results, "nsightlab status", f"status at {rev}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
