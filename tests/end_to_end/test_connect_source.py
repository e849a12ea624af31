"""The ``kafka-share`` source in a Spark Connect session, end to end.

The client registers the source and starts the query; the source runs on the Connect server
(its runner, and with ``consumers=N`` the executor tasks that poll), the client's pickled
strategy in the server's ``foreachBatch`` worker. Every record reaches the target once with one
consumer and with several, under both acknowledge modes; ``startingOffsets`` sets where a new
group starts on Apache Kafka; and ``BrokerDeadLetters`` has the source REJECT what the strategy
refused into the group's dead-letter queue.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from helpers import produce
from helpers.broker_dead_letters import applied_offsets, check_dead_letter_queue, run_in_spark
from helpers.streaming import run_available_now, share_stream
from pyspark import cloudpickle

from kafka_share_eos import IdempotentUpsertSink
from kafka_share_eos.pipeline_status import journal_status
from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.proving_ground.streams import batch_size
from kafka_share_eos.sharegroup.group_config import describe_share_group

pytestmark = [pytest.mark.connect, pytest.mark.timeout(300)]

COUNT = 120


def applied(url: str) -> list[tuple[int, int, bytes]]:
    """The ``(partition, offset, value)`` rows of the target, repeats kept."""
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text('SELECT "partition", "offset", value FROM events')).all()
    engine.dispose()
    return sorted((row[0], row[1], bytes(row[2])) for row in rows)


@pytest.mark.parametrize(("consumers", "acknowledge"), [
    ("1", "afterCommit"),
    pytest.param("1", "afterJournal", marks=pytest.mark.full),
    ("2", "afterJournal"),
])
def test_every_record_reaches_the_target_once_with_one_or_several_consumers(
    consumers: str, acknowledge: str, connect_spark: Any,
    spark_connect_server: SparkConnectServer, share_topic: ShareTopic, tmp_path: Path,
) -> None:
    values = [b"v%d" % i for i in range(COUNT)]
    written = produce(share_topic.bootstrap_servers, share_topic.topic, values,
                      partitions=share_topic.partitions)
    url = f"sqlite:///{tmp_path / 'target.db'}"
    stream = share_stream(connect_spark, share_topic, tmp_path / "journal", consumers=consumers,
                          acknowledge=acknowledge, **batch_size(60, acknowledge),
                          availableNowIdleMs="3000")

    run_available_now(stream, tmp_path / "checkpoint",
                      IdempotentUpsertSink.sql(url, "events", create_table=True),
                      server=spark_connect_server)

    # Values go round-robin over the partitions: value i is at (i % P, i // P).
    assert applied(url) == sorted((p, o, values[o * share_topic.partitions + p])
                                  for p, o in written)
    slots = [entry["records"] for entry in journal_status(str(tmp_path / "journal")).consumers]
    assert sum(1 for records in slots if records) == int(consumers), slots


@pytest.mark.kafka
def test_starting_offsets_sets_where_a_new_group_starts_on_apache_kafka(
    connect_spark: Any, spark_connect_server: SparkConnectServer, kafka_cluster: Any,
    tmp_path: Path,
) -> None:
    name = f"t-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(name, 2)
    # A new group, with no configs of its own: Kafka's default would start it at the end,
    # after these records.
    topic = ShareTopic(kafka_cluster.bootstrap_servers, name, 2, f"g-{name}")
    written = produce(topic.bootstrap_servers, name, (b"%d" % i for i in range(COUNT)),
                      partitions=2, batch_records=20)
    url = f"sqlite:///{tmp_path / 'target.db'}"
    stream = share_stream(connect_spark, topic, tmp_path / "journal", startingOffsets="earliest",
                          **{"kafka.max.poll.records": "80"}, availableNowIdleMs="2000")

    run_available_now(stream, tmp_path / "checkpoint",
                      IdempotentUpsertSink.sql(url, "events", create_table=True),
                      server=spark_connect_server)

    assert [(p, o) for p, o, _ in applied(url)] == written
    settings = describe_share_group(kafka_cluster.client_config(), topic.group_id,
                                    admin=kafka_cluster.admin())
    assert settings is not None and settings.auto_offset_reset == "earliest"


@pytest.mark.kafka
def test_broker_dead_letters_reject_refused_records_into_the_groups_queue_once(
    connect_spark: Any, spark_connect_server: SparkConnectServer, kafka_cluster: Any,
    tmp_path: Path,
) -> None:
    # The pipeline's transform is test code the server does not have: shipped by value.
    cloudpickle.register_pickle_by_value(sys.modules["helpers.broker_dead_letters"])
    config, good, bad, dead = run_in_spark(connect_spark, kafka_cluster, tmp_path, copy=False,
                                           server=spark_connect_server)

    assert applied_offsets(config["url"]) == sorted(good)
    dlq = check_dead_letter_queue(config, bad)
    assert {(message.key(), message.value()) for message in dlq} == {(None, None)}
    assert dead.count() == len(bad)
