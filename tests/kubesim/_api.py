"""The HTTP side of the emulated API server: a kmock emulator that answers like Kubernetes.

:class:`SimEmulator` is a :class:`kmock.KubernetesEmulator` whose objects live in kmock's
object store (see :mod:`._store`). kmock's own fallback reactions are replaced by the
handlers here (discovery, list with selectors and paging, watch with resourceVersion and
timeouts, create/get/update/patch/delete with server-filled metadata and real ``Status``
errors, tables, logs, access reviews). Reactions added with kmock's DSL still come first,
so a test can inject any response: ``sim.emulator['get /api/v1/nodes'] << 500``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import datetime as dt
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import kmock
import yaml
from aiohttp import web

from . import _discovery, _errors, _gc, _patch, _selectors, _tables
from ._defaults import fill_seed, prepare_new, rfc3339
from ._errors import ApiError
from ._rbac import Authorizer, groups_of
from ._resources import RESOURCES, VIRTUAL_PLURALS, ResourceType, by_path, for_object, lookup
from ._resources import groups as _resources_groups
from ._store import Entry, Store, Watcher, decode_continue, dumps, encode_continue, is_close

Obj = dict[str, Any]

# The request the current task serves (each request has its own task, hence its own context).
SERVING: contextvars.ContextVar[kmock.Request | None] = contextvars.ContextVar("kubesim_serving", default=None)


def _cert_user(raw: Any) -> str | None:
    """The CommonName of the client certificate the TLS handshake verified, if any."""
    transport = raw.transport
    cert = transport.get_extra_info("peercert") if transport is not None else None
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    token: str | None
    user: str | None
    time: float
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    body: bytes = field(default=b"", repr=False)
    status: int | None = None

    @property
    def verb(self) -> str:
        """A short description, e.g. ``GET /api/v1/nodes?limit=2``."""
        q = "&".join(f"{k}={v}" for k, v in self.query.items())
        return f"{self.method} {self.path}" + (f"?{q}" if q else "")


@dataclass(frozen=True)
class DenyRule:
    verb: str
    resource: str
    namespace: str | None
    subresource: str | None

    def matches(self, verb: str, resource: str, namespace: str | None, subresource: str | None) -> bool:
        return (
            self.verb in ("*", verb)
            and self.resource in ("*", resource)
            and (self.namespace is None or self.namespace == namespace)
            and self.subresource == subresource
        )


@dataclass
class Route:
    group: str | None = None
    version: str | None = None
    plural: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    watch_path: bool = False


def parse_route(path: str) -> Route | None:
    """Split an API path into its parts; None when it is not a resource path."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        route = Route(group="", version=parts[1])
        rest = parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        route = Route(group=parts[1], version=parts[2])
        rest = parts[3:]
    else:
        return None
    if rest and rest[0] == "watch":
        route.watch_path = True
        rest = rest[1:]
    if not rest:
        return route
    if rest[0] == "namespaces" and len(rest) >= 3:
        route.namespace = rest[1]
        rest = rest[2:]
    route.plural = rest[0]
    if len(rest) >= 2:
        route.name = rest[1]
    if len(rest) >= 3:
        route.subresource = "/".join(rest[2:])
    return route


