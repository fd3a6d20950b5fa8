"""`doctor`: the cluster's checks (`nsightlab.cluster.api_checks`), then, with a lab pod up,
one exec inside it that checks the GPU and the profilers. That exec is skipped on a
protected context, where nsightlab never execs."""

from __future__ import annotations

from nsightlab.cluster import api_checks as cluster_doctor
from nsightlab.cluster.answers import Forbidden
from nsightlab.cluster.kube import Kube
from nsightlab.cluster.permissions import LAB_PERMISSIONS, rules
from nsightlab.cluster.safety import ResolvedContext
from nsightlab.errors import NsightlabError
from nsightlab.k8s.doctor import Check, DoctorReport, parse_probe, pod_checks
from nsightlab.measure.targets import PodTarget
from nsightlab.userconfig import Config, Session

# One exec gathers every in-pod fact, as key=value lines.
_PROBE_SH = r"""
echo "smi=$(command -v nvidia-smi 2>/dev/null)"
echo "gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
echo "nsys=$(nsys --version 2>/dev/null | head -1)"
echo "ncu=$(ncu --version 2>/dev/null | tail -1)"
echo "python=$(python3 -c 'import sys; print(sys.version.split()[0])' 2>/dev/null)"
echo "torch=$(python3 -c 'import torch; print(torch.__version__, torch.cuda.is_available(), torch.version.cuda)' 2>/dev/null)"
echo "tmp_opts=$(awk '$2 == "/tmp" {print $4}' /proc/mounts 2>/dev/null | tail -1)"
echo "tmp_exec=$( (printf '#!/bin/sh\nexit 0\n' > /tmp/.nsightlab-x && chmod +x /tmp/.nsightlab-x && /tmp/.nsightlab-x && echo yes) 2>/dev/null || echo no; rm -f /tmp/.nsightlab-x)"
echo "paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null)"
echo "rm_admin_only=$(grep -i RmProfilingAdminOnly /proc/driver/nvidia/params 2>/dev/null | awk -F: '{gsub(/ /, "", $2); print $2}')"
echo "capsys=$(grep CapEff /proc/self/status 2>/dev/null | awk '{print $2}')"
"""  # noqa: E501


def run(kube: Kube, ctx: ResolvedContext, config: Config, *, session: Session | None) -> DoctorReport:
    """Every check: the API's, then (with a Ready lab pod, not on a protected context) the
    in-pod probe's."""
    checks, reachable = cluster_doctor.api_checks(kube, ctx, config)
    if reachable:
        checks.extend(_pod_section(kube, ctx, config, session))
    return DoctorReport(context=ctx.name, server=ctx.server, namespace=ctx.namespace, checks=checks)


def _pod_section(kube: Kube, ctx: ResolvedContext, config: Config, session: Session | None) -> list[Check]:
    name, node, skipped = cluster_doctor.probe_pod(kube, ctx, config, session)
    if skipped is not None:
        return [skipped]
    target = PodTarget(kube, ctx.namespace, name)
    try:
        done = target.run(["sh", "-c", _PROBE_SH], check=False)
    except Forbidden as e:
        exec_rule = next(rule for rule in rules(LAB_PERMISSIONS) if rule.resource == "pods/exec")
        fix = (
            f"Ask for {', '.join(exec_rule.verbs)} on pods/exec in namespace {ctx.namespace}: docs/permissions.md has "
            "the Role."
        )
        return [Check(name="lab pod", ok=False, detail=f"cannot exec into {name}: {e.message}", fix=fix)]
    except NsightlabError as e:
        return [Check(name="lab pod", ok=False, detail=f"cannot exec into {name}: {e.message}", fix=e.hint)]
    checks = [Check(name="lab pod", ok=True, detail=f"{name} on {node}")]
    return checks + pod_checks(parse_probe(done.out), cli_args=ctx.cli_args)
