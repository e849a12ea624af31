"""The kafka-share source end to end: embedded broker over TCP, local Spark, journal on disk."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import AcknowledgeType, Producer
from helpers import consume, count_at_least, produce, share_consumer
from helpers.source_streams import stream
from helpers.streaming import run_available_now

from kafka_share_eos.journal import Journal
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.proving_ground.streams import batch_size

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.older_pyspark, pytest.mark.timeout(240)]

Row = dict[str, Any]
# Short enough that a record locked to a departed runner comes back within one drain.
RECORD_LOCK_MS = 8000
# Longer than a test may run: a batch held past its lock has its acknowledgement refused and its
# records delivered again (at least once), which a loaded machine causes with a 30 s lock. Tests
# that count deliveries exactly hold their records under this lock, so that only the source
# itself could deliver a record twice.
NO_EXPIRY_LOCK_MS = 600_000


class Collector:
    """A foreachBatch target keeping every batch's rows in the driver, optionally failing once."""

    def __init__(self, fail_on_batch: int | None = None) -> None:
        self.batches: dict[int, list[Row]] = defaultdict(list)
        self.fail_on_batch = fail_on_batch

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        rows = [row.asDict(recursive=True) for row in batch.collect()]
        self.batches[batch_id] = rows
        if batch_id == self.fail_on_batch:
            self.fail_on_batch = None
            raise RuntimeError(f"sink failed on batch {batch_id}")

    def rows(self) -> list[Row]:
        return [row for rows in self.batches.values() for row in rows]


def identity(row: Row) -> tuple[str, int, int]:
    return (row["topic"], row["partition"], row["offset"])


def produce_varied(topic: ShareTopic, count: int) -> dict[tuple[int, int], tuple[Any, ...]]:
    """Null keys, empty and large values, headers; map ``(partition, offset)`` to the record."""
    sent: dict[tuple[int, int], tuple[Any, ...]] = {}
    producer = Producer({"bootstrap.servers": topic.bootstrap_servers, "linger.ms": 5})
    for i in range(count):
        key = None if i % 5 == 0 else b"k%d" % i
        value = b"" if i % 7 == 0 else (b"L" * 300_000 if i == 13 else b"v%d" % i)
        headers = [("h", b"%d" % i), ("empty", None)] if i % 3 == 0 else None

        def record(err: Any, msg: Any, produced: tuple[Any, ...] = (key, value, headers)) -> None:
            assert err is None, err
            sent[(msg.partition(), msg.offset())] = produced

        producer.produce(
            topic.topic, key=key, value=value, headers=headers,
            partition=i % topic.partitions, on_delivery=record,
        )
    assert producer.flush(30) == 0
    return sent


@pytest.mark.record_lock_ms(NO_EXPIRY_LOCK_MS)
def test_every_record_arrives_once_with_its_columns(
    spark: SparkSession, private_share_topic: ShareTopic, tmp_path: Path
) -> None:
    share_topic = private_share_topic
    sent = produce_varied(share_topic, 300)
    sink = Collector()
    df = stream(spark, share_topic, tmp_path / "journal", includeHeaders="true",
                **{"kafka.max.poll.records": "100"})
    run_available_now(df, tmp_path / "checkpoint", sink)
    rows = sink.rows()
    assert len(rows) == len(sent)
    assert {(r["partition"], r["offset"]): r for r in rows}.keys() == sent.keys()
    for row in rows:
        key, value, headers = sent[(row["partition"], row["offset"])]
        assert (row["key"], row["value"]) == (key, value)
        expected = None if headers is None else [{"key": k, "value": v} for k, v in headers]
        assert row["headers"] == expected
        assert row["topic"] == share_topic.topic
        assert row["deliveryCount"] == 1
        assert row["timestampType"] == 0 and row["timestamp"] is not None
    assert all(len(batch) <= 100 for batch in sink.batches.values())
    # Every batch was committed, so the last planning purged every segment.
    assert Journal(str(tmp_path / "journal")).sequences() == []


def summary(rows: list[Row]) -> list[tuple[Any, ...]]:
    return sorted((*identity(r), r["value"], r["deliveryCount"]) for r in rows)


