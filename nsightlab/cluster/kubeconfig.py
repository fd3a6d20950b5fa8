"""Reading kubeconfig files without importing the `kubernetes` package.

nsightlab needs the list of contexts, each context's server and namespace, before it
talks to any cluster (for the safety guard and its messages). Files are merged as
kubectl merges them: for a named cluster, user or context, the first file that defines
it wins. The current-context is read only to be ignored.
"""

from __future__ import annotations

import base64
import binascii
import os
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nsightlab import userconfig, userfiles
from nsightlab.errors import ClusterError


@dataclass
class Kubeconfig:
    """The merged view of one or more kubeconfig files."""

    paths: list[Path]
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    current_context: str | None = None
    origins: dict[str, Path] = field(default_factory=dict)  # "clusters/NAME", "users/NAME" -> the file that defined it

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
    """Read and merge the kubeconfig files; a missing or malformed file is exit 4.

    Malformed is anything kubectl would not load either, each reported in one line that
    names the file: a folder, an unreadable file, bytes that are not UTF-8, YAML syntax,
    a document that is not a mapping, lists that are not lists, entries without a name,
    and the fields nsightlab reads (a context's cluster, user and namespace, a cluster's
    server) that are not strings. An empty file is an empty kubeconfig, as for kubectl.
    """

    paths, origin = kubeconfig_paths(explicit)
    folders = [p for p in paths if p.is_dir()]
    if folders:
        raise ClusterError(
            f"kubeconfig {folders[0]} is a folder, not a file",
            hint="Give the kubeconfig file itself (e.g. ~/.kube/config).",
        )
    # kubectl skips the files of KUBECONFIG that do not exist; so does nsightlab
    existing = [p for p in paths if p.exists()]
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
        text = userfiles.read_text(path, what="kubeconfig", error=ClusterError, limit=userfiles.KUBECONFIG_MAX_BYTES)
        # before any loader (ours, or the kubernetes client's, which reads the files again)
        # builds anything an alias could multiply
        userconfig.check_yaml_aliases(text, path=path, what="kubeconfig", error=ClusterError, hint=_FIX)
        _merge(kc, path, _parse(text, path))
    return kc


_FIX = "Fix or regenerate the file (e.g. `aws eks update-kubeconfig`)."
# The fields of each entry nsightlab reads, which must be strings when present.
_STRING_FIELDS = {"contexts": ("cluster", "user", "namespace"), "clusters": ("server",), "users": ()}


def _parse(text: str, path: Path) -> Any:

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ClusterError(f"kubeconfig {where} is not valid YAML", hint=_FIX) from None
    except RecursionError:  # nesting deeper than the interpreter's stack
        raise ClusterError(f"kubeconfig {path} is nested too deeply to be a kubeconfig", hint=_FIX) from None


def _merge(kc: Kubeconfig, path: Path, data: Any) -> None:
    """Add one file's entries to `kc`: the first file that names an entry wins (kubectl's rule)."""
    if data is None:
        return
    if not isinstance(data, dict):
        raise ClusterError(f"kubeconfig {path} is malformed (not a mapping)", hint=_FIX)
    for key, target in (("contexts", kc.contexts), ("clusters", kc.clusters), ("users", kc.users)):
        entries = data.get(key) or []
        if not isinstance(entries, list):
            raise ClusterError(f"kubeconfig {path} is malformed ('{key}' is not a list)", hint=_FIX)
        body_key = key[:-1]  # "contexts" -> "context"
        for entry in entries:
            if (
                not isinstance(entry, dict)
                or not isinstance(entry.get("name"), (str, int, float))
                or isinstance(entry.get("name"), bool)
            ):
                raise ClusterError(f"kubeconfig {path} is malformed (an entry of '{key}' has no name)", hint=_FIX)
            name = str(entry["name"])
            body = entry.get(body_key)
            if body is None:
                body = {}
            if not isinstance(body, dict):
                raise ClusterError(f"kubeconfig {path} is malformed ({body_key} '{name}' is not a mapping)", hint=_FIX)
            for field_name in _STRING_FIELDS[key]:
                if field_name in body and body[field_name] is not None and not isinstance(body[field_name], str):
                    raise ClusterError(
                        f"kubeconfig {path} is malformed (the '{field_name}' of {body_key} '{name}' is not a string)",
                        hint=_FIX,
                    )
            if name not in target:
                target[name] = body
                kc.origins[f"{key}/{name}"] = path
    current = data.get("current-context")
    if kc.current_context is None and current and isinstance(current, str):
        kc.current_context = current


# ---------------------------------------------------------------------------- plain contexts

# What a context may hold for nsightlab to connect without the kubernetes client's loader:
# a server, its CA, client certificates and a bearer token. Anything else (exec credential
# plugins, auth providers, basic auth, token files, proxies) goes through the official
# loader, which knows them all.
PLAIN_CLUSTER_KEYS = frozenset(
    {
        "server",
        "certificate-authority",
        "certificate-authority-data",
        "insecure-skip-tls-verify",
        "tls-server-name",
        "extensions",
    }
)
PLAIN_USER_KEYS = frozenset(
    {"client-certificate", "client-certificate-data", "client-key", "client-key-data", "token", "extensions"}
)


