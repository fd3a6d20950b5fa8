"""The hostile strings names from outside may hold, in one place, and the inputs that carry
them to every renderer: nsys CSV exports, a Kineto trace, an ncu CSV, a stored run, and
objects on the test API server (node labels, pod names, Event messages, a fleet's labels).

Add a string here and every walker (tests/test_terminal_escapes.py for the terminal,
tests/test_report_markdown.py for report.md) feeds it to every view it knows.
"""

from __future__ import annotations

import copy
import csv
import io
from pathlib import Path
from typing import Any

from tracebuild import annotation, kernel, launch, write_kineto

# What a terminal must never be made to do by a name it shows.
TERMINAL: dict[str, str] = {
    "osc52": "clip\x1b]52;c;cm0gLXJmIH4K\x07board",  # OSC 52: writes the user's clipboard
    "title": "title\x1b]0;owned\x07bar",  # OSC 0: sets the window title
    "title-st": "title2\x1b]2;owned\x1b\\st",  # the same, ended by ST
    "clear": "clear\x1b[2J\x1b[Hscreen",  # CSI 2J: clears the screen
    "hidden": "hidden\x1b[8msecret\x1b[0mtext",  # SGR 8: hides what follows
    "c1-csi": "c1\x9b31mcsi",  # CSI as one C1 character
    "c1-osc": "c1\x9d0;owned\x9cosc",  # OSC and ST as C1 characters
    "cr": "victim\rforged",  # a lone CR: the rest overwrites the line
    "bs": "back\x08\x08\x08space",  # backspaces: the same, a few characters at a time
    "del": "del\x7fete",
    "bel": "bell\x07ring",
    "bidi": "bidi\u202eevil\u202c",  # a right-to-left override
    "markup": "[bold red]markup[/bold red]",  # Rich markup: must stay literal
    "rich-link": "[link=https://evil.example/]click[/link]",
}
# What must not leave its line or table cell in report.md, nor become a link or heading.
MARKDOWN: dict[str, str] = {
    "lf-heading": "range\n# Injected heading",
    "crlf": "range\r\n## Injected too",
    "cr": "range\r### Injected by CR",
    "u2028": "range\u2028# Line separator",
    "u2029": "range\u2029# Paragraph separator",
    "nel": "range\x85# Next line",
    "vt": "range\x0b# Vertical tab",
    "ff": "range\x0c# Form feed",
    "pipe": "cell|break|out",
    "backtick": "`code` span",
    "link": "[click](http://evil.example/a)",
    "autolink": "<http://evil.example/b>",
    "image": "![img](http://evil.example/c.png)",
    "bare-url": "see http://evil.example/d now",
    "www": "www.evil.example",
    "html": "<img src=x onerror=alert(1)>",
    "list": "- not a list",
    "emphasis": "**not bold** _not em_",
}
# The line-based CSV readers of nsys and ncu exports end a line at LF, CR and CRLF only
# (parse/lines.py): a cell may hold any other separator (U+2028, U+0085, VT, FF, ...), but
# not these two, which CSV builders leave out.
_LINE_BREAKS = frozenset("\n\r")


def every() -> list[str]:
    return [*TERMINAL.values(), *MARKDOWN.values()]


def csv_safe() -> list[str]:
    return [s for s in every() if not _LINE_BREAKS.intersection(s)]


