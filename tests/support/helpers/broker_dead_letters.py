"""The pipeline of the brokers' dead-letter queue tests: orders from JSON values, the records whose
value is not JSON REJECTed into the share group's DLQ topic, their reasons in SQL letters.

Run as a module (``python -m helpers.broker_dead_letters CONFIG``, from tests/), it is the
pipeline of the kill -9 test (tests/crashes/test_broker_dead_letters.py).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import sqlalchemy as sa
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_share_eos import BrokerDeadLetters, faults
from kafka_share_eos.deadletter import SqlDeadLetters
from kafka_share_eos.sharegroup.dead_letter_queue import TOPIC_ENABLE
from kafka_share_eos.strategies import IdempotentUpsertSink


def decode(rows: pa.Table) -> pa.Table:
    return pa.table({
        "topic": rows["topic"], "partition": rows["partition"], "offset": rows["offset"],
        "order_id": pa.array([json.loads(v)["order_id"] for v in rows["value"].to_pylist()],
                             pa.int64()),
    })


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
        "journalPath": config["journal"], "kafka.max.poll.records": "10",
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


def run_in_spark(spark: Any, kafka: Any, folder: Path, copy: bool,
                 server: Any = None) -> tuple[dict[str, Any], set[int], set[int], Any]:
    """Produce the orders to a new topic of ``kafka`` and run the pipeline in ``spark`` (a
    client session of the Spark Connect ``server``, if given) until it drained them; its
    config, the good and bad offsets and its ``BrokerDeadLetters``."""
    from helpers.streaming import run_available_now, share_stream
    from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
    from kafka_share_eos.sharegroup.group_config import AUTO_OFFSET_RESET

    topic = f"orders-{folder.name[-10:]}".replace("_", "-")
    config = {"bootstrap_servers": kafka.bootstrap_servers, "topic": topic,
              "group": "g-" + topic, "dlq": create_topics(kafka, topic),
              "journal": str(folder / "journal"), "url": f"sqlite:///{folder / 'o.db'}",
              "copy": copy}
    kafka.set_group_config(config["group"], {AUTO_OFFSET_RESET: "earliest"})
    good, bad = produce_orders(config["bootstrap_servers"], topic)
    sink, dead = sink_for(config)
    options = pipeline_options(config)
    df = share_stream(spark, ShareTopic(config["bootstrap_servers"], topic, 1, config["group"]),
                      folder / "journal", availableNowIdleMs=options["availableNowIdleMs"],
                      **{"kafka.max.poll.records": options["kafka.max.poll.records"]})
    run_available_now(df, folder / "checkpoint", sink, server=server)
    return config, good, bad, dead


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
