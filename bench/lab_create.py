"""`nsightlab create`: how soon after the pod turns Ready does the command return?

    python bench/lab_create.py [--repeat 10] [--kubelet-delay 1.0]

The emulator's kubelet takes the pod from Pending to Running/Ready in steps of
--kubelet-delay seconds. A watch in this process notes the moment the Ready condition
turns True; the create process's exit is the other end. Target: within 0.5 s (the wait
is a watch, not a poll). Each round deletes the pod before the next.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from kubesim import KubeSim, realistic_cluster

CONTEXT, NS, POD = "stg-online-use1", "ml-lab", "nsight-lab-bench"


def watch_ready(sim: KubeSim, seen: dict[str, float], stop: threading.Event) -> None:
    """Note when the pod's Ready condition turns True, from a watch of our own."""
    import ssl

    ctx = ssl.create_default_context(cafile=str(sim.ca_file))
    url = f"{sim.url}/api/v1/namespaces/{NS}/pods?watch=true&fieldSelector=metadata.name%3D{POD}&timeoutSeconds=60"
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {sim.token}"})
    with urllib.request.urlopen(req, context=ctx) as resp:
        for line in resp:
            if stop.is_set():
                return
            obj = json.loads(line)["object"]
            for cond in obj.get("status", {}).get("conditions", []):
                if cond["type"] == "Ready" and cond["status"] == "True" and "ready" not in seen:
                    seen["ready"] = time.monotonic()
                    return


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--kubelet-delay", type=float, default=1.0)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-create-"))
    cfg = tmp / "config.yaml"
    cfg.write_text("lab:\n  pod_name: nsight-lab-bench\n  image: registry.example.com/lab:1\n  owner: bench\n")
    lags: list[float] = []
    totals: list[float] = []
    with KubeSim(tls=True, kubelet_delay=args.kubelet_delay) as sim:
        sim.load(realistic_cluster())
        kc = sim.write_kubeconfig(tmp / "kubeconfig", {CONTEXT: {"namespace": NS}})
        env = {**os.environ, "KUBECONFIG": str(kc), "NSIGHTLAB_HOME": str(tmp / "home"), "NSIGHTLAB_CONFIG": str(cfg)}
        for _ in range(args.repeat):
            seen: dict[str, float] = {}
            stop = threading.Event()
            watcher = threading.Thread(target=watch_ready, args=(sim, seen, stop), daemon=True)
            watcher.start()
            time.sleep(0.2)  # the watch is open before the pod exists
            start = time.monotonic()
            proc = subprocess.run(
                [sys.executable, "-m", "nsightlab", "create", "--context", CONTEXT, "--yes"],
                env=env,
                capture_output=True,
                text=True,
            )
            end = time.monotonic()
            stop.set()
            watcher.join(5)
            if proc.returncode != 0 or "ready" not in seen:
                print(proc.stderr, file=sys.stderr)
                return 1
            lags.append(end - seen["ready"])
            totals.append(end - start)
            sim.remove("pods", NS, POD)
            time.sleep(0.3)
    print(f"kubelet steps of {args.kubelet_delay} s; {args.repeat} creates")
    print(f"create wall time: median {statistics.median(totals):.2f} s (min {min(totals):.2f}, max {max(totals):.2f})")
    print(
        f"Ready -> create returned: median {statistics.median(lags) * 1000:.0f} ms, max {max(lags) * 1000:.0f} "
        "ms (target <= 500 ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
