"""Exec streams: the Kubernetes channel protocol (v5, else v4) over a websocket, framed,
masked and read here.

websocket-client makes the connection (TLS, the HTTP upgrade, the subprotocol: see
`open_session`); frames are masked, read and written here (`frame_bytes`, `ExecSession`),
straight on the socket. A copy of hundreds of MiB passes through this module, so its
reads go into reused buffers and its writes lay out many frames at once.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import threading
from typing import Any

from nsightlab.cluster import answers
from nsightlab.errors import ClusterError

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


_OP_CONT, _OP_TEXT, _OP_BIN, _OP_CLOSE, _OP_PING, _OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_RECV_SIZE = 1 << 20
_DIRECT = 1 << 16  # frames this big are received straight into their own buffer (see _direct)
# Data bytes per stdin frame: with the channel byte, just under 64 KiB (see write_stdin).
STDIN_FRAME = 65531
_STDIN_HEAD_LEN = 4


@functools.cache
def _xor_table(k: int) -> bytes:
    return bytes(b ^ k for b in range(256))


def mask_payload(key: bytes, data: bytes | bytearray | memoryview) -> bytes:
    """RFC 6455 client masking: XOR with the 4-byte key repeated."""
    out = bytearray(data)
    _mask_in_place(out, 0, len(out), key)
    return bytes(out)


def _mask_in_place(buf: bytearray, start: int, end: int, key: bytes) -> None:
    """XOR buf[start:end] with the repeated `key`, in place.

    For each of the key's four bytes, one byte translation of every fourth byte (a table
    lookup per byte, in C): about 1 GB/s, against websocket-client's own masking at about
    0.35 GB/s (bench/RESULTS.md, house-cluster: the masking measured against numpy's).
    """
    for i in range(min(4, end - start)):
        buf[start + i : end : 4] = buf[start + i : end : 4].translate(_xor_table(key[i]))


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
    if channel is not None:
        frame[at] = channel
    frame[at + (channel is not None) :] = payload
    _mask_in_place(frame, at, len(frame), mask_key)
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
        full = len(data) // STDIN_FRAME
        whole = _STDIN_HEAD_LEN + 4 + 1 + STDIN_FRAME  # header, key, channel byte, data
        view = memoryview(data)
        tail = view[full * STDIN_FRAME :]
        last = frame_bytes(_OP_BIN, tail, os.urandom(4), channel=STDIN) if tail else b""
        if len(self._outbox) != full * whole + len(last):  # reused while the sizes repeat
            self._outbox = bytearray(full * whole + len(last))
        out = self._outbox
        head = _frame_head(_OP_BIN, STDIN_FRAME + 1)
        keys = os.urandom(4 * full)
        # the whole frames laid out in one buffer, each payload (channel byte and data)
        # masked where it lies
        for j in range(full):
            at = j * whole
            key = keys[4 * j : 4 * j + 4]
            out[at : at + _STDIN_HEAD_LEN] = head
            at += _STDIN_HEAD_LEN
            out[at : at + 4] = key
            at += 4
            out[at] = STDIN
            out[at + 1 : at + 1 + STDIN_FRAME] = view[j * STDIN_FRAME : (j + 1) * STDIN_FRAME]
            _mask_in_place(out, at, at + 1 + STDIN_FRAME, key)
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


def open_session(
    url: str,
    *,
    authorization: str | None,
    sslopt: dict[str, Any],
    timeout: float | None,
    peer: answers.Peer,
    what: str,
) -> ExecSession:
    """The exec websocket at `url` (wss:// or ws://, the query with the command), opened
    and handed to an ExecSession.

    The handshake is a request like any other: its answer comes within `timeout` (the
    request timeout) or it is an error, and its refusals are translated (answers.
    exec_refused): 404 (no such pod), 400 (not running), 401/403. The socket is our own
    (websocket-client, which the kubernetes client uses too) so that frames stream
    through without being buffered in memory.
    """
    # only an exec or a copy opens a websocket
    import websocket

    headers = [f"Authorization: {authorization}"] if authorization else []
    ws = websocket.WebSocket(sslopt=sslopt, skip_utf8_validation=True, enable_multithread=True)
    try:
        ws.connect(url, header=headers, subprotocols=[V5, V4], timeout=timeout)
    except websocket.WebSocketBadStatusException as e:
        raise answers.exec_refused(peer, what, e.status_code, e.resp_body, dict(e.resp_headers or {})) from None
    except (websocket.WebSocketException, OSError) as e:
        raise answers.transport_error(peer, what, e) from None
    ws.settimeout(None)
    return ExecSession(ws, ws.subprotocol or V4, what)
