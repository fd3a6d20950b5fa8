"""What an API server sent back, turned into data or into one `ClusterError` (exit 4)
that names the server and what came back; and the typed errors a caller may catch
(`NotFound`, `Conflict`, `Gone`, `Unauthorized`, `Forbidden`).

Between nsightlab and the API server there may be a load balancer, a VPN gateway or a
single sign-on proxy; any of them can answer in its own words: an HTML login page with
status 200, a plain-text 502, a connection reset, JSON cut off mid-object, nothing at all.
The request client (client.py) and the exec handshake (execstream.py) hand every answer
and every transport failure to the functions here, whichever way the connection was
made, so each ends as data or as one clear line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

from pydantic_core import from_json

from nsightlab.errors import ClusterError, NsightlabError, PodNotReadyError

MAX_RETRIES = 10  # answers with Retry-After (429, or 5xx that ask for it) tried again at most this often
DEFAULT_REQUEST_TIMEOUT = 60.0
_request_timeout: list[float | None] = [DEFAULT_REQUEST_TIMEOUT]
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_HTML_START = re.compile(rb"^\s*(<!doctype html|<html|<head|<body)", re.IGNORECASE)


def set_request_timeout(seconds: float | None) -> None:
    """How long one request may wait for its answer (None: no limit), as kubectl's
    --request-timeout; it also bounds the waits a 429 asks for. Set by the CLI for every
    command (this module is light: the CLI imports it without the client)."""
    _request_timeout[0] = seconds


def request_timeout() -> float | None:
    return _request_timeout[0]


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


@dataclass(frozen=True)
class Peer:
    """The server an answer came from, and what a message about it must say."""

    server: str
    context: str
    timeout: float | None  # the request timeout (--request-timeout), None: none
    cli_args: str = ""  # `--context X -n NS`, for a command a hint prints

    def timeout_text(self) -> str:
        return "no limit" if self.timeout is None else f"{self.timeout:g} s"


def one_line(text: str, limit: int = 200) -> str:
    """A body as part of a one-line message: whitespace runs (newlines too) become one
    space, cut at `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _mime(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def is_json_type(content_type: str | None) -> bool:
    """True for JSON (and for no content type at all: then the body decides)."""
    mime = _mime(content_type)
    return not mime or mime == "application/json" or mime.endswith("+json")


def is_text_type(content_type: str | None) -> bool:
    """True for what a pod's log may be: anything but an HTML page (a proxy's)."""
    return _mime(content_type) not in ("text/html", "application/xhtml+xml")


def describe_body(content_type: str | None, body: bytes) -> str:
    """What a body that is not the API's JSON is, in a few words."""
    mime = _mime(content_type)
    if mime in ("text/html", "application/xhtml+xml") or _HTML_START.match(body[:512]):
        title = _TITLE.search(body[:65536])
        named = f", titled '{one_line(title.group(1).decode('utf-8', 'replace'), 80)}'" if title else ""
        return f"an HTML page ({mime or 'no content type'}{named}), not JSON: a proxy or a login page?"
    text = one_line(body.decode("utf-8", "replace"), 120)
    return f"{mime or 'no content type'} ({f'{text!r}' if text else 'empty'}), not JSON"


def not_json(peer: Peer, what: str, status: int, content_type: str | None, body: bytes) -> ClusterError:
    """A 2xx answer that is not JSON: something between us and the API server answered."""
    return ClusterError(
        f"the API server {peer.server} answered with {describe_body(content_type, body)} while trying to {what} "
        f"(HTTP {status})",
        hint=f"Check the server of context '{peer.context}' in the kubeconfig, and that you are logged in to any "
        "proxy or VPN in front of it.",
    )


def decode(peer: Peer, what: str, raw: bytes) -> Any:
    """The JSON body, decoded; a body that is not whole JSON is a ClusterError."""

    try:
        return from_json(raw)
    except ValueError:
        raise malformed(peer, what, raw) from None


def malformed(peer: Peer, what: str, raw: bytes) -> ClusterError:
    if _HTML_START.match(raw[:512]):
        return not_json(peer, what, 200, None, raw)
    return ClusterError(
        f"the API server {peer.server} sent JSON that is cut off or malformed ({len(raw)} bytes) while trying to "
        f"{what}",
        hint="Try again; if it persists, check any proxy between you and the cluster.",
    )


def looks_whole(raw: bytes) -> bool:
    """A cheap test that a list page is one whole JSON object (it starts with `{` and ends
    with `}`), for pages that are scanned before, or instead of, being decoded."""
    head, tail = raw[:64].lstrip()[:1], raw[-64:].rstrip()[-1:]
    return head == b"{" and tail == b"}"


def status_of(body: bytes, content_type: str | None) -> tuple[str | None, str]:
    """(reason, message) of an error answer: the API server's Status, else a description
    of whatever else came (an HTML page, a load balancer's text)."""
    if is_json_type(content_type):
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if isinstance(data, dict) and (data.get("message") or data.get("reason")):
            return (str(data["reason"]) if data.get("reason") else None), one_line(str(data.get("message") or ""), 300)
    if not body.strip():
        return None, ""
    if not is_json_type(content_type) and _mime(content_type) == "text/plain":
        return None, one_line(body.decode("utf-8", "replace"), 300)
    return None, describe_body(content_type, body)


def retry_after(status: int, headers: Mapping[str, str]) -> float | None:
    """Seconds to wait before trying again, when the answer asks for it (429, or a 5xx
    with Retry-After, as client-go does); None when it is not to be tried again."""
    if status != 429 and not (500 <= status < 600 and headers.get("Retry-After")):
        return None
    value = (headers.get("Retry-After") or "").strip()
    if not value:
        return 1.0
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = (parsedate_to_datetime(value) - datetime.now(timezone.utc)).total_seconds()
        except (TypeError, ValueError):
            return 1.0
    if seconds != seconds:  # NaN
        return 1.0
    return min(max(seconds, 0.0), 3600.0)


def server_error(
    peer: Peer, what: str, status: int, body: bytes, content_type: str | None, *, wait: float | None
) -> ClusterError:
    """Any error status the callers do not handle themselves (they do 401, 403, 404, 409, 410)."""
    reason, message = status_of(body, content_type)
    said = f" {reason}" if reason else ""
    detail = f": {message}" if message else ""
    if status == 429:
        waited = (
            f"; it asks to wait {wait:g} s more, past the request timeout ({peer.timeout_text()})"
            if wait is not None
            else ""
        )
        return ClusterError(
            f"the API server {peer.server} is too busy to answer (429{said}{detail}) while trying to {what}{waited}",
            hint="Try again in a moment, or give it longer with --request-timeout (e.g. --request-timeout 2m).",
        )
    if 500 <= status < 600:
        return ClusterError(
            f"the API server {peer.server} answered {status}{said} while trying to {what}{detail}",
            hint="The cluster's API (or a proxy in front of it) is failing; try again in a moment.",
        )
    return ClusterError(f"the API server {peer.server} answered {status}{said} while trying to {what}{detail}")


def translate(
    peer: Peer,
    what: str,
    status: int,
    body: bytes,
    *,
    content_type: str | None = "application/json",
    wait: float | None = None,
) -> ClusterError:
    """The error for an error status: the typed ones a caller may handle (401, 403, 404,
    409, 410), else `server_error`'s line."""
    message = status_of(body, content_type)[1]
    if status == 401:
        return Unauthorized(
            f"the API server rejected our credentials (401 Unauthorized) while trying to {what} on context "
            f"'{peer.context}'",
            hint="Log in again (e.g. refresh your cloud credentials) and check the user of that context.",
        )
    if status == 403:
        refused = Forbidden(
            f"forbidden: cannot {what} ({message})",
            hint="Ask the cluster admins for that permission (docs/permissions.md has the Role the "
            f"lab needs), or run `nsightlab doctor {peer.cli_args}` to see what you may do.",
        )
        refused.what = what
        return refused
    if status == 404:
        return NotFound(f"not found while trying to {what}: {message}")
    if status == 409:
        return Conflict(f"conflict while trying to {what}: {message}")
    if status == 410:
        return Gone(f"{what}: {message or 'resource version too old'}")
    return server_error(peer, what, status, body, content_type, wait=wait)


def exec_refused(
    peer: Peer, what: str, status: int, body: Any, headers: Mapping[str, str] | None = None
) -> NsightlabError:
    """The error for an exec handshake that was answered with anything but the upgrade:
    404 (no such pod), 400 (not running), 401/403, or a page from something else."""
    raw = body if isinstance(body, bytes) else str(body or "").encode()
    ctype = {k.lower(): v for k, v in (headers or {}).items()}.get("content-type")
    if 200 <= status < 300:  # not the upgrade (101) an exec needs: something else answered
        return (
            not_json(peer, what, status, ctype, raw)
            if not is_json_type(ctype)
            else ClusterError(
                f"the API server {peer.server} answered {status} instead of starting the exec stream while "
                f"trying to {what}",
                hint="A proxy in front of the cluster may not pass websockets on.",
            )
        )
    message = status_of(raw, ctype)[1]
    if status == 400:
        return PodNotReadyError(
            f"cannot {what}: {message or 'the pod is not running'}",
            hint=f"Check it with `nsightlab status {peer.cli_args}`.",
        )
    if status == 404:
        return NotFound(
            f"cannot {what}: {message or 'no such pod'}",
            hint=f"The pod is gone; create a new one with `nsightlab create {peer.cli_args}`.",
        )
    return translate(peer, what, status, raw, content_type=ctype)


def watch_error(what: str, obj: Mapping[str, Any]) -> ClusterError:
    """The error for a watch's ERROR event: `Gone` (list again) for 410."""
    if obj.get("code") == 410:
        return Gone(f"{what}: {obj.get('message', 'resource version too old')}")
    return ClusterError(f"{what}: the server sent an error: {obj.get('message', obj)}")


def _chain(reason: object) -> list[object]:
    """The failure and what it wraps (urllib3's reason, causes, contexts, exceptions
    among the arguments), outermost first."""
    out: list[object] = []
    todo = [reason]
    while todo and len(out) < 12:
        e = todo.pop(0)
        if e is None or any(e is seen for seen in out):
            continue
        out.append(e)
        if isinstance(e, BaseException):
            todo += [getattr(e, "reason", None), e.__cause__, e.__context__]
            todo += [a for a in e.args if isinstance(a, BaseException)]
    return out


_DROPPED = {
    "ConnectionResetError",
    "ConnectionAbortedError",
    "BrokenPipeError",
    "RemoteDisconnected",
    "IncompleteRead",
    "ProtocolError",
    "SSLEOFError",
    "SSLZeroReturnError",
    "WebSocketConnectionClosedException",
}


def transport_error(peer: Peer, what: str, reason: object) -> ClusterError:
    """A request that got no (whole) answer: TLS refused, connection refused, timed out,
    reset or closed mid-answer."""
    chain = _chain(reason)
    names = {type(e).__name__ for e in chain}
    text = " ".join(str(e) for e in chain)
    low = text.lower()
    if "CERTIFICATE_VERIFY_FAILED" in text or "SSLCertVerificationError" in names:
        return ClusterError(
            f"TLS verification failed for {peer.server} while trying to {what}",
            hint="Check certificate-authority in the kubeconfig for this context.",
        )
    if "ConnectionRefusedError" in names or "refused" in low:
        detail = "connection refused"
    elif "NameResolutionError" in names or "gaierror" in names:
        detail = "its name does not resolve"
    elif "ConnectTimeoutError" in names:
        detail = "timed out"
    elif any("Timeout" in n for n in names) or "timed out" in low:
        return ClusterError(
            f"the API server {peer.server} did not answer within {peer.timeout_text()} (--request-timeout) while "
            f"trying to {what}",
            hint="Check that the cluster is healthy, or give it longer with --request-timeout (e.g. --request-timeout "
            "2m).",
        )
    elif names & _DROPPED or any(w in low for w in ("reset", "closed", "aborted", "lost", "ended")):
        why = "connection reset" if "ConnectionResetError" in names or "reset" in low else "closed the connection"
        return ClusterError(
            f"the API server {peer.server} dropped the connection without a whole answer ({why}) while trying to "
            f"{what}",
            hint="Check your network/VPN and any proxy in front of the cluster, then try again.",
        )
    else:
        detail = one_line(str(chain[-1] if chain else reason).split(": ", 1)[-1], 120) or type(reason).__name__
    return ClusterError(
        f"cannot reach the API server {peer.server} of context '{peer.context}' ({detail}) while trying to {what}",
        hint="Check your network/VPN and that the cluster is up.",
    )


def within(seconds: float | None, left: float | None) -> float | None:
    """A connect or read timeout cut to what is left of the request timeout."""
    if left is None:
        return seconds
    return left if seconds is None else min(seconds, left)


def not_connected(reason: object) -> bool:
    """The request never reached the server (refused, the name did not resolve): safe to
    send again, whatever its method. A timeout is not tried again: it has had its time."""
    # loaded by the commands that connect; --help and offline commands never pay for it
    import urllib3

    # (a connect timeout is a ConnectTimeoutError; NewConnectionError subclasses it, but is
    # raised only when the connection failed at once)
    return isinstance(reason, urllib3.exceptions.NewConnectionError)


def read(peer: Peer, what: str, resp: Any) -> bytes:
    """The whole body of a urllib3 response (released after), or a ClusterError when the
    connection breaks or stalls before it is complete."""
    # loaded by the commands that connect; --help and offline commands never pay for it
    import urllib3

    try:
        return bytes(resp.data)
    except (urllib3.exceptions.HTTPError, OSError) as e:
        raise transport_error(peer, what, e) from None
    finally:
        resp.release_conn()


def parse_duration(text: str) -> float | None:
    """`--request-timeout`: seconds ("30", "1.5") or a duration as kubectl takes it
    ("1s", "2m", "1m30s", "500ms", "1h"); 0 means no limit (None). ValueError otherwise."""
    value = text.strip().lower()
    if not value:
        raise ValueError("an empty duration")
    try:
        seconds = float(value)
    except ValueError:
        parts = re.fullmatch(r"(?:\d+(?:\.\d+)?(?:ms|h|m|s))+", value)
        if parts is None:
            raise ValueError(f"'{text}' is not a duration (e.g. 30s, 2m, 1m30s, or seconds)") from None
        units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
        seconds = sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", value))
    if seconds != seconds or seconds in (float("inf"), float("-inf")) or seconds < 0:
        raise ValueError(f"'{text}' is not a duration (e.g. 30s, 2m, 1m30s, or seconds)")
    return None if seconds == 0 else seconds
