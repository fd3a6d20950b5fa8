"""`init` and `config`: the starter config file and the effective-config view."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from nsightlab.config import LoadedConfig, atomic_write_text, default_config_path, home, load_config
from nsightlab.errors import UsageError

PLACEHOLDER = "CHANGE-ME"


def starter_text(*, context: str | None, namespace: str | None, image: str | None) -> str:
    template = resources.files("nsightlab").joinpath("data/config-starter.yaml").read_text(encoding="utf-8")

    def scalar(value: str | None, fallback: str) -> str:
        # json-style quoting is valid YAML and safe for any string
        import json

        return json.dumps(value) if value else fallback

    return template.format(
        context=scalar(context, f"{PLACEHOLDER}-stg-context"),
        namespace=scalar(namespace, f"{PLACEHOLDER}-namespace"),
        image=scalar(image, f"{PLACEHOLDER}.registry.example.com/triton-vllm-container:1.0-1"),
    )


def write_starter_config(path: Path | None, *, context: str | None, namespace: str | None, image: str | None, force: bool) -> Path:
    """Write the commented starter config; refuse to overwrite without `force`."""
    target = Path(path).expanduser() if path else default_config_path()
    if target.exists() and not force:
        raise UsageError(f"{target} already exists", hint="Pass --force to overwrite it, or edit it by hand.")
    text = starter_text(context=context, namespace=namespace, image=image)
    # The template must always load: a starter that fails validation would be a bug.
    yaml.safe_load(text)
    try:
        atomic_write_text(target, text)
    except OSError as e:  # e.g. NSIGHTLAB_HOME is a file, or not writable
        where = " (NSIGHTLAB_HOME)" if path is None else ""
        raise UsageError(f"cannot write {target}{where}: {e.strerror or e}", hint="Point NSIGHTLAB_HOME (or --config) at a folder you can write in.") from None
    load_config(target)
    return target


class ConfigValue(BaseModel):
    key: str
    value: Any
    source: str


class ConfigView(BaseModel):
    path: str
    exists: bool
    home: str
    config: dict[str, Any]
    values: list[ConfigValue]
    protected_patterns: list[str]
    placeholders: list[str]


def config_view(loaded: LoadedConfig) -> ConfigView:
    data = loaded.config.model_dump(mode="json")
    values: list[ConfigValue] = []
    for key, source in loaded.sources.items():
        node: Any = data
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
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
