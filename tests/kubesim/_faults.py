"""Broken answers on demand: what proxies, load balancers and sick API servers send.

Each fault is a kmock reaction (so it comes before the emulated API, and each faulted
request is in ``sim.requests`` with the status sent, ``None`` when none was) for requests
matching a kmock criterion, ``"/*"`` by default: ``"get /api/v1/namespaces/*/pods"`` (method
and path glob), ``"list pods"``, ``kmock.resource(...)``. ``times`` counts matching requests
from now on (``None``: every one until :meth:`ResponseFaults.clear`); faults added earlier
answer first.

What each one sends:

- :meth:`~ResponseFaults.html_page`: 200 ``text/html``, a single sign-on login page.
- :meth:`~ResponseFaults.truncated_json`: 200 ``application/json``, the real answer cut in the
  middle of an object; with ``chunked=True`` a chunked body whose connection closes before
  its last chunk.
- :meth:`~ResponseFaults.status_error`: 500 (or another code) with the API server's ``Status``.
- :meth:`~ResponseFaults.plain_error`: 502/503 with a ``text/plain`` body, as a load balancer.
- :meth:`~ResponseFaults.too_many_requests`: 429 with ``Retry-After`` and the ``Status`` of the
  API server's priority and fairness.
- :meth:`~ResponseFaults.reset_connection`: a TCP reset (or a close) and no answer at all.
- :meth:`~ResponseFaults.stall`: no answer for ``seconds`` (or until :meth:`release_stalls`),
  then the usual answer; a server that stops drops stalled connections at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import TYPE_CHECKING, Any, TypeAlias

import kmock
from aiohttp import web

from ._api import SERVING
from ._errors import ApiError

if TYPE_CHECKING:
    from ._sim import KubeSim

Obj = dict[str, Any]
# A kmock criterion: a "METHOD /path-glob" string, "list pods", kmock.resource(...), a callable.
Pattern: TypeAlias = Any

LOGIN_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Sign in - Corporate SSO</title>
</head>
<body>
<form method="post" action="/oauth2/sign_in">
<h1>Sign in to continue</h1>
<input type="text" name="username" autocomplete="username">
<input type="password" name="password" autocomplete="current-password">
<button type="submit">Sign in</button>
</form>
</body>
</html>
"""

