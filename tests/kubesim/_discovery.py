"""Discovery documents: /version, /api, /apis, group versions, aggregated discovery, OpenAPI."""

from __future__ import annotations

import hashlib
from typing import Any

from ._resources import RESOURCES, ResourceType, groups

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


def version_doc(git_version: str) -> dict[str, Any]:
    core = git_version.lstrip("v").split("-")[0].split("+")[0]
    major, minor = core.split(".")[:2]
    return {
        "major": major,
        "minor": minor,
        "gitVersion": git_version,
        "gitCommit": hashlib.sha1(git_version.encode()).hexdigest(),
        "gitTreeState": "clean",
        "buildDate": "2024-12-12T00:00:00Z",
        "goVersion": "go1.22.9",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_entry(group: str, version: str) -> dict[str, Any]:
    gv = {"groupVersion": f"{group}/{version}", "version": version}
    return {"name": group, "versions": [gv], "preferredVersion": gv}


def api_group_list() -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_entry(g, v) for g, v in groups()],
    }


def api_group(group: str) -> dict[str, Any] | None:
    for g, v in groups():
        if g == group:
            return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(g, v)}
    return None


def _hash(rt: ResourceType) -> str:
    return hashlib.sha256(rt.key.encode()).digest()[:8].hex()


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    """The APIResourceList of one group version (``/api/v1``, ``/apis/apps/v1``)."""
    rts = [rt for rt in RESOURCES if rt.group == group and rt.version == version]
    if not rts:
        return None
    resources: list[dict[str, Any]] = []
    for rt in rts:
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": list(rt.verbs),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        if "list" in rt.verbs:
            entry["storageVersionHash"] = _hash(rt)
        resources.append(entry)
        for sub in rt.subresources:
            sub_entry: dict[str, Any] = {
                "name": f"{rt.plural}/{sub.name}",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": sub.kind,
                "verbs": list(sub.verbs),
            }
            if sub.group != rt.group:
                sub_entry["group"] = sub.group
                sub_entry["version"] = sub.version
            resources.append(sub_entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    if rt.subresources:
        entry["subresources"] = [
            {
                "subresource": sub.name,
                "responseKind": {"group": sub.group, "version": sub.version, "kind": sub.kind},
                "verbs": list(sub.verbs),
            }
            for sub in rt.subresources
        ]
    return entry


def aggregated(core: bool, version: str = "v2") -> dict[str, Any]:
    """The aggregated discovery list served at /api (core) or /apis (groups)."""
    pairs = [("", "v1")] if core else groups()
    items = []
    for group, ver in pairs:
        rts = [rt for rt in RESOURCES if rt.group == group and rt.version == ver]
        items.append(
            {
                "metadata": {"name": group, "creationTimestamp": None},
                "versions": [
                    {
                        "version": ver,
                        "resources": [_aggregated_resource(rt) for rt in rts],
                        "freshness": "Current",
                    }
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }


def wants_aggregated(accept: str) -> str | None:
    """The aggregated discovery version asked for by an Accept header, if any."""
    for part in accept.split(","):
        part = part.replace(" ", "")
        if "as=APIGroupDiscoveryList" in part and "g=apidiscovery.k8s.io" in part:
            if "v=v2beta1" in part:
                return "v2beta1"
            if "v=v2" in part:
                return "v2"
    return None


def openapi_v3_root() -> dict[str, Any]:
    paths: dict[str, Any] = {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=SIM"}}
    for g, v in groups():
        paths[f"apis/{g}/{v}"] = {"serverRelativeURL": f"/openapi/v3/apis/{g}/{v}?hash=SIM"}
    return {"paths": paths}


def openapi_v3_group(group: str, version: str) -> dict[str, Any] | None:
    """A minimal OpenAPI v3 document for one group version.

    It declares the collection and item paths with the ``fieldValidation`` parameter (so
    kubectl validates on the server) and permissive schemas per kind carrying the
    ``x-kubernetes-group-version-kind`` extension.
    """
    rts = [rt for rt in RESOURCES if rt.group == group and rt.version == version]
    if not rts:
        return None
    field_validation = {
        "name": "fieldValidation",
        "in": "query",
        "schema": {"type": "string", "uniqueItems": True},
    }
    dry_run = {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    root = f"/apis/{group}/{version}" if group else f"/api/{version}"
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    prefix = "io.k8s.api." + (group.split(".")[0] if group else "core") + f".{version}."
    for rt in rts:
        gvk = [{"group": rt.group, "version": rt.version, "kind": rt.kind}]
        ref = {"$ref": f"#/components/schemas/{prefix}{rt.kind}"}
        write_op = {
            "parameters": [dry_run, field_validation],
            "requestBody": {"content": {"*/*": {"schema": ref}}},
            "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}},
            "x-kubernetes-group-version-kind": gvk[0],
        }
        coll = f"{root}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{root}/{rt.plural}"
        paths[coll] = {"post": dict(write_op, **{"x-kubernetes-action": "post"})}
        # The schemas here are too thin for kubectl to compute strategic merge patches from
        # them, so PATCH does not advertise that type: kubectl apply then builds the patch
        # from its own compiled-in types, as it does for any server without OpenAPI v2.
        patch_types = ("application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json")
        patch_op = dict(write_op, **{"x-kubernetes-action": "patch"})
        patch_op["requestBody"] = {"content": {t: {"schema": {"type": "object"}} for t in patch_types}}
        paths[coll + "/{name}"] = {
            "put": dict(write_op, **{"x-kubernetes-action": "put"}),
            "patch": patch_op,
        }
        schemas[prefix + rt.kind] = {
            "type": "object",
            "x-kubernetes-group-version-kind": gvk,
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.31.4"},
        "paths": paths,
        "components": {"schemas": schemas},
    }
