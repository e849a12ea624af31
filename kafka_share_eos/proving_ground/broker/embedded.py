"""An in-process Kafka cluster with share groups, for development, tests and demos.

It wraps librdkafka's mock cluster, which speaks the Kafka protocol over real TCP sockets, so any
process (a Spark executor, a second consumer, the CLI) can reach it at ``bootstrap_servers``.
Production points ``kafka.bootstrap.servers`` at a Kafka 4.2+ cluster instead.

Limits of the mock worth knowing: each partition keeps roughly 5 MB or 100k message batches and
silently drops older data, share-consume throughput is bounded by one serving thread, and a
client disconnecting drops every share session on the broker (records held by healthy consumers
are then redelivered).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.broker.errors import EmbeddedBrokerError
from kafka_share_eos.proving_ground.broker.librdkafka_mock import MockCluster
from kafka_share_eos.proving_ground.launchers.lifecycle import Launcher

AutoOffsetReset = Literal["earliest", "latest"]

_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
_TOPIC_SPEC = re.compile(r"(?P<name>[^:]*)(?::(?P<partitions>[0-9]+))?")
_AUTO_OFFSET_RESET_CODES: dict[str, int] = {"latest": 0, "earliest": 1}


# The embedded broker allocates every partition when it creates the topic: far beyond this,
# librdkafka's allocation fails and aborts the process.
MAX_PARTITIONS = 100_000


@dataclass(frozen=True)
class TopicSpec:
    """A topic to create: its name and partition count (both checked on construction).

    Raises:
        ConfigurationError: the name breaks Kafka's rules for topic names, or ``partitions``
            is not a positive integer.
    """

    name: str
    partitions: int = 1

    def __post_init__(self) -> None:
        # Kafka's own rules: 1-249 of these characters, and not "." or ".." (path names).
        if (
            not isinstance(self.name, str)
            or not _TOPIC_NAME.fullmatch(self.name)
            or self.name in (".", "..")
        ):
            raise ConfigurationError(
                f"bad topic name {self.name!r}: use 1 to 249 letters, digits, '.', '_' or '-'"
            )
        if (
            isinstance(self.partitions, bool)
            or not isinstance(self.partitions, int)
            or not 1 <= self.partitions <= MAX_PARTITIONS
        ):
            raise ConfigurationError(
                f"partitions of topic {self.name!r} must be an integer from 1 to "
                f"{MAX_PARTITIONS}, got {self.partitions!r}"
            )

    @classmethod
    def parse(cls, spec: str) -> TopicSpec:
        """Parse ``name`` or ``name:partitions`` (as on the command line).

        Raises:
            ConfigurationError: ``spec`` is not of that form, or names a bad topic.
        """
        match = _TOPIC_SPEC.fullmatch(spec.strip())
        if match is None:
            raise ConfigurationError(
                f"bad topic spec {spec!r}: expected NAME or NAME:PARTITIONS, where NAME uses "
                "letters, digits, '.', '_' or '-' and PARTITIONS is a positive integer"
            )
        partitions = int(match["partitions"]) if match["partitions"] is not None else 1
        try:
            return cls(match["name"], partitions)
        except ValueError as exc:
            raise ConfigurationError(f"bad topic spec {spec!r}: {exc}") from None


def _positive_ms(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigurationError(f"{name} must be a positive number of milliseconds, got {value!r}")
    return value


class EmbeddedBroker(Launcher):
    """A share-group-capable Kafka broker running inside this process.

    Use it as a context manager::

        with EmbeddedBroker(topics=["jobs:4"], record_lock_duration_ms=5000) as broker:
            consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap_servers, ...})

    Share-group settings apply to every share group on the broker and must be chosen before a
    group is first used, which is why they are constructor arguments.

    Args:
        topics: topics to create, as ``TopicSpec`` or ``"name[:partitions]"`` strings; one
            topic may be given alone (``EmbeddedBroker("jobs:4")``).
        record_lock_duration_ms: how long an acquired record stays locked to its consumer
            (Kafka's ``group.share.record.lock.duration.ms``; 30 000 by default there).
        max_delivery_attempts: deliveries after which a record is archived
            (``group.share.delivery.count.limit``; 5 by default there).
        session_timeout_ms: how long a silent member keeps its records.
        heartbeat_interval_ms: heartbeat interval the broker asks members for.
        auto_offset_reset: where a new share group starts reading.

    Raises:
        ConfigurationError: a topic spec, a duration, ``max_delivery_attempts`` or
            ``auto_offset_reset`` the broker cannot take, or one topic given with two partition
            counts.
    """

    _label = "the embedded broker"
    _error = EmbeddedBrokerError

    def __init__(
        self,
        topics: Iterable[TopicSpec | str] | TopicSpec | str = (),
        *,
        record_lock_duration_ms: int | None = None,
        max_delivery_attempts: int | None = None,
        session_timeout_ms: int | None = None,
        heartbeat_interval_ms: int | None = None,
        auto_offset_reset: AutoOffsetReset = "earliest",
    ) -> None:
        if auto_offset_reset not in _AUTO_OFFSET_RESET_CODES:
            raise ConfigurationError(
                f"auto_offset_reset must be 'earliest' or 'latest', got {auto_offset_reset!r}"
            )
        if max_delivery_attempts is not None and (
            isinstance(max_delivery_attempts, bool)
            or not isinstance(max_delivery_attempts, int)
            or max_delivery_attempts < 1
        ):
            raise ConfigurationError(
                f"max_delivery_attempts must be a positive integer, got {max_delivery_attempts!r}"
            )
        self._settings: Mapping[str, int | None] = {
            "record_lock_duration": _positive_ms(
                "record_lock_duration_ms", record_lock_duration_ms
            ),
            "max_delivery_attempts": max_delivery_attempts,
            "session_timeout": _positive_ms("session_timeout_ms", session_timeout_ms),
            "heartbeat_interval": _positive_ms("heartbeat_interval_ms", heartbeat_interval_ms),
            "auto_offset_reset": _AUTO_OFFSET_RESET_CODES[auto_offset_reset],
        }
        # A string is an iterable of its letters: one given alone is one topic, not several.
        given = [topics] if isinstance(topics, str | TopicSpec) else list(topics)
        self._initial_topics = [
            t if isinstance(t, TopicSpec) else TopicSpec.parse(t) for t in given
        ]
        declared: dict[str, int] = {}
        for spec in self._initial_topics:
            if declared.setdefault(spec.name, spec.partitions) != spec.partitions:
                raise ConfigurationError(
                    f"topic {spec.name!r} is given with {declared[spec.name]} and "
                    f"{spec.partitions} partitions"
                )
        self._cluster: MockCluster | None = None
        self._topics: dict[str, int] = {}

    def _start(self) -> None:
        """Start the cluster, apply the share-group settings and create the initial topics.

        Raises:
            LibrdkafkaNotFoundError: the librdkafka bundled with confluent-kafka is missing.
            EmbeddedBrokerError: the mock cluster could not start or create a topic.
        """
        self._cluster = MockCluster()
        for knob, value in self._settings.items():
            if value is not None:
                self._cluster.set_sharegroup(knob, value)
        for topic in self._initial_topics:
            self.create_topic(topic.name, topic.partitions)

    def _stop(self) -> None:
        """Stop the cluster; every client connected to it loses its connection."""
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
            self._topics = {}

    @property
    def bootstrap_servers(self) -> str:
        """``host:port[,host:port]`` of the cluster, reachable from any local process."""
        return self._running().bootstrap_servers

    @property
    def topics(self) -> dict[str, int]:
        """Topics created through this broker object, with their partition counts."""
        return dict(self._topics)

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create a topic; creating an existing topic with the same partition count is a no-op.

        Raises:
            ConfigurationError: a bad name or partition count, or the topic exists with another
                partition count.
            EmbeddedBrokerError: the broker is not running, or refused the topic.
        """
        spec = TopicSpec(name, partitions)
        existing = self._topics.get(spec.name)
        if existing is not None:
            if existing != spec.partitions:
                raise ConfigurationError(
                    f"topic {spec.name!r} already exists with {existing} partitions, "
                    f"not {spec.partitions}"
                )
            return
        self._running().create_topic(spec.name, spec.partitions)
        self._topics[spec.name] = spec.partitions

    def client_config(self, **overrides: str | int) -> dict[str, str | int]:
        """A confluent-kafka configuration dict pointing at this broker."""
        return {"bootstrap.servers": self.bootstrap_servers, **overrides}

    def _running(self) -> MockCluster:
        if self._cluster is None:
            raise self._not_running()
        return self._cluster
