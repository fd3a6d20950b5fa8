"""Is the lab pod that is there the one the config asks for, and could the one the config
asks for (or a fleet's Job of the same size) ever be scheduled? Pure: API objects and the
manifest in, words out.

`create` reuses a lab pod only when nothing of what the config sets differs (name, image,
GPUs, CPU, memory, instance type, node selector, and CAP_SYS_ADMIN when
`--profiling-caps` asks for it); otherwise it says what differs, one item each, as
`image: pod runs X, config says Y`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nsightlab.errors import UsageError
from nsightlab.k8s import pods as r
from nsightlab.specs.gpus import gpus_per_instance, instance_sizes
from nsightlab.units import sig, size

INSTANCE_TYPE = "node.kubernetes.io/instance-type"  # the node selector key build_manifest fills
_AMOUNTS = ((r.GPU, "GPUs"), ("cpu", "CPU"), ("memory", "memory"))


def _main(pod: dict[str, Any]) -> dict[str, Any]:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return containers[0] or {}


def _amount(container: dict[str, Any], key: str) -> str | None:
    """What the container asks for (limits, else requests), as written."""
    res = container.get("resources") or {}
    for part in ("limits", "requests"):
        value = (res.get(part) or {}).get(key)
        if value is not None:
            return str(value)
    return None


def _selector(pod: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in ((pod.get("spec") or {}).get("nodeSelector") or {}).items()}


def _labels_text(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "none"


def _caps(container: dict[str, Any]) -> list[str]:
    return [str(c) for c in ((container.get("securityContext") or {}).get("capabilities") or {}).get("add") or []]


def differences(pod: dict[str, Any], manifest: dict[str, Any]) -> list[str]:
    """What the pod has that the manifest made from the config does not ask for, one
    `what: pod has X, config says Y` each; empty when the pod may be reused."""
    out: list[str] = []
    have_name = str((pod.get("metadata") or {}).get("name"))
    want_name = str((manifest.get("metadata") or {}).get("name"))
    if have_name != want_name:
        out.append(f"name: pod is {have_name}, config says {want_name}")
    have, want = _main(pod), _main(manifest)
    if have.get("image") != want.get("image"):
        out.append(f"image: pod runs {have.get('image')}, config says {want.get('image')}")
    for key, label in _AMOUNTS:
        a, b = _amount(have, key), _amount(want, key)
        if r.parse_quantity(a) != r.parse_quantity(b):
            out.append(f"{label}: pod has {a or 'none'}, config says {b or 'none'}")
    sel_have, sel_want = _selector(pod), _selector(manifest)
    it_have, it_want = sel_have.pop(INSTANCE_TYPE, None), sel_want.pop(INSTANCE_TYPE, None)
    if it_have != it_want:
        out.append(f"instance type: pod asks for {it_have or 'any'}, config says {it_want or 'any'}")
    if sel_have != sel_want:
        out.append(f"node selector: pod has {_labels_text(sel_have)}, config says {_labels_text(sel_want)}")
    if "SYS_ADMIN" in _caps(want) and "SYS_ADMIN" not in _caps(have):
        out.append("CAP_SYS_ADMIN: pod lacks it, --profiling-caps asks for it")
    return out


def mismatch_error(pod: dict[str, Any], diffs: list[str], *, cleanup: str | None, recreate: str) -> UsageError:
    """Exit 2: the lab pod that is there is not the one configured. `cleanup`: the commands
    (cleanup, then create) that replace it, when plain `cleanup` would delete that pod;
    `recreate`: the create command with --recreate."""
    name = (pod.get("metadata") or {}).get("name")
    ways = f"`{recreate}` deletes it and creates the configured one"
    if cleanup:
        ways = f"{cleanup}, or {ways}"
    return UsageError(
        f"your lab pod {name} is not the one config.yaml asks for ({'; '.join(diffs)}); not reusing it",
        hint=f"To replace it: {ways} (files in it are lost).",
    )


def gpu_fit_error(gpus: int, instance_type: str, *, nodes: int = 0, most: int = 0) -> UsageError | None:
    """Exit 2 when a pod asking for `gpus` GPUs can never be scheduled on `instance_type`:
    no node of that type has that many allocatable (`nodes` of the type were read, `most`
    GPUs the most any of them has), else, when the spec table knows the type, a node of
    it would not have them. Otherwise None: nothing is guessed."""
    if gpus <= 0:
        return None
    if nodes and most > 0:  # (0 on every node: the device plugin may not run yet; not known)
        source = f"allocatable on its {nodes} node{'s' if nodes != 1 else ''}"
    else:
        known = gpus_per_instance(instance_type)
        if known is None:
            return None
        most, source = known, "by AWS's specification of the type; no node of it could be read"
    if most >= gpus:
        return None
    bigger = [f"{t} ({n})" for t, n in instance_sizes(instance_type) if n >= gpus]
    where = f", or lab.instance_type to one with {gpus} or more, e.g. {', '.join(bigger[:3])}" if bigger else ""
    return UsageError(
        f"lab.gpus is {gpus}, but a {instance_type} node has at most {most} GPU{'s' if most != 1 else ''} ({source}): "
        "the pod could never be scheduled; nothing was created",
        hint=f"Set lab.gpus in config.yaml to {most} or less{where}.",
    )


def too_small(nodes: Iterable[Mapping[str, Any]], *, cpu: str, memory: str) -> list[str]:
    """Instance types none of whose nodes can give a Job the lab's CPU and memory: the
    scheduler would never place it there (the lab pod's g7e-sized 4 CPU / 24Gi do not fit
    a g6.xlarge)."""
    best: dict[str, tuple[float, float]] = {}
    for node in nodes:
        itype = r.instance_type(dict(node)) or "<none>"
        alloc = (node.get("status") or {}).get("allocatable") or {}
        c, m = float(r.parse_quantity(alloc.get("cpu"))), float(r.parse_quantity(alloc.get("memory")))
        old = best.get(itype, (0.0, 0.0))
        best[itype] = (max(old[0], c), max(old[1], m))
    want_cpu, want_mem = float(r.parse_quantity(cpu)), float(r.parse_quantity(memory))
    return [
        f"{itype}: a Job asks for {cpu} CPU and {memory} of memory (lab.cpu, lab.memory) and its nodes have at most "
        f"{sig(c)} CPU and {size(m)} allocatable: it cannot be scheduled there; lower lab.cpu and lab.memory in "
        "config.yaml"
        for itype, (c, m) in sorted(best.items())
        if want_cpu > c or want_mem > m
    ]
