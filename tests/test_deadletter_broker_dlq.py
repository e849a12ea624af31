"""Refused records REJECTed into the share group's own dead-letter queue (KIP-1191, Kafka 4.4).

A pipeline whose strategy refuses some records (their value is not JSON) passes
``BrokerDeadLetters`` as its dead letters: the source REJECTs those records, the broker writes
each to the group's DLQ topic, and a plain consumer reads them back there with the broker's
``__dlq.errors.*`` headers, while every other record is applied once. The strategy's reason,
which a REJECT cannot carry, is in the companion SQL letters.

Run as a script (``python tests/test_deadletter_broker_dlq.py CONFIG``), the module is the
pipeline of the kill -9 test (tests/test_deadletter_broker_dlq_crash.py).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa
from confluent_kafka import Consumer, Producer, TopicPartition

# Orders from JSON values: a value that is not JSON makes its record a dead letter.
from test_kafka_delivery_limit import decode

from kafka_share_eos import BrokerDeadLetters, ConfigurationError, faults
from kafka_share_eos.deadletter import SqlDeadLetters
from kafka_share_eos.sharegroup.dead_letter_queue import TOPIC_ENABLE
from kafka_share_eos.strategies import IdempotentUpsertSink

DLQ_HEADERS = ("__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset",
               "__dlq.errors.group", "__dlq.errors.delivery.count", "__dlq.errors.message")
RECORDS, EVERY_BAD = 40, 5


def produce_orders(bootstrap_servers: str, topic: str) -> tuple[set[int], set[int]]:
    """``RECORDS`` records on partition 0, every ``EVERY_BAD``-th not JSON; their offsets,
    good and bad."""
    producer = Producer({"bootstrap.servers": bootstrap_servers, "enable.idempotence": True})
    for i in range(RECORDS):
        value = b"not json" if i % EVERY_BAD == 0 else json.dumps({"order_id": i}).encode()
        producer.produce(topic, key=str(i).encode(), value=value, partition=0)
    assert producer.flush(30) == 0
    bad = {i for i in range(RECORDS) if i % EVERY_BAD == 0}
    return set(range(RECORDS)) - bad, bad


def read_topic(bootstrap_servers: str, topic: str, at_least: int) -> list[Any]:
    """Every record of ``topic`` (one partition) once at least ``at_least`` are there."""
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"reader-{topic}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        found: list[Any] = []
        deadline = time.monotonic() + 60
        # The broker writes to the DLQ after the REJECT's answer: wait until they are there,
        # then until the end offset settles, so that a record written twice would show.
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                found.append(message)
            elif message is None and len(found) >= at_least:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
                if high == len(found) + low:
                    return found
        return found
    finally:
        consumer.close()


def pipeline_options(config: Mapping[str, Any]) -> dict[str, str]:
    """The source's options of the pipeline ``config`` describes."""
    return {
        "kafka.bootstrap.servers": config["bootstrap_servers"],
        "kafka.share.group.id": config["group"], "subscribe": config["topic"],
        "journalPath": config["journal"], "maxRecordsPerTrigger": "10",
        "availableNowIdleMs": "3000",
    }


def sink_for(config: Mapping[str, Any]) -> tuple[IdempotentUpsertSink, BrokerDeadLetters]:
    dead = BrokerDeadLetters(
        config["journal"],
        {"bootstrap.servers": config["bootstrap_servers"], "group.id": config["group"]},
        topic=config["dlq"], copy_records=config.get("copy", False),
        reasons=SqlDeadLetters(config["url"], "reasons"),
    )
    sink = IdempotentUpsertSink.sql(config["url"], "orders", create_table=True, transform=decode,
                                    dead_letters=dead)
    return sink, dead


def applied_offsets(url: str) -> list[int]:
    with sa.create_engine(url).connect() as conn:
        return sorted(row[0] for row in conn.execute(sa.text('SELECT "offset" FROM orders')))


