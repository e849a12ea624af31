"""A cluster's feature levels, asked of a broker through kafka-python: the pipeline's own
connection and security settings are translated to kafka-python's names, and on Apache Kafka
the levels read are those ``kafka-features.sh describe`` prints."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from kafka_share_eos.sharegroup.features import _admin_settings, finalized_features

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

pytestmark = pytest.mark.timeout(180)


def test_connection_and_security_settings_take_kafka_pythons_names() -> None:
    client = {
        "bootstrap.servers": "b1:9093,b2:9093", "client.id": "orders",
        "security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "etl", "sasl.password": "secret", "ssl.ca.location": "/ca.pem",
        "ssl.certificate.location": "/client.pem", "ssl.key.location": "/client.key",
        "ssl.key.password": "key-secret", "group.id": "orders", "max.poll.records": "500",
    }
    assert _admin_settings(client, 2.5) == {
        "bootstrap_servers": "b1:9093,b2:9093", "client_id": "orders",
        "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "etl", "sasl_plain_password": "secret", "ssl_cafile": "/ca.pem",
        "ssl_certfile": "/client.pem", "ssl_keyfile": "/client.key", "ssl_password": "key-secret",
        "request_timeout_ms": 2500,
    }


def test_a_plaintext_client_needs_only_its_brokers() -> None:
    assert _admin_settings({"bootstrap.servers": "localhost:9092"}, 10.0) == {
        "bootstrap_servers": "localhost:9092", "request_timeout_ms": 10_000}


@pytest.mark.parametrize(("algorithm", "checks_hostname"), [
    ("none", False), ("NONE", False), ("https", None), (None, None),
])
def test_hostname_checks_are_off_only_where_the_client_turned_them_off(
    algorithm: str | None, checks_hostname: bool | None
) -> None:
    client = {"bootstrap.servers": "b1:9093", "security.protocol": "SSL"}
    if algorithm is not None:
        client["ssl.endpoint.identification.algorithm"] = algorithm
    assert _admin_settings(client, 1.0).get("ssl_check_hostname") is checks_hostname


@pytest.mark.kafka
def test_the_levels_are_those_the_cluster_finalised(kafka_cluster: KafkaCluster) -> None:
    levels = finalized_features(kafka_cluster.client_config())
    described = kafka_cluster.features()
    # A broker announces the features in force on it; kraft.version is the controllers' own.
    assert {"share.version", "metadata.version", "group.version"} <= set(levels)
    assert set(levels) == set(described) - {"kraft.version"}
    assert {name: str(level) for name, level in levels.items() if name != "metadata.version"} == {
        name: described[name] for name in levels if name != "metadata.version"}
