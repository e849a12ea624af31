"""The launcher's secured cluster: SCRAM-SHA-512 over TLS with a CA of its own, and ACLs that
let a principal do what they grant and nothing else."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import confluent_kafka as ck
import pytest

from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster
from kafka_share_eos.proving_ground.launchers.kafka_security import SaslSsl

# The source's own secured tests (tests/kafka/test_secured.py) run in CI; these with ./dev test.
pytestmark = [pytest.mark.kafka, pytest.mark.full, pytest.mark.timeout(300)]

TOPIC = "jobs"


@pytest.fixture(scope="module")
def secured() -> Iterator[KafkaCluster]:
    with KafkaCluster(security=SaslSsl(), topics=[f"{TOPIC}:2"]) as kafka:
        producer = ck.Producer(kafka.client_config())
        for n in range(10):
            producer.produce(TOPIC, b"%d" % n)
        assert producer.flush(30) == 0
        yield kafka


def _poll_until_records_or_error(
    kafka: KafkaCluster, config: dict[str, Any], group: str
) -> tuple[int, list[ck.KafkaError]]:
    """Records a share consumer with ``config`` gets in ``group``, and the errors it meets."""
    kafka.set_group_config(group, {"share.auto.offset.reset": "earliest"})
    errors: list[ck.KafkaError] = []
    consumer = ck.ShareConsumer({**config, "group.id": group, "error_cb": errors.append})
    consumer.subscribe([TOPIC])
    records = 0
    deadline = time.monotonic() + 60
    try:
        while records < 10 and not errors and time.monotonic() < deadline:
            try:
                records += len(consumer.poll(0.5) or [])
            except ck.KafkaException as error:
                errors.append(error.args[0])
    finally:
        consumer.close()
    return records, errors


def test_a_user_reads_what_its_acls_allow(secured: KafkaCluster) -> None:
    secured.add_user("reader", "reader-secret")
    secured.allow("reader", "TOPIC", TOPIC, "READ", "DESCRIBE")
    secured.allow("reader", "GROUP", "readers", "READ", "DESCRIBE")
    records, errors = _poll_until_records_or_error(
        secured, secured.user_config("reader", "reader-secret"), "readers"
    )
    assert (records, errors) == (10, [])


@pytest.mark.parametrize(
    ("user", "password", "grants", "refusal"),
    [
        ("intruder", "wrong", {}, ck.KafkaError._AUTHENTICATION),
        ("no-group", "secret", {"TOPIC": TOPIC}, ck.KafkaError.GROUP_AUTHORIZATION_FAILED),
        ("no-topic", "secret", {"GROUP": "no-topic"}, ck.KafkaError.TOPIC_AUTHORIZATION_FAILED),
    ],
)
def test_a_user_is_refused_what_its_acls_do_not_allow(
    secured: KafkaCluster, user: str, password: str, grants: dict[str, str], refusal: int
) -> None:
    secured.add_user(user, "secret")
    for resource, name in grants.items():
        secured.allow(user, resource, name, "READ", "DESCRIBE")
    records, errors = _poll_until_records_or_error(
        secured, secured.user_config(user, password), user
    )
    assert records == 0
    assert refusal in {error.code() for error in errors}, errors
