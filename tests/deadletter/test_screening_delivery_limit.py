"""A record back at the delivery limit after its batch was applied is a redelivery, not poison.

Its acknowledgement was lost (a dropped share session, a lock that expired after the write), so
the broker delivers it again with a higher count. Dead-lettering it would leave it both applied
and dead-lettered; every strategy that can look its records up lets it through to the write,
which finds it already applied. Targets are real: SQLite, PostgreSQL and Delta tables on disk.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.delivery_limit import LIMIT, deliveries
from helpers.delta import read_delta

from kafka_share_eos.deadletter import SqlDeadLetters
from kafka_share_eos.strategies import (
    BatchStrategy,
    CheckpointDedupStore,
    DeadLetterPolicy,
    IdempotentUpsertSink,
    TwoPhaseCommitCoordinator,
)
from kafka_share_eos.twophase.delta import DeltaParticipant
from kafka_share_eos.twophase.postgres import PostgresParticipant

pytestmark = pytest.mark.timeout(120)


def decode(rows: pa.Table) -> pa.Table:
    orders = [int(json.loads(v)["order_id"]) for v in rows["value"].to_pylist()]
    return rows.select(["topic", "partition", "offset"]).append_column(
        "order_id", pa.array(orders, pa.int64())
    )


Target = tuple[BatchStrategy, Callable[[], list[int]]]


def sql_target(url: str, letters_url: str) -> Target:
    sink = IdempotentUpsertSink.sql(url, "orders", create_table=True, **screening(letters_url))
    engine = sa.create_engine(url)

    def applied() -> list[int]:
        with engine.connect() as conn:
            return [r[0] for r in conn.exec_driver_sql("SELECT order_id FROM orders")]

    return sink, applied


def screening(url: str) -> dict[str, object]:
    dead = SqlDeadLetters(url, "orders_dead")
    return {"transform": decode, "dead_letters": DeadLetterPolicy(dead, max_delivery_count=LIMIT)}


def letters(url: str) -> dict[int, str]:
    read = SqlDeadLetters(url, "orders_dead").read()
    return dict(zip(read["offset"].to_pylist(), read["stage"].to_pylist(), strict=True))


@pytest.fixture(params=[
    "sqlite", "postgresql", "delta", "dedup-store", "two-phase-postgres", "two-phase-delta"
])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Target, str]:
    letters_url = f"sqlite:///{tmp_path / 'letters.db'}"
    if request.param == "sqlite":
        return sql_target(f"sqlite:///{tmp_path / 'orders.db'}", letters_url), letters_url
    if request.param == "postgresql":
        url = request.getfixturevalue("postgres_url")
        return sql_target(url, url), url
    if request.param == "delta":
        location = str(tmp_path / "orders")
        sink = IdempotentUpsertSink.delta(location, app_id="orders", **screening(letters_url))

        def in_delta() -> list[int]:
            return read_delta(location, "SELECT order_id FROM t")["order_id"].to_pylist()

        return (sink, in_delta), letters_url
    if request.param == "two-phase-postgres":
        url = request.getfixturevalue("postgres_url")
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE applied_orders (order_id bigint NOT NULL)")
        # A plain INSERT is not idempotent: a second application would show as a second row.
        participant = PostgresParticipant(
            url, "INSERT INTO applied_orders (order_id) VALUES (:order_id)"
        )
        coordinator = TwoPhaseCommitCoordinator(
            str(tmp_path / "decisions"), [participant], app_id="orders", **screening(url)
        )

        def inserted() -> list[int]:
            with engine.connect() as conn:
                return [r[0] for r in conn.exec_driver_sql("SELECT order_id FROM applied_orders")]

        return (coordinator, inserted), url
    if request.param == "two-phase-delta":
        location = str(tmp_path / "orders")
        coordinator = TwoPhaseCommitCoordinator(
            str(tmp_path / "decisions"), [DeltaParticipant(location)], app_id="orders",
            **screening(letters_url),
        )

        def appended() -> list[int]:
            return read_delta(location, "SELECT order_id FROM t")["order_id"].to_pylist()

        return (coordinator, appended), letters_url
    handed: list[int] = []
    store = CheckpointDedupStore(
        str(tmp_path / "ledger"),
        lambda rows, _: handed.extend(rows["order_id"].to_pylist()),
        **screening(letters_url),
    )
    return (store, lambda: list(handed)), letters_url


def test_a_record_applied_before_is_not_dead_lettered_at_the_limit(
    target: tuple[Target, str],
) -> None:
    (strategy, applied), letters_url = target
    # Offset 4 is at the limit before the target (or ledger) exists: nothing was applied yet.
    strategy.apply(deliveries([0, 1, 2, 3, 4], [1, 1, 2, 1, LIMIT]), 0)
    # Offsets 2 and 3 were applied in batch 0 and come back at the limit; offset 5 reaches the
    # limit without ever having been applied: it is the poison the limit is for.
    report = strategy.apply(deliveries([2, 3, 5, 6], [LIMIT, LIMIT + 1, LIMIT, 1]), 1)

    assert letters(letters_url) == {4: "delivery-limit", 5: "delivery-limit"}
    assert sorted(applied()) == [0, 1, 2, 3, 6]
    assert (report.rows_in, report.dead_lettered, report.already_applied, report.rows_written) \
        == (4, 1, 2, 1)


def test_key_columns_in_another_order_are_still_the_record_identity(tmp_path: Path) -> None:
    letters_url = f"sqlite:///{tmp_path / 'letters.db'}"
    sink = IdempotentUpsertSink.sql(
        f"sqlite:///{tmp_path / 'orders.db'}", "orders", create_table=True,
        key_columns=["offset", "topic", "partition"], **screening(letters_url),
    )
    sink.apply(deliveries([0, 1], [1, 1]), 0)
    report = sink.apply(deliveries([1], [LIMIT]), 1)
    assert letters(letters_url) == {}
    assert report.already_applied == 1
