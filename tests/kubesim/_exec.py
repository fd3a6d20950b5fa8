"""``pods/exec`` over websockets, running the command as a local process in the pod's sandbox.

Subprotocols ``v5.channel.k8s.io``, ``v4.channel.k8s.io`` and the older
``channel.k8s.io`` family. Every frame starts with a channel byte: 0 stdin, 1 stdout,
2 stderr, 3 status (JSON from v4 on), 4 resize ``{"Width": w, "Height": h}``; v5 adds
``[255, channel]`` to close a channel (the client closes stdin that way). The server sends
binary frames and accepts text and binary ones.

The command runs as a subprocess in the pod's :class:`~._sandbox.Sandbox`, in its own
process group with default signal handlers; ``tty=true`` runs it under a pseudo-terminal
(resize events set the window size; ``^C`` from the client interrupts it). Output is sent
as it comes, in chunks, with backpressure, so large binary transfers stream through.
When the socket closes early the process group is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import os
import signal
import struct
import termios
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

from . import _errors
from ._errors import ApiError

if TYPE_CHECKING:
    from ._api import Route, SimEmulator
    from ._sandbox import Sandbox

Obj = dict[str, Any]

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
STDIN, STDOUT, STDERR, STATUS, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
CHUNK = 256 * 1024


def _bool(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true", "yes")


def _reset_child_signals(tty: bool) -> None:  # runs in the child, between fork and exec
    for sig in (
        signal.SIGINT,
        signal.SIGQUIT,
        signal.SIGTERM,
        signal.SIGHUP,
        signal.SIGPIPE,
        signal.SIGTSTP,
        signal.SIGTTIN,
        signal.SIGTTOU,
        signal.SIGCHLD,
        signal.SIGWINCH,
    ):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    if tty:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@dataclass(eq=False)
class DropRule:
    """Make the ``nth`` exec from now drop its socket after ``after`` bytes in one direction."""

    after: int
    nth: int = 1
    direction: str = "out"  # "out": stdout+stderr sent; "in": stdin received


@dataclass(eq=False)
class ExecSession:
    namespace: str
    pod: str
    container: str
    argv: list[str]
    tty: bool
    ws: web.WebSocketResponse
    raw: web.BaseRequest
    drop: DropRule | None = None
    bytes_out: int = 0
    bytes_in: int = 0
    process: asyncio.subprocess.Process | None = None
    dropped: bool = False
    _master: int | None = None
    _stdin_closed: bool = False
    _done: asyncio.Event = field(default_factory=asyncio.Event)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        proc = self.process
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)

    def abort(self) -> None:
        """Drop the connection without a close frame or status, as a broken network would."""
        self.dropped = True
        transport = self.raw.transport
        if transport is not None:
            transport.abort()
        self.kill()


def check_exec(pod: Obj, query: Any) -> tuple[str, list[str], bool, bool, bool, bool]:
    """The API server's checks before upgrading (raise ApiError 400/...)."""
    name = pod["metadata"]["name"]
    command = query.getall("command", [])
    stdin, stdout, stderr, tty = (_bool(query.get(k)) for k in ("stdin", "stdout", "stderr", "tty"))
    if not command:
        raise _errors.bad_request("you must specify at least one command for the container")
    if not (stdin or stdout or stderr):
        raise _errors.bad_request("you must specify at least 1 of stdin, stdout, stderr")
    if tty:
        stderr = False  # the kubelet ignores stderr with a tty (output all goes to stdout)
    spec = pod.get("spec") or {}
    containers = [c["name"] for c in spec.get("containers") or []]
    inits = [c["name"] for c in spec.get("initContainers") or []]
    container = query.get("container") or ""
    if not container:
        if len(containers) != 1:
            msg = f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
            if inits:
                msg += f" or one of the init containers: [{' '.join(inits)}]"
            raise _errors.bad_request(msg)
        container = containers[0]
    elif container not in containers and container not in inits:
        raise _errors.bad_request(f"container {container} is not valid for pod {name}")
    phase = (pod.get("status") or {}).get("phase")
    if not spec.get("nodeName"):
        raise _errors.bad_request(f"pod {name} does not have a host assigned")
    if phase in ("Succeeded", "Failed"):
        raise _errors.bad_request(f"cannot exec into a container in a completed pod; current phase is {phase}")
    status = pod.get("status") or {}
    running = False
    for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if cs.get("name") == container and "running" in (cs.get("state") or {}):
            running = True
    if not running:
        raise ApiError(400, "BadRequest", f'container not found ("{container}")')
    return container, command, stdin, stdout, stderr, tty


