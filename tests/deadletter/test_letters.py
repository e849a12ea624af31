"""Dead letters without Spark: every sink, every stage, replays, and errors that must not divert.

Batches are shaped like the ``kafka-share`` source's rows; targets and dead-letter sinks are
real (SQLite, PostgreSQL, Delta tables on disk, the embedded broker).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.batches import source_rows
from helpers.delta import read_delta

from kafka_share_eos.deadletter import (
    DeadLetterSink,
    DeltaDeadLetters,
    KafkaDeadLetters,
    Rejection,
    SqlDeadLetters,
    letters,
    open_dead_letters,
)
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.strategies import (
    CheckpointDedupStore,
    DeadLetterPolicy,
    IdempotentUpsertSink,
    SinkConfigurationError,
)

pytestmark = pytest.mark.timeout(120)

ORDERS = (
    "CREATE TABLE orders (order_id bigint PRIMARY KEY, amount bigint NOT NULL CHECK (amount >= 0))"
)


def batch(values: list[bytes | None], delivery_counts: list[int] | None = None,
          first_offset: int = 0) -> pa.Table:
    """Source-shaped rows on partition 0 of topic ``orders``."""
    n = len(values)
    return source_rows(
        key=[b"k%d" % i for i in range(n)], value=values, topic="orders", partition=0,
        offset=range(first_offset, first_offset + n), deliveryCount=delivery_counts or 1,
    )


def order(order_id: int, amount: int) -> bytes:
    return json.dumps({"order_id": order_id, "amount": amount}).encode()


def decode(rows: pa.Table) -> pa.Table:
    """The example transform: JSON values to order columns; a bad value raises."""
    decoded = [json.loads(v) for v in rows["value"].to_pylist()]
    return pa.table({
        "order_id": pa.array([int(d["order_id"]) for d in decoded], pa.int64()),
        "amount": pa.array([int(d["amount"]) for d in decoded], pa.int64()),
    })


def stages(sink: DeadLetterSink) -> dict[int, str]:
    read = sink.read()
    return dict(zip(read["offset"].to_pylist(), read["stage"].to_pylist(), strict=True))


def test_letters_keep_coordinates_and_identify_records() -> None:
    rows = batch([b"x", None])
    made = letters(rows, [Rejection(1, "transform", KeyError("order_id"))], strategy="s",
                   batch_id=4)
    letter = made.to_pylist()[0]
    assert letter["letter_id"] == "orders/0/1"
    assert (letter["topic"], letter["partition"], letter["offset"]) == ("orders", 0, 1)
    assert letter["key"] == b"k1" and letter["value"] is None
    assert letter["error_type"] == "KeyError" and letter["batch_id"] == 4
    assert json.loads(letter["row"])["key"] == {"base64": "azE="}


def sql_upsert(url: str, dead: DeadLetterSink, **policy: int) -> IdempotentUpsertSink:
    return IdempotentUpsertSink.sql(
        url, "orders", key_columns=["order_id"], transform=decode,
        dead_letters=DeadLetterPolicy(dead, **policy),
    )


def mixed_batch() -> pa.Table:
    """Offsets 0-9: 1 not JSON, 4 a negative amount (CHECK), 7 past the delivery limit."""
    values = [order(i, 10 * i) for i in range(10)]
    values[1] = b"\xff not json"
    values[4] = order(4, -5)
    counts = [1] * 10
    counts[7] = 3
    return batch(values, counts)


@pytest.mark.parametrize("dialect", ["postgresql", "sqlite"])
def test_bad_records_are_dead_lettered_and_the_rest_of_the_batch_applied(
    dialect: str, postgres_url: str, tmp_path: Path
) -> None:
    url = postgres_url if dialect == "postgresql" else f"sqlite:///{tmp_path / 'orders.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(ORDERS)
    dead = SqlDeadLetters(url, "dead_letters")
    sink = sql_upsert(url, dead, max_delivery_count=3)

    report = sink.apply(mixed_batch(), 0)

    with engine.connect() as conn:
        applied = sorted(conn.exec_driver_sql("SELECT order_id, amount FROM orders").all())
    assert applied == [(i, 10 * i) for i in (0, 2, 3, 5, 6, 8, 9)]
    assert stages(dead) == {1: "transform", 4: "write", 7: "delivery-limit"}
    errors = dict(zip(dead.read()["offset"].to_pylist(), dead.read()["error"].to_pylist(),
                      strict=True))
    assert "check" in errors[4].lower() and "3 times" in errors[7]
    assert (report.rows_in, report.dead_lettered, report.rows_written) == (10, 3, 7)

    # The same batch again (a replay) adds no letter and no row.
    again = sink.apply(mixed_batch(), 0)
    assert dead.count() == 3
    assert (again.dead_lettered, again.already_applied, again.rows_written) == (3, 7, 0)
    sink.close()
    dead.close()
    engine.dispose()


def test_delta_target_and_delta_letters(tmp_path: Path) -> None:
    dead = DeltaDeadLetters(str(tmp_path / "dead"))
    sink = IdempotentUpsertSink.delta(
        str(tmp_path / "orders"), key_columns=["order_id"], transform=decode,
        dead_letters=DeadLetterPolicy(dead, max_delivery_count=3), app_id="orders",
    )
    sink.apply(mixed_batch(), 0)
    table = read_delta(str(tmp_path / "orders"), "SELECT order_id FROM t ORDER BY order_id")
    # Delta has no CHECK here: offset 4 is applied, the other two are letters.
    assert table["order_id"].to_pylist() == [0, 2, 3, 4, 5, 6, 8, 9]
    assert stages(dead) == {1: "transform", 7: "delivery-limit"}
    assert dead.write(dead.read()) == 0


def test_dedup_store_with_dead_letters_in_sqlite(tmp_path: Path) -> None:
    applied: list[pa.Table] = []
    dead = open_dead_letters(f"sqlite:///{tmp_path / 'dead.db'}")
    store = CheckpointDedupStore(
        str(tmp_path / "ledger"), lambda rows, _: applied.append(rows),
        key_columns=["order_id"], transform=decode, dead_letters=dead,
    )
    report = store.apply(mixed_batch(), 0)
    got = sorted(i for t in applied for i in t["order_id"].to_pylist())
    # No delivery limit configured: offset 7 is applied; the CHECK is not the ledger's business.
    assert got == [0, 2, 3, 4, 5, 6, 7, 8, 9]
    assert stages(dead) == {1: "transform"}
    assert report.dead_lettered == 1 and report.rows_written == 9


def test_infrastructure_errors_fail_the_batch_and_divert_nothing(tmp_path: Path) -> None:
    dead = SqlDeadLetters(f"sqlite:///{tmp_path / 'dead.db'}")

    def flaky(rows: pa.Table) -> pa.Table:
        raise ConnectionError("lookup service unreachable")

    sink = IdempotentUpsertSink.sql(f"sqlite:///{tmp_path / 'o.db'}", "orders",
                                    create_table=True, transform=flaky, dead_letters=dead)
    with pytest.raises(ConnectionError):
        sink.apply(mixed_batch(), 0)
    assert dead.count() == 0


def test_without_dead_letters_a_bad_record_fails_the_batch(tmp_path: Path) -> None:
    sink = IdempotentUpsertSink.sql(f"sqlite:///{tmp_path / 'o.db'}", "orders",
                                    key_columns=["order_id"], create_table=True, transform=decode)
    with pytest.raises(UnicodeDecodeError):
        sink.apply(mixed_batch(), 0)


def test_transform_must_keep_one_row_per_row(tmp_path: Path) -> None:
    dead = SqlDeadLetters(f"sqlite:///{tmp_path / 'dead.db'}")
    sink = IdempotentUpsertSink.sql(f"sqlite:///{tmp_path / 'o.db'}", "orders",
                                    create_table=True, transform=lambda rows: rows.slice(1),
                                    dead_letters=dead)
    with pytest.raises(SinkConfigurationError, match="must map each row to one row"):
        sink.apply(mixed_batch(), 0)
    assert dead.count() == 0


def test_executor_writes_refuse_screening(postgres_url: str, tmp_path: Path) -> None:
    with pytest.raises(SinkConfigurationError, match="write_path='executors'"):
        IdempotentUpsertSink.sql(postgres_url, "orders", write_path="executors",
                                 dead_letters=SqlDeadLetters(f"sqlite:///{tmp_path / 'd.db'}"))


def test_kafka_dead_letters_carry_the_record_and_read_back_once(share_topic: ShareTopic) -> None:
    dead = open_dead_letters(f"kafka://{share_topic.bootstrap_servers}/orders-dead")
    assert isinstance(dead, KafkaDeadLetters)
    made = letters(mixed_batch(), [Rejection(1, "transform", ValueError("not JSON")),
                                   Rejection(4, "write", ValueError("negative"))],
                   strategy="s", batch_id=2)
    assert dead.write(made) == 2
    assert dead.write(made) == 2  # a topic cannot refuse repeats; read() keeps the first
    read = dead.read()
    dead.close()
    assert sorted(read["letter_id"].to_pylist()) == ["orders/0/1", "orders/0/4"]
    by_offset = {row["offset"]: row for row in read.to_pylist()}
    assert by_offset[1]["value"] == b"\xff not json" and by_offset[1]["key"] == b"k1"
    assert by_offset[4]["stage"] == "write" and by_offset[4]["error"] == "negative"
    assert by_offset[4]["batch_id"] == 2


def test_a_batch_of_only_bad_records_leaves_the_target_alone(tmp_path: Path) -> None:
    dead = SqlDeadLetters(f"sqlite:///{tmp_path / 'dead.db'}")
    sink = IdempotentUpsertSink.sql(f"sqlite:///{tmp_path / 'o.db'}", "orders",
                                    key_columns=["order_id"], create_table=True,
                                    transform=decode, dead_letters=dead)
    report = sink.apply(batch([b"nope", b"{}"]), 0)
    assert (report.rows_in, report.dead_lettered, report.rows_written) == (2, 2, 0)
    assert stages(dead) == {0: "transform", 1: "transform"}
    # The next batch creates the table from decoded rows, as if the bad batch never was.
    sink.apply(batch([order(7, 70)], first_offset=2), 1)
    assert sink.totals.rows_written == 1
