"""A step run under deferred_signals is never cut in half: SIGINT and SIGTERM arriving during
it are acted on once it is complete."""

from __future__ import annotations

import os
import signal
from types import FrameType

import pytest

from kafka_share_eos.proving_ground.signals import deferred_signals


def test_a_signal_during_the_block_reaches_its_handler_after_the_block() -> None:
    events: list[str] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        events.append(f"handled {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        with deferred_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            events.append("block completed")
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert events == ["block completed", "handled SIGTERM"]


def test_an_interrupt_is_raised_after_the_block() -> None:
    # Python's own SIGINT handler, whatever the test runner installed (a pytest-xdist worker
    # ignores SIGINT, and an ignored signal stays ignored).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    completed = False
    try:
        with pytest.raises(KeyboardInterrupt), deferred_signals():
            os.kill(os.getpid(), signal.SIGINT)
            completed = True
    finally:
        signal.signal(signal.SIGINT, previous)
    assert completed


def test_a_default_sigterm_unwinds_as_system_exit_after_the_block() -> None:
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    completed = False
    try:
        with pytest.raises(SystemExit) as exited, deferred_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            completed = True
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert completed
    assert exited.value.code == 128 + signal.SIGTERM
