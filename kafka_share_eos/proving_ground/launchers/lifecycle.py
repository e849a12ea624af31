"""The life cycle every launcher of the proving ground shares: the embedded broker, the servers,
the clusters and the proxy the tests start.

A launcher is a context manager (``with KafkaCluster() as kafka:``) or is started and stopped by
hand. It implements :meth:`Launcher._start` and :meth:`Launcher._stop` only; :class:`Launcher`
makes a second start do nothing, stops whatever a failed start had started, and stops a launcher
still running at interpreter exit. A server of one process builds on
:class:`~kafka_share_eos.proving_ground.launchers.local_server.LocalServer`, which implements both.
"""

from __future__ import annotations

import atexit
import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from types import TracebackType
from typing import Self

from kafka_share_eos.errors import KafkaShareEosError

START_ATTEMPTS = 3
"""How many times a launcher takes free ports for a server that found one of them taken."""


class Launcher(ABC):
    """A component the tests start and stop, used as a context manager.

    A subclass implements :meth:`_start` and :meth:`_stop`; one whose accessors report use before
    :meth:`start` (:meth:`_not_running`) also sets :attr:`_label` and :attr:`_error`.
    """

    _label: str
    """How messages name the component ("the Kafka cluster")."""
    _error: type[KafkaShareEosError]
    """The launcher's own error."""
    _started = False

    def start(self) -> Self:
        """Start the component and return it once it is ready; a second call while it runs does
        nothing.

        Raises:
            KafkaShareEosError: it could not start, as the launcher's ``_start`` describes
                (whatever it had started is stopped).
        """
        if self._started:
            return self
        # Registered first: an interrupt during a long start still finds what it started.
        atexit.register(self.stop)
        try:
            self._start()
        except BaseException:
            # The start's error is the one to see, not a failure to clean up after it.
            with contextlib.suppress(KafkaShareEosError):
                self.stop()
            raise
        self._started = True
        return self

    def stop(self) -> None:
        """Stop the component and delete its files. Safe to call twice; it also runs at
        interpreter exit while the component runs.

        Raises:
            KafkaShareEosError: stopping failed, as the launcher's ``_stop`` describes.
        """
        atexit.unregister(self.stop)
        self._started = False
        self._stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @abstractmethod
    def _start(self) -> None:
        """Start the component; return once it is ready. :meth:`stop` cleans up after a failure,
        so this need not."""

    @abstractmethod
    def _stop(self) -> None:
        """Stop whatever runs and delete the files; a no-op when nothing does (it also runs after
        a start that failed halfway, and twice)."""

    def _not_running(self) -> KafkaShareEosError:
        """The error of an accessor used before :meth:`start` or after :meth:`stop`."""
        return self._error(f"{self._label} is not running: call start() or use `with`")

    def _until_ports_hold(self, launch: Callable[[], bool], what: str) -> None:
        """Run ``launch`` until it reports that its servers came up, at most
        :data:`START_ATTEMPTS` times. False means another process took a port between its probe
        and a server's bind: :meth:`_stop` clears that attempt and the next takes new ports.

        Raises:
            KafkaShareEosError: the launcher's error, when every attempt found a port taken
                (``what`` names the servers).
        """
        for _ in range(START_ATTEMPTS):
            if launch():
                return
            self._stop()
        raise self._error(f"no free ports for {what} after {START_ATTEMPTS} attempts")
