"""Interleaving two applications' batches deterministically: threads that pause where told.

:class:`Paused` wraps a real participant and stops in ``prepare`` or ``commit`` until the test
releases it, so that a test can make two coordinators hold the same records at the same time
(both prepared before either commits, one waiting on the other's locks, ...).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from kafka_share_eos.twophase import Participant, Token, Transaction

WAIT_SECONDS = 60


@dataclass
class Pause:
    """A point a thread stops at: ``reached`` once it is there, it goes on after ``release``."""

    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    def __call__(self) -> None:
        self.reached.set()
        assert self.released.wait(WAIT_SECONDS), "the test never released this pause"

    def wait(self) -> None:
        """Block until a thread is stopped here."""
        assert self.reached.wait(WAIT_SECONDS), "no thread reached this pause"

    def release(self) -> None:
        """Let the stopped thread (and any later one) go on."""
        self.released.set()


class Paused:
    """A participant that stops at the given pauses around the real one's calls."""

    def __init__(
        self,
        inner: Participant,
        *,
        before_prepare: Pause | None = None,
        after_prepare: Pause | None = None,
        before_commit: Pause | None = None,
    ) -> None:
        self.inner = inner
        self.before_prepare = before_prepare
        self.after_prepare = after_prepare
        self.before_commit = before_commit

    @property
    def name(self) -> str:
        return self.inner.name

    def prepare(self, rows: pa.Table, txn: Transaction) -> Token:
        if self.before_prepare is not None:
            self.before_prepare()
        token = self.inner.prepare(rows, txn)
        if self.after_prepare is not None:
            self.after_prepare()
        return token

    def commit(self, token: Token) -> int | None:
        if self.before_commit is not None:
            self.before_commit()
        return self.inner.commit(token)

    def abort(self, token: Token) -> None:
        self.inner.abort(token)

    def recover(self, prefix: str) -> list[Token]:
        return self.inner.recover(prefix)

    def applied(self, keys: pa.Table) -> list[bool]:
        lookup: Callable[[pa.Table], list[bool]] = getattr(self.inner, "applied")  # noqa: B009
        return lookup(keys)


class Background(threading.Thread):
    """Runs ``work`` in a thread and keeps its result or the exception it raised."""

    def __init__(self, work: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self._work = work
        self.result: Any = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.result = self._work()
        except BaseException as error:
            self.error = error

    def outcome(self) -> Any:
        """The result, once the thread ended; re-raises what it raised."""
        self.join(WAIT_SECONDS)
        assert not self.is_alive(), "the background work did not finish"
        if self.error is not None:
            raise self.error
        return self.result
