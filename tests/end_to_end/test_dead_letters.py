"""Dead letters end to end: the kafka-share source, Spark, a Postgres target and letters.

A record that cannot be decoded, one the table's CHECK refuses and records the broker delivered
up to the delivery limit go to the dead letters; every other record is applied exactly once, no
record is both, and each batch's metrics account for every row it took in. A record back at the
limit because the acknowledgement of its applied batch was lost is not a letter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from confluent_kafka import AcknowledgeType, Producer
from helpers import consume, produce, share_consumer
from helpers.streaming import run_available_now, share_stream
from pyspark.sql import DataFrame, SparkSession

from kafka_share_eos.deadletter import SqlDeadLetters
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.strategies import DeadLetterPolicy, IdempotentUpsertSink

pytestmark = [pytest.mark.spark, pytest.mark.postgres, pytest.mark.timeout(300)]

COUNT = 120
# The releasing consumer leaves records its client fetched but never handed out locked to it
# until the lock expires (the embedded broker does not release them when it leaves): a short
# lock and a drain that idles longer than one bring them back within the run.
RECORD_LOCK_MS = 8000
IDLE_LONGER_THAN_A_LOCK = {"availableNowIdleMs": str(RECORD_LOCK_MS + 2000)}
UNDECODABLE, NEGATIVE = 17, 42


def decode(rows: pa.Table) -> pa.Table:
    decoded = [json.loads(v) for v in rows["value"].to_pylist()]
    return pa.table({
        "topic": rows["topic"],
        "partition": rows["partition"],
        "offset": rows["offset"],
        "order_id": pa.array([int(d["order_id"]) for d in decoded], pa.int64()),
        "amount": pa.array([int(d["amount"]) for d in decoded], pa.int64()),
    })


def metric_lines(path: Path) -> list[dict[str, int]]:
    """The strategy's per-batch metrics, each checked to account for every row it took in:
    written, found applied, a duplicate in the batch or dead-lettered."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        assert line["rows_in"] == (line["rows_written"] + line["already_applied"]
                                   + line["duplicates_in_batch"] + line["dead_lettered"]), line
    return lines


