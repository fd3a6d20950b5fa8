"""`nsightlab copy` against `kubectl cp`, side by side, through the same emulated API
server (HTTPS, exec over websockets): a file of --mib MiB into the lab pod and back out.

    python bench/copy_files.py [--mib 256] [--repeat 3] [--against REV ...] [--in-only] [--readers]

Reports wall time, throughput and the peak RSS of each process. nsightlab also checks
size and sha256 on both ends and writes atomically; kubectl cp does neither. Targets:
nsightlab's RSS under 150 MB, throughput at least 0.7x kubectl's. The nsightlab timed is
this checkout's; `--against REV` (repeatable) adds the copies of a checkout of REV,
interleaved with the rest; `--in-only` times copies into the pod only; `--readers` adds
this checkout's nsightlab with the standard library's tarfile reading the stream on both
ends (bench/tarfile_reader.py) instead of podtar's own reader.
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

from _timing import ROOT, checkouts, compile_package, nsightlab_argv, run_once
from kubesim import KubeSim, realistic_cluster

CONTEXT, NS, POD = "stg-online-use1", "ml-lab", "gpu-smoke-test"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--against",
        metavar="REV",
        action="append",
        default=[],
        help="also time the copies of this git revision (repeatable)",
    )
    parser.add_argument("--in-only", action="store_true", help="copies into the pod only")
    parser.add_argument(
        "--readers", action="store_true", help="also time the tarfile-based reader (bench/tarfile_reader.py)"
    )
    args = parser.parse_args()
    kubectl = shutil.which("kubectl") or sys.exit("kubectl is not installed")
    compile_package()
    tmp = Path(tempfile.mkdtemp(prefix="bench-copy-"))
    big = tmp / "big.bin"
    with big.open("wb") as fh:
        for _ in range(args.mib):
            fh.write(os.urandom(1 << 20))
    cfg = tmp / "config.yaml"
    cfg.write_text(f"lab:\n  pod_name: {POD}\n  image: registry.example.com/lab:1\n  owner: bench\n")
    results: dict[str, list[tuple[float, int, float]]] = {}
    try:
        with checkouts(args.against) as trees:
            code = _run(
                args, {"": ROOT, **{f" at {rev}": tree for rev, tree in trees.items()}}, kubectl, tmp, big, cfg, results
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # 2 x --mib of files
    return code


def _run(
    args: argparse.Namespace,
    trees: dict[str, Path],
    kubectl: str,
    tmp: Path,
    big: Path,
    cfg: Path,
    results: dict[str, list[tuple[float, int, float]]],
) -> int:
    with KubeSim(tls=True) as sim:
        sim.load(realistic_cluster())
        # nsightlab works only in the lab pods it made: the pod carries their labels
        pod = sim.get("pods", NS, POD)
        assert pod is not None
        pod["metadata"].setdefault("labels", {}).update(
            {"app.kubernetes.io/managed-by": "nsightlab", "nsightlab/owner": "bench"}
        )
        sim.put(pod)
        kc = sim.write_kubeconfig(tmp / "kubeconfig", {CONTEXT: {"namespace": NS}})
        env = {
            **os.environ,
            "KUBECONFIG": str(kc),
            "HOME": str(tmp),
            "NSIGHTLAB_HOME": str(tmp / "home"),
            "NSIGHTLAB_CONFIG": str(cfg),
        }
        out_dir = tmp / "out"
        commands = {
            "kubectl cp (in)": [kubectl, "--context", CONTEXT, "cp", str(big), f"{NS}/{POD}:/tmp/k.bin"],
            **{
                f"nsightlab copy (in){tag}": nsightlab_argv(
                    tree, "copy", "--context", CONTEXT, str(big), f":/tmp/n{i}.bin"
                )
                for i, (tag, tree) in enumerate(trees.items())
            },
        }
        variant = [sys.executable, str(ROOT / "bench" / "tarfile_reader.py"), "copy", "--context", CONTEXT]
        if args.readers:
            commands["tarfile reader (in)"] = [*variant, str(big), ":/tmp/t.bin"]
        if not args.in_only:
            commands["kubectl cp (out)"] = [
                kubectl,
                "--context",
                CONTEXT,
                "cp",
                f"{NS}/{POD}:/tmp/k.bin",
                str(out_dir / "k.bin"),
            ]
            for i, (tag, tree) in enumerate(trees.items()):
                commands[f"nsightlab copy (out){tag}"] = nsightlab_argv(
                    tree, "copy", "--context", CONTEXT, f":/tmp/n{i}.bin", str(out_dir / f"n{i}.bin")
                )
            if args.readers:
                commands["tarfile reader (out)"] = [*variant, ":/tmp/t.bin", str(out_dir / "t.bin")]
        ins = [name for name in commands if "(in)" in name]
        outs = [name for name in commands if "(out)" in name]
        for round_ in range(args.repeat):
            # the order turns each round (the ins, then the outs in the same order): no copy
            # always runs after the same one, whose dirty pages are still being written back
            turn = round_ % len(ins)
            order = ins[turn:] + ins[:turn] + outs[turn:] + outs[:turn]
            for name in order:
                argv = commands[name]
                shutil.rmtree(out_dir, ignore_errors=True)
                out_dir.mkdir()  # an "(out)" copies the file its "(in)" put in the pod
                wall, rss, code, cpu = run_once(argv, env)
                if code != 0:
                    print(f"{name} failed (exit {code})", file=sys.stderr)
                    return 1
                results.setdefault(name, []).append((wall, rss, cpu))
                back = Path(argv[-1])
                if "(out)" in name and back.stat().st_size != big.stat().st_size:
                    print(f"{name}: the copied file has the wrong size", file=sys.stderr)
                    return 1
    print(f"{args.mib} MiB file, {args.repeat} rounds, {os.cpu_count()} CPUs (the emulator shares them)")
    print(f"{'command':<34} {'median':>8} {'min':>7} {'max':>7} {'CPU':>7} {'MiB/s':>7} {'peak RSS':>9}")
    rates = {}
    for name, runs in results.items():
        walls = [w for w, _, _ in runs]
        med = statistics.median(walls)
        rates[name] = args.mib / med
        cpu = statistics.median(c for _, _, c in runs)
        print(
            f"{name:<34} {med:>7.2f}s {min(walls):>6.2f}s {max(walls):>6.2f}s {cpu:>6.2f}s "
            f"{args.mib / med:>7.0f} {max(r for _, r, _ in runs) / 1024:>6.0f}MiB"
        )
    for way in ("in",) if args.in_only else ("in", "out"):
        for tag in trees:
            print(
                f"throughput {way}{tag}: nsightlab / kubectl = "
                f"{rates[f'nsightlab copy ({way}){tag}'] / rates[f'kubectl cp ({way})']:.2f}x"
            )
            if tag:  # this checkout against REV: wall time, paired by round, and CPU time
                here, there = results[f"nsightlab copy ({way})"], results[f"nsightlab copy ({way}){tag}"]
                paired = statistics.median(a[0] / b[0] for a, b in zip(here, there, strict=True))
                cpu = statistics.median(c for _, _, c in here) / statistics.median(c for _, _, c in there)
                print(
                    f"  copy ({way}) here / {tag.strip()}: wall "
                    f"{rates[f'nsightlab copy ({way}){tag}'] / rates[f'nsightlab copy ({way})']:.2f}x (paired "
                    f"rounds {paired:.2f}x), CPU {cpu:.2f}x"
                )
        if args.readers:  # podtar's reader against the tarfile one: throughput, and CPU time
            podtar_runs, tarfile_runs = results[f"nsightlab copy ({way})"], results[f"tarfile reader ({way})"]
            cpu = statistics.median(c for _, _, c in tarfile_runs) / statistics.median(c for _, _, c in podtar_runs)
            print(
                f"throughput {way}: tarfile reader / kubectl = "
                f"{rates[f'tarfile reader ({way})'] / rates[f'kubectl cp ({way})']:.2f}x;"
                " podtar's reader / tarfile reader = "
                f"{rates[f'nsightlab copy ({way})'] / rates[f'tarfile reader ({way})']:.2f}x, CPU tarfile / "
                f"podtar {cpu:.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
