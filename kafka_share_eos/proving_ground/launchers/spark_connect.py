"""A Spark Connect server on loopback for tests, run from the installed PySpark's own jars.

:class:`SparkConnectServer` runs ``org.apache.spark.sql.connect.service.SparkConnectServer`` with
PySpark's ``bin/spark-submit`` in the foreground (``sbin/start-connect-server.sh`` would put it
in the background, out of reach of a SIGKILL test), on a free port of 127.0.0.1, as
``local[cores]`` with the settings of the tests' local sessions
(:func:`~kafka_share_eos.proving_ground.launchers.spark.spark_settings_for_tests`) and the class
archive of :mod:`~kafka_share_eos.proving_ground.launchers.jvm`. Its Python workers (the
``kafka-share`` source runners, the ``foreachBatch`` workers, the tasks' workers) run this
interpreter, so they import the toolkit. Its output goes to a log in a temporary directory.

Clients reach it at :attr:`SparkConnectServer.url` (``sc://127.0.0.1:<port>``) or with
:meth:`SparkConnectServer.session`; no JVM starts on their side. :meth:`SparkConnectServer.kill`
is the crash of the server's machine: SIGKILL to the JVM and every process under it. ``start()``
then runs it again on the same port, so the URL clients hold stays good.

The JVM dies with the process that started it
(:mod:`~kafka_share_eos.proving_ground.launchers.process_tree`); its Python workers end when
their connection to it closes.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from kafka_share_eos._extras import CONNECT
from kafka_share_eos._libs import spark_home, spark_sql
from kafka_share_eos.proving_ground.errors import SparkConnectServerError
from kafka_share_eos.proving_ground.launchers.jvm import (
    JVM_LOG_OPTIONS,
    SHORT_LIVED_OPTIONS,
    java_options,
)
from kafka_share_eos.proving_ground.launchers.lifecycle import Launcher
from kafka_share_eos.proving_ground.launchers.ports import free_ports
from kafka_share_eos.proving_ground.launchers.process_tree import launch, terminate
from kafka_share_eos.proving_ground.launchers.processes import (
    alive,
    descendants,
    processes_mentioning,
)
from kafka_share_eos.proving_ground.launchers.spark import spark_settings_for_tests
from kafka_share_eos.proving_ground.launchers.spark_cluster import stopped_tree
from kafka_share_eos.proving_ground.launchers.worker_spark_home import linked_spark_home
from kafka_share_eos.proving_ground.signals import deferred_signals

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
FOREACH_BATCH_WORKER_MODULE = "pyspark.sql.connect.streaming.worker.foreach_batch_worker"
"""What the command line of the server's ``foreachBatch`` workers runs."""

TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
"""Where the server (and pyspark's client, by default) reads the token clients must present."""

START_TIMEOUT_S = 180.0
SAME_PORT_WAIT_S = 30.0
"""How long a start after :meth:`SparkConnectServer.kill` waits for its port to be free again."""
GONE_WAIT_S = 30.0

# Spark reports a port it cannot bind so; with spark.port.maxRetries=0 the server then exits.
_PORT_TAKEN = ("Address already in use", "Failed to bind to address")
_ERROR_LINE = re.compile(r"(Exception|Error)\b[^:]*: ")
# What makes PySpark in a process a Connect client, as a test process that opened a session is:
# the server and its Python workers are no client of another server, and ask for no token but
# the one they were given.
_CLIENT_ENVIRONMENT = ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE",
                       "SPARK_API_MODE", TOKEN_ENV)


