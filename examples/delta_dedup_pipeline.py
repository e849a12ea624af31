"""Append events to a Delta table exactly once, behind the checkpoint-dedup store.

    python examples/delta_dedup_pipeline.py                              # embedded broker
    python examples/delta_dedup_pipeline.py --bootstrap-servers broker:9092 --topic events \\
        --group events-eos --workdir /data/events                        # a Kafka 4.2+ cluster

A plain append is not idempotent; the store drops identities its Delta ledger already holds,
appends the rest, then records them, so redeliveries and replayed batches never append twice.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import kafka_share_eos
from kafka_share_eos import CheckpointDedupStore, DeltaAppendSink, EmbeddedBroker
from kafka_share_eos.proving_ground.console import RunConsole


@contextlib.contextmanager
def broker_with_sample_events(topic: str, events: int) -> Iterator[str]:
    """An embedded broker holding ``events`` sample records; yields its bootstrap address."""
    from confluent_kafka import Producer

    with EmbeddedBroker([f"{topic}:4"]) as broker:
        producer = Producer(broker.client_config())
        for i in range(events):
            producer.produce(topic, key=b"device-%d" % (i % 10), value=b"reading %d" % i)
        producer.flush(30)
        yield broker.bootstrap_servers


def run(console: RunConsole, bootstrap_servers: str, topic: str, group: str, workdir: Path,
        expected: int | None) -> int:
    """Drain the topic into ``workdir/events`` and return the number of rows appended."""
    spark = console.spark("delta-dedup-pipeline")
    kafka_share_eos.register(spark)
    events = (
        spark.readStream.format("kafka-share")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("kafka.share.group.id", group)
        .option("subscribe", topic)
        .option("journalPath", str(workdir / "journal"))
        .load()
        .selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS reading")
    )
    store = CheckpointDedupStore(
        str(workdir / "ledger"),
        DeltaAppendSink(str(workdir / "events"), app_id="events-append"),
        app_id="events-ledger",
    )
    with console.tracking(store, expected, "events") as pipeline:
        query = (
            events.writeStream.foreachBatch(pipeline)
            .trigger(availableNow=True)
            .option("checkpointLocation", str(workdir / "checkpoint"))
            .start()
        )
        query.awaitTermination()
    totals = store.totals
    print(
        f"{totals.batches} batches, {totals.rows_in} records in, "
        f"{totals.duplicates_in_batch + totals.already_applied} duplicates absorbed, "
        f"{totals.rows_written} appended to {workdir / 'events'}"
    )
    return totals.rows_written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", help="a Kafka 4.2+ cluster (default: embedded)")
    parser.add_argument("--topic", default="events")
    parser.add_argument("--group", default="events-eos", help="the share group to consume as")
    parser.add_argument("--events", type=int, default=1_000, help="sample events (embedded)")
    parser.add_argument("--workdir", type=Path, help="journal, ledger, table (default: temp)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="delta-dedup-"))
    # Spark's, the JVM's and the broker clients' logs go to a file; the terminal gets stages.
    with RunConsole("delta-dedup-pipeline", workdir / "spark.log") as console:
        if args.bootstrap_servers:
            run(console, args.bootstrap_servers, args.topic, args.group, workdir, None)
            return
        with broker_with_sample_events(args.topic, args.events) as bootstrap:
            console.stage(f"embedded broker at {bootstrap} with {args.events} sample events")
            run(console, bootstrap, args.topic, args.group, workdir, args.events)


if __name__ == "__main__":
    main()
