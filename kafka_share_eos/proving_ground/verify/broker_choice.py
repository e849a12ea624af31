"""The broker a verification runs against: the embedded one, or Apache Kafka itself.

Both get the same share-group timings, short enough that a run's restarts stay quick: a dead
member's records come back within seconds, and with a slow sink or handoffs a batch outlasts
its record lock. The embedded broker applies them to every group; on Kafka they are each run's
group configs (set through the admin API before its pipelines start), together with where a new
group starts and ``read_committed``. The Kafka cluster lowers the brokers' lower bounds of those
settings (see :mod:`~kafka_share_eos.proving_ground.launchers.kafka_cluster`); its groups' other
settings, the delivery limit of 5 among them, stay Kafka's defaults.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from kafka_share_eos.proving_ground.broker import EmbeddedBroker
from kafka_share_eos.sharegroup.group_config import (
    AUTO_OFFSET_RESET,
    HEARTBEAT_INTERVAL,
    ISOLATION_LEVEL,
    LOCK_DURATION,
    SESSION_TIMEOUT,
)

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

BrokerKind = Literal["embedded", "kafka"]
BROKER_KINDS: tuple[BrokerKind, ...] = ("embedded", "kafka")

SESSION_TIMEOUT_MS = 3000
HEARTBEAT_INTERVAL_MS = 500
RECORD_LOCK_MS = 4000
"""The record lock of every Kafka run, and of the embedded broker's runs with a slow sink or
handoffs (it otherwise keeps a lock as long as the session timeout)."""


class _Cluster(Protocol):
    @property
    def bootstrap_servers(self) -> str: ...

    def create_topic(self, name: str, partitions: int = 1) -> None: ...


@dataclass
class VerifyBroker:
    """A running broker as the runs see it."""

    name: str
    cluster: _Cluster
    group_configs: dict[str, str | int] | None = None
    """Configs each run's share group gets (Kafka); None where the broker sets them for all."""

    @property
    def bootstrap_servers(self) -> str:
        return self.cluster.bootstrap_servers

    def create_topic(self, name: str, partitions: int) -> None:
        """Create a run's topic."""
        self.cluster.create_topic(name, partitions)

    def prepare_group(self, group: str) -> None:
        """Give a run's share group the verification's settings before anyone joins it."""
        if self.group_configs is None:
            return
        self.kafka().set_group_config(group, self.group_configs)

    def kafka(self) -> KafkaCluster:
        """The Apache Kafka cluster of a ``--broker kafka`` verification."""
        from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

        assert isinstance(self.cluster, KafkaCluster)
        return self.cluster


@contextlib.contextmanager
def verify_broker(
    kind: BrokerKind, short_locks: bool, brokers: int = 1, proxy: bool = False,
    version: str | None = None,
) -> Iterator[VerifyBroker]:
    """Start the broker of a verification; ``short_locks`` gives the embedded broker the record
    lock Kafka runs always have; Kafka gets ``brokers`` nodes (three for broker faults: every
    topic then has three replicas and two in-sync replicas at least), with ``proxy`` a TCP
    proxy in front of each (for a network partition's pipelines), and runs ``version``
    (default: the launcher's release)."""
    if kind == "kafka":
        from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

        with KafkaCluster(brokers, proxy=proxy, version=version) as cluster:
            yield VerifyBroker(f"Apache Kafka {cluster.version}", cluster, {
                AUTO_OFFSET_RESET: "earliest",
                ISOLATION_LEVEL: "read_committed",
                SESSION_TIMEOUT: SESSION_TIMEOUT_MS,
                HEARTBEAT_INTERVAL: HEARTBEAT_INTERVAL_MS,
                LOCK_DURATION: RECORD_LOCK_MS,
            })
        return
    with EmbeddedBroker(
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        record_lock_duration_ms=RECORD_LOCK_MS if short_locks else None,
    ) as embedded:
        yield VerifyBroker("embedded broker", embedded)