def check_dead_letter_queue(config: Mapping[str, Any], bad: set[int]) -> list[Any]:
    """Each bad record is in the DLQ topic exactly once, with the broker's headers, and its
    reason in the companion letters; return the DLQ records."""
    dlq = read_topic(config["bootstrap_servers"], config["dlq"], len(bad))
    headers = [dict(message.headers()) for message in dlq]
    assert all(tuple(h) == DLQ_HEADERS for h in headers), headers
    assert sorted(int(h["__dlq.errors.offset"]) for h in headers) == sorted(bad)
    assert {(h["__dlq.errors.topic"].decode(), h["__dlq.errors.group"].decode(),
             h["__dlq.errors.message"]) for h in headers} == {
        (config["topic"], config["group"], b"Offset rejected by client.")}
    with sa.create_engine(config["url"]).connect() as conn:
        reasons = conn.execute(sa.text(
            'SELECT "offset", stage, error_type FROM reasons ORDER BY "offset"')).all()
    assert [(row[0], row[1]) for row in reasons] == [(o, "transform") for o in sorted(bad)]
    assert {row[2] for row in reasons} == {"JSONDecodeError"}
    return dlq


def create_topics(kafka: Any, topic: str) -> str:
    """``topic`` and its dead-letter topic, open to the group's dead letters."""
    kafka.create_topic(topic, 1)
    kafka.create_topic("dlq." + topic, 1, config={TOPIC_ENABLE: "true"})
    return "dlq." + topic


@pytest.mark.spark
@pytest.mark.kafka
@pytest.mark.timeout(300)
@pytest.mark.parametrize("copy", [False, pytest.param(True, marks=pytest.mark.full)])
def test_refused_records_land_once_in_the_brokers_dead_letter_queue(
    spark: Any, kafka_cluster: Any, tmp_path: Path, copy: bool,
) -> None:
    from helpers.streaming import run_available_now, share_stream

    from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
    from kafka_share_eos.sharegroup.group_config import AUTO_OFFSET_RESET

    topic = f"orders-{tmp_path.name[-10:]}".replace("_", "-")
    config = {"bootstrap_servers": kafka_cluster.bootstrap_servers, "topic": topic,
              "group": "g-" + topic, "dlq": create_topics(kafka_cluster, topic),
              "journal": str(tmp_path / "journal"), "url": f"sqlite:///{tmp_path / 'o.db'}",
              "copy": copy}
    kafka_cluster.set_group_config(config["group"], {AUTO_OFFSET_RESET: "earliest"})
    good, bad = produce_orders(config["bootstrap_servers"], topic)
    sink, dead = sink_for(config)
    options = pipeline_options(config)
    df = share_stream(spark, ShareTopic(config["bootstrap_servers"], topic, 1, config["group"]),
                      tmp_path / "journal", maxRecordsPerTrigger=options["maxRecordsPerTrigger"],
                      availableNowIdleMs=options["availableNowIdleMs"])
    run_available_now(df, tmp_path / "checkpoint", sink)

    assert applied_offsets(config["url"]) == sorted(good)
    dlq = check_dead_letter_queue(config, bad)
    if copy:
        assert [(m.key(), m.value()) for m in dlq] == [(str(o).encode(), b"not json")
                                                        for o in sorted(bad)]
    else:
        assert {(m.key(), m.value()) for m in dlq} == {(None, None)}
    assert dead.count() == len(bad)


@pytest.mark.kafka
def test_a_group_without_a_usable_dead_letter_topic_is_refused_up_front(
    kafka_cluster: Any, tmp_path: Path,
) -> None:
    topic = f"orders-{tmp_path.name[-10:]}".replace("_", "-")
    kafka_cluster.create_topic(topic, 1)
    kafka_cluster.create_topic("dlq.closed-" + topic, 1)
    config = {"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": "g-" + topic}
    with pytest.raises(ConfigurationError, match="has no dead-letter topic"):
        BrokerDeadLetters(str(tmp_path / "j"), config)
    with pytest.raises(ConfigurationError, match=r"lacks the prefix 'dlq\.'"):
        BrokerDeadLetters(str(tmp_path / "j"), config, topic="letters-" + topic)
    with pytest.raises(ConfigurationError, match=re.escape(f"{TOPIC_ENABLE}=true")):
        BrokerDeadLetters(str(tmp_path / "j"), config, topic="dlq.closed-" + topic)
    with pytest.raises(ConfigurationError, match="may not create it"):
        BrokerDeadLetters(str(tmp_path / "j"), config, topic="dlq.missing-" + topic)
    kafka_cluster.create_topic("dlq." + topic, 1, config={TOPIC_ENABLE: "true"})
    elsewhere = BrokerDeadLetters(str(tmp_path / "not-the-journal"), config, topic="dlq." + topic)
    letter = pa.table({"topic": [topic], "partition": [0], "offset": [3], "batch_id": [0]})
    with pytest.raises(ConfigurationError, match="pass the source's journalPath"):
        elsewhere.write(letter)


