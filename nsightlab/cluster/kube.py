"""The one seam between nsightlab and a Kubernetes API server.

This is the ONLY module that imports `kubernetes`. A `Kube` is built for one explicit,
already-checked context (see safety.py), never the client's global default configuration,
never the kubeconfig's current-context. A context with plain credentials (a CA, client
certificates, a bearer token: see kubeconfig.plain_connection, tested to read them as the
client's loader does) is connected with its own TLS context and urllib3 pool; any other
(exec credential plugins, auth providers, proxies...) through the kubernetes client's own
kubeconfig loader and connection pool. Importing the client costs a tenth of a second on
every command, which the plain path saves. Either way every request goes through
`Kube.request()` and responses are decoded from JSON into plain dicts, never into the
generated model classes (importing those alone costs most of a second). Every HTTP error
and transport failure is translated here into a `ClusterError` (exit 4) whose message
names what was being done.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from pydantic_core import from_json

from nsightlab.cluster import answers
from nsightlab.cluster.kubeconfig import plain_connection
from nsightlab.errors import ClusterError, NsightlabError, PodNotReadyError, UsageError

if TYPE_CHECKING:
    import ssl

    from nsightlab.cluster.kubeconfig import PlainConnection
    from nsightlab.cluster.safety import ResolvedContext

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = answers.DEFAULT_REQUEST_TIMEOUT  # --request-timeout: answers.set_request_timeout
PAGE_SIZE = 500
AUTH_RECHECK = 5.0  # seconds an Authorization header is reused (see Kube._authorization)
CONNECT_RETRIES = 1  # a connection refused is tried once more (within --request-timeout)
CONNECT_RETRY_WAIT = 0.1


class NotFound(ClusterError):
    """The object (or its namespace) does not exist."""


class Conflict(ClusterError):
    """409: already exists, or a precondition (uid) did not hold."""


class Gone(ClusterError):
    """410: a watch's resourceVersion is too old; list again."""


class Unauthorized(ClusterError):
    """401: the credentials were refused (trying again will not help)."""


class Forbidden(ClusterError):
    """403: RBAC (or an admission policy) refused the request."""

    what = ""  # what was being done: "list nodes", "get node NAME"


def seg(name: str) -> str:
    """A name as one segment of a request path: every reserved character quoted ('/', '?',
    '#', ';', '%', spaces...), whatever was checked before, so a name can never reach
    another object or another endpoint.

    "." and ".." are quoted too (an HTTP client removes dot segments: DELETE of pod ".."
    would go to the namespace), and an empty name is refused (".../pods/" is the whole
    collection).
    """
    if not name:
        raise UsageError(
            "an empty name cannot be sent to the API server",
            hint="Check the pod, node or namespace name you gave (or the lab session's).",
        )
    quoted = quote(name, safe="")
    return quoted.replace(".", "%2E") if quoted in (".", "..") else quoted


_CONTINUE = re.compile(rb'"continue"\s*:\s*"([^"]*)"')


def _continue_token(raw: bytes) -> str | None:
    """The continue token from a list's metadata, read off the raw bytes.

    The API server writes `metadata` before `items`, so it is in the first bytes; an
    item's own field cannot match there. None when absent (then the decoded page decides).
    """
    head = raw[: raw.find(b'"items"')] if b'"items"' in raw[:4096] else b""
    m = _CONTINUE.search(head)
    return m.group(1).decode() if m and m.group(1) else None


@contextlib.contextmanager
def background(workers: int = 1) -> Iterator[Any]:
    """A thread pool for requests made ahead (the next page, a second list), left without
    waiting for them when an exception (Ctrl-C, an error) ends the work: a request stalled
    on a silent server would otherwise hold the command up for its whole timeout."""

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def loads(raw: bytes) -> Any:
    """Decode JSON bytes (a page from `Kube.raw_pages`) into plain Python objects; a page
    that is not whole JSON is a ClusterError."""
    try:
        return _loads(raw)
    except ValueError:
        raise ClusterError(
            f"an API server sent JSON that is cut off or malformed ({len(raw)} bytes)",
            hint="Try again; if it persists, check any proxy between you and the cluster.",
        ) from None


def _loads(raw: bytes) -> Any:

    return from_json(raw)


