"""Websocket client masking (RFC 6455) at the sizes a copy into the pod sends: one stdin
frame (65,532 payload bytes) and one chunk of 16 frames (~1 MiB, what `copy` writes at a
time), by each way there is:

- nsightlab's own (execstream: four byte translations of every fourth byte, in place;
  for a chunk, `ExecSession.write_stdin` itself, on a socket that drops the bytes),
- numpy (a 32-bit XOR; for a chunk, the whole-chunk layout nsightlab used before),
- a big integer XOR over the frame (int.from_bytes),
- websocket-client's `ABNF.mask`.

    python bench/ws_masking.py [--repeat 7]

Prints the best time of each (microseconds), its rate, and the CPU a 256 MiB copy would
spend masking that way. numpy's row needs numpy installed (it is not a dependency).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nsightlab.cluster.execstream import (
    STDIN,
    STDIN_FRAME,
    ExecSession,
    _frame_head,
    _mask_in_place,
)

FRAME = STDIN_FRAME + 1  # a stdin frame's payload: the channel byte and the data
CHUNK_FRAMES = 16


def best(fn: Callable[[], object], repeat: int, inner: int) -> float:
    """The best of `repeat` timings of `inner` calls, per call, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - start) / inner)
    return min(times)


def frame_ways(payload: bytes, key: bytes) -> dict[str, Callable[[], object]]:
    """One frame's payload masked each way, into a new buffer."""

    def translate() -> bytearray:
        out = bytearray(payload)
        _mask_in_place(out, 0, len(out), key)
        return out

    def big_int() -> bytes:
        n = len(payload)
        repeated = int.from_bytes(key * (n // 4) + key[: n % 4], "little")
        return (int.from_bytes(payload, "little") ^ repeated).to_bytes(n, "little")

    ways: dict[str, Callable[[], object]] = {"nsightlab (byte translation)": translate, "big-int XOR": big_int}
    try:
        import numpy as np

        def numpy_xor() -> bytearray:
            out = bytearray(len(payload))
            np.bitwise_xor(
                np.frombuffer(payload, dtype=np.uint32),
                np.frombuffer(key, dtype=np.uint32)[0],
                out=np.frombuffer(out, dtype=np.uint32),
            )
            return out

        ways["numpy (32-bit XOR)"] = numpy_xor
    except ImportError:
        pass
    try:
        from websocket import ABNF

        ways["websocket-client ABNF.mask"] = lambda: ABNF.mask(key, payload)
    except ImportError:
        pass
    return ways


class _Drop:
    """A socket that drops what it is sent."""

    def sendall(self, data: bytes | bytearray) -> None:
        pass


class _WebSocket:
    sock = _Drop()


def chunk_ways(data: bytes) -> dict[str, Callable[[], object]]:
    """A chunk of 16 stdin frames, laid out and masked each way."""
    session = ExecSession(_WebSocket(), "v5.channel.k8s.io", "bench")
    ways: dict[str, Callable[[], object]] = {
        "nsightlab write_stdin (byte translation)": lambda: session.write_stdin(data)
    }
    try:
        import numpy as np

        whole = 4 + 4 + FRAME
        out = bytearray(CHUNK_FRAMES * whole)
        head = np.frombuffer(_frame_head(0x2, FRAME), dtype=np.uint8)

        def numpy_layout() -> None:  # the layout nsightlab used before (cluster/kube.py, write_stdin)
            keys = np.frombuffer(os.urandom(4 * CHUNK_FRAMES), dtype=np.uint8).reshape(CHUNK_FRAMES, 4)
            frames = np.frombuffer(out, dtype=np.uint8).reshape(CHUNK_FRAMES, whole)
            frames[:, :4] = head
            frames[:, 4:8] = keys
            frames[:, 8] = STDIN
            frames[:, 9:] = np.frombuffer(data, dtype=np.uint8).reshape(CHUNK_FRAMES, STDIN_FRAME)
            words = np.frombuffer(out, dtype=np.uint32).reshape(CHUNK_FRAMES, whole // 4)
            words[:, 2:] ^= keys.copy().view(np.uint32)

        ways["numpy whole-chunk layout"] = numpy_layout
    except ImportError:
        pass
    return ways


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    payload, key = os.urandom(FRAME), os.urandom(4)
    data = os.urandom(CHUNK_FRAMES * STDIN_FRAME)
    print(f"{'way':<44} {'best':>10} {'GB/s':>6} {'256 MiB':>8}")
    for title, ways, size, inner in (
        (f"one frame ({FRAME:,} bytes)", frame_ways(payload, key), FRAME, 200),
        (f"one chunk ({CHUNK_FRAMES} frames, {len(data):,} bytes)", chunk_ways(data), len(data), 20),
    ):
        print(title)
        for name, fn in ways.items():
            t = best(fn, args.repeat, inner)
            print(f"  {name:<42} {t * 1e6:>8.0f}us {size / t / 1e9:>6.2f} {t * (256 << 20) / size:>7.3f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
