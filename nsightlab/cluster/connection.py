"""The connection to one context's API server: one object, however its credentials are
read.

A context with plain credentials (a CA, client certificates, a bearer token: see
kubeconfig.plain_connection, tested to read them as the client's loader does) is
connected with its own TLS context and urllib3 pool; any other (exec credential plugins,
auth providers, proxies...) through the kubernetes client's own kubeconfig loader and its
connection pool. Importing the client costs a tenth of a second on every command, which
the plain path saves. Either way a `Connection` gives the same four things: the server's
address, a pool to send requests on, the Authorization header, and the TLS options of an
exec websocket.

This is the ONLY module that imports `kubernetes`. A connection is made for one explicit,
already-checked context (see safety.py), never the client's global default configuration,
never the kubeconfig's current-context.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import warnings
from typing import TYPE_CHECKING, Any

from nsightlab.cluster.kubeconfig import plain_connection
from nsightlab.errors import ClusterError

if TYPE_CHECKING:
    import ssl

    from nsightlab.cluster.kubeconfig import PlainConnection
    from nsightlab.cluster.safety import ResolvedContext

AUTH_RECHECK = 5.0  # seconds an Authorization header from the loader is reused (see Connection.authorization)


class Connection:
    """Where one context's requests go and how: `server`, `pool` (a urllib3 PoolManager
    set up with the context's TLS), `authorization()`, `websocket_tls()`.

    `api_client` is the kubernetes client's ApiClient when the context went through its
    loader, None on the plain path."""

    def __init__(
        self,
        server: str,
        pool: Any,
        *,
        token: str | None = None,
        tls: ssl.SSLContext | None = None,
        server_name: str | None = None,
        api_client: Any = None,
    ) -> None:
        self.server = server
        self.pool = pool
        self.api_client = api_client
        self._token = token
        self._tls = tls
        self._server_name = server_name
        self._auth_cache: tuple[float, str | None] | None = None

    def authorization(self) -> str | None:
        """The Authorization header: the context's token; through the loader, its auth
        settings, asked again at most every AUTH_RECHECK seconds.

        Asking runs the loader's refresh hook, which re-reads the credentials (and
        re-resolves proxies) on every call: a fifth of a millisecond, paid on each of the
        dozens of pages of a big list. The loader renews a token five minutes before it
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

    def websocket_url(self, path: str) -> str:
        """The ws:// or wss:// address of a path on this server."""
        base = self.server
        if base.startswith("https://"):
            return "wss://" + base[len("https://") :] + path
        if base.startswith("http://"):
            return "ws://" + base[len("http://") :] + path
        return base + path

    def websocket_tls(self) -> dict[str, Any]:
        """TLS options for an exec websocket (websocket-client's `sslopt`): the plain
        connection's own context, else the loader's settings."""
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

    def close(self) -> None:
        if self.api_client is not None:
            self.api_client.close()
        else:
            self.pool.clear()


def connect(ctx: ResolvedContext) -> Connection:
    """The connection for a checked context: plain when its kubeconfig entries allow,
    else through the kubernetes client's loader. A context that cannot be used (bad
    certificates, a broken credentials plugin) is a ClusterError (exit 4)."""
    plain = plain_connection(ctx.kubeconfig, ctx.name)
    if plain is not None:
        return _plain(ctx, plain)
    return _through_loader(ctx)


def _plain(ctx: ResolvedContext, plain: PlainConnection) -> Connection:
    """A context with a CA, client certificates and a token only: the same settings the
    kubernetes client's loader would make (kubeconfig.plain_connection reads them as it
    does), without importing it."""
    # loaded by the commands that connect; --help and offline commands never pay for it
    import urllib3

    tls = None
    pool_args: dict[str, Any] = {"retries": 1, "maxsize": 4}  # one quick retry, as with the loader
    if plain.server.startswith("https"):
        try:
            tls = _tls_context(plain)
        except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
            raise ClusterError(
                f"cannot use context '{ctx.name}' from {ctx.kubeconfig.path_arg()}: bad certificate or key ({e})",
                hint="Check the kubeconfig's certificate-authority and client-certificate/client-key for that context.",
            ) from None
        pool_args.update(ssl_context=tls, cert_reqs="CERT_REQUIRED" if plain.verify else "CERT_NONE")
        if not plain.verify:
            _quiet_insecure_warnings()
        if plain.server_name:
            pool_args["server_hostname"] = plain.server_name
    return Connection(
        plain.server,
        urllib3.PoolManager(num_pools=2, **pool_args),
        token=plain.token,
        tls=tls,
        server_name=plain.server_name,
    )


def _through_loader(ctx: ResolvedContext) -> Connection:
    """Anything else (exec credential plugins, auth providers, proxies...): the kubernetes
    client's own loader, and its connection pool."""
    # the kubernetes client's loader costs about 0.1 s: only contexts that need it load it
    from kubernetes.client import Configuration
    from kubernetes.config import ConfigException, new_client_from_config

    configuration = Configuration()
    # One quick retry for a refused connection, then a clear error: never hang.
    configuration.retries = 1
    try:
        api_client = new_client_from_config(
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
    if not api_client.configuration.verify_ssl:
        _quiet_insecure_warnings()
    return Connection(
        api_client.configuration.host.rstrip("/"), api_client.rest_client.pool_manager, api_client=api_client
    )


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
