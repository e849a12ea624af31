"""Records at a Kafka share group's delivery limit become dead letters, not archived records.

Another consumer of the group (an application that keeps failing it) RELEASEs a record until
it has one delivery left; then the pipeline gets it on its last delivery. Its
dead-letter policy names no limit of its own: the source read the group's
``share.delivery.count.limit`` from the brokers and handed it to the strategy with the stream's
schema, so that record goes to the dead letters (Kafka would archive it when that delivery ended
without an ACCEPT) and every other record is applied once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from confluent_kafka import AcknowledgeType
from helpers import consume, count_at_least, never, produce, share_consumer
from helpers.broker_dead_letters import decode
from helpers.streaming import run_available_now, share_stream
from pyspark.sql import SparkSession

from kafka_share_eos.deadletter import SqlDeadLetters
from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.sharegroup.group_config import DELIVERY_COUNT_LIMIT
from kafka_share_eos.strategies import DeadLetterPolicy, IdempotentUpsertSink

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.timeout(300)]

# One failing record: Kafka may split a released batch's records between later deliveries, so
# only a lone record's deliveries can be counted to stop exactly one short of the limit.
FAILING, GOOD = 1, 30


def orders(first: int, count: int) -> list[bytes]:
    return [json.dumps({"order_id": i}).encode() for i in range(first, first + count)]


@pytest.mark.partitions(1)
@pytest.mark.parametrize("limit", [2, pytest.param(5, marks=pytest.mark.full)])
def test_records_on_their_last_delivery_become_dead_letters(
    spark: SparkSession, kafka_cluster: KafkaCluster, kafka_topic: ShareTopic, tmp_path: Path,
    limit: int,
) -> None:
    topic = kafka_topic
    kafka_cluster.set_group_config(topic.group_id, {DELIVERY_COUNT_LIMIT: limit})
    failing = produce(topic.bootstrap_servers, topic.topic, orders(0, FAILING))
    with share_consumer(topic.bootstrap_servers, topic.group_id, [topic.topic]) as other:
        released = consume(
            other, timeout=60, acknowledge=lambda _: AcknowledgeType.RELEASE,
            until=count_at_least(FAILING * (limit - 1)),
        )
    assert sorted({d.delivery_count for d in released}) == list(range(1, limit))
    good = produce(topic.bootstrap_servers, topic.topic, orders(FAILING, GOOD), batch_records=1)

    url = f"sqlite:///{tmp_path / 'orders.db'}"
    letters = SqlDeadLetters(url, "letters")
    sink = IdempotentUpsertSink.sql(url, "orders", create_table=True, transform=decode,
                                    dead_letters=DeadLetterPolicy(letters))
    df = share_stream(spark, topic, tmp_path / "journal", availableNowIdleMs="3000")
    run_available_now(df, tmp_path / "checkpoint", sink)

    engine = sa.create_engine(url)
    with engine.connect() as conn:
        applied = {row[0] for row in conn.execute(sa.text('SELECT "offset" FROM orders'))}
        dead = conn.execute(sa.text(
            'SELECT "offset", delivery_count, stage FROM letters ORDER BY "offset"'
        )).all()
    assert applied == {offset for _, offset in good}
    assert [tuple(row) for row in dead] == [
        (offset, limit, "delivery-limit") for _, offset in failing
    ]
    # Every record was ACCEPTed: none is left for the group, none was archived unseen.
    with share_consumer(topic.bootstrap_servers, topic.group_id, [topic.topic]) as late:
        assert consume(late, timeout=3, until=never) == []
