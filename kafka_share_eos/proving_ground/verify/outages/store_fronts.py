"""What a store fault's run stands on: an S3 server of the run's own, reached by the run's
pipelines through a fault front (Toxiproxy, or the HTTP fault front) and by the verifier directly,
and fault steps taken one after the other in the background."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers.http_faults import HttpFaults
from kafka_share_eos.proving_ground.launchers.s3_server import S3Server
from kafka_share_eos.proving_ground.launchers.toxiproxy import Proxy, Toxiproxy
from kafka_share_eos.proving_ground.verify.run_store import RunStore

Front = Literal["none", "tcp", "http"]
"""The front before a run's store: none, Toxiproxy (TCP faults), or mitmproxy (HTTP statuses)."""


@dataclass(frozen=True)
class FrontedStore(RunStore):
    """A run's own S3 server, with the fault front its pipelines reach it through."""

    proxy: Proxy | None = None
    """Toxiproxy's proxy before the server, for the TCP faults."""
    http_faults: HttpFaults | None = None
    """The HTTP fault front before the server, for the status faults."""

    @property
    def s3(self) -> S3Server:
        """The server itself."""
        if not isinstance(self.server, S3Server):
            raise ObjectStoreServerError("the store faults strike an S3 server")
        return self.server

    @property
    def front(self) -> str:
        """Where the pipelines send their requests: the front, or else the server."""
        if self.proxy is not None:
            return f"http://{self.proxy.address}"
        if self.http_faults is not None:
            return self.http_faults.endpoint
        return self.s3.endpoint

    def environment(self) -> dict[str, str]:
        """The server's settings with the front as the endpoint, for the pipelines."""
        return {**self.server.environment(), "AWS_ENDPOINT_URL": self.front}


@contextlib.contextmanager
def fronted_store(front: Front) -> Iterator[FrontedStore]:
    """An S3 server started for one run, behind ``front`` (none, Toxiproxy or the HTTP fault
    front), all stopped at the end."""
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(S3Server())
        if front == "tcp":
            toxiproxy = stack.enter_context(Toxiproxy())
            upstream = server.endpoint.removeprefix("http://")
            yield FrontedStore(server, proxy=toxiproxy.proxy(upstream, name="s3"))
        elif front == "http":
            yield FrontedStore(server, http_faults=stack.enter_context(HttpFaults(server.endpoint)))
        else:
            yield FrontedStore(server)


@dataclass
class Phases:
    """Steps run one after the other in the background, each after the one before lasted its
    seconds; :meth:`stop` ends them wherever they are."""

    steps: Sequence[tuple[float, Callable[[], None]]]
    done: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        """Run the first step now, the others in the background."""
        self.steps[0][1]()
        self._thread = threading.Thread(target=self._run, name="store-fault-phases", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for (seconds, _), (_, step) in zip(self.steps, self.steps[1:], strict=False):
            if self._stop.wait(seconds):
                return
            step()

    def stop(self) -> None:
        """No further step starts."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
