"""Network partitions between an application and Apache Kafka, made with the cluster's proxies.

Application A reaches the broker only through a Toxiproxy
:class:`~kafka_share_eos.proving_ground.launchers.toxiproxy.Proxy`
(``kafka_cluster.proxied_bootstrap_servers``), application B directly; both share one group and
upsert into one SQLite table with :class:`IdempotentUpsertSink`. A takes every record, then its path
is cut:

- longer than the record lock: B takes the records once their lock expires (not earlier: a
  blackholed member's records stay locked although the broker fences it) and applies them; when
  the path heals, A's late effects are found applied and its late acknowledgements are refused;
- shorter than the lock: B takes nothing, A applies and acknowledges once healed, nothing comes
  again;
- by closing the connections and refusing new ones: the broker releases A's records at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from confluent_kafka import AcknowledgeType, KafkaError, KafkaException, Message, ShareConsumer
from helpers import produce, share_consumer
from helpers.batches import source_rows

from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.strategies import BatchReport, IdempotentUpsertSink

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(240)]

RECORDS = 100
JOIN_S = 3.0


class Application:
    """A share consumer and its upsert sink; ``name`` is written into the rows it applies."""

    def __init__(self, name: str, consumer: ShareConsumer, target: str) -> None:
        self.name = name
        self.consumer = consumer
        self.sink = IdempotentUpsertSink.sql(target, "events", create_table=True)
        self.held: list[Message] = []
        self.commit_errors: list[KafkaError] = []
        consumer.set_acknowledgement_commit_callback(
            lambda _offsets, error: self.commit_errors.append(error) if error else None
        )

    def take(self, count: int, timeout: float = 120) -> float:
        """Poll until ``count`` records are held; the moment the last poll returned."""
        deadline = time.monotonic() + timeout
        while len(self.held) < count:
            assert time.monotonic() < deadline, f"{self.name} holds {len(self.held)}/{count}"
            self.held += [m for m in self.consumer.poll(0.5) if m.error() is None]
        return time.monotonic()

    def apply(self) -> BatchReport:
        """Upsert the held records (key: topic, partition, offset)."""
        rows = source_rows(
            topic=[m.topic() for m in self.held],
            partition=[m.partition() for m in self.held],
            offset=[m.offset() for m in self.held],
            value=pa.array([self.name] * len(self.held), pa.string()),
        )
        return self.sink.apply(rows, 0)

    def acknowledge(self) -> list[KafkaException]:
        """Accept the held records and commit; the errors the broker answered."""
        for message in self.held:
            self.consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        result = self.consumer.commit_sync()
        return [error for error in result.values() if error is not None]


@contextmanager
def applications(kafka_cluster: KafkaCluster, topic: ShareTopic,
                 target: str) -> Iterator[tuple[Application, Application, float]]:
    """A (through the proxies) holding every record of ``topic``, B (direct) started after it
    (a share consumer fetches in the background once subscribed) and in the group, and when A
    took them."""
    produce(topic.bootstrap_servers, topic.topic, (b"%d" % i for i in range(RECORDS)))
    try:
        with share_consumer(kafka_cluster.proxied_bootstrap_servers, topic.group_id,
                            [topic.topic]) as a_consumer:
            a = Application("a", a_consumer, target)
            acquired = a.take(RECORDS)
            with share_consumer(kafka_cluster.bootstrap_servers, topic.group_id,
                                [topic.topic]) as b_consumer:
                b = Application("b", b_consumer, target)
                # B joins and gets its share of the partition before the cut, and finds
                # nothing: A holds every record.
                assert silent(b, JOIN_S) == []
                yield a, b, acquired
    finally:
        kafka_cluster.heal()


def applied(target: str) -> dict[int, str]:
    """``{offset: application}`` of the target's rows."""
    with sa.create_engine(target).connect() as connection:
        rows = connection.execute(sa.text('SELECT "offset", value FROM events')).all()
    assert len(rows) == len({offset for offset, _ in rows})
    return dict(rows)


def silent(app: Application, seconds: float) -> list[Message]:
    """What ``app`` is given while polling ``seconds`` (records it should not get)."""
    given: list[Message] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        given += [m for m in app.consumer.poll(0.5) if m.error() is None]
    return given


@pytest.mark.full
@pytest.mark.record_lock_ms(8000)
@pytest.mark.session_timeout_ms(2000)
def test_cut_longer_than_the_lock_hands_the_records_over_and_refuses_the_late_application(
    kafka_cluster: KafkaCluster, kafka_topic: ShareTopic, tmp_path: Path
) -> None:
    target = f"sqlite:///{tmp_path / 'effects.db'}"
    with applications(kafka_cluster, kafka_topic, target) as (a, b, acquired):
        kafka_cluster.cut("blackhole")
        taken = b.take(RECORDS) - acquired
        # A was fenced after its 2 s session timeout, yet its records stayed locked.
        assert taken >= 8.0 * 0.9, f"B took A's records {taken:.1f} s after A did"
        assert {m.delivery_count() for m in b.held} == {2}
        assert b.apply().rows_written == RECORDS
        kafka_cluster.heal()
        late = a.apply()
        assert (late.rows_written, late.already_applied) == (0, RECORDS)
        refused = a.acknowledge()
        assert [e.args[0].code() for e in refused] == [KafkaError.INVALID_RECORD_STATE]
        assert b.acknowledge() == []
        assert silent(b, 3.0) == []
        assert silent(a, 1.0) == []
    assert set(applied(target).values()) == {"b"}
    assert len(applied(target)) == RECORDS


@pytest.mark.record_lock_ms(30_000)
def test_cut_shorter_than_the_lock_repeats_nothing(
    kafka_cluster: KafkaCluster, kafka_topic: ShareTopic, tmp_path: Path
) -> None:
    target = f"sqlite:///{tmp_path / 'effects.db'}"
    with applications(kafka_cluster, kafka_topic, target) as (a, b, _):
        kafka_cluster.cut("blackhole")
        assert silent(b, 3.0) == []
        kafka_cluster.heal()
        assert a.apply().rows_written == RECORDS
        assert a.acknowledge() == [] and a.commit_errors == []
        assert silent(b, 3.0) == []
    assert {m.delivery_count() for m in a.held} == {1}
    assert applied(target) == dict.fromkeys(range(RECORDS), "a")


@pytest.mark.full
@pytest.mark.record_lock_ms(60_000)
@pytest.mark.session_timeout_ms(6000)
def test_a_closed_connection_releases_the_records_at_once(
    kafka_cluster: KafkaCluster, kafka_topic: ShareTopic, tmp_path: Path
) -> None:
    target = f"sqlite:///{tmp_path / 'effects.db'}"
    with applications(kafka_cluster, kafka_topic, target) as (a, b, _):
        kafka_cluster.cut("refuse")
        # Well before the 60 s lock: closing A's connection ended its share session.
        b.take(RECORDS, timeout=40)
        assert b.apply().rows_written == RECORDS
        assert b.acknowledge() == []
        kafka_cluster.heal()
        assert a.apply().already_applied == RECORDS
        assert a.acknowledge() != []
    assert set(applied(target).values()) == {"b"}
