"""Refused records REJECTed into the share group's own dead-letter queue (KIP-1191, Kafka 4.4).

A pipeline whose strategy refuses some records (their value is not JSON) passes
``BrokerDeadLetters`` as its dead letters: the source REJECTs those records, the broker writes
each to the group's DLQ topic, and a plain consumer reads them back there with the broker's
``__dlq.errors.*`` headers, while every other record is applied once. The strategy's reason,
which a REJECT cannot carry, is in the companion SQL letters. A pickled copy of the sink (a Spark
Connect server's) decides each refused record once too.

The pipeline is in tests/support/helpers/broker_dead_letters.py, which the kill -9 test
(tests/crashes/test_broker_dead_letters.py) runs too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from helpers.broker_dead_letters import (
    applied_offsets,
    check_dead_letter_queue,
    run_in_spark,
)
from helpers.pickled import copied
from helpers.unit2_letters import rejected

from kafka_share_eos import BrokerDeadLetters, ConfigurationError
from kafka_share_eos.sharegroup.dead_letter_queue import TOPIC_ENABLE


@pytest.mark.spark
@pytest.mark.kafka
@pytest.mark.timeout(300)
@pytest.mark.parametrize("copy", [False, pytest.param(True, marks=pytest.mark.full)])
def test_refused_records_land_once_in_the_brokers_dead_letter_queue(
    spark: Any, kafka_cluster: Any, tmp_path: Path, copy: bool,
) -> None:
    config, good, bad, dead = run_in_spark(spark, kafka_cluster, tmp_path, copy)

    assert applied_offsets(config["url"]) == sorted(good)
    dlq = check_dead_letter_queue(config, bad)
    if copy:
        assert [(m.key(), m.value()) for m in dlq] == [(str(o).encode(), b"not json")
                                                        for o in sorted(bad)]
    else:
        assert {(m.key(), m.value()) for m in dlq} == {(None, None)}
    assert dead.count() == len(bad)


@pytest.mark.kafka
def test_a_group_without_a_usable_dead_letter_topic_is_refused_up_front(
    kafka_cluster: Any, tmp_path: Path,
) -> None:
    topic = f"orders-{tmp_path.name[-10:]}".replace("_", "-")
    kafka_cluster.create_topic(topic, 1)
    kafka_cluster.create_topic("dlq.closed-" + topic, 1)
    config = {"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": "g-" + topic}
    with pytest.raises(ConfigurationError, match="has no dead-letter topic"):
        BrokerDeadLetters(str(tmp_path / "j"), config)
    with pytest.raises(ConfigurationError, match=r"lacks the prefix 'dlq\.'"):
        BrokerDeadLetters(str(tmp_path / "j"), config, topic="letters-" + topic)
    with pytest.raises(ConfigurationError, match=re.escape(f"{TOPIC_ENABLE}=true")):
        BrokerDeadLetters(str(tmp_path / "j"), config, topic="dlq.closed-" + topic)
    with pytest.raises(ConfigurationError, match="may not create it"):
        BrokerDeadLetters(str(tmp_path / "j"), config, topic="dlq.missing-" + topic)
    kafka_cluster.create_topic("dlq." + topic, 1, config={TOPIC_ENABLE: "true"})
    elsewhere = BrokerDeadLetters(str(tmp_path / "not-the-journal"), config, topic="dlq." + topic)
    letter = pa.table({"topic": [topic], "partition": [0], "offset": [3], "batch_id": [0]})
    with pytest.raises(ConfigurationError, match="pass the source's journalPath"):
        elsewhere.write(letter)


@pytest.mark.kafka
@pytest.mark.full
@pytest.mark.timeout(300)
def test_a_cluster_without_share_version_2_is_refused_with_the_fix(tmp_path: Path) -> None:
    """Kafka 4.3 runs share groups at share.version=1, where a REJECT archives the record
    with no DLQ record: refused before anything is REJECTed, naming the feature and the
    command that raises it."""
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

    with KafkaCluster(version="4.3.1") as cluster:
        assert cluster.features()["share.version"] == "1"
        config = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g"}
        with pytest.raises(ConfigurationError, match=re.escape(
            "this cluster has share.version=1: upgrade the brokers to 4.4 if they are older, "
            f"then run 'kafka-features.sh --bootstrap-server {cluster.bootstrap_servers} "
            "upgrade --feature share.version=2'"
        )):
            BrokerDeadLetters(str(tmp_path / "j"), config, topic="dlq.t")


def test_the_embedded_broker_is_refused(embedded_broker: Any, tmp_path: Path) -> None:
    config = {"bootstrap.servers": embedded_broker.bootstrap_servers, "group.id": "g"}
    with pytest.raises(ConfigurationError, match="embedded broker has no dead-letter queue"):
        BrokerDeadLetters(str(tmp_path / "j"), config, topic="dlq.t")


def test_a_source_that_accepts_before_the_strategy_is_refused(tmp_path: Path) -> None:
    from kafka_share_eos.journal.rejections import RecordRejections
    from kafka_share_eos.source.options import SourceOptions
    from kafka_share_eos.source.reader import KafkaShareStreamReader

    journal = tmp_path / "journal"
    RecordRejections(str(journal)).route_here()
    options = SourceOptions.parse({"kafka.bootstrap.servers": "localhost:1",
                                   "kafka.share.group.id": "g", "subscribe": "t",
                                   "journalPath": str(journal), "acknowledge": "afterJournal"})
    with pytest.raises(ConfigurationError, match="acknowledge=afterJournal"):
        KafkaShareStreamReader(options).latestOffset({"seq": 0}, None)  # type: ignore[arg-type]


@pytest.mark.kafka
def test_a_pickled_copy_records_each_refusal_once_beside_the_journal(
    kafka_cluster: Any, tmp_path: Path,
) -> None:
    """A copy (a Spark Connect server's) reads the decisions and the reasons anew: a record the
    original already decided is not decided again."""
    topic = f"orders-{tmp_path.name[-10:]}".replace("_", "-")
    kafka_cluster.create_topic(topic, 1)
    kafka_cluster.create_topic("dlq." + topic, 1, config={TOPIC_ENABLE: "true"})
    config = {"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": "g-" + topic}
    journal = tmp_path / "journal"
    journal.mkdir()
    (journal / "00000000000000000001.arrow").write_bytes(b"")  # a segment, as while a batch runs
    sink = BrokerDeadLetters(str(journal), config, topic="dlq." + topic,
                             reasons=f"sqlite:///{tmp_path / 'reasons.db'}")
    assert sink.write(rejected(2)) == 2

    copy = copied(sink)
    assert copy.write(rejected(3, batch_id=1)) == 1

    assert sink.rejections.decided() == {("orders", 0, 0): 0, ("orders", 0, 1): 0,
                                         ("orders", 0, 2): 1}
    assert sorted(copy.read()["offset"].to_pylist()) == [0, 1, 2]
    copy.close()
    sink.close()