@dataclass(frozen=True)
class PlainConnection:
    """Where and how to connect for a context with plain credentials (see `plain_connection`)."""

    server: str
    verify: bool = True
    ca: bytes | None = None  # PEM; None: the system's CAs
    cert: bytes | None = None  # client certificate and key, PEM
    key: bytes | None = None
    server_name: str | None = None  # TLS server name, when not the server's host
    token: str | None = None


# The entries' keys that name a file the loader reads (relative to the kubeconfig).
_FILE_KEYS = {"clusters": ("certificate-authority",), "users": ("client-certificate", "client-key", "tokenFile")}


def _referenced(kc: Kubeconfig, origin: str, value: object) -> Path:
    """A file named by an entry of the kubeconfig, as the loader finds it: relative to the
    kubeconfig file that defined the entry."""
    base = kc.origins.get(origin)
    return Path(os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(base)) if base else "", str(value))))


def check_credential_files(kc: Kubeconfig, context: str) -> None:
    """The files the context's cluster and user name (CA, client certificate and key, token
    file), when they exist, must be regular files of kilobytes: ClusterError (exit 4)
    otherwise, before nsightlab or the kubernetes client's loader opens one (a FIFO would
    block it, `/dev/zero` would never end). A missing one is left to the loader to report."""
    ctx = kc.contexts.get(context) or {}
    for key, name in (("clusters", ctx.get("cluster")), ("users", ctx.get("user"))):
        entry = (kc.clusters if key == "clusters" else kc.users).get(str(name)) if name else None
        for field_name in _FILE_KEYS[key] if isinstance(entry, dict) else ():
            value = entry.get(field_name) if isinstance(entry, dict) else None
            if not value or not isinstance(value, str):
                continue
            path = _referenced(kc, f"{key}/{name}", value)
            if not os.path.exists(path):  # missing or unreachable: the loader says so, in its words
                continue
            st = userfiles.check_regular(path, what=f"the {field_name} file of context '{context}'", error=ClusterError)
            if st.st_size > userfiles.CREDENTIAL_FILE_MAX_BYTES:
                raise ClusterError(
                    f"the {field_name} file of context '{context}' ({path}) is larger than "
                    f"{userfiles.size_words(userfiles.CREDENTIAL_FILE_MAX_BYTES)}, far more than a certificate, "
                    "key or token holds",
                    hint=_FIX,
                )


def plain_connection(kc: Kubeconfig, context: str) -> PlainConnection | None:
    """The context's connection settings, read here exactly as the kubernetes client's
    loader reads them (data before file, files relative to the kubeconfig that defined
    the entry, TLS material only for https), or None when the context needs anything the
    loader does more for: then nsightlab uses the loader itself.

    Importing the loader costs a tenth of a second, on every command; for the usual
    kubeconfig (certificates and a token, e.g. written by kind or minikube, or a
    service-account token) it is not needed.
    """

    ctx = kc.contexts.get(context)
    if not ctx:
        return None
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    cluster = kc.clusters.get(str(cluster_name)) if cluster_name else None
    user = kc.users.get(str(user_name), {}) if user_name else {}
    check_credential_files(kc, context)
    if not cluster or not isinstance(cluster.get("server"), str) or not cluster["server"]:
        return None
    if not set(cluster) <= PLAIN_CLUSTER_KEYS or not set(user) <= PLAIN_USER_KEYS:
        return None
    if any(scheme != "no" for scheme in urllib.request.getproxies()):
        return None  # the loader routes through the environment's proxy
    server = cluster["server"].rstrip("/")

    def material(entry: dict[str, Any], origin: str, name: str) -> bytes | None:
        """The PEM of `name` (-data: base64, preferred) or of the file it names."""
        if f"{name}-data" in entry:
            data = entry[f"{name}-data"]
            return base64.standard_b64decode(str(data).encode()) if data else None
        if entry.get(name):
            path = _referenced(kc, origin, entry[name])
            if not os.path.exists(path):
                raise FileNotFoundError(path)
            return userfiles.read_bytes(
                path, what=f"{name} file", error=ClusterError, limit=userfiles.CREDENTIAL_FILE_MAX_BYTES
            )
        return None

    ca = cert = key = None
    if server.startswith("https"):
        try:
            ca = material(cluster, f"clusters/{cluster_name}", "certificate-authority")
            cert = material(user, f"users/{user_name}", "client-certificate")
            key = material(user, f"users/{user_name}", "client-key")
        except (OSError, binascii.Error, ValueError):
            return None  # the loader reports it, in its words
        if (cert is None) != (key is None):
            return None
    token = user.get("token")
    if token is not None and not isinstance(token, str):
        return None
    return PlainConnection(
        server=server,
        verify=not cluster["insecure-skip-tls-verify"] if "insecure-skip-tls-verify" in cluster else True,
        ca=ca,
        cert=cert,
        key=key,
        server_name=str(cluster["tls-server-name"]) if cluster.get("tls-server-name") else None,
        token=f"Bearer {token}" if token else None,
    )
