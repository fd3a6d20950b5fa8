"""Serve a big emulated cluster for side-by-side benchmarks run by hand.

    python bench/kubesim_serve.py [--nodes 5000] [--pods 20000] [--tls] [--out DIR]

Starts kubesim loaded with ``generate_cluster(nodes, pods)``, writes a kubeconfig, prints
its path and the context name, then waits until Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from kubesim import KubeSim, generate_cluster

CONTEXT = "bench-sim"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--tls", action="store_true", help="serve HTTPS (kubectl only sends tokens over TLS)")
    parser.add_argument("--out", type=Path, default=None, help="folder for the kubeconfig")
    args = parser.parse_args()
    t0 = time.perf_counter()
    objs = generate_cluster(args.nodes, args.pods)
    t1 = time.perf_counter()
    sim = KubeSim(tls=args.tls, token="bench-token" if args.tls else None)
    sim.load(objs)
    sim.start()
    t2 = time.perf_counter()
    out = args.out or Path(tempfile.mkdtemp(prefix="kubesim-bench-"))
    path = sim.write_kubeconfig(
        out / "kubeconfig", {CONTEXT: {"namespace": "team-00"}}, current=CONTEXT, auth="token" if args.tls else "none"
    )
    print(f"generated {len(objs)} objects in {t1 - t0:.2f}s, loaded and started in {t2 - t1:.2f}s", file=sys.stderr)
    print(f"server:     {sim.url}")
    print(f"kubeconfig: {path}")
    print(f"context:    {CONTEXT}")
    sys.stdout.flush()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        sim.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
