"""Every benchmark in one run, for ``kafka-share-eos bench``.

The benchmarks run one after the other on this machine (the source against the embedded broker,
the strategies against one PostgreSQL server and local Delta tables) and are reduced to
:class:`~kafka_share_eos.proving_ground.bench.ratios.Ratio` rows. A benchmark that fails is reported
by name with its error; the others still run.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.bench.delta_spark import delta_spark_ratios
from kafka_share_eos.proving_ground.bench.machine import machine_details, postgres_version
from kafka_share_eos.proving_ground.bench.peer_ratios import consumers_ratios, peers_ratios
from kafka_share_eos.proving_ground.bench.ratios import (
    Ratio,
    dedup_ratios,
    end_to_end_ratios,
    kafka_topic_ratios,
    metrics_ratios,
    object_store_ratios,
    source_ratios,
    two_phase_ratios,
    upsert_ratios,
)
from kafka_share_eos.proving_ground.bench.sizes import FULL, QUICK, Sizes
from kafka_share_eos.proving_ground.bench.slow_effect import slow_effect_ratios
from kafka_share_eos.proving_ground.launchers.postgres import PostgresDatabases, postgres_for_tests

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

__all__ = ["BENCHMARKS", "FULL", "QUICK", "Sizes", "SuiteResult", "run_suite", "run_title",
           "unknown_benchmarks"]

logger = logging.getLogger("kafka_share_eos.proving_ground.bench")


@dataclass
class SuiteResult:
    """What one run of the suite measured."""

    sizes: Sizes
    machine: dict[str, str]
    ratios: list[Ratio] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    not_run: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per benchmark, rows it could not measure on this machine and why."""

    def to_json(self) -> dict[str, Any]:
        """Everything as plain JSON values: machine, sizes, rows, failures, each benchmark's
        duration, raw results."""
        return {
            "machine": self.machine,
            "sizes": asdict(self.sizes),
            "ratios": [ratio.to_json() for ratio in self.ratios],
            "failures": self.failures,
            "not_run": self.not_run,
            "seconds": self.seconds,
            "results": self.results,
        }


def run_title(quick: bool) -> str:
    """The title of a run's table and chart; a ``--quick`` run's says so."""
    return "kafka-share-eos benchmarks" + (" (--quick)" if quick else "")


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


class _Resources:
    """What the benchmarks share, each started on first use: PostgreSQL databases and one
    Apache Kafka broker for every benchmark on Apache Kafka."""

    def __init__(self, stack: ExitStack, admin_url: str | None) -> None:
        self._stack = stack
        self.databases = _Databases(stack, admin_url)
        self._kafka: KafkaCluster | None = None

    def kafka(self) -> KafkaCluster:
        if self._kafka is None:
            from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

            self._kafka = self._stack.enter_context(KafkaCluster(heap_mb=1024))
        return self._kafka