class Kube:
    """A client for one context. Methods return plain JSON dicts."""

    def __init__(
        self, ctx: ResolvedContext, *, connect_timeout: float | None = None, read_timeout: float | None = None
    ) -> None:

        self.ctx = ctx
        self.namespace = ctx.namespace
        limit = read_timeout if read_timeout is not None else answers.request_timeout()
        if connect_timeout is None:
            connect_timeout = CONNECT_TIMEOUT if limit is None else min(CONNECT_TIMEOUT, limit)
        self.timeout: tuple[float, float | None] = (connect_timeout, limit)
        self._auth_cache: tuple[float, str | None] | None = None
        self.api_client: Any = None
        self._tls: Any = None  # the SSLContext of a plain connection
        plain = plain_connection(ctx.kubeconfig, ctx.name)
        if plain is not None:
            self._connect_plain(plain)
        else:
            self._connect_with_loader()

    def _connect_plain(self, plain: PlainConnection) -> None:
        """A context with a CA, client certificates and a token only: the same settings the
        kubernetes client's loader would make (kubeconfig.plain_connection reads them as it
        does), without importing it."""
        # loaded by the commands that connect; --help and offline commands never pay for it
        import urllib3

        self.server = plain.server
        self._token = plain.token
        self._server_name = plain.server_name
        pool_args: dict[str, Any] = {"retries": 1, "maxsize": 4}  # one quick retry, as with the loader
        if plain.server.startswith("https"):
            try:
                self._tls = _tls_context(plain)
            except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
                raise ClusterError(
                    f"cannot use context '{self.ctx.name}' from {self.ctx.kubeconfig.path_arg()}: bad "
                    f"certificate or key ({e})",
                    hint="Check the kubeconfig's certificate-authority and client-certificate/client-key for that "
                    "context.",
                ) from None
            pool_args.update(ssl_context=self._tls, cert_reqs="CERT_REQUIRED" if plain.verify else "CERT_NONE")
            if not plain.verify:
                _quiet_insecure_warnings()
            if plain.server_name:
                pool_args["server_hostname"] = plain.server_name
        self._pool = urllib3.PoolManager(num_pools=2, **pool_args)

    def _connect_with_loader(self) -> None:
        """Anything else (exec credential plugins, auth providers, proxies...): the kubernetes
        client's own loader, and its connection pool."""
        # the kubernetes client's loader costs about 0.1 s: only contexts that need it load it
        from kubernetes.client import Configuration
        from kubernetes.config import ConfigException, new_client_from_config

        ctx = self.ctx
        configuration = Configuration()
        # One quick retry for a refused connection, then a clear error: never hang.
        configuration.retries = 1
        try:
            self.api_client = new_client_from_config(
                config_file=ctx.kubeconfig.path_arg(),
                context=ctx.name,
                persist_config=False,  # never write refreshed tokens into the user's files
                client_configuration=configuration,
            )
        except ConfigException as e:
            raise ClusterError(
                f"cannot use context '{ctx.name}' from {ctx.kubeconfig.path_arg()}: {str(e).splitlines()[0]}",
                hint="Check the kubeconfig (cluster, user, credentials plugin) for that context.",
            ) from None
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ClusterError(
                f"cannot load context '{ctx.name}' from {ctx.kubeconfig.path_arg()}: {e}",
                hint="Check the kubeconfig for that context.",
            ) from None
        self.server = self.api_client.configuration.host.rstrip("/")
        self._pool = self.api_client.rest_client.pool_manager
        if not self.api_client.configuration.verify_ssl:
            _quiet_insecure_warnings()

    def close(self) -> None:
        if self.api_client is not None:
            self.api_client.close()
        else:
            self._pool.clear()

    def __enter__(self) -> Kube:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the seam

    def request(
        self,
        method: str,
        path: str,
        *,
        what: str,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: Any = None,
        text: bool = False,
    ) -> Any:
        """Every HTTP call goes through here. Returns the urllib3 response of a 2xx answer
        that says it is JSON (with `text`, a pod's log: anything but an HTML page); the
        caller reads it (`_json`, or a stream).

        Uses the client's configured connection pool (CA, client certificates) and its
        auth settings (which run an exec credential plugin's refresh when needed), but
        not the generated API classes: importing those costs most of a second, and
        decoding into their model objects is several times slower than plain JSON.

        Whatever else comes back ends as a ClusterError naming the server and what it
        sent (see answers.py): an error status, a page that is not JSON, a connection
        that breaks or stays silent past the request timeout. A 429 (or a 5xx with
        Retry-After) is tried again after the wait it asks for, while the waits fit in
        the request timeout.
        """
        # loaded by the commands that connect; --help and offline commands never pay for it
        import urllib3

        headers = {"Accept": "application/json", "User-Agent": "nsightlab"}
        authorization = self._authorization()
        if authorization:
            headers["Authorization"] = authorization
        url = self.server + path
        if query:
            url += "?" + urlencode(
                {k: ("true" if v is True else "false" if v is False else v) for k, v in query.items() if v is not None}
            )
        data: bytes | None = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        connect, read = timeout or self.timeout
        limit = self.timeout[1]
        deadline = None if limit is None else time.monotonic() + limit
        tries = 0
        connects = 0
        while True:
            left = None if deadline is None else max(0.01, deadline - time.monotonic())
            try:
                # by name: Timeout's first parameter is `total`, which would cap every read,
                # a watch's or a followed log's too, at the connect timeout
                resp = self._pool.request(
                    method,
                    url,
                    body=data,
                    headers=headers,
                    timeout=urllib3.Timeout(connect=answers.within(connect, left), read=answers.within(read, left)),
                    preload_content=False,
                    retries=_retries(),
                )
            except (urllib3.exceptions.HTTPError, OSError) as e:
                reason = e.reason if isinstance(e, urllib3.exceptions.MaxRetryError) else e
                connects += 1
                if (
                    connects <= CONNECT_RETRIES
                    and answers.not_connected(reason)
                    and (deadline is None or deadline - time.monotonic() > CONNECT_RETRY_WAIT)
                ):
                    time.sleep(CONNECT_RETRY_WAIT)  # a refused connection: once more, at once, within the limit
                    continue
                raise self._unreachable(what, reason) from None
            if 200 <= resp.status < 300:
                ctype = resp.headers.get("Content-Type")
                if not (answers.is_text_type(ctype) if text else answers.is_json_type(ctype)):
                    raise answers.not_json(
                        self._peer(), what, resp.status, ctype, answers.read(self._peer(), what, resp)
                    )
                return resp
            payload = answers.read(self._peer(), what, resp)
            wait = answers.retry_after(resp.status, resp.headers)
            if wait is not None:
                tries += 1
                if tries <= answers.MAX_RETRIES and (deadline is None or time.monotonic() + wait < deadline):
                    time.sleep(wait)
                    continue
            raise self._translate(what, resp.status, payload, content_type=resp.headers.get("Content-Type"), wait=wait)

    def _peer(self) -> answers.Peer:
        return answers.Peer(server=self.server, context=self.ctx.name, timeout=self.timeout[1])

    def _json(self, resp: Any, what: str) -> Any:
        """The decoded body of a response from `request`."""
        peer = self._peer()
        return answers.decode(peer, what, answers.read(peer, what, resp))

    def _authorization(self) -> str | None:
        """The Authorization header from the client's auth settings, asked again at most
        every AUTH_RECHECK seconds.

        Asking runs the kubeconfig loader's refresh hook, which re-reads the credentials
        (and re-resolves proxies) on every call: a fifth of a millisecond, paid on each of
        the dozens of pages of a big list. The loader renews a token five minutes before it
        expires, so a few seconds of reuse never sends a stale one.
        """
        if self.api_client is None:
            return self._token
        now = time.monotonic()
        if self._auth_cache is None or now - self._auth_cache[0] > AUTH_RECHECK:
            auth = self.api_client.configuration.auth_settings().get("BearerToken")
            value = str(auth["value"]) if auth and auth.get("value") else None
            self._auth_cache = (now, value)
        return self._auth_cache[1]

    def _unreachable(self, what: str, reason: object) -> ClusterError:
        """A request with no (whole) answer: refused, reset, timed out, TLS."""
        return answers.transport_error(self._peer(), what, reason)

    def _translate(
        self,
        what: str,
        status: int,
        body: bytes,
        *,
        content_type: str | None = "application/json",
        wait: float | None = None,
    ) -> ClusterError:
        message = answers.status_of(body, content_type)[1]
        if status == 401:
            return Unauthorized(
                f"the API server rejected our credentials (401 Unauthorized) while trying to {what} on context "
                f"'{self.ctx.name}'",
                hint="Log in again (e.g. refresh your cloud credentials) and check the user of that context.",
            )
        if status == 403:
            refused = Forbidden(
                f"forbidden: cannot {what} ({message})",
                hint="Ask the cluster admins for that permission (docs/permissions.md has the Role the "
                f"lab needs), or run `nsightlab doctor {self.ctx.cli_args}` to see what you may do.",
            )
            refused.what = what
            return refused
        if status == 404:
            return NotFound(f"not found while trying to {what}: {message}")
        if status == 409:
            return Conflict(f"conflict while trying to {what}: {message}")
        if status == 410:
            return Gone(f"{what}: {message or 'resource version too old'}")
        return answers.server_error(self._peer(), what, status, body, content_type, wait=wait)

    def get_json(self, path: str, *, what: str, query: dict[str, Any] | None = None) -> Any:
        return self._json(self.request("GET", path, what=what, query=query), what)

    # ------------------------------------------------------------------ reads

    def version(self) -> dict[str, Any]:
        result: dict[str, Any] = self.get_json("/version", what="read the server version")
        return result

    def raw_pages(
        self, path: str, *, what: str, query: dict[str, Any] | None = None, page_size: int = PAGE_SIZE
    ) -> Iterator[tuple[bytes, dict[str, Any] | None]]:
        """Every page of a list (limit/continue) as raw JSON bytes, with the decoded page
        when it had to be decoded to find the continue token (else None).

        The next page is fetched on a second thread while the caller works on this one,
        so the network and the caller's decoding overlap.
        """
        base = dict(query or {})
        base["limit"] = page_size

        def fetch(cont: str | None) -> bytes:
            q = dict(base)
            if cont:
                q["continue"] = cont
            raw = answers.read(self._peer(), what, self.request("GET", path, what=what, query=q))
            if not answers.looks_whole(raw):  # pages may be scanned undecoded: cut-off JSON is caught here
                raise answers.malformed(self._peer(), what, raw)
            return raw

        with background() as pool:
            raw = fetch(None)
            while True:
                decoded: dict[str, Any] | None = None
                cont = _continue_token(raw)
                if cont is None and b'"continue"' in raw:  # not where we looked: decode to know
                    decoded = answers.decode(self._peer(), what, raw)
                    cont = ((decoded or {}).get("metadata") or {}).get("continue") or None
                ahead = pool.submit(fetch, cont) if cont else None
                yield raw, decoded
                if ahead is None:
                    return
                raw = ahead.result()

    def pages(
        self, path: str, *, what: str, query: dict[str, Any] | None = None, page_size: int = PAGE_SIZE
    ) -> Iterator[dict[str, Any]]:
        """Every page of a list, decoded (see raw_pages)."""
        for raw, decoded in self.raw_pages(path, what=what, query=query, page_size=page_size):
            page: dict[str, Any] = decoded if decoded is not None else answers.decode(self._peer(), what, raw)
            yield page

    def _list(self, path: str, *, what: str, query: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], str]:
        items: list[dict[str, Any]] = []
        rv = ""
        for page in self.pages(path, what=what, query=query):
            items.extend(page.get("items") or [])
            rv = str((page.get("metadata") or {}).get("resourceVersion") or rv)
        return items, rv

    def list_nodes(self, *, label_selector: str | None = None) -> list[dict[str, Any]]:
        return self._list("/api/v1/nodes", what="list nodes", query={"labelSelector": label_selector})[0]

    def list_pods(
        self,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        """Pods of one namespace (or all, when namespace is None), and the list's resourceVersion."""
        query = {"labelSelector": label_selector, "fieldSelector": field_selector}
        if namespace is None:
            return self._list("/api/v1/pods", what="list pods in all namespaces", query=query)
        return self._list(
            f"/api/v1/namespaces/{seg(namespace)}/pods", what=f"list pods in namespace {namespace}", query=query
        )

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = self.get_json(
                f"/api/v1/namespaces/{seg(namespace)}/pods/{seg(name)}", what=f"get pod {name} in namespace {namespace}"
            )
        except NotFound:
            return None
        return result

    def get_node(self, name: str) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = self.get_json(f"/api/v1/nodes/{seg(name)}", what=f"get node {name}")
        except NotFound:
            return None
        return result

    def list_events(self, namespace: str, *, field_selector: str | None = None) -> list[dict[str, Any]]:
        """core/v1 Events of one namespace (e.g. `involvedObject.name=POD`)."""
        return self._list(
            f"/api/v1/namespaces/{seg(namespace)}/events",
            what=f"list events in namespace {namespace}",
            query={"fieldSelector": field_selector},
        )[0]

    def pod_log(
        self,
        namespace: str,
        name: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        follow: bool = False,
    ) -> Iterator[bytes]:
        """A container's log, in pieces as they come; with `follow`, until the container
        ends or the pod goes (the server closes the stream), with no read timeout: a log
        is quiet as long as its program is."""
        # loaded by the commands that connect; --help and offline commands never pay for it
        import urllib3

        what = f"read the log of pod {name} in namespace {namespace}"
        query = {"container": container, "tailLines": tail_lines, "follow": True if follow else None}
        resp = self.request(
            "GET", f"/api/v1/namespaces/{seg(namespace)}/pods/{seg(name)}/log", what=what, query=query, text=True
        )
        if follow:  # its headers came within the request timeout; the lines then come when they come
            _stream_timeout(resp, None)
        try:
            for chunk in resp.stream(64 * 1024, decode_content=True):
                if chunk:
                    yield chunk
        except (urllib3.exceptions.ProtocolError, urllib3.exceptions.ReadTimeoutError, OSError) as e:
            raise self._unreachable(what, e) from None
        finally:
            resp.release_conn()

    def namespace_exists(self, name: str) -> bool:
        """Whether the Namespace object exists. Reading it is a cluster-wide permission
        most lab users lack (Forbidden): the lab never needs it, a pod's create answers
        404 in a missing namespace."""
        try:
            self.get_json(f"/api/v1/namespaces/{seg(name)}", what=f"get namespace {name}")
        except NotFound:
            return False
        return True

    def missing_namespace(self, name: str) -> ClusterError:
        """The error for a namespace that does not exist."""
        return ClusterError(
            f"namespace '{name}' does not exist on context '{self.ctx.name}'",
            hint="Pass --namespace NS, or set the namespace of the alias in config.yaml.",
        )

    # ------------------------------------------------------------------ changes

    def create_pod(self, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        """Create a pod; a namespace that does not exist is the error that says so (the
        only 404 a create can get: nothing needs to read the Namespace object first)."""
        name = manifest.get("metadata", {}).get("name", "?")
        what = f"create pod {name} in namespace {namespace}"
        try:
            resp = self.request("POST", f"/api/v1/namespaces/{seg(namespace)}/pods", what=what, body=manifest)
        except NotFound:
            raise self.missing_namespace(namespace) from None
        result: dict[str, Any] = self._json(resp, what)
        return result

    def delete_pod(
        self, namespace: str, name: str, *, uid: str | None = None, grace_seconds: int | None = None
    ) -> bool:
        """Delete a pod (only the one with `uid`, when given). False if it was already gone."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        try:
            what = f"delete pod {name} in namespace {namespace}"
            self._json(
                self.request("DELETE", f"/api/v1/namespaces/{seg(namespace)}/pods/{seg(name)}", what=what, body=body),
                what,
            )
        except NotFound:
            return False
        return True

    # ------------------------------------------------------------------ Jobs and ConfigMaps (fleets)

    def _create(self, path: str, kind: str, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        name = manifest.get("metadata", {}).get("name", "?")
        what = f"create {kind} {name} in namespace {namespace}"
        result: dict[str, Any] = self._json(self.request("POST", path, what=what, body=manifest), what)
        return result

    def _get(self, path: str, what: str) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = self.get_json(path, what=what)
        except NotFound:
            return None
        return result

    def _delete(self, path: str, what: str, *, uid: str | None, propagation: str | None) -> bool:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        if propagation:
            body["propagationPolicy"] = propagation
        try:
            self._json(self.request("DELETE", path, what=what, body=body), what)
        except NotFound:
            return False
        return True

    def create_job(self, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        return self._create(f"/apis/batch/v1/namespaces/{seg(namespace)}/jobs", "job", namespace, manifest)

    def get_job(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(
            f"/apis/batch/v1/namespaces/{seg(namespace)}/jobs/{seg(name)}", f"get job {name} in namespace {namespace}"
        )

    def list_jobs(self, namespace: str, *, label_selector: str | None = None) -> tuple[list[dict[str, Any]], str]:
        """Jobs of one namespace, and the list's resourceVersion (to watch from)."""
        return self._list(
            f"/apis/batch/v1/namespaces/{seg(namespace)}/jobs",
            what=f"list jobs in namespace {namespace}",
            query={"labelSelector": label_selector},
        )

    def delete_job(self, namespace: str, name: str, *, uid: str | None = None, propagation: str = "Background") -> bool:
        """Delete a Job (only the one with `uid`, when given) and, by default, its pods after
        it (batch/v1 would orphan them when no policy is sent). False if it was already gone."""
        return self._delete(
            f"/apis/batch/v1/namespaces/{seg(namespace)}/jobs/{seg(name)}",
            f"delete job {name} in namespace {namespace}",
            uid=uid,
            propagation=propagation,
        )

    def create_configmap(self, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        return self._create(f"/api/v1/namespaces/{seg(namespace)}/configmaps", "configmap", namespace, manifest)

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(
            f"/api/v1/namespaces/{seg(namespace)}/configmaps/{seg(name)}",
            f"get configmap {name} in namespace {namespace}",
        )

    def list_configmaps(self, namespace: str, *, label_selector: str | None = None) -> list[dict[str, Any]]:
        return self._list(
            f"/api/v1/namespaces/{seg(namespace)}/configmaps",
            what=f"list configmaps in namespace {namespace}",
            query={"labelSelector": label_selector},
        )[0]

    def delete_configmap(self, namespace: str, name: str, *, uid: str | None = None) -> bool:
        return self._delete(
            f"/api/v1/namespaces/{seg(namespace)}/configmaps/{seg(name)}",
            f"delete configmap {name} in namespace {namespace}",
            uid=uid,
            propagation=None,
        )

    def access_review(
        self, verb: str, resource: str, namespace: str | None, *, subresource: str | None = None, group: str = ""
    ) -> tuple[bool, str]:
        """SelfSubjectAccessReview: may the current user do this? (allowed, reason)."""
        attrs: dict[str, Any] = {"verb": verb, "resource": resource, "group": group}
        if namespace:
            attrs["namespace"] = namespace
        if subresource:
            attrs["subresource"] = subresource
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs},
        }
        what = f"review access to {verb} {resource}{'/' + subresource if subresource else ''}"
        data = self._json(
            self.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", what=what, body=body), what
        )
        status = data.get("status") or {}
        return bool(status.get("allowed")), str(status.get("reason") or status.get("evaluationError") or "")

    # ------------------------------------------------------------------ watch

    def _watch(
        self,
        path: str,
        what: str,
        query: dict[str, Any],
        timeout_seconds: int,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        q = {**query, "watch": True, "timeoutSeconds": timeout_seconds}
        # The API server sends a watch's headers at once: they must come within the request
        # timeout like any answer; the events then may be minutes apart.
        resp = self.request("GET", path, what=what, query=q)
        _stream_timeout(resp, timeout_seconds + 15)
        if on_open is not None:
            on_open(resp)  # the caller may end the stream from another thread (resp.shutdown())
        yield from self._events(resp, what)

    def watch_pods(
        self,
        namespace: str,
        *,
        field_selector: str | None = None,
        label_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int = 60,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield (event type, object) from one watch request until the server ends it."""
        query = {
            "fieldSelector": field_selector,
            "labelSelector": label_selector,
            "resourceVersion": resource_version,
            "allowWatchBookmarks": True,
        }
        yield from self._watch(
            f"/api/v1/namespaces/{seg(namespace)}/pods",
            f"watch pods in namespace {namespace}",
            query,
            timeout_seconds,
            on_open,
        )

    def watch_jobs(
        self,
        namespace: str,
        *,
        label_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int = 60,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield (event type, Job) from one watch request until the server ends it."""
        query = {"labelSelector": label_selector, "resourceVersion": resource_version, "allowWatchBookmarks": True}
        yield from self._watch(
            f"/apis/batch/v1/namespaces/{seg(namespace)}/jobs",
            f"watch jobs in namespace {namespace}",
            query,
            timeout_seconds,
            on_open,
        )

    def watch_events(
        self,
        namespace: str,
        *,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int = 60,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        query = {"fieldSelector": field_selector, "resourceVersion": resource_version}
        yield from self._watch(
            f"/api/v1/namespaces/{seg(namespace)}/events",
            f"watch events in namespace {namespace}",
            query,
            timeout_seconds,
        )

    def _events(self, resp: Any, what: str) -> Iterator[tuple[str, dict[str, Any]]]:
        # loaded by the commands that connect; --help and offline commands never pay for it
        import urllib3

        buf = b""
        try:
            for chunk in resp.stream(amt=None, decode_content=False):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        yield self._event(line, what)
            if buf.strip():
                yield self._event(buf, what)
        except (urllib3.exceptions.ProtocolError, urllib3.exceptions.ReadTimeoutError, OSError):
            # The server (or a proxy) closed the stream: the caller re-watches.
            return
        finally:
            resp.release_conn()

    def _event(self, line: bytes, what: str) -> tuple[str, dict[str, Any]]:
        event = answers.decode(self._peer(), what, line)
        if not isinstance(event, dict):
            raise answers.malformed(self._peer(), what, line)
        etype = str(event.get("type", ""))
        obj = event.get("object") or {}
        if etype == "ERROR":
            code = obj.get("code")
            if code == 410:
                raise Gone(f"{what}: {obj.get('message', 'resource version too old')}")
            raise ClusterError(f"{what}: the server sent an error: {obj.get('message', obj)}")
        return etype, obj

    # ------------------------------------------------------------------ exec

    def exec(
        self,
        namespace: str,
        pod: str,
        argv: list[str],
        *,
        container: str | None = None,
        stdin: bool = False,
        tty: bool = False,
    ) -> ExecSession:
        """Open an exec websocket (v5, else v4 channel protocol) into a pod.

        The handshake's refusals are translated: 404 (no such pod), 400 (not running),
        401/403. The socket is our own (websocket-client, which the kubernetes client
        uses too) so that frames stream through without being buffered in memory.
        """

        # only an exec or a copy opens a websocket
        import websocket

        query: list[tuple[str, str]] = [("command", a) for a in argv]
        query += [("stdin", _bool(stdin)), ("stdout", "true"), ("stderr", _bool(not tty)), ("tty", _bool(tty))]
        if container:
            query.append(("container", container))
        base = self.server
        if base.startswith("https://"):
            url = "wss://" + base[len("https://") :]
        elif base.startswith("http://"):
            url = "ws://" + base[len("http://") :]
        else:
            url = base
        url += f"/api/v1/namespaces/{seg(namespace)}/pods/{seg(pod)}/exec?" + urlencode(query)
        authorization = self._authorization()
        headers = [f"Authorization: {authorization}"] if authorization else []
        sslopt = self._exec_sslopt() if url.startswith("wss://") else {}
        what = f"exec into pod {pod} in namespace {namespace}"
        ws = websocket.WebSocket(sslopt=sslopt, skip_utf8_validation=True, enable_multithread=True)
        try:
            # the handshake is a request like any other: its answer within the request timeout
            ws.connect(url, header=headers, subprotocols=[V5, V4], timeout=self.timeout[1])
        except websocket.WebSocketBadStatusException as e:
            raise self._exec_refused(what, e.status_code, e.resp_body, dict(e.resp_headers or {})) from None
        except (websocket.WebSocketException, OSError) as e:
            raise self._unreachable(what, e) from None
        ws.settimeout(None)
        return ExecSession(ws, ws.subprotocol or V4, what)

    def _exec_sslopt(self) -> dict[str, Any]:
        """TLS options for the exec websocket: the plain connection's context, else the
        loader's settings."""
        # OpenSSL loads only for a command that connects
        import ssl

        if self.api_client is None:
            opts: dict[str, Any] = {"context": self._tls}
            if self._server_name:
                opts["server_hostname"] = self._server_name
            return opts
        cfg = self.api_client.configuration
        sslopt: dict[str, Any]
        if cfg.verify_ssl:
            sslopt = {"cert_reqs": ssl.CERT_REQUIRED}
            if cfg.ssl_ca_cert:
                sslopt["ca_certs"] = cfg.ssl_ca_cert
            if cfg.assert_hostname is not None:
                sslopt["check_hostname"] = cfg.assert_hostname
        else:
            sslopt = {"cert_reqs": ssl.CERT_NONE, "check_hostname": False}
        if cfg.cert_file:
            sslopt["certfile"] = cfg.cert_file
        if cfg.key_file:
            sslopt["keyfile"] = cfg.key_file
        if getattr(cfg, "tls_server_name", None):
            sslopt["server_hostname"] = cfg.tls_server_name
        return sslopt

    def _exec_refused(self, what: str, status: int, body: Any, headers: dict[str, str] | None = None) -> NsightlabError:
        raw = body if isinstance(body, bytes) else str(body or "").encode()
        ctype = {k.lower(): v for k, v in (headers or {}).items()}.get("content-type")
        if 200 <= status < 300:  # not the upgrade (101) an exec needs: something else answered
            return (
                answers.not_json(self._peer(), what, status, ctype, raw)
                if not answers.is_json_type(ctype)
                else ClusterError(
                    f"the API server {self.server} answered {status} instead of starting the exec stream while "
                    f"trying to {what}",
                    hint="A proxy in front of the cluster may not pass websockets on.",
                )
            )
        message = answers.status_of(raw, ctype)[1]
        if status == 400:
            return PodNotReadyError(
                f"cannot {what}: {message or 'the pod is not running'}",
                hint=f"Check it with `nsightlab status {self.ctx.cli_args}`.",
            )
        if status == 404:
            return NotFound(
                f"cannot {what}: {message or 'no such pod'}",
                hint=f"The pod is gone; create a new one with `nsightlab create {self.ctx.cli_args}`.",
            )
        return self._translate(what, status, raw, content_type=ctype)


@functools.cache
def _retries() -> Any:
    """No retry inside urllib3: a request that got no answer is not sent again there (a
    read timeout retried would double `--request-timeout`). `Kube.request` tries a
    connection that was never made once more, within the request timeout, and honours a
    Retry-After there too, where urllib3 would sleep as long as the server asks."""
    # loaded by the commands that connect; --help and offline commands never pay for it
    import urllib3

    return urllib3.Retry(0, read=False, redirect=0, respect_retry_after_header=False, raise_on_status=False)


def _stream_timeout(resp: Any, seconds: float | None) -> None:
    """Let a streamed body (a watch, a followed log) wait `seconds` between reads (None:
    as long as it takes), once its headers came within the request timeout."""
    sock = getattr(getattr(resp, "connection", None), "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.settimeout(seconds)


def _quiet_insecure_warnings() -> None:
    """The context says insecure-skip-tls-verify: the user chose it in the kubeconfig, and
    kubectl says nothing of it; urllib3 would warn on every request, pages of a list
    included."""

    # loaded by the commands that connect; --help and offline commands never pay for it
    from urllib3.exceptions import InsecureRequestWarning

    warnings.filterwarnings("ignore", category=InsecureRequestWarning)


def _tls_context(plain: PlainConnection) -> ssl.SSLContext:
    """The TLS context for a plain connection: its CA (else the system's), the server's
    name checked unless insecure-skip-tls-verify, its client certificate. A certificate
    and key given as data are loaded from files in a private temporary folder, removed
    at once (the kubernetes client's loader leaves them until the process ends)."""
    # OpenSSL loads only for a command that connects
    import ssl

    ctx = ssl.create_default_context(cadata=plain.ca.decode("latin-1") if plain.ca else None)
    if not plain.verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if plain.cert is not None and plain.key is not None:
        folder = tempfile.mkdtemp(prefix="nsightlab-tls-")  # mode 0700
        try:
            cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
            for path, data in ((cert, plain.cert), (key, plain.key)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
            ctx.load_cert_chain(cert, key)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return ctx


V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


def _bool(value: bool) -> str:
    return "true" if value else "false"


_OP_CONT, _OP_TEXT, _OP_BIN, _OP_CLOSE, _OP_PING, _OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_RECV_SIZE = 1 << 20
_DIRECT = 1 << 16  # frames this big are received straight into their own buffer (see _direct)
# Data bytes per stdin frame: with the channel byte, just under 64 KiB (see write_stdin).
STDIN_FRAME = 65531
_STDIN_HEAD_LEN = 4


# Below this many bytes a frame is masked without numpy (a copy out never needs it).
SMALL_MASK = 32 * 1024


@functools.cache
def _xor_table(k: int) -> bytes:
    return bytes(b ^ k for b in range(256))


def mask_payload(key: bytes, data: bytes | bytearray | memoryview) -> bytes:
    """RFC 6455 client masking: XOR with the 4-byte key repeated."""
    out = bytearray(len(data))
    _mask_into(out, 0, key, data)
    return bytes(out)


def _mask_into(out: bytearray, at: int, key: bytes, data: bytes | bytearray | memoryview) -> None:
    """XOR `data` with the repeated `key` into out[at:at + len(data)].

    numpy XORs whole 32-bit words (over 10 GB/s); websocket-client's own masking runs at
    about 0.35 GB/s, which on a quiet machine made a 256 MiB copy in 1.2x slower
    (bench/RESULTS.md, "Simpler where speed does not pay").
    """
    n = len(data)
    if n < SMALL_MASK:  # a short message: byte translation, no numpy to import
        for i in range(min(4, n)):
            out[at + i : at + n : 4] = bytes(data[i::4]).translate(_xor_table(key[i]))
        return
    import numpy as np  # only copies need it: kept out of every other command's start-up

    words = n // 4
    if words:
        dst = np.frombuffer(out, dtype=np.uint32, count=words, offset=at)
        np.bitwise_xor(
            np.frombuffer(data, dtype=np.uint32, count=words), np.frombuffer(key, dtype=np.uint32)[0], out=dst
        )
    for i in range(words * 4, n):
        out[at + i] = data[i] ^ key[i % 4]


def _frame_head(opcode: int, n: int) -> bytes:
    """A final, masked frame's first bytes for an n-byte payload (shortest length form)."""
    if n < 126:
        return bytes([0x80 | opcode, 0x80 | n])
    if n < 1 << 16:
        return bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
    return bytes([0x80 | opcode, 0x80 | 127]) + n.to_bytes(8, "big")


def frame_bytes(opcode: int, payload: bytes | memoryview, mask_key: bytes, *, channel: int | None = None) -> bytearray:
    """One final, masked client frame (RFC 6455 section 5.2), built in one buffer.

    With `channel`, the payload is that channel byte followed by `payload` (the
    Kubernetes exec framing), without first copying the two together.
    """
    n = len(payload) + (channel is not None)
    head = _frame_head(opcode, n)
    frame = bytearray(len(head) + 4 + n)
    frame[: len(head)] = head
    at = len(head)
    frame[at : at + 4] = mask_key
    at += 4
    key = mask_key
    if channel is not None:
        frame[at] = channel ^ key[0]
        at += 1
        key = key[1:] + key[:1]  # the payload goes on one byte into the key
    _mask_into(frame, at, key, payload)
    return frame


class ExecSession:
    """One exec: write stdin, read (channel, bytes) frames, resize, get the exit code.

    websocket-client makes the connection (TLS, the HTTP upgrade, the subprotocol); frames
    are masked, read and written here, straight on the socket: reads of up to 1 MiB at a
    time, several times faster than the library's per-frame path on copies of hundreds of
    MiB.
    """

    def __init__(self, ws: Any, protocol: str, what: str) -> None:
        self._ws = ws
        self._sock = ws.sock
        self.protocol = protocol
        self.what = what
        self._status: dict[str, Any] | None = None
        self._open = True
        self._buf = bytearray()
        # received into one reused buffer: TLS hands over a record (<= 16 KiB) per call,
        # and a fresh 1 MiB object per call would be allocated and shrunk each time
        self._inbox = bytearray(_RECV_SIZE)
        self._inbox_view = memoryview(self._inbox)
        self._fragments: list[bytes] = []
        self._outbox = bytearray()  # stdin frames of a copy, built in one reused buffer
        self._frag_opcode = _OP_BIN
        self._send_lock = threading.Lock()
        self._timeout: float | None = -1.0  # unknown: set on the first read

    @property
    def can_close_stdin(self) -> bool:
        """v5 can signal end of stdin; v4 cannot (the caller must bound its input)."""
        return self.protocol == V5

    def _send(self, opcode: int, payload: bytes | memoryview, channel: int | None = None) -> None:
        self._sendall(frame_bytes(opcode, payload, os.urandom(4), channel=channel))

    def _sendall(self, data: bytes | bytearray) -> None:
        try:
            with self._send_lock:
                self._sock.sendall(data)
        except OSError as e:
            self._open = False
            raise ClusterError(f"the exec stream closed while sending data ({self.what}): {e}") from None

    def write_stdin(self, data: bytes | memoryview) -> None:
        """Send `data` on stdin, as frames of at most STDIN_FRAME bytes in one write.

        Big frames cost the receiving end more than the same bytes in 64 KiB frames (an
        API server or proxy buffers a whole frame before passing it on); one socket write
        per call keeps the sending end cheap.
        """
        if len(data) <= STDIN_FRAME:  # (an empty write is one empty frame)
            self._sendall(frame_bytes(_OP_BIN, data, os.urandom(4), channel=STDIN))
            return
        import numpy as np  # only copies send more than a frame: kept out of start-up

        full = len(data) // STDIN_FRAME
        whole = _STDIN_HEAD_LEN + 4 + 1 + STDIN_FRAME  # header, key, channel byte, data
        keys = np.frombuffer(os.urandom(4 * full), dtype=np.uint8).reshape(full, 4)
        tail = memoryview(data)[full * STDIN_FRAME :]
        last = frame_bytes(_OP_BIN, tail, os.urandom(4), channel=STDIN) if tail else b""
        if len(self._outbox) != full * whole + len(last):  # reused while the sizes repeat
            self._outbox = bytearray(full * whole + len(last))
        out = self._outbox
        # the whole frames at once: every payload (channel byte and data) is a whole number
        # of 32-bit words at a word boundary, so one XOR masks them all with their own keys
        frames = np.frombuffer(out, dtype=np.uint8, count=full * whole).reshape(full, whole)
        frames[:, :_STDIN_HEAD_LEN] = np.frombuffer(_frame_head(_OP_BIN, STDIN_FRAME + 1), dtype=np.uint8)
        frames[:, _STDIN_HEAD_LEN : _STDIN_HEAD_LEN + 4] = keys
        frames[:, _STDIN_HEAD_LEN + 4] = STDIN
        frames[:, _STDIN_HEAD_LEN + 5 :] = np.frombuffer(data, dtype=np.uint8, count=full * STDIN_FRAME).reshape(
            full, STDIN_FRAME
        )
        words = np.frombuffer(out, dtype=np.uint32, count=full * whole // 4).reshape(full, whole // 4)
        words[:, (_STDIN_HEAD_LEN + 4) // 4 :] ^= keys.copy().view(np.uint32)
        del frames, words  # (they hold the buffer: it could not be resized while they live)
        out[full * whole :] = last
        self._sendall(out)

    def close_stdin(self) -> None:
        if self.can_close_stdin and self._open:
            self.write_raw(bytes([CLOSE, STDIN]))

    def write_raw(self, payload: bytes) -> None:
        self._send(_OP_BIN, payload)

    def resize(self, width: int, height: int) -> None:
        self.write_raw(bytes([RESIZE]) + json.dumps({"Width": width, "Height": height}).encode())

    def fileno(self) -> int:
        return int(self._sock.fileno())

    def pending(self) -> bool:
        """Data already here that select() would not see: a whole frame in our buffer,
        or bytes decrypted and held by TLS."""
        # OpenSSL loads only for a command that connects
        import ssl

        if self._frame_ready():
            return True
        return isinstance(self._sock, ssl.SSLSocket) and self._sock.pending() > 0

    def _frame_ready(self) -> bool:
        parsed = self._header()
        return parsed is not None and len(self._buf) >= parsed[3] + parsed[2]

    def _header(self) -> tuple[int, bool, int, int] | None:
        """(opcode, fin, payload length, header length) of the frame at the buffer's start."""
        buf = self._buf
        if len(buf) < 2:
            return None
        fin = bool(buf[0] & 0x80)
        opcode = buf[0] & 0x0F
        masked = bool(buf[1] & 0x80)
        n = buf[1] & 0x7F
        pos = 2
        if n == 126:
            if len(buf) < 4:
                return None
            n = int.from_bytes(buf[2:4], "big")
            pos = 4
        elif n == 127:
            if len(buf) < 10:
                return None
            n = int.from_bytes(buf[2:10], "big")
            pos = 10
        if masked:
            pos += 4
        return opcode, fin, n, pos

    def _next_frame(self, timeout: float | None) -> tuple[int, int, bytes | memoryview] | None:
        """The next whole message as (opcode, first byte, the rest), fragments reassembled.

        For exec data the first byte is the channel: splitting it off here saves copying
        every payload once more. The first byte is -1 for an empty message.
        """
        while True:
            parsed = self._header()
            if parsed is not None:
                opcode, fin, n, pos = parsed
                here = len(self._buf) >= pos + n
                if not here and n >= _DIRECT and fin and opcode in (_OP_BIN, _OP_TEXT) and not self._buf[1] & 0x80:
                    return self._direct(opcode, n, pos, timeout)
            if parsed is not None and here:
                if self._buf[1] & 0x80:  # a masked frame from the server (not expected)
                    payload = mask_payload(bytes(self._buf[pos - 4 : pos]), bytes(self._buf[pos : pos + n]))
                    self._buf[pos : pos + n] = payload
                whole = fin and opcode in (_OP_BIN, _OP_TEXT)
                with memoryview(self._buf) as view:
                    if whole and n:  # the usual case: one copy, out of the buffer
                        first, payload = self._buf[pos], bytes(view[pos + 1 : pos + n])
                    else:
                        first, payload = -1, bytes(view[pos : pos + n])
                del self._buf[: pos + n]
                if whole:
                    return opcode, first, payload
                if opcode == _OP_PING:
                    self._send(_OP_PONG, payload)
                    continue
                if opcode == _OP_PONG:
                    continue
                if opcode == _OP_CONT or not fin:
                    self._fragments.append(payload)
                    if not fin:
                        if opcode != _OP_CONT:
                            self._frag_opcode = opcode
                        continue
                    opcode, payload = self._frag_opcode, b"".join(self._fragments)
                    self._fragments = []
                if not payload:
                    return opcode, -1, b""
                return opcode, payload[0], payload[1:]
            got = self._recv_into(self._inbox_view, timeout)
            if not got:
                return None
            self._buf += self._inbox_view[:got]

    def _recv_into(self, view: memoryview, timeout: float | None) -> int:
        """Bytes received into `view`; 0 when the stream has ended or broken.
        Raises TimeoutError when `timeout` passes first."""
        if timeout != self._timeout:
            self._sock.settimeout(timeout)
            self._timeout = timeout
        try:
            return int(self._sock.recv_into(view))
        except TimeoutError:
            raise
        except OSError:
            return 0

    def _direct(
        self, opcode: int, n: int, pos: int, timeout: float | None
    ) -> tuple[int, int, bytes | memoryview] | None:
        """A big data frame received straight into its own buffer: TLS decrypts into
        it, and nothing is copied after (a copy of hundreds of MiB passes through here)."""
        payload = bytearray(n)
        have = len(self._buf) - pos
        payload[:have] = self._buf[pos:]
        self._buf.clear()
        view = memoryview(payload)
        while have < n:
            got = self._recv_into(view[have:], timeout)
            if not got:
                return None
            have += got
        return opcode, payload[0], view[1:]

    def read(self, timeout: float | None = None) -> tuple[int, bytes] | None:
        """The next data frame as (channel, payload); None at the end of the stream.

        Raises TimeoutError when `timeout` passes without a frame. Status frames
        (channel 3) are kept for `returncode` and not returned.
        """
        got = self.read_view(timeout)
        if got is None:
            return None
        channel, payload = got
        return channel, payload if isinstance(payload, bytes) else bytes(payload)

    def read_view(self, timeout: float | None = None) -> tuple[int, bytes | memoryview] | None:
        """As `read`, but a big payload may come as a view of its own buffer (no copy)."""
        while self._open:
            try:
                got = self._next_frame(timeout)
            except TimeoutError:
                raise TimeoutError(self.what) from None
            if got is None:
                self._open = False
                return None
            opcode, channel, payload = got
            if opcode == _OP_CLOSE:
                self._open = False
                return None
            if opcode not in (_OP_BIN, _OP_TEXT) or channel < 0:
                continue
            if channel == ERROR:
                text = bytes(payload).decode("utf-8", "replace")
                try:
                    self._status = json.loads(text)
                except ValueError:
                    self._status = {"status": "Failure", "message": text}
                continue
            if channel == CLOSE:
                continue
            if payload:
                return channel, payload
        return None

    @property
    def status(self) -> dict[str, Any] | None:
        return self._status

    def returncode(self) -> int | None:
        """The remote exit code from the status channel; None if none was sent."""
        st = self._status
        if st is None:
            return None
        if st.get("status") == "Success":
            return 0
        for cause in (st.get("details") or {}).get("causes") or []:
            if cause.get("reason") == "ExitCode":
                try:
                    return int(cause.get("message"))
                except (TypeError, ValueError):
                    break
        return None

    def failure_message(self) -> str | None:
        st = self._status
        if not st or st.get("status") == "Success" or self.returncode() is not None:
            return None
        return str(st.get("message") or st)

    def close(self) -> None:
        self._open = False
        # closing a broken socket must not raise
        with contextlib.suppress(Exception):
            self._ws.close(timeout=1)
