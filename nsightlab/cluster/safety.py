"""Context resolution and the protected-context guard.

The one promise nsightlab makes above all: it never acts on a cluster by accident.
- The kubeconfig's current-context is never used.
- A context is named explicitly (`--context NAME|ALIAS`), or, for commands acting on an
  existing lab pod, taken from the lab session that `create` recorded.
- A protected context (name tokens prd/prod/production, a configured pattern, an alias
  flagged `protected: true`) is refused for every command that changes something,
  before any request is sent.
Every cluster command goes through `resolve_context()`; every change goes through
`confirm_change()`.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
import shlex
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING

from nsightlab.cluster import lookalike
from nsightlab.errors import ClusterError, Interrupted, SafetyError
from nsightlab.kubevalues import described, hidden_characters

if TYPE_CHECKING:
    from nsightlab.cluster.kubeconfig import Kubeconfig
    from nsightlab.env import Env
    from nsightlab.userconfig import Config, EndedSession, Session

_TOKEN_SPLIT = re.compile(r"[-_.:/@]+")
# Whitespace and Unicode separators (category Z*: spaces, the no-break space, U+2028/2029):
# what a person reads as a gap between words, or does not see at all at the end of a name.
# Python's \s is exactly that: every Z* character, and the whitespace controls (tab, line
# feed, U+0085...).
_GAPS = re.compile(r"\s+")
_GAP_READINGS = "-_.:/@ "  # a gap read as each separator (and as a plain space, for globs)
_GLOB_CHARS = frozenset("*?[")
_GLOB_START = re.compile(r"[*?\[]")


class Intent(Enum):
    READ = "read"  # explore, doctor, status: allowed on protected contexts
    CHANGE = "change"  # create, exec, copy, delete: refused there


@dataclass(frozen=True)
class ResolvedContext:
    """An explicit, checked choice of cluster: what every cluster command works on."""

    name: str  # the kubeconfig context
    alias: str | None
    namespace: str
    server: str | None
    kubeconfig: Kubeconfig
    protected_reason: str | None
    from_session: bool = False

    @property
    def label(self) -> str:
        return f"{self.alias} ({self.name})" if self.alias and self.alias != self.name else self.name

    @property
    def cli_args(self) -> str:
        """`--context X -n NS` as a command for this context is written in a hint, so that
        it runs as printed whatever the session or the defaults are by then."""

        return f"--context {shlex.quote(self.alias or self.name)} -n {shlex.quote(self.namespace)}"


def name_tokens(name: str) -> list[str]:
    return [t for t in _TOKEN_SPLIT.split(name.lower()) if t]


def unreadable_reason(*names: str | None) -> str | None:
    """Why a name (a context, an alias) cannot be trusted to read as it is written, or None.

    A right-to-left override (U+202E) before `dorp` shows `online-dorp` as "online-prod"; a zero-width
    character or a control hides inside a token. Such a name is refused for any change,
    whatever its tokens say.
    """
    for name in names:
        if not name:
            continue
        hidden = hidden_characters(name)
        if hidden:
            kinds = ", ".join(dict.fromkeys(described(ch) for ch in hidden))
            return f"'{name}' holds characters that do not show or reorder what shows ({kinds})"
    return None


def _gap_readings(form: str) -> tuple[str, ...]:
    """A name as a person may read it: gaps (whitespace, Unicode separators) removed, and
    read as each separator. Just the name when it has none."""
    if not _GAPS.search(form):
        return (form,)
    trimmed = form.strip()  # str.strip() removes what \s matches
    readings = [_GAPS.sub("", form)]
    readings += [_GAPS.sub(sep, trimmed) for sep in _GAP_READINGS]
    return tuple(dict.fromkeys(readings))


def _glob_bounds(pattern: str) -> tuple[str, str]:
    """The literal text every match of a glob starts and ends with: a test far cheaper than
    compiling the glob, so that thousands of patterns cost one pass (fnmatch compiles each
    to a regular expression)."""
    first = _GLOB_START.search(pattern)
    head_end = first.start() if first else len(pattern)
    tail_start = max(pattern.rfind("*"), pattern.rfind("?"), pattern.rfind("]")) + 1
    return pattern[:head_end], pattern[max(tail_start, head_end) :]


def protection_reason(
    name: str, patterns: list[str], *, alias: str | None = None, alias_flag: bool = False
) -> str | None:
    """Why a context is protected, or None.

    A pattern without glob characters matches a whole token of the name (split on
    -_.:/@); a pattern with `*`, `?` or `[` matches the whole name as a glob. Names and
    patterns are compared as a person reads them: in lower case; when any of them is not
    plain ASCII, also after NFKC and with look-alike characters folded (`ｐｒｄ`, a
    Cyrillic `prоd` and `PRD` all match `prd`); and with whitespace and Unicode separators
    (a trailing space, a no-break space, U+2028) both removed and read as a separator
    (`online-prd ` and `online prd` match `prd`). A name holding format or control
    characters (a bidi override, a zero-width space) is protected whatever it reads as
    (`unreadable_reason`). Linear in the number of patterns.
    """
    if alias_flag:
        return f"its alias '{alias}' sets protected: true"
    hidden = unreadable_reason(name, alias)
    if hidden:
        return hidden
    candidates = [c for c in (name, alias) if c]
    folding = lookalike.needs_folding(*candidates, *patterns)

    def forms(text: str) -> tuple[str, ...]:
        return lookalike.folds(text) if folding else (text.lower(),)

    compared = []
    for pattern in patterns:
        # a pattern's gaps are not part of it: `prod ` in the config file means `prod`
        pforms = tuple(_GAPS.sub("", f) for f in forms(pattern))
        bounds = [_glob_bounds(f) for f in pforms] if not _GLOB_CHARS.isdisjoint(pattern) else None
        compared.append((pattern, pforms, bounds))
    for candidate in candidates:
        for i, written in enumerate(forms(candidate)):
            for form in _gap_readings(written):
                tokens = set(name_tokens(form))
                for pattern, pforms, bounds in compared:
                    pform = pforms[i]
                    if bounds is None:
                        hit = pform in tokens
                    else:
                        head, tail = bounds[i]
                        hit = form.startswith(head) and form.endswith(tail) and fnmatch.fnmatchcase(form, pform)
                    if hit:
                        read_as = f" (read as '{form}')" if form != candidate.lower() else ""
                        what = (
                            f"contains the protected token '{pattern}'"
                            if bounds is None
                            else f"matches the protected pattern '{pattern}'"
                        )
                        return f"'{candidate}'{read_as} {what}"
    return None


def _did_you_mean(name: str, kubeconfig: Kubeconfig, config: Config) -> str:
    """'Did you mean X? ' for the context or alias closest to a mistyped name, else ''."""

    close = difflib.get_close_matches(name, [*kubeconfig.context_names(), *sorted(config.clusters)], n=1, cutoff=0.6)
    return f"Did you mean {close[0]}? " if close else ""


def _no_session(ended: EndedSession, kubeconfig: Kubeconfig, config: Config) -> SafetyError:
    """After cleanup: say that the lab session ended, when, and how to start the next."""

    when = ended.ended.astimezone()
    at = (
        when.strftime("%H:%M") if when.date() == datetime.now().astimezone().date() else when.strftime("%Y-%m-%d %H:%M")
    )
    how = "was deleted" if ended.how == "deleted" else "was found gone"
    name = ended.alias if ended.alias and ended.alias in config.clusters else ended.context
    entry = config.clusters.get(name)
    usual = (entry.namespace if entry else None) or kubeconfig.namespace(ended.context) or "default"
    command = f"nsightlab create --context {name}" + ("" if ended.namespace == usual else f" -n {ended.namespace}")
    return SafetyError(f"no lab session ({ended.pod} {how} at {at}); start one with {command}", ends_with_command=True)


def _unprotected_example(config: Config, kubeconfig: Kubeconfig) -> str:
    """' (e.g. --context NAME)' for an alias, else a context, that is not protected; '' when
    there is none (an alias such as `stg` may point at production: never suggested then)."""
    patterns = config.all_protected_patterns()
    for alias, entry in sorted(config.clusters.items()):
        if entry.context in kubeconfig.contexts and not protection_reason(
            entry.context, patterns, alias=alias, alias_flag=entry.protected
        ):
            return f" (e.g. --context {alias})"
    name = next((n for n in kubeconfig.context_names() if not protection_reason(n, patterns)), None)
    return f" (e.g. --context {name})" if name else ""


def _known_list(kubeconfig: Kubeconfig, config: Config) -> str:
    names = kubeconfig.context_names()
    aliases = sorted(config.clusters)
    parts = []
    if aliases:
        parts.append("aliases: " + ", ".join(aliases))
    parts.append("contexts: " + (", ".join(names) if names else "(none)"))
    return "; ".join(parts)


def resolve_context(
    requested: str | None,
    *,
    config: Config,
    kubeconfig: Kubeconfig,
    intent: Intent,
    session: Session | None = None,
    namespace: str | None = None,
    action: str = "change the cluster",
    ended: EndedSession | None = None,
) -> ResolvedContext:
    """Turn `--context` (or the lab session) into a ResolvedContext, or refuse.

    Raises SafetyError (exit 3) when no context is given (and no session may stand in:
    with `ended`, the record of the last one, it says that session ended), or when
    `intent` is CHANGE and the context is protected; ClusterError (exit 4) for a context
    the kubeconfig does not have. Sends no request.
    """
    from_session = False
    alias: str | None = None
    alias_ns: str | None = None
    alias_flag = False
    if requested is None:
        if session is None:
            if ended is not None:
                raise _no_session(ended, kubeconfig, config)
            raise SafetyError(
                "no context given; nsightlab never uses the kubeconfig's current-context",
                hint=f"Pass --context NAME ({_known_list(kubeconfig, config)}).",
            )
        requested = session.alias or session.context
        from_session = True
    if requested in config.clusters:
        entry = config.clusters[requested]
        alias, name, alias_ns, alias_flag = requested, entry.context, entry.namespace, entry.protected
    else:
        name = requested
    if name not in kubeconfig.contexts:
        where = f" (alias '{alias}')" if alias else ""
        raise ClusterError(
            f"unknown context '{name}'{where} in {kubeconfig.path_arg()}",
            hint=f"{_did_you_mean(name, kubeconfig, config)}Known {_known_list(kubeconfig, config)}.",
        )
    hidden = unreadable_reason(name, alias)
    if hidden and intent is Intent.CHANGE:
        raise SafetyError(
            f"refusing to {action} on context '{name}': {hidden}, so it may not read as it is written",
            hint="Rename the context to plain text (`kubectl config rename-context OLD NEW`) or use another one.",
        )
    reason = protection_reason(name, config.all_protected_patterns(), alias=alias, alias_flag=alias_flag)
    if reason and intent is Intent.CHANGE:
        raise SafetyError(
            f"refusing to {action} on protected context '{name}': {reason}",
            hint="nsightlab only changes non-production clusters; use a staging context"
            f"{_unprotected_example(config, kubeconfig)}.",
        )
    ns = namespace or alias_ns
    if ns is None and from_session and session is not None:
        ns = session.namespace
    ns = ns or kubeconfig.namespace(name) or "default"
    return ResolvedContext(
        name=name,
        alias=alias,
        namespace=ns,
        server=kubeconfig.server(name),
        kubeconfig=kubeconfig,
        protected_reason=reason,
        from_session=from_session,
    )


def announce(env: Env, ctx: ResolvedContext, what: str) -> None:
    """The one line naming context, API server and namespace, before any change."""
    via = " (from the lab session)" if ctx.from_session else ""
    # names from the kubeconfig and the command line: env.note shows them escaped, never obeyed
    env.note(f"{what}: context {ctx.label}{via}, server {ctx.server or '?'}, namespace {ctx.namespace}")


def confirm_change(env: Env, ctx: ResolvedContext, what: str, *, yes: bool) -> None:
    """Announce the change; on a TTY ask for confirmation unless --yes."""

    announce(env, ctx, what)
    if yes or not env.stdin_tty:
        return
    if not env.confirm("Proceed?"):
        raise Interrupted("cancelled; nothing was changed")
