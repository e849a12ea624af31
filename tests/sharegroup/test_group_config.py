"""A share group's own settings through the admin API: the embedded broker keeps none, so the
source keeps its options' values there; names that are no group configs are refused before any
request; an unreachable cluster, or a change the brokers do not answer, is an error that says so;
a group coordinator still loading is asked again; and on Apache Kafka a config set is described
back, with the group known once a member joined."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, GroupMetadata
from helpers import share_consumer

from kafka_share_eos.errors import ConfigurationError, GroupConfigError
from kafka_share_eos.proving_ground.broker import EmbeddedBroker
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.sharegroup.group_config import (
    DELIVERY_COUNT_LIMIT,
    ISOLATION_LEVEL,
    LOCK_DURATION,
    ShareGroupSettings,
    admin_config,
    alter_share_group,
    config_command,
    describe_share_group,
    share_group_exists,
)

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

pytestmark = pytest.mark.timeout(180)


def settings(**fields: object) -> ShareGroupSettings:
    values: dict[str, object] = {
        "group": "orders", "record_lock_duration_ms": 30_000, "session_timeout_ms": 45_000,
        "delivery_count_limit": 5, "heartbeat_interval_ms": 5_000,
        "isolation_level": "read_uncommitted", "auto_offset_reset": "latest",
        "partition_max_record_locks": 2_000, "renew_acknowledge_enabled": None,
        **fields,
    }
    return ShareGroupSettings(**values)  # type: ignore[arg-type]


def test_an_admin_client_gets_only_the_connection_and_security_settings() -> None:
    client = {
        "bootstrap.servers": "b1:9092,b2:9092", "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "etl", "ssl.ca.location": "/ca.pem",
        "client.id": "orders", "socket.timeout.ms": "5000", "group.id": "orders",
        "max.poll.records": "500", "share.acknowledgement.mode": "explicit",
    }
    assert admin_config(client) == {
        "bootstrap.servers": "b1:9092,b2:9092", "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "etl", "ssl.ca.location": "/ca.pem",
        "client.id": "orders", "socket.timeout.ms": "5000",
    }


def test_the_command_an_administrator_runs_names_the_first_broker_and_the_group() -> None:
    assert config_command({"bootstrap.servers": "b1:9092,b2:9092"}, "orders", LOCK_DURATION,
                          "60000") == (
        "kafka-configs.sh --bootstrap-server b1:9092 --alter --entity-type groups "
        "--entity-name orders --add-config share.record.lock.duration.ms=60000")
    assert "--bootstrap-server <brokers> " in config_command({}, "g", ISOLATION_LEVEL, "x")


def test_a_new_member_waits_a_heartbeat_and_an_assignment_for_its_partitions() -> None:
    assert settings(assignment_interval_ms=1_000).join_ms == 6_000
    # A release that does not know a setting leaves it out of the wait.
    assert settings(heartbeat_interval_ms=None).join_ms == 0


def test_only_read_committed_hides_aborted_transactions() -> None:
    assert settings(isolation_level="read_committed").reads_committed
    assert not settings().reads_committed
    assert not settings(isolation_level=None).reads_committed


def test_the_embedded_broker_keeps_no_group_configs(share_topic: ShareTopic) -> None:
    config = {"bootstrap.servers": share_topic.bootstrap_servers}
    assert describe_share_group(config, share_topic.group_id) is None
    admin = AdminClient(config)
    assert describe_share_group(config, share_topic.group_id, admin=admin) is None


def test_names_that_are_no_share_group_configs_are_refused_before_any_request() -> None:
    unreachable = {"bootstrap.servers": "127.0.0.1:1"}
    with pytest.raises(ConfigurationError,
                       match=r"not share-group configs: group\.initial\.rebalance\.delay\.ms, "
                             r"max\.poll\.records"):
        alter_share_group(unreachable, "orders", {
            "max.poll.records": 10, LOCK_DURATION: 1000, "group.initial.rebalance.delay.ms": 0,
        })


@pytest.mark.parametrize(("socket_timeout_ms", "timeout_s", "answer", "cause"), [
    # The wait for the answer runs out first...
    (60_000, 0.5, r"no answer in 0\.5 s", TimeoutError),
    # ...or the client's own request timeout does.
    (300, 10, r"Local: Timed out", KafkaException),
], ids=["wait", "socket.timeout.ms"])
def test_a_change_the_brokers_do_not_answer_names_the_group_and_the_change(
    embedded_broker: EmbeddedBroker, socket_timeout_ms: int, timeout_s: float, answer: str,
    cause: type[Exception],
) -> None:
    config = {"bootstrap.servers": embedded_broker.bootstrap_servers,
              "socket.timeout.ms": str(socket_timeout_ms)}
    with pytest.raises(GroupConfigError,
                       match=r"setting \{'share\.record\.lock\.duration\.ms': '17000'\} on "
                             r"share group 'orders': .*" + answer) as raised:
        alter_share_group(config, "orders", {LOCK_DURATION: 17_000}, timeout_s=timeout_s)
    assert isinstance(raised.value.__cause__, cause)


def test_a_cluster_that_does_not_answer_is_named_as_such() -> None:
    with pytest.raises(GroupConfigError, match="reading the cluster's metadata"):
        describe_share_group({"bootstrap.servers": "127.0.0.1:1"}, "orders", timeout_s=0.5)


def test_the_embedded_broker_cannot_list_share_groups() -> None:
    with EmbeddedBroker() as broker, pytest.raises(GroupConfigError,
                                                   match="listing share group 'orders'"):
        share_group_exists({"bootstrap.servers": broker.bootstrap_servers}, "orders",
                           timeout_s=5)


class LoadingCoordinator(AdminClient):
    """An admin client whose brokers answer ListGroups with ``error`` the first ``times``
    times, as Kafka's group coordinator does while it loads its state, and then list ``group``.
    """

    def __init__(self, group: str, error: int, times: int) -> None:
        super().__init__({"bootstrap.servers": "127.0.0.1:1"})
        self.group, self.error, self.times, self.asked = group, error, times, 0

    def list_groups(self, *args: Any, **kwargs: Any) -> list[GroupMetadata]:
        self.asked += 1
        if self.asked <= self.times:
            raise KafkaException(KafkaError(self.error))
        listed = GroupMetadata()
        listed.id = self.group
        return [listed]


@pytest.mark.parametrize("error", [KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                                   KafkaError.COORDINATOR_NOT_AVAILABLE])
def test_a_group_coordinator_still_loading_is_asked_again(error: int) -> None:
    admin = LoadingCoordinator("orders", error, times=3)
    assert share_group_exists({}, "orders", timeout_s=10, admin=admin)
    assert admin.asked == 4


def test_a_group_coordinator_loading_past_the_timeout_is_named() -> None:
    admin = LoadingCoordinator("orders", KafkaError.COORDINATOR_LOAD_IN_PROGRESS, times=10**6)
    started = time.monotonic()
    with pytest.raises(GroupConfigError,
                       match=r"listing share group 'orders': .*COORDINATOR_LOAD_IN_PROGRESS"):
        share_group_exists({}, "orders", timeout_s=0.3, admin=admin)
    assert 0.3 <= time.monotonic() - started < 5
    assert admin.asked > 1


def test_a_refused_listing_is_not_asked_again() -> None:
    admin = LoadingCoordinator("orders", KafkaError.GROUP_AUTHORIZATION_FAILED, times=1)
    with pytest.raises(GroupConfigError, match="GROUP_AUTHORIZATION_FAILED"):
        share_group_exists({}, "orders", timeout_s=10, admin=admin)
    assert admin.asked == 1


@pytest.mark.kafka
def test_configs_set_on_kafka_are_described_back_and_a_joined_group_is_known(
    kafka_cluster: KafkaCluster,
) -> None:
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, 1)
    group = f"g-{topic}"
    client = kafka_cluster.client_config()
    admin = AdminClient(admin_config(client))
    assert not share_group_exists(client, group, admin=admin)
    before = describe_share_group(client, group, admin=admin)
    assert before is not None and not before.isolation_level_is_own

    after = alter_share_group(client, group, {LOCK_DURATION: 17_000, DELIVERY_COUNT_LIMIT: 3,
                                              ISOLATION_LEVEL: "read_committed"}, admin=admin)
    assert (after.group, after.record_lock_duration_ms, after.delivery_count_limit) == (
        group, 17_000, 3)
    assert after.reads_committed and after.isolation_level_is_own
    assert after.session_timeout_ms == before.session_timeout_ms
    assert describe_share_group(client, group) == after
    with pytest.raises(ConfigurationError, match=f"share group '{group}' refused"):
        alter_share_group(client, group, {LOCK_DURATION: -5}, admin=admin)

    with share_consumer(kafka_cluster.bootstrap_servers, group, [topic],
                        **{k: v for k, v in client.items() if k != "bootstrap.servers"}) as member:
        deadline = time.monotonic() + 30
        while not share_group_exists(client, group, admin=admin):
            assert time.monotonic() < deadline, "the group never became known"
            member.poll(0.2)