class SparkConnectServer(Launcher):
    """A Spark Connect server on a free port of 127.0.0.1, used as a context manager::

        with SparkConnectServer() as server:
            spark = server.session()

    Args:
        cores: the server runs ``local[cores]``, with as many shuffle partitions.
        extra_conf: more Spark settings, over the launcher's (``spark.master`` included).
        token: a token clients must present; it reaches the server through its environment,
            never its command line, and :attr:`url` carries it.
        short_lived: start the JVM with the quick compiler and the serial collector only
            (:data:`~kafka_share_eos.proving_ground.launchers.jvm.SHORT_LIVED_OPTIONS`).
        start_timeout_s: how long a start may take.
        python: the interpreter whose PySpark runs the server (its ``bin/spark-submit`` and
            jars) and its Python workers, e.g. an environment with another PySpark release;
            by default this interpreter. That environment must have the toolkit installed.
    """

    _label = "the Spark Connect server"
    _error = SparkConnectServerError

    def __init__(self, *, cores: int = 2, extra_conf: Mapping[str, str] | None = None,
                 token: str | None = None, short_lived: bool = False,
                 start_timeout_s: float = START_TIMEOUT_S,
                 python: str | Path | None = None) -> None:
        self.cores = cores
        self.python = str(python) if python is not None else sys.executable
        self.extra_conf = dict(extra_conf or {})
        self._token = token
        self._short_lived = short_lived
        self._start_timeout_s = start_timeout_s
        self._work: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self._copier: threading.Thread | None = None
        self._sessions: weakref.WeakSet[spark_sql.SparkSession] = weakref.WeakSet()

    @property
    def url(self) -> str:
        """``sc://127.0.0.1:<port>``; with a token ``sc://localhost:<port>/;token=...``, as
        pyspark sends a token without TLS only to ``localhost``. It stays the same after
        :meth:`kill` and the next start."""
        port = self._running_port()
        if self._token is None:
            return f"sc://127.0.0.1:{port}"
        return f"sc://localhost:{port}/;token={self._token}"

    @property
    def port(self) -> int:
        """The port the server listens on (kept across :meth:`kill`)."""
        return self._running_port()

    @property
    def pid(self) -> int:
        """The pid of the server's JVM."""
        if self._process is None or self._process.poll() is not None:
            raise self._not_running()
        return self._process.pid

    @property
    def log_file(self) -> Path:
        """The server's output, each start's after the one before."""
        if self._work is None:
            raise self._not_running()
        return self._work / "spark-connect.log"

    def session(self) -> spark_sql.SparkSession:
        """A new client session on the server (``SparkSession.builder.remote(url).create()``):
        a session of its own there, with its own temp views, settings and data sources. No JVM
        starts in this process.

        As for every Connect session, PySpark sets ``SPARK_CONNECT_MODE_ENABLED`` in this
        process's environment, which turns ``pyspark.sql.functions`` into Connect's: a classic
        session of this process is unusable while it is set (the ``connect_spark`` fixture
        takes it away after each test).

        Raises:
            MissingExtraError: a library of the ``connect`` extra is not installed.
            SparkConnectServerError: the server is not running.
        """
        CONNECT.require("a Spark Connect session")
        session = spark_sql.SparkSession.builder.remote(self.url).create()
        self._sessions.add(session)
        return session

    def processes(self) -> list[int]:
        """The pids of the server's JVM and of every process under it."""
        return descendants(self.pid)

    def foreach_batch_workers(self) -> list[int]:
        """The pids of the ``foreachBatch`` workers the server runs (one per running query
        with a ``foreachBatch`` sink), children of its JVM."""
        return processes_mentioning(FOREACH_BATCH_WORKER_MODULE, parent=self.pid)

    def kill(self) -> list[int]:
        """SIGKILL the JVM and every process under it at once, as when its machine dies; return
        their pids once all are gone. The port and the log stay: ``start()`` runs the server
        again at the same :attr:`url`.

        Raises:
            SparkConnectServerError: the server is not running, or a process outlived the kill.
        """
        process = self._process
        if process is None:
            raise self._not_running()
        # Stopped first: none of them can fork a worker the kill would miss.
        killed = stopped_tree(process.pid)
        for pid in killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait()
        self._process = None
        self._started = False
        self._wait_gone(killed)
        return killed

    # -- internals ----------------------------------------------------------------------------

    def _start(self) -> None:
        """Start the server; return once a client session answers on its port.

        Raises:
            MissingExtraError: a library of the ``connect`` extra is not installed.
            SparkConnectServerError: the server exited or did not answer in time (the message
                ends with its output), or after :meth:`kill` its port stayed taken.
        """
        CONNECT.require("the Spark Connect server")
        if self._port is None:
            self._until_ports_hold(lambda: self._launch(free_ports(1)[0]), self._label)
            return
        # After kill(): the port clients know. Whoever took it while the server was down (the
        # source port of some connection) may hold it a moment.
        port, deadline = self._port, time.monotonic() + SAME_PORT_WAIT_S
        while not self._launch(port):
            if time.monotonic() > deadline:
                raise self._error(f"port {port} of {self._label} was taken while it was down "
                                  f"and stayed taken for {SAME_PORT_WAIT_S:.0f} s")
            time.sleep(0.5)

    def _stop(self) -> None:
        """Close the clients of the sessions it gave, stop the JVM (SIGTERM, SIGKILL after the
        grace of :func:`~kafka_share_eos.proving_ground.launchers.process_tree.terminate`),
        then any of its workers left, and delete the log."""
        process, self._process, self._port = self._process, None, None
        # PySpark's exit hook asks the server of every open client to clean up, retrying for
        # minutes when none answers: a stopped server's clients are closed now, without a call.
        for session in list(self._sessions):
            session.client.close()
        if process is not None:
            tree = descendants(process.pid) if process.poll() is None else []
            terminate([process])
            for pid in tree[1:]:
                if alive(pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            self._wait_gone(tree)
        if self._copier is not None:
            self._copier.join(GONE_WAIT_S)
            self._copier = None
        if self._work is not None:
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None

    def _running_port(self) -> int:
        if self._port is None:
            raise self._not_running()
        return self._port

    def _launch(self, port: int) -> bool:
        """Start the server on ``port``; whether it came up (False: the port was taken)."""
        with deferred_signals():
            if self._work is None:
                self._work = Path(tempfile.mkdtemp(prefix="kse-spark-connect-"))
            self._port = port
            log = self.log_file
            offset = log.stat().st_size if log.exists() else 0
            command, environment = self._command(port)
            with log.open("ab") as out:
                # PySpark's foreachBatch worker prints the server's URL, token and all, when a
                # query starts: with a token the output reaches the log through a filter.
                self._process = process = launch(
                    command, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                    stdout=out if self._token is None else subprocess.PIPE,
                    cwd=self._work, env=environment,
                )
            if self._token is not None:
                self._copier = threading.Thread(
                    target=_copy_without, args=(process.stdout, log, self._token.encode()),
                    name="spark-connect-log", daemon=True)
                self._copier.start()
        started = re.compile(rf"Spark Connect server started at: \S+:{port}\b")
        deadline = time.monotonic() + self._start_timeout_s
        while process.poll() is None:
            # The log says this server bound the port, not another process that holds it.
            if started.search(self._output(offset)) and self._answers():
                return True
            if time.monotonic() > deadline:
                raise self._error(f"{self._label} did not answer on port {port} within "
                                  f"{self._start_timeout_s:.0f} s: {self._excerpt(offset)}")
            time.sleep(0.1)
        if self._copier is not None:  # all the output is in the log once its copy ends
            self._copier.join(GONE_WAIT_S)
        if any(text in self._output(offset) for text in _PORT_TAKEN):
            return False
        raise self._error(f"{self._label} exited with code {process.returncode} while "
                          f"starting: {self._excerpt(offset)}")

    def _spark_home(self) -> Path:
        """The PySpark installation of :attr:`python`."""
        if self.python == sys.executable:
            return Path(spark_home._find_spark_home())
        found = subprocess.run(
            [self.python, "-c", "import pyspark, os; print(os.path.dirname(pyspark.__file__))"],
            capture_output=True, text=True, check=False, env=self._environment(),
        )
        if found.returncode != 0:
            raise self._error(f"{self.python} has no PySpark to run {self._label}: "
                              f"{found.stderr[-1000:]}")
        return Path(found.stdout.strip())

    def _java_options(self) -> list[str]:
        if self.python == sys.executable:
            return java_options(self._short_lived)
        # The class archive is this interpreter's PySpark's; another release's jars refuse it.
        return [*JVM_LOG_OPTIONS, *(SHORT_LIVED_OPTIONS if self._short_lived else ())]

    def _environment(self) -> dict[str, str]:
        return {key: value for key, value in os.environ.items()
                if key not in _CLIENT_ENVIRONMENT}

    def _command(self, port: int) -> tuple[list[str], dict[str, str]]:
        home = self._spark_home()
        settings = {
            **spark_settings_for_tests(self.cores),
            "spark.master": f"local[{self.cores}]",
            "spark.app.name": "kafka-share-eos-connect",
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(port),
            # Spark would otherwise move to the next port when this one is taken, away from
            # the port a restarted server's clients know.
            "spark.port.maxRetries": "0",
            "spark.driver.extraJavaOptions": " ".join(self._java_options()),
            **self.extra_conf,
        }
        assert self._work is not None  # made by _launch
        home = linked_spark_home(home, self._work / "spark-home")
        command = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        environment = self._environment()
        environment.update(SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1",
                           PYSPARK_PYTHON=self.python, PYSPARK_DRIVER_PYTHON=self.python)
        if self._token is not None:
            environment[TOKEN_ENV] = self._token
        return command, environment

    def _answers(self) -> bool:
        """Whether a client session gets an answer. PySpark's Connect class itself, not the
        builder of :meth:`session`: this process's environment is left alone."""
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        probe = ConnectSession.builder.remote(self.url).create()
        try:
            return bool(probe.version)
        finally:
            probe.stop()

    def _output(self, offset: int, last: int | None = None) -> str:
        """What the server wrote since ``offset`` (its ``last`` characters), without the
        token."""
        with self.log_file.open("rb") as log:
            log.seek(offset)
            output = log.read().decode(errors="replace")
        if self._token is not None:
            output = output.replace(self._token, "<token>")
        return output[-last:] if last is not None else output

    def _excerpt(self, offset: int, last: int = 2000) -> str:
        """The end of what the server wrote since ``offset``, after the first error line when
        the end is only a stack trace without it."""
        output = self._output(offset)
        tail = output[-last:]
        cause = next((line for line in output.splitlines() if _ERROR_LINE.search(line)), None)
        return tail if cause is None or cause in tail else f"{cause}\n...\n{tail}"

    def _wait_gone(self, pids: list[int]) -> None:
        deadline = time.monotonic() + GONE_WAIT_S
        while left := [pid for pid in pids if alive(pid)]:
            if time.monotonic() > deadline:
                raise self._error(f"processes {left} of {self._label} still run "
                                  f"{GONE_WAIT_S:.0f} s after it was stopped")
            time.sleep(0.02)


def _copy_without(source: IO[bytes], log: Path, secret: bytes) -> None:
    """Append ``source``'s lines to ``log`` with ``secret`` replaced, until its end."""
    with source, log.open("ab") as out:
        for line in iter(source.readline, b""):
            out.write(line.replace(secret, b"<token>"))
            out.flush()
