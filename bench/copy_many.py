"""`nsightlab copy` out of the lab pod for trees of many files: time, peak RSS and
whether it verified, this checkout and `--against REV`.

    python bench/copy_many.py [--files 1000000] [--long 20000] [--depth 15] [--against REV ...]

Two trees in the pod (kubesim, exec over websockets; the pod's side is podtar under this
machine's python3): --files tiny files (a few bytes each, 1,000 to a folder), and --long
files whose paths are --depth x 241 + 215 bytes (3.8 KB by default: their digest records
alone pass 64 MiB, the most of the pod's stderr that was kept before the records were
spooled). Each is copied out once
per checkout into a fresh folder; the copy's exit code says whether it verified.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from _timing import checkouts, compile_package, nsightlab_argv, run_once  # noqa: E402
from kubesim import KubeSim, realistic_cluster  # noqa: E402

CONTEXT, NS, POD = "stg-online-use1", "ml-lab", "gpu-smoke-test"


def tiny_tree(top: Path, files: int) -> None:
    for i in range(files):
        folder = top / f"{i // 1000:04d}"
        if i % 1000 == 0:
            folder.mkdir(parents=True)
        (folder / f"{i:07d}.txt").write_bytes(b"%d\n" % i)


def long_tree(top: Path, files: int, depth: int) -> None:
    folder = top.joinpath(*(f"{k:02d}" + "p" * 238 for k in range(depth)))  # 241 bytes a folder
    folder.mkdir(parents=True)
    for i in range(files):
        (folder / f"{i:06d}{'f' * 200}.txt").write_bytes(b"%d\n" % i)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--long", type=int, default=20_000)
    parser.add_argument("--depth", type=int, default=15, help="folders of 240 characters above the --long files")
    parser.add_argument("--against", metavar="REV", action="append", default=[])
    args = parser.parse_args()
    compile_package()
    tmp = Path(tempfile.mkdtemp(prefix="bench-copy-many-", dir=os.environ.get("BENCH_TMP")))
    cfg = tmp / "config.yaml"
    cfg.write_text(f"lab:\n  pod_name: {POD}\n  image: registry.example.com/lab:1\n  owner: bench\n")
    try:
        with checkouts(args.against) as trees, KubeSim(tls=True) as sim:
            sim.load(realistic_cluster())
            pod = sim.get("pods", NS, POD)
            assert pod is not None
            pod["metadata"].setdefault("labels", {}).update(
                {"app.kubernetes.io/managed-by": "nsightlab", "nsightlab/owner": "bench"}
            )
            sim.put(pod)
            kc = sim.write_kubeconfig(tmp / "kubeconfig", {CONTEXT: {"namespace": NS}})
            env = {**os.environ, "KUBECONFIG": str(kc), "HOME": str(tmp), "NSIGHTLAB_CONFIG": str(cfg)}
            cases = {}
            if args.files:
                start = time.perf_counter()
                tiny_tree(sim.pod_path(NS, POD, "/tmp/tiny"), args.files)
                print(f"made {args.files} tiny files in {time.perf_counter() - start:.0f} s", flush=True)
                cases[f"{args.files} tiny files"] = "/tmp/tiny"
            if args.long:
                long_tree(sim.pod_path(NS, POD, "/tmp/long"), args.long, args.depth)
                cases[f"{args.long} files, {(args.depth * 241 + 215) / 1000:.1f} KB paths"] = "/tmp/long"
            print(f"{'tree':<28} {'checkout':<16} {'exit':>4} {'wall':>8} {'peak RSS':>9}", flush=True)
            for case, src in cases.items():
                for tag, root in {"this checkout": ROOT, **{f"at {r}": t for r, t in trees.items()}}.items():
                    out = tmp / "out"
                    shutil.rmtree(out, ignore_errors=True)
                    out.mkdir()
                    argv = nsightlab_argv(root, "copy", "--context", CONTEXT, f":{src}", f"{out}/")
                    wall, rss, code, _cpu = run_once(argv, {**env, "NSIGHTLAB_HOME": str(tmp / "home")})
                    print(f"{case:<28} {tag:<16} {code:>4} {wall:>7.0f}s {rss / 1024:>6.0f}MiB", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
