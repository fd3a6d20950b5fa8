"""The one seam between nsightlab and a Kubernetes API server.

This is the ONLY module that imports `kubernetes`. A `Kube` is built for one explicit,
already-checked context (see safety.py) with its own ApiClient (never the client's
global default configuration, never the kubeconfig's current-context). Responses are
decoded from JSON into plain dicts (`_preload_content=False`): no model objects, which
is several times faster on large lists. Every `ApiException` and transport error is
translated here into a `ClusterError` (exit 4) whose message names what was being done.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from nsightlab.errors import ClusterError, NsightlabError

if TYPE_CHECKING:
    from nsightlab.safety import ResolvedContext

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 60.0
PAGE_SIZE = 500


class NotFound(ClusterError):
    """The object (or its namespace) does not exist."""


class Conflict(ClusterError):
    """409: already exists, or a precondition (uid) did not hold."""


class Gone(ClusterError):
    """410: a watch's resourceVersion is too old; list again."""


def _message_of(body: Any) -> str:
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            data = json.loads(body)
        except ValueError:
            return body.strip()[:300]
        if isinstance(data, dict) and data.get("message"):
            return str(data["message"])
        return body.strip()[:300]
    return ""


class Kube:
    """A client for one context. Methods return plain JSON dicts."""

    def __init__(self, ctx: ResolvedContext, *, connect_timeout: float = CONNECT_TIMEOUT, read_timeout: float = READ_TIMEOUT) -> None:
        from kubernetes import client
        from kubernetes.config import ConfigException, new_client_from_config

        self.ctx = ctx
        self.namespace = ctx.namespace
        self.timeout = (connect_timeout, read_timeout)
        configuration = client.Configuration()
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
        self.server: str = self.api_client.configuration.host
        self.core = client.CoreV1Api(self.api_client)
        self._client_mod = client

    def close(self) -> None:
        self.api_client.close()

    def __enter__(self) -> Kube:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the seam

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, stream: bool = False, timeout: Any = None, **kwargs: Any) -> Any:
        """Call one API method with raw content; translate every failure."""
        import urllib3
        from kubernetes.client.exceptions import ApiException

        try:
            return fn(*args, _preload_content=False, _request_timeout=timeout or self.timeout, **kwargs)
        except ApiException as e:
            raise self._translate(what, e) from None
        except urllib3.exceptions.MaxRetryError as e:
            raise self._unreachable(what, e.reason) from None
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise self._unreachable(what, e) from None

    def _unreachable(self, what: str, reason: object) -> ClusterError:
        text = str(reason)
        if "CERTIFICATE_VERIFY_FAILED" in text or "SSLError" in type(reason).__name__:
            return ClusterError(
                f"TLS verification failed for {self.server} while trying to {what}",
                hint="Check certificate-authority in the kubeconfig for this context.",
            )
        if "timed out" in text.lower() or "Timeout" in type(reason).__name__:
            detail = "timed out"
        elif "refused" in text.lower():
            detail = "connection refused"
        else:
            detail = text.split(": ", 1)[-1][:120] or type(reason).__name__
        return ClusterError(
            f"cannot reach the API server {self.server} of context '{self.ctx.name}' ({detail}) while trying to {what}",
            hint="Check your network/VPN and that the cluster is up.",
        )

    def _translate(self, what: str, e: Any) -> ClusterError:
        status = int(getattr(e, "status", 0) or 0)
        message = _message_of(getattr(e, "body", None)) or str(getattr(e, "reason", "") or "")
        if status == 0:
            return self._unreachable(what, message or e)
        if status == 401:
            return ClusterError(
                f"the API server rejected our credentials (401 Unauthorized) while trying to {what} on context '{self.ctx.name}'",
                hint="Log in again (e.g. refresh your cloud credentials) and check the user of that context.",
            )
        if status == 403:
            return ClusterError(
                f"forbidden: cannot {what} ({message})",
                hint="Ask the cluster admins for that permission, or run `nsightlab doctor` to see what you may do.",
            )
        if status == 404:
            return NotFound(f"not found while trying to {what}: {message}")
        if status == 409:
            return Conflict(f"conflict while trying to {what}: {message}")
        if status == 410:
            return Gone(f"{what}: {message or 'resource version too old'}")
        return ClusterError(f"the API server answered {status} while trying to {what}: {message}")

    @staticmethod
    def _decode(resp: Any) -> Any:
        try:
            data = resp.data
        finally:
            resp.release_conn()
        return json.loads(data)

    # ------------------------------------------------------------------ reads

    def version(self) -> dict[str, Any]:
        api = self._client_mod.VersionApi(self.api_client)
        result: dict[str, Any] = self._decode(self._call("read the server version", api.get_code))
        return result

    def _list(self, what: str, fn: Callable[..., Any], *args: Any, page_size: int = PAGE_SIZE, **kwargs: Any) -> tuple[list[dict[str, Any]], str]:
        items: list[dict[str, Any]] = []
        cont: str | None = None
        rv = ""
        while True:
            extra: dict[str, Any] = {"_continue": cont} if cont else {}
            page = self._decode(self._call(what, fn, *args, limit=page_size, **extra, **kwargs))
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            rv = str(meta.get("resourceVersion") or rv)
            cont = meta.get("continue")
            if not cont:
                return items, rv

    def list_nodes(self, *, label_selector: str | None = None) -> list[dict[str, Any]]:
        kw: dict[str, Any] = {"label_selector": label_selector} if label_selector else {}
        return self._list("list nodes", self.core.list_node, **kw)[0]

    def list_pods(
        self,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        """Pods of one namespace (or all, when namespace is None), and the list's resourceVersion."""
        kw: dict[str, Any] = {}
        if label_selector:
            kw["label_selector"] = label_selector
        if field_selector:
            kw["field_selector"] = field_selector
        if namespace is None:
            return self._list("list pods in all namespaces", self.core.list_pod_for_all_namespaces, **kw)
        return self._list(f"list pods in namespace {namespace}", self.core.list_namespaced_pod, namespace, **kw)

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = self._decode(self._call(f"get pod {name} in namespace {namespace}", self.core.read_namespaced_pod, name, namespace))
        except NotFound:
            return None
        return result

    def get_node(self, name: str) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = self._decode(self._call(f"get node {name}", self.core.read_node, name))
        except NotFound:
            return None
        return result

    def namespace_exists(self, name: str) -> bool:
        try:
            self._decode(self._call(f"get namespace {name}", self.core.read_namespace, name))
        except NotFound:
            return False
        return True

    def require_namespace(self, name: str) -> None:
        if not self.namespace_exists(name):
            raise ClusterError(
                f"namespace '{name}' does not exist on context '{self.ctx.name}'",
                hint="Pass --namespace NS, or set the namespace of the alias in config.yaml.",
            )

    def list_events(self, namespace: str, *, field_selector: str | None = None) -> list[dict[str, Any]]:
        kw: dict[str, Any] = {"field_selector": field_selector} if field_selector else {}
        return self._list(f"list events in namespace {namespace}", self.core.list_namespaced_event, namespace, **kw)[0]

    # ------------------------------------------------------------------ changes

    def create_pod(self, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        name = manifest.get("metadata", {}).get("name", "?")
        result: dict[str, Any] = self._decode(
            self._call(f"create pod {name} in namespace {namespace}", self.core.create_namespaced_pod, namespace, manifest)
        )
        return result

    def delete_pod(self, namespace: str, name: str, *, uid: str | None = None, grace_seconds: int | None = None) -> bool:
        """Delete a pod (only the one with `uid`, when given). False if it was already gone."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        try:
            self._decode(self._call(f"delete pod {name} in namespace {namespace}", self.core.delete_namespaced_pod, name, namespace, body=body))
        except NotFound:
            return False
        return True

    def access_review(self, verb: str, resource: str, namespace: str | None, *, subresource: str | None = None, group: str = "") -> tuple[bool, str]:
        """SelfSubjectAccessReview: may the current user do this? (allowed, reason)."""
        api = self._client_mod.AuthorizationV1Api(self.api_client)
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
        data = self._decode(self._call(what, api.create_self_subject_access_review, body))
        status = data.get("status") or {}
        return bool(status.get("allowed")), str(status.get("reason") or status.get("evaluationError") or "")

    # ------------------------------------------------------------------ watch

    def watch_pods(
        self,
        namespace: str,
        *,
        field_selector: str | None = None,
        label_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int = 60,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield (event type, object) from one watch request until the server ends it."""
        kw: dict[str, Any] = {"watch": True, "timeout_seconds": timeout_seconds, "allow_watch_bookmarks": True}
        if field_selector:
            kw["field_selector"] = field_selector
        if label_selector:
            kw["label_selector"] = label_selector
        if resource_version:
            kw["resource_version"] = resource_version
        resp = self._call(
            f"watch pods in namespace {namespace}",
            self.core.list_namespaced_pod,
            namespace,
            timeout=(self.timeout[0], timeout_seconds + 15),
            **kw,
        )
        yield from self._events(resp, f"watch pods in namespace {namespace}")

    def watch_events(
        self,
        namespace: str,
        *,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int = 60,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        kw: dict[str, Any] = {"watch": True, "timeout_seconds": timeout_seconds}
        if field_selector:
            kw["field_selector"] = field_selector
        if resource_version:
            kw["resource_version"] = resource_version
        resp = self._call(
            f"watch events in namespace {namespace}",
            self.core.list_namespaced_event,
            namespace,
            timeout=(self.timeout[0], timeout_seconds + 15),
            **kw,
        )
        yield from self._events(resp, f"watch events in namespace {namespace}")

    def _events(self, resp: Any, what: str) -> Iterator[tuple[str, dict[str, Any]]]:
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

    @staticmethod
    def _event(line: bytes, what: str) -> tuple[str, dict[str, Any]]:
        event = json.loads(line)
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
        import ssl
        from urllib.parse import urlencode

        import websocket

        cfg = self.api_client.configuration
        query: list[tuple[str, str]] = [("command", a) for a in argv]
        query += [("stdin", _bool(stdin)), ("stdout", "true"), ("stderr", _bool(not tty)), ("tty", _bool(tty))]
        if container:
            query.append(("container", container))
        base = cfg.host.rstrip("/")
        if base.startswith("https://"):
            url = "wss://" + base[len("https://") :]
        elif base.startswith("http://"):
            url = "ws://" + base[len("http://") :]
        else:
            url = base
        url += f"/api/v1/namespaces/{namespace}/pods/{pod}/exec?" + urlencode(query)
        headers = []
        auth = cfg.auth_settings().get("BearerToken")  # runs the exec plugin's refresh hook
        if auth and auth.get("value"):
            headers.append(f"Authorization: {auth['value']}")
        sslopt: dict[str, Any]
        if url.startswith("wss://") and cfg.verify_ssl:
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
        what = f"exec into pod {pod} in namespace {namespace}"
        ws = websocket.WebSocket(sslopt=sslopt, skip_utf8_validation=True, enable_multithread=True)
        try:
            ws.connect(url, header=headers, subprotocols=[V5, V4], timeout=self.timeout[0])
        except websocket.WebSocketBadStatusException as e:
            raise self._exec_refused(what, e.status_code, e.resp_body) from None
        except (websocket.WebSocketException, OSError) as e:
            raise self._unreachable(what, e) from None
        ws.settimeout(None)
        return ExecSession(ws, ws.subprotocol or V4, what)

    def _exec_refused(self, what: str, status: int, body: Any) -> NsightlabError:
        from nsightlab.errors import PodNotReadyError

        message = _message_of(body)
        if status == 400:
            return PodNotReadyError(f"cannot {what}: {message or 'the pod is not running'}", hint="Check it with `nsightlab status`.")
        if status == 404:
            return NotFound(f"cannot {what}: {message or 'no such pod'}", hint="The pod is gone; create a new one with `nsightlab create`.")
        if status == 401:
            return self._translate(what, _Status(401, message))
        if status == 403:
            return self._translate(what, _Status(403, message))
        return ClusterError(f"cannot {what}: the API server answered {status}: {message}")

    def exec_client(self) -> Any:
        """A separate ApiClient for `kubernetes.stream.stream`, which rewires the client it is given."""
        from kubernetes.config import new_client_from_config

        configuration = self._client_mod.Configuration()
        configuration.retries = 1
        return new_client_from_config(
            config_file=self.ctx.kubeconfig.path_arg(),
            context=self.ctx.name,
            persist_config=False,
            client_configuration=configuration,
        )


V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


def _bool(value: bool) -> str:
    return "true" if value else "false"


class _Status:
    """Enough of an ApiException for `_translate`."""

    def __init__(self, status: int, body: str) -> None:
        self.status = status
        self.body = body
        self.reason = ""


class ExecSession:
    """One exec: write stdin, read (channel, bytes) frames, resize, get the exit code."""

    def __init__(self, ws: Any, protocol: str, what: str) -> None:
        self._ws = ws
        self.protocol = protocol
        self.what = what
        self._status: dict[str, Any] | None = None
        self._open = True

    @property
    def can_close_stdin(self) -> bool:
        """v5 can signal end of stdin; v4 cannot (the caller must bound its input)."""
        return self.protocol == V5

    def write_stdin(self, data: bytes) -> None:
        import websocket

        try:
            self._ws.send_bytes(bytes([STDIN]) + data)
        except (websocket.WebSocketException, OSError) as e:
            self._open = False
            raise ClusterError(f"the exec stream closed while sending data ({self.what}): {e}") from None

    def close_stdin(self) -> None:
        if self.can_close_stdin and self._open:
            self.write_raw(bytes([CLOSE, STDIN]))

    def write_raw(self, payload: bytes) -> None:
        import websocket

        try:
            self._ws.send_bytes(payload)
        except (websocket.WebSocketException, OSError) as e:
            self._open = False
            raise ClusterError(f"the exec stream closed ({self.what}): {e}") from None

    def resize(self, width: int, height: int) -> None:
        self.write_raw(bytes([RESIZE]) + json.dumps({"Width": width, "Height": height}).encode())

    def fileno(self) -> int:
        return int(self._ws.sock.fileno())

    def pending(self) -> bool:
        """Bytes already decrypted and buffered (TLS) that select() would not see."""
        import ssl

        sock = self._ws.sock
        return isinstance(sock, ssl.SSLSocket) and sock.pending() > 0

    def read(self, timeout: float | None = None) -> tuple[int, bytes] | None:
        """The next data frame as (channel, payload); None at the end of the stream.

        Raises TimeoutError when `timeout` passes without a frame. Status frames
        (channel 3) are kept for `returncode` and not returned.
        """
        import websocket

        while self._open:
            self._ws.settimeout(timeout)
            try:
                opcode, frame = self._ws.recv_data_frame(True)
            except websocket.WebSocketTimeoutException:
                raise TimeoutError(self.what) from None
            except (websocket.WebSocketConnectionClosedException, OSError):
                self._open = False
                return None
            except websocket.WebSocketException:
                self._open = False
                return None
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                self._open = False
                return None
            if opcode not in (websocket.ABNF.OPCODE_BINARY, websocket.ABNF.OPCODE_TEXT):
                continue
            data = frame.data if isinstance(frame.data, bytes) else str(frame.data).encode()
            if not data:
                continue
            channel, payload = data[0], data[1:]
            if channel == ERROR:
                try:
                    self._status = json.loads(payload.decode("utf-8", "replace"))
                except ValueError:
                    self._status = {"status": "Failure", "message": payload.decode("utf-8", "replace")}
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
