"""Label and field selectors, parsed the way the Kubernetes API server reads them.

Label selectors: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``,
``!k``, ``k>1``, ``k<1``; requirements joined by commas (AND). Field selectors: ``f=v``,
``f==v``, ``f!=v``, joined by commas, with backslash escapes in values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class SelectorError(ValueError):
    """A selector the API server would reject with 400 Bad Request."""


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "=":
            return present and value == self.values[0]
        if self.op == "in":
            return present and value in self.values
        if self.op == "!=":
            return not present or value != self.values[0]
        if self.op == "notin":
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("gt", "lt"):
            if not present or value is None:
                return False
            try:
                have, want = int(value), int(self.values[0])
            except ValueError:
                return False
            return have > want if self.op == "gt" else have < want
        raise AssertionError(self.op)


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_KEY_RE = re.compile(rf"^{_KEY}$")
_VALUE_RE = re.compile(rf"^{_VALUE}$")


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def _check_key(key: str) -> str:
    if not _KEY_RE.match(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise SelectorError(
            f'unable to parse requirement: <nil>: Invalid value: "{key}": name part must '
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
            "an alphanumeric character"
        )
    return key


def _check_value(value: str) -> str:
    if not _VALUE_RE.match(value) or len(value) > 63:
        raise SelectorError(
            f'unable to parse requirement: values[0][{value}]: Invalid value: "{value}": a valid '
            "label must be an empty string or consist of alphanumeric characters, '-', '_' or "
            "'.', and must start and end with an alphanumeric character"
        )
    return value


_SET_RE = re.compile(r"^\s*(?P<key>\S+)\s+(?P<op>in|notin)\s*\((?P<vals>[^()]*)\)\s*$")
_CMP_RE = re.compile(r"^\s*(?P<key>[^!=<>\s]+)\s*(?P<op>==|!=|=|>|<)\s*(?P<val>[^=!<>]*?)\s*$")


def parse_label_selector(text: str | None) -> list[LabelRequirement]:
    """Parse a label selector; raise :class:`SelectorError` with the server's wording."""
    if text is None or not text.strip():
        return []
    reqs: list[LabelRequirement] = []
    for raw in _split_top_level(text):
        part = raw.strip()
        if not part:
            raise SelectorError("found '', expected: identifier")
        m = _SET_RE.match(part)
        if m:
            vals = tuple(_check_value(v.strip()) for v in m["vals"].split(",") if v.strip())
            if not vals:
                raise SelectorError("unable to parse requirement: found ')', expected: identifier")
            reqs.append(LabelRequirement(_check_key(m["key"]), m["op"], vals))
            continue
        if part.startswith("!"):
            reqs.append(LabelRequirement(_check_key(part[1:].strip()), "!"))
            continue
        m = _CMP_RE.match(part)
        if m:
            op = {"==": "=", "=": "=", "!=": "!=", ">": "gt", "<": "lt"}[m["op"]]
            value = m["val"]
            if op in ("gt", "lt") and not value.lstrip("-").isdigit():
                raise SelectorError(
                    "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer"
                )
            reqs.append(LabelRequirement(_check_key(m["key"]), op, (_check_value(value),)))
            continue
        if re.match(r"^[^\s()=!<>,]+$", part):
            reqs.append(LabelRequirement(_check_key(part), "exists"))
            continue
        raise SelectorError(f"unable to parse requirement: found '{part}', expected: in, notin, =, ==, !=, gt, lt")
    return reqs


def labels_match(reqs: list[LabelRequirement], obj: Mapping[str, Any]) -> bool:
    if not reqs:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(req.matches(labels) for req in reqs)


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    negate: bool


def _unescape_split(text: str, sep: str) -> list[str]:
    out: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur))
    return out


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse_field_selector(text: str | None) -> list[FieldRequirement]:
    """Parse a field selector (``=``, ``==``, ``!=``, comma-AND)."""
    if text is None or not text.strip():
        return []
    reqs: list[FieldRequirement] = []
    for part in _unescape_split(text, ","):
        part = part.strip()
        if not part:
            continue
        m = re.match(r"^([^=!]+?)\s*(==|!=|=)(.*)$", part)
        if not m:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        reqs.append(FieldRequirement(m[1].strip(), _unescape(m[3].strip()), m[2] == "!="))
    return reqs


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string value of a selectable field (missing fields read as "")."""
    return _field_getter(path)(obj)


def _field_getter(path: str) -> Callable[[Mapping[str, Any]], str]:
    """A function reading one selectable field, with its path split once (selectors run
    over every object of a list)."""
    if path == "source":
        return lambda obj: str(((obj.get("source") or {}).get("component")) or "")
    if path == "status.successful":  # a Job's field label for status.succeeded
        return lambda obj: str(int(((obj.get("status") or {}).get("succeeded")) or 0))
    parts = tuple(path.split("."))
    missing = "false" if path in ("spec.unschedulable", "spec.hostNetwork") else ""

    def get(obj: Mapping[str, Any]) -> str:
        cur: Any = obj
        for part in parts:
            if not isinstance(cur, dict) and not isinstance(cur, Mapping):
                return ""
            cur = cur.get(part)
        if cur is None:
            return missing
        if type(cur) is str:
            return cur
        if isinstance(cur, bool):
            return "true" if cur else "false"
        if isinstance(cur, list):  # status.podIPs
            return ",".join(str(x.get("ip", x)) if isinstance(x, Mapping) else str(x) for x in cur)
        return str(cur)

    return get


def fields_match(reqs: list[FieldRequirement], obj: Mapping[str, Any]) -> bool:
    for req in reqs:
        equal = field_value(obj, req.field) == req.value
        if equal == req.negate:
            return False
    return True


def make_predicate(
    label_reqs: list[LabelRequirement], field_reqs: list[FieldRequirement]
) -> Callable[[Mapping[str, Any]], bool] | None:
    """One predicate over objects for both selectors, or None when both are empty."""
    if not label_reqs and not field_reqs:
        return None

    checks = [(_field_getter(req.field), req.value, req.negate) for req in field_reqs]

    def predicate(obj: Mapping[str, Any]) -> bool:
        for get, value, negate in checks:
            if (get(obj) == value) == negate:
                return False
        return labels_match(label_reqs, obj)

    return predicate
