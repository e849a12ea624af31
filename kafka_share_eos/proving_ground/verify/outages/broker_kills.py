"""Broker faults on a three-node cluster: a partition leader or the share-group state's leader
SIGKILLed mid-batch, and a clean restart of a partition leader.

Every run's topic has three replicas and ``min.insync.replicas=2``, and so have Kafka's internal
topics (offsets, transactions, share-group state; see
:mod:`~kafka_share_eos.proving_ground.launchers.kafka_cluster`): with one node down, every partition
keeps a leader and enough in-sync replicas to take writes. A killed node stays down until the stream
applied records without it, then starts again on its storage.
"""

from __future__ import annotations

import signal

from confluent_kafka import TopicCollection

from kafka_share_eos.proving_ground.errors import KafkaLauncherError
from kafka_share_eos.proving_ground.verify.outages.registry import Outage, Scene, register

SHARE_STATE_TOPIC = "__share_group_state"
_TIMEOUT_S = 30.0


def leader(scene: Scene, topic: str, partition: int) -> int:
    """The node id leading ``topic``'s ``partition`` now."""
    metadata = scene.cluster.admin().list_topics(topic, timeout=_TIMEOUT_S).topics[topic]
    found = metadata.partitions.get(partition)
    if found is None or found.leader < 0:
        raise KafkaLauncherError(f"{topic}-{partition} has no leader")
    return int(found.leader)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (a signed 32-bit int) of a string of BMP characters."""
    value = 0
    for char in text:
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def share_state_partition(group: str, topic_id: str, partition: int, partitions: int) -> int:
    """The ``__share_group_state`` partition that keeps the state of ``group`` on one partition
    of a topic: Kafka's share coordinator picks ``abs(hash("group:topicId:partition")) % n``
    (``Utils.abs`` maps the smallest int to 0)."""
    hashed = java_string_hash(f"{group}:{topic_id}:{partition}")
    return (0 if hashed == -(1 << 31) else abs(hashed)) % partitions


def _state_partition_of(scene: Scene, partition: int) -> int:
    admin = scene.cluster.admin()
    described = admin.describe_topics(TopicCollection([scene.topic]))[scene.topic]
    topic_id = str(described.result(_TIMEOUT_S).topic_id)
    state = admin.list_topics(SHARE_STATE_TOPIC, timeout=_TIMEOUT_S).topics[SHARE_STATE_TOPIC]
    return share_state_partition(scene.group, topic_id, partition, len(state.partitions))


class StopNode(Outage):
    """Stop one node with a signal; start it again at :meth:`heal`."""

    signum: int = signal.SIGKILL
    _node: int | None = None

    def target(self, scene: Scene) -> tuple[int, str]:
        """The node to stop, and why it is that one."""
        partition = scene.held_partitions[0] if scene.held_partitions else 0
        return leader(scene, scene.topic, partition), f"leader of {scene.topic}-{partition}"

    def strike(self, scene: Scene) -> str:
        node, why = self.target(scene)
        self._node = node
        scene.cluster.kill_node(node, self.signum)
        return f"{signal.Signals(self.signum).name} node {node}, {why}"

    def heal(self, scene: Scene) -> None:
        if self._node is not None:
            scene.cluster.restart_node(self._node)


@register
class BrokerKill(StopNode):
    name = "broker-kill"
    description = ("SIGKILL the leader of a partition whose records a batch holds, mid-batch; "
                   "start it again once the stream applied records without it")


@register
class CoordinatorKill(StopNode):
    name = "coordinator-kill"
    description = ("SIGKILL the leader of the __share_group_state partition keeping the share "
                   "group's state of a partition the held batch reads, mid-batch; start it "
                   "again once the stream applied records without it")

    def target(self, scene: Scene) -> tuple[int, str]:
        partition = scene.held_partitions[0] if scene.held_partitions else 0
        state = _state_partition_of(scene, partition)
        node = leader(scene, SHARE_STATE_TOPIC, state)
        data = leader(scene, scene.topic, partition)
        also = f", also the leader of {scene.topic}-{partition}" if node == data else ""
        return node, (f"leader of {SHARE_STATE_TOPIC}-{state} (the state of "
                      f"{scene.topic}-{partition}){also}")


@register
class BrokerRestart(StopNode):
    name = "broker-restart"
    description = ("SIGTERM the leader of a partition whose records a batch holds (a clean "
                   "shutdown), mid-batch, and start it again at once")
    signum = signal.SIGTERM
    heal_after_seconds = 0.0