def _csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    buf = io.StringIO()
    writer = csv.writer(buf, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


SUM_HEADER = ["Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)"]


def nsys_exports(folder: Path) -> Path:
    """A folder of `nsys stats --format csv` exports whose kernel and NVTX range names are
    the hostile strings: cuda_gpu_kern_sum, nvtx_sum and cuda_api_sum."""
    folder.mkdir(parents=True, exist_ok=True)
    names = csv_safe()
    share = round(100 / len(names), 1)
    rows: list[list[object]] = [[share, 1000 + i, 10, 100.0, 100, 90, 110, 5.0, n] for i, n in enumerate(names)]
    _csv(folder / "report_cuda_gpu_kern_sum.csv", [*SUM_HEADER, "Name"], rows)
    _csv(
        folder / "report_nvtx_sum.csv",
        [*SUM_HEADER, "Style", "Range"],
        [[*r[:8], "PushPop", f"range {r[8]}"] for r in rows],  # a range named as a kernel is read as a range
    )
    api_header = [("Num Calls" if h == "Instances" else h) for h in SUM_HEADER]
    _csv(folder / "report_cuda_api_sum.csv", [*api_header, "Name"], rows)
    return folder


def kineto_trace(path: Path) -> Path:
    """A Kineto trace: two steps under a hostile mode name, each kernel named by a
    hostile string (any of them: JSON carries line breaks too)."""
    names = every()
    events: list[dict[str, Any]] = [annotation("mode:" + TERMINAL["osc52"], 900, 2200)]
    events += [annotation("ProfilerStep#1", 1000, 1000), annotation("ProfilerStep#2", 2000, 1000)]
    ts = 1010
    for i, name in enumerate(names, 1):
        events.append(launch("cudaLaunchKernel", ts, 5, i))
        events.append(kernel(name, ts + 10, 20, i))
        ts += 1900 // len(names)
    return write_kineto(path, events)


def ncu_csv(path: Path, fixture: Path) -> Path:
    """The rows of a real ncu `--section SpeedOfLight` CSV, once per hostile kernel name."""
    with fixture.open(newline="", encoding="utf-8") as fh:
        table = list(csv.reader(fh))
    header, rows = table[0], table[1:]
    at_id, at_name = header.index("ID"), header.index("Kernel Name")
    out = []
    for i, name in enumerate(csv_safe()):
        for row in rows:
            copied = list(row)
            copied[at_id], copied[at_name] = str(i), name
            out.append(copied)
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([header, *out])
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def hostile_profile(result: Any) -> Any:
    """A profile result whose kernels, ranges and API calls are renamed to every hostile
    string (line breaks included: a pod's own JSON can carry them), notes quoting them."""
    names = every()
    out = copy.deepcopy(result)
    for i, k in enumerate(out.kernels):
        k.name = k.short_name = names[i % len(names)]
    for i, r in enumerate(out.ranges):
        r.name = names[(i + 1) % len(names)]
        if r.kernel is not None:
            r.kernel = r.kernel_full = names[(i + 2) % len(names)]
    for i, a in enumerate(out.cuda_api):
        a.name = names[(i + 3) % len(names)]
    out.notes = [f"kernel {n} was seen" for n in names]
    out.script = MARKDOWN["lf-heading"]
    return out


# ---------------------------------------------------------------------------- the cluster

GPU_PRODUCT = "nvidia.com/gpu.product"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
EVIL_NODE = "node-" + TERMINAL["title"]


def hostile_cluster(objs: list[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    """The cluster's objects and: a GPU node whose name, instance type and GPU label are
    hostile, and a pod per hostile string in `namespace` (its name and label hostile) on
    it. A real API server refuses such names; a hostile or broken one may send anything."""
    out = copy.deepcopy(objs)
    strings = list(TERMINAL.values())
    gpu = next(o for o in out if o["kind"] == "Node" and "nvidia.com/gpu" in o["status"].get("allocatable", {}))
    node = copy.deepcopy(gpu)
    labels = node["metadata"]["labels"]
    node["metadata"].update(name=EVIL_NODE, uid="00000000-0000-4000-9000-ffffffffffff")
    labels.update(
        {INSTANCE_TYPE: TERMINAL["osc52"], GPU_PRODUCT: TERMINAL["c1-osc"], "kubernetes.io/hostname": EVIL_NODE}
    )
    labels.pop("beta.kubernetes.io/instance-type", None)
    node["spec"]["taints"] = [{"key": "evil", "value": TERMINAL["clear"], "effect": "NoSchedule"}]
    out.append(node)
    template = next(o for o in out if o["kind"] == "Pod")
    for i, s in enumerate(strings):
        pod = copy.deepcopy(template)
        pod["metadata"].update(name=f"evil-{i}-{s}", namespace=namespace, uid=f"00000000-0000-4000-9000-{i:012d}")
        pod["metadata"]["labels"] = {"app": s}
        pod["metadata"].pop("ownerReferences", None)
        pod["spec"]["nodeName"] = EVIL_NODE
        out.append(pod)
    return out


def event_messages() -> list[str]:
    return every()
