"""Dead letters in a Kafka topic of the embedded broker: each letter keeps its record's key and
value, every other column travels as a header and reads back with its type, a replayed letter
reads back once (the first), a letter the broker never took fails the write, and a pickled copy
writes on."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pyarrow as pa
import pytest
from confluent_kafka import KafkaException
from helpers.pickled import copied
from helpers.unit2_letters import by_id, rejected, uncoordinated

from kafka_share_eos.deadletter import DEAD_LETTER_SCHEMA, KafkaDeadLetters
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.broker import EmbeddedBroker

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def sink(embedded_broker: EmbeddedBroker) -> Iterator[KafkaDeadLetters]:
    """Dead letters in a fresh topic of three partitions."""
    topic = f"dead-{uuid.uuid4().hex[:8]}"
    embedded_broker.create_topic(topic, 3)
    made = KafkaDeadLetters(topic, embedded_broker.client_config())
    yield made
    made.close()


def test_letters_read_back_with_their_record_and_every_column_typed(
    sink: KafkaDeadLetters,
) -> None:
    written = rejected(4)
    content = uncoordinated([7, 8])

    assert sink.target == f"kafka:{sink.topic}"
    assert sink.write(written) == 4
    assert sink.write(content) == 2
    sink.close()

    read = sink.read()
    assert read.schema == DEAD_LETTER_SCHEMA
    assert by_id(read) == by_id(pa.concat_tables([written, content]))
    assert sink.count() == 6


def test_a_replayed_letter_is_produced_again_and_read_back_once_as_first_written(
    sink: KafkaDeadLetters,
) -> None:
    first = rejected(3)
    later = rejected(3, stage="delivery-limit", batch_id=5)

    assert sink.write(first) == 3
    assert sink.write(later) == 3  # a topic cannot refuse a repeat
    assert sink.write(later.slice(0, 0)) == 0

    read = by_id(sink.read())
    assert [(letter["stage"], letter["batch_id"]) for letter in read] == [("write", 0)] * 3
    assert [letter["letter_id"] for letter in read] == ["orders/0/0", "orders/0/1", "orders/0/2"]


def test_an_empty_topic_reads_as_no_letters(sink: KafkaDeadLetters) -> None:
    assert sink.read().num_rows == 0 and sink.count() == 0


def test_a_letter_the_producer_cannot_send_fails_the_write_with_the_reason(
    sink: KafkaDeadLetters,
) -> None:
    small = KafkaDeadLetters(sink.topic, {**sink.config, "message.max.bytes": 2000})
    letters = rejected(2)
    oversized = letters.set_column(letters.schema.get_field_index("value"), "value",
                                   pa.array([b"v", b"x" * 5000], pa.binary()))

    with pytest.raises(KafkaException, match="too large"):
        small.write(oversized)
    small.close()
    # The letter before it was sent; the oversized one is not in the topic.
    assert sink.read()["letter_id"].to_pylist() == ["orders/0/0"]


def test_a_config_without_bootstrap_servers_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"bootstrap\.servers"):
        KafkaDeadLetters("dead", {"client.id": "x"})


def test_a_copy_produces_with_a_producer_of_its_own(sink: KafkaDeadLetters) -> None:
    """A pickled copy (a Spark Connect server's) leaves the producer behind and makes its own
    on its first write."""
    assert sink.write(rejected(2)) == 2

    copy = copied(sink)
    assert copy.write(rejected(3, first_offset=2)) == 3
    copy.close()

    assert [letter["offset"] for letter in by_id(sink.read())] == [0, 1, 2, 3, 4]
