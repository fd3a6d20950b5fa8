"""`config` drawn: the effective configuration and where each value came from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

from nsightlab.present.render import Column, blank, lines, table

if TYPE_CHECKING:
    from nsightlab.configure import ConfigView
    from nsightlab.present.console import Env


def config_view(env: Env, view: ConfigView) -> None:
    state = "" if view.exists else " (does not exist: all defaults; create it with `nsightlab init`)"
    lines(env, [f"config file: {view.path}{state}", f"home: {view.home}"], bullet="")
    blank(env)
    cols = [Column("KEY"), Column("VALUE"), Column("FROM")]
    table(env, cols, [[v.key, _config_value(v.value), v.source] for v in view.values])
    blank(env)
    lines(env, ["protected context patterns: " + ", ".join(view.protected_patterns)], bullet="")
    if view.placeholders:
        lines(env, [f"still to fill in: {', '.join(view.placeholders)}"], bullet="")


def _config_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):  # YAML's words, as a person writes them in config.yaml
        return "yes" if value else "no"
    if isinstance(value, (dict, list)):
        return (
            yaml.safe_dump(value, default_flow_style=True).strip()
            if value
            else ("{}" if isinstance(value, dict) else "[]")
        )
    return str(value)
