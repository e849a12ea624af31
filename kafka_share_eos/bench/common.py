"""Timing and database set-up shared by the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def best_seconds(prepare: Callable[[int], Callable[[], object]], repeats: int) -> float:
    """Fastest of ``repeats`` timed runs; ``prepare(attempt)`` sets up fresh targets untimed and
    returns the work to time."""
    best = float("inf")
    for attempt in range(repeats):
        work = prepare(attempt)
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


@contextmanager
def postgres_database(url: str | None) -> Iterator[str]:
    """``url`` itself, or a fresh database on a throwaway server when ``url`` is ``None``."""
    if url is not None:
        yield url
        return
    from kafka_share_eos.testing.postgres import postgres_for_tests

    with postgres_for_tests() as server:
        yield server.create_database()