def _bool_param(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true", "yes")


def output_mode(accept: str) -> str:
    """``table``, ``meta`` or ``json``, the first kind the Accept header lists."""
    for part in accept.split(","):
        p = part.replace(" ", "")
        if "as=Table" in p:
            return "table"
        if "as=PartialObjectMetadata" in p:
            return "meta"
        if p.startswith(("application/json", "*/*", "application/*")) and "as=" not in p:
            return "json"
    return "json"


def table_bytes(plural: str, entries: list[Entry], include: str, meta: Obj, headers: bool = True) -> bytes:
    """A Table as JSON, reusing each object's cached JSON for ``includeObject=Object``."""
    now = dt.datetime.now(dt.timezone.utc)
    rows = []
    for e in entries:
        row = dumps(_tables.table_row(plural, e.obj, "None", now))
        if include == "Object":
            row = row[:-1] + b',"object":' + e.raw + b"}"
        elif include != "None":
            row = row[:-1] + b',"object":' + dumps(_tables.partial_metadata(e.obj)) + b"}"
        rows.append(row)
    columns = dumps(_tables.columns_for(plural) if headers else [])
    return (
        b'{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":'
        + dumps(meta)
        + b',"columnDefinitions":'
        + columns
        + b',"rows":['
        + b",".join(rows)
        + b"]}"
    )


def _json_response(body: bytes | Obj, status: int = 200) -> web.Response:
    data = body if isinstance(body, bytes) else dumps(body)
    return web.Response(status=status, body=data, content_type="application/json")


def _with_warning(response: web.Response, warning: str | None) -> web.Response:
    """Add an API server warning (kubectl prints ``Warning: ...``)."""
    if warning:
        response.headers["Warning"] = f'299 - "{warning}"'
    return response


class SimEmulator(kmock.KubernetesEmulator):
    """kmock's Kubernetes emulator with the API server's behaviour filled in."""

    def __init__(
        self,
        *,
        git_version: str = "v1.31.4",
        tokens: dict[str, str] | None = None,
        require_auth: bool = True,
        pod_deletion_delay: float = 0.1,
    ) -> None:
        super().__init__()
        self.store = Store(self.objects)
        for rt_obj in RESOURCES:
            self.resources[rt_obj.kmock_resource] = kmock.ResourceInfo(
                namespaced=rt_obj.namespaced,
                kind=rt_obj.kind,
                singular=rt_obj.singular,
                verbs=set(rt_obj.verbs),
                shortnames=set(rt_obj.short_names),
                categories=set(rt_obj.categories),
                subresources={s.name for s in rt_obj.subresources},
            )
        self.git_version = git_version
        self.tokens: dict[str, str] = dict(tokens or {})
        self.require_auth = require_auth
        self.deny_rules: list[DenyRule] = []
        self.recorded: list[Recorded] = []
        self.server_address = "127.0.0.1:0"
        self.pod_deletion_delay = pod_deletion_delay
        self.logs: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
        self._log_waiters: list[asyncio.Event] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        # Phase-2 hooks: set by the exec server and the kubelet when present.
        self.exec_handler: Callable[[web.BaseRequest, Route, str, Obj], Any] | None = None
        self.pod_termination_hook: Callable[[Obj], None] | None = None
        # Set while a garbage collector runs: deletes then honour propagationPolicy (see _gc).
        self.garbage_collector: _gc.GarbageCollector | None = None
        self._timers: set[asyncio.TimerHandle] = set()
        self._bodies: dict[int, bytes] = {}
        self._records: dict[int, Recorded] = {}
        # RBAC (``_rbac``): None serves everyone (``deny_rules`` still apply); groups per user.
        self.rbac: Authorizer | None = None
        self.user_groups: dict[str, tuple[str, ...]] = {}
        # kmock request ids keep growing across clear_requests() (faults count "from now").
        self.request_seq = 0

    # kmock registers its own catch-all reactions here; the emulated API answers instead.
    def __attrs_post_init__(self) -> None:
        pass

    # ---- entry point ----------------------------------------------------------------------------
    async def __call__(self, raw_request: web.BaseRequest) -> web.StreamResponse:
        body = await raw_request.read()
        route = parse_route(raw_request.path)
        query = dict(raw_request.query)
        data: Any = None
        if body:
            try:
                data = json.loads(body)
            except ValueError:
                data = None
        action: kmock.action | None = None
        resource: kmock.resource | None = None
        if route is not None and route.plural is not None:
            resource = kmock.resource(route.group or "", route.version, route.plural)
            action = _guess_action(raw_request.method, route, query)
        self.request_seq += 1
        request = kmock.Request(
            id=self.request_seq,
            raw_request=raw_request,
            url=raw_request.url,
            method=raw_request.method,
            params=query,
            headers=dict(raw_request.headers),
            cookies=dict(raw_request.cookies),
            body=body,
            text=body.decode("utf-8", "replace"),
            data=data,
            action=action,
            resource=resource,
            namespace=route.namespace if route else None,
            name=route.name if route else None,
            subresource=route.subresource if route else None,
        )
        self._requests.append(request)
        SERVING.set(request)
        try:
            return await self._handle(request)
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception as e:
            if self._errors:
                self._errors[-1].append(e)
            return _errors.internal(repr(e)).response()

    async def _handle(self, request: kmock.Request) -> web.StreamResponse:
        raw = request._raw_request
        assert raw is not None
        auth = raw.headers.get("Authorization", "")
        token = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        cert_user = _cert_user(raw)
        rec = Recorded(
            method=raw.method,
            path=raw.path,
            query=dict(raw.query),
            token=token,
            user=self.tokens.get(token) if token else cert_user,
            time=time.time(),
            headers=dict(raw.headers),
            body=request.body,
        )
        self.recorded.append(rec)
        self._bodies[id(raw)] = request.body
        self._records[id(raw)] = rec
        try:
            user = self._authenticate(raw.path, token, cert_user)
            if self._payloads:
                try:
                    response = await kmock.RawHandler._handle(self, request)
                    # A reaction that dropped the connection before answering sent no status.
                    dropped = raw.transport is None or raw.transport.is_closing()
                    rec.status = None if dropped and not response.prepared else response.status
                    return response
                except NotImplementedError:
                    pass
            response = await self._dispatch(raw, request, user)
        except ApiError as e:
            response = e.response()
        finally:
            self._bodies.pop(id(raw), None)
            self._records.pop(id(raw), None)
        rec.status = response.status
        return response

    def _authenticate(self, path: str, token: str | None, cert_user: str | None = None) -> str:
        if path in ("/version", "/version/", "/healthz", "/livez", "/readyz"):
            return self.tokens.get(token or "", cert_user or "system:anonymous")
        if token is not None and token in self.tokens:
            return self.tokens[token]
        if token is None and cert_user is not None:
            return cert_user
        if self.require_auth:
            raise _errors.unauthorized()
        return "system:anonymous"

    async def _render_error(self, exc: Exception) -> web.StreamResponse:
        return _errors.internal(repr(exc)).response()

    # ---- routing ------------------------------------------------------------------------------
    async def _dispatch(self, raw: web.BaseRequest, request: kmock.Request, user: str) -> web.StreamResponse:
        if self.rbac is not None:
            self.rbac.check(raw.method, raw.path, raw.query, raw.headers, user)
        path = raw.path.rstrip("/") or "/"
        method = raw.method
        accept = raw.headers.get("Accept", "")
        if method == "GET":
            simple = self._serve_static(path, accept)
            if simple is not None:
                return simple
        route = parse_route(path)
        if route is None or route.version is None:
            return web.Response(status=404, text="404 page not found\n")
        if route.plural is None:
            return self._serve_group_version(route, accept)
        rt = by_path(route.group or "", route.version, route.plural)
        if rt is None:
            if route.group == "" or route.group in {g for g, _ in _resources_groups()}:
                raise _errors.resource_not_found()
            return web.Response(status=404, text="404 page not found\n")
        if route.namespace is not None and not rt.namespaced:
            raise _errors.resource_not_found()
        return await self._serve_resource(raw, route, rt, user, accept)

    def _serve_static(self, path: str, accept: str) -> web.StreamResponse | None:
        if path == "/version":
            return _json_response(_discovery.version_doc(self.git_version))
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok")
        if path == "/api":
            agg = _discovery.wants_aggregated(accept)
            if agg:
                return web.Response(
                    body=dumps(_discovery.aggregated(True, agg)),
                    headers={
                        "Content-Type": _discovery.AGGREGATED_V2 if agg == "v2" else _discovery.AGGREGATED_V2BETA1
                    },
                )
            return _json_response(_discovery.api_versions(self.server_address))
        if path == "/apis":
            agg = _discovery.wants_aggregated(accept)
            if agg:
                return web.Response(
                    body=dumps(_discovery.aggregated(False, agg)),
                    headers={
                        "Content-Type": _discovery.AGGREGATED_V2 if agg == "v2" else _discovery.AGGREGATED_V2BETA1
                    },
                )
            return _json_response(_discovery.api_group_list())
        if path == "/":
            paths = [
                "/api",
                "/api/v1",
                "/apis",
                "/healthz",
                "/livez",
                "/openapi/v2",
                "/openapi/v3",
                "/readyz",
                "/version",
            ]
            paths += [f"/apis/{g}" for g, _ in _resources_groups()] + [f"/apis/{g}/{v}" for g, v in _resources_groups()]
            return _json_response({"paths": sorted(paths)})
        if path == "/openapi/v3":
            return _json_response(_discovery.openapi_v3_root())
        if path.startswith("/openapi/v3/"):
            rest = path[len("/openapi/v3/") :].split("/")
            doc = None
            if len(rest) == 2 and rest[0] == "api":
                doc = _discovery.openapi_v3_group("", rest[1])
            elif len(rest) == 3 and rest[0] == "apis":
                doc = _discovery.openapi_v3_group(rest[1], rest[2])
            if doc is None:
                return web.Response(status=404, text="404 page not found\n")
            return _json_response(doc)
        if path == "/openapi/v2":
            return web.Response(status=404, text="404 page not found\n")
        if path.startswith("/apis/") and path.count("/") == 2:
            doc = _discovery.api_group(path.split("/")[2])
            if doc is None:
                return web.Response(status=404, text="404 page not found\n")
            return _json_response(doc)
        return None

    def _serve_group_version(self, route: Route, accept: str) -> web.StreamResponse:
        doc = _discovery.resource_list(route.group or "", route.version or "")
        if doc is None:
            return web.Response(status=404, text="404 page not found\n")
        return _json_response(doc)

    # ---- authorization ------------------------------------------------------------------------
    def is_denied(self, verb: str, rt_plural: str, namespace: str | None, subresource: str | None) -> bool:
        return any(rule.matches(verb, rt_plural, namespace, subresource) for rule in self.deny_rules)

    def _authorize(
        self, user: str, verb: str, rt: ResourceType, namespace: str | None, name: str | None, subresource: str | None
    ) -> None:
        if self.is_denied(verb, rt.plural, namespace, subresource):
            rbac_name = f"{rt.plural}/{subresource}" if subresource else rt.plural
            raise _errors.forbidden(user, verb, rbac_name, rt.group, namespace, name, rt.plural)

    # ---- resources ----------------------------------------------------------------------------
    async def _serve_resource(
        self, raw: web.BaseRequest, route: Route, rt: ResourceType, user: str, accept: str
    ) -> web.StreamResponse:
        method = raw.method
        q = raw.query
        ns = route.namespace
        name = route.name
        sub = route.subresource
        if sub is not None and rt.subresource(sub) is None:
            raise _errors.resource_not_found()
        if rt.plural in VIRTUAL_PLURALS:
            if method != "POST" or name is not None:
                raise _errors.method_not_allowed()
            self._authorize(user, "create", rt, None, None, None)
            return self._serve_review(raw, rt, user)
        if name is None:
            if method == "GET":
                watching = route.watch_path or _bool_param(q.get("watch"))
                verb = "watch" if watching else "list"
                self._authorize(user, verb, rt, ns, None, None)
                if watching:
                    return await self._api_watch(raw, rt, ns, None, accept)
                return self._api_list(raw, rt, ns, accept)
            if method == "POST":
                if rt.namespaced and ns is None:
                    raise _errors.method_not_allowed()
                self._authorize(user, "create", rt, ns, None, None)
                return self._api_create(raw, rt, ns)
            if method == "DELETE":
                self._authorize(user, "deletecollection", rt, ns, None, None)
                return self._api_delete_collection(raw, rt, ns)
            raise _errors.method_not_allowed()
        if rt.namespaced and ns is None:
            raise _errors.resource_not_found()
        if route.watch_path or (method == "GET" and sub is None and _bool_param(q.get("watch"))):
            self._authorize(user, "watch", rt, ns, name, None)
            return await self._api_watch(raw, rt, ns, name, accept)
        if sub in ("exec", "attach", "portforward"):
            self._authorize(user, "create", rt, ns, name, sub)
            return await self._serve_exec(raw, route, rt, sub)
        if sub == "log":
            self._authorize(user, "get", rt, ns, name, sub)
            return await self._serve_log(raw, rt, ns or "", name)
        if sub in ("binding", "eviction"):
            self._authorize(user, "create", rt, ns, name, sub)
            return self._serve_pod_action(raw, rt, ns or "", name, sub)
        if method == "GET":
            self._authorize(user, "get", rt, ns, name, sub)
            return self._api_get(rt, ns, name, accept)
        if method == "PUT":
            self._authorize(user, "update", rt, ns, name, sub)
            return self._api_update(raw, rt, ns, name, sub)
        if method == "PATCH":
            self._authorize(user, "patch", rt, ns, name, sub)
            return self._api_patch(raw, rt, ns, name, sub)
        if method == "DELETE" and sub is None:
            self._authorize(user, "delete", rt, ns, name, None)
            return self._api_delete(raw, rt, ns, name)
        raise _errors.method_not_allowed()

    # ---- reads --------------------------------------------------------------------------------
    def _predicate(self, rt: ResourceType, q: Any) -> tuple[Callable[[Any], bool] | None, bool]:
        try:
            labels = _selectors.parse_label_selector(q.get("labelSelector"))
            fields = _selectors.parse_field_selector(q.get("fieldSelector"))
        except _selectors.SelectorError as e:
            raise _errors.bad_request(str(e)) from None
        allowed = {"metadata.name", "metadata.namespace", *rt.field_labels}
        for req in fields:
            if req.field not in allowed:
                raise _errors.bad_request(f"field label not supported: {req.field}")
        return _selectors.make_predicate(labels, fields), bool(labels or fields)

    def _api_list(self, raw: web.BaseRequest, rt: ResourceType, ns: str | None, accept: str) -> web.StreamResponse:
        q = raw.query
        predicate, filtered = self._predicate(rt, q)
        limit_s = q.get("limit")
        try:
            limit = int(limit_s) if limit_s else 0
        except ValueError:
            raise _errors.bad_request(f'invalid limit: "{limit_s}"') from None
        token = q.get("continue")
        store = self.store
        if token:
            try:
                doc = decode_continue(token)
                sid, offset, list_rv = int(doc["snap"]), int(doc["off"]), int(doc["rv"])
            except (ValueError, KeyError, TypeError):
                raise _errors.bad_request(
                    "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
                ) from None
            snap = store.snapshot(sid)
            if snap is None:
                raise _errors.expired(
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter, or use the continue "
                    "token in this response to retrieve the remainder of the results. Continuing with "
                    "the provided token results in an inconsistent list - objects that were created, "
                    "modified, or deleted between the time the first chunk was returned and now may "
                    "show up in the list."
                )
            items = snap.items
        else:
            items = store.select(rt, ns, predicate)
            list_rv = store.rv
            offset = 0
            sid = 0
        page = items[offset:]
        meta: Obj = {"resourceVersion": str(list_rv)}
        if limit and len(page) > limit:
            page = page[:limit]
            if not token:
                sid = store.save_snapshot(list_rv, items)
            nxt = offset + limit
            last = page[-1].obj["metadata"]
            meta["continue"] = encode_continue(list_rv, f"{last.get('namespace', '')}/{last['name']}", sid, nxt)
            if not filtered:
                meta["remainingItemCount"] = len(items) - nxt
        mode = output_mode(accept)
        if mode == "table":
            include = q.get("includeObject", "Metadata")
            return _json_response(table_bytes(rt.plural, page, include, meta))
        if mode == "meta":
            return _json_response(
                {
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": meta,
                    "items": [_tables.partial_metadata(e.obj) for e in page],
                }
            )
        head = (
            b'{"kind":"'
            + rt.list_kind.encode()
            + b'","apiVersion":"'
            + rt.api_version.encode()
            + b'","metadata":'
            + dumps(meta)
            + b',"items":['
        )
        body = head + b",".join(e.raw for e in page) + b"]}"
        return web.Response(body=body, content_type="application/json")

    def _render_one(
        self, rt: ResourceType, entry_or_obj: Entry | Obj, accept: str, status: int = 200, include: str = "Metadata"
    ) -> web.Response:
        obj = entry_or_obj.obj if isinstance(entry_or_obj, Entry) else entry_or_obj
        mode = output_mode(accept)
        if mode == "table":
            rv = (obj.get("metadata") or {}).get("resourceVersion", "")
            return _json_response(_tables.table(rt.plural, [obj], include, {"resourceVersion": rv}), status)
        if mode == "meta":
            return _json_response(_tables.partial_metadata(obj), status)
        if isinstance(entry_or_obj, Entry):
            return _json_response(entry_or_obj.raw, status)
        return _json_response(obj, status)

    def _get_entry(self, rt: ResourceType, ns: str | None, name: str) -> Entry:
        entry = self.store.get(rt, ns, name)
        if entry is None:
            raise _errors.not_found(rt, name)
        return entry

    def _api_get(self, rt: ResourceType, ns: str | None, name: str, accept: str) -> web.Response:
        return self._render_one(rt, self._get_entry(rt, ns, name), accept)

    # ---- watch --------------------------------------------------------------------------------
    async def _api_watch(
        self, raw: web.BaseRequest, rt: ResourceType, ns: str | None, name: str | None, accept: str
    ) -> web.StreamResponse:
        q = raw.query
        predicate, _ = self._predicate(rt, q)
        if name is not None:
            base = predicate

            def predicate(obj: Any, _base: Any = base) -> bool:
                return bool(obj["metadata"].get("name") == name and (_base is None or _base(obj)))

        timeout_s = q.get("timeoutSeconds")
        try:
            timeout = float(timeout_s) if timeout_s else None
        except ValueError:
            raise _errors.bad_request(f'invalid timeoutSeconds: "{timeout_s}"') from None
        rv_s = q.get("resourceVersion", "")
        send_initial = q.get("sendInitialEvents")
        table = output_mode(accept) == "table"
        include = q.get("includeObject", "Metadata")
        store = self.store
        watcher = Watcher(rt, ns if rt.namespaced else None, predicate)
        initial: list[tuple[str, Any]] = []
        error: ApiError | None = None
        if rv_s in ("", "0") or _bool_param(send_initial):
            for entry in store.select(rt, watcher.namespace, watcher.predicate):
                initial.append(("ADDED", entry))
        else:
            try:
                since = int(rv_s)
            except ValueError:
                raise _errors.bad_request(
                    f'invalid resource version: strconv.ParseUint: parsing "{rv_s}": invalid syntax'
                ) from None
            if since < store.log_floor:
                error = _errors.expired(f"too old resource version: {since} ({store.log_floor})")
            else:
                initial.extend(store.replay(watcher, since))
        if error is None:
            store.add_watcher(watcher)
        response = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "application/json",
                "Cache-Control": "no-cache, private",
            },
        )
        response.enable_chunked_encoding()
        first = True
        try:
            await response.prepare(raw)
            if error is not None:
                await response.write(b'{"type":"ERROR","object":' + dumps(error.status()) + b"}\n")
                return response
            deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout

            async def emit(etype: str, item: Any) -> None:
                nonlocal first
                if table:
                    obj = item.obj if isinstance(item, Entry) else item.new
                    rv = (obj.get("metadata") or {}).get("resourceVersion", "")
                    tab = _tables.table(rt.plural, [obj], include, {"resourceVersion": rv}, headers=first)
                    line = b'{"type":"' + etype.encode() + b'","object":' + dumps(tab) + b"}\n"
                else:
                    line = b'{"type":"' + etype.encode() + b'","object":' + item.raw + b"}\n"
                first = False
                await response.write(line)

            for etype, item in initial:
                await emit(etype, item)
            if _bool_param(send_initial):
                bookmark = {
                    "kind": rt.kind,
                    "apiVersion": rt.api_version,
                    "metadata": {
                        "resourceVersion": str(store.rv),
                        "annotations": {"k8s.io/initial-events-end": "true"},
                    },
                }
                await response.write(b'{"type":"BOOKMARK","object":' + dumps(bookmark) + b"}\n")
            while True:
                if deadline is None:
                    item = await watcher.queue.get()
                else:
                    remaining = deadline - asyncio.get_running_loop().time()
                    if remaining <= 0:
                        break
                    try:
                        item = await asyncio.wait_for(watcher.queue.get(), remaining)
                    except asyncio.TimeoutError:
                        break
                if is_close(item):
                    break
                etype, event = item
                await emit(etype, event)
            await response.write_eof()
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            store.drop_watcher(watcher)
        return response

    # ---- writes ---------------------------------------------------------------------------------
    def _body(self, raw: web.BaseRequest, body: bytes) -> Any:
        ctype = raw.headers.get("Content-Type", "application/json").split(";")[0].strip()
        if not body:
            return None
        try:
            if "yaml" in ctype:
                return yaml.safe_load(body)
            return json.loads(body)
        except (ValueError, yaml.YAMLError) as e:
            raise _errors.bad_request(f"the object provided is unrecognized: {e}") from None

    async def _read_body(self, raw: web.BaseRequest) -> Any:
        return self._body(raw, await raw.read())

    def _dry_run(self, raw: web.BaseRequest, options: Obj | None = None) -> bool:
        values = raw.query.getall("dryRun", [])
        if options and options.get("dryRun"):
            values = [*values, *options["dryRun"]]
        for v in values:
            if v != "All":
                raise _errors.bad_request(f'Invalid value: "{v}": supported values: "All"')
        return bool(values)

    def _check_namespace(self, rt: ResourceType, ns: str | None, name: str) -> None:
        if not rt.namespaced or ns is None:
            return
        entry = self.store.get(_NAMESPACES, None, ns)
        if entry is None:
            raise _errors.namespace_not_found(ns)
        if (entry.obj.get("status") or {}).get("phase") == "Terminating":
            raise ApiError(
                403,
                "Forbidden",
                f'{rt.group_resource} "{name}" is forbidden: unable to create new content in namespace {ns} '
                "because it is being terminated",
                {
                    "name": name,
                    "kind": rt.plural,
                    "causes": [
                        {
                            "reason": "NamespaceTerminating",
                            "message": f"namespace {ns} is being terminated",
                            "field": "metadata.namespace",
                        }
                    ],
                },
            )

    def _api_create(self, raw: web.BaseRequest, rt: ResourceType, ns: str | None) -> web.StreamResponse:
        body = self._body(raw, self._raw_body(raw))
        if not isinstance(body, dict):
            raise _errors.bad_request("the body of the request was in an unknown format")
        kind = body.get("kind")
        if kind and kind != rt.kind:
            raise _errors.bad_request(
                f"the kind in the body ({kind}) does not match the kind of the resource ({rt.kind})"
            )
        dry = self._dry_run(raw)
        obj = prepare_new(rt, body, ns if rt.namespaced else None)
        name = obj["metadata"]["name"]
        self._check_namespace(rt, obj["metadata"].get("namespace"), name)
        if self.store.get(rt, obj["metadata"].get("namespace"), name) is not None:
            raise _errors.already_exists(rt, name)
        if dry:
            return _json_response(obj, 201)
        entry = self.store.put(rt, obj)
        return _json_response(entry.raw, 201)

    def record_for(self, raw: web.BaseRequest) -> Recorded | None:
        """The record of a request still being served (exec sets 101 when it upgrades)."""
        return self._records.get(id(raw))

    def _raw_body(self, raw: web.BaseRequest) -> bytes:
        return self._bodies.get(id(raw), b"")

    def _merge_for_write(self, rt: ResourceType, old: Obj, new: Obj, sub: str | None) -> Obj:
        """Apply the status-subresource split and keep the fields clients cannot change."""
        has_status = rt.subresource("status") is not None
        if sub == "status":
            merged = copy.copy(old)
            merged["status"] = new.get("status", old.get("status"))
            meta = dict(old["metadata"])
            new_meta = new.get("metadata") or {}
            for k in ("labels", "annotations"):
                if k in new_meta:
                    meta[k] = new_meta[k]
            merged["metadata"] = meta
            return merged
        merged = dict(new)
        merged["apiVersion"] = rt.api_version
        merged["kind"] = rt.kind
        if has_status and "status" in old:
            merged["status"] = old["status"]
        elif has_status:
            merged.pop("status", None)
        meta = dict(new.get("metadata") or {})
        old_meta = old["metadata"]
        for k in (
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        if "generation" in old_meta and new.get("spec") != old.get("spec"):
            meta["generation"] = int(old_meta["generation"]) + 1
        merged["metadata"] = meta
        return merged

    def _finish_write(self, rt: ResourceType, old: Entry, merged: Obj, dry: bool) -> web.Response:
        def without_rv(obj: Obj) -> Obj:
            meta = dict(obj.get("metadata") or {})
            meta.pop("resourceVersion", None)
            return {**obj, "metadata": meta}

        if without_rv(merged) == without_rv(old.obj):
            return _json_response(old.raw)
        if dry:
            return _json_response(merged)
        meta = merged["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and rt.plural != "pods":
            last = self.store.remove(rt, meta.get("namespace"), meta["name"])
            return _json_response(last or merged)
        entry = self.store.put(rt, merged)
        return _json_response(entry.raw)

    def _api_update(
        self, raw: web.BaseRequest, rt: ResourceType, ns: str | None, name: str, sub: str | None
    ) -> web.Response:
        if sub not in (None, "status", "ephemeralcontainers", "finalize", "scale"):
            raise _errors.method_not_allowed()
        body = self._body(raw, self._raw_body(raw))
        if not isinstance(body, dict):
            raise _errors.bad_request("the body of the request was in an unknown format")
        meta = body.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise _errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        if rt.namespaced and meta.get("namespace") and meta["namespace"] != ns:
            raise _errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        old = self._get_entry(rt, ns, name)
        rv = meta.get("resourceVersion")
        if rv and rv != old.obj["metadata"].get("resourceVersion"):
            raise _errors.stale_update(rt, name)
        merged = self._merge_for_write(rt, old.obj, body, sub)
        return self._finish_write(rt, old, merged, self._dry_run(raw))

    def _api_patch(
        self, raw: web.BaseRequest, rt: ResourceType, ns: str | None, name: str, sub: str | None
    ) -> web.Response:
        ctype = raw.headers.get("Content-Type", "").split(";")[0].strip()
        body = self._raw_body(raw)
        try:
            patch = yaml.safe_load(body) if ctype == "application/apply-patch+yaml" else json.loads(body or b"null")
        except (ValueError, yaml.YAMLError) as e:
            raise _errors.bad_request(f"error decoding patch: {e}") from None
        entry = self.store.get(rt, ns, name)
        if entry is None:
            if ctype == "application/apply-patch+yaml" and isinstance(patch, dict):
                obj = prepare_new(rt, patch, ns)
                self._check_namespace(rt, ns, name)
                if self._dry_run(raw):
                    return _json_response(obj, 201)
                return _json_response(self.store.put(rt, obj).raw, 201)
            raise _errors.not_found(rt, name)
        old = entry.obj
        try:
            if ctype == "application/json-patch+json":
                patched = _patch.json_patch(old, patch)
            elif ctype == "application/merge-patch+json":
                patched = _patch.merge_patch(old, patch)
            elif ctype in ("application/strategic-merge-patch+json", "application/apply-patch+yaml"):
                patched = _patch.strategic_merge_patch(old, patch)
            else:
                raise _errors.unsupported_media_type(ctype)
        except _patch.PatchError as e:
            raise ApiError(422, "Invalid", str(e), {"name": name, "kind": rt.kind}) from None
        if not isinstance(patched, dict):
            raise _errors.bad_request("the patch produced a document that is not an object")
        pmeta = patched.get("metadata") or {}
        if pmeta.get("resourceVersion") and pmeta["resourceVersion"] != old["metadata"].get("resourceVersion"):
            raise _errors.stale_update(rt, name)
        if pmeta.get("name", name) != name:
            raise _errors.bad_request(
                f"the name of the object ({pmeta.get('name')}) does not match the name on the URL ({name})"
            )
        merged = self._merge_for_write(rt, old, patched, sub)
        return self._finish_write(rt, entry, merged, self._dry_run(raw))

    def _delete_options(self, raw: web.BaseRequest) -> Obj:
        body = self._body(raw, self._raw_body(raw))
        options: Obj = dict(body) if isinstance(body, dict) else {}
        q = raw.query
        if "gracePeriodSeconds" in q:
            try:
                options["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
            except ValueError:
                raise _errors.bad_request(f'invalid gracePeriodSeconds: "{q["gracePeriodSeconds"]}"') from None
        if "propagationPolicy" in q:
            options["propagationPolicy"] = q["propagationPolicy"]
        return options

    def delete_object(self, rt: ResourceType, ns: str | None, name: str, options: Obj, dry: bool) -> tuple[Obj, bool]:
        """Delete (or start deleting) an object; returns (object, deleted-now)."""
        entry = self._get_entry(rt, ns, name)
        obj = entry.obj
        meta = obj["metadata"]
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise _errors.conflict(
                rt,
                name,
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise _errors.conflict(
                rt,
                name,
                f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
            )
        if meta.get("deletionTimestamp"):
            return obj, False
        if self.garbage_collector is not None:  # Orphan and Foreground hold the object by a finalizer
            finalizer = _gc.deletion_finalizer(rt, options)
            if finalizer and finalizer not in (meta.get("finalizers") or []):
                meta = {**meta, "finalizers": [*(meta.get("finalizers") or []), finalizer]}
                obj = {**obj, "metadata": meta}
        grace = options.get("gracePeriodSeconds")
        now = dt.datetime.now(dt.timezone.utc)
        graceful_pod = (
            rt.plural == "pods"
            and (obj.get("spec") or {}).get("nodeName")
            and (obj.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and grace != 0
        )
        if graceful_pod or meta.get("finalizers") or rt.plural == "namespaces":
            if grace is None:
                grace = (
                    int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30)) if rt.plural == "pods" else 0
                )
            new_meta = dict(meta)
            new_meta["deletionTimestamp"] = rfc3339(now + dt.timedelta(seconds=grace))
            new_meta["deletionGracePeriodSeconds"] = grace
            new = dict(obj)
            new["metadata"] = new_meta
            if rt.plural == "namespaces":
                new["status"] = {**(obj.get("status") or {}), "phase": "Terminating"}
            if dry:
                return new, False
            stored = self.store.put(rt, new).obj
            if rt.plural == "pods":
                self._pod_terminating(stored)
            elif rt.plural == "namespaces":
                self.call_later(self.pod_deletion_delay, lambda: self._finish_namespace(name))
            return stored, False
        if dry:
            return obj, True
        last = self.store.remove(rt, ns, name) or obj
        if rt.plural == "pods" and self.pod_termination_hook is not None:
            self.pod_termination_hook(last)
        return last, True

    def _pod_terminating(self, pod: Obj) -> None:
        if self.pod_termination_hook is not None:
            self.pod_termination_hook(pod)
            return
        meta = pod["metadata"]
        self.call_later(
            self.pod_deletion_delay, lambda: self.finalize_pod(meta["namespace"], meta["name"], meta["uid"])
        )

    def finalize_pod(self, ns: str, name: str, uid: str) -> None:
        """Remove a pod that is being deleted (what the kubelet does once containers stop)."""
        entry = self.store.get(_PODS, ns, name)
        if entry is None:
            return
        meta = entry.obj["metadata"]
        if meta.get("uid") == uid and meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self.store.remove(_PODS, ns, name)

    def _finish_namespace(self, name: str) -> None:
        for rt in RESOURCES:
            if rt.namespaced:
                for item in self.store.select(rt, name, None):
                    self.store.remove(rt, name, item.obj["metadata"]["name"])
        entry = self.store.get(_NAMESPACES, None, name)
        if entry is not None and entry.obj["metadata"].get("deletionTimestamp"):
            self.store.remove(_NAMESPACES, None, name)

    def call_later(self, delay: float, fn: Callable[[], None]) -> None:
        loop = self.loop or asyncio.get_event_loop()

        def run() -> None:
            self._timers.discard(handle)
            fn()

        handle = loop.call_later(delay, run)
        self._timers.add(handle)

    def cancel_timers(self) -> None:
        for handle in list(self._timers):
            handle.cancel()
        self._timers.clear()

    def _api_delete(self, raw: web.BaseRequest, rt: ResourceType, ns: str | None, name: str) -> web.Response:
        options = self._delete_options(raw)
        obj, _ = self.delete_object(rt, ns, name, options, self._dry_run(raw, options))
        return _with_warning(_json_response(obj, 200), _gc.delete_warning(rt, options))

    def _api_delete_collection(self, raw: web.BaseRequest, rt: ResourceType, ns: str | None) -> web.Response:
        options = self._delete_options(raw)
        dry = self._dry_run(raw, options)
        predicate, _ = self._predicate(rt, raw.query)
        deleted = []
        for entry in self.store.select(rt, ns, predicate):
            meta = entry.obj["metadata"]
            obj, _ = self.delete_object(rt, meta.get("namespace"), meta["name"], options, dry)
            deleted.append(obj)
        return _with_warning(
            _json_response(
                {
                    "kind": rt.list_kind,
                    "apiVersion": rt.api_version,
                    "metadata": {"resourceVersion": str(self.store.rv)},
                    "items": deleted,
                }
            ),
            _gc.delete_warning(rt, options),
        )

    # ---- subresources -----------------------------------------------------------------------------
    async def _serve_exec(self, raw: web.BaseRequest, route: Route, rt: ResourceType, sub: str) -> web.StreamResponse:
        pod = self._get_entry(rt, route.namespace, route.name or "").obj
        if self.exec_handler is None or sub != "exec":
            raise ApiError(400, "BadRequest", f"{sub} is not supported by this server")
        result: web.StreamResponse = await self.exec_handler(raw, route, sub, pod)
        return result

    def _serve_pod_action(self, raw: web.BaseRequest, rt: ResourceType, ns: str, name: str, sub: str) -> web.Response:
        body = self._body(raw, self._raw_body(raw)) or {}
        entry = self._get_entry(rt, ns, name)
        if sub == "binding":
            target = ((body.get("target") or {}).get("name")) if isinstance(body, dict) else None
            if not target:
                raise _errors.invalid("Binding", name, [("target.name", "FieldValueRequired", "Required value")])
            if (entry.obj.get("spec") or {}).get("nodeName"):
                raise _errors.conflict(
                    rt, name, f'pod {name} is already assigned to node "{entry.obj["spec"]["nodeName"]}"'
                )
            new = dict(entry.obj)
            new["spec"] = {**entry.obj["spec"], "nodeName": target}
            self.store.put(rt, new)
            return _json_response(
                {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201
            )
        self.delete_object(rt, ns, name, (body.get("deleteOptions") or {}) if isinstance(body, dict) else {}, False)
        return _json_response(
            {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201
        )

    def append_log(self, ns: str, pod: str, container: str, text: str) -> None:
        lines = self.logs.setdefault((ns, pod, container), [])
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        for line in text.splitlines(keepends=True):
            lines.append((stamp, line))
        for waiter in self._log_waiters:
            waiter.set()

    def _log_container(self, pod: Obj, container: str | None) -> str:
        spec = pod.get("spec") or {}
        names = [c["name"] for c in spec.get("containers") or []]
        init_names = [c["name"] for c in spec.get("initContainers") or []]
        name = pod["metadata"]["name"]
        if not container:
            if len(names) == 1:
                return str(names[0])
            msg = f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
            if init_names:
                msg += f" or one of the init containers: [{' '.join(init_names)}]"
            raise _errors.bad_request(msg)
        if container not in names and container not in init_names:
            raise _errors.bad_request(f"container {container} is not valid for pod {name}")
        return container

    def _container_state(self, pod: Obj, container: str) -> Obj:
        status = pod.get("status") or {}
        for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
            if cs.get("name") == container:
                return dict(cs.get("state") or {})
        return {}

    async def _serve_log(self, raw: web.BaseRequest, rt: ResourceType, ns: str, name: str) -> web.StreamResponse:
        pod = self._get_entry(rt, ns, name).obj
        q = raw.query
        container = self._log_container(pod, q.get("container"))
        state = self._container_state(pod, container)
        if not state or "waiting" in state:
            reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
            raise _errors.bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
        lines = list(self.logs.get((ns, name, container), []))
        if _bool_param(q.get("previous")):
            raise _errors.bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        tail = q.get("tailLines")
        if tail is not None:
            try:
                n = int(tail)
            except ValueError:
                raise _errors.bad_request(f'invalid tailLines: "{tail}"') from None
            lines = lines[-n:] if n > 0 else []
        stamps = _bool_param(q.get("timestamps"))

        def render(items: list[tuple[str, str]]) -> bytes:
            return "".join((f"{s} {line}" if stamps else line) for s, line in items).encode()

        limit = q.get("limitBytes")
        if not _bool_param(q.get("follow")):
            data = render(lines)
            if limit:
                data = data[: int(limit)]
            return web.Response(body=data, content_type="text/plain")
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(raw)
        await response.write(render(lines))
        sent = len(self.logs.get((ns, name, container), []))
        waiter = asyncio.Event()
        self._log_waiters.append(waiter)
        try:
            while True:
                entry = self.store.get(rt, ns, name)
                if entry is None or entry.obj["metadata"].get("uid") != pod["metadata"].get("uid"):
                    break
                if "terminated" in self._container_state(entry.obj, container):
                    break
                current = self.logs.get((ns, name, container), [])
                if len(current) > sent:
                    await response.write(render(current[sent:]))
                    sent = len(current)
                waiter.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(waiter.wait(), 0.5)
            current = self.logs.get((ns, name, container), [])
            if len(current) > sent:
                await response.write(render(current[sent:]))
            await response.write_eof()
        except ConnectionError:
            pass
        finally:
            self._log_waiters.remove(waiter)
        return response

    def wake_log_followers(self) -> None:
        for waiter in self._log_waiters:
            waiter.set()

    # ---- reviews --------------------------------------------------------------------------------
    def _serve_review(self, raw: web.BaseRequest, rt: ResourceType, user: str) -> web.Response:
        body = self._body(raw, self._raw_body(raw)) or {}
        if not isinstance(body, dict):
            raise _errors.bad_request("the body of the request was in an unknown format")
        out: Obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": {"creationTimestamp": None}}
        if rt.plural == "selfsubjectreviews":
            groups = list(groups_of(user, self.user_groups))
            out["status"] = {"userInfo": {"username": user, "groups": groups}}
            return _json_response(out, 201)
        spec = body.get("spec") or {}
        out["spec"] = spec
        if self.rbac is not None:
            return self._serve_rbac_review(rt, spec, user, out)
        if rt.plural == "selfsubjectrulesreviews":
            ns = spec.get("namespace")
            out["status"] = {
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": False,
            }
            for rule in self.deny_rules:
                if rule.namespace in (None, ns):
                    out["status"]["evaluationError"] = "some rules deny access; this list is not exhaustive"
            return _json_response(out, 201)
        attrs_ = spec.get("resourceAttributes")
        if not attrs_:
            out["status"] = {"allowed": True, "reason": "non-resource URLs are allowed"}
            return _json_response(out, 201)
        verb = attrs_.get("verb", "")
        resource = attrs_.get("resource", "")
        with contextlib.suppress(KeyError):
            resource = lookup(resource).plural
        sub = attrs_.get("subresource") or None
        ns = attrs_.get("namespace") or None
        if self.is_denied(verb, resource, ns, sub):
            out["status"] = {"allowed": False, "reason": ""}
        else:
            out["status"] = {
                "allowed": True,
                "reason": 'RBAC: allowed by ClusterRoleBinding "nsightlab-sim" of ClusterRole "cluster-admin" to User '
                f'"{user}"',
            }
        return _json_response(out, 201)

    def _serve_rbac_review(self, rt: ResourceType, spec: Obj, user: str, out: Obj) -> web.Response:
        """Access and rules reviews answered by the RBAC authorizer (a deny rule still wins)."""
        assert self.rbac is not None
        if rt.plural == "selfsubjectrulesreviews":
            ns = spec.get("namespace")
            if not ns:
                raise _errors.bad_request("no namespace on request")
            out["status"] = self.rbac.rules_review(user, str(ns))
            if any(rule.namespace in (None, ns) for rule in self.deny_rules):
                out["status"]["evaluationError"] = "some rules deny access; this list is not exhaustive"
            return _json_response(out, 201)
        attrs_ = spec.get("resourceAttributes")
        if not attrs_ and not spec.get("nonResourceAttributes"):
            raise _errors.invalid(
                "SelfSubjectAccessReview",
                "",
                [
                    (
                        "spec.resourceAttributes",
                        "FieldValueInvalid",
                        'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must '
                        "be specified",
                    )
                ],
                "authorization.k8s.io",
            )
        if attrs_:
            resource = attrs_.get("resource", "")
            with contextlib.suppress(KeyError):
                resource = lookup(resource).plural
            if self.is_denied(
                attrs_.get("verb", ""), resource, attrs_.get("namespace") or None, attrs_.get("subresource") or None
            ):
                out["status"] = {"allowed": False}
                return _json_response(out, 201)
        out["status"] = self.rbac.access_review(user, spec)
        return _json_response(out, 201)

    # ---- seeding helpers (called on the loop thread) ------------------------------------------------
    def seed(self, objs: list[Obj]) -> int:
        rng = random.Random(len(objs))
        items = []
        for obj in objs:
            rt = _rt_of(obj)
            items.append((rt, fill_seed(rt, obj, rng)))
        return self.store.bulk_load(items)

    def put_object(self, obj: Obj) -> Obj:
        rt = _rt_of(obj)
        return self.store.put(rt, fill_seed(rt, obj)).obj


def _guess_action(method: str, route: Route, query: Any) -> kmock.action | None:
    if method == "GET" and (route.watch_path or _bool_param(query.get("watch"))):
        return kmock.action.WATCH
    if route.name is None:
        return {"GET": kmock.action.LIST, "POST": kmock.action.CREATE}.get(method)
    return {
        "GET": kmock.action.FETCH,
        "PATCH": kmock.action.UPDATE,
        "PUT": kmock.action.UPDATE,
        "DELETE": kmock.action.DELETE,
    }.get(method)


def _rt_of(obj: Obj) -> ResourceType:
    if "kind" not in obj:
        raise ValueError(f"object without kind: {obj!r:.200}")
    return for_object(obj)


_PODS = lookup("pods")
_NAMESPACES = lookup("namespaces")


__all__ = ["DenyRule", "Recorded", "Route", "SimEmulator", "parse_route"]
