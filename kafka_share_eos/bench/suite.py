"""Every benchmark in one run, for ``kafka-share-eos bench``.

The benchmarks run one after the other on this machine (the source against the embedded broker,
the strategies against one PostgreSQL server and local Delta tables) and are reduced to
:class:`~kafka_share_eos.bench.ratios.Ratio` rows. A benchmark that fails is reported by name
with its error; the others still run.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from kafka_share_eos.bench.machine import machine_details, postgres_version
from kafka_share_eos.bench.ratios import (
    Ratio,
    consumers_ratios,
    count,
    dedup_ratios,
    end_to_end_ratios,
    kafka_topic_ratios,
    source_ratios,
    two_phase_ratios,
    upsert_ratios,
)
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.testing.postgres import PostgresDatabases, postgres_for_tests

logger = logging.getLogger("kafka_share_eos.bench")


@dataclass(frozen=True)
class Sizes:
    """The workload of every benchmark."""

    source_records: int
    source_partitions: int
    source_poll_records: int
    source_rounds: int
    consumers_records: int
    consumers_partitions: int
    consumers_per_trigger: int
    consumers_rounds: int
    end_to_end_records: int
    end_to_end_per_trigger: int
    end_to_end_rounds: int
    memory_batches: int
    upsert_rows: int
    upsert_repeats: int
    delta_base_rows: int
    delta_batch_rows: int
    delta_batches: int
    two_phase_rows_per_batch: int
    two_phase_batches: int
    two_phase_repeats: int
    dedup_ledger_sizes: tuple[int, ...]
    dedup_batch_rows: int
    dedup_batches: int
    dedup_batch_sizes: tuple[int, ...]
    kafka_topic_batch_rows: int = 10_000
    kafka_topic_batches: int = 15
    """The Kafka topic sink's batches; its pipelines take the end-to-end sizes."""
    consumers_drain_idle_ms: int | None = None
    """The consumers drains' ``availableNowIdleMs``; None for the benchmark's default."""

    def summary(self) -> str:
        """The workload in one line, as a table caption states it."""
        ledgers = "/".join(count(n) for n in self.dedup_ledger_sizes)
        batch_sizes = "/".join(count(n) for n in self.dedup_batch_sizes)
        idle = ("" if self.consumers_drain_idle_ms is None
                else f", {self.consumers_drain_idle_ms / 1000:g} s idle end")
        return (
            f"source {count(self.source_records)} records over {self.source_partitions} "
            f"partitions, {count(self.source_poll_records)}-record polls, "
            f"{self.source_rounds} round(s); consumers {count(self.consumers_records)} records, "
            f"{count(self.consumers_per_trigger)} per batch, {self.consumers_rounds} round(s)"
            f"{idle}; "
            f"end-to-end {count(self.end_to_end_records)} records, "
            f"{count(self.end_to_end_per_trigger)} per batch, {self.end_to_end_rounds} round(s), "
            f"memory over {self.memory_batches} batches; upsert {count(self.upsert_rows)} rows, "
            f"best of {self.upsert_repeats}, Delta {count(self.delta_batch_rows)}-row batches "
            f"into {count(self.delta_base_rows)}, median of {self.delta_batches}; two-phase "
            f"{self.two_phase_batches} x {count(self.two_phase_rows_per_batch)} rows, best of "
            f"{self.two_phase_repeats}; dedup {batch_sizes}-row batches, median of "
            f"{self.dedup_batches}, ledgers of {ledgers}; Kafka topic "
            f"{self.kafka_topic_batches} x {count(self.kafka_topic_batch_rows)} records"
        )


FULL = Sizes(
    source_records=600_000,
    source_partitions=32,
    source_poll_records=50_000,
    source_rounds=3,
    consumers_records=200_000,
    consumers_partitions=8,
    consumers_per_trigger=40_000,
    consumers_rounds=3,
    end_to_end_records=100_000,
    end_to_end_per_trigger=10_000,
    end_to_end_rounds=3,
    memory_batches=200,
    upsert_rows=200_000,
    upsert_repeats=3,
    delta_base_rows=1_000_000,
    delta_batch_rows=20_000,
    delta_batches=15,
    two_phase_rows_per_batch=20_000,
    two_phase_batches=5,
    two_phase_repeats=2,
    dedup_ledger_sizes=(10_000, 1_000_000, 10_000_000),
    dedup_batch_rows=10_000,
    dedup_batches=15,
    dedup_batch_sizes=(1_000, 10_000),
)
"""The sizes the numbers in the docs were measured with (14 minutes on an idle 2-core machine)."""

