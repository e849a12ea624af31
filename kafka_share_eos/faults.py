"""Named crash points for fault-injection tests.

Production code calls :func:`maybe_crash` at the moments where a crash is most dangerous (after a
prepare, after a decision is logged, ...). Nothing happens unless the environment variable
``KSE_CRASH_AT`` names that point (a comma-separated list names several); then the process kills
itself with SIGKILL, so no ``finally`` block, ``atexit`` hook or buffered write gets to run: the
state left behind is exactly what a power cut or an OOM kill would leave.
"""

from __future__ import annotations

import os
import signal

CRASH_AT_ENV = "KSE_CRASH_AT"


def crash_points() -> frozenset[str]:
    """The crash points enabled through ``KSE_CRASH_AT``."""
    return frozenset(p.strip() for p in os.environ.get(CRASH_AT_ENV, "").split(",") if p.strip())


def maybe_crash(point: str) -> None:
    """Kill this process with SIGKILL if ``point`` is enabled in ``KSE_CRASH_AT``."""
    if point in crash_points():
        os.kill(os.getpid(), signal.SIGKILL)
