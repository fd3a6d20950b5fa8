"""User configuration (config.yaml) and lab session state (session.json).

Both live in `NSIGHTLAB_HOME` (default: the platform's app dir for "nsightlab").
The config is validated by pydantic; unknown keys are errors that name the file, the key
and the line.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shlex
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import typer
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from nsightlab import kubevalues, userfiles
from nsightlab.errors import ConfigError, NsightlabError, UsageError, validation_message
from nsightlab.models import Model

DEFAULT_PROTECTED = ("prd", "prod", "production")


class _Strict(Model):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ClusterAlias(_Strict):
    """An alias usable as `--context NAME`."""

    context: str
    namespace: str | None = None
    protected: bool = False


class LabConfig(_Strict):
    """The lab pod's settings; defaults are the tutorial's values."""

    pod_name: str = "nsight-lab-{user}"
    image: str | None = None
    instance_type: str = "g7e.8xlarge"
    node_selector: dict[str, str] = Field(default_factory=dict)
    cpu: str = "4"
    memory: str = "24Gi"
    gpus: int = Field(default=1, ge=0, le=16)
    deadline_seconds: int = Field(default=14400, gt=0)
    owner: str | None = None

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def _quantity(cls, value: object) -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 4, 500m, 24Gi)")
        # YAML reads `cpu: 4` as a number and `cpu: .inf` as a float infinity: both are
        # checked as the text Kubernetes would be sent
        return kubevalues.check_quantity(str(value))

    @field_validator("pod_name")
    @classmethod
    def _pod_name(cls, value: str) -> str:
        # `{user}` becomes a DNS label of 1 to 40 characters (see _dns_label), so the
        # template is checked with the longest: the name is valid whoever runs it
        problem = kubevalues.dns1123_subdomain_problem(value.replace("{user}", "u" * _USER_MAX))
        if problem:
            raise ValueError(
                f"{value!r} is not a pod name (a DNS-1123 subdomain once {{user}} is filled in): {problem}"
            )
        return value

    @field_validator("instance_type")
    @classmethod
    def _instance_type(cls, value: str) -> str:
        problem = kubevalues.label_value_problem(value)
        if problem:
            raise ValueError(f"{value!r} is not a label value: {problem}")
        return value

    @field_validator("node_selector")
    @classmethod
    def _node_selector(cls, value: dict[str, str]) -> dict[str, str]:
        for key, label in value.items():
            problem = kubevalues.label_key_problem(key)
            if problem:
                raise ValueError(f"{key!r} is not a label key: {problem}")
            problem = kubevalues.label_value_problem(label)
            if problem:
                raise ValueError(f"{label!r} (the value of {key!r}) is not a label value: {problem}")
        return value


_INSTANCE_TYPE = re.compile(r"^[a-z0-9][a-z0-9-]*\.[a-z0-9-]+$")


def check_price(instance_type: str, usd_per_hour: float) -> None:
    """A price entry: an instance type such as g7e.8xlarge, and a positive USD per hour."""
    if not _INSTANCE_TYPE.match(instance_type):
        raise ValueError(f"{instance_type!r} is not an instance type (e.g. g7e.8xlarge)")
    if not (usd_per_hour > 0 and math.isfinite(usd_per_hour)):
        raise ValueError(
            f"the price of {instance_type} must be a positive number of USD per hour, got {usd_per_hour!r}"
        )


class ModelNeeds(_Strict):
    """What one deployed model needs on each GPU, for `nsightlab pack` when its engine's
    log does not say (`models:` in config.yaml, under the workload's name). GiB per GPU."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    weights_gib: float | None = Field(default=None, gt=0, le=1024)
    activation_gib: float | None = Field(default=None, ge=0, le=1024)
    graphs_gib: float | None = Field(default=None, ge=0, le=1024)
    other_gib: float | None = Field(default=None, ge=0, le=1024)  # outside torch: CUDA context, NCCL
    layers: int | None = Field(default=None, ge=1, le=100_000)
    kv_heads: int | None = Field(default=None, ge=1, le=100_000)
    head_dim: int | None = Field(default=None, ge=1, le=100_000)
    kv_dtype: Literal["float32", "float16", "bfloat16", "fp8", "float8", "int8"] = "bfloat16"
    kv_bytes_per_token: float | None = Field(default=None, gt=0, le=1 << 30)
    target_concurrency: int | None = Field(default=None, ge=1, le=1_000_000)
    max_len: int | None = Field(default=None, ge=1, le=100_000_000)
    step_ms: float | None = Field(default=None, gt=0, le=3_600_000)


class Config(_Strict):
    """The whole config file."""

    protected_contexts: list[str] = Field(default_factory=list)
    clusters: dict[str, ClusterAlias] = Field(default_factory=dict)
    lab: LabConfig = Field(default_factory=LabConfig)
    # USD per hour of each instance type, for `fleet sweep --weights-gb` (cost per million tokens)
    prices: dict[str, float] = Field(default_factory=dict)
    # what each deployed model needs per GPU, for `pack` (by workload name)
    models: dict[str, ModelNeeds] = Field(default_factory=dict)

    @field_validator("protected_contexts")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        # a pattern is compared as it reads (see cluster/safety.py): one that does not read
        # as it is written (a bidi override, a zero-width character) protects nothing for sure
        for pattern in value:
            hidden = kubevalues.hidden_characters(pattern)
            if hidden:
                raise ValueError(
                    f"{pattern!r} holds characters that do not show or reorder what shows "
                    f"({', '.join(dict.fromkeys(kubevalues.described(ch) for ch in hidden))}): write it in plain text"
                )
        return value

    @field_validator("prices")
    @classmethod
    def _prices(cls, value: dict[str, float]) -> dict[str, float]:
        for instance_type, usd_per_hour in value.items():
            check_price(instance_type, usd_per_hour)
        return value

    def all_protected_patterns(self) -> list[str]:
        """The default tokens plus the user's patterns (the defaults always apply), each once,
        in order. Linear: a `p not in list` test per pattern made 20,000 patterns take seconds."""
        return list(dict.fromkeys([*DEFAULT_PROTECTED, *self.protected_contexts]))

    def owner(self) -> str:
        return self.lab.owner or current_user()

    def pod_name(self) -> str:
        return self.lab.pod_name.replace("{user}", _dns_label(self.owner()))


def current_user() -> str:
    for var in ("USER", "LOGNAME", "USERNAME"):
        value = os.environ.get(var)
        if value:
            return value
    try:
        import pwd  # POSIX only: where it is missing, the fallback below answers

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return "user"


_USER_MAX = 40  # characters of the owner's name in a pod name


def _dns_label(text: str) -> str:
    """Lowercase ASCII alphanumerics and '-', as pod names and label values need."""
    cleaned = "".join(c if c.isascii() and c.isalnum() else "-" for c in text.lower()).strip("-")
    return cleaned[:_USER_MAX].strip("-") or "user"


def home() -> Path:
    """`NSIGHTLAB_HOME`, else the platform's application directory."""
    env = os.environ.get("NSIGHTLAB_HOME")
    if env:
        return Path(env).expanduser()

    return Path(typer.get_app_dir("nsightlab"))


def ensure_home() -> Path:
    """NSIGHTLAB_HOME as a folder nsightlab can write in (made when missing), or a
    UsageError (exit 2) naming it. Commands that will record something there (the lab
    session, a run) check it before they start."""
    path = home()
    reason: str | None = None
    if path.exists() and not path.is_dir():
        reason = "it is a file, not a folder"
    else:
        try:
            path.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".nsightlab-", suffix=".probe", dir=path)
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            reason = e.strerror or str(e)
    if reason is not None:
        raise UsageError(
            f"cannot write in {path} (NSIGHTLAB_HOME): {reason}",
            hint="Point NSIGHTLAB_HOME at a folder you can write in.",
        )
    return path


