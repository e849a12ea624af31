"""Admin calls the Kafka launcher makes: which brokers registered, topic creation, users
and ACLs."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_share_eos.proving_ground.errors import KafkaLauncherError

TOPIC_TIMEOUT_S = 60.0


def registered_brokers(admin: AdminClient, timeout_s: float) -> set[int]:
    """Ids of the brokers the cluster's metadata lists now (empty while none answers)."""
    try:
        description = admin.describe_cluster(request_timeout=timeout_s).result(timeout_s + 1)
    except (KafkaException, TimeoutError):
        return set()
    return {node.id for node in description.nodes}


def create_topic(
    admin: AdminClient,
    name: str,
    partitions: int,
    replication_factor: int,
    config: Mapping[str, str],
) -> None:
    """Create a topic (an existing one with the same partition count is fine) and wait until
    every partition has a leader in the metadata clients get.

    Raises:
        KafkaLauncherError: the brokers refused the topic, or it has another partition count.
    """
    topic = NewTopic(name, partitions, replication_factor, config=dict(config))
    try:
        admin.create_topics([topic], operation_timeout=TOPIC_TIMEOUT_S)[name].result()
    except KafkaException as exc:
        error = exc.args[0]
        if not (isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS):
            raise KafkaLauncherError(f"creating topic {name!r} failed: {error}") from exc
    deadline = time.monotonic() + TOPIC_TIMEOUT_S
    while True:
        metadata = admin.list_topics(name, timeout=TOPIC_TIMEOUT_S).topics.get(name)
        if metadata is not None and metadata.error is None:
            if len(metadata.partitions) != partitions:
                raise KafkaLauncherError(
                    f"topic {name!r} exists with {len(metadata.partitions)} partitions, "
                    f"not {partitions}"
                )
            if all(p.leader >= 0 and p.error is None for p in metadata.partitions.values()):
                return
        if time.monotonic() > deadline:
            raise KafkaLauncherError(
                f"topic {name!r} has partitions without a leader {TOPIC_TIMEOUT_S:.0f} s after "
                "its creation"
            )
        time.sleep(0.05)


def add_scram_user(admin: AdminClient, user: str, password: str) -> None:
    """Create (or update) the SCRAM-SHA-512 user ``user``."""
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password.encode()
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)


def allow_acl(admin: AdminClient, user: str, resource: str, name: str,
              operations: Iterable[str]) -> None:
    """Let ``user`` do ``operations`` on the ``resource`` named ``name``, by an ACL each."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    bindings = [
        AclBinding(ResourceType[resource], name, ResourcePatternType.LITERAL, f"User:{user}",
                   "*", AclOperation[operation], AclPermissionType.ALLOW)
        for operation in operations
    ]
    for future in admin.create_acls(bindings).values():
        future.result(30)
