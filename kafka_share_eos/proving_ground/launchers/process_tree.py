"""Child processes that die with the test process, however it ends.

A server the tests start (a Kafka node, a Spark daemon) must not outlive the process that
started it, even when that process is killed with SIGKILL and runs no cleanup. Linux's
``PR_SET_PDEATHSIG`` does that: the child asks, between fork and exec, to be sent SIGKILL when
its parent dies. But Linux's "parent" is the *thread* that forked the child: a node restarted
from a short-lived thread (a fault injected by a thread of its own) is killed as soon as that
thread ends. So every such child is forked by one long-lived thread, :func:`launch`'s launcher,
which lives as long as the process. A launcher's own stop is gentler: :func:`terminate` lets the
servers shut down before it kills them.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from typing import Any

from kafka_share_eos.errors import ConfigurationError

_PR_SET_PDEATHSIG = 1

STOP_GRACE_S = 10.0
"""How long :func:`terminate` lets a server shut down before it kills it."""

_Request = tuple[Sequence[str], dict[str, Any], "Future[subprocess.Popen[Any]]"]

_requests: queue.SimpleQueue[_Request] = queue.SimpleQueue()
_launcher: threading.Thread | None = None
_launcher_guard = threading.Lock()
# Loaded before any fork: loading a library in the child of a threaded process can deadlock.
_libc = ctypes.CDLL(None, use_errno=True)
# A child forked while a gRPC channel is open (a Spark Connect session of this process) runs
# gRPC's fork handlers before its exec, which restart a poller on descriptors the child no
# longer has and abort it now and then (grpc/grpc#43055, grpcio 1.80 and later). The children
# here exec at once and need none of gRPC's state: read when gRPC first starts in the process.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")


def _die_with_parent(parent: int) -> None:
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    # The parent may have died between the fork and the prctl: no signal would come then.
    if os.getppid() != parent:
        os._exit(1)


def _serve() -> None:
    parent = os.getpid()
    while True:
        argv, popen_kwargs, result = _requests.get()
        if not result.set_running_or_notify_cancel():
            continue
        try:
            process = subprocess.Popen(
                argv, preexec_fn=lambda: _die_with_parent(parent), **popen_kwargs
            )
        except BaseException as error:  # handed to the caller, who raises it
            result.set_exception(error)
        else:
            result.set_result(process)


def _ensure_launcher() -> None:
    global _launcher
    with _launcher_guard:
        if _launcher is None or not _launcher.is_alive():
            # A daemon: it never ends before the process does, and never holds the exit up.
            _launcher = threading.Thread(target=_serve, name="kse-process-launcher", daemon=True)
            _launcher.start()


def launch(argv: Sequence[str], **popen_kwargs: Any) -> subprocess.Popen[Any]:
    """Start ``argv`` with :class:`subprocess.Popen` (``popen_kwargs`` as Popen takes them,
    except ``preexec_fn``) on the launcher thread, and return the process.

    The child is sent SIGKILL when this process ends, by any means, whichever thread called
    :func:`launch` and whether or not that thread still runs.

    Raises:
        OSError: the program could not be started (as Popen raises it).
        ConfigurationError: ``preexec_fn`` was given (the launcher sets its own).
    """
    if "preexec_fn" in popen_kwargs:
        raise ConfigurationError("launch() sets preexec_fn itself: pass the other Popen arguments")
    _ensure_launcher()
    result: Future[subprocess.Popen[Any]] = Future()
    _requests.put((list(argv), popen_kwargs, result))
    return result.result()


def terminate(processes: Iterable[subprocess.Popen[Any]]) -> None:
    """SIGTERM every process still running, SIGKILL those still running :data:`STOP_GRACE_S`
    later, and return once all have exited."""
    processes = list(processes)
    for process in processes:
        if process.poll() is None:
            process.terminate()
    # One deadline for all: the servers shut down side by side.
    deadline = time.monotonic() + STOP_GRACE_S
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
