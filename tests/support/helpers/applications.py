"""Several applications as separate processes, and holds that force a lock handoff between them.

An *application* here is ``python -c SCRIPT ARGS`` printing one JSON line per batch report. A
:class:`HoldGate` arms ``KSE_HOLD_AT`` in one of them: it pauses at a named fault point and
waits for the test to release it, so another application can take the same records meanwhile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from helpers.batches import source_rows
from helpers.paths import SHARED
from kafka_share_eos.faults import HOLD_AT_ENV, HOLD_GATE_ENV, gate_files


def start(script: str, *args: str, **env: str) -> subprocess.Popen[str]:
    """Run ``script`` with ``args`` in a new interpreter that can import the tests' modules."""
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(SHARED), os.environ.get(
            "PYTHONPATH", "")]), **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def finish(process: subprocess.Popen[str], timeout: float = 120) -> list[Any]:
    """Wait for ``process`` to exit 0; the JSON lines it printed."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-3000:]
    return [json.loads(line) for line in out.splitlines()]


class HoldGate:
    """Holds an application at ``point`` until :meth:`release`."""

    def __init__(self, directory: Path, point: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.point = point

    @property
    def env(self) -> dict[str, str]:
        """Environment that makes an application stop at the point's first hit."""
        return {HOLD_AT_ENV: self.point, HOLD_GATE_ENV: str(self.directory)}

    def wait_held(self, process: subprocess.Popen[str], timeout: float = 60) -> None:
        """Return once ``process`` is paused at the point; fail if it exits first."""
        held, _ = gate_files(self.directory, self.point)
        deadline = time.monotonic() + timeout
        while not held.exists():
            if process.poll() is not None:
                raise AssertionError(f"exited before {self.point}: {process.communicate()[1]}")
            assert time.monotonic() < deadline, f"never held at {self.point}"
            time.sleep(0.05)

    def release(self) -> None:
        """Let the held application go on."""
        gate_files(self.directory, self.point)[1].touch()


def records(offsets: range, app: str) -> pa.Table:
    """Records of partition 0 of topic ``t`` at ``offsets``, each valued ``app``: which
    application wrote a row shows in it."""
    return source_rows(topic="t", partition=0, offset=offsets,
                       value=pa.array([app] * len(offsets), pa.string()))
