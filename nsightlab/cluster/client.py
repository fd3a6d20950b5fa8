"""The request client: every HTTP call to an API server goes through `Client.request`.

It sends on the context's `Connection` (connection.py: the pool, the TLS, the
Authorization header), bounds each request by the request timeout (--request-timeout),
tries again where that is safe (a connection refused, a 429 or a 5xx that asks for it
with Retry-After), pages lists with continue tokens and streams watches. Responses are
decoded from JSON into plain dicts, never into the kubernetes client's generated model
classes (importing those alone costs most of a second). Every HTTP error and transport
failure ends as a `ClusterError` (exit 4) whose message names what was being done
(answers.py). Request paths come from apipaths.py; the typed calls (pods, Jobs, exec...)
are `Kube`'s (kube.py).
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

from pydantic_core import from_json

from nsightlab.cluster import answers
from nsightlab.cluster.connection import connect
from nsightlab.errors import ClusterError

if TYPE_CHECKING:
    from nsightlab.cluster.safety import ResolvedContext

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = answers.DEFAULT_REQUEST_TIMEOUT  # --request-timeout: answers.set_request_timeout
PAGE_SIZE = 500
CONNECT_RETRIES = 1  # a connection refused is tried once more (within --request-timeout)
CONNECT_RETRY_WAIT = 0.1

_C = TypeVar("_C", bound="Client")

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
    """Decode JSON bytes (a page from `Client.raw_pages`) into plain Python objects; a page
    that is not whole JSON is a ClusterError."""
    try:
        return from_json(raw)
    except ValueError:
        raise ClusterError(
            f"an API server sent JSON that is cut off or malformed ({len(raw)} bytes)",
            hint="Try again; if it persists, check any proxy between you and the cluster.",
        ) from None


class Client:
    """Requests to one context's API server, each bounded by the request timeout.
    Methods return plain JSON dicts (or the urllib3 response, for `request`)."""

    def __init__(
        self, ctx: ResolvedContext, *, connect_timeout: float | None = None, read_timeout: float | None = None
    ) -> None:
        self.ctx = ctx
        self.namespace = ctx.namespace
        limit = read_timeout if read_timeout is not None else answers.request_timeout()
        if connect_timeout is None:
            connect_timeout = CONNECT_TIMEOUT if limit is None else min(CONNECT_TIMEOUT, limit)
        self.timeout: tuple[float, float | None] = (connect_timeout, limit)
        self.connection = connect(ctx)
        self.server = self.connection.server
        self.peer = answers.Peer(server=self.server, context=ctx.name, timeout=limit, cli_args=ctx.cli_args)

    @property
    def api_client(self) -> Any:
        """The kubernetes client's ApiClient when the context went through its loader;
        None on the plain path."""
        return self.connection.api_client

    def close(self) -> None:
        self.connection.close()

    def __enter__(self: _C) -> _C:
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
        caller reads it (`read_json`, or a stream).

        Uses the connection's pool (CA, client certificates) and its Authorization header
        (which, through the loader, runs an exec credential plugin's refresh when
        needed), but not the kubernetes client's generated API classes: importing those
        costs most of a second, and decoding into their model objects is several times
        slower than plain JSON.

        Whatever else comes back ends as a ClusterError naming the server and what it
        sent (see answers.py): an error status, a page that is not JSON, a connection
        that breaks or stays silent past the request timeout. A 429 (or a 5xx with
        Retry-After) is tried again after the wait it asks for, while the waits fit in
        the request timeout.
        """
        # loaded by the commands that connect; --help and offline commands never pay for it
        import urllib3

        headers = {"Accept": "application/json", "User-Agent": "nsightlab"}
        authorization = self.connection.authorization()
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
                resp = self.connection.pool.request(
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
                raise self.unreachable(what, reason) from None
            if 200 <= resp.status < 300:
                ctype = resp.headers.get("Content-Type")
                if not (answers.is_text_type(ctype) if text else answers.is_json_type(ctype)):
                    raise answers.not_json(self.peer, what, resp.status, ctype, answers.read(self.peer, what, resp))
                return resp
            payload = answers.read(self.peer, what, resp)
            wait = answers.retry_after(resp.status, resp.headers)
            if wait is not None:
                tries += 1
                if tries <= answers.MAX_RETRIES and (deadline is None or time.monotonic() + wait < deadline):
                    time.sleep(wait)
                    continue
            raise answers.translate(
                self.peer, what, resp.status, payload, content_type=resp.headers.get("Content-Type"), wait=wait
            )

    def read_json(self, resp: Any, what: str) -> Any:
        """The decoded body of a response from `request`."""
        return answers.decode(self.peer, what, answers.read(self.peer, what, resp))

    def unreachable(self, what: str, reason: object) -> ClusterError:
        """A request with no (whole) answer: refused, reset, timed out, TLS."""
        return answers.transport_error(self.peer, what, reason)

    def get_json(self, path: str, *, what: str, query: dict[str, Any] | None = None) -> Any:
        return self.read_json(self.request("GET", path, what=what, query=query), what)

    # ------------------------------------------------------------------ lists

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
            raw = answers.read(self.peer, what, self.request("GET", path, what=what, query=q))
            if not answers.looks_whole(raw):  # pages may be scanned undecoded: cut-off JSON is caught here
                raise answers.malformed(self.peer, what, raw)
            return raw

        with background() as pool:
            raw = fetch(None)
            while True:
                decoded: dict[str, Any] | None = None
                cont = _continue_token(raw)
                if cont is None and b'"continue"' in raw:  # not where we looked: decode to know
                    decoded = answers.decode(self.peer, what, raw)
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
            page: dict[str, Any] = decoded if decoded is not None else answers.decode(self.peer, what, raw)
            yield page

    def list_all(
        self, path: str, *, what: str, query: dict[str, Any] | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        """Every item of a list, and the list's resourceVersion (to watch from)."""
        items: list[dict[str, Any]] = []
        rv = ""
        for page in self.pages(path, what=what, query=query):
            items.extend(page.get("items") or [])
            rv = str((page.get("metadata") or {}).get("resourceVersion") or rv)
        return items, rv

    # ------------------------------------------------------------------ watches

    def watch(
        self,
        path: str,
        what: str,
        query: dict[str, Any],
        timeout_seconds: int,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield (event type, object) from one watch request until the server ends it."""
        q = {**query, "watch": True, "timeoutSeconds": timeout_seconds}
        # The API server sends a watch's headers at once: they must come within the request
        # timeout like any answer; the events then may be minutes apart.
        resp = self.request("GET", path, what=what, query=q)
        stream_timeout(resp, timeout_seconds + 15)
        if on_open is not None:
            on_open(resp)  # the caller may end the stream from another thread (resp.shutdown())
        yield from self._events(resp, what)

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
        event = answers.decode(self.peer, what, line)
        if not isinstance(event, dict):
            raise answers.malformed(self.peer, what, line)
        etype = str(event.get("type", ""))
        obj = event.get("object") or {}
        if etype == "ERROR":
            raise answers.watch_error(what, obj)
        return etype, obj


@functools.cache
def _retries() -> Any:
    """No retry inside urllib3: a request that got no answer is not sent again there (a
    read timeout retried would double `--request-timeout`). `Client.request` tries a
    connection that was never made once more, within the request timeout, and honours a
    Retry-After there too, where urllib3 would sleep as long as the server asks."""
    # loaded by the commands that connect; --help and offline commands never pay for it
    import urllib3

    return urllib3.Retry(0, read=False, redirect=0, respect_retry_after_header=False, raise_on_status=False)


def stream_timeout(resp: Any, seconds: float | None) -> None:
    """Let a streamed body (a watch, a followed log) wait `seconds` between reads (None:
    as long as it takes), once its headers came within the request timeout."""
    sock = getattr(getattr(resp, "connection", None), "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.settimeout(seconds)
