"""Accounts whose balances add up payment records: an effect that shows any double application.

Payment records carry Kafka coordinates, an account and an amount; the Postgres effect
``INCREMENT`` adds the amount to the account's balance.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import TYPE_CHECKING

import pyarrow as pa
from confluent_kafka import Producer
from deltalake import DeltaTable
from sqlalchemy import create_engine, text

from helpers.batches import source_rows
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

ACCOUNTS = 7
INCREMENT = "UPDATE accounts SET balance = balance + :amount WHERE id = :account"


def payments(count: int, seed: int = 7) -> pa.Table:
    """``count`` payment records with Kafka coordinates spread over 3 partitions."""
    rng = random.Random(seed)
    return source_rows(
        topic="payments",
        partition=[i % 3 for i in range(count)],
        offset=[i // 3 for i in range(count)],
        account=pa.array([rng.randrange(ACCOUNTS) for _ in range(count)], pa.int32()),
        amount=pa.array([rng.randrange(1, 1000) for _ in range(count)], pa.int64()),
    )


def expected_balances(records: pa.Table) -> dict[int, int]:
    totals: Counter[int] = Counter()
    for account, amount in zip(
        records["account"].to_pylist(), records["amount"].to_pylist(), strict=True
    ):
        totals[account] += amount
    return {a: totals[a] for a in range(ACCOUNTS)}


def create_accounts(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL)"))
        conn.execute(
            text("INSERT INTO accounts VALUES (:id, 0)"), [{"id": a} for a in range(ACCOUNTS)]
        )
    engine.dispose()


def balances(url: str) -> dict[int, int]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, balance FROM accounts")).all()
    engine.dispose()
    return {int(r[0]): int(r[1]) for r in rows}


def prepared_gids(url: str) -> list[str]:
    engine = create_engine(url)
    with engine.connect() as conn:
        gids = list(conn.execute(text("SELECT gid FROM pg_prepared_xacts")).scalars())
    engine.dispose()
    return gids


def record_keys(records: pa.Table) -> list[tuple[int, int]]:
    """The ``(partition, offset)`` of each record, sorted: what :func:`delta_keys` returns
    when the Delta table holds each of ``records`` once."""
    return sorted(
        zip(records["partition"].to_pylist(), records["offset"].to_pylist(), strict=True)
    )


def delta_keys(path: str) -> list[tuple[int, int]]:
    table = DeltaTable(path).to_pyarrow_table(columns=["partition", "offset"])
    return sorted(
        zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True)
    )


def wait_for_lock_waiter(url: str, timeout: float = 30) -> None:
    """Return once a session of the database at ``url`` waits for a lock another transaction
    holds (a prepared transaction's rows, say); fail after ``timeout`` seconds."""
    engine = create_engine(url)
    deadline = time.monotonic() + timeout
    try:
        with engine.connect() as conn:
            while not conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
            ).scalar_one():
                assert time.monotonic() < deadline, "no session started waiting for a lock"
                conn.rollback()  # a fresh snapshot of pg_stat_activity
                time.sleep(0.05)
    finally:
        engine.dispose()


def produce_payments(topic: ShareTopic, count: int) -> pa.Table:
    rng = random.Random(3)
    sent: dict[str, list[int]] = {"partition": [], "offset": [], "account": [], "amount": []}
    producer = Producer({"bootstrap.servers": topic.bootstrap_servers, "linger.ms": 5})

    def delivered(err: object, msg: object, account: int, amount: int) -> None:
        assert err is None, err
        sent["partition"].append(msg.partition())  # type: ignore[attr-defined]
        sent["offset"].append(msg.offset())  # type: ignore[attr-defined]
        sent["account"].append(account)
        sent["amount"].append(amount)

    for i in range(count):
        account, amount = rng.randrange(7), rng.randrange(1, 500)
        producer.produce(
            topic.topic, value=f"{account}:{amount}".encode(), partition=i % topic.partitions,
            on_delivery=lambda err, msg, a=account, m=amount: delivered(err, msg, a, m),
        )
    assert producer.flush(30) == 0
    return pa.table(sent)


def payment_columns(stream: DataFrame) -> DataFrame:
    """The payments of a ``kafka-share`` stream of ``account:amount`` values: its coordinates
    and delivery count, with the account and the amount (null for any other value)."""
    return stream.selectExpr(
        "topic", "partition", "offset", "key", "value", "deliveryCount",
        "try_cast(get(split(CAST(value AS STRING), ':'), 0) AS INT) AS account",
        "try_cast(get(split(CAST(value AS STRING), ':'), 1) AS BIGINT) AS amount",
    )
