"""Reading kubeconfig files without importing the `kubernetes` package.

nsightlab needs the list of contexts, each context's server and namespace, before it
talks to any cluster (for the safety guard and its messages). Files are merged as
kubectl merges them: for a named cluster, user or context, the first file that defines
it wins. The current-context is read only to be ignored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsightlab.errors import ClusterError


@dataclass
class Kubeconfig:
    """The merged view of one or more kubeconfig files."""

    paths: list[Path]
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    current_context: str | None = None

    def path_arg(self) -> str:
        """The files in the form the kubernetes client accepts (KUBECONFIG-style)."""
        return os.pathsep.join(str(p) for p in self.paths)

    def context_names(self) -> list[str]:
        return sorted(self.contexts)

    def server(self, context: str) -> str | None:
        cluster = self.contexts.get(context, {}).get("cluster")
        if cluster is None:
            return None
        server = self.clusters.get(cluster, {}).get("server")
        return str(server) if server else None

    def namespace(self, context: str) -> str | None:
        ns = self.contexts.get(context, {}).get("namespace")
        return str(ns) if ns else None

    def user_of(self, context: str) -> str | None:
        user = self.contexts.get(context, {}).get("user")
        return str(user) if user else None


def kubeconfig_paths(explicit: str | os.PathLike[str] | None = None) -> tuple[list[Path], str]:
    """The files to read, and where that list came from (for messages)."""
    if explicit:
        return [Path(explicit).expanduser()], "--kubeconfig"
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p], "KUBECONFIG"
    return [Path.home() / ".kube" / "config"], "default"


def load_kubeconfig(explicit: str | os.PathLike[str] | None = None) -> Kubeconfig:
    """Read and merge the kubeconfig files; a missing or malformed file is exit 4."""
    import yaml

    paths, origin = kubeconfig_paths(explicit)
    existing = [p for p in paths if p.is_file()]
    if explicit and not existing:
        raise ClusterError(
            f"kubeconfig {paths[0]} does not exist",
            hint="Check the --kubeconfig path.",
        )
    if not existing:
        shown = os.pathsep.join(str(p) for p in paths)
        raise ClusterError(
            f"no kubeconfig found ({origin}: {shown})",
            hint="Set KUBECONFIG or pass --kubeconfig PATH.",
        )
    kc = Kubeconfig(paths=existing)
    for path in existing:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
            raise ClusterError(f"kubeconfig {where} is not valid YAML", hint="Fix or regenerate the file (e.g. `aws eks update-kubeconfig`).") from None
        except OSError as e:
            raise ClusterError(f"cannot read kubeconfig {path}: {e.strerror}") from None
        if data is None:
            continue
        if not isinstance(data, dict):
            raise ClusterError(f"kubeconfig {path} is malformed (not a mapping)", hint="Fix or regenerate the file.")
        for key, target in (("contexts", kc.contexts), ("clusters", kc.clusters), ("users", kc.users)):
            entries = data.get(key) or []
            if not isinstance(entries, list):
                raise ClusterError(f"kubeconfig {path} is malformed ('{key}' is not a list)", hint="Fix or regenerate the file.")
            for entry in entries:
                if not isinstance(entry, dict) or "name" not in entry:
                    raise ClusterError(f"kubeconfig {path} is malformed (an entry of '{key}' has no name)", hint="Fix or regenerate the file.")
                body_key = key[:-1]  # "contexts" -> "context"
                body = entry.get(body_key) or {}
                target.setdefault(str(entry["name"]), body if isinstance(body, dict) else {})
        if kc.current_context is None and data.get("current-context"):
            kc.current_context = str(data["current-context"])
    return kc
