"""Doctor's checks as data, and what the in-pod probe's facts mean (pure: the probe's
key=value text in, checks out)."""

from __future__ import annotations

from nsightlab.models import Model


class Check(Model):
    """One check: pass (ok True), FAIL (False: the lab cannot run as it is) or info (None:
    skipped, or a fact the lab does not depend on, such as a cluster-wide view this
    account may not read)."""

    name: str
    ok: bool | None
    detail: str
    fix: str | None = None


class DoctorReport(Model):
    context: str
    server: str | None
    namespace: str
    checks: list[Check]

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.ok is False]


def parse_probe(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def pod_checks(facts: dict[str, str], *, cli_args: str) -> list[Check]:
    """What the in-pod facts mean, each with its fix (`cli_args`: the `--context X -n NS`
    its commands carry, so that they run as printed). Pure."""
    checks: list[Check] = [_gpu_check(facts)]
    for tool, label in (("nsys", "Nsight Systems"), ("ncu", "Nsight Compute")):
        version = facts.get(tool, "")
        if version:
            checks.append(Check(name=f"pod: {tool}", ok=True, detail=version))
        else:
            fix = (
                "Use an image that ships it (lab.image), or profile without it: `nsightlab profile lesson1 "
                "--profiler torch`."
                if tool == "nsys"
                else "Use an image that ships ncu (lab.image)."
            )
            checks.append(
                Check(
                    name=f"pod: {tool}", ok=False, detail=f"{label} is not installed in the pod (not on PATH)", fix=fix
                )
            )
    checks.append(_torch_check(facts.get("torch", "")))
    noexec = "noexec" in facts.get("tmp_opts", "").split(",") or facts.get("tmp_exec") == "no"
    checks.append(
        Check(
            name="pod: /tmp allows exec",
            ok=not noexec,
            detail="/tmp is mounted noexec" if noexec else "yes",
            fix="nsys stages its libraries in TMPDIR: nsightlab points TMPDIR at its work folder; do the same by hand."
            if noexec
            else None,
        )
    )
    paranoid = facts.get("paranoid", "")
    if paranoid.lstrip("-").isdigit():
        high = int(paranoid) > 2
        checks.append(
            Check(
                name="pod: perf_event_paranoid",
                ok=None if high else True,
                detail=f"{paranoid}"
                + (" (CPU sampling unavailable; the tutorial's -t cuda,nvtx run does not need it)" if high else ""),
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
                    "(NVreg_RestrictProfilingToAdminUsers=0), or, with their OK, make the pod anew with CAP_SYS_ADMIN: "
                    f"`nsightlab create {cli_args} --profiling-caps --recreate`."
                )
                if blocked
                else None,
            )
        )
    else:
        checks.append(
            Check(
                name="pod: GPU counters for ncu (RmProfilingAdminOnly)",
                ok=None,
                detail="/proc/driver/nvidia/params not readable",
            )
        )
    return checks


def _gpu_check(facts: dict[str, str]) -> Check:
    name = "pod: GPU (nvidia-smi)"
    gpu = facts.get("gpu", "")
    if gpu:
        parts = [p.strip() for p in gpu.split(",")]
        detail = (
            parts[0] + (f", {parts[1]}" if len(parts) > 1 else "") + (f", driver {parts[2]}" if len(parts) > 2 else "")
        )
        return Check(name=name, ok=True, detail=detail)
    if facts.get("smi"):
        return Check(
            name=name,
            ok=False,
            detail="nvidia-smi found no GPU",
            fix="The pod needs nvidia.com/gpu in its limits (lab.gpus) and a node with the NVIDIA device plugin.",
        )
    return Check(
        name=name,
        ok=False,
        detail="nvidia-smi is not installed in the pod",
        fix="The NVIDIA container toolkit mounts it into a container that is given a GPU: the pod needs "
        "nvidia.com/gpu in its limits (lab.gpus) on a node with the NVIDIA device plugin.",
    )


def _torch_check(text: str) -> Check:
    """`torch.__version__ torch.cuda.is_available() torch.version.cuda`, as the probe prints it."""
    name = "pod: PyTorch"
    parts = text.split()
    if not parts:
        return Check(
            name=name,
            ok=False,
            detail="python3 cannot import torch",
            fix="The lab scripts need PyTorch with CUDA in the image (lab.image).",
        )
    version = parts[0]
    available = len(parts) > 1 and parts[1] == "True"
    cuda = parts[2] if len(parts) > 2 and parts[2] != "None" else None
    if available:
        return Check(
            name=name, ok=True, detail=f"{version}, CUDA available" + (f" (built for CUDA {cuda})" if cuda else "")
        )
    if "+cpu" in version or (len(parts) > 2 and cuda is None):
        detail = f"CUDA not available: CPU-only build {version}"
    else:
        detail = f"CUDA not available: {version}" + (f" (built for CUDA {cuda})" if cuda else "") + " sees no GPU"
    return Check(
        name=name,
        ok=False,
        detail=detail,
        fix="The lab scripts need a CUDA build of PyTorch in the image (lab.image) and a GPU in the pod.",
    )


def _has_sys_admin(cap_eff: str) -> bool:
    try:
        return bool(int(cap_eff, 16) & (1 << 21))
    except ValueError:
        return False
