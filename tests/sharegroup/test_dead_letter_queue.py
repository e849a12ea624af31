"""The brokers' own dead-letter queue, checked before anything is REJECTed: the embedded broker
has none; on Apache Kafka a group's topic (and whether it copies records) is set when given
and kept when not, and a topic the brokers would not write to is refused with its fix."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest
from confluent_kafka.admin import ConfigResource

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.sharegroup.dead_letter_queue import TOPIC_ENABLE, prepare_dead_letter_queue
from kafka_share_eos.sharegroup.group_config import DLQ_COPY_RECORD, DLQ_TOPIC

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

pytestmark = pytest.mark.timeout(180)


def group_configs(kafka: KafkaCluster, group: str) -> dict[str, str]:
    resource = ConfigResource(ConfigResource.Type.GROUP, group)
    entries = kafka.admin().describe_configs([resource])[resource].result(timeout=30)
    return {name: entry.value for name, entry in entries.items()}


def test_the_embedded_broker_has_no_dead_letter_queue(share_topic: ShareTopic) -> None:
    config = {"bootstrap.servers": share_topic.bootstrap_servers, "group.id": share_topic.group_id}
    with pytest.raises(ConfigurationError,
                       match="the embedded broker has no dead-letter queue: use the toolkit's "
                             r"own dead letters \(SqlDeadLetters, DeltaDeadLetters"):
        prepare_dead_letter_queue(config, topic="dlq.orders")


@pytest.mark.kafka
@pytest.mark.kafka_since("4.4")
def test_a_groups_dead_letter_topic_is_set_kept_and_checked(kafka_cluster: KafkaCluster) -> None:
    name = uuid.uuid4().hex[:8]
    group, letters = f"g-{name}", f"dlq.letters-{name}"
    kafka_cluster.create_topic(letters, 1, config={TOPIC_ENABLE: "true"})
    kafka_cluster.create_topic(f"dlq.closed-{name}", 1)
    config = kafka_cluster.client_config(**{"group.id": group})

    with pytest.raises(ConfigurationError, match=f"share group '{group}' has no dead-letter "
                                                 f"topic: pass topic= or set the group config "
                                                 f"{DLQ_TOPIC}"):
        prepare_dead_letter_queue(config)
    assert prepare_dead_letter_queue(config, letters, copy_records=True) == letters
    configs = group_configs(kafka_cluster, group)
    assert (configs[DLQ_TOPIC], configs[DLQ_COPY_RECORD]) == (letters, "true")
    # Set once, the group keeps it: a later run names no topic.
    assert prepare_dead_letter_queue(config) == letters
    assert prepare_dead_letter_queue(config, copy_records=False) == letters
    assert group_configs(kafka_cluster, group)[DLQ_COPY_RECORD] == "false"

    with pytest.raises(ConfigurationError,
                       match=rf"'letters-{name}' of share group '{group}' lacks the prefix "
                             rf"'dlq\.' .* name the topic 'dlq\.letters-{name}'"):
        prepare_dead_letter_queue(config, f"letters-{name}")
    with pytest.raises(ConfigurationError,
                       match=rf"topic 'dlq\.closed-{name}' is not open to share groups' dead "
                             rf"letters: .*--add-config {TOPIC_ENABLE}=true"):
        prepare_dead_letter_queue(config, f"dlq.closed-{name}")
    with pytest.raises(ConfigurationError, match=r"does not exist and the brokers may not "
                                                 r"create it"):
        prepare_dead_letter_queue(config, f"dlq.absent-{name}")
