"""``startingOffsets``: where a new share group starts, on Apache Kafka (the group's
``share.auto.offset.reset``, set before the source's first consumer joins) and on the embedded
broker (which keeps no group configs: the option is logged as not applied)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import Producer
from helpers import produce
from helpers.processes import wait_until
from helpers.streaming import Offsets, run_available_now, share_stream

from kafka_share_eos.proving_ground.launchers.spark import wait_for_source_runners
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.sharegroup.group_config import AUTO_OFFSET_RESET, describe_share_group
from kafka_share_eos.source.group import resolve_group
from kafka_share_eos.source.options import SourceOptions

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

SOURCE_LOG = "kafka_share_eos.source"


def spark_on_kafka(test: Callable[..., None]) -> Callable[..., None]:
    """Mark a test that runs the source in Spark on the session's Apache Kafka."""
    return pytest.mark.kafka(pytest.mark.spark(pytest.mark.timeout(300)(test)))


def fresh_topic(kafka: KafkaCluster, partitions: int = 2) -> ShareTopic:
    """A topic and a share group no member has joined yet, with no group configs of its own."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(name, partitions)
    return ShareTopic(kafka.bootstrap_servers, name, partitions, f"g-{name}")


def options(topic: ShareTopic, tmp_path: Path, starting_offsets: str) -> SourceOptions:
    return SourceOptions.parse({
        "kafka.bootstrap.servers": topic.bootstrap_servers,
        "kafka.share.group.id": topic.group_id,
        "subscribe": topic.topic,
        "journalPath": str(tmp_path / "unused-journal"),
        "startingOffsets": starting_offsets,
    })


def auto_offset_reset(kafka: KafkaCluster, group: str) -> str | None:
    settings = describe_share_group(kafka.client_config(), group, admin=kafka.admin())
    assert settings is not None
    return settings.auto_offset_reset


@spark_on_kafka
def test_earliest_reads_the_records_from_before_the_group_once_and_a_later_start_keeps_it(
    spark: SparkSession, kafka_cluster: KafkaCluster, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = fresh_topic(kafka_cluster)
    written = produce(topic.bootstrap_servers, topic.topic, (b"%d" % i for i in range(200)),
                      partitions=2, batch_records=20)
    sink = Offsets()
    df = share_stream(spark, topic, tmp_path / "journal", startingOffsets="earliest",
                      **{"kafka.max.poll.records": "80"}, availableNowIdleMs="2000")
    run_available_now(df, tmp_path / "checkpoint", sink)
    assert sorted(sink.seen) == sorted(written)
    assert set(sink.seen.values()) == {1}
    assert auto_offset_reset(kafka_cluster, topic.group_id) == "earliest"

    # The group has state now: a start asking for latest leaves it alone and says so.
    caplog.set_level(logging.INFO, logger=SOURCE_LOG)
    resolve_group(options(topic, tmp_path, "latest"))
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "startingOffsets=latest is ignored" in warning
    assert f"{topic.group_id!r} already has state" in warning
    assert f"{AUTO_OFFSET_RESET} is earliest" in warning
    assert auto_offset_reset(kafka_cluster, topic.group_id) == "earliest"


@spark_on_kafka
def test_latest_reads_only_what_comes_after_the_start(
    spark: SparkSession, kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    topic = fresh_topic(kafka_cluster)
    # The group's own config says earliest until the source sets latest.
    kafka_cluster.set_group_config(topic.group_id, {AUTO_OFFSET_RESET: "earliest"})
    before = set(produce(topic.bootstrap_servers, topic.topic, [b"before"] * 40, partitions=2))
    sink = Offsets()
    query = (
        share_stream(spark, topic, tmp_path / "journal", startingOffsets="latest",
                     pollTimeoutMs="200")
        .writeStream.foreachBatch(sink).trigger(processingTime="200 milliseconds")
        .option("checkpointLocation", str(tmp_path / "checkpoint")).start()
    )
    markers = Producer({"bootstrap.servers": topic.bootstrap_servers, "linger.ms": 0})
    last_marker = 0.0

    def every_partition_started() -> bool:
        # Kafka fixes a partition's start when the group first fetches it: a marker that
        # arrives shows it did. One round of markers a second is plenty.
        nonlocal last_marker
        if time.monotonic() - last_marker > 1:
            for partition in range(topic.partitions):
                markers.produce(topic.topic, b"marker", partition=partition)
            markers.flush(30)
            last_marker = time.monotonic()
        return {partition for partition, _ in sink.seen} == set(range(topic.partitions))

    try:
        wait_until(every_partition_started, 120, "a marker from every partition")
        after = produce(topic.bootstrap_servers, topic.topic, [b"after"] * 40, partitions=2)
        wait_until(lambda: set(after) <= set(sink.seen), 120, "the records produced after")
    finally:
        query.stop()
        wait_for_source_runners(spark)
    assert query.exception() is None
    assert not before & set(sink.seen)
    assert all(sink.seen[record] == 1 for record in after)
    assert auto_offset_reset(kafka_cluster, topic.group_id) == "latest"


@pytest.mark.full
@spark_on_kafka
def test_a_duration_starts_at_the_first_record_that_recent(
    spark: SparkSession, kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    topic = fresh_topic(kafka_cluster, partitions=1)
    now_ms = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": topic.bootstrap_servers})
    for index in range(60):
        # Two hours old, then ten minutes old: PT1H reaches back to the second kind only.
        age_ms = 7_200_000 if index < 30 else 600_000
        producer.produce(topic.topic, b"%d" % index, partition=0, timestamp=now_ms - age_ms)
    assert producer.flush(30) == 0
    sink = Offsets()
    df = share_stream(spark, topic, tmp_path / "journal", startingOffsets="PT1H",
                      availableNowIdleMs="2000")
    run_available_now(df, tmp_path / "checkpoint", sink)
    assert sorted(sink.seen) == [(0, offset) for offset in range(30, 60)]
    assert auto_offset_reset(kafka_cluster, topic.group_id) == "by_duration:PT1H"


@pytest.mark.kafka
def test_a_new_group_is_set_to_kafkas_by_duration_form_and_the_log_says_so(
    kafka_cluster: KafkaCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    topic = fresh_topic(kafka_cluster, partitions=1)
    caplog.set_level(logging.INFO, logger=SOURCE_LOG)
    resolve_group(options(topic, tmp_path, "P1DT12H"))
    assert auto_offset_reset(kafka_cluster, topic.group_id) == "by_duration:P1DT12H"
    (said,) = [r.getMessage() for r in caplog.records if "startingOffsets" in r.getMessage()]
    assert said == (
        f"kafka-share source: share group {topic.group_id!r} is new and starts at the first "
        f"record of the last P1DT12H ({AUTO_OFFSET_RESET}=by_duration:P1DT12H, from option "
        "startingOffsets)"
    )


def test_on_the_embedded_broker_the_option_is_logged_as_not_applied(
    share_topic: ShareTopic, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=SOURCE_LOG)
    given = options(share_topic, tmp_path, "P1D")
    assert resolve_group(given) == given
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "startingOffsets=by_duration:P1D is not applied" in warning
    assert "keep no group configs" in warning