QUICK = Sizes(
    source_records=300_000,
    source_partitions=32,
    source_poll_records=50_000,
    source_rounds=1,
    consumers_records=100_000,
    consumers_partitions=8,
    consumers_per_trigger=40_000,
    consumers_rounds=1,
    end_to_end_records=30_000,
    end_to_end_per_trigger=10_000,
    end_to_end_rounds=1,
    memory_batches=20,
    upsert_rows=100_000,
    upsert_repeats=3,
    delta_base_rows=200_000,
    delta_batch_rows=20_000,
    delta_batches=15,
    two_phase_rows_per_batch=20_000,
    two_phase_batches=5,
    two_phase_repeats=2,
    dedup_ledger_sizes=(10_000, 100_000),
    dedup_batch_rows=10_000,
    dedup_batches=15,
    dedup_batch_sizes=(1_000, 10_000),
    kafka_topic_batches=9,
    consumers_drain_idle_ms=2000,
)
"""Sizes for a run of about three minutes (3 min 0 s and 3 min 11 s in two runs on an idle 2-core
machine): one round each,
half the full run's source records, half its records for the consumers (with its 40k-record
batches, so each contender's Spark application start does not dominate) and a 2 s idle end to
their drains, fewer end-to-end records, smaller ledgers (no 10M one), a memory run of 20
batches; batches and polls as large as the full run's where a ratio depends on them. In those
runs every ratio came within 19 % of the full run's (one round of each is that noisy); fewer
records put rows past 20 %."""


