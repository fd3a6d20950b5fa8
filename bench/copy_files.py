"""`nsightlab copy` against `kubectl cp`, side by side, through the same emulated API
server (HTTPS, exec over websockets): a file of --mib MiB into the lab pod and back out.

    python bench/copy_files.py [--mib 256] [--repeat 3]

Reports wall time, throughput and the peak RSS of each process. nsightlab also checks
size and sha256 on both ends (one more exec each way) and writes atomically; kubectl cp
does neither. Targets: nsightlab's RSS under 150 MB, throughput at least 0.7x kubectl's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _timing import compile_package, run_once
from kubesim import KubeSim, realistic_cluster

CONTEXT, NS, POD = "stg-online-use1", "ml-lab", "gpu-smoke-test"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    nsl = shutil.which("nsightlab") or sys.exit("nsightlab is not on PATH (pip install -e .)")
    kubectl = shutil.which("kubectl") or sys.exit("kubectl is not installed")
    compile_package()
    tmp = Path(tempfile.mkdtemp(prefix="bench-copy-"))
    big = tmp / "big.bin"
    with big.open("wb") as fh:
        for _ in range(args.mib):
            fh.write(os.urandom(1 << 20))
    cfg = tmp / "config.yaml"
    cfg.write_text(f"lab:\n  pod_name: {POD}\n  image: registry.example.com/lab:1\n")
    results: dict[str, list[tuple[float, int]]] = {}
    try:
        code = _run(args, nsl, kubectl, tmp, big, cfg, results)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # 2 x --mib of files
    return code


def _run(args: argparse.Namespace, nsl: str, kubectl: str, tmp: Path, big: Path, cfg: Path, results: dict[str, list[tuple[float, int]]]) -> int:
    with KubeSim(tls=True) as sim:
        sim.load(realistic_cluster())
        kc = sim.write_kubeconfig(tmp / "kubeconfig", {CONTEXT: {"namespace": NS}})
        env = {**os.environ, "KUBECONFIG": str(kc), "HOME": str(tmp), "NSIGHTLAB_HOME": str(tmp / "home"), "NSIGHTLAB_CONFIG": str(cfg)}
        out_dir = tmp / "out"
        commands = {
            "kubectl cp (in)": [kubectl, "--context", CONTEXT, "cp", str(big), f"{NS}/{POD}:/tmp/k.bin"],
            "nsightlab copy (in)": [nsl, "copy", "--context", CONTEXT, str(big), ":/tmp/n.bin"],
            "kubectl cp (out)": [kubectl, "--context", CONTEXT, "cp", f"{NS}/{POD}:/tmp/k.bin", str(out_dir / "k.bin")],
            "nsightlab copy (out)": [nsl, "copy", "--context", CONTEXT, ":/tmp/n.bin", str(out_dir / "n.bin")],
        }
        for _ in range(args.repeat):
            for name, argv in commands.items():
                shutil.rmtree(out_dir, ignore_errors=True)
                out_dir.mkdir()  # "(out)" copies the file the "(in)" before it put in the pod
                wall, rss, code = run_once(argv, env)
                if code != 0:
                    print(f"{name} failed (exit {code})", file=sys.stderr)
                    return 1
                results.setdefault(name, []).append((wall, rss))
            back = out_dir / "n.bin"
            if back.stat().st_size != big.stat().st_size:
                print("the copied file has the wrong size", file=sys.stderr)
                return 1
    print(f"{args.mib} MiB file, {args.repeat} rounds, {os.cpu_count()} CPUs (the emulator shares them)")
    print(f"{'command':<24} {'median':>8} {'MiB/s':>8} {'peak RSS':>9}")
    rates = {}
    for name, runs in results.items():
        med = statistics.median(w for w, _ in runs)
        rates[name] = args.mib / med
        print(f"{name:<24} {med:>7.2f}s {args.mib / med:>8.0f} {max(r for _, r in runs) / 1024:>6.0f}MiB")
    for way in ("in", "out"):
        print(f"throughput {way}: nsightlab / kubectl = {rates[f'nsightlab copy ({way})'] / rates[f'kubectl cp ({way})']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