def _run_source(sizes: Sizes, _: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import source

    return source.run(
        records=sizes.source_records,
        partitions=sizes.source_partitions,
        poll_records=sizes.source_poll_records,
        rounds=sizes.source_rounds,
    )


def _run_consumers(sizes: Sizes, _: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import consumers

    return consumers.run(
        records=sizes.consumers_records,
        partitions=sizes.consumers_partitions,
        per_trigger=sizes.consumers_per_trigger,
        rounds=sizes.consumers_rounds,
        drain_idle_ms=sizes.consumers_drain_idle_ms,
        counts=sizes.consumers_counts,
    )


def _run_end_to_end(sizes: Sizes, shared: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import end_to_end

    with shared.databases.database() as url:
        return end_to_end.run(
            records=sizes.end_to_end_records,
            per_trigger=sizes.end_to_end_per_trigger,
            rounds=sizes.end_to_end_rounds,
            postgres_url=url,
            memory_batches=sizes.memory_batches,
        )


def _run_metrics(sizes: Sizes, shared: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import metrics_cost

    with shared.databases.database() as url:
        return metrics_cost.run(
            records=sizes.end_to_end_records,
            per_trigger=sizes.end_to_end_per_trigger,
            rounds=sizes.end_to_end_rounds,
            postgres_url=url,
        )


def _run_connect(sizes: Sizes, shared: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import connect

    # The end-to-end benchmark's workload, as the metrics' cost takes it.
    workload = {"records": sizes.end_to_end_records, "rounds": sizes.end_to_end_rounds,
                "per_trigger": sizes.end_to_end_per_trigger}
    with shared.databases.database() as url:
        return connect.run(postgres_url=url, **workload)


def _run_kafka_topic(sizes: Sizes, shared: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import topic_sink as kafka_topic

    return kafka_topic.run(
        batch_rows=sizes.kafka_topic_batch_rows,
        batches=sizes.kafka_topic_batches,
        records=sizes.end_to_end_records,
        per_trigger=sizes.end_to_end_per_trigger,
        rounds=sizes.end_to_end_rounds,
        kafka=shared.kafka(),
    )


def _run_peers(sizes: Sizes, shared: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import consumers, peers

    with shared.databases.database() as url:
        return peers.run(
            records=sizes.peers_records,
            poll_records=sizes.peers_poll_records,
            consumers_records=sizes.peers_consumers_records,
            consumers_per_trigger=sizes.consumers_per_trigger,
            pipeline_records=sizes.peers_pipeline_records,
            long_records=sizes.peers_long_records,
            long_rounds=sizes.peers_long_rounds,
            pipeline_per_trigger=sizes.end_to_end_per_trigger,
            rounds=sizes.peers_rounds,
            drain_idle_ms=sizes.consumers_drain_idle_ms or consumers.DRAIN_IDLE_MS,
            kafka=shared.kafka(),
            postgres_url=url,
        )


def _run_slow_effect(sizes: Sizes, shared: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import slow_effect

    with shared.databases.database() as url:
        return slow_effect.run(records=sizes.slow_effect_records,
                               paced_records=sizes.slow_effect_paced_records,
                               rounds=sizes.slow_effect_rounds, kafka=shared.kafka(),
                               postgres_url=url)


def _run_object_store(sizes: Sizes, _: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import consumers, object_store

    return object_store.run(
        records=sizes.object_store_records,
        partitions=sizes.consumers_partitions,
        per_trigger=sizes.consumers_per_trigger,
        rounds=sizes.object_store_rounds,
        drain_idle_ms=sizes.consumers_drain_idle_ms or consumers.DRAIN_IDLE_MS,
        dedup_batch_rows=sizes.dedup_batch_rows,
        dedup_batches=sizes.object_store_dedup_batches,
    )


def _run_upsert(sizes: Sizes, shared: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import upsert

    with shared.databases.database() as url:
        return upsert.run(
            sizes.upsert_rows,
            sizes.delta_base_rows,
            sizes.delta_batch_rows,
            sizes.upsert_repeats,
            postgres_url=url,
            delta_batches=sizes.delta_batches,
        )


def _run_two_phase(sizes: Sizes, shared: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import two_phase

    with shared.databases.database() as url:
        return two_phase.run(
            sizes.two_phase_rows_per_batch, sizes.two_phase_batches, sizes.two_phase_repeats, url
        )


def _run_dedup(sizes: Sizes, _: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import dedup

    return dedup.run(
        sizes.dedup_ledger_sizes,
        sizes.dedup_batch_rows,
        sizes.dedup_batches,
        batch_sizes=sizes.dedup_batch_sizes,
    )


def _run_iceberg(sizes: Sizes, _: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import iceberg

    return iceberg.run(sizes.iceberg_base_rows, sizes.iceberg_batch_rows, sizes.iceberg_batches,
                       sizes.dedup_batch_rows, sizes.iceberg_dedup_batches)


def _run_delta_spark(_sizes: Sizes, _: _Resources) -> dict[str, Any]:
    from kafka_share_eos.proving_ground.bench import delta_spark

    return delta_spark.run_in_tier(delta_spark.SIZES)


_LEFT_OUT = ("left out of --quick: its Apache Kafka broker, pyspark 4.2 child, two Spark "
             "applications on an S3 server, a Spark Connect server, four served and plain "
             "pipelines a round or pyiceberg's Table.upsert alone would take most of the quick "
             "run's minutes; `bench --quick --only NAME` runs it")

def _connect_ratios(result: Mapping[str, Any]) -> list[Ratio]:
    from kafka_share_eos.proving_ground.bench.connect import connect_ratios

    return connect_ratios(result)


def _iceberg_ratios(result: Mapping[str, Any]) -> list[Ratio]:
    from kafka_share_eos.proving_ground.bench.iceberg import iceberg_ratios

    return iceberg_ratios(result)


Runner = Callable[[Sizes, _Resources], dict[str, Any]]
Reducer = Callable[[Mapping[str, Any]], list[Ratio]]

# The Spark benchmarks run first: Spark's JVM should not be forked from a process that has
# already used delta-rs.
BENCHMARKS: dict[str, tuple[Runner, Reducer]] = {
    "source": (_run_source, source_ratios),
    "consumers": (_run_consumers, consumers_ratios),
    "end-to-end": (_run_end_to_end, end_to_end_ratios),
    "metrics": (_run_metrics, metrics_ratios),
    "connect": (_run_connect, _connect_ratios),
    "kafka-topic": (_run_kafka_topic, kafka_topic_ratios),
    "kafka peers": (_run_peers, peers_ratios),
    "slow effect": (_run_slow_effect, slow_effect_ratios),
    # Its Spark applications run before its delta-rs tables, on one S3 server of its own.
    "object-store": (_run_object_store, object_store_ratios),
    "upsert": (_run_upsert, upsert_ratios),
    "two-phase commit": (_run_two_phase, two_phase_ratios),
    "dedup": (_run_dedup, dedup_ratios),
    "iceberg": (_run_iceberg, _iceberg_ratios),
    # In the delta-spark environment's Python, a child process with a JVM of its own.
    "delta-spark": (_run_delta_spark, delta_spark_ratios),
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
        only: names of the benchmarks to run (of :data:`BENCHMARKS`); empty runs them all but
            those the workload leaves out (``sizes.left_out``).

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
    not_run: dict[str, dict[str, str]] = {}
    with ExitStack() as stack:
        shared = _Resources(stack, postgres_url)
        for name, (runner, reduce) in BENCHMARKS.items():
            if only and name not in only:
                continue
            if name in sizes.left_out and name not in only:
                not_run[name] = {"every row": _LEFT_OUT}
                continue
            on_start(name)
            started = time.monotonic()
            try:
                results[name] = runner(sizes, shared)
                ratios += reduce(results[name])
                if results[name].get("not_run"):
                    not_run[name] = results[name]["not_run"]
            except Exception as exc:  # one broken benchmark must not hide the others' numbers
                logger.warning("benchmark %s failed", name, exc_info=True)
                failures[name] = f"{type(exc).__name__}: {exc}"
            seconds[name] = round(time.monotonic() - started, 1)
    return SuiteResult(sizes, machine_details(shared.databases.version), ratios, results,
                       failures, seconds, not_run)
