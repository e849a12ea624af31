"""Crashes of a pipeline run in a Spark Connect session.

In a Connect session the pipeline process is only a client: the query, its driver, the
``kafka-share`` source runner and the ``foreachBatch`` worker that runs the strategy live in
the server. Each run gets a server of its own (:func:`connect_server`), since a run may kill
it. An armed start holds a seeded random batch at the strategy's hold point inside the
server's ``foreachBatch`` worker (the hold travels there with the pickled function, see
:data:`~kafka_share_eos.proving_ground.verify.pipeline.WORKER_ENV`); once the batch waits there,
:class:`ConnectCrashes` kills one process of the session:

- ``connect.server-kill``: the server's JVM and every process under it, as when its machine
  dies; the client, whose server is gone, is killed too, the server started again on the same
  URL, and a new client starts the query again on the same checkpoint.
- ``connect.client-kill``: the client alone. The server keeps running the query of a dead
  client's session (until the session expires,
  ``spark.connect.session.manager.defaultSessionTimeout``, 60 minutes by default). Every
  second kill, the new client starts the query again while the orphaned one still runs (its
  batch is let go as the new client starts it: Spark then stops the orphaned run, as
  ``spark.sql.streaming.stopActiveRunOnRestart`` says); every other one, the orphaned query
  is let go and runs until the group is drained, and the new client starts after it ended.
- ``connect.worker-kill``: the server's ``foreachBatch`` worker; the query fails and its
  client with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_share_eos import faults
from kafka_share_eos.proving_ground.errors import SparkConnectServerError
from kafka_share_eos.proving_ground.verify.pipeline import STARTING_ENV, WORKER_ENV
from kafka_share_eos.proving_ground.verify.points import (
    CONNECT_CLIENT_KILL,
    CONNECT_SERVER_KILL,
    CONNECT_WORKER_KILL,
)
from kafka_share_eos.proving_ground.verify.process import Exit, PipelineProcess

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer

SERVER_CORES = 2
"""As a classic pipeline's local session with several consumers: one task slot each."""
_POLL_S = 0.05


@contextlib.contextmanager
def connect_server(wanted: bool) -> Iterator[SparkConnectServer | None]:
    """A Spark Connect server of one run's own, when ``wanted``."""
    if not wanted:
        yield None
        return
    from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer

    with SparkConnectServer(cores=SERVER_CORES, short_lived=True) as server:
        yield server


class ConnectCrashes:
    """Arms one start's hold and kills a process of the Connect session once it holds.

    Args:
        server: the run's Connect server.
        run_dir: the run's directory (gates and the starting marker live there).
        kind: a point of :data:`~kafka_share_eos.proving_ground.verify.points.CONNECT_POINTS`.
        hold_point: the strategy's point to hold the batch at.
    """

    def __init__(self, server: SparkConnectServer, run_dir: Path, kind: str,
                 hold_point: str) -> None:
        self.server = server
        self.kind = kind
        self.hold_point = hold_point
        self._run_dir = run_dir
        self._starts = 0
        self._gate: Path | None = None
        self.client_kills = 0
        self.orphans_overlapped = 0
        """Client kills after which the new client started while the orphaned query ran."""

    @property
    def starting(self) -> Path:
        """The file each client creates just before it starts its query."""
        return self._run_dir / "connect-starting"

    def environment(self, hit: int | None) -> dict[str, str]:
        """The environment of a client start: a hold at the ``hit``-th time the worker reaches
        the hold point (None: no hold), in a gate of this start's own."""
        self._starts += 1
        env = {STARTING_ENV: str(self.starting)}
        self._gate = None
        if hit is None:
            return env
        self._gate = self._run_dir / f"connect-gate-{self._starts}"
        shutil.rmtree(self._gate, ignore_errors=True)
        self._gate.mkdir()
        env[WORKER_ENV] = faults_environment(self.hold_point, hit, self._gate)
        return env

    def strike(self, process: PipelineProcess, timeout: float) -> tuple[Exit, bool]:
        """Wait until the started client's batch is held, kill this kind's process, and wait
        for the client to end; how it ended, and whether the kill struck (False: the client
        ended before its batch reached the hold)."""
        assert self._gate is not None, "strike() needs an armed start"
        held, release = faults.gate_files(self._gate, self.hold_point)
        deadline = time.monotonic() + timeout
        while not held.exists():
            if not process.running:
                return process.wait(timeout), False
            if time.monotonic() > deadline:
                process.kill()
                return process.wait(timeout), False
            time.sleep(_POLL_S)
        if self.kind == CONNECT_SERVER_KILL:
            self.server.kill()
            process.kill()
            process.wait(timeout)
            self.server.start()
            return Exit.CRASHED, True
        if self.kind == CONNECT_WORKER_KILL:
            _kill(self.server.foreach_batch_workers())
            process.wait(timeout)
            return Exit.CRASHED, True
        assert self.kind == CONNECT_CLIENT_KILL, self.kind
        self.starting.unlink(missing_ok=True)
        process.kill()
        process.wait(timeout)
        self.client_kills += 1
        if self.client_kills % 2:
            self.orphans_overlapped += 1
            threading.Thread(target=_release_when, args=(self.starting, release, timeout),
                             name="orphan-release", daemon=True).start()
        else:
            release.touch()
            self._until_orphan_ended(timeout)
        return Exit.CRASHED, True

    def report(self) -> dict[str, int]:
        """Client kills, and those after which the new client started while the orphaned
        query still ran."""
        return {"client_kills": self.client_kills,
                "orphans_overlapped": self.orphans_overlapped}

    def _until_orphan_ended(self, timeout: float) -> None:
        """Wait until the orphaned query ended: its ``foreachBatch`` worker is gone."""
        deadline = time.monotonic() + timeout
        while self.server.foreach_batch_workers():
            if time.monotonic() > deadline:
                raise SparkConnectServerError(
                    f"the orphaned query still ran {timeout:.0f} s after its client was killed "
                    "and its batch let go")
            time.sleep(_POLL_S)


def faults_environment(point: str, hit: int, gate: Path) -> str:
    """:data:`~kafka_share_eos.proving_ground.verify.pipeline.WORKER_ENV`'s value: hold the
    ``hit``-th hit of ``point`` at ``gate``."""
    return json.dumps({faults.HOLD_AT_ENV: faults.crash_spec(point, hit),
                       faults.HOLD_GATE_ENV: str(gate)})


def _release_when(starting: Path, release: Path, timeout: float) -> None:
    """Let the orphaned query's batch go once the next client starts its query (or after
    ``timeout``, so that it never waits forever)."""
    deadline = time.monotonic() + timeout
    while not starting.exists() and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    release.touch()


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
