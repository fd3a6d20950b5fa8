"""What a lab pod is made of and marked with: the labels that make a pod nsightlab's and
its owner's, and the manifest filled from a template and the config (pure, but for
reading the template file).

Every pod nsightlab creates carries `app.kubernetes.io/managed-by: nsightlab` and
`nsightlab/owner: <owner>`; cleanup touches nothing without both.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nsightlab import userfiles
from nsightlab.errors import UsageError, validation_message
from nsightlab.k8s import pods as r
from nsightlab.models import Model
from nsightlab.userconfig import Config, check_yaml_aliases

MANAGED_BY = "app.kubernetes.io/managed-by"
OWNER = "nsightlab/owner"
PLACEHOLDER = "CHANGE-ME"


def owner_label(owner: str) -> str:
    """A valid label value for the owner (<= 63 chars of [A-Za-z0-9_.-])."""
    value = re.sub(r"[^A-Za-z0-9_.-]", "-", owner).strip("-_.")[:63].strip("-_.")
    return value or "unknown"


def selector(owner: str) -> str:
    return f"{MANAGED_BY}=nsightlab,{OWNER}={owner_label(owner)}"


def is_ours(pod: dict[str, Any], owner: str) -> bool:
    labels = r.labels(pod)
    return labels.get(MANAGED_BY) == "nsightlab" and labels.get(OWNER) == owner_label(owner)


# ---------------------------------------------------------------------------- manifest


class _K8s(Model):
    model_config = ConfigDict(extra="allow")


class _Container(_K8s):
    name: str
    image: str | None = None


class _Spec(_K8s):
    containers: list[_Container] = Field(min_length=1)


class _Meta(_K8s):
    name: str | None = None


class PodTemplate(_K8s):
    """The minimum a pod template must be; everything else is passed through."""

    apiVersion: str
    kind: str
    metadata: _Meta = Field(default_factory=_Meta)
    spec: _Spec


def load_template(path: Path) -> dict[str, Any]:
    """The lab pod template (`manifests/pod.yaml` or `--manifest FILE`), checked."""
    return load_manifest(path, PodTemplate, api_version="v1", kind="Pod", what="pod template")


def load_manifest(path: Path, model: type[BaseModel], *, api_version: str, kind: str, what: str) -> dict[str, Any]:
    """A YAML manifest template, checked against the minimum `model` asks of it and its
    apiVersion/kind; everything else is passed through as written. Every problem is one
    usage error naming the file (and the line, for YAML)."""
    text = userfiles.read_text(path, what=what, error=UsageError, limit=userfiles.MANIFEST_MAX_BYTES)
    check_yaml_aliases(text, path=path, what=what, error=UsageError, hint="Write the repeated values out.")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise UsageError(f"{where}: not valid YAML") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a {what} must be a mapping")
    try:
        model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise UsageError(f"{path}: bad {what} at '{key}': {validation_message(err)}") from None
    if data.get("apiVersion") != api_version or data.get("kind") != kind:
        raise UsageError(
            f"{path}: the template must be apiVersion {api_version}, kind {kind} (got "
            f"{data.get('apiVersion')}/{data.get('kind')})"
        )
    return data


def check_lab_values(config: Config, *, needs: str) -> None:
    """lab.image set, and no placeholder left in lab.node_selector: what every manifest made
    from the lab's settings (the lab pod, a fleet's Jobs) needs; `needs` says what the
    image must have."""
    lab = config.lab
    if not lab.image or PLACEHOLDER in lab.image:
        raise UsageError(
            "lab.image is not set in config.yaml",
            hint=f"Set it (`nsightlab config` shows the file) to the image with {needs}: the serving sidecar's image, "
            "e.g. registry.example.com/triton-vllm-container:1.0-1.",
        )
    for key, value in lab.node_selector.items():
        if PLACEHOLDER in key or PLACEHOLDER in value:
            raise UsageError(
                f"lab.node_selector still holds a placeholder ({key}: {value})",
                hint="Fill it in config.yaml or remove it.",
            )


def build_manifest(
    template: dict[str, Any], config: Config, *, namespace: str, profiling_caps: bool = False
) -> dict[str, Any]:
    """Fill the template from the config; pure."""
    lab = config.lab
    check_lab_values(config, needs="nsys, ncu and PyTorch")
    m = copy.deepcopy(template)
    meta = m.setdefault("metadata", {})
    meta["name"] = config.pod_name()
    meta["namespace"] = namespace
    labels = dict(meta.get("labels") or {})
    labels.pop("owner", None)
    labels.update({MANAGED_BY: "nsightlab", OWNER: owner_label(config.owner()), "app.kubernetes.io/name": "nsight-lab"})
    meta["labels"] = labels
    spec = m["spec"]
    spec["restartPolicy"] = "Never"
    spec["activeDeadlineSeconds"] = lab.deadline_seconds
    selector_labels = dict(spec.get("nodeSelector") or {})
    selector_labels["node.kubernetes.io/instance-type"] = lab.instance_type
    selector_labels.update(lab.node_selector)
    spec["nodeSelector"] = selector_labels
    tolerations = list(spec.get("tolerations") or [])
    if not any(t.get("key") == r.GPU for t in tolerations):
        tolerations.append({"key": r.GPU, "operator": "Exists"})
    spec["tolerations"] = tolerations
    main = spec["containers"][0]
    main["image"] = lab.image
    amounts = {"cpu": lab.cpu, "memory": lab.memory}
    if lab.gpus:
        amounts[r.GPU] = str(lab.gpus)
    main["resources"] = {"limits": dict(amounts), "requests": dict(amounts)}
    sc = main.setdefault("securityContext", {})
    sc.setdefault("allowPrivilegeEscalation", False)
    caps = sc.setdefault("capabilities", {})
    caps.setdefault("drop", ["ALL"])
    sc.setdefault("seccompProfile", {"type": "RuntimeDefault"})
    if profiling_caps:
        added = list(caps.get("add") or [])
        if "SYS_ADMIN" not in added:
            added.append("SYS_ADMIN")
        caps["add"] = added
    return m


def manifest_yaml(manifest: dict[str, Any]) -> str:
    return yaml.safe_dump(manifest, sort_keys=False, default_flow_style=False)
