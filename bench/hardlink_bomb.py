"""A hard-link bomb through copy-out's reader: one file of --mib MiB and --links hard-link
headers to it (70,000 and 1 MiB: 36 MB of tar), extracted by podtar as `nsightlab copy`
extracts what a pod sends, into a staging folder on this machine's disk.

    python bench/hardlink_bomb.py [--mib 1] [--links 70000] [--against REV ...] [--limit-gib 2]

Reports, per checkout: what happened (refused, and why; or extracted), wall time, peak
RSS and the bytes the filesystem gained while it ran. ext4 refuses the 65,001st link to
a file (EMLINK); before the fix each link past it became a whole copy of the file. A run
whose disk use passes --limit-gib is killed and reported so (the bomb would go on).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from _timing import GNU_TIME, ROOT, checkouts

EXTRACT = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from nsightlab.cluster import transfer
start = time.perf_counter()
try:
    with open(sys.argv[2], "rb") as stream:
        found = transfer.extract_stream(stream, Path(sys.argv[3]), "run")
    outcome = f"extracted {len(found)} files"
except Exception as e:
    outcome = f"{type(e).__name__}: {e}"
print(json.dumps({"outcome": outcome, "seconds": time.perf_counter() - start}))
"""


def bomb(path: Path, mib: int, links: int) -> None:
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        top = tarfile.TarInfo("run")
        top.type, top.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(top)
        data = os.urandom(mib << 20)
        big = tarfile.TarInfo("run/big")
        big.size = len(data)
        tar.addfile(big, io.BytesIO(data))
        for i in range(links):
            link = tarfile.TarInfo(f"run/l{i}")
            link.type, link.linkname = tarfile.LNKTYPE, "run/big"
            tar.addfile(link)


def used(folder: Path) -> int:
    st = os.statvfs(folder)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def run(root: Path, stream: Path, work: Path, limit: int) -> dict[str, object]:
    staging = work / "staging"
    staging.mkdir()
    rss_file = work / "rss"
    before = used(work)
    peak_disk = 0
    cmd = [
        GNU_TIME,
        "-f",
        "%M",
        "-o",
        str(rss_file),
        sys.executable,
        "-c",
        EXTRACT,
        str(root),
        str(stream),
        str(staging),
    ]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    killed = False
    while proc.poll() is None:
        peak_disk = max(peak_disk, used(work) - before)
        if peak_disk > limit:
            proc.kill()
            killed = True
            break
        time.sleep(0.2)
    out, _ = proc.communicate()
    wall = time.perf_counter() - start
    peak_disk = max(peak_disk, used(work) - before)
    report: dict[str, object] = json.loads(out) if out.strip() and not killed else {"outcome": "killed"}
    report.update(wall=wall, disk_mib=peak_disk / (1 << 20), killed=killed)
    if rss_file.exists() and rss_file.read_text().strip():
        report["rss_mib"] = int(rss_file.read_text().split()[-1]) / 1024
    shutil.rmtree(staging, ignore_errors=True)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=1)
    parser.add_argument("--links", type=int, default=70_000)
    parser.add_argument("--against", metavar="REV", action="append", default=[])
    parser.add_argument("--limit-gib", type=float, default=2.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-bomb-", dir=os.environ.get("BENCH_TMP")))
    try:
        stream = work / "bomb.tar"
        bomb(stream, args.mib, args.links)
        print(f"{args.mib} MiB file, {args.links} hard links: {stream.stat().st_size / 1e6:.1f} MB of tar")
        with checkouts(args.against) as trees:
            for tag, root in {"this checkout": ROOT, **{f"at {rev}": tree for rev, tree in trees.items()}}.items():
                r = run(root, stream, work, int(args.limit_gib * (1 << 30)))
                rss = f"{r['rss_mib']:.0f} MiB" if "rss_mib" in r else "?"
                print(
                    f"{tag:<16} {r['wall']:7.1f} s  peak RSS {rss:>8}  disk +{r['disk_mib']:.0f} MiB  "
                    f"{'KILLED past --limit-gib' if r['killed'] else r['outcome']}"
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