def run_failing_then_restarted(
    spark: SparkSession, topic: ShareTopic, tmp_path: Path, policy: str
) -> tuple[Collector, Collector]:
    """Batch 1 fails on the first run; the second run restarts on the same checkpoint.

    Callers pass a topic on a private broker: they count exact redeliveries, and on a shared
    embedded broker any other client leaving drops every share session.
    """
    produce(topic.bootstrap_servers, topic.topic, (b"%d" % i for i in range(300)),
            partitions=topic.partitions)
    options = {**batch_size(100, policy), "acknowledge": policy}
    journal, checkpoint = tmp_path / "journal", tmp_path / "cp"
    first = Collector(fail_on_batch=1)
    with pytest.raises(Exception, match="sink failed on batch 1"):
        run_available_now(stream(spark, topic, journal, **options), checkpoint, first)
    second = Collector()
    # Records the first runner's client had fetched but not handed out stay locked to it after
    # it left, until their lock expires (the embedded broker does not release them): the second
    # drain idles longer than a lock, so they come back in it.
    idle = {"availableNowIdleMs": str(RECORD_LOCK_MS + 2000)}
    run_available_now(stream(spark, topic, journal, **options, **idle), checkpoint, second)
    # The planned-but-uncommitted batch is re-run from the journal with the same records.
    assert 0 not in second.batches
    assert summary(second.batches[1]) == summary(first.batches[1])
    assert len(first.batches[1]) > 0
    return first, second


def delivered_again(collector: Collector) -> set[tuple[str, int, int]]:
    return {identity(r) for r in collector.rows() if r["deliveryCount"] >= 2}


@pytest.mark.older_pyspark(full=True)
@pytest.mark.record_lock_ms(RECORD_LOCK_MS)
def test_after_commit_replays_the_failed_batch_and_its_records_are_redelivered(
    spark: SparkSession, private_share_topic: ShareTopic, tmp_path: Path
) -> None:
    first, second = run_failing_then_restarted(spark, private_share_topic, tmp_path, "afterCommit")
    applied = first.batches[0] + second.rows()
    assert len({identity(r) for r in applied}) == 300
    assert all(r["deliveryCount"] >= 1 for r in applied)
    # Batch 1 was never ACCEPTed: the broker handed its records out again (the duplicates the
    # strategies drop). Batch 0 was ACCEPTed once Spark had committed it: none of it came back.
    assert {identity(r) for r in first.batches[1]} <= delivered_again(second)
    assert not delivered_again(second) & {identity(r) for r in first.batches[0]}


@pytest.mark.older_pyspark(full=True)
@pytest.mark.record_lock_ms(RECORD_LOCK_MS)
def test_after_journal_replays_the_failed_batch_without_redelivery(
    spark: SparkSession, private_share_topic: ShareTopic, tmp_path: Path
) -> None:
    first, second = run_failing_then_restarted(spark, private_share_topic, tmp_path, "afterJournal")
    applied = first.batches[0] + second.rows()
    assert len(applied) == len({identity(r) for r in applied}) == 300
    # Records were ACCEPTed as soon as they were journaled: the journal alone replays them, and
    # the broker never hands out again a record the first run gave Spark.
    assert not delivered_again(second) & {identity(r) for r in first.rows()}


@pytest.mark.record_lock_ms(NO_EXPIRY_LOCK_MS)
def test_released_records_come_back_with_a_higher_delivery_count(
    spark: SparkSession, private_share_topic: ShareTopic, tmp_path: Path
) -> None:
    share_topic = private_share_topic
    produce(share_topic.bootstrap_servers, share_topic.topic, (b"%d" % i for i in range(200)),
            partitions=share_topic.partitions)
    with share_consumer(
        share_topic.bootstrap_servers, share_topic.group_id, [share_topic.topic]
    ) as other:
        released = consume(other, until=count_at_least(1), timeout=30,
                           acknowledge=lambda _: AcknowledgeType.RELEASE)
    sink = Collector()
    run_available_now(stream(spark, share_topic, tmp_path / "journal"), tmp_path / "cp", sink)
    rows = sink.rows()
    assert len(rows) == len({identity(r) for r in rows}) == 200
    counts = {identity(r): r["deliveryCount"] for r in rows}
    assert released and all(counts[d.identity] == 2 for d in released)
    assert sum(1 for c in counts.values() if c == 1) == 200 - len(released)


def test_restarts_over_a_first_offset_write_cut_short(
    spark: SparkSession, share_topic: ShareTopic, tmp_path: Path
) -> None:
    # What a process killed while Spark wrote the first offset-log entry leaves behind.
    offsets = tmp_path / "checkpoint" / "offsets"
    offsets.mkdir(parents=True)
    (offsets / ".0.5373b9ce-e3cd-40e0-99b2-462226060a78.tmp").touch()
    sent = produce_varied(share_topic, 50)
    sink = Collector()
    run_available_now(stream(spark, share_topic, tmp_path / "journal"), tmp_path / "checkpoint",
                      sink)
    assert sorted((r["partition"], r["offset"]) for r in sink.rows()) == sorted(sent)
