"""Steps that a SIGINT or SIGTERM must not cut in half, and runs that SIGTERM unwinds.

Starting a PostgreSQL server forks a postmaster in a session of its own: interrupted between
that fork and the moment the caller records the server, the program would unwind without
knowing there is a server to stop, and the server would outlive it. Such a step runs inside
:func:`deferred_signals`: the signals that arrive meanwhile are held and acted on, as they would
have been, once the step is complete, so the code unwinding from them knows what to clean up.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: raised where Ctrl-C raises ``KeyboardInterrupt``, so that a run unwinds
    the same way and stops the servers and JVMs it started on its way out."""


def exit_status(interrupt: KeyboardInterrupt) -> int:
    """The shell's status for a program ended by this interrupt: 143 (SIGTERM) or 130."""
    return 128 + (signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    # Once: a second SIGTERM must not cut the unwinding (a server's stop) in half.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated()


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` in the main thread instead of
    ending the process on the spot, which would leave a PostgreSQL server (a session of its
    own) running. Only SIGTERM's default handler is replaced; outside the main thread the block
    runs unchanged."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends, then act on them.

    A held signal calls the handler that was installed before the block. Where that handler is
    the operating system's default (SIGTERM in most programs, which would end the process on
    the spot), it raises ``SystemExit(128 + signal)`` instead, so that the cleanup of what the
    block started runs. Ignored signals stay ignored. Python delivers signals to the main thread
    only: in another thread the block runs unprotected.

    Raises:
        KeyboardInterrupt: a SIGINT arrived during the block (under Python's default handler).
        SystemExit: a SIGTERM arrived during the block and its handler was the default.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {}

    def hold(held: int, frame: FrameType | None) -> None:
        received.append(held)

    for signum in HELD_SIGNALS:
        handler = signal.getsignal(signum)
        if handler in (signal.SIG_IGN, None):
            continue
        previous[signum] = handler
        signal.signal(signum, hold)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            # A handler the block installed stays (Spark's context sets its own for Ctrl-C).
            if signal.getsignal(signum) is hold:
                signal.signal(signum, handler)
        for held in dict.fromkeys(received):
            _act_on(held, previous[signal.Signals(held)])


def _act_on(signum: int, handler: object) -> None:
    if callable(handler):
        handler(signum, None)
    else:
        raise SystemExit(128 + signum)
