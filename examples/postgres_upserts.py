"""Keep the latest status of every order in Postgres, exactly once, with idempotent upserts.

    python examples/postgres_upserts.py                  # embedded broker, throwaway Postgres
    python examples/postgres_upserts.py --bootstrap-servers broker:9092 --topic order-updates \\
        --group orders-eos --postgres-url postgresql+psycopg://app@db/shop   # your cluster and DB

Each record is an order update {"order_id", "status", "version"}. The sink upserts on order_id
and replaces a row only with a strictly higher version, so redeliveries, replayed batches and
updates arriving out of order (a share group does not keep order) never roll a status back.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from pyspark.sql import functions as F

import kafka_share_eos
from kafka_share_eos import EmbeddedBroker, IdempotentUpsertSink
from kafka_share_eos.proving_ground.console import RunConsole
from kafka_share_eos.proving_ground.launchers.postgres import postgres_for_tests

STATUSES = ["placed", "paid", "shipped"]
UPDATE_SCHEMA = "order_id BIGINT, status STRING, version INT"


@contextlib.contextmanager
def broker_with_sample_updates(topic: str, orders: int) -> Iterator[str]:
    """An embedded broker holding every status update of ``orders`` orders."""
    from confluent_kafka import Producer

    with EmbeddedBroker([f"{topic}:4"]) as broker:
        producer = Producer(broker.client_config())
        for version, status in enumerate(STATUSES, start=1):
            for order_id in range(orders):
                update = {"order_id": order_id, "status": status, "version": version}
                producer.produce(topic, key=str(order_id).encode(), value=json.dumps(update))
        producer.flush(30)
        yield broker.bootstrap_servers


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    """A fresh database on a local PostgreSQL server that is removed afterwards."""
    with postgres_for_tests() as server:
        yield server.create_database()


def run(console: RunConsole, bootstrap_servers: str, topic: str, group: str, postgres_url: str,
        workdir: Path) -> None:
    """Drain the topic into the ``orders`` table and print what the sink did."""
    spark = console.spark("postgres-upserts")
    kafka_share_eos.register(spark)
    updates = (
        spark.readStream.format("kafka-share")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("kafka.share.group.id", group)
        .option("subscribe", topic)
        .option("journalPath", str(workdir / "journal"))
        .load()
        .select(F.from_json(F.col("value").cast("string"), UPDATE_SCHEMA).alias("update"))
        .select("update.*")
    )
    sink = IdempotentUpsertSink.sql(
        postgres_url, "orders", key_columns=["order_id"], version_column="version",
        create_table=True,
    )
    # Older and repeated updates are absorbed, not written: how many is not known up front.
    with console.tracking(sink, None, "updates written") as pipeline:
        query = (
            updates.writeStream.foreachBatch(pipeline)
            .trigger(availableNow=True)
            .option("checkpointLocation", str(workdir / "checkpoint"))
            .start()
        )
        query.awaitTermination()
    totals = sink.totals
    print(
        f"{totals.batches} batches, {totals.rows_in} updates in, "
        f"{totals.duplicates_in_batch + totals.already_applied} older or repeated updates "
        f"absorbed, {totals.rows_written} rows written"
    )
    engine = sa.create_engine(postgres_url)
    with engine.connect() as conn:
        counts = conn.execute(
            sa.text("SELECT status, count(*) FROM orders GROUP BY status ORDER BY status")
        ).all()
    engine.dispose()
    print("orders by status: " + ", ".join(f"{status} {n}" for status, n in counts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", help="a Kafka 4.2+ cluster (default: embedded)")
    parser.add_argument("--topic", default="order-updates")
    parser.add_argument("--group", default="orders-eos", help="the share group to consume as")
    parser.add_argument("--postgres-url", help="SQLAlchemy URL (default: a throwaway server)")
    parser.add_argument("--orders", type=int, default=1_000, help="sample orders (embedded)")
    parser.add_argument("--workdir", type=Path, help="journal and checkpoint (default: temp)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="postgres-upserts-"))
    # Spark's, the JVM's and the broker clients' logs go to a file; the terminal gets stages.
    with (
        RunConsole("postgres-upserts", workdir / "spark.log") as console,
        contextlib.ExitStack() as stack,
    ):
        postgres_url = args.postgres_url or console.started(
            stack, "a throwaway PostgreSQL server", throwaway_postgres()
        )
        bootstrap = args.bootstrap_servers
        if bootstrap is None:
            bootstrap = stack.enter_context(broker_with_sample_updates(args.topic, args.orders))
            console.stage(f"embedded broker at {bootstrap} with {len(STATUSES) * args.orders} "
                          "sample updates")
        run(console, bootstrap, args.topic, args.group, postgres_url, workdir)


if __name__ == "__main__":
    main()
