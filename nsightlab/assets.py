"""Where the lab scripts and the pod template are, in a checkout and when installed."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _folder(name: str) -> Path:
    installed = _PACKAGE / name  # a wheel installs them inside the package
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / name  # a source checkout or an editable install


# The module every built-in lab script imports from its own folder: it travels with each.
LAB_COMMON = "labcommon.py"
# decode.py's model arithmetic, which decode.py and colocate.py import from their folder.
DECODE_MODEL = "decode_model.py"


def lab_script(name: str) -> Path:
    return _folder("lab_scripts") / name


def pod_template() -> Path:
    return _folder("manifests") / "pod.yaml"


def fleet_job_template() -> Path:
    """The Job template of `nsightlab fleet` (one Job per GPU type or node)."""
    return _folder("manifests") / "fleet-job.yaml"