@dataclass
class SuiteResult:
    """What one run of the suite measured."""

    sizes: Sizes
    machine: dict[str, str]
    ratios: list[Ratio] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Everything as plain JSON values: machine, sizes, rows, failures, each benchmark's
        duration, raw results."""
        return {
            "machine": self.machine,
            "sizes": asdict(self.sizes),
            "ratios": [ratio.to_json() for ratio in self.ratios],
            "failures": self.failures,
            "seconds": self.seconds,
            "results": self.results,
        }


class _Databases:
    """Fresh PostgreSQL databases for the benchmarks, on a server started on first use."""

    def __init__(self, stack: ExitStack, admin_url: str | None) -> None:
        self._stack = stack
        self._admin_url = admin_url
        self._server: PostgresDatabases | None = None
        self.version: str | None = None

    @contextmanager
    def database(self) -> Iterator[str]:
        if self._server is None:
            self._server = (
                self._stack.enter_context(postgres_for_tests())
                if self._admin_url is None
                else PostgresDatabases(self._admin_url)
            )
        name = f"kse_bench_{uuid.uuid4().hex[:12]}"
        server = self._server
        url = server.create_database(name)
        try:
            self.version = self.version or postgres_version(url)
            yield url
        finally:
            server.drop_database(name)


def _run_source(sizes: Sizes, _: _Databases) -> dict[str, Any]:
    from kafka_share_eos.bench import source

    return source.run(
        records=sizes.source_records,
        partitions=sizes.source_partitions,
        poll_records=sizes.source_poll_records,
        rounds=sizes.source_rounds,
    )


def _run_consumers(sizes: Sizes, _: _Databases) -> dict[str, Any]:
    from kafka_share_eos.bench import consumers

    return consumers.run(
        records=sizes.consumers_records,
        partitions=sizes.consumers_partitions,
        per_trigger=sizes.consumers_per_trigger,
        rounds=sizes.consumers_rounds,
        drain_idle_ms=sizes.consumers_drain_idle_ms,
    )


def _run_end_to_end(sizes: Sizes, databases: _Databases) -> dict[str, Any]:
    from kafka_share_eos.bench import end_to_end

    with databases.database() as url:
        return end_to_end.run(
            records=sizes.end_to_end_records,
            per_trigger=sizes.end_to_end_per_trigger,
            rounds=sizes.end_to_end_rounds,
            postgres_url=url,
            memory_batches=sizes.memory_batches,
        )


def _run_kafka_topic(sizes: Sizes, _: _Databases) -> dict[str, Any]:
    from kafka_share_eos.bench import kafka_topic

    return kafka_topic.run(
        batch_rows=sizes.kafka_topic_batch_rows,
        batches=sizes.kafka_topic_batches,
        records=sizes.end_to_end_records,
        per_trigger=sizes.end_to_end_per_trigger,
        rounds=sizes.end_to_end_rounds,
    )


def _run_upsert(sizes: Sizes, databases: _Databases) -> dict[str, Any]:
    from kafka_share_eos.bench import upsert

    with databases.database() as url:
        return upsert.run(
            sizes.upsert_rows,
            sizes.delta_base_rows,
            sizes.delta_batch_rows,
            sizes.upsert_repeats,
            postgres_url=url,
            delta_batches=sizes.delta_batches,
        )


def _run_two_phase(sizes: Sizes, databases: _Databases) -> dict[str, Any]:
    from kafka_share_eos.bench import two_phase

    with databases.database() as url:
        return two_phase.run(
            sizes.two_phase_rows_per_batch, sizes.two_phase_batches, sizes.two_phase_repeats, url
        )


def _run_dedup(sizes: Sizes, _: _Databases) -> dict[str, Any]:
    from kafka_share_eos.bench import dedup

    return dedup.run(
        sizes.dedup_ledger_sizes,
        sizes.dedup_batch_rows,
        sizes.dedup_batches,
        batch_sizes=sizes.dedup_batch_sizes,
    )


Runner = Callable[[Sizes, _Databases], dict[str, Any]]
Reducer = Callable[[Mapping[str, Any]], list[Ratio]]

# The Spark benchmarks run first: Spark's JVM should not be forked from a process that has
# already used delta-rs.
BENCHMARKS: dict[str, tuple[Runner, Reducer]] = {
    "source": (_run_source, source_ratios),
    "consumers": (_run_consumers, consumers_ratios),
    "end-to-end": (_run_end_to_end, end_to_end_ratios),
    "kafka-topic": (_run_kafka_topic, kafka_topic_ratios),
    "upsert": (_run_upsert, upsert_ratios),
    "two-phase commit": (_run_two_phase, two_phase_ratios),
    "dedup": (_run_dedup, dedup_ratios),
}


def unknown_benchmarks(names: Collection[str]) -> str:
    """What is wrong with ``names`` as benchmarks to run (empty when each is one)."""
    unknown = sorted(set(names) - set(BENCHMARKS))
    if not unknown:
        return ""
    return (f"no benchmark named {', '.join(map(repr, unknown))}; the benchmarks are "
            f"{', '.join(BENCHMARKS)}")


def run_suite(
    sizes: Sizes,
    postgres_url: str | None = None,
    on_start: Callable[[str], None] = lambda _: None,
    only: Collection[str] = (),
) -> SuiteResult:
    """Run every benchmark with ``sizes``.

    Args:
        sizes: the workload (:data:`FULL` or :data:`QUICK`).
        postgres_url: SQLAlchemy URL of a superuser on an existing server, where each benchmark
            creates and drops its own database; ``None`` starts a throwaway server.
        on_start: called with each benchmark's name before it runs.
        only: names of the benchmarks to run (of :data:`BENCHMARKS`); empty runs them all.

    Raises:
        ConfigurationError: ``only`` names a benchmark that does not exist.
    """
    unknown = unknown_benchmarks(only)
    if unknown:
        raise ConfigurationError(unknown)
    results: dict[str, Any] = {}
    ratios: list[Ratio] = []
    failures: dict[str, str] = {}
    seconds: dict[str, float] = {}
    with ExitStack() as stack:
        databases = _Databases(stack, postgres_url)
        for name, (runner, reduce) in BENCHMARKS.items():
            if only and name not in only:
                continue
            on_start(name)
            started = time.monotonic()
            try:
                results[name] = runner(sizes, databases)
                ratios += reduce(results[name])
            except Exception as exc:  # one broken benchmark must not hide the others' numbers
                logger.warning("benchmark %s failed", name, exc_info=True)
                failures[name] = f"{type(exc).__name__}: {exc}"
            seconds[name] = round(time.monotonic() - started, 1)
    return SuiteResult(
        sizes, machine_details(databases.version), ratios, results, failures, seconds
    )