def default_config_path() -> Path:
    return home() / "config.yaml"


class LoadedConfig(Model):
    """The effective config and where each leaf came from ("default" or "file:line")."""

    config: Config
    path: Path
    exists: bool
    sources: dict[str, str]


def load_config(path: Path | None = None) -> LoadedConfig:
    """Read and validate config.yaml; a missing file means all defaults.

    An explicit `path` that does not exist is an error (the user asked for it).
    """
    explicit = path is not None
    cfg_path = Path(path).expanduser() if path is not None else default_config_path()
    if not cfg_path.exists():
        if explicit:
            raise ConfigError(
                f"config file {cfg_path} does not exist",
                hint=f"Create one with `nsightlab --config {shlex.quote(str(cfg_path))} init`, or drop --config.",
            )
        config = Config()
        return LoadedConfig(config=config, path=cfg_path, exists=False, sources=_sources(config, {}, cfg_path))
    text = userfiles.read_text(cfg_path, what="config file", error=ConfigError, limit=userfiles.CONFIG_MAX_BYTES)
    check_yaml_aliases(
        text,
        path=cfg_path,
        what="config file",
        error=ConfigError,
        hint="Write the repeated values out in full.",
    )
    data, lines = _parse_yaml(text, cfg_path)
    try:
        config = Config.model_validate(data)
    except ValidationError as e:
        raise _config_error(e, cfg_path, lines) from None
    return LoadedConfig(config=config, path=cfg_path, exists=True, sources=_sources(config, lines, cfg_path))


