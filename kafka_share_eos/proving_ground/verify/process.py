"""One pipeline process: started in its own session, killed as a whole, its exit classified."""

from __future__ import annotations

import contextlib
import enum
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from kafka_share_eos import faults
from kafka_share_eos.proving_ground.errors import Stopped as Stopped


class Exit(enum.Enum):
    """How a pipeline process ended."""

    DRAINED = "drained"
    """Exited 0: its availableNow query found the share group empty."""
    CRASHED = "crashed"
    """Killed by the crash point it was given."""
    KILLED = "killed"
    """SIGKILLed from outside at a random moment."""
    FAILED = "failed"
    """Exited with an error (or hung past its timeout)."""


PIPELINE_MODULE = "kafka_share_eos.proving_ground.verify.pipeline"
"""The module a pipeline process runs, unless it is given another with the same arguments."""

_live: set[PipelineProcess] = set()
_live_lock = threading.Lock()
_stopping = threading.Event()


def stop_all() -> None:
    """SIGKILL every pipeline still running and refuse new ones (pipelines live in their own
    sessions, so an interrupt of the verifier does not reach them)."""
    _stopping.set()
    with _live_lock:
        running = list(_live)
    for process in running:
        process.kill()


def accept_starts() -> None:
    """Let pipelines start again (a new matrix in the same process)."""
    _stopping.clear()


def stopping() -> bool:
    """Whether :func:`stop_all` was called: runs still finishing were cut short."""
    return _stopping.is_set()


def crash_records(path: Path) -> int:
    """How many crashes the pipelines of a run recorded in ``path``."""
    return len(path.read_text().splitlines()) if path.exists() else 0


class PipelineProcess:
    """``python -m kafka_share_eos.proving_ground.verify.pipeline CONFIG NAME`` as its own process
    group.

    Args:
        config: the run's pipeline configuration file.
        name: the pipeline's name in the run (``a``, ``b``).
        log: file receiving the process's stdout and stderr.
        crash_at: ``KSE_CRASH_AT`` for the process, or None.
        crash_record: the run's crash record file.
        module: the module run as ``python -m MODULE CONFIG NAME``.
    """

    def __init__(
        self,
        config: Path,
        name: str,
        log: Path,
        crash_at: str | None,
        crash_record: Path,
        extra_env: Mapping[str, str] | None = None,
        module: str = PIPELINE_MODULE,
    ) -> None:
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in (faults.CRASH_AT_ENV, faults.CRASH_PGID_ENV)
        }
        env[faults.CRASH_RECORD_ENV] = str(crash_record)
        if crash_at:
            env[faults.CRASH_AT_ENV] = crash_at
        env.update(extra_env or {})
        self.name = name
        self.log = log
        self._crash_record = crash_record
        self._crashes_before = crash_records(crash_record)
        self._killed = threading.Event()
        self.started = time.monotonic()
        # Under the lock, a stop_all() either finds this process among the live ones or has
        # already refused it: one started in between would run on unkilled for minutes.
        with _live_lock, log.open("ab") as out:
            if _stopping.is_set():
                raise Stopped("the verifier is stopping")
            self._process = subprocess.Popen(
                [sys.executable, "-m", module, str(config), name],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
            _live.add(self)

    @property
    def pid(self) -> int:
        """The process's id, which is also its process group's."""
        return self._process.pid

    @property
    def running(self) -> bool:
        """Whether the process has not exited yet."""
        return self._process.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole process group (driver, JVM, source runner, workers)."""
        self._killed.set()
        self._kill_group()

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, signal.SIGKILL)

    def wait(self, timeout: float) -> Exit:
        """Wait for the process to end (SIGKILLing it after ``timeout`` s) and classify its end."""
        try:
            code = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._kill_group()
            self._process.wait()
            code = None
        finally:
            # The driver may be gone while a process of its group lingers: leave nothing behind.
            self._kill_group()
            with _live_lock:
                _live.discard(self)
        if code is None:
            return Exit.FAILED
        if code == 0:
            return Exit.DRAINED
        if crash_records(self._crash_record) > self._crashes_before:
            return Exit.CRASHED
        if code == -signal.SIGKILL and self._killed.is_set():
            return Exit.KILLED
        return Exit.FAILED

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the process's output, for error reports."""
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""
