"""The shape of a JSON document, taken from the pydantic model that makes it, and the
compact notation the docs write shapes in: written from a model, read back from a page.

The notation: an object lists its keys, `{"name", "instances"}`; a key whose value has a
shape of its own shows it, `"nested": {"a", "b"}`, `"items": [{"x"}]`, `"notes": []`,
`"facts": {}`; a field that takes a few fixed values shows them, `"kind": "gpu-run"`,
`"profiler": "nsys|torch|none"`; `| null` where an object or list may be null, and
`{...} | {...}` between the kinds of object a list may hold. A value the docs write as an
example (`"dtype": "float16"`, `0`, `false`) stands for the field's value; `# words` to the
end of a line is a comment.

The shape comes from the model's JSON schema in serialization mode, field names as
`--json` prints them (`model_dump_json`: no aliases, excluded fields left out).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, replace
from typing import Any

WIDTH = 110  # characters a line of a shape may take (the docs' code blocks)


# ---------------------------------------------------------------------------- shapes from models


@dataclass(frozen=True)
class Shape:
    """What a JSON value is: `object` (a model: its fields, in order), `list` (of `item`),
    `map` (free-form keys, values of `item` or anything), `scalar` (a string, number or
    boolean; `values` when only a few are allowed), `union` (one of `options`), `any`."""

    kind: str
    title: str | None = None
    fields: tuple[tuple[str, Shape], ...] = ()
    item: Shape | None = None
    options: tuple[Shape, ...] = ()
    values: tuple[str, ...] = ()
    nullable: bool = False
    open: bool = False  # an object that keeps keys beyond its fields (a lab script's record)

    def sub(self, name: str) -> Shape | None:
        return dict(self.fields).get(name)


def model_at(dotted: str) -> Any:
    """The class at a dotted path (`nsightlab.analysis.sweep_result.SweepResult`)."""
    module, _, name = dotted.rpartition(".")
    if not module:
        raise ImportError(f"{dotted!r} is not a dotted path to a model")
    found = getattr(importlib.import_module(module), name, None)
    if found is None:
        raise ImportError(f"{module} has no {name}")
    return found


def shape_of(model: Any) -> Shape:
    """The shape of the JSON `model_dump_json` writes for `model` (a pydantic model class)."""
    schema = model.model_json_schema(mode="serialization", by_alias=False)
    return _from_schema(schema, schema.get("$defs", {}), ())


def _from_schema(node: dict[str, Any], defs: dict[str, Any], seen: tuple[str, ...]) -> Shape:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in seen:  # a model inside itself: nothing in nsightlab does it yet
            raise ValueError(f"{name} holds itself; the notation has no way to write it")
        return _from_schema(defs[name], defs, (*seen, name))
    if len(node.get("allOf", ())) == 1:
        return _from_schema(node["allOf"][0], defs, seen)
    alternatives = node.get("anyOf") or node.get("oneOf")
    if alternatives:
        real = [a for a in alternatives if a.get("type") != "null"]
        nullable = len(real) < len(alternatives)
        shapes = [_from_schema(a, defs, seen) for a in real]
        if len(shapes) == 1:
            return _nullable(shapes[0], nullable)
        if all(s.kind in ("scalar", "any") for s in shapes):
            values = () if any(not s.values for s in shapes) else tuple(v for s in shapes for v in s.values)
            return Shape("scalar", values=values, nullable=nullable)
        return Shape("union", options=tuple(shapes), nullable=nullable)
    if "const" in node:
        return Shape("scalar", values=(_text(node["const"]),))
    if "enum" in node:
        return Shape("scalar", values=tuple(_text(v) for v in node["enum"]))
    kind = node.get("type")
    if kind == "object":
        if "properties" in node:
            fields = tuple((k, _from_schema(v, defs, seen)) for k, v in node["properties"].items())
            return Shape(
                "object", title=node.get("title"), fields=fields, open=node.get("additionalProperties") is True
            )
        extra = node.get("additionalProperties")
        item = _from_schema(extra, defs, seen) if isinstance(extra, dict) and extra else None
        return Shape("map", item=item)
    if kind == "array":
        items = node.get("items")
        return Shape("list", item=_from_schema(items, defs, seen) if items else Shape("any"))
    if kind is None:
        return Shape("any")
    return Shape("scalar")


def _nullable(shape: Shape, nullable: bool) -> Shape:
    return replace(shape, nullable=True) if nullable else shape


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# ---------------------------------------------------------------------------- writing the notation


@dataclass
class _Group:
    """Items between an opening and a closing text, laid out over as many lines as needed."""

    open: str
    items: list[_Group | str]
    close: str
    sep: str = ", "

    def flat(self) -> str:
        return self.open + self.sep.join(i if isinstance(i, str) else i.flat() for i in self.items) + self.close


def _value(shape: Shape, refs: frozenset[str], *, top: bool = False) -> _Group | str | None:
    """How a value of this shape is written after its key (None: the key alone says it)."""
    null = " | null" if shape.nullable else ""
    if shape.kind == "object" and shape.title in refs and not top:
        return f'"{shape.title}"{null}'
    if shape.kind == "object":
        return _Group("{", [_member(k, s, refs) for k, s in shape.fields], "}" + null)
    if shape.kind == "list":
        inner = _value(shape.item, refs) if shape.item is not None else None
        if inner is None:
            return "[]" + null
        if isinstance(inner, str):
            return f"[{inner}]{null}"
        return _Group("[" + inner.open, inner.items, inner.close + "]" + null, inner.sep)
    if shape.kind == "map":
        inner = _value(shape.item, refs) if shape.item is not None else None
        if isinstance(inner, _Group):
            return _Group('{"KEY": ' + inner.open, inner.items, inner.close + "}" + null, inner.sep)
        return "{}" + null
    if shape.kind == "union":
        if all(o.kind == "object" and o.title in refs for o in shape.options):
            return '"' + "|".join(str(o.title) for o in shape.options) + '"' + null
        options = [_value(o, refs) or '"..."' for o in shape.options]
        return _Group("", options, null, " | ")
    if shape.kind == "scalar" and shape.values:
        return '"' + "|".join(shape.values) + '"' + null
    return None


def _member(key: str, shape: Shape, refs: frozenset[str]) -> _Group | str:
    value = _value(shape, refs)
    if value is None:
        return f'"{key}"'
    if isinstance(value, str):
        return f'"{key}": {value}'
    return _Group(f'"{key}": {value.open}', value.items, value.close, value.sep)


def write_shape(shape: Shape, *, extra: tuple[str, ...] = (), refs: frozenset[str] = frozenset()) -> str:
    """The compact notation of a document of this shape (an object), with `extra` keys
    added at its end, wrapped to WIDTH. A model named in `refs` (one shown on its own
    elsewhere) is written by its name where it appears inside, `"runs": ["SweepResult"]`."""
    top = _value(shape, refs, top=True)
    assert isinstance(top, _Group), shape
    top.items += [f'"{k}"' for k in extra]
    printer = _Printer([""])
    printer.place(top, indent=0, trail="")
    return "\n".join(line.rstrip() for line in printer.lines)


@dataclass
class _Printer:
    lines: list[str]
    broke: bool = False  # the last item took several lines: the next starts a line of its own

    def _put(self, text: str) -> None:
        self.lines[-1] += text

    def _newline(self, indent: int) -> None:
        self.lines[-1] = self.lines[-1].rstrip()
        self.lines.append(" " * indent)

    def place(self, node: _Group | str, *, indent: int, trail: str, first: bool = True) -> None:
        """Put `node` (then `trail`: its separator, or the closings after it) on the current
        line if it fits, else on the next; a group too long for a line of its own starts a
        line (unless it is the first item of its group) and is filled."""
        text = node if isinstance(node, str) else node.flat()
        if self.broke and not first:
            self._newline(indent)
        self.broke = False
        line = self.lines[-1]
        if len(line) + len(text) + len(trail.rstrip()) <= WIDTH:
            self._put(text + trail)
            return
        fits_below = indent + len(text) + len(trail.rstrip()) <= WIDTH
        if isinstance(node, str) or fits_below:
            if line.strip() and (fits_below or not first):
                self._newline(indent)
            self._put(text + trail)
            return
        if not first and line.strip():
            self._newline(indent)
        self._put(node.open)
        line = self.lines[-1]
        inner = len(line) if len(line) <= 48 else indent + 2
        for i, item in enumerate(node.items):
            last = i == len(node.items) - 1
            self.place(item, indent=inner, trail=node.close + trail if last else node.sep, first=i == 0)
        if not node.items:
            self._put(node.close + trail)
        self.broke = True


# ---------------------------------------------------------------------------- reading the notation


@dataclass
class DocObject:
    members: list[tuple[str, Any]]  # (key, value or None for a key alone)
    elided: bool = False  # a bare `...` among the keys


@dataclass
class DocList:
    items: list[Any]


@dataclass
class DocAlternatives:
    options: list[Any]


@dataclass
class DocScalar:
    text: str  # a string's content, or a literal as written (0, false, null)
    string: bool


_TOKEN = re.compile(
    r'\s+|#[^\n]*|(?P<str>"(?:[^"\\]|\\.)*")|(?P<punct>[{}\[\],:|])|(?P<dots>\.\.\.)|(?P<word>[-+\w.]+)'
)


class NotationError(ValueError):
    pass


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            line = text.count("\n", 0, pos) + 1
            raise NotationError(f"line {line}: cannot read {text[pos : pos + 20]!r}")
        if m.lastgroup:
            out.append((m.lastgroup, m.group(m.lastgroup), text.count("\n", 0, pos) + 1))
        pos = m.end()
    return out


def read_documents(text: str) -> list[Any]:
    """The documents of a block, one after the other, as DocObject/DocList/... values."""
    toks = _tokens(text)
    docs: list[Any] = []
    pos = 0
    while pos < len(toks):
        value, pos = _read_value(toks, pos)
        docs.append(value)
    return docs


def _expect(toks: list[tuple[str, str, int]], pos: int, what: str) -> None:
    if pos >= len(toks):
        raise NotationError(f"ends where {what!r} is missing")
    if toks[pos][1] != what:
        raise NotationError(f"line {toks[pos][2]}: {what!r} expected, found {toks[pos][1]!r}")


def _read_value(toks: list[tuple[str, str, int]], pos: int) -> tuple[Any, int]:
    options = []
    while True:
        value, pos = _read_one(toks, pos)
        options.append(value)
        if pos < len(toks) and toks[pos][1] == "|":
            pos += 1
            continue
        break
    return (options[0] if len(options) == 1 else DocAlternatives(options)), pos


def _read_one(toks: list[tuple[str, str, int]], pos: int) -> tuple[Any, int]:
    if pos >= len(toks):
        raise NotationError("ends where a value is missing")
    kind, text, line = toks[pos]
    if text == "{":
        return _read_object(toks, pos + 1)
    if text == "[":
        items: list[Any] = []
        pos += 1
        while toks[pos][1] != "]" if pos < len(toks) else False:
            item, pos = _read_value(toks, pos)
            items.append(item)
            if pos < len(toks) and toks[pos][1] == ",":
                pos += 1
        _expect(toks, pos, "]")
        return DocList(items), pos + 1
    if kind == "str":
        return DocScalar(_unquote(text), True), pos + 1
    if kind in ("word", "dots"):
        return DocScalar(text, False), pos + 1
    raise NotationError(f"line {line}: a value expected, found {text!r}")


def _read_object(toks: list[tuple[str, str, int]], pos: int) -> tuple[DocObject, int]:
    obj = DocObject([])
    while pos < len(toks) and toks[pos][1] != "}":
        kind, text, line = toks[pos]
        if kind == "dots":
            obj.elided = True
            pos += 1
        elif kind == "str":
            key = _unquote(text)
            pos += 1
            value = None
            if pos < len(toks) and toks[pos][1] == ":":
                value, pos = _read_value(toks, pos + 1)
            obj.members.append((key, value))
        else:
            raise NotationError(f"line {line}: a key expected, found {text!r}")
        if pos < len(toks) and toks[pos][1] == ",":
            pos += 1
        elif pos < len(toks) and toks[pos][1] != "}":
            raise NotationError(f"line {toks[pos][2]}: ',' or '}}' expected, found {toks[pos][1]!r}")
    _expect(toks, pos, "}")
    return obj, pos + 1


def _unquote(token: str) -> str:
    return re.sub(r"\\(.)", r"\1", token[1:-1])


# ---------------------------------------------------------------------------- checking a shape written down


def problems(doc: Any, shape: Shape, where: str) -> list[str]:
    """What the written `doc` gets wrong about `shape`: keys missing, keys the model does not
    have, elided keys, structure where the field has none, values a fixed field cannot take."""
    options = doc.options if isinstance(doc, DocAlternatives) else [doc]
    written_null = any(isinstance(o, DocScalar) and o.text == "null" and not o.string for o in options)
    real = [o for o in options if not (isinstance(o, DocScalar) and o.text == "null" and not o.string)]
    out: list[str] = []
    if written_null and not shape.nullable and shape.kind in ("object", "list", "union"):
        out.append(f"{where}: written `| null`, but it is never null")
    if shape.kind == "union":
        return out + _union_problems(real, shape, where)
    for value in real:
        out += _one(value, shape, where)
    return out


def _one(value: Any, shape: Shape, where: str) -> list[str]:
    if shape.kind == "object":
        if isinstance(value, DocScalar) and value.string and value.text == shape.title:
            return []  # the model by its name: shown on its own in json.md
        if not isinstance(value, DocObject):
            return [f"{where}: an object ({shape.title}); write its keys, or its model's name"]
        return _object_problems(value, shape, where)
    if shape.kind == "list":
        if isinstance(value, DocObject):
            return [f"{where}: a list, written as an object"]
        if not isinstance(value, DocList):
            if shape.item is not None and shape.item.kind in ("object", "union"):
                return [f"{where}: a list of objects; write one, [{{...}}]"]
            return []
        if shape.item is not None and shape.item.kind in ("object", "union") and not value.items:
            return [f"{where}: a list of objects; write one, [{{...}}]"]
        return [p for item in value.items for p in problems(item, shape.item or Shape("any"), f"{where}[]")]
    if shape.kind == "scalar":
        if isinstance(value, DocObject | DocList):
            return [f"{where}: a plain value, written as an object or a list"]
        if shape.values and isinstance(value, DocScalar) and value.string:
            wrong = [v.strip() for v in value.text.split("|") if v.strip() not in shape.values]
            if wrong:
                return [f"{where}: {wrong[0]!r} is not one of {'|'.join(shape.values)}"]
        return []
    if shape.kind == "map":
        if isinstance(value, DocList):
            return [f"{where}: an object with keys of its own, written as a list"]
        if isinstance(value, DocObject) and shape.item is not None:
            return [p for _, v in value.members if v is not None for p in problems(v, shape.item, f"{where}{{}}")]
    return []


def _object_problems(obj: DocObject, shape: Shape, where: str) -> list[str]:
    out: list[str] = []
    if obj.elided or any(k == "..." for k, _ in obj.members):
        out.append(f"{where}: keys left out (...); write them all, or link to json.md")
    keys = [k for k, _ in obj.members if k != "..."]
    fields = [k for k, _ in shape.fields]
    doubled = sorted({k for k in keys if keys.count(k) > 1})
    if doubled:
        out.append(f"{where}: {', '.join(doubled)} written twice")
    missing = [k for k in fields if k not in keys]
    unknown = [k for k in keys if k not in fields]
    if missing:
        out.append(f"{where}: missing {', '.join(missing)} (fields of {shape.title})")
    if unknown:
        out.append(f"{where}: {', '.join(unknown)} not a field of {shape.title}")
    for key, value in obj.members:
        sub = shape.sub(key)
        if sub is None or key == "...":
            continue
        path = f"{where}.{key}" if where else key
        if value is None:
            if sub.kind in ("object", "union") or (
                sub.kind == "list" and sub.item is not None and sub.item.kind in ("object", "union")
            ):
                out.append(f"{path}: holds {'objects' if sub.kind == 'list' else 'an object'}; write its keys")
            continue
        out += problems(value, sub, path)
    return out


def _union_problems(values: list[Any], shape: Shape, where: str) -> list[str]:
    """A value that may be one of several kinds of object: each written object matches one
    kind, or the kinds are named ("SweepResult|DecodeResult"); every kind is written."""
    titles = [o.title or "?" for o in shape.options]
    named: set[str] = set()
    out: list[str] = []
    matched: set[int] = set()
    for value in values:
        if isinstance(value, DocScalar) and value.string:
            names = [n.strip() for n in value.text.split("|")]
            out += [f"{where}: {n!r} is not one of {'|'.join(titles)}" for n in names if n not in titles]
            named |= set(names)
        elif isinstance(value, DocObject):
            best = min(range(len(shape.options)), key=lambda i: len(problems(value, shape.options[i], where)))
            matched.add(best)
            out += problems(value, shape.options[best], where)
        else:
            out.append(f"{where}: one of {'|'.join(titles)}; write each, or name them")
    left = [t for i, t in enumerate(titles) if i not in matched and t not in named]
    if left and not out:
        out.append(f"{where}: may also be {', '.join(left)}; write each kind")
    return out


# ---------------------------------------------------------------------------- checking a document printed


def data_problems(data: Any, shape: Shape, where: str = "") -> list[str]:
    """What a JSON value a command printed has that `shape` does not say, or lacks: an
    object's keys are its fields exactly (an open one may hold more), recursively."""
    at = where or "the document"
    if data is None:
        return [] if shape.nullable or shape.kind in ("scalar", "any") else [f"{at}: null, but it is never null"]
    if shape.kind == "object":
        if not isinstance(data, dict):
            return [f"{at}: {type(data).__name__}, not an object ({shape.title})"]
        fields = [k for k, _ in shape.fields]
        out = [f"{at}: the shape lacks {k!r}" for k in data if k not in fields and not shape.open]
        out += [f"{at}: {k!r} of the shape is not printed" for k in fields if k not in data]
        for key, sub in shape.fields:
            if key in data:
                out += data_problems(data[key], sub, f"{where}.{key}" if where else key)
        return out
    if shape.kind == "list":
        if not isinstance(data, list):
            return [f"{at}: {type(data).__name__}, not a list"]
        item = shape.item or Shape("any")
        return [p for i, value in enumerate(data) for p in data_problems(value, item, f"{where}[{i}]")]
    if shape.kind == "map":
        if not isinstance(data, dict):
            return [f"{at}: {type(data).__name__}, not an object with keys of its own"]
        if shape.item is None:
            return []
        return [p for k, v in data.items() for p in data_problems(v, shape.item, f"{where}{{{k}}}")]
    if shape.kind == "union":
        tried = [data_problems(data, option, where) for option in shape.options]
        return [] if any(not t for t in tried) else min(tried, key=len)
    if shape.kind == "scalar":
        if isinstance(data, dict | list):
            return [f"{at}: {type(data).__name__}, where the shape has a plain value"]
        if shape.values and _text(data) not in shape.values:
            return [f"{at}: {data!r} is not one of {'|'.join(shape.values)}"]
    return []
