"""Producing to and share-consuming from the embedded broker in tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from confluent_kafka import AcknowledgeType, Message, Producer, ShareConsumer


class Delivery(NamedTuple):
    """One delivery of a record to a share consumer."""

    topic: str
    partition: int
    offset: int
    delivery_count: int
    value: bytes

    @property
    def identity(self) -> tuple[str, int, int]:
        """``(topic, partition, offset)``: the same on every redelivery."""
        return (self.topic, self.partition, self.offset)


def produce(
    bootstrap_servers: str, topic: str, values: Iterable[bytes], *, partitions: int = 1,
    batch_records: int | None = None,
) -> list[tuple[int, int]]:
    """Produce ``values`` round-robin over ``partitions``; return their ``(partition, offset)``.

    ``batch_records`` writes them in record batches of about that many, as many small
    producers would: Apache Kafka acquires whole batches for one share-group member, so one
    big batch would go to one member.

    The producer is closed on return, so its disconnect happens before any share session of
    the caller exists (a disconnect drops every share session on the embedded broker).
    """
    written: list[tuple[int, int]] = []

    def record(err: Any, msg: Any) -> None:
        if err is not None:
            raise RuntimeError(f"produce to {topic} failed: {err}")
        written.append((msg.partition(), msg.offset()))

    config: dict[str, str | int] = {"bootstrap.servers": bootstrap_servers, "linger.ms": 5}
    if batch_records is not None:
        config.update({"linger.ms": 0, "batch.num.messages": batch_records})
    producer = Producer(config)
    for index, value in enumerate(values):
        producer.produce(topic, value=value, partition=index % partitions, on_delivery=record)
        if batch_records is not None and index % batch_records == batch_records - 1:
            producer.flush(30)
    remaining = producer.flush(30)
    if remaining:
        raise RuntimeError(f"{remaining} records to {topic} were not delivered within 30 s")
    return sorted(written)


@contextmanager
def share_consumer(
    bootstrap_servers: str, group_id: str, topics: list[str], **config: str | int
) -> Iterator[ShareConsumer]:
    """A subscribed share consumer in explicit acknowledgement mode, closed on exit."""
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": group_id,
            "share.acknowledgement.mode": "explicit",
            **config,
        }
    )
    consumer.subscribe(topics)
    try:
        yield consumer
    finally:
        consumer.close()


def _delivery(message: Message) -> Delivery:
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    count, value = message.delivery_count(), message.value()
    if topic is None or partition is None or offset is None or count is None:
        raise AssertionError(f"share consumer returned a record without coordinates: {message}")
    return Delivery(topic, partition, offset, count, value or b"")


def commit(consumer: ShareConsumer) -> None:
    """Send pending acknowledgements; raise if the broker refused any of them."""
    failures = {tp: exc for tp, exc in consumer.commit_sync().items() if exc is not None}
    if failures:
        raise RuntimeError(f"acknowledgements refused: {failures}")


Acknowledge = Callable[[Delivery], AcknowledgeType | None]


def consume(
    consumer: ShareConsumer,
    *,
    until: Callable[[list[Delivery]], bool],
    timeout: float,
    acknowledge: Acknowledge = lambda _: AcknowledgeType.ACCEPT,
) -> list[Delivery]:
    """Poll until ``until(deliveries)`` holds or ``timeout`` seconds pass.

    Every delivery is acknowledged with what ``acknowledge`` returns and committed before the
    next poll; returning ``None`` leaves a record unacknowledged, which is only possible on
    the last poll (explicit mode refuses to poll again), so ``consume`` then stops.
    """
    deliveries: list[Delivery] = []
    deadline = time.monotonic() + timeout
    while not until(deliveries) and time.monotonic() < deadline:
        held = False
        acked = False
        for message in consumer.poll(0.2):
            if message.error() is not None:
                continue
            delivery = _delivery(message)
            deliveries.append(delivery)
            ack = acknowledge(delivery)
            if ack is None:
                held = True
            else:
                consumer.acknowledge(message, ack)
                acked = True
        if acked:
            commit(consumer)
        if held:
            break
    return deliveries


def count_at_least(n: int) -> Callable[[list[Delivery]], bool]:
    """Stop condition: at least ``n`` deliveries seen."""
    return lambda deliveries: len(deliveries) >= n


def never(_: list[Delivery]) -> bool:
    """Stop condition for polling the whole timeout, to show nothing (more) arrives."""
    return False


@contextmanager
def broker_holding(topic: str, records: int, partitions: int = 2) -> Iterator[Any]:
    """A private embedded broker with long record locks, ``records`` values already on
    ``topic`` (for tests that drive the source's planner directly)."""
    from kafka_share_eos import EmbeddedBroker

    with EmbeddedBroker(topics=[f"{topic}:{partitions}"], record_lock_duration_ms=60_000) as broker:
        produce(broker.bootstrap_servers, topic, (b"%d" % i for i in range(records)),
                partitions=partitions)
        yield broker
