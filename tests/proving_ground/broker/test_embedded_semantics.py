"""The share-group semantics the toolkit relies on, checked through confluent-kafka's
``ShareConsumer`` in explicit acknowledgement mode against the embedded broker over TCP.

Each test runs its own broker: share-group settings must be chosen before a group is first
used, and any client disconnecting drops every share session on the broker, so tests sharing
one would disturb each other.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import AcknowledgeType, KafkaError
from helpers import (
    Delivery,
    consume,
    count_at_least,
    never,
    produce,
    share_consumer,
)
from helpers.paths import SHARED

from kafka_share_eos import EmbeddedBroker

pytestmark = pytest.mark.timeout(90)

TOPIC = "jobs"
GROUP = "workers"
PARTITIONS = 2
LOCK_MS = 1000
# Long enough for a lock to expire or a released record to come back, were it going to.
QUIET_SECONDS = 2.5 * LOCK_MS / 1000

BrokerFactory = Callable[..., EmbeddedBroker]


@pytest.fixture
def start_broker() -> Iterator[BrokerFactory]:
    """Start a dedicated broker with a ``jobs`` topic and the given share-group settings."""
    brokers: list[EmbeddedBroker] = []

    def start(
        *,
        record_lock_duration_ms: int = LOCK_MS,
        max_delivery_attempts: int | None = None,
        session_timeout_ms: int | None = None,
    ) -> EmbeddedBroker:
        broker = EmbeddedBroker(
            [f"{TOPIC}:{PARTITIONS}"],
            record_lock_duration_ms=record_lock_duration_ms,
            max_delivery_attempts=max_delivery_attempts,
            session_timeout_ms=session_timeout_ms,
        ).start()
        brokers.append(broker)
        return broker

    yield start
    for broker in brokers:
        broker.stop()


def _identities(written: list[tuple[int, int]]) -> set[tuple[str, int, int]]:
    return {(TOPIC, partition, offset) for partition, offset in written}


def _counts_by_identity(deliveries: list[Delivery]) -> dict[tuple[str, int, int], list[int]]:
    counts: dict[tuple[str, int, int], list[int]] = defaultdict(list)
    for delivery in deliveries:
        counts[delivery.identity].append(delivery.delivery_count)
    return dict(counts)


@pytest.mark.parametrize(
    "final_ack", [AcknowledgeType.ACCEPT, AcknowledgeType.REJECT], ids=["accept", "reject"]
)
def test_accept_and_reject_are_final(
    start_broker: BrokerFactory, final_ack: AcknowledgeType
) -> None:
    broker = start_broker()
    written = produce(broker.bootstrap_servers, TOPIC, [b"%d" % i for i in range(6)],
                      partitions=PARTITIONS)

    with share_consumer(broker.bootstrap_servers, GROUP, [TOPIC]) as consumer:
        first = consume(consumer, until=count_at_least(6), timeout=30,
                        acknowledge=lambda _: final_ack)
        later = consume(consumer, until=never, timeout=QUIET_SECONDS)
    # A new member after a disconnect (which releases whatever is still acquired) sees nothing.
    with share_consumer(broker.bootstrap_servers, GROUP, [TOPIC]) as consumer:
        after_reconnect = consume(consumer, until=never, timeout=QUIET_SECONDS)

    assert {d.identity for d in first} == _identities(written)
    assert [d.delivery_count for d in first] == [1] * 6
    assert later == []
    assert after_reconnect == []


def test_release_redelivers_with_delivery_count_plus_one(start_broker: BrokerFactory) -> None:
    broker = start_broker()
    written = produce(broker.bootstrap_servers, TOPIC, [b"a", b"b", b"c", b"d"],
                      partitions=PARTITIONS)

    def release_first_delivery(delivery: Delivery) -> AcknowledgeType:
        if delivery.delivery_count == 1:
            return AcknowledgeType.RELEASE
        return AcknowledgeType.ACCEPT

    with share_consumer(broker.bootstrap_servers, GROUP, [TOPIC]) as consumer:
        deliveries = consume(consumer, until=count_at_least(8), timeout=30,
                             acknowledge=release_first_delivery)
        later = consume(consumer, until=never, timeout=QUIET_SECONDS)

    counts = _counts_by_identity(deliveries)
    assert set(counts) == _identities(written)
    assert all(sorted(c) == [1, 2] for c in counts.values()), counts
    assert later == []
    values = {d.identity: d.value for d in deliveries}
    assert sorted(values.values()) == [b"a", b"b", b"c", b"d"]


def test_unacknowledged_record_returns_after_its_lock_expires(
    start_broker: BrokerFactory,
) -> None:
    broker = start_broker()
    written = produce(broker.bootstrap_servers, TOPIC, [b"x", b"y"], partitions=1)

    with share_consumer(broker.bootstrap_servers, GROUP, [TOPIC]) as consumer:
        held = consume(consumer, until=count_at_least(1), timeout=30, acknowledge=lambda _: None)
        time.sleep(QUIET_SECONDS)
        for delivery in held:
            consumer.acknowledge_offset(delivery.topic, delivery.partition, delivery.offset,
                                        AcknowledgeType.ACCEPT)
        late_ack = consumer.commit_sync()
        again = consume(consumer, until=count_at_least(len(held)), timeout=30)

    assert {d.identity for d in held} == _identities(written)
    # The lock is gone, so is the right to acknowledge: the late ACCEPT is refused...
    errors = {exc.args[0].code() for exc in late_ack.values() if exc is not None}
    assert errors == {KafkaError.INVALID_RECORD_STATE}
    # ...and the records come back with a higher delivery count.
    assert sorted((d.identity, d.delivery_count) for d in again) == sorted(
        (d.identity, 2) for d in held
    )


def test_record_is_archived_after_max_delivery_attempts(start_broker: BrokerFactory) -> None:
    broker = start_broker(max_delivery_attempts=3)
    written = produce(broker.bootstrap_servers, TOPIC, [b"poison", b"pill"],
                      partitions=PARTITIONS)

    with share_consumer(broker.bootstrap_servers, GROUP, [TOPIC]) as consumer:
        released = consume(
            consumer,
            until=lambda ds: sum(d.delivery_count == 3 for d in ds) == len(written),
            timeout=30,
            acknowledge=lambda _: AcknowledgeType.RELEASE,
        )
        released += consume(consumer, until=never, timeout=QUIET_SECONDS)
    fresh = produce(broker.bootstrap_servers, TOPIC, [b"fresh"], partitions=1)
    with share_consumer(broker.bootstrap_servers, GROUP, [TOPIC]) as consumer:
        after = consume(consumer, until=count_at_least(1), timeout=30)
        after += consume(consumer, until=never, timeout=QUIET_SECONDS)

    assert _counts_by_identity(released) == {
        identity: [1, 2, 3] for identity in _identities(written)
    }
    # The group moved on: only the new record is delivered, the archived ones never again.
    assert [(d.identity, d.delivery_count) for d in after] == [
        (identity, 1) for identity in sorted(_identities(fresh))
    ]


def test_records_of_a_killed_consumer_process_are_redelivered(
    start_broker: BrokerFactory,
) -> None:
    # A lock far longer than the test: only the death of the holder can free the records.
    broker = start_broker(record_lock_duration_ms=120_000, session_timeout_ms=3000)
    written = produce(broker.bootstrap_servers, TOPIC, [b"%d" % i for i in range(6)],
                      partitions=PARTITIONS)
    holder = subprocess.Popen(
        [sys.executable, "-m", "helpers.hold_records", broker.bootstrap_servers, GROUP, TOPIC],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SHARED)},
    )
    try:
        assert holder.stdout is not None
        held = {(t, p, o): count for t, p, o, count in json.loads(holder.stdout.readline())}
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)

    with share_consumer(broker.bootstrap_servers, GROUP, [TOPIC]) as consumer:
        deliveries = consume(consumer, until=count_at_least(len(written)), timeout=60)

    assert held and set(held.values()) == {1}
    assert holder.returncode == -signal.SIGKILL
    assert {d.identity for d in deliveries} == _identities(written)
    redelivered = {d.identity: d.delivery_count for d in deliveries if d.identity in held}
    assert redelivered == {identity: 2 for identity in held}
    assert all(d.delivery_count == 1 for d in deliveries if d.identity not in held)
