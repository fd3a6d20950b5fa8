"""What does RBAC cost kubesim per request? (run by hand, not a test)

    python bench/kubesim_rbac.py [--requests 3000] [--repeat 5]

Sends small GETs of one pod over one keep-alive connection (plain HTTP) to a server with
RBAC off, then on (an admin, and a user granted by a RoleBinding among 50 bindings), and
times the authorizer's check alone in-process. Prints the median per-request time of each.
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from kubesim import KubeSim, realistic_cluster

POD = "/api/v1/namespaces/serving/pods/llmqu-v1-s2-7d9f8c6b5-x2x9q"


def bindings(n: int) -> list[dict[str, object]]:
    """``n`` Roles with RoleBindings in serving; the last one grants alice pods get."""
    objs: list[dict[str, object]] = []
    for i in range(n):
        user = "alice" if i == n - 1 else f"user-{i}"
        objs.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": f"r{i}", "namespace": "serving"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
            }
        )
        objs.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": f"r{i}", "namespace": "serving"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"r{i}"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
            }
        )
    return objs


def per_request(sim: KubeSim, token: str, n: int) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=10)
    headers = {"Authorization": f"Bearer {token}"}
    t0 = time.perf_counter()
    for _ in range(n):
        conn.request("GET", POD, headers=headers)
        response = conn.getresponse()
        response.read()
        assert response.status == 200, response.status
    elapsed = time.perf_counter() - t0
    conn.close()
    sim.clear_requests()
    return elapsed / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with KubeSim(scheduler=False) as sim:
        sim.load(realistic_cluster())
        sim.load(bindings(50))
        alice = sim.add_user("alice")
        cases: dict[str, list[float]] = {"rbac off": [], "rbac on, admin": [], "rbac on, alice (50 bindings)": []}
        for _ in range(args.repeat):
            sim.disable_rbac()
            cases["rbac off"].append(per_request(sim, "sim-token", args.requests))
            sim.enable_rbac()
            cases["rbac on, admin"].append(per_request(sim, "sim-token", args.requests))
            cases["rbac on, alice (50 bindings)"].append(per_request(sim, alice, args.requests))
        for name, times in cases.items():
            print(f"{name:32s} {statistics.median(times) * 1e6:8.1f} us/request (median of {args.repeat})")
        authorizer = sim.emulator.rbac
        assert authorizer is not None
        n = 20000
        t0 = time.perf_counter()
        for _ in range(n):
            authorizer.check("GET", POD, {}, {}, "alice")
        print(f"{'authorizer check alone, alice':32s} {(time.perf_counter() - t0) / n * 1e6:8.1f} us/check")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
