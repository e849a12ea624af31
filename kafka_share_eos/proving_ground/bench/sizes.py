"""The workload of every benchmark of ``kafka-share-eos bench``: the full run's and --quick's."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_share_eos.proving_ground.bench.ratios import count


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
    consumers_counts: tuple[int, ...] = (1, 2, 4)
    """The ``consumers`` values the consumers benchmark measures on the embedded broker."""
    peers_records: int = 600_000
    peers_poll_records: int = 50_000
    peers_consumers_records: int = 200_000
    peers_pipeline_records: int = 100_000
    peers_rounds: int = 3
    """The Apache Kafka peers: the source's and raw loops' records and polls, the consumers'
    records (with the consumers' batches), the Spark Kafka comparison's records (with the
    end-to-end batches), and their rounds."""
    peers_long_records: int = 1_000_000
    peers_long_rounds: int = 1
    """The Spark Kafka comparison at a length where the share group's join no longer outweighs
    the work: its records (with the end-to-end batches) and rounds."""
    object_store_records: int = 200_000
    object_store_rounds: int = 3
    object_store_dedup_batches: int = 15
    """The object-store benchmark: its journal contenders' records (over the consumers'
    partitions, in the consumers' micro-batches) and rounds, and its dedup batches (of the
    dedup benchmark's main batch size)."""
    iceberg_base_rows: int = 1_000_000
    iceberg_batch_rows: int = 20_000
    iceberg_batches: int = 15
    iceberg_dedup_batches: int = 15
    """The Iceberg benchmark: its upserts' batches into tables of ``iceberg_base_rows`` rows and
    how many are timed, and its dedup batches (of the dedup benchmark's main batch size)."""
    slow_effect_records: int = 8_000
    slow_effect_paced_records: int = 1_500
    slow_effect_rounds: int = 1
    """The slow-effect benchmark: each run's backlog, the records it then takes at 500 a second,
    and its rounds."""
    left_out: tuple[str, ...] = ()
    """Benchmarks this workload does not run unless ``only`` names them."""

    def summary(self) -> str:
        """The workload in one line, as a table caption states it."""
        ledgers = "/".join(count(n) for n in self.dedup_ledger_sizes)
        batch_sizes = "/".join(count(n) for n in self.dedup_batch_sizes)
        idle = ("" if self.consumers_drain_idle_ms is None
                else f", {self.consumers_drain_idle_ms / 1000:g} s idle end")
        return (
            f"source {count(self.source_records)} records over {self.source_partitions} "
            f"partitions, {count(self.source_poll_records)}-record polls, "
            f"{self.source_rounds} round(s); consumers="
            f"{'/'.join(map(str, self.consumers_counts))} over {count(self.consumers_records)} "
            "records, "
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
            f"{self.kafka_topic_batches} x {count(self.kafka_topic_batch_rows)} records; "
            f"Kafka peers source {count(self.peers_records)}, consumers "
            f"{count(self.peers_consumers_records)}, pipelines "
            f"{count(self.peers_pipeline_records)} records, {self.peers_rounds} round(s), "
            f"long pipelines {count(self.peers_long_records)} records, "
            f"{self.peers_long_rounds} round(s); "
            f"object store {count(self.object_store_records)} records, "
            f"{self.object_store_rounds} round(s), {self.object_store_dedup_batches} x "
            f"{count(self.dedup_batch_rows)}-row dedup batches; Iceberg "
            f"{count(self.iceberg_batch_rows)}-row batches into {count(self.iceberg_base_rows)} "
            f"rows, median of {self.iceberg_batches}, {self.iceberg_dedup_batches} x "
            f"{count(self.dedup_batch_rows)}-row dedup batches; slow effect "
            f"{count(self.slow_effect_records)} + {count(self.slow_effect_paced_records)} "
            f"records, {self.slow_effect_rounds} round(s)"
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
    # Five batches, about half a second per contender, let one slow Delta commit move the
    # Postgres + Delta row between 0.30 and 0.86 on an idle machine; fifteen, best of 3, hold it
    # within a few hundredths.
    two_phase_rows_per_batch=20_000,
    two_phase_batches=15,
    two_phase_repeats=3,
    dedup_ledger_sizes=(10_000, 1_000_000, 10_000_000),
    dedup_batch_rows=10_000,
    dedup_batches=15,
    dedup_batch_sizes=(1_000, 10_000),
)
"""The sizes the numbers in the docs were measured with (29.5 minutes on an idle 2-core machine)."""

QUICK = Sizes(
    source_records=200_000,
    # As many records per partition as the full run (18 182 against 18 750): the embedded
    # broker's pace follows that, and the source's ratios follow the pace. A raw loop read
    # 200 000 records over 32 partitions at 45 563 records/s, over 11 at 22 176, and the full
    # run's 600 000 over 32 at 21 270-22 467; at 32 the quick afterCommit row landed 21-25 %
    # below the full run's.
    source_partitions=11,
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
    consumers_counts=(1, 4),
    peers_records=100_000,
    peers_consumers_records=100_000,
    peers_pipeline_records=30_000,
    peers_rounds=1,
    peers_long_records=200_000,
    object_store_records=100_000,
    object_store_rounds=1,
    iceberg_base_rows=200_000,
    iceberg_batches=5,
    iceberg_dedup_batches=5,
    left_out=("kafka-topic", "kafka peers", "delta-spark", "object-store", "metrics",
              "connect", "iceberg", "slow effect"),
)
"""Sizes for a run under three minutes on an idle 2-core machine: one round each, a third of the
full run's source records (over as many records per partition), half its records for the
consumers (with its 40k-record batches, so each contender's Spark application start does not
dominate), ``consumers`` = 1 and 4 only (each contender is a Spark application of its own, whose
start is most of its time) and a 2 s idle end to their drains, fewer end-to-end records, smaller
ledgers (no 10M one), a memory run of 20 batches; batches and polls as large as the full run's
where a ratio depends on them. The benchmarks that start Apache Kafka or the pyspark 4.2 child
are left out: their JVMs' start alone takes about a minute. So is the Iceberg one, whose
``Table.upsert`` contenders take seconds a batch whatever the table's size; its sizes here are
for ``--quick --only iceberg``."""
