"""Closing the share consumer when Spark stops the source runner with SIGTERM.

Spark does not call ``reader.stop()`` on a query stop; it sends the runner process SIGTERM. The
hook runs a cleanup, then hands the signal to whatever handler was installed before (by default,
the process dies of SIGTERM as it would have). While a consumer call is in progress the cleanup
waits until that call returns, because the client must not be re-entered.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

log = logging.getLogger("kafka_share_eos.source")


class SigtermHook:
    """Run ``cleanup`` on SIGTERM, then chain to the previously installed handler."""

    def __init__(self, cleanup: Callable[[], None]) -> None:
        self._cleanup = cleanup
        self._previous: Any = None
        self._installed = False
        self._busy = 0
        self._pending: tuple[int, FrameType | None] | None = None

    def install(self) -> None:
        """Install the handler; a no-op outside the main thread, where Python cannot."""
        if self._installed or threading.current_thread() is not threading.main_thread():
            return
        self._previous = signal.signal(signal.SIGTERM, self._handle)
        self._installed = True

    def uninstall(self) -> None:
        """Put the previous handler back."""
        if self._installed and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous)
            self._installed = False

    @property
    def terminating(self) -> bool:
        """Whether a SIGTERM arrived during a busy call and awaits its end (a long wait may
        end early for it)."""
        return self._pending is not None

    @contextmanager
    def busy(self) -> Iterator[None]:
        """Mark a consumer call in progress; a SIGTERM arriving meanwhile is handled after it.

        Only calls on the main thread are marked: the handler runs there, so only they could be
        re-entered; the cleanup waits for a call on another thread through the session's lock.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1
            if self._busy == 0 and self._pending is not None:
                signum, frame = self._pending
                self._pending = None
                self._terminate(signum, frame)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._busy:
            self._pending = (signum, frame)
            return
        self._terminate(signum, frame)

    def _terminate(self, signum: int, frame: FrameType | None) -> None:
        try:
            self._cleanup()
        except Exception:
            log.exception("closing the share consumer on SIGTERM failed")
        previous = self._previous
        self.uninstall()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            # Default disposition: die of the signal as if no hook had been installed.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