def check_yaml_aliases(
    text: str, *, path: Path, what: str, error: type[NsightlabError], hint: str, limit: int = userfiles.MAX_YAML_ALIASES
) -> None:
    """`error` when the YAML in `text` holds more than `limit` aliases, counted on the
    parser's events (an alias is one event, however much it would expand to), before any
    loader sees the document. A document that does not parse is left to the loader, which
    says where."""
    if "&" not in text:
        return  # no anchor, nothing an alias can name (an alias to none is the loader's error)
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    aliases = 0
    try:
        while loader.check_event():
            if isinstance(loader.get_event(), yaml.AliasEvent):
                aliases += 1
                if aliases > limit:
                    raise error(
                        f"{what} {path} holds more than {limit} YAML aliases (`*name`), more than a {what} has",
                        hint=hint,
                    )
    except yaml.YAMLError:
        return
    finally:
        loader.dispose()


def read_text_file(
    path: Path, *, what: str, error: type[NsightlabError], limit: int = userfiles.USER_TEXT_MAX_BYTES
) -> str:
    """The text of a file the user named (UTF-8, a BOM allowed), read as `userfiles.read_text`
    reads it: a regular file only, at most `limit` bytes; `error` (with its exit code)
    naming the file otherwise."""
    return userfiles.read_text(path, what=what, error=error, limit=limit)


def _compose(text: str) -> tuple[Any, Any]:
    """The YAML's node tree (for the lines of its keys) and its data, from one parse.

    libyaml's parser when PyYAML has it: composing twice in pure Python (once for the
    lines, once for the data) made 20,000 protected patterns take seconds.
    """

    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return node, data


def _parse_yaml(text: str, path: Path) -> tuple[dict[str, Any], dict[tuple[str, ...], int]]:
    """Parse YAML and remember the line of every mapping key (1-based)."""

    try:
        node, data = _compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        config_opt = "" if path == default_config_path() else f"--config {shlex.quote(str(path))} "
        raise ConfigError(
            f"{where}: not valid YAML ({problem})",
            hint=f"Fix the file or re-create it with `nsightlab {config_opt}init --force`.",
        ) from None
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: the config must be a mapping of keys to values")
    lines: dict[tuple[str, ...], int] = {}
    seen: set[int] = set()

    def walk(n: Any, prefix: tuple[str, ...]) -> None:
        if isinstance(n, yaml.MappingNode) and id(n) not in seen:
            seen.add(id(n))  # an alias shares its anchor's node, and may be inside it
            for key_node, value_node in n.value:
                key = (*prefix, str(key_node.value))
                lines[key] = key_node.start_mark.line + 1
                walk(value_node, key)

    walk(node, ())
    return data, lines


