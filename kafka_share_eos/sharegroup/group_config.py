"""A share group's own settings, read and written through Kafka's admin API.

Kafka keeps a share group's behaviour in *group configs* (KIP-932): how long a record stays
locked to its consumer, after how many deliveries it is archived, whether aborted transactions
are hidden, where a new group starts. They are set by an administrator with
``kafka-configs.sh --entity-type groups`` or ``incrementalAlterConfigs`` on the GROUP resource,
and every value falls back to the broker's ``group.share.*`` default. The source reads them at
start so that its lock budget and drain waits use the cluster's real values instead of
assuming them.

The embedded broker (librdkafka's mock cluster) has no group configs: :func:`describe_share_group`
returns None there, and the source keeps its options' values.

Some configs only matter before a group has members: Kafka reads ``share.auto.offset.reset`` when
it first initialises a share-partition of the group. :func:`share_group_exists` tells whether the
brokers know the group at all, the only sign of its state the pinned client can read.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    GroupMetadata,
)

from kafka_share_eos.errors import ConfigurationError, GroupConfigError
from kafka_share_eos.sharegroup.access import SignInWatch

LOCK_DURATION = "share.record.lock.duration.ms"
DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
SESSION_TIMEOUT = "share.session.timeout.ms"
HEARTBEAT_INTERVAL = "share.heartbeat.interval.ms"
ISOLATION_LEVEL = "share.isolation.level"
AUTO_OFFSET_RESET = "share.auto.offset.reset"
MAX_RECORD_LOCKS = "share.partition.max.record.locks"
RENEW_ENABLED = "share.renew.acknowledge.enable"
ASSIGNMENT_INTERVAL = "share.assignment.interval.ms"
DLQ_TOPIC = "errors.deadletterqueue.topic.name"
DLQ_COPY_RECORD = "errors.deadletterqueue.copy.record.enable"
# Group configs outside the share. namespace: the broker's dead-letter queue (KIP-1191, 4.4);
# its auto-create switch and topic prefix are broker configs, not group ones.
_OTHER_GROUP_CONFIGS = frozenset({DLQ_TOPIC, DLQ_COPY_RECORD})

# Settings that make an admin client reach the same cluster as the consumer; the consumer's own
# settings (max.poll.records, fetch sizes, ...) would only earn warnings from an admin client.
_CONNECTION_PREFIXES = (
    "bootstrap.servers", "security.protocol", "ssl.", "sasl.", "client.id", "socket.",
    "broker.address.", "enable.ssl.", "client.dns.lookup", "metadata.recovery.",
)


@dataclass(frozen=True)
class ShareGroupSettings:
    """The settings a share group runs with (its own configs, else the broker's defaults).

    A field is None when the brokers' Kafka release does not know the setting.
    """

    group: str
    record_lock_duration_ms: int
    session_timeout_ms: int
    delivery_count_limit: int | None
    heartbeat_interval_ms: int | None
    isolation_level: str | None
    auto_offset_reset: str | None
    partition_max_record_locks: int | None
    renew_acknowledge_enabled: bool | None
    assignment_interval_ms: int | None = None
    isolation_level_is_own: bool = False
    """Whether ``isolation_level`` is the group's own config rather than Kafka's default."""

    @property
    def join_ms(self) -> int:
        """How long a new member may wait for its first partitions: Kafka hands them out in
        the answer to a heartbeat after the next assignment, so up to one heartbeat interval
        plus one assignment interval after it joined."""
        return (self.heartbeat_interval_ms or 0) + (self.assignment_interval_ms or 0)

    @property
    def reads_committed(self) -> bool:
        """Whether the group hides records of aborted transactions (``read_committed``)."""
        return self.isolation_level == "read_committed"


def config_command(client_config: Mapping[str, Any], group: str, name: str, value: str) -> str:
    """The ``kafka-configs.sh`` command an administrator runs to set ``name`` on ``group``."""
    servers = str(client_config.get("bootstrap.servers", "<brokers>")).split(",")[0]
    return (
        f"kafka-configs.sh --bootstrap-server {servers} --alter --entity-type groups "
        f"--entity-name {group} --add-config {name}={value}"
    )


def admin_config(client_config: Mapping[str, Any]) -> dict[str, Any]:
    """The connection and security part of a client configuration, for an admin client."""
    return {key: value for key, value in client_config.items()
            if key.startswith(_CONNECTION_PREFIXES)}


# Admin clients that talked to an embedded broker, kept for the process's life: there a client
# that disconnects drops every share session of the broker, the consumers' beside it included.
_kept: list[AdminClient] = []


def _keeps_group_configs(admin: AdminClient, timeout_s: float) -> bool:
    """Whether the cluster has a controller among its brokers, which group configs need (the
    embedded broker names none)."""
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise GroupConfigError(f"reading the cluster's metadata: {exc}") from exc
    return metadata.controller_id in metadata.brokers


def describe_share_group(
    client_config: Mapping[str, Any], group: str, timeout_s: float = 15.0,
    admin: AdminClient | None = None,
) -> ShareGroupSettings | None:
    """The settings ``group`` runs with, or None when the brokers keep no group configs.

    ``admin`` is the client to ask; by default a new one, dropped afterwards (kept for the
    process's life where it met the embedded broker).

    Raises:
        KafkaAccessError: the brokers refused the client's sign-in.
        GroupConfigError: the brokers refused the request (for instance no DESCRIBE_CONFIGS
            permission on the group), or did not answer within ``timeout_s``.
    """
    watch = SignInWatch()
    try:
        if admin is None:
            settings: dict[str, Any] = {**admin_config(client_config), "error_cb": watch}
            admin = AdminClient(settings)
            if not _keeps_group_configs(admin, timeout_s):
                _kept.append(admin)
                return None
        elif not _keeps_group_configs(admin, timeout_s):
            return None
        described = _describe(admin, group, timeout_s)
    except GroupConfigError:
        # A refused sign-in shows here only as metadata that never came; the admin client
        # reports it to error_cb when polled.
        if admin is not None:
            admin.poll(0)
        watch.raise_refusal(client_config, lasting=False)
        raise
    if described is None or LOCK_DURATION not in described:
        return None
    values = {name: value for name, (value, _) in described.items()}
    # Kafka 4.2 has no group configs for these yet: its brokers' defaults apply to every group.
    inherited = [key for key in (DELIVERY_COUNT_LIMIT, MAX_RECORD_LOCKS) if key not in values]
    if inherited:
        values.update(_broker_defaults(admin, inherited, timeout_s))

    def number(key: str) -> int | None:
        return int(values[key]) if values.get(key) not in (None, "") else None

    renew = values.get(RENEW_ENABLED)
    return ShareGroupSettings(
        group=group,
        record_lock_duration_ms=int(values[LOCK_DURATION]),
        session_timeout_ms=int(values[SESSION_TIMEOUT]),
        delivery_count_limit=number(DELIVERY_COUNT_LIMIT),
        heartbeat_interval_ms=number(HEARTBEAT_INTERVAL),
        isolation_level=values.get(ISOLATION_LEVEL),
        auto_offset_reset=values.get(AUTO_OFFSET_RESET),
        partition_max_record_locks=number(MAX_RECORD_LOCKS),
        renew_acknowledge_enabled=None if renew is None else renew == "true",
        assignment_interval_ms=number(ASSIGNMENT_INTERVAL),
        isolation_level_is_own=described.get(ISOLATION_LEVEL, ("", False))[1],
    )


def _describe(
    admin: AdminClient, group: str, timeout_s: float
) -> dict[str, tuple[str, bool]] | None:
    """Each config's value, and whether it is the group's own (not a default)."""
    resource = ConfigResource(ConfigResource.Type.GROUP, group)
    future = admin.describe_configs([resource], request_timeout=timeout_s)[resource]
    try:
        entries = future.result(timeout=timeout_s + 5)
    except KafkaException as exc:
        if _error_code(exc) in _NOT_SUPPORTED:
            return None
        raise GroupConfigError(f"describing the configs of share group {group!r}: {exc}") from exc
    except TimeoutError as exc:
        raise GroupConfigError(
            f"describing the configs of share group {group!r}: no answer in {timeout_s:.0f} s"
        ) from exc
    return {name: (entry.value, entry.source == ConfigSource.GROUP_CONFIG.value)
            for name, entry in entries.items()}


def _broker_defaults(admin: AdminClient, keys: list[str], timeout_s: float) -> dict[str, str]:
    """The brokers' ``group.``-prefixed defaults of the group configs ``keys``, as one broker
    describes them; nothing where the brokers refuse (no DESCRIBE_CONFIGS on the cluster)."""
    brokers = admin.list_topics(timeout=timeout_s).brokers
    resource = ConfigResource(ConfigResource.Type.BROKER, str(min(brokers)))
    try:
        entries = admin.describe_configs([resource], request_timeout=timeout_s)[resource].result(
            timeout=timeout_s + 5
        )
    except (KafkaException, TimeoutError):
        return {}
    found = {key: entries[f"group.{key}"].value for key in keys if f"group.{key}" in entries}
    return {key: value for key, value in found.items() if value is not None}


_NOT_SUPPORTED = frozenset({
    KafkaError.UNSUPPORTED_VERSION,
    KafkaError.INVALID_REQUEST,
    KafkaError.INVALID_CONFIG,
    KafkaError._UNSUPPORTED_FEATURE,
})
# What a group coordinator answers while it loads its state or is not yet up (as on a freshly
# started cluster): errors Kafka means as "ask again".
_COORDINATOR_NOT_READY = frozenset({
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
})


def _error_code(exc: KafkaException) -> int | None:
    """The Kafka error code an admin request failed with, if the exception carries one."""
    error = exc.args[0] if exc.args else None
    return error.code() if isinstance(error, KafkaError) else None


def alter_share_group(
    client_config: Mapping[str, Any],
    group: str,
    configs: Mapping[str, str | int],
    timeout_s: float = 30.0,
    admin: AdminClient | None = None,
) -> ShareGroupSettings:
    """Set group configs of ``group`` (names as Kafka spells them, e.g.
    ``share.record.lock.duration.ms`` or ``errors.deadletterqueue.topic.name``) and wait until
    the brokers describe them.

    Raises:
        ConfigurationError: a name that is not a share-group config, or a value the brokers
            refuse (the message is theirs).
        GroupConfigError: the brokers did not answer the change (in ``timeout_s``, or in the
            client's ``socket.timeout.ms`` when that is shorter), refused to describe the
            group's configs, or did not apply the change in ``timeout_s``.
    """
    unknown = sorted(name for name in configs
                     if not name.startswith("share.") and name not in _OTHER_GROUP_CONFIGS)
    if unknown:
        raise ConfigurationError(f"not share-group configs: {', '.join(unknown)}")
    admin = admin if admin is not None else AdminClient(admin_config(client_config))
    wanted = {name: str(value) for name, value in configs.items()}
    resource = ConfigResource(
        ConfigResource.Type.GROUP, group,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            for name, value in wanted.items()
        ],
    )
    try:
        admin.incremental_alter_configs([resource])[resource].result(timeout=timeout_s)
    except TimeoutError as exc:
        raise GroupConfigError(
            f"setting {wanted} on share group {group!r}: no answer in {timeout_s:g} s"
        ) from exc
    except KafkaException as exc:
        # The client's own timeout (socket.timeout.ms) may run out before timeout_s.
        if _error_code(exc) == KafkaError._TIMED_OUT:
            raise GroupConfigError(f"setting {wanted} on share group {group!r}: {exc}") from exc
        raise ConfigurationError(f"share group {group!r} refused {wanted}: {exc}") from exc
    # Brokers apply group configs through the metadata log: a describe right after the alter
    # may still answer with the old values.
    deadline = time.monotonic() + timeout_s
    while True:
        described = _describe(admin, group, timeout_s) or {}
        values = {name: value for name, (value, _) in described.items()}
        if all(values.get(name) == value for name, value in wanted.items()):
            settings = describe_share_group(client_config, group, timeout_s, admin)
            assert settings is not None
            return settings
        if time.monotonic() > deadline:
            raise GroupConfigError(
                f"share group {group!r} still describes "
                f"{ {name: values.get(name) for name in wanted} } {timeout_s:.0f} s after "
                f"they were set to {wanted}"
            )
        time.sleep(0.05)


def share_group_exists(
    client_config: Mapping[str, Any], group: str, timeout_s: float = 15.0,
    admin: AdminClient | None = None,
) -> bool:
    """Whether the brokers' group coordinators know ``group``: from the first time a member
    joined until the group is deleted, whether or not members are connected now.

    A group coordinator that is still loading, or not yet available, is asked again until
    ``timeout_s`` has passed.

    Raises:
        GroupConfigError: the brokers did not answer within ``timeout_s`` (or their group
            coordinators were still loading), or refused.
    """
    admin = admin if admin is not None else AdminClient(admin_config(client_config))
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            # Never a timeout of 0 or less: confluent-kafka waits for ever on a negative one.
            listed = _list_groups(admin, group, max(deadline - time.monotonic(), 0.05))
        except KafkaException as exc:
            if _error_code(exc) not in _COORDINATOR_NOT_READY or time.monotonic() > deadline:
                raise GroupConfigError(f"listing share group {group!r}: {exc}") from exc
        else:
            return any(entry.id == group for entry in listed)
        time.sleep(0.05)


def _list_groups(admin: AdminClient, group: str, timeout_s: float) -> list[GroupMetadata]:
    with warnings.catch_warnings():
        # confluent-kafka 2.16.1 deprecates list_groups for list_consumer_groups, which leaves
        # share groups out (its group types stop at CLASSIC); list_groups still names them.
        warnings.simplefilter("ignore", DeprecationWarning)
        return admin.list_groups(group, timeout=timeout_s)
