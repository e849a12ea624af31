"""The acknowledgement counters of a share session: refusals by the broker and by the client
are counted and logged, successes are not (no broker)."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kafka_share_eos.source.acks import AckStats


def test_a_fresh_session_has_counted_nothing() -> None:
    assert AckStats() == AckStats(accepted=0, released=0, rejected=0, refused_locally=0,
                                  failed_records=0, failed_partitions=0)


def test_a_commit_result_counts_only_the_partitions_that_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stats = AckStats()
    lost = KafkaError(KafkaError.INVALID_RECORD_STATE)
    with caplog.at_level(logging.WARNING, logger="kafka_share_eos.source"):
        stats.on_commit_result({
            TopicPartition("orders", 0): None,
            TopicPartition("orders", 1): lost,
            TopicPartition("payments", 2): KafkaError(KafkaError.REQUEST_TIMED_OUT),
        })
    assert stats.failed_partitions == 2
    assert (stats.failed_records, stats.refused_locally) == (0, 0)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2
    assert warned[0].startswith("acknowledgements for orders[1] were not committed")
    assert warned[1].startswith("acknowledgements for payments[2] were not committed")


def test_a_commit_result_keyed_by_something_else_names_it_as_it_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stats = AckStats()
    with caplog.at_level(logging.WARNING, logger="kafka_share_eos.source"):
        stats.on_commit_result({("orders", 0): "session lost"})
    assert stats.failed_partitions == 1
    assert caplog.records[0].getMessage() == (
        "acknowledgements for ('orders', 0)[?] were not committed: session lost")


def test_the_commit_callback_counts_every_record_of_a_refused_commit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stats = AckStats()
    offsets = {TopicPartition("orders", 0): [1, 2, 3], TopicPartition("orders", 1): [7]}
    with caplog.at_level(logging.WARNING, logger="kafka_share_eos.source"):
        stats.on_commit_callback(offsets, None)
        assert stats.failed_records == 0 and caplog.records == []
        stats.on_commit_callback(offsets, KafkaException(KafkaError(KafkaError._TIMED_OUT)))
        stats.on_commit_callback({TopicPartition("orders", 2): [9, 10]}, "fenced")
    assert stats.failed_records == 6
    assert stats.failed_partitions == 0
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0].startswith("the broker refused 4 acknowledgements: ")
    assert messages[1] == "the broker refused 2 acknowledgements: fenced"


def test_a_record_refused_by_the_client_is_counted_and_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stats = AckStats(accepted=5)
    with caplog.at_level(logging.WARNING, logger="kafka_share_eos.source"):
        stats.on_refused_locally("orders", 3, 42, RuntimeError("not in flight"))
        stats.on_refused_locally("orders", 3, 43, RuntimeError("not in flight"))
    assert stats.refused_locally == 2
    assert stats.accepted == 5
    assert [r.getMessage() for r in caplog.records] == [
        "could not acknowledge orders[3]@42: not in flight",
        "could not acknowledge orders[3]@43: not in flight",
    ]
