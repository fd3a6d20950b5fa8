"""The three patch formats of the Kubernetes API: JSON merge, strategic merge, JSON patch.

Strategic merge is the simple, common subset: lists of objects listed in
:data:`MERGE_KEYS` merge item by item on their merge key; other lists are replaced;
``$patch: delete|replace`` directives, ``$deleteFromPrimitiveList/<field>`` and
``$setElementOrder/<field>`` (dropped: order is kept as stored) are understood.
"""

from __future__ import annotations

import copy
from typing import Any


class PatchError(ValueError):
    """A patch that cannot be applied (the server answers 422 Invalid or 400)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (returns a new value; inputs are not modified)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# Field name -> merge key of list items, for strategic merge patches.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "addresses": "type",
}
# Primitive lists that strategic merge treats as sets.
MERGE_SETS = frozenset({"finalizers"})


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Apply a strategic merge patch (the simple subset described in the module doc)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    deletes: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            deletes[key.split("/", 1)[1]] = list(value or [])
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in MERGE_KEYS:
            result[key] = _merge_list(result.get(key), value, MERGE_KEYS[key])
        elif isinstance(value, list) and key in MERGE_SETS:
            merged = list(result.get(key) or [])
            merged += [v for v in value if v not in merged]
            result[key] = merged
        elif isinstance(value, dict):
            merged_value = strategic_merge_patch(result.get(key), value)
            if merged_value is None:
                result.pop(key, None)
            else:
                result[key] = merged_value
        else:
            result[key] = copy.deepcopy(value)
    for key, values in deletes.items():
        if isinstance(result.get(key), list):
            result[key] = [v for v in result[key] if v not in values]
    return result


def _merge_list(current: Any, patch: list[Any], merge_key: str) -> list[Any]:
    if not all(isinstance(item, dict) for item in patch):
        return copy.deepcopy(patch)
    if any(item.get("$patch") == "replace" for item in patch):
        return [copy.deepcopy(i) for i in patch if i.get("$patch") != "replace"]
    items: list[Any] = list(current) if isinstance(current, list) else []
    for item in patch:
        key_value = item.get(merge_key)
        index = next(
            (i for i, old in enumerate(items) if isinstance(old, dict) and old.get(merge_key) == key_value),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                items.pop(index)
            continue
        if index is None:
            items.append(strategic_merge_patch({}, item))
        else:
            items[index] = strategic_merge_patch(items[index], item)
    return items


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer: {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], op: str, path: str) -> tuple[Any, str]:
    cur = doc
    for part in parts[:-1]:
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')
    return cur, parts[-1]


def _get(doc: Any, path: str, op: str) -> Any:
    cur = doc
    for part in _pointer(path):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')
    return cur


def _add(doc: Any, path: str, value: Any, op: str = "add") -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, last = _parent(doc, parts, op, path)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')
    else:
        raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')
    return doc


def _remove(doc: Any, path: str, op: str = "remove") -> Any:
    parts = _pointer(path)
    if not parts:
        raise PatchError("remove operation does not apply: cannot remove the whole document")
    parent, last = _parent(doc, parts, op, path)
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        parent.pop(int(last))
    else:
        raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 JSON patch (returns a new document)."""
    if not isinstance(operations, list):
        raise PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(target)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation:
            raise PatchError("Unexpected kind: missing op")
        op = operation["op"]
        path = operation.get("path", "")
        if op == "add":
            doc = _add(doc, path, copy.deepcopy(operation.get("value")))
        elif op == "remove":
            doc = _remove(doc, path)
        elif op == "replace":
            _get(doc, path, op)
            parts = _pointer(path)
            if not parts:
                doc = copy.deepcopy(operation.get("value"))
            else:
                parent, last = _parent(doc, parts, op, path)
                if isinstance(parent, list):
                    parent[int(last)] = copy.deepcopy(operation.get("value"))
                else:
                    parent[last] = copy.deepcopy(operation.get("value"))
        elif op == "move":
            value = _get(doc, operation["from"], op)
            doc = _remove(doc, operation["from"], op)
            doc = _add(doc, path, value, op)
        elif op == "copy":
            value = copy.deepcopy(_get(doc, operation["from"], op))
            doc = _add(doc, path, value, op)
        elif op == "test":
            if _get(doc, path, op) != operation.get("value"):
                raise PatchError(f"testing value {path} failed: test failed")
        else:
            raise PatchError(f"Unexpected kind: {op}")
    return doc
