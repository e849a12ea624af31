"""Timing, database and broker set-up and the command line shared by the benchmarks."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

Prepare = Callable[[int], Callable[[], object]]
"""``prepare(attempt)`` sets up fresh targets untimed and returns the work to time."""


def best_seconds(contenders: Mapping[str, Prepare], repeats: int) -> dict[str, float]:
    """Each contender's fastest of ``repeats`` timed runs.

    The contenders take turns, one run each per round, so that a change in the machine's load
    (it is shared) reaches all of them rather than the one that happened to run then.
    """
    best = dict.fromkeys(contenders, float("inf"))
    for attempt in range(repeats):
        for name, prepare in contenders.items():
            work = prepare(attempt)
            started = time.perf_counter()
            work()
            best[name] = min(best[name], time.perf_counter() - started)
    return best


@contextmanager
def postgres_database(url: str | None) -> Iterator[str]:
    """``url`` itself, or a fresh database on a throwaway server when ``url`` is ``None``."""
    if url is not None:
        yield url
        return
    from kafka_share_eos.proving_ground.launchers.postgres import postgres_for_tests

    with postgres_for_tests() as server:
        yield server.create_database()


@contextmanager
def kafka_cluster(kafka: KafkaCluster | None) -> Iterator[KafkaCluster]:
    """``kafka`` (a broker the run's Kafka benchmarks share), or a broker of the caller's own,
    stopped at the end."""
    if kafka is not None:
        yield kafka
        return
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

    with KafkaCluster(heap_mb=1024) as own:
        yield own


def script_parser(
    doc: str | None, sizes: Mapping[str, int | str], helps: Mapping[str, str] | None = None
) -> argparse.ArgumentParser:
    """The command line of a benchmark run as a script, described by ``doc``'s first line: an
    option per size (``per_trigger`` is ``--per-trigger``) defaulting to it, with its help in
    ``helps``. The caller adds any other option before parsing."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    for name, default in sizes.items():
        parser.add_argument(
            f"--{name.replace('_', '-')}", type=type(default), default=default,
            help=(helps or {}).get(name),
        )
    return parser
