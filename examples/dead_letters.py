"""Apply payments to SQL, dead-letter the ones that cannot be applied, lose none.

    python examples/dead_letters.py                   # embedded broker, SQLite, Delta letters
    python examples/dead_letters.py --bootstrap-servers broker:9092 --topic payments \\
        --group payments-eos --sql-url postgresql+psycopg://app@db/shop \\
        --dead-letters kafka://broker:9092/payments-dead        # your cluster, DB and topic

Each record is a payment {"payment_id", "amount"}. The strategy decodes it (``transform``) and
upserts it into a table whose CHECK refuses negative amounts. A value that is not JSON, a
negative amount, or a record the broker delivered ``--max-delivery-count`` times goes to the
dead letters with its error and coordinates; the rest of its batch is applied.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import sqlalchemy as sa

import kafka_share_eos
from kafka_share_eos import (
    DeadLetterPolicy,
    EmbeddedBroker,
    IdempotentUpsertSink,
    open_dead_letters,
)
from kafka_share_eos.proving_ground.console import RunConsole

PAYMENTS_TABLE = (
    "CREATE TABLE IF NOT EXISTS payments (payment_id bigint PRIMARY KEY, "
    "amount bigint NOT NULL CHECK (amount >= 0))"
)


def sample_payments(count: int) -> list[bytes]:
    """``count`` payments; every 50th is not JSON and every 70th has a negative amount."""
    values = []
    for payment_id in range(count):
        if payment_id % 50 == 49:
            values.append(b"<payment id=%d/>" % payment_id)
        else:
            amount = -payment_id if payment_id % 70 == 69 else payment_id % 500
            values.append(json.dumps({"payment_id": payment_id, "amount": amount}).encode())
    return values


@contextlib.contextmanager
def broker_with_sample_payments(topic: str, count: int) -> Iterator[str]:
    """An embedded broker holding ``count`` sample payments."""
    from confluent_kafka import Producer

    with EmbeddedBroker([f"{topic}:3"]) as broker:
        producer = Producer(broker.client_config())
        for value in sample_payments(count):
            producer.produce(topic, value=value)
        producer.flush(30)
        yield broker.bootstrap_servers


def decode(rows: pa.Table) -> pa.Table:
    """Payment columns from the JSON value; raises on a value that is not a payment."""
    payments = [json.loads(value) for value in rows["value"].to_pylist()]
    return pa.table({
        "payment_id": pa.array([int(p["payment_id"]) for p in payments], pa.int64()),
        "amount": pa.array([int(p["amount"]) for p in payments], pa.int64()),
    })


def run(console: RunConsole, args: argparse.Namespace, bootstrap_servers: str,
        workdir: Path) -> None:
    """Drain the topic into the payments table; print what went where."""
    sql_url = args.sql_url or f"sqlite:///{workdir / 'payments.db'}"
    engine = sa.create_engine(sql_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(PAYMENTS_TABLE)
    dead_letters = open_dead_letters(args.dead_letters or str(workdir / "dead-letters"))
    sink = IdempotentUpsertSink.sql(
        sql_url, "payments", key_columns=["payment_id"], transform=decode,
        dead_letters=DeadLetterPolicy(dead_letters, max_delivery_count=args.max_delivery_count),
        metrics_path=str(workdir / "strategy-metrics.jsonl"),
    )
    spark = console.spark("dead-letters")
    kafka_share_eos.register(spark)
    payments = (
        spark.readStream.format("kafka-share")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("kafka.share.group.id", args.group)
        .option("subscribe", args.topic)
        .option("journalPath", str(workdir / "journal"))
        .load()
    )
    total = args.payments if args.bootstrap_servers is None else None
    with console.tracking(sink, total, "payments") as pipeline:
        query = (
            payments.writeStream.foreachBatch(pipeline)
            .trigger(availableNow=True)
            .option("checkpointLocation", str(workdir / "checkpoint"))
            .start()
        )
        query.awaitTermination()
    totals = sink.totals
    with engine.connect() as conn:
        applied = conn.execute(sa.text("SELECT count(*) FROM payments")).scalar_one()
    engine.dispose()
    letters = dead_letters.read()
    print(f"{totals.rows_in} payments in, {totals.rows_written} applied, "
          f"{totals.dead_lettered} dead-lettered; table holds {applied} payments")
    print(f"dead letters in {dead_letters.target}: {letters.num_rows}")
    for letter in letters.slice(0, 5).to_pylist():
        print(f"  {letter['letter_id']} [{letter['stage']}] {letter['error_type']}: "
              f"{letter['error'].splitlines()[0][:100]}")
    sink.close()
    dead_letters.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", help="a Kafka 4.2+ cluster (default: embedded)")
    parser.add_argument("--topic", default="payments")
    parser.add_argument("--group", default="payments-eos", help="the share group to consume as")
    parser.add_argument("--sql-url", help="SQLAlchemy URL of the target (default: SQLite)")
    parser.add_argument("--dead-letters",
                        help="dead-letter URI: SQL URL, kafka://host:port/topic or a Delta path")
    parser.add_argument("--max-delivery-count", type=int, default=4,
                        help="dead-letter records delivered this many times (broker limit: 5)")
    parser.add_argument("--payments", type=int, default=1_000, help="sample payments (embedded)")
    parser.add_argument("--workdir", type=Path, help="journal, checkpoint, SQLite, letters")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="dead-letters-"))
    # Spark's, the JVM's and the broker clients' logs go to a file; the terminal gets stages.
    with (
        RunConsole("dead-letters", workdir / "spark.log") as console,
        contextlib.ExitStack() as stack,
    ):
        bootstrap = args.bootstrap_servers
        if bootstrap is None:
            bootstrap = stack.enter_context(broker_with_sample_payments(args.topic, args.payments))
            console.stage(f"embedded broker at {bootstrap} with {args.payments} sample payments")
        run(console, args, bootstrap, workdir)


if __name__ == "__main__":
    main()
