"""The kafka-share source on Apache Kafka: a real broker, share-partitions shared by members."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import produce
from helpers.streaming import Offsets, run_available_now, share_stream

from kafka_share_eos.pipeline_status import journal_status
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.proving_ground.streams import batch_size

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.timeout(300)]


@pytest.mark.partitions(1)
@pytest.mark.parametrize("consumers", [pytest.param(1, marks=pytest.mark.full), 4])
def test_one_partition_is_read_once(
    spark: SparkSession, kafka_topic: ShareTopic, tmp_path: Path, consumers: int
) -> None:
    written = produce(kafka_topic.bootstrap_servers, kafka_topic.topic,
                      (b"%d" % i for i in range(2000)), batch_records=10)
    sink = Offsets()
    batches = (batch_size(400) if consumers == 1
               else {"maxRecordsPerTrigger": "400", "kafka.max.poll.records": "50"})
    df = share_stream(spark, kafka_topic, tmp_path / "journal", consumers=str(consumers),
                      availableNowIdleMs="3000", **batches)
    run_available_now(df, tmp_path / "checkpoint", sink)
    assert sorted(sink.seen) == written
    assert set(sink.seen.values()) == {1}
    if consumers > 1:
        # Kafka lets several members take records of the one partition.
        members = journal_status(str(tmp_path / "journal")).members
        assert sum(1 for records in members.values() if records) >= 2, members
        assert sum(members.values()) == len(written)