@pytest.mark.kafka
@pytest.mark.full
@pytest.mark.timeout(300)
def test_a_cluster_without_share_version_2_is_refused_with_the_fix(tmp_path: Path) -> None:
    """Kafka 4.3 runs share groups at share.version=1, where a REJECT archives the record
    with no DLQ record: refused before anything is REJECTed, naming the feature and the
    command that raises it."""
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

    with KafkaCluster(version="4.3.1") as cluster:
        assert cluster.features()["share.version"] == "1"
        config = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g"}
        with pytest.raises(ConfigurationError, match=re.escape(
            "this cluster has share.version=1: upgrade the brokers to 4.4 if they are older, "
            f"then run 'kafka-features.sh --bootstrap-server {cluster.bootstrap_servers} "
            "upgrade --feature share.version=2'"
        )):
            BrokerDeadLetters(str(tmp_path / "j"), config, topic="dlq.t")


def test_the_embedded_broker_is_refused(embedded_broker: Any, tmp_path: Path) -> None:
    config = {"bootstrap.servers": embedded_broker.bootstrap_servers, "group.id": "g"}
    with pytest.raises(ConfigurationError, match="embedded broker has no dead-letter queue"):
        BrokerDeadLetters(str(tmp_path / "j"), config, topic="dlq.t")


def test_refusals_are_kept_once_per_record_and_seen_by_every_reader(
    tmp_path: Path,
) -> None:
    from kafka_share_eos.journal.rejections import RecordRejections

    writer, reader = RecordRejections(str(tmp_path)), RecordRejections(str(tmp_path))
    assert not reader.routed() and reader.refused() == frozenset()
    assert not (tmp_path / "_rejections").exists()
    writer.route_here()
    assert writer.add(3, [("t", 0, 5), ("t", 1, 5)]) == 2
    # A replayed batch and a redelivery refused again add nothing.
    assert writer.add(3, [("t", 0, 5), ("t", 1, 5)]) == 0
    assert writer.add(7, [("t", 1, 5), ("t", 0, 9)]) == 1
    assert reader.routed()
    assert reader.decided() == {("t", 0, 5): 3, ("t", 1, 5): 3, ("t", 0, 9): 7}


def test_a_source_that_accepts_before_the_strategy_is_refused(tmp_path: Path) -> None:
    from kafka_share_eos.journal.rejections import RecordRejections
    from kafka_share_eos.source.options import SourceOptions
    from kafka_share_eos.source.reader import KafkaShareStreamReader

    journal = tmp_path / "journal"
    RecordRejections(str(journal)).route_here()
    options = SourceOptions.parse({"kafka.bootstrap.servers": "localhost:1",
                                   "kafka.share.group.id": "g", "subscribe": "t",
                                   "journalPath": str(journal), "acknowledge": "afterJournal"})
    with pytest.raises(ConfigurationError, match="acknowledge=afterJournal"):
        KafkaShareStreamReader(options).latestOffset({"seq": 0}, None)  # type: ignore[arg-type]


def run_pipeline(config_path: str) -> None:
    """The pipeline of the crash test, in a process group of its own that a crash point kills
    whole (the driver, Spark's JVM and the source runner)."""
    import kafka_share_eos
    from kafka_share_eos.proving_ground import streams
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session

    os.environ[faults.CRASH_PGID_ENV] = str(os.getpgid(0))
    config = json.loads(Path(config_path).read_text())
    spark = local_spark_session("broker-dlq", short_lived=True)
    kafka_share_eos.register(spark)
    sink, _ = sink_for(config)
    query = (
        streams.share_stream(spark, pipeline_options(config)).writeStream.foreachBatch(sink)
        .trigger(availableNow=True).option("checkpointLocation", config["checkpoint"]).start()
    )
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    run_pipeline(sys.argv[1])