# What load balancers and the API server say by default for each code.
PLAIN_TEXTS = {
    502: "upstream connect error or disconnect/reset before headers. reset reason: connection failure",
    503: "no healthy upstream",
    504: "upstream request timeout",
}
_STATUS_ERRORS = {
    500: ("InternalError", "Internal error occurred: etcdserver: request timed out"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: (
        "Timeout",
        "the server was unable to return a response in the time allotted, but may still be processing the request",
    ),
}


def _transport_of(request: kmock.Request) -> asyncio.Transport | None:
    raw = request._raw_request
    transport = raw.transport if raw is not None else None
    return transport if isinstance(transport, asyncio.Transport) else None


def drop_connection(request: kmock.Request, rst: bool = True) -> None:
    """Close the request's connection without an answer: a TCP reset (linger 0), or a close."""
    transport = _transport_of(request)
    if transport is None:
        return
    if rst:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    else:
        transport.close()


class ResponseFaults:
    """Make the server answer badly (see the module's docstring); part of ``sim.faults``."""

    def __init__(self, sim: KubeSim) -> None:
        self._sim = sim
        self._stalls: set[asyncio.Event] = set()
        self._stopping = False
        self._hooked = False

    # ---- plumbing -------------------------------------------------------------------------------
    def _react(self, pattern: Pattern, times: int | None, *items: Any) -> None:
        if times is not None and times < 1:
            raise ValueError("times must be at least 1 (or None for every request)")

        em = self._sim.emulator
        taken: set[int] = set()
        first = 0  # the first request id this fault may answer: set when it is added

        def admit(request: kmock.Request) -> bool:
            # kmock re-checks every earlier request against a reaction's criteria, so the
            # count is kept here: only the request being served now can take one of the
            # ``times`` places, and a request that took one keeps it.
            if request.id in taken:
                return True
            if request.id < first or (times is not None and len(taken) >= times):
                return False
            if SERVING.get() is not request:
                return False
            taken.add(request.id)
            return True

        def add() -> None:
            nonlocal first
            first = em.request_seq + 1  # requests from now on only
            view: Any = em[pattern][admit]
            for item in items:
                view = view << item

        self._sim._call(add)

    # ---- answers ----------------------------------------------------------------------------------
    def html_page(
        self, pattern: Pattern = "/*", *, times: int | None = 1, status: int = 200, body: str = LOGIN_PAGE
    ) -> None:
        """Answer with an HTML page (``text/html``), as a single sign-on proxy in front of the
        API server does for a request without its session cookie."""
        self._react(pattern, times, status, kmock.headers({"Content-Type": "text/html; charset=utf-8"}), body.encode())

    def status_error(
        self,
        pattern: Pattern = "/*",
        *,
        code: int = 500,
        times: int | None = 1,
        message: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Answer ``code`` with a ``Status`` body, e.g. 500 ``InternalError``
        ``Internal error occurred: etcdserver: request timed out``."""
        default_reason, default_message = _STATUS_ERRORS.get(
            code, ("InternalError", f"Internal error occurred: HTTP {code}")
        )
        error = ApiError(code, reason or default_reason, message or default_message)
        if error.reason == "InternalError":
            cause = error.message.removeprefix("Internal error occurred: ")
            error.details = {"causes": [{"message": cause}]}
        self._react(pattern, times, code, error.status())

    def plain_error(
        self, pattern: Pattern = "/*", *, code: int = 502, times: int | None = 1, text: str | None = None
    ) -> None:
        """Answer ``code`` with a ``text/plain`` body, as a load balancer whose upstream is gone."""
        body = text if text is not None else PLAIN_TEXTS.get(code, f"{code} error")
        self._react(pattern, times, code, kmock.headers({"Content-Type": "text/plain"}), body.encode())

    def too_many_requests(self, pattern: Pattern = "/*", *, times: int | None = 1, retry_after: int = 1) -> None:
        """Answer 429 with ``Retry-After: retry_after`` (seconds) for the next ``times``
        requests, as API priority and fairness does; later requests are answered as usual."""
        error = ApiError(
            429, "TooManyRequests", "Too many requests, please try again later.", {"retryAfterSeconds": retry_after}
        )
        self._react(pattern, times, 429, kmock.headers({"Retry-After": str(retry_after)}), error.status())

    def truncated_json(self, pattern: Pattern = "/*", *, times: int | None = 1, chunked: bool = False) -> None:
        """Answer 200 ``application/json`` with the request's real answer cut mid-object.

        ``chunked=False``: a complete HTTP answer (``Content-Length`` of the cut body) that is
        not valid JSON. ``chunked=True``: a chunked body; the connection closes before the
        final chunk, as when a proxy dies mid-answer. Watches, logs and exec get a cut
        generic document instead of their real answer.
        """
        em = self._sim.emulator

        async def cut_body(request: kmock.Request) -> bytes:
            body = await _real_answer(em, request)
            if len(body) < 8:
                body = b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}'
            return body[: len(body) // 2]

        if not chunked:
            self._react(pattern, times, 200, kmock.headers({"Content-Type": "application/json"}), cut_body)
            return

        def hang_up(request: kmock.Request) -> None:
            # The status line is out: record it now, as the client may close first and
            # cancel this handler before it returns.
            raw = request._raw_request
            record = em.record_for(raw) if raw is not None else None
            if record is not None:
                record.status = 200
            drop_connection(request, rst=False)

        async def stream(request: kmock.Request) -> tuple[Any, ...]:
            part = await cut_body(request)
            half = len(part) // 2
            return (part[:half], part[half:], lambda: hang_up(request))

        self._react(pattern, times, 200, kmock.headers({"Content-Type": "application/json"}), stream)

    def reset_connection(self, pattern: Pattern = "/*", *, times: int | None = 1, rst: bool = True) -> None:
        """Drop the connection without answering: a TCP reset (``rst=True``: the client sees
        ``ECONNRESET``), or an orderly close (the client sees the connection end before any
        answer)."""

        def drop(request: kmock.Request) -> bytes:
            drop_connection(request, rst=rst)
            return b""

        self._react(pattern, times, drop)

    def stall(self, pattern: Pattern = "/*", *, times: int | None = 1, seconds: float | None = None) -> None:
        """Accept and read the request, then send nothing for ``seconds`` (None: until
        :meth:`release_stalls`); then answer as usual. A client whose timeout is shorter sees a
        read timeout. Stopping the server drops stalled connections at once."""
        if not self._hooked:
            self._sim._on_stop.append(self._on_stop)
            self._sim._on_start.append(self._on_start)
            self._hooked = True

        async def wait(request: kmock.Request) -> bytes:
            event = asyncio.Event()
            self._stalls.add(event)
            try:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(event.wait(), seconds)
            finally:
                self._stalls.discard(event)
            if self._stopping:
                drop_connection(request, rst=False)
                return b""
            raise NotImplementedError("stall over: answer as usual")  # kmock: try the next reaction

        self._react(pattern, times, wait)

    def release_stalls(self) -> int:
        """End every stall now (those requests get their usual answer); how many there were."""

        def release() -> int:
            events = list(self._stalls)
            for event in events:
                event.set()
            return len(events)

        return self._sim._call(release)

    @property
    def stalled(self) -> int:
        """How many requests are stalled now."""
        return self._sim._call(lambda: len(self._stalls))

    def clear(self) -> None:
        """Forget every fault not used up (and every other kmock reaction); end stalls."""

        def clear() -> None:
            self._sim.emulator._payloads.clear()

        self._sim._call(clear)
        self.release_stalls()

    def _on_stop(self) -> None:
        # Runs on the server loop before it shuts down: stalled handlers wake and drop their
        # connections, so shutdown does not wait for them.
        self._stopping = True
        for event in list(self._stalls):
            event.set()

    def _on_start(self) -> None:
        self._stopping = False


async def _real_answer(em: Any, request: kmock.Request) -> bytes:
    """The body the emulated API would send for a request that is not a stream."""
    raw = request._raw_request
    assert raw is not None
    streaming = (
        request.action == kmock.action.WATCH
        or request.subresource in ("exec", "attach", "portforward")
        or raw.query.get("follow") in ("true", "1")
    )
    if streaming:
        return b'{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x"}}}\n'
    record = em.record_for(raw)
    user = (record.user if record is not None else None) or "system:anonymous"
    try:
        response = await em._dispatch(raw, request, user)
    except ApiError as e:
        response = e.response()
    body = response.body if isinstance(response, web.Response) else None
    return bytes(body) if isinstance(body, (bytes, bytearray)) else b""


__all__ = ["LOGIN_PAGE", "PLAIN_TEXTS", "ResponseFaults", "drop_connection"]
