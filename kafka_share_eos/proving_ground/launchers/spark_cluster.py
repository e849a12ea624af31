"""A Spark standalone cluster on loopback: a master and workers started from the pyspark install.

:class:`SparkCluster` runs ``org.apache.spark.deploy.master.Master`` and ``workers`` times
``org.apache.spark.deploy.worker.Worker`` with ``$SPARK_HOME/bin/spark-class`` of the installed
pyspark, each on free ports of 127.0.0.1 with its logs and work directory in a temporary
directory, and waits until the master lists every worker alive. A driver connects with
:func:`~kafka_share_eos.proving_ground.launchers.spark.standalone_spark_session` and
:attr:`SparkCluster.master_url`; its executors are JVMs the workers start, with Python workers of
their own, as on a cluster of machines.

:meth:`SparkCluster.kill_worker` is the loss of a machine: SIGKILL to the worker, its executors
and their Python workers at once. The master and the workers die with the process that started
them (:mod:`~kafka_share_eos.proving_ground.launchers.process_tree`); their executors exit when
their worker is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_share_eos._libs import pyspark
from kafka_share_eos.proving_ground.errors import SparkClusterError
from kafka_share_eos.proving_ground.launchers.lifecycle import Launcher
from kafka_share_eos.proving_ground.launchers.ports import free_ports
from kafka_share_eos.proving_ground.launchers.process_tree import launch
from kafka_share_eos.proving_ground.launchers.processes import descendants

START_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
DAEMON_MEMORY = "256m"
"""Heap of the master's and the workers' own JVMs."""


@dataclass
class SparkWorker:
    """One worker daemon of the cluster."""

    index: int
    directory: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


class SparkCluster(Launcher):
    """A Spark standalone master and ``workers`` workers on loopback, for tests.

    Use it as a context manager::

        with SparkCluster(workers=2) as cluster:
            spark = standalone_spark_session(cluster.master_url, cores=4)

    Args:
        workers: how many workers.
        cores: cores each worker offers.
        memory_mb: memory each worker offers its executors.

    Raises:
        SparkClusterError: a daemon did not start, or the workers did not all register
            within :data:`START_TIMEOUT_S` (the message names the log).
    """

    def __init__(self, workers: int = 2, *, cores: int = 2, memory_mb: int = 1024) -> None:
        self.cores = cores
        self.memory_mb = memory_mb
        self._work: Path | None = None
        self._master: subprocess.Popen[bytes] | None = None
        self._master_port = self._webui_port = 0
        self.workers = [SparkWorker(i, Path()) for i in range(workers)]

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:<port>``, for the driver's ``master``."""
        return f"spark://127.0.0.1:{self._master_port}"

    def _start(self) -> None:
        """Start the master and every worker; return once every worker is alive.

        Raises:
            SparkClusterError: a daemon did not start, or a worker did not register in time.
        """
        self._work = Path(tempfile.mkdtemp(prefix="kse-spark-"))
        self._master_port, self._webui_port = free_ports(2)
        self._master = self._daemon(
            "master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
            "--port", str(self._master_port), "--webui-port", str(self._webui_port),
        )
        for worker in self.workers:
            worker.directory = self._work / f"worker-{worker.index}"
            self._start_worker(worker)

    def _stop(self) -> None:
        """SIGKILL every daemon and executor and delete the cluster's directory."""
        for worker in self.workers:
            if worker.running:
                self.kill_worker(worker.index)
        if self._master is not None and self._master.poll() is None:
            self._master.kill()
            self._master.wait()
        self._master = None
        if self._work is not None:
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None

    # -- faults -------------------------------------------------------------------------------

    def kill_worker(self, index: int) -> list[int]:
        """SIGKILL worker ``index`` with every process under it (its executors and their Python
        workers), at once, as when its machine dies; the pids killed."""
        worker = self.workers[index]
        if worker.process is None or not worker.running:
            return []
        tree = stopped_tree(worker.process.pid)
        for pid in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        worker.process.wait()
        return tree

    def restart_worker(self, index: int) -> None:
        """Start worker ``index`` again (on a new port: the master still lists the dead one
        until its timeout) and wait until the master lists it alive."""
        worker = self.workers[index]
        if not worker.running:
            self._start_worker(worker)

    def alive_workers(self) -> list[dict[str, Any]]:
        """The workers the master lists as alive (its ``/json`` page)."""
        url = f"http://127.0.0.1:{self._webui_port}/json"
        with urllib.request.urlopen(url, timeout=10) as answer:
            state = json.load(answer)
        return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]

    # -- internals ----------------------------------------------------------------------------

    def _start_worker(self, worker: SparkWorker) -> None:
        worker.port, webui = free_ports(2)
        worker.directory.mkdir(parents=True, exist_ok=True)
        worker.process = self._daemon(
            f"worker-{worker.index}", "org.apache.spark.deploy.worker.Worker",
            "--host", "127.0.0.1", "--port", str(worker.port), "--webui-port", str(webui),
            "--cores", str(self.cores), "--memory", f"{self.memory_mb}m",
            "--work-dir", str(worker.directory), self.master_url,
        )
        self._wait_for(lambda: any(w.get("port") == worker.port for w in self._answer() or []),
                       f"worker {worker.index}", worker.process)

    def _daemon(self, name: str, main_class: str, *arguments: str) -> subprocess.Popen[bytes]:
        assert self._work is not None
        home = Path(pyspark.__file__).resolve().parent
        environment = {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
            "SPARK_LOG_DIR": str(self._work),
            "PYSPARK_PYTHON": sys.executable,
        }
        log = self._work / f"{name}.log"
        with open(log, "ab") as out:
            process = launch(
                [str(home / "bin" / "spark-class"), main_class, *arguments],
                env=environment, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            )
        if name == "master":
            self._wait_for(lambda: self._answer() is not None, "the master", process)
        return process

    def _answer(self) -> list[dict[str, Any]] | None:
        """:meth:`alive_workers`, or None while the master's web UI is not up: it refuses
        connections, then answers an empty page for a moment."""
        try:
            return self.alive_workers()
        except (OSError, ValueError):
            return None

    def _wait_for(self, ready: Any, what: str, process: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            if process.poll() is not None:
                raise SparkClusterError(f"{what} exited with code {process.returncode}: see "
                                         f"the logs in {self._work}")
            if time.monotonic() > deadline:
                raise SparkClusterError(f"{what} was not up within {START_TIMEOUT_S:.0f} s: "
                                         f"see the logs in {self._work}")
            time.sleep(0.2)


def stopped_tree(root: int) -> list[int]:
    """SIGSTOP ``root`` and all its descendants until no new one appears;
    their pids. Stopped, none can fork a child that a later kill would miss."""
    stopped: list[int] = []
    while True:
        fresh = [pid for pid in descendants(root) if pid not in stopped]
        if not fresh:
            return stopped
        for pid in fresh:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        stopped += fresh
