"""A share group's own dead-letter queue on the brokers (KIP-1191, Kafka 4.4), checked up front.

With the cluster feature ``share.version`` at 2 and the group config
``errors.deadletterqueue.topic.name`` set, a broker writes each record a consumer REJECTs, or
that reaches the delivery limit, to that topic before it archives the record. A broker that
cannot write there (a topic without ``errors.deadletterqueue.group.enable=true``, a name
without the brokers' required prefix, a missing topic it may not create) logs the failure and
archives the record anyway, and on ``share.version`` 1 a REJECT archives with no DLQ at all:
either way the record is gone without a trace. So every condition is checked before a
pipeline REJECTs anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource

from kafka_share_eos.errors import ConfigurationError, GroupConfigError
from kafka_share_eos.sharegroup.features import finalized_features
from kafka_share_eos.sharegroup.group_config import (
    DLQ_COPY_RECORD,
    DLQ_TOPIC,
    _describe,
    _keeps_group_configs,
    admin_config,
    alter_share_group,
)

SHARE_VERSION = "share.version"
DLQ_SHARE_VERSION = 2
TOPIC_ENABLE = "errors.deadletterqueue.group.enable"
BROKER_PREFIX = "errors.deadletterqueue.topic.name.prefix"
BROKER_AUTO_CREATE = "errors.deadletterqueue.auto.create.topics.enable"
_TIMEOUT_S = 15.0


def _configs(admin: AdminClient, kind: str, name: str) -> dict[str, str] | None:
    """The configs of resource ``kind`` (``BROKER``, ``TOPIC``) ``name``; None when it does not
    exist."""
    resource = ConfigResource(kind, name)
    try:
        entries = admin.describe_configs([resource], request_timeout=_TIMEOUT_S)[resource].result(
            timeout=_TIMEOUT_S + 5
        )
    except KafkaException as exc:
        if "UNKNOWN_TOPIC" in str(exc):
            return None
        raise GroupConfigError(f"describing the configs of {kind.lower()} {name!r}: {exc}") from exc
    return {key: entry.value for key, entry in entries.items()}


def _require_share_version(client_config: Mapping[str, Any]) -> None:
    level = finalized_features(client_config).get(SHARE_VERSION, 0)
    if level < DLQ_SHARE_VERSION:
        raise ConfigurationError(
            f"the brokers' dead-letter queue needs the cluster feature {SHARE_VERSION}="
            f"{DLQ_SHARE_VERSION} (Kafka 4.4 or newer); this cluster has {SHARE_VERSION}="
            f"{level}: upgrade the brokers to 4.4 if they are older, then run "
            f"'kafka-features.sh --bootstrap-server {client_config['bootstrap.servers']} "
            f"upgrade --feature {SHARE_VERSION}={DLQ_SHARE_VERSION}'"
        )


def _require_topic(admin: AdminClient, group: str, topic: str) -> None:
    brokers = admin.list_topics(timeout=_TIMEOUT_S).brokers
    broker = _configs(admin, "BROKER", str(min(brokers))) or {}
    prefix = broker.get(BROKER_PREFIX) or ""
    if not topic.startswith(prefix):
        raise ConfigurationError(
            f"dead-letter topic {topic!r} of share group {group!r} lacks the prefix {prefix!r} "
            f"the brokers require ({BROKER_PREFIX}): the brokers would archive every refused "
            f"record without writing it; name the topic {prefix + topic!r}"
        )
    configs = _configs(admin, "TOPIC", topic)
    if configs is None and broker.get(BROKER_AUTO_CREATE) != "true":
        raise ConfigurationError(
            f"dead-letter topic {topic!r} of share group {group!r} does not exist and the "
            f"brokers may not create it ({BROKER_AUTO_CREATE}=false): create it with "
            f"{TOPIC_ENABLE}=true"
        )
    if configs is not None and configs.get(TOPIC_ENABLE) != "true":
        raise ConfigurationError(
            f"topic {topic!r} is not open to share groups' dead letters: the brokers would "
            f"archive every refused record without writing it; run 'kafka-configs.sh --alter "
            f"--entity-type topics --entity-name {topic} --add-config {TOPIC_ENABLE}=true'"
        )


def prepare_dead_letter_queue(
    client_config: Mapping[str, Any], topic: str | None = None, copy_records: bool | None = None,
) -> str:
    """Check that the brokers of ``client_config`` write what its share group (``group.id``)
    REJECTs to a dead-letter topic, setting the group's topic (and whether it copies the
    record) first when given; return the topic.

    Raises:
        ConfigurationError: the embedded broker, a cluster without ``share.version`` 2, a
            group without a dead-letter topic, or a topic the brokers would not write to; each
            message names the fix.
        GroupConfigError: the brokers did not answer or refused the admin requests.
    """
    group = str(client_config["group.id"])
    admin = AdminClient(admin_config(client_config))
    if not _keeps_group_configs(admin, _TIMEOUT_S):
        raise ConfigurationError(
            "the embedded broker has no dead-letter queue: use the toolkit's own dead letters "
            "(SqlDeadLetters, DeltaDeadLetters, KafkaDeadLetters) there"
        )
    _require_share_version(client_config)
    wanted: dict[str, str | int] = {} if topic is None else {DLQ_TOPIC: topic}
    if copy_records is not None:
        wanted[DLQ_COPY_RECORD] = str(copy_records).lower()
    if wanted:
        alter_share_group(client_config, group, wanted, admin=admin)
    described = _describe(admin, group, _TIMEOUT_S) or {}
    chosen = described.get(DLQ_TOPIC, ("", False))[0]
    if not chosen:
        raise ConfigurationError(
            f"share group {group!r} has no dead-letter topic: pass topic= or set the group "
            f"config {DLQ_TOPIC}"
        )
    _require_topic(admin, group, chosen)
    return str(chosen)
