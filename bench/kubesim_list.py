"""How long does listing every pod take against kubesim? (run by hand, not a test)

    python bench/kubesim_list.py [--nodes 5000] [--pods 20000] [--limit 500] [--repeat 5]

Times generate_cluster + load, then lists all pods in pages with the official client:
raw (``_preload_content=False`` + json.loads) and deserialised (V1PodList), and compares
with the time the server itself spends building the pages.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from kubernetes import client
from kubesim import KubeSim, generate_cluster


def list_all(api: Any, limit: int, raw: bool) -> tuple[int, int]:
    total, pages, token = 0, 0, None
    while True:
        if raw:
            resp = api.list_pod_for_all_namespaces(limit=limit, _continue=token, _preload_content=False)
            body = json.loads(resp.data)
            total += len(body["items"])
            token = body["metadata"].get("continue")
        else:
            result = api.list_pod_for_all_namespaces(limit=limit, _continue=token)
            total += len(result.items)
            token = result.metadata._continue
        pages += 1
        if not token:
            return total, pages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--typed", action="store_true", help="also time the deserialising client")
    args = parser.parse_args()
    t0 = time.perf_counter()
    objs = generate_cluster(args.nodes, args.pods)
    t1 = time.perf_counter()
    with KubeSim(token=None) as sim:
        sim.load(objs)
        t2 = time.perf_counter()
        print(f"generate_cluster({args.nodes}, {args.pods}): {t1 - t0:.2f}s; load: {t2 - t1:.2f}s")
        api = client.CoreV1Api(sim.api_client())
        modes = [True, False] if args.typed else [True]
        for raw in modes:
            times = []
            for _ in range(args.repeat):
                sim.clear_requests()
                start = time.perf_counter()
                total, pages = list_all(api, args.limit, raw)
                times.append(time.perf_counter() - start)
            label = "raw (_preload_content=False)" if raw else "typed (V1PodList)"
            print(
                f"{label}: {total} pods in {pages} pages: median {statistics.median(times):.3f}s "
                f"(min {min(times):.3f}s, max {max(times):.3f}s)"
            )
        # The same pages over HTTP without decoding the JSON: what the server and transport cost.
        import urllib3

        http = urllib3.PoolManager()
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            token, pages, size = None, 0, 0
            while True:
                url = f"{sim.url}/api/v1/pods?limit={args.limit}" + (f"&continue={token}" if token else "")
                data = http.request("GET", url).data
                size += len(data)
                pages += 1
                head = json.loads(data[: data.index(b',"items":[')] + b"}")
                token = head["metadata"].get("continue")
                if not token:
                    break
            times.append(time.perf_counter() - start)
        print(
            f"HTTP only (no JSON decoding): {pages} pages, {size / 1e6:.1f} MB: median {statistics.median(times):.3f}s"
        )
        # Server-side time only: build every page inside the server process, no HTTP.
        em = sim.emulator
        from kubesim._resources import lookup

        def server_pages() -> float:
            store = em.store
            rt = lookup("pods")
            start = time.perf_counter()
            items = store.select(rt, None, None)
            sid = store.save_snapshot(store.rv, items)
            for off in range(0, len(items), args.limit):
                b",".join(e.raw for e in items[off : off + args.limit])
            del sid
            return time.perf_counter() - start

        print(f"server-side page assembly for all pods: {sim._call(server_pages):.3f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
