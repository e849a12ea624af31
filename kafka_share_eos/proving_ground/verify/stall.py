"""A stalled application: its batch held mid-write while its share consumers stop answering.

A long GC pause or a frozen host stops a whole application: the ``foreachBatch`` that holds a
batch, and the share consumers that hold its records' locks. The broker then fences the silent
member after its session timeout and hands the records it held to another member, which may be
another application consuming the same group. When the stalled application resumes, both hold
the records and race to commit: the case each strategy must decide where its effect commits.

The pipeline arms a hold (``KSE_HOLD_AT=<point>@<n>``, see :mod:`kafka_share_eos.faults`) with a
gate directory; when the batch reaches the point, this watcher SIGSTOPs the pipeline's share
consumer processes (the source runner, and the executor workers that poll with ``consumers``
above 1), waits, SIGCONTs them and releases the batch.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

from kafka_share_eos.faults import gate_files
from kafka_share_eos.proving_ground.launchers.processes import processes_mentioning

# Processes that hold share consumers: the streaming source runner, and executor Python workers.
_CONSUMER_PROCESSES = ("python_streaming_source_runner", "pyspark.daemon")


class ConsumerStall:
    """Stalls this process group's share consumers for ``seconds`` while the batch waits at
    ``point``, then lets both go on (once, on the point's armed hit)."""

    def __init__(self, gate: Path, point: str, seconds: float) -> None:
        self._held, self._release = gate_files(gate, point)
        self._seconds = seconds
        self.stalled: list[int] = []
        self._thread = threading.Thread(target=self._watch, name="consumer-stall", daemon=True)

    def start(self) -> None:
        """Watch for the hold in the background."""
        self._thread.start()

    def _watch(self) -> None:
        while not self._held.exists():
            time.sleep(0.05)
        self.stalled = consumer_processes(os.getpgrp())
        _signal_all(self.stalled, signal.SIGSTOP)
        try:
            # The stall itself: long enough for the broker to fence the silent member and hand
            # its records on.
            time.sleep(self._seconds)
        finally:
            _signal_all(self.stalled, signal.SIGCONT)
            self._release.touch()


def consumer_processes(group: int) -> list[int]:
    """Pids of the share-consumer processes in process group ``group``, this one left out."""
    return [pid for pid in processes_mentioning(*_CONSUMER_PROCESSES, group=group)
            if pid != os.getpid()]


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
