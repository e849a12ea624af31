"""The share group as the kafka-share source needs it, on Apache Kafka: only committed records
reach the sink, the group's isolation level is switched or refused, and its own record lock is
what the lock budget measures against."""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import produce
from helpers.streaming import run_available_now, share_stream

from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.metrics_store import MetricsStore
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.sharegroup.group_config import (
    AUTO_OFFSET_RESET,
    ISOLATION_LEVEL,
    describe_share_group,
)
from kafka_share_eos.source.batch_planner import BatchPlanner
from kafka_share_eos.source.group import resolve_group
from kafka_share_eos.source.options import SourceOptions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.timeout(300)]


def produce_transactions(
    topic: ShareTopic, outcomes: list[bool], per_transaction: int
) -> set[bytes]:
    """One transaction per entry of ``outcomes`` on partition 0, committed where True and
    aborted where False; return the values of the committed records."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": topic.bootstrap_servers,
                         "transactional.id": f"tx-{topic.topic}"})
    producer.init_transactions(30)
    committed: set[bytes] = set()
    for index, commit in enumerate(outcomes):
        producer.begin_transaction()
        values = [b"%d-%d" % (index, i) for i in range(per_transaction)]
        for value in values:
            producer.produce(topic.topic, value=value, partition=0)
        if commit:
            producer.commit_transaction(30)
            committed.update(values)
        else:
            producer.flush(30)
            producer.abort_transaction(30)
    return committed


class Values:
    def __init__(self) -> None:
        self.values: list[bytes] = []

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.values += [bytes(row["value"]) for row in batch.select("value").collect()]


@pytest.mark.partitions(1)
def test_records_of_aborted_transactions_never_reach_the_sink(
    spark: SparkSession, kafka_topic: ShareTopic, tmp_path: Path
) -> None:
    committed = produce_transactions(kafka_topic, [True, False, True, False, False, True], 30)
    sink = Values()
    df = share_stream(spark, kafka_topic, tmp_path / "journal", **{"kafka.max.poll.records": "25"},
                      availableNowIdleMs="3000")
    run_available_now(df, tmp_path / "checkpoint", sink)
    assert sorted(sink.values) == sorted(committed)


@pytest.mark.partitions(1)
def test_a_group_on_kafkas_default_is_switched_to_read_committed(
    spark: SparkSession, kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    topic = ShareTopic(kafka_cluster.bootstrap_servers, f"t-{uuid.uuid4().hex[:8]}", 1,
                       f"g-{uuid.uuid4().hex[:8]}")
    kafka_cluster.create_topic(topic.topic, 1)
    kafka_cluster.set_group_config(topic.group_id, {AUTO_OFFSET_RESET: "earliest"})
    committed = produce_transactions(topic, [False, True], 10)
    sink = Values()
    df = share_stream(spark, topic, tmp_path / "journal", availableNowIdleMs="2000")
    run_available_now(df, tmp_path / "checkpoint", sink)
    assert sorted(sink.values) == sorted(committed)
    settings = describe_share_group(kafka_cluster.client_config(), topic.group_id,
                                    admin=kafka_cluster.admin())
    assert settings is not None and settings.isolation_level == "read_committed"


@pytest.mark.partitions(1)
def test_a_group_set_to_read_uncommitted_is_refused(
    spark: SparkSession, kafka_topic: ShareTopic, kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    kafka_cluster.set_group_config(kafka_topic.group_id, {ISOLATION_LEVEL: "read_uncommitted"})
    produce(kafka_topic.bootstrap_servers, kafka_topic.topic, [b"x"])
    sink = Values()
    df = share_stream(spark, kafka_topic, tmp_path / "journal", availableNowIdleMs="2000")
    with pytest.raises(Exception, match=r"share\.isolation\.level=read_uncommitted") as failed:
        run_available_now(df, tmp_path / "checkpoint", sink)
    assert "kafka-configs.sh" in str(failed.value)
    assert "--add-config share.isolation.level=read_committed" in str(failed.value)
    assert sink.values == []


@pytest.mark.partitions(1)
@pytest.mark.record_lock_ms(1000)
def test_the_lock_budget_measures_against_the_groups_own_lock(
    kafka_topic: ShareTopic, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # No lockDurationMs option (its default is 30 s): the group's 1 s lock is read through the
    # admin API, so a batch holding its records 0.9 s is reported over the 0.8 budget.
    caplog.set_level(logging.WARNING, logger="kafka_share_eos.source")
    produce(kafka_topic.bootstrap_servers, kafka_topic.topic, (b"%d" % i for i in range(20)))
    options = resolve_group(SourceOptions.parse({
        "kafka.bootstrap.servers": kafka_topic.bootstrap_servers,
        "kafka.share.group.id": kafka_topic.group_id,
        "subscribe": kafka_topic.topic,
        "journalPath": str(tmp_path / "journal"),
        "pollTimeoutMs": "8000",
    }))
    assert options.lock_duration_ms == 1000
    planner = BatchPlanner(options, Journal(options.journal_path))
    try:
        assert planner.latest(0, None) == 1
        time.sleep(0.9)  # the batch runs in foreachBatch, holding its records' locks
        planner.latest(1, None)
    finally:
        planner.close()
    (used,) = [m.lock_budget_used for m in MetricsStore(options.journal_path).read_all()
               if m.seq == 1]
    assert used > 0.8
    assert any("of the 1000 ms record lock" in r.getMessage() for r in caplog.records)
