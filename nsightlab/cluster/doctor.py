"""`doctor`: a pre-flight list, each line pass/fail with the fix.

Cluster checks are read-only (they run on protected contexts too). With a lab pod up,
one exec inside it checks the GPU and the profilers; that exec is skipped on a
protected context, where nsightlab never execs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel

from nsightlab.analysis import pods as r
from nsightlab.errors import ClusterError, NsightlabError

if TYPE_CHECKING:
    from nsightlab.cluster.kube import Kube
    from nsightlab.cluster.safety import ResolvedContext
    from nsightlab.config import Config, Session


class Check(BaseModel):
    name: str
    ok: bool | None  # None: skipped or informational
    detail: str
    fix: str | None = None


class DoctorReport(BaseModel):
    context: str
    server: str | None
    namespace: str
    checks: list[Check]

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.ok is False]


PERMISSIONS = [
    ("create", "pods", None),
    ("get", "pods", None),
    ("watch", "pods", None),
    ("delete", "pods", None),
    ("create", "pods", "exec"),
    ("list", "events", None),
]

# One exec gathers every in-pod fact, as key=value lines.
_PROBE_SH = r"""
echo "gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
echo "nsys=$(nsys --version 2>/dev/null | head -1)"
echo "ncu=$(ncu --version 2>/dev/null | tail -1)"
echo "python=$(python3 -c 'import sys; print(sys.version.split()[0])' 2>/dev/null)"
echo "torch=$(python3 -c 'import torch; print(torch.__version__, torch.cuda.is_available())' 2>/dev/null)"
echo "tmp_opts=$(awk '$2 == "/tmp" {print $4}' /proc/mounts 2>/dev/null | tail -1)"
echo "tmp_exec=$( (printf '#!/bin/sh\nexit 0\n' > /tmp/.nsightlab-x && chmod +x /tmp/.nsightlab-x && /tmp/.nsightlab-x && echo yes) 2>/dev/null || echo no; rm -f /tmp/.nsightlab-x)"
echo "paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null)"
echo "rm_admin_only=$(grep -i RmProfilingAdminOnly /proc/driver/nvidia/params 2>/dev/null | awk -F: '{gsub(/ /, "", $2); print $2}')"
echo "capsys=$(grep CapEff /proc/self/status 2>/dev/null | awk '{print $2}')"
"""


def parse_probe(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def pod_checks(facts: dict[str, str]) -> list[Check]:
    """What the in-pod facts mean, each with its fix. Pure."""
    checks: list[Check] = []
    gpu = facts.get("gpu", "")
    if gpu:
        parts = [p.strip() for p in gpu.split(",")]
        detail = parts[0] + (f", {parts[1]}" if len(parts) > 1 else "") + (f", driver {parts[2]}" if len(parts) > 2 else "")
        checks.append(Check(name="pod: GPU (nvidia-smi)", ok=True, detail=detail))
    else:
        checks.append(Check(name="pod: GPU (nvidia-smi)", ok=False, detail="nvidia-smi found no GPU", fix="The pod needs nvidia.com/gpu in its limits and a node with the NVIDIA device plugin."))
    for tool, label in (("nsys", "Nsight Systems"), ("ncu", "Nsight Compute")):
        version = facts.get(tool, "")
        if version:
            checks.append(Check(name=f"pod: {tool}", ok=True, detail=version))
        else:
            checks.append(Check(name=f"pod: {tool}", ok=False, detail=f"{label} is not on PATH", fix="Use an image that ships it (lab.image), or `profile --profiler torch`." if tool == "nsys" else "Use an image that ships ncu (lab.image)."))
    torch = facts.get("torch", "")
    checks.append(
        Check(name="pod: PyTorch", ok=bool(torch) and torch.endswith("True"), detail=torch or "python3 cannot import torch", fix=None if torch.endswith("True") else "The lab scripts need PyTorch with CUDA in the image.")
    )
    noexec = "noexec" in facts.get("tmp_opts", "").split(",") or facts.get("tmp_exec") == "no"
    checks.append(
        Check(
            name="pod: /tmp allows exec",
            ok=not noexec,
            detail="/tmp is mounted noexec" if noexec else "yes",
            fix="nsys stages its libraries in TMPDIR: nsightlab points TMPDIR at its work folder; do the same by hand." if noexec else None,
        )
    )
    paranoid = facts.get("paranoid", "")
    if paranoid.lstrip("-").isdigit():
        high = int(paranoid) > 2
        checks.append(
            Check(
                name="pod: perf_event_paranoid",
                ok=None if high else True,
                detail=f"{paranoid}" + (" (CPU sampling unavailable; the tutorial's -t cuda,nvtx run does not need it)" if high else ""),
                fix="Add --sample=none --cpuctxsw=none to nsys (nsightlab does when needed)." if high else None,
            )
        )
    admin_only = facts.get("rm_admin_only", "")
    if admin_only in ("0", "1"):
        cap_admin = _has_sys_admin(facts.get("capsys", ""))
        blocked = admin_only == "1" and not cap_admin
        checks.append(
            Check(
                name="pod: GPU counters for ncu (RmProfilingAdminOnly)",
                ok=not blocked,
                detail=f"RmProfilingAdminOnly: {admin_only}" + (", CAP_SYS_ADMIN present" if cap_admin else ""),
                fix=(
                    "ncu will fail with ERR_NVGPUCTRPERM: ask the platform team for a profiling-enabled node "
                    "(NVreg_RestrictProfilingToAdminUsers=0), or, with their OK, `nsightlab create --profiling-caps`."
                )
                if blocked
                else None,
            )
        )
    else:
        checks.append(Check(name="pod: GPU counters for ncu (RmProfilingAdminOnly)", ok=None, detail="/proc/driver/nvidia/params not readable"))
    return checks


def _has_sys_admin(cap_eff: str) -> bool:
    try:
        return bool(int(cap_eff, 16) & (1 << 21))
    except ValueError:
        return False


def run(kube: Kube, ctx: ResolvedContext, config: Config, *, session: Session | None) -> DoctorReport:
    checks: list[Check] = []
    kc = ctx.kubeconfig
    checks.append(
        Check(
            name="kubeconfig and context",
            ok=True,
            detail=f"context {ctx.label} from {kc.path_arg()}, user {kc.user_of(ctx.name) or '?'}" + (f"; protected ({ctx.protected_reason}): read-only" if ctx.protected_reason else ""),
        )
    )
    try:
        version = kube.version()
    except ClusterError as e:
        checks.append(Check(name="API server reachable", ok=False, detail=e.message, fix=e.hint))
        return DoctorReport(context=ctx.name, server=ctx.server, namespace=ctx.namespace, checks=checks)
    checks.append(Check(name="API server reachable", ok=True, detail=f"{kube.server}, Kubernetes {version.get('gitVersion', '?')}"))
    ns_ok = _try(checks, "namespace exists", lambda: kube.namespace_exists(ctx.namespace), ctx.namespace, f"Pass --namespace, or set clusters.<alias>.namespace in config.yaml (now: {ctx.namespace}).")
    if ns_ok:
        for verb, resource, sub in PERMISSIONS:
            label = f"{resource}/{sub}" if sub else resource
            try:
                allowed, reason = kube.access_review(verb, resource, ctx.namespace, subresource=sub)
            except ClusterError as e:
                checks.append(Check(name=f"may {verb} {label}", ok=False, detail=e.message))
                continue
            checks.append(Check(name=f"may {verb} {label}", ok=allowed, detail=f"in {ctx.namespace}" + (f" ({reason})" if reason else ""), fix=None if allowed else f"Ask for RBAC: {verb} {label} in namespace {ctx.namespace}."))
    itype = config.lab.instance_type
    try:
        from nsightlab.cluster.lab import free_gpus

        free = free_gpus(kube, itype)
        if free:
            g = free[0]
            checks.append(Check(name=f"nodes of {itype}", ok=True, detail=f"{g.nodes} node(s), {g.gpu_allocatable} GPU(s), {g.gpu_free} free now"))
            if g.gpu_free < config.lab.gpus:
                checks.append(Check(name=f"a free GPU on {itype}", ok=False, detail="all GPUs of this type are in use", fix="Wait, or ask for one; `nsightlab explore nodes` shows who holds them."))
        else:
            checks.append(Check(name=f"nodes of {itype}", ok=False, detail="none in this cluster", fix="Set lab.instance_type in config.yaml to a GPU type `nsightlab explore nodes` lists."))
    except ClusterError as e:
        checks.append(Check(name=f"nodes of {itype}", ok=False, detail=e.message, fix=e.hint))
    image = config.lab.image
    image_ok = bool(image) and "CHANGE-ME" not in (image or "")
    checks.append(Check(name="lab image configured", ok=image_ok, detail=image or "lab.image is not set", fix=None if image_ok else "Set lab.image in config.yaml (the image with nsys, ncu and PyTorch)."))
    checks.extend(_pod_section(kube, ctx, config, session))
    return DoctorReport(context=ctx.name, server=ctx.server, namespace=ctx.namespace, checks=checks)


def _try(checks: list[Check], name: str, fn: Callable[[], bool], detail: str, fix: str) -> bool:
    try:
        ok = fn()
    except ClusterError as e:
        checks.append(Check(name=name, ok=False, detail=e.message, fix=e.hint))
        return False
    checks.append(Check(name=name, ok=ok, detail=detail if ok else f"{detail} does not exist", fix=None if ok else fix))
    return ok


def _pod_section(kube: Kube, ctx: ResolvedContext, config: Config, session: Session | None) -> list[Check]:
    name = session.pod if session and session.context == ctx.name and session.namespace == ctx.namespace else config.pod_name()
    try:
        pod = kube.get_pod(ctx.namespace, name)
    except ClusterError as e:
        return [Check(name="lab pod", ok=None, detail=e.message)]
    if pod is None:
        return [Check(name="lab pod", ok=None, detail=f"no lab pod {name} up: in-pod checks skipped (run `nsightlab create`)")]
    if not r.pod_is_ready(pod):
        return [Check(name="lab pod", ok=None, detail=f"{name} is {r.pod_status(pod)}: in-pod checks skipped")]
    if ctx.protected_reason:
        return [Check(name="lab pod", ok=None, detail=f"{name} is up, but this context is protected: nsightlab does not exec here")]
    from nsightlab.measure.targets import PodTarget

    target = PodTarget(kube, ctx.namespace, name)
    try:
        done = target.run(["sh", "-c", _PROBE_SH], check=False)
    except NsightlabError as e:
        return [Check(name="lab pod", ok=False, detail=f"cannot exec into {name}: {e.message}", fix=e.hint)]
    checks = [Check(name="lab pod", ok=True, detail=f"{name} on {(pod.get('spec') or {}).get('nodeName')}")]
    return checks + pod_checks(parse_probe(done.out))
