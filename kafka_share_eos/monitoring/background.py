"""Figures read from outside the process (the brokers, Kafka's tools) in the background, so
that a scrape never waits on them: it serves the last reading, and starts another when that one
is older than its interval and none is under way."""

from __future__ import annotations

import threading
import time
from typing import Generic, TypeVar

T = TypeVar("T")


class BackgroundReading(Generic[T]):
    """The latest value :meth:`read` returned, read again in a thread of its own.

    Args:
        name: the thread's name.
        every_s: how old the last reading may be before :meth:`refresh` starts another.
        empty: the value until a first reading succeeds.
    """

    def __init__(self, name: str, every_s: float, empty: T) -> None:
        self.every_s = every_s
        """How old the last reading may be before a scrape starts another."""
        self.value = empty
        """What the last successful reading returned."""
        self._name = name
        self._lock = threading.Lock()
        self._running: threading.Thread | None = None
        self._read_at = -float("inf")

    def read(self) -> T | None:
        """One reading; None when it failed (the previous value stays)."""
        raise NotImplementedError

    def refresh(self) -> None:
        """Start a reading in the background if the last one is older than ``every_s``."""
        with self._lock:
            due = time.monotonic() - self._read_at >= self.every_s
            if not due or (self._running is not None and self._running.is_alive()):
                return
            self._read_at = time.monotonic()
            self._running = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._running.start()

    def wait(self, timeout_s: float = 120.0) -> None:
        """Wait for a reading under way to finish (for tests and short-lived scripts)."""
        running = self._running
        if running is not None:
            running.join(timeout_s)

    def _run(self) -> None:
        value = self.read()
        if value is not None:
            with self._lock:
                self.value = value
