"""Account balances with two-phase commit: every payment added exactly once, in Postgres and Delta.

    python examples/account_balances.py                  # embedded broker, throwaway Postgres
    python examples/account_balances.py --bootstrap-servers broker:9092 --topic payments \\
        --group balances-eos --postgres-url postgresql+psycopg://app@db/bank --workdir /data/bank

``balance = balance + amount`` is not idempotent: applied twice, it is wrong. The coordinator
prepares each micro-batch in Postgres (the increments, skipping payments its ledger already
holds) and in Delta (an audit table of the payments), logs its decision, then commits both.
To show that redeliveries change nothing, the pipeline fails once right after a batch was
committed: Spark re-runs that batch from the journal and the broker redelivers its records.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from pyspark.sql import functions as F

import kafka_share_eos
from kafka_share_eos import (
    DeltaParticipant,
    EmbeddedBroker,
    PostgresParticipant,
    TwoPhaseCommitCoordinator,
)
from kafka_share_eos.proving_ground.console import CrashOnce, RunConsole
from kafka_share_eos.proving_ground.launchers.postgres import postgres_for_tests

PAYMENT_SCHEMA = "payment_id BIGINT, account INT, amount BIGINT"
INCREMENT = "UPDATE accounts SET balance = balance + :amount WHERE id = :account"


def sample_payment(payment_id: int, accounts: int) -> dict[str, int]:
    """The embedded topic's payment number ``payment_id``."""
    return {"payment_id": payment_id, "account": payment_id % accounts,
            "amount": 1 + payment_id * 37 % 500}


@contextlib.contextmanager
def broker_with_sample_payments(topic: str, payments: int, accounts: int) -> Iterator[str]:
    """An embedded broker holding ``payments`` sample payments."""
    from confluent_kafka import Producer

    with EmbeddedBroker([f"{topic}:4"]) as broker:
        producer = Producer(broker.client_config())
        for payment_id in range(payments):
            producer.produce(topic, value=json.dumps(sample_payment(payment_id, accounts)))
        producer.flush(30)
        yield broker.bootstrap_servers


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    """A fresh database on a local PostgreSQL server (prepared transactions enabled)."""
    with postgres_for_tests() as server:
        yield server.create_database()


def create_accounts(postgres_url: str, accounts: int) -> None:
    """Accounts 0 .. accounts-1 with a zero balance, unless the table exists."""
    engine = sa.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "CREATE TABLE IF NOT EXISTS accounts (id int PRIMARY KEY, balance bigint NOT NULL)"
        ))
        conn.execute(
            sa.text("INSERT INTO accounts VALUES (:id, 0) ON CONFLICT DO NOTHING"),
            [{"id": account} for account in range(accounts)],
        )
    engine.dispose()


def run(console: RunConsole, args: argparse.Namespace, bootstrap_servers: str,
        postgres_url: str) -> dict[int, int]:
    """Drain the topic into the balances and the audit table; return the balances."""
    create_accounts(postgres_url, args.accounts)
    coordinator = TwoPhaseCommitCoordinator(
        log=str(args.workdir / "decisions"),
        participants=[
            PostgresParticipant(postgres_url, INCREMENT, name="balances"),
            DeltaParticipant(str(args.workdir / "payments")),
        ],
        app_id="balances",
    )
    spark = console.spark("account-balances")
    kafka_share_eos.register(spark)
    payments = (
        spark.readStream.format("kafka-share")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("kafka.share.group.id", args.group)
        .option("subscribe", args.topic)
        .option("journalPath", str(args.workdir / "journal"))
        .option("kafka.max.poll.records", str(args.per_trigger))
        .load()
        .select("topic", "partition", "offset",
                F.from_json(F.col("value").cast("string"), PAYMENT_SCHEMA).alias("payment"))
        .select("topic", "partition", "offset", "payment.*")
    )
    total = args.payments if args.bootstrap_servers is None else None
    with console.tracking(coordinator, total, "payments") as tracked:
        # Fails once right after the batch committed, as a crash would; drain() restarts the
        # query on the same checkpoint, as a scheduler would after a failure.
        pipeline = CrashOnce(tracked, args.fail_after_batch)
        console.drain(
            lambda: payments.writeStream.foreachBatch(pipeline)
            .trigger(availableNow=True)
            .option("checkpointLocation", str(args.workdir / "checkpoint"))
            .start()
        )
    totals = coordinator.totals
    print(
        f"{totals.batches} batches, {totals.rows_in} payments in, "
        f"{totals.duplicates_in_batch + totals.already_applied} redelivered or replayed payments "
        f"absorbed, {totals.rows_written} applied"
    )
    engine = sa.create_engine(postgres_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT id, balance FROM accounts ORDER BY id")).all()
    engine.dispose()
    return {int(account): int(balance) for account, balance in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", help="a Kafka 4.2+ cluster (default: embedded)")
    parser.add_argument("--topic", default="payments")
    parser.add_argument("--group", default="balances-eos", help="the share group to consume as")
    parser.add_argument("--postgres-url", help="SQLAlchemy URL (default: a throwaway server)")
    parser.add_argument("--workdir", type=Path, help="journal, checkpoint, decisions, Delta")
    parser.add_argument("--accounts", type=int, default=10)
    parser.add_argument("--payments", type=int, default=2_000, help="sample payments (embedded)")
    parser.add_argument("--per-trigger", type=int, default=200, help="payments per micro-batch")
    parser.add_argument("--fail-after-batch", type=int, default=1,
                        help="fail once after committing this batch (-1: never)")
    args = parser.parse_args()
    args.workdir = args.workdir or Path(tempfile.mkdtemp(prefix="account-balances-"))
    # Spark's, the JVM's and the broker clients' logs go to a file; the terminal gets stages.
    with (
        RunConsole("account-balances", args.workdir / "spark.log") as console,
        contextlib.ExitStack() as stack,
    ):
        postgres_url = args.postgres_url or console.started(
            stack, "a throwaway PostgreSQL server", throwaway_postgres()
        )
        if args.bootstrap_servers:
            print(f"balances: {run(console, args, args.bootstrap_servers, postgres_url)}")
            return
        bootstrap = stack.enter_context(
            broker_with_sample_payments(args.topic, args.payments, args.accounts)
        )
        console.stage(f"embedded broker at {bootstrap} with {args.payments} sample payments")
        balances = run(console, args, bootstrap, postgres_url)
        expected = dict.fromkeys(range(args.accounts), 0)
        for payment_id in range(args.payments):
            payment = sample_payment(payment_id, args.accounts)
            expected[payment["account"]] += payment["amount"]
        print(f"balances: {balances}")
        if balances != expected:
            sys.exit(f"balances differ from the payments produced: expected {expected}")
        print("every payment was added exactly once")


if __name__ == "__main__":
    main()