class ExecServer:
    """Serves exec for a :class:`SimEmulator`; sandboxes come from ``sandbox_for``."""

    def __init__(self, emulator: SimEmulator, sandbox_for: Any):
        self.emulator = emulator
        self.sandbox_for = sandbox_for
        self.sessions: set[ExecSession] = set()
        self.drop_rules: list[DropRule] = []
        self.count = 0

    def drop_all(self) -> int:
        sessions = list(self.sessions)
        for s in sessions:
            s.abort()
        return len(sessions)

    def kill_pod(self, namespace: str, pod: str) -> None:
        for s in list(self.sessions):
            if s.namespace == namespace and s.pod == pod:
                s.kill()

    def _take_drop_rule(self) -> DropRule | None:
        chosen = None
        for rule in list(self.drop_rules):
            rule.nth -= 1
            if rule.nth == 0:
                self.drop_rules.remove(rule)
                chosen = chosen or rule
        return chosen

    async def __call__(self, raw: web.BaseRequest, route: Route, sub: str, pod: Obj) -> web.StreamResponse:
        container_name, command, want_in, want_out, want_err, tty = check_exec(pod, raw.query)
        if raw.headers.get("Upgrade", "").lower() != "websocket":
            raise _errors.bad_request("Upgrade request required")
        ns, name = route.namespace or "", route.name or ""
        sandbox: Sandbox = self.sandbox_for(ns, name)
        spec = pod.get("spec") or {}
        container: Obj = next(
            (
                c
                for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])
                if c.get("name") == container_name
            ),
            {},
        )
        ws = web.WebSocketResponse(protocols=PROTOCOLS, max_msg_size=0, compress=False, timeout=2.0)
        await ws.prepare(raw)
        record = self.emulator.record_for(raw)
        if record is not None:
            record.status = 101
        self.count += 1
        session = ExecSession(ns, name, container_name, command, tty, ws, raw, drop=self._take_drop_rule())
        self.sessions.add(session)
        try:
            await self._run(session, sandbox, container, want_in, want_out, want_err)
        finally:
            self.sessions.discard(session)
            session.kill()
            # close the command's pipes now, however the session ended (even cancelled):
            # else the garbage collector finds them after the event loop is gone
            transport = getattr(session.process, "_transport", None)
            if transport is not None:
                transport.close()
            if session._master is not None:
                with contextlib.suppress(OSError):
                    asyncio.get_running_loop().remove_reader(session._master)
                    os.close(session._master)
        return ws

    async def _send(self, s: ExecSession, channel: int, data: bytes) -> None:
        if s.dropped or s.ws.closed:
            return
        if channel in (STDOUT, STDERR) and s.drop is not None and s.drop.direction == "out":
            room = s.drop.after - s.bytes_out
            if len(data) >= room:
                if room > 0:
                    await s.ws.send_bytes(bytes([channel]) + data[:room])
                    s.bytes_out += room
                    await self._flushed(s)
                s.abort()
                return
        if channel in (STDOUT, STDERR):
            s.bytes_out += len(data)
        await s.ws.send_bytes(bytes([channel]) + data)

    async def _flushed(self, s: ExecSession) -> None:
        """Wait (briefly) until what was written has left, so a drop cuts after it."""
        transport = s.raw.transport
        for _ in range(200):
            if transport is None or transport.is_closing() or transport.get_write_buffer_size() == 0:
                return
            await asyncio.sleep(0.005)

    def _status(self, s: ExecSession, code: int) -> bytes:
        if code == 0:
            return json.dumps({"metadata": {}, "status": "Success"}).encode()
        return json.dumps(
            {
                "metadata": {},
                "status": "Failure",
                "message": f"command terminated with non-zero exit code: error executing command "
                f"[{' '.join(s.argv)}], exit code {code}",
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
            }
        ).encode()

    def _status_v1(self, s: ExecSession, code: int) -> bytes:
        return b"" if code == 0 else f"command terminated with non-zero exit code: exit code {code}".encode()

    async def _run(
        self, s: ExecSession, sandbox: Sandbox, container: Obj, want_in: bool, want_out: bool, want_err: bool
    ) -> None:
        loop = asyncio.get_running_loop()
        argv = sandbox.argv(s.argv)
        env = sandbox.env(container, s.tty)
        cwd = sandbox.workdir(container)  # where a runtime starts an exec: the container's working directory
        json_status = s.ws.ws_protocol in ("v5.channel.k8s.io", "v4.channel.k8s.io")
        slave: int | None = None
        if s.dropped:
            return
        try:
            if s.tty:
                master, slave = os.openpty()
                fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
                os.set_blocking(master, False)
                s._master = master
                spawn = asyncio.ensure_future(
                    asyncio.create_subprocess_exec(
                        *argv,
                        stdin=slave,
                        stdout=slave,
                        stderr=slave,
                        cwd=str(cwd),
                        env=env,
                        start_new_session=True,
                        preexec_fn=lambda: _reset_child_signals(True),
                    )
                )
            else:
                spawn = asyncio.ensure_future(
                    asyncio.create_subprocess_exec(
                        *argv,
                        stdin=asyncio.subprocess.PIPE if want_in else asyncio.subprocess.DEVNULL,
                        stdout=asyncio.subprocess.PIPE if want_out else asyncio.subprocess.DEVNULL,
                        stderr=asyncio.subprocess.PIPE if want_err else asyncio.subprocess.DEVNULL,
                        cwd=str(cwd),
                        env=env,
                        start_new_session=True,
                        preexec_fn=lambda: _reset_child_signals(False),
                        limit=CHUNK,
                    )
                )
            try:
                proc = await asyncio.shield(spawn)
            except asyncio.CancelledError:
                # The client went away while the process was starting: do not leave it behind.
                with contextlib.suppress(Exception):
                    started = await spawn
                    s.process = started  # so that the session's end closes its pipes too
                    os.killpg(started.pid, signal.SIGKILL)
                raise
            finally:
                if slave is not None:
                    os.close(slave)
                    slave = None
        except OSError as e:
            if slave is not None:
                os.close(slave)
            why = "executable file not found in $PATH" if e.errno == errno.ENOENT else e.strerror
            message = (
                "Internal error occurred: error executing command in container: failed to exec in "
                f"container: failed to start exec: OCI runtime exec failed: exec failed: unable to start "
                f'container process: exec: "{s.argv[0]}": {why}: unknown'
            )
            status = {
                "metadata": {},
                "status": "Failure",
                "message": message,
                "reason": "InternalError",
                "details": {"causes": [{"message": message}]},
                "code": 500,
            }
            await s.ws.send_bytes(bytes([STATUS]) + (json.dumps(status).encode() if json_status else message.encode()))
            await s.ws.close()
            return
        s.process = proc
        if s.dropped:  # dropped while the process was starting
            s.kill()

        async def pump_pipe(reader: asyncio.StreamReader | None, channel: int) -> None:
            if reader is None:
                return
            while True:
                data = await reader.read(CHUNK)
                if not data:
                    return
                await self._send(s, channel, data)

        async def pump_master() -> None:
            master = s._master
            assert master is not None
            queue: asyncio.Queue[bytes] = asyncio.Queue()
            paused = False

            def readable() -> None:
                nonlocal paused
                try:
                    data = os.read(master, CHUNK)
                except BlockingIOError:
                    return
                except OSError:  # EIO: every slave end is closed, the command is gone
                    data = b""
                queue.put_nowait(data)
                if not data or queue.qsize() >= 8:
                    loop.remove_reader(master)
                    paused = bool(data)

            loop.add_reader(master, readable)
            while True:
                data = await queue.get()
                if not data:
                    return
                await self._send(s, STDOUT, data)
                if paused and queue.qsize() < 2:
                    paused = False
                    loop.add_reader(master, readable)

        async def write_stdin(data: bytes) -> None:
            if s._stdin_closed:
                return
            if s.tty and s._master is not None:
                view = memoryview(data)
                while view:
                    try:
                        n = os.write(s._master, view)
                        view = view[n:]
                    except BlockingIOError:
                        await asyncio.sleep(0.005)
                    except OSError:
                        return
            elif proc.stdin is not None:
                try:
                    proc.stdin.write(data)
                    await proc.stdin.drain()
                except (BrokenPipeError, ConnectionResetError):
                    s._stdin_closed = True

        def close_stdin() -> None:
            if s._stdin_closed:
                return
            s._stdin_closed = True
            if not s.tty and proc.stdin is not None:
                proc.stdin.close()

        def resize(payload: bytes) -> None:
            if s._master is None:
                return
            try:
                size = json.loads(payload)
                fcntl.ioctl(
                    s._master, termios.TIOCSWINSZ, struct.pack("HHHH", int(size["Height"]), int(size["Width"]), 0, 0)
                )
            except (ValueError, KeyError, TypeError, OSError):
                return

        async def pump_socket() -> None:
            async for msg in s.ws:
                if msg.type == WSMsgType.BINARY:
                    frame = bytes(msg.data)
                elif msg.type == WSMsgType.TEXT:
                    frame = str(msg.data).encode("utf-8", "surrogateescape")
                else:
                    break
                if not frame:
                    continue
                channel, payload = frame[0], frame[1:]
                if channel == STDIN:
                    if s.drop is not None and s.drop.direction == "in":
                        room = s.drop.after - s.bytes_in
                        if len(payload) >= room:
                            await write_stdin(payload[: max(room, 0)])
                            s.bytes_in += max(room, 0)
                            s.abort()
                            return
                    s.bytes_in += len(payload)
                    if payload:
                        await write_stdin(payload)
                elif channel == RESIZE:
                    resize(payload)
                elif channel == CLOSE and payload[:1] == bytes([STDIN]):
                    close_stdin()
            # The client went away (or closed the socket): end the command.
            if proc.returncode is None:
                s.kill(signal.SIGHUP)
                await asyncio.sleep(0.05)
                s.kill()

        socket_task = asyncio.create_task(pump_socket())
        if s.tty:
            outputs = [asyncio.create_task(pump_master())]
        else:
            outputs = [
                asyncio.create_task(pump_pipe(proc.stdout, STDOUT)),
                asyncio.create_task(pump_pipe(proc.stderr, STDERR)),
            ]
        try:
            await asyncio.gather(*outputs)
            code = await proc.wait()
        finally:
            for task in outputs:
                task.cancel()
            if proc.stdin is not None and not proc.stdin.is_closing():
                proc.stdin.close()  # a command that exits without reading all of stdin
        if code < 0:
            code = 128 - code
        if not s.dropped and not s.ws.closed:
            final = self._status(s, code) if json_status else self._status_v1(s, code)
            if final:
                await s.ws.send_bytes(bytes([STATUS]) + final)
            await s.ws.close()
        socket_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await socket_task
