"""`init` and `config`: the starter config file and the effective-config view."""

from __future__ import annotations

import json
import shlex
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from nsightlab import kubevalues
from nsightlab.errors import UsageError
from nsightlab.models import Model
from nsightlab.userconfig import LoadedConfig, atomic_write_text, default_config_path, home, load_config

PLACEHOLDER = "CHANGE-ME"


def starter_text(*, context: str, namespace: str, image: str) -> str:
    """The commented starter config with the three values nsightlab cannot guess."""
    template = resources.files("nsightlab").joinpath("data/config-starter.yaml").read_text(encoding="utf-8")
    # json-style quoting is valid YAML and safe for any string
    return template.format(context=json.dumps(context), namespace=json.dumps(namespace), image=json.dumps(image))


STARTER_ALIAS = "stg"  # the alias `init` writes (the tutorial's `--context stg`)
# What `init` must be told, as (key, its flag, what to type): it writes no placeholder.
STARTER_FLAGS = (("context", "--context", "CTX"), ("namespace", "--namespace", "NS"), ("image", "--image", "IMAGE"))


def config_target(path: Path | None, *, force: bool) -> Path:
    """Where `init` writes; an existing file is refused unless `force`."""
    target = Path(path).expanduser() if path else default_config_path()
    if target.exists() and not force:
        raise UsageError(f"{target} already exists", hint="Pass --force to overwrite it, or edit it by hand.")
    return target


def starter_values(path: Path) -> dict[str, str]:
    """The values `init --force` keeps from the file it replaces: the 'stg' alias's context
    and namespace and lab.image, where they are set and not placeholders."""
    try:
        cfg = load_config(path).config
    except UsageError:
        return {}
    alias = cfg.clusters.get(STARTER_ALIAS)
    found = {
        "context": alias.context if alias else None,
        "namespace": alias.namespace if alias else None,
        "image": cfg.lab.image,
    }
    return {k: v for k, v in found.items() if v and PLACEHOLDER not in v}


def check_starter_value(key: str, value: str) -> str:
    """A value for `init`, stripped; a placeholder, an empty value or a namespace that
    Kubernetes would refuse is a usage error."""
    text = value.strip()
    flag = dict((k, f) for k, f, _ in STARTER_FLAGS)[key]
    if not text or PLACEHOLDER in text:
        raise UsageError(f"{flag} needs a real value, got '{value}'")
    problem = kubevalues.dns1123_label_problem(text) if key == "namespace" else None
    if problem is not None:
        raise UsageError(f"--namespace '{value}' is not a Kubernetes namespace name: {problem}")
    if key == "image" and any(c.isspace() for c in text):
        raise UsageError(f"--image '{value}' is not an image reference (it holds a space)")
    return text


def write_starter_config(
    path: Path | None, *, context: str | None, namespace: str | None, image: str | None, force: bool
) -> Path:
    """Write the commented starter config; refuse to overwrite without `force`, and refuse
    to write one with a value missing (it would only fail later, further from the cause)."""
    target = config_target(path, force=force)
    given = {"context": context, "namespace": namespace, "image": image}
    missing = [flag for key, flag, _ in STARTER_FLAGS if not given[key]]
    if missing:
        raise UsageError(f"nsightlab init needs {', '.join(missing)}")
    checked = {k: check_starter_value(k, v) for k, v in given.items() if v}
    text = starter_text(context=checked["context"], namespace=checked["namespace"], image=checked["image"])
    # The template must always load: a starter that fails validation would be a bug.
    yaml.safe_load(text)
    try:
        atomic_write_text(target, text)
    except OSError as e:  # e.g. NSIGHTLAB_HOME is a file, or not writable
        where = " (NSIGHTLAB_HOME)" if path is None else ""
        raise UsageError(
            f"cannot write {target}{where}: {e.strerror or e}",
            hint="Point NSIGHTLAB_HOME (or --config) at a folder you can write in.",
        ) from None
    load_config(target)
    return target


class ConfigValue(Model):
    key: str
    value: Any
    source: str


class ConfigView(Model):
    path: str
    exists: bool
    home: str
    config: dict[str, Any]
    values: list[ConfigValue]
    protected_patterns: list[str]
    placeholders: list[str]


def placeholder_keys(loaded: LoadedConfig, *, alias: str | None, namespace_given: bool = False) -> list[str]:
    """The keys a lab pod would be made from that still hold a placeholder (CHANGE-ME):
    everything under `lab`, and the alias in use (its namespace unless -n was given)."""
    view = config_view(loaded)
    wanted = ["lab."]
    if alias is not None:
        wanted.append(f"clusters.{alias}.context")
        if not namespace_given:
            wanted.append(f"clusters.{alias}.namespace")
    return [
        v.key for v in view.values if any(v.key.startswith(w) for w in wanted) and PLACEHOLDER in json.dumps(v.value)
    ]


def refuse_placeholders(loaded: LoadedConfig, *, alias: str | None, namespace_given: bool = False) -> None:
    """A usage error (exit 2) naming each placeholder a lab pod would be made from, where
    it is, and the command that sets it."""
    keys = placeholder_keys(loaded, alias=alias, namespace_given=namespace_given)
    if not keys:
        return
    where = ", ".join(f"{k} ({loaded.sources.get(k, loaded.path)})" for k in keys)
    flags = {
        f"clusters.{STARTER_ALIAS}.context": "context",
        f"clusters.{STARTER_ALIAS}.namespace": "namespace",
        "lab.image": "image",
    }
    settable = [flags[k] for k in keys if k in flags]
    others = [k for k in keys if k not in flags]
    hint = ""
    if settable:
        config_opt = "" if loaded.path == default_config_path() else f"--config {shlex.quote(str(loaded.path))} "
        named = ", ".join(flag for key, flag, _ in STARTER_FLAGS if key in settable)
        hint = (
            f"Set {'it' if len(settable) == 1 else 'them'} with `nsightlab {config_opt}init --force`, which asks "
            f"for {named} on a terminal (elsewhere add {named} and the value{'s' if len(settable) > 1 else ''}) and "
            "rewrites the file, keeping the alias and image already set"
        )
    if others:
        hint += ("; " if hint else "") + f"edit {', '.join(others)} in {loaded.path}"
    plural = "s" if len(keys) > 1 else ""
    raise UsageError(f"the config still holds placeholder{plural} (CHANGE-ME): {where}", hint=hint + ".")


def config_view(loaded: LoadedConfig) -> ConfigView:
    data = loaded.config.model_dump(mode="json")
    values: list[ConfigValue] = []
    for key, source in loaded.sources.items():
        node: Any = data
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if key == "lab.owner" and node is None:  # what is meant: the user's name
            node, source = loaded.config.owner(), f"{source} (your user name)"
        values.append(ConfigValue(key=key, value=node, source=source))
    placeholders = [v.key for v in values if isinstance(v.value, str) and PLACEHOLDER in v.value]
    return ConfigView(
        path=str(loaded.path),
        exists=loaded.exists,
        home=str(home()),
        config=data,
        values=values,
        protected_patterns=loaded.config.all_protected_patterns(),
        placeholders=placeholders,
    )
