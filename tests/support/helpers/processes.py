"""Waiting on conditions and finding processes, for tests that run commands as processes."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from kafka_share_eos.proving_ground.launchers.processes import (
    live_processes,
    processes_mentioning,
)

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float, what: str) -> T:
    """Poll ``condition`` until it returns something true and return that; fail naming ``what``
    after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)
    return value


def group_members(pgid: int) -> dict[int, str]:
    """The processes of process group ``pgid`` that have not exited: pid to command name."""
    return {process.pid: process.info["name"] for process in live_processes(group=pgid)}


def port_open(address: str) -> bool:
    """Whether something accepts TCP connections at ``host:port``."""
    host, port = address.rsplit(":", 1)
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex((host, int(port))) == 0


def ctrl_c_at_its_default() -> None:
    """A child's ``preexec_fn``, as in a terminal's foreground: a test run in the background
    would hand the child a SIGINT that is ignored, and Python then never raises
    KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def server_temp(prefix: str) -> Iterator[Path]:
    """A temp directory for a command's throwaway servers, which their user can reach (pytest's
    are private to root when the suite runs as root). A server a failed test left there is shut
    down (SIGQUIT: immediate shutdown)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    yield path
    for postmaster in processes_mentioning(f"-D {path}/"):
        os.kill(postmaster, signal.SIGQUIT)
    wait_until(lambda: not processes_mentioning(f"-D {path}/"), 30, "the left server to stop")
    shutil.rmtree(path, ignore_errors=True)
