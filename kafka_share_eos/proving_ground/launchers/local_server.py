"""What the launchers of the tests' single-process servers share (the object stores,
Prometheus): a server program fetched or built once into the cache
(:mod:`~kafka_share_eos.proving_ground.launchers.cache`), and a server process on free ports of
127.0.0.1.

:class:`LocalServer` runs the server with its data in a temporary directory removed at stop; the
process dies with the one that started it
(:mod:`~kafka_share_eos.proving_ground.launchers.process_tree`), and ``stop()`` also runs at
interpreter exit (:class:`~kafka_share_eos.proving_ground.launchers.lifecycle.Launcher`).
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
import urllib.error
import urllib.request
from abc import abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers.cache import CachedProgram
from kafka_share_eos.proving_ground.launchers.lifecycle import Launcher
from kafka_share_eos.proving_ground.launchers.ports import free_ports
from kafka_share_eos.proving_ground.launchers.process_tree import launch, terminate
from kafka_share_eos.proving_ground.launchers.processes import descendants
from kafka_share_eos.proving_ground.signals import deferred_signals


def notice(text: str) -> None:
    """One line on stderr: stdout stays the caller's."""
    print(f"kafka-share-eos: {text}", file=sys.stderr)


def run_tool(command: Sequence[str], *, what: str, timeout_s: float,
             cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a fetch or build step to its end, with its output captured.

    Raises:
        ObjectStoreServerError: it took over ``timeout_s`` (``what`` names the step).
    """
    try:
        return subprocess.run(list(command), cwd=cwd, capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise ObjectStoreServerError(f"{what} took over {timeout_s:.0f} s") from None


def go_install(package: str, version: str, target: Path, *, name: str,
               timeout_s: float) -> None:
    """Build the Go program ``package`` at module ``version`` into ``target`` with ``go
    install``, which fetches it through the Go module proxy (``name`` names it in messages).

    Raises:
        ObjectStoreServerError: Go is missing, or the download or the build failed (with Go's
            reason).
    """
    go = shutil.which("go")
    if go is None:
        raise ObjectStoreServerError(
            f"building {name} {version} needs Go and no 'go' is on PATH: install it "
            "(https://go.dev/dl or e.g. apt install golang)"
        )
    notice(f"building {name} {version} with Go into {target} (once)")
    step = f"go install of {name} {version}"
    # `go install package@version` builds outside any module, whatever the working directory.
    outcome = run_tool(["env", f"GOBIN={target}", go, "install", "-trimpath", "-ldflags=-s -w",
                        f"{package}@{version}"], what=step, timeout_s=timeout_s, cwd=target)
    if outcome.returncode != 0:
        # Go names every module it downloads; the reason is in the other lines.
        lines = [line for line in outcome.stderr.splitlines()
                 if not line.startswith("go: downloading")]
        raise ObjectStoreServerError(
            f"{step} failed: {chr(10).join(lines[-10:]) or f'exit code {outcome.returncode}'}")


def json_call(server: str, url: str, method: str = "GET",
              body: dict[str, Any] | None = None) -> Any:
    """One call of a local server's JSON control API; its JSON answer (None when it has none).

    Raises:
        ObjectStoreServerError: the API refused the call (with its message, naming ``server``)
            or did not answer.
    """
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
    except urllib.error.HTTPError as error:
        raise ObjectStoreServerError(
            f"{server} refused {method} {url}: {error.read().decode(errors='replace')}"
        ) from None
    except OSError as error:
        raise ObjectStoreServerError(f"{server} did not answer {method} {url}: {error}") from None
    return json.loads(text) if text.strip() else None


def prefetch(fetch: Callable[[], object]) -> None:
    """The body of a launcher's ``python -m`` entry point: fetch now, so that a failure stops
    the test command at once with its reason; silent when the program is there."""
    try:
        fetch()
    except ObjectStoreServerError as error:
        notice(str(error))
        sys.exit(1)


class LocalServer(Launcher):
    """A server process on free ports of 127.0.0.1, used as a context manager.

    A subclass says how to fetch the server (:meth:`_program`), how to run it (:meth:`_command`)
    and when it is ready (:meth:`_ready`).

    Args:
        name: how messages name the server; its log and temporary directory are named after it.
        program: the program that runs it.
        version: its version (default ``program.version()``).
        ports: how many ports it listens on.
        client_port: which of them clients reach it on.
        port_taken: what its output says when a port it was given is taken.
        start_timeout_s: how long it may take to be ready.
        awaited: what it has done once ready, for the message of a start that timed out.
    """

    _error = ObjectStoreServerError

    def __init__(self, name: str, program: CachedProgram, version: str | None, *, ports: int,
                 client_port: int, port_taken: tuple[str, ...], start_timeout_s: float,
                 awaited: str) -> None:
        self.version = version or program.version()
        self._label, self._port_count, self._client_port = name, ports, client_port
        self._port_taken, self._start_timeout_s, self._awaited = (
            port_taken, start_timeout_s, awaited)
        self._work: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self._ports: list[int] = []
        self._program_line: list[str] = []

    def _start(self) -> None:
        """Fetch or build the server if needed, start it, and return once it is ready.

        Raises:
            ObjectStoreServerError: a failed fetch or build, or a server that was not ready
                within its start timeout (the message names its log).
        """
        program = self._program_line = self._program()
        self._until_ports_hold(lambda: self._launch(program), self._label)

    def kill(self) -> None:
        """SIGKILL the server and every process it started, as a power cut would; returns once
        they are gone. Its data directory and ports stay, for :meth:`restart`.

        Raises:
            ObjectStoreServerError: the server is not running.
        """
        process = self._process
        if process is None or self._port is None or process.poll() is not None:
            raise ObjectStoreServerError(f"{self._label} is not running: nothing to kill")
        # Children first listed, then killed with their parent: none is left to be orphaned.
        for pid in reversed(descendants(process.pid)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait()

    def restart(self) -> None:
        """Start the server again after :meth:`kill`, on the same data directory and ports;
        returns once it is ready.

        Raises:
            ObjectStoreServerError: the server was not killed, or did not come back (a port
                taken meanwhile, or not ready within its start timeout).
        """
        process = self._process
        if process is None or self._work is None or process.poll() is None:
            raise ObjectStoreServerError(f"restarting {self._label} needs a server kill() stopped")
        if not self._launch(self._program_line, again=True):
            raise ObjectStoreServerError(
                f"{self._label} could not take its ports {self._ports} again: see {self.log_file}")

    def _stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after
        :data:`~kafka_share_eos.proving_ground.launchers.process_tree.STOP_GRACE_S`) and delete
        its data."""
        process, self._process, self._port = self._process, None, None
        if process is not None:
            terminate([process])
        if self._work is not None:
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None

    @property
    def log_file(self) -> Path:
        """The server's output, useful when a test fails."""
        if self._work is None:
            raise self._not_running()
        return self._work / f"{self._label.lower()}.log"

    def _running_port(self) -> int:
        if self._port is None:
            raise self._not_running()
        return self._port

    @abstractmethod
    def _program(self) -> list[str]:
        """The program to run, fetched or built if missing."""

    @abstractmethod
    def _command(self, program: list[str], work: Path, ports: list[int]
                 ) -> tuple[list[str], dict[str, str] | None]:
        """The command line and environment (None: this process's) of a server on ``ports``
        with its files in ``work``."""

    @abstractmethod
    def _ready(self, port: int) -> bool:
        """Whether the server answers on ``port`` and is set up for the tests."""

    def _launch(self, program: list[str], *, again: bool = False) -> bool:
        """Start the server on free ports (``again``: on its ports and data directory, after
        :meth:`kill`); whether it came up (False: a port was taken)."""
        with deferred_signals():
            if again and self._work is not None:
                work, ports = self._work, self._ports
            else:
                self._work = work = Path(tempfile.mkdtemp(prefix=f"kse-{self._label.lower()}-"))
                ports = self._ports = free_ports(self._port_count)
            command, environment = self._command(program, work, ports)
            with self.log_file.open("ab" if again else "wb") as log:
                self._process = launch(command, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, cwd=work, env=environment)
        deadline = time.monotonic() + self._start_timeout_s
        while self._process.poll() is None:
            if self._ready(ports[self._client_port]):
                self._port = ports[self._client_port]
                return True
            if time.monotonic() > deadline:
                raise ObjectStoreServerError(
                    f"{self._label} did not {self._awaited} within {self._start_timeout_s:.0f} s: "
                    f"see {self.log_file}"
                )
            time.sleep(0.1)
        output = self.log_file.read_text(errors="replace")
        if any(text in output for text in self._port_taken):
            return False
        raise ObjectStoreServerError(
            f"{self._label} exited with code {self._process.returncode} while starting: "
            f"{output[-2000:]}"
        )
