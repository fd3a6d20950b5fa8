"""Lines that libraries print on their own, which say nothing to the person watching.

Kineto (the C++ library under `torch.profiler`) writes two lines to stderr around every
profile, and nothing in Python can silence them (lab_scripts/README.md documents them):

    USDT:2026-12-02 06:38:58 22059:22059 SyncActivityProfilerHandler.cpp:52] profiler_start
    USDT:2026-12-02 06:38:58 22059:22059 SyncActivityProfilerHandler.cpp:59] profiler_stop

They stay in a run's raw log (what came back, byte for byte) and out of the terminal.
Pure; no I/O.
"""

from __future__ import annotations

import re

# date, time, process id:thread id; the source line numbers change between torch versions
KINETO_USDT = re.compile(
    r"^USDT:\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \d+:\d+ SyncActivityProfilerHandler\.cpp:\d+\] profiler_(start|stop)$"
)


def is_library_noise(line: str) -> bool:
    """True for a line a library printed by itself (kineto's profiler_start/stop)."""
    return KINETO_USDT.match(line.strip()) is not None
