"""Broker-side session drops: a client connecting and disconnecting at random moments.

On the embedded broker any client disconnecting drops every share session, so records that
healthy consumers hold are redelivered; the strategies must absorb those redeliveries.
"""

from __future__ import annotations

import random
import threading
from types import TracebackType


class SessionDropper:
    """While entered, connects and disconnects a client every 0.5 to 3 seconds (seeded)."""

    def __init__(self, bootstrap_servers: str, seed: str) -> None:
        self._bootstrap = bootstrap_servers
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="session-dropper", daemon=True)
        self.drops = 0

    def __enter__(self) -> SessionDropper:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        from confluent_kafka import Producer

        while not self._stop.wait(self._rng.uniform(0.5, 3.0)):
            client = Producer({"bootstrap.servers": self._bootstrap})
            # A metadata request opens the connection; dropping the client closes it.
            client.list_topics(timeout=5)
            client.flush(1)
            del client
            self.drops += 1