def _config_error(e: ValidationError, path: Path, lines: dict[tuple[str, ...], int]) -> ConfigError:
    err = e.errors()[0]
    loc = tuple(str(p) for p in err["loc"])
    key = ".".join(loc) or "(top level)"
    line = None
    for n in range(len(loc), 0, -1):
        if loc[:n] in lines:
            line = lines[loc[:n]]
            break
    where = f"{path}:{line}" if line else str(path)
    if err["type"] == "extra_forbidden":
        msg = f"{where}: unknown key '{key}'"
        hint = "Check the spelling; `nsightlab init` writes a commented example of every key."
    else:
        msg = f"{where}: bad value for '{key}': {validation_message(err)}"
        hint = "See `nsightlab config` for the expected shape."
    return ConfigError(msg, hint=hint)


def _sources(config: Config, lines: dict[tuple[str, ...], int], path: Path) -> dict[str, str]:
    out: dict[str, str] = {}

    def walk(value: Any, prefix: tuple[str, ...]) -> None:
        if isinstance(value, BaseModel):
            for name in type(value).model_fields:
                walk(getattr(value, name), (*prefix, name))
            return
        if isinstance(value, dict) and value and prefix and prefix[0] == "clusters" and len(prefix) == 1:
            for k, v in value.items():
                walk(v, (*prefix, k))
            return
        key = ".".join(prefix)
        line = lines.get(prefix)
        out[key] = f"{path}:{line}" if line else "default"

    walk(config, ())
    return out


# ---------------------------------------------------------------- session state


class Session(Model):
    """The lab pod created by `create`, and the context it lives in."""

    model_config = ConfigDict(extra="ignore")

    context: str
    alias: str | None = None
    kubeconfig: str | None = None
    server: str
    namespace: str
    pod: str
    uid: str
    node: str | None = None
    instance_type: str | None = None
    gpu_product: str | None = None
    owner: str
    created: datetime
    deadline: datetime | None = None


def session_path() -> Path:
    return home() / "session.json"


def load_session() -> Session | None:
    path = session_path()
    if not path.exists():
        return None
    try:
        return Session.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError):
        # A damaged session file must not block commands that do not need it.
        return None


def save_session(session: Session) -> Path:
    path = session_path()
    atomic_write_text(path, session.model_dump_json(indent=2) + "\n")
    with contextlib.suppress(FileNotFoundError):
        ended_session_path().unlink()  # a live session makes the record of the last one moot
    return path


def clear_session() -> None:
    with contextlib.suppress(FileNotFoundError):
        session_path().unlink()


class EndedSession(Model):
    """What is left of a lab session once its pod is gone: which pod, when, and where a
    new one would go. A file of its own (not session.json), so that nothing, this version
    or an older one, takes it for a live session."""

    model_config = ConfigDict(extra="ignore")

    context: str
    alias: str | None = None
    namespace: str
    pod: str
    ended: datetime
    how: Literal["deleted", "gone"] = "deleted"  # deleted by cleanup, or found gone


def ended_session_path() -> Path:
    return home() / "session-ended.json"


def end_session(session: Session, *, how: Literal["deleted", "gone"]) -> EndedSession:
    """Replace the live session by the record of its end (now)."""
    ended = EndedSession(
        context=session.context,
        alias=session.alias,
        namespace=session.namespace,
        pod=session.pod,
        ended=datetime.now(timezone.utc),
        how=how,
    )
    atomic_write_text(ended_session_path(), ended.model_dump_json(indent=2) + "\n")
    clear_session()
    return ended


def load_ended_session() -> EndedSession | None:
    """The record of the last lab session that ended, if any (a damaged one is ignored)."""
    path = ended_session_path()
    try:
        return EndedSession.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError):
        return None


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder, then rename."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
