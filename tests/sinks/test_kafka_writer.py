"""Batches written to a Kafka topic by a Kafka topic sink's writer: which columns become the
records' keys, values, headers and partitions (embedded broker)."""

from __future__ import annotations

import pyarrow as pa
from helpers.batches import source_rows
from helpers.topic_sinks import output_fixture

from kafka_share_eos import EmbeddedBroker, KafkaTopicSink
from kafka_share_eos.proving_ground.verify.kafka_targets import read_topic

output = output_fixture()


def test_columns_become_keys_values_headers_and_partitions_as_documented(
    embedded_broker: EmbeddedBroker, output: str
) -> None:
    rows = source_rows(
        topic="in", partition=0, offset=[7, 8],
        id=pa.array([41, None], pa.int64()),
        text=["héllo", None],
        to=pa.array([1, 0], pa.int32()),
        headers=[[{"key": "tag", "value": b"a"}, {"key": "tag", "value": b"b"}], None],
        deliveryCount=pa.array([3, None], pa.int16()),
    )
    sink = KafkaTopicSink(
        output, {"bootstrap.servers": embedded_broker.bootstrap_servers}, app_id=output,
        key_column="id", value_column="text", partition_column="to",
    )
    assert sink.apply(rows, 0).rows_written == 2
    sink.close()
    records = {m.value(): m for m in read_topic(embedded_broker.bootstrap_servers, output)}
    first, second = records["héllo".encode()], records[None]
    assert (first.key(), first.partition()) == (b"41", 1)
    assert (second.key(), second.partition()) == (None, 0)
    assert first.headers() == [("tag", b"a"), ("tag", b"b"), ("kse.source", b"in:0:7:3")]
    assert second.headers() == [("kse.source", b"in:0:8:")]