@pytest.mark.record_lock_ms(RECORD_LOCK_MS)
def test_poison_constraint_and_delivery_limit_records_end_in_dead_letters(
    spark: SparkSession, private_share_topic: ShareTopic, postgres_url: str, tmp_path: Path
) -> None:
    share_topic = private_share_topic
    values = [json.dumps({"order_id": i, "amount": i}).encode() for i in range(COUNT)]
    values[UNDECODABLE] = b"{broken"
    values[NEGATIVE] = json.dumps({"order_id": NEGATIVE, "amount": -1}).encode()
    produce(share_topic.bootstrap_servers, share_topic.topic, values,
            partitions=share_topic.partitions)
    # Values go round-robin to partitions of a fresh topic: value i is at (i % P, i // P).
    at = {i: (i % share_topic.partitions, i // share_topic.partitions) for i in range(COUNT)}
    # Release records until some were released on their second delivery: those come back a
    # third time, which reaches max_delivery_count=3.
    with share_consumer(share_topic.bootstrap_servers, share_topic.group_id,
                        [share_topic.topic], **{"max.poll.records": 5}) as other:
        released = consume(other, timeout=60, acknowledge=lambda _: AcknowledgeType.RELEASE,
                           until=lambda ds: any(d.delivery_count >= 2 for d in ds))
    twice = {(d.partition, d.offset) for d in released if d.delivery_count >= 2}
    assert twice and len(twice) < COUNT // 4

    engine = sa.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "CREATE TABLE orders (topic text, \"partition\" integer, \"offset\" bigint, "
            "order_id bigint NOT NULL, amount bigint NOT NULL CHECK (amount >= 0), "
            "PRIMARY KEY (topic, \"partition\", \"offset\"))"
        )
    dead = SqlDeadLetters(postgres_url, "orders_dead")
    metrics = tmp_path / "strategy-metrics.jsonl"
    sink = IdempotentUpsertSink.sql(
        postgres_url, "orders", transform=decode, metrics_path=str(metrics),
        dead_letters=DeadLetterPolicy(dead, max_delivery_count=3),
    )
    run_available_now(share_stream(spark, share_topic, tmp_path / "journal",
                                   **{"kafka.max.poll.records": "40"}, **IDLE_LONGER_THAN_A_LOCK),
                      tmp_path / "cp", sink)

    with engine.connect() as conn:
        applied = conn.exec_driver_sql('SELECT "partition", "offset", amount FROM orders').all()
    letters = {(r["partition"], r["offset"]): r for r in dead.read().to_pylist()}
    undecodable, negative = at[UNDECODABLE], at[NEGATIVE]
    at_limit = {c for c, letter in letters.items() if letter["stage"] == "delivery-limit"}
    # Released twice before the run, these reach the limit with their first delivery to Spark.
    # The broker may add more: it drops every share session when any client disconnects, and
    # redelivers what the runner held but had not handed to Spark.
    assert twice <= at_limit
    # The delivery limit is checked first: it also catches a bad record delivered three times.
    assert set(letters) - at_limit == {undecodable, negative} - at_limit
    for coordinates, stage in ((undecodable, "transform"), (negative, "write")):
        assert coordinates in at_limit or letters[coordinates]["stage"] == stage
    assert negative in at_limit or "check" in letters[negative]["error"].lower()
    applied_at = [(p, o) for p, o, _ in applied]
    # Each record applied once or dead-lettered: never both, never neither.
    assert len(applied_at) == len(set(applied_at))
    assert not set(applied_at) & set(letters)
    assert set(applied_at) | set(letters) == set(at.values())

    lines = metric_lines(metrics)
    assert sum(line["rows_written"] for line in lines) == len(applied_at)
    sink.close()
    dead.close()
    engine.dispose()


@pytest.mark.record_lock_ms(RECORD_LOCK_MS)
def test_records_back_at_the_limit_after_a_lost_acknowledgement_are_not_dead_lettered(
    spark: SparkSession, private_share_topic: ShareTopic, tmp_path: Path
) -> None:
    share_topic = private_share_topic
    count = 40
    produce(share_topic.bootstrap_servers, share_topic.topic,
            [json.dumps({"order_id": i, "amount": i}).encode() for i in range(count)],
            partitions=share_topic.partitions)
    # Every record is released once, so Spark's first delivery is the second: below the limit
    # of 3. Records this consumer happened to see twice reach the limit with Spark's first.
    with share_consumer(share_topic.bootstrap_servers, share_topic.group_id,
                        [share_topic.topic]) as other:
        released = consume(other, timeout=60, acknowledge=lambda _: AcknowledgeType.RELEASE,
                           until=lambda ds: len({(d.partition, d.offset) for d in ds}) == count)
    twice = {(d.partition, d.offset) for d in released if d.delivery_count >= 2}

    url = f"sqlite:///{tmp_path / 'orders.db'}"
    dead = SqlDeadLetters(url, "orders_dead")
    metrics = tmp_path / "strategy-metrics.jsonl"
    sink = IdempotentUpsertSink.sql(
        url, "orders", create_table=True, transform=decode,
        metrics_path=str(metrics), dead_letters=DeadLetterPolicy(dead, max_delivery_count=3),
    )

    def apply_then_drop_sessions(batch_df: DataFrame, batch_id: int) -> None:
        sink(batch_df, batch_id)
        if batch_id == 0:
            # The embedded broker drops every share session when a client disconnects: the
            # runner's ACCEPT of this applied batch fails and its records come back, now at
            # their third delivery.
            Producer({"bootstrap.servers": share_topic.bootstrap_servers}).list_topics(timeout=10)

    run_available_now(share_stream(spark, share_topic, tmp_path / "journal",
                                   **{"kafka.max.poll.records": str(count)},
                                   **IDLE_LONGER_THAN_A_LOCK),
                      tmp_path / "cp", apply_then_drop_sessions)

    lines = metric_lines(metrics)
    back_applied = sum(line["already_applied"] for line in lines)
    assert back_applied > 0, f"no applied record came back: {lines}"
    stages = {(r["partition"], r["offset"]): r["stage"] for r in dead.read().to_pylist()}
    assert twice <= set(stages) and set(stages.values()) <= {"delivery-limit"}
    with sa.create_engine(url).connect() as conn:
        rows = conn.exec_driver_sql('SELECT "partition", "offset" FROM orders')
        applied = [(partition, offset) for partition, offset in rows]
    # Each record applied once or dead-lettered, never both, never neither.
    assert len(applied) == len(set(applied))
    assert not set(applied) & set(stages)
    assert set(applied) | set(stages) == {(d.partition, d.offset) for d in released}
    sink.close()
    dead.close()
