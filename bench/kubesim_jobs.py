"""How long kubesim takes to run a Job end to end (run by hand, not a test).

    python bench/kubesim_jobs.py [--jobs 20] [--parallel 10] [--delay 0.05]

Creates Jobs running ``sh -c 'echo hello'`` with the official client against kubesim
(HTTPS, the realistic cluster, scheduler and kubelet steps of --delay seconds) and times,
for --jobs Jobs one after another, create -> Complete and the log read back; then
--parallel Jobs created at once until all are Complete.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from kubernetes import client
from kubesim import KubeSim, job_finished, realistic_cluster

NS = "ml-lab"


def job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", "echo hello"]}],
                }
            }
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=10)
    parser.add_argument("--delay", type=float, default=0.05)
    args = parser.parse_args()
    with KubeSim(tls=True, kubelet_delay=args.delay) as sim:
        sim.load(realistic_cluster())
        batch: Any = client.BatchV1Api(sim.api_client())
        core: Any = client.CoreV1Api(sim.api_client())
        times = []
        for i in range(args.jobs):
            t0 = time.perf_counter()
            batch.create_namespaced_job(NS, job(f"one-{i}"))
            sim.wait_for("jobs", NS, f"one-{i}", job_finished, timeout=60)
            pod = sim.job_pods(NS, f"one-{i}")[0]["metadata"]["name"]
            assert core.read_namespaced_pod_log(pod, NS) == "hello\n"
            times.append(time.perf_counter() - t0)
        print(
            f"{args.jobs} Jobs one after another (kubelet step {args.delay}s): create -> Complete -> log "
            f"median {statistics.median(times) * 1000:.0f} ms, min {min(times) * 1000:.0f} ms, "
            f"max {max(times) * 1000:.0f} ms"
        )
        t0 = time.perf_counter()
        for i in range(args.parallel):
            batch.create_namespaced_job(NS, job(f"many-{i}"))
        for i in range(args.parallel):
            found = sim.wait_for("jobs", NS, f"many-{i}", job_finished, timeout=120)
            assert found is not None and found["status"].get("succeeded") == 1
        print(f"{args.parallel} Jobs at once: all Complete in {(time.perf_counter() - t0) * 1000:.0f} ms")
        assert sim.server_errors == []
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
