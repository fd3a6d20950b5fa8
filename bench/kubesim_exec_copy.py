"""Throughput of tar-over-exec copies against kubesim (run by hand, not a test).

    python bench/kubesim_exec_copy.py [--mib 256] [--tls]

Copies a file of --mib MiB into a pod (tar on stdin) and back out (tar on stdout) with the
official client, reading output frames straight from the websocket.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from kubernetes import client
from kubernetes.stream import stream
from kubesim import KubeSim, realistic_cluster

NS, POD = "ml-lab", "gpu-smoke-test"


def open_exec(sim: KubeSim, command: list[str], stdin: bool) -> Any:
    api = client.CoreV1Api(sim.api_client())
    return stream(
        api.connect_get_namespaced_pod_exec,
        POD,
        NS,
        command=command,
        stdin=stdin,
        stdout=True,
        stderr=True,
        tty=False,
        _preload_content=False,
        binary=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--tls", action="store_true")
    args = parser.parse_args()
    size = args.mib << 20
    block = os.urandom(1 << 20)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("big.bin")
        info.size = size
        tar.addfile(info, io.BytesIO(block * args.mib))
    archive = buf.getvalue()
    with KubeSim(tls=args.tls) as sim:
        sim.load(realistic_cluster())
        start = time.perf_counter()
        resp = open_exec(sim, ["tar", "xf", "-", "-C", "/tmp"], stdin=True)
        for i in range(0, len(archive), 1 << 20):
            resp.write_stdin(archive[i : i + (1 << 20)])
        resp.close_channel(0)
        resp.run_forever(timeout=600)
        t_in = time.perf_counter() - start
        start = time.perf_counter()
        resp = open_exec(sim, ["tar", "cf", "-", "/tmp/big.bin"], stdin=False)
        received = 0
        while True:
            opcode, frame = resp.sock.recv_data_frame(True)
            if opcode == 8:  # close
                break
            if frame.data[:1] == b"\x01":
                received += len(frame.data) - 1
        t_out = time.perf_counter() - start
        print(f"copy in : {args.mib} MiB in {t_in:.2f}s ({args.mib / t_in:.0f} MiB/s)")
        print(f"copy out: {received / 2**20:.0f} MiB in {t_out:.2f}s ({received / 2**20 / t_out:.0f} MiB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
