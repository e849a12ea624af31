"""A cluster's feature levels (``share.version``, ``metadata.version``, ...), asked of a broker.

Kafka turns a behaviour on cluster-wide by *finalising* a feature level (``kafka-features.sh
upgrade``); a broker announces the levels in force in its ApiVersions answer (KIP-584).
librdkafka reads that answer but does not expose it, so the question goes through
kafka-python's admin client (``describe_features``), extra ``broker-dlq``, with the
connection and security settings of the pipeline's own client configuration translated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_share_eos._extras import BROKER_DLQ
from kafka_share_eos.errors import GroupConfigError

# librdkafka's spellings of the connection settings, and kafka-python's.
_SETTINGS = {
    "bootstrap.servers": "bootstrap_servers",
    "client.id": "client_id",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
}


def _admin_settings(client_config: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
    settings: dict[str, Any] = {
        theirs: client_config[ours] for ours, theirs in _SETTINGS.items() if ours in client_config
    }
    if "security_protocol" in settings:
        settings["security_protocol"] = str(settings["security_protocol"]).upper()
    if str(client_config.get("ssl.endpoint.identification.algorithm", "https")).lower() == "none":
        settings["ssl_check_hostname"] = False
    settings["request_timeout_ms"] = int(timeout_s * 1000)
    return settings


def finalized_features(client_config: Mapping[str, Any], timeout_s: float = 10.0) -> dict[str, int]:
    """The highest level in force of each finalised feature, as a bootstrap broker of
    ``client_config`` reports them (none for a broker older than feature levels).

    Raises:
        MissingExtraError: kafka-python is not installed (``[broker-dlq]``).
        GroupConfigError: no broker answered (the client's reason is named).
    """
    BROKER_DLQ.require("reading the cluster's feature levels")
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    try:
        admin = KafkaAdminClient(**_admin_settings(client_config, timeout_s))
    except KafkaError as error:
        raise GroupConfigError(
            f"no broker of {client_config.get('bootstrap.servers')!r} told its feature levels: "
            f"{error}"
        ) from error
    try:
        described: dict[str, dict[str, Any]] = admin.describe_features()
    except KafkaError as error:
        raise GroupConfigError(f"describing the cluster's feature levels: {error}") from error
    finally:
        admin.close()
    return {name: int(levels["finalized"][1])
            for name, levels in described.items() if "finalized" in levels}
