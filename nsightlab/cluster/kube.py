"""`Kube`: the typed calls nsightlab makes on one context's API server (pods, nodes,
Events, Jobs, ConfigMaps, access reviews, watches, exec), on the request client.

A `Kube` is built for one explicit, already-checked context (see safety.py). Its rooms:
the connection (connection.py: the plain path or the kubernetes client's loader), the
request client it is (client.py: every HTTP call, retries, the request timeout, paging,
watches), the request paths (apipaths.py), the errors and what answers mean
(answers.py), and exec streams (execstream.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

from nsightlab.cluster import apipaths
from nsightlab.cluster.answers import NotFound
from nsightlab.cluster.client import Client, stream_timeout
from nsightlab.cluster.execstream import ExecSession, open_session
from nsightlab.errors import ClusterError


class Kube(Client):
    """A client for one context. Methods return plain JSON dicts."""

    # ------------------------------------------------------------------ reads

    def version(self) -> dict[str, Any]:
        result: dict[str, Any] = self.get_json(apipaths.version(), what="read the server version")
        return result

    def list_nodes(self, *, label_selector: str | None = None) -> list[dict[str, Any]]:
        return self.list_all(apipaths.nodes(), what="list nodes", query={"labelSelector": label_selector})[0]

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
            return self.list_all(apipaths.all_pods(), what="list pods in all namespaces", query=query)
        return self.list_all(apipaths.pods(namespace), what=f"list pods in namespace {namespace}", query=query)

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(apipaths.pod(namespace, name), f"get pod {name} in namespace {namespace}")

    def get_node(self, name: str) -> dict[str, Any] | None:
        return self._get(apipaths.node(name), f"get node {name}")

    def list_events(self, namespace: str, *, field_selector: str | None = None) -> list[dict[str, Any]]:
        """core/v1 Events of one namespace (e.g. `involvedObject.name=POD`)."""
        return self.list_all(
            apipaths.events(namespace),
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
        resp = self.request("GET", apipaths.pod_log(namespace, name), what=what, query=query, text=True)
        if follow:  # its headers came within the request timeout; the lines then come when they come
            stream_timeout(resp, None)
        try:
            for chunk in resp.stream(64 * 1024, decode_content=True):
                if chunk:
                    yield chunk
        except (urllib3.exceptions.ProtocolError, urllib3.exceptions.ReadTimeoutError, OSError) as e:
            raise self.unreachable(what, e) from None
        finally:
            resp.release_conn()

    def namespace_exists(self, name: str) -> bool:
        """Whether the Namespace object exists. Reading it is a cluster-wide permission
        most lab users lack (Forbidden): the lab never needs it, a pod's create answers
        404 in a missing namespace."""
        try:
            self.get_json(apipaths.namespace(name), what=f"get namespace {name}")
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
            resp = self.request("POST", apipaths.pods(namespace), what=what, body=manifest)
        except NotFound:
            raise self.missing_namespace(namespace) from None
        result: dict[str, Any] = self.read_json(resp, what)
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
            self.read_json(self.request("DELETE", apipaths.pod(namespace, name), what=what, body=body), what)
        except NotFound:
            return False
        return True

    # ------------------------------------------------------------------ Jobs and ConfigMaps (fleets)

    def _create(self, path: str, kind: str, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        name = manifest.get("metadata", {}).get("name", "?")
        what = f"create {kind} {name} in namespace {namespace}"
        result: dict[str, Any] = self.read_json(self.request("POST", path, what=what, body=manifest), what)
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
            self.read_json(self.request("DELETE", path, what=what, body=body), what)
        except NotFound:
            return False
        return True

    def create_job(self, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        return self._create(apipaths.jobs(namespace), "job", namespace, manifest)

    def get_job(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(apipaths.job(namespace, name), f"get job {name} in namespace {namespace}")

    def list_jobs(self, namespace: str, *, label_selector: str | None = None) -> tuple[list[dict[str, Any]], str]:
        """Jobs of one namespace, and the list's resourceVersion (to watch from)."""
        return self.list_all(
            apipaths.jobs(namespace),
            what=f"list jobs in namespace {namespace}",
            query={"labelSelector": label_selector},
        )

    def delete_job(self, namespace: str, name: str, *, uid: str | None = None, propagation: str = "Background") -> bool:
        """Delete a Job (only the one with `uid`, when given) and, by default, its pods after
        it (batch/v1 would orphan them when no policy is sent). False if it was already gone."""
        return self._delete(
            apipaths.job(namespace, name),
            f"delete job {name} in namespace {namespace}",
            uid=uid,
            propagation=propagation,
        )

    def create_configmap(self, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        return self._create(apipaths.configmaps(namespace), "configmap", namespace, manifest)

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(apipaths.configmap(namespace, name), f"get configmap {name} in namespace {namespace}")

    def list_configmaps(self, namespace: str, *, label_selector: str | None = None) -> list[dict[str, Any]]:
        return self.list_all(
            apipaths.configmaps(namespace),
            what=f"list configmaps in namespace {namespace}",
            query={"labelSelector": label_selector},
        )[0]

    def delete_configmap(self, namespace: str, name: str, *, uid: str | None = None) -> bool:
        return self._delete(
            apipaths.configmap(namespace, name),
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
        data = self.read_json(self.request("POST", apipaths.access_reviews(), what=what, body=body), what)
        status = data.get("status") or {}
        return bool(status.get("allowed")), str(status.get("reason") or status.get("evaluationError") or "")

    # ------------------------------------------------------------------ watches

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
        yield from self.watch(
            apipaths.pods(namespace), f"watch pods in namespace {namespace}", query, timeout_seconds, on_open
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
        yield from self.watch(
            apipaths.jobs(namespace), f"watch jobs in namespace {namespace}", query, timeout_seconds, on_open
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
        yield from self.watch(
            apipaths.events(namespace), f"watch events in namespace {namespace}", query, timeout_seconds
        )

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
        """Open an exec websocket (v5, else v4 channel protocol) into a pod (see
        execstream.open_session: the handshake's refusals are translated)."""
        query: list[tuple[str, str]] = [("command", a) for a in argv]
        query += [("stdin", _bool(stdin)), ("stdout", "true"), ("stderr", _bool(not tty)), ("tty", _bool(tty))]
        if container:
            query.append(("container", container))
        url = self.connection.websocket_url(apipaths.pod_exec(namespace, pod) + "?" + urlencode(query))
        return open_session(
            url,
            authorization=self.connection.authorization(),
            sslopt=self.connection.websocket_tls() if url.startswith("wss://") else {},
            timeout=self.timeout[1],
            peer=self.peer,
            what=f"exec into pod {pod} in namespace {namespace}",
        )


def _bool(value: bool) -> str:
    return "true" if value else "false"
