"""KafkaTopicSink on the embedded broker: a replayed batch is skipped through its committed
marker, a batch id with other records is refused, each output record names its source record in
its headers (unless that header is off, which leaves the guarantee as it is), and the sink
works behind the checkpoint-dedup store. What needs Kafka's transaction isolation (the mock
shows read_committed readers aborted records and fences no writer) is proven on Apache Kafka
in tests/kafka/test_topic_sink.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from helpers.batches import source_rows
from helpers.topic_sinks import output_fixture

from kafka_share_eos import (
    AppIdConflictError,
    BatchIdReusedError,
    CheckpointDedupStore,
    ConfigurationError,
    EmbeddedBroker,
    KafkaTopicSink,
)
from kafka_share_eos.proving_ground.verify.kafka_targets import read_topic, source_coordinates
from kafka_share_eos.sinks.kafka_writer import source_of_header


def source_offsets(messages: list[Any]) -> list[int]:
    return sorted(source_coordinates(m)[1] for m in messages)


SOURCE_HEADERS = [("trace", b"t-1")]


def batch(offsets: list[int], *, size: int = 2) -> pa.Table:
    count = len(offsets)
    return source_rows(
        topic="in", partition=0, offset=offsets,
        key=[b"k%d" % o for o in offsets],
        value=[b"%d" % o + b"." * (size - 1) for o in offsets],
        headers=[[{"key": k, "value": v} for k, v in SOURCE_HEADERS]] * count,
        deliveryCount=pa.array([2] * count, pa.int16()),
    )


output = output_fixture()


def test_a_replayed_batch_is_skipped_and_records_name_their_source(
    embedded_broker: EmbeddedBroker, output: str
) -> None:
    config = {"bootstrap.servers": embedded_broker.bootstrap_servers}
    first = KafkaTopicSink(output, config, app_id=output)
    assert first.apply(batch([0, 1, 2]), 0).rows_written == 3
    assert first.apply(batch([2, 1, 0]), 0).write_path == "skipped-batch"
    first.close()
    restarted = KafkaTopicSink(output, config, app_id=output)
    assert restarted.apply(batch([0, 1, 2]), 0).already_applied == 3
    assert restarted.apply(batch([3]), 1).rows_written == 1
    records = read_topic(embedded_broker.bootstrap_servers, output)
    assert source_offsets(records) == [0, 1, 2, 3]
    headers = dict(records[0].headers() or [])
    topic, _, _, delivery_count = source_of_header(headers["kse.source"])
    assert headers["trace"] == b"t-1" and (topic, delivery_count) == ("in", 2)
    assert sorted(m.key() for m in records) == [b"k0", b"k1", b"k2", b"k3"]


def test_a_record_delivered_again_in_a_later_batch_is_not_written_twice(
    embedded_broker: EmbeddedBroker, output: str
) -> None:
    config = {"bootstrap.servers": embedded_broker.bootstrap_servers}
    sink = KafkaTopicSink(output, config, app_id=output)
    sink.apply(batch([0, 1, 2, 7]), 0)
    again = sink.apply(batch([2, 3]), 1)  # 2's acknowledgement was lost
    assert (again.rows_written, again.already_applied) == (1, 1)
    sink.close()
    restarted = KafkaTopicSink(output, config, app_id=output)
    after_restart = restarted.apply(batch([1, 4, 5, 6, 7]), 2)
    assert (after_restart.rows_written, after_restart.already_applied) == (3, 2)
    assert source_offsets(read_topic(embedded_broker.bootstrap_servers, output)) == list(range(8))


def test_without_the_source_header_replays_and_redeliveries_are_still_written_once(
    embedded_broker: EmbeddedBroker, output: str
) -> None:
    config = {"bootstrap.servers": embedded_broker.bootstrap_servers}
    sink = KafkaTopicSink(output, config, app_id=output, source_header=False)
    sink.apply(batch([0, 1, 2]), 0)
    assert sink.apply(batch([2, 1, 0]), 0).write_path == "skipped-batch"
    sink.close()
    restarted = KafkaTopicSink(output, config, app_id=output, source_header=False)
    again = restarted.apply(batch([2, 3]), 1)  # 2's acknowledgement was lost
    assert (again.rows_written, again.already_applied) == (1, 1)
    records = read_topic(embedded_broker.bootstrap_servers, output)
    assert sorted(m.key() for m in records) == [b"k0", b"k1", b"k2", b"k3"]
    assert {tuple(m.headers() or ()) for m in records} == {tuple(SOURCE_HEADERS)}


def test_a_batch_id_with_other_records_or_an_older_one_is_refused(
    embedded_broker: EmbeddedBroker, output: str
) -> None:
    sink = KafkaTopicSink(output, {"bootstrap.servers": embedded_broker.bootstrap_servers},
                          app_id=output)
    sink.apply(batch([0, 1]), 0)
    with pytest.raises(BatchIdReusedError):
        sink.apply(batch([0, 5]), 0)
    sink.apply(batch([2]), 1)
    with pytest.raises(AppIdConflictError):
        sink.apply(batch([0, 1]), 0)
    assert source_offsets(read_topic(embedded_broker.bootstrap_servers, output)) == [0, 1, 2]


def test_behind_the_checkpoint_dedup_store_a_record_is_written_once(
    embedded_broker: EmbeddedBroker, output: str, tmp_path: Path
) -> None:
    config = {"bootstrap.servers": embedded_broker.bootstrap_servers}
    ledger = str(tmp_path / "ledger")
    one = CheckpointDedupStore(ledger, KafkaTopicSink(output, config, app_id=f"{output}-a"),
                               app_id="a")
    two = CheckpointDedupStore(ledger, KafkaTopicSink(output, config, app_id=f"{output}-b"),
                               app_id="b")
    one.apply(batch([0, 1, 2]), 0)
    two.apply(batch([1, 2, 3]), 0)  # 1 and 2 redelivered to another application
    one.apply(batch([0, 1, 2]), 0)  # a Spark replay
    assert source_offsets(read_topic(embedded_broker.bootstrap_servers, output)) == [0, 1, 2, 3]


def test_config_must_name_brokers_and_leave_the_transactional_id_to_the_sink() -> None:
    with pytest.raises(ConfigurationError, match=r"bootstrap\.servers"):
        KafkaTopicSink("out", {})
    with pytest.raises(ConfigurationError, match="app_id"):
        KafkaTopicSink("out", {"bootstrap.servers": "x:1", "transactional.id": "mine"})
