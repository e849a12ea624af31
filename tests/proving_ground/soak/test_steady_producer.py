"""The soak's producer: the backlog at once, then records at a steady rate, each found where
its delivery report says it landed."""

from __future__ import annotations

import random
import time

import pytest
from confluent_kafka import Consumer

from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.proving_ground.soak.steady_producer import SteadyProducer, planned
from kafka_share_eos.proving_ground.verify.records import Kind


def test_every_nth_record_is_a_poison_record() -> None:
    rng = random.Random(0)
    kinds = [planned(index, rng, 4).kind for index in range(12)]

    assert [index for index, kind in enumerate(kinds) if kind is Kind.POISON] == [3, 7, 11]
    assert all(planned(index, rng, 0).kind is Kind.NORMAL for index in range(12))


@pytest.mark.partitions(2)
def test_the_backlog_then_the_rate_land_where_reported(share_topic: ShareTopic) -> None:
    producer = SteadyProducer(share_topic.bootstrap_servers, share_topic.topic, 2, rate=40.0,
                              backlog=30, poison_every=10, seed=1)
    producer.start()
    assert len(producer.produced()) == 30
    deadline = time.monotonic() + 60
    while len(producer.produced()) < 50 and time.monotonic() < deadline:
        time.sleep(0.05)
    producer.stop()

    placed = producer.produced()
    assert not producer.failed
    assert len(placed) == producer.sent >= 50
    assert sorted(record.id for record in placed.values()) == list(range(producer.sent))
    assert {partition for partition, _ in placed} == {0, 1}
    consumer = Consumer({"bootstrap.servers": share_topic.bootstrap_servers,
                         "group.id": share_topic.group_id, "auto.offset.reset": "earliest"})
    consumer.subscribe([share_topic.topic])
    read: dict[tuple[int, int], bytes] = {}
    while len(read) < len(placed) and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            read[(message.partition(), message.offset())] = message.value()
    consumer.close()
    assert read == {coordinates: record.value for coordinates, record in placed.items()}
