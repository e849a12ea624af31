"""A rolling upgrade of the three Kafka nodes to the launcher's release under a running
pipeline, finalised at the end, as Kafka's upgrade notes for KRaft clusters describe it.

Each run gets a cluster of its own started on :data:`UPGRADE_FROM` (an upgrade cannot be undone
once finalised). While the pipeline holds a batch, the leader of a partition it holds is stopped
with SIGTERM (a clean shutdown) and started on the new release's jars, on its storage and ports;
once it has registered and a batch started since applied records, the next node goes the same
way. With every node on the new release the cluster's features, ``metadata.version`` and
``share.version`` among them, are raised to the levels that release gives a new cluster
(:meth:`~kafka_share_eos.proving_ground.launchers.kafka_cluster.KafkaCluster.finalize_upgrade`),
and the stream must apply records once more. Until then the features stay at the old release's
levels, which both releases speak.

A run whose pipeline drained the group and exited before the roll ended proved nothing about the
rest of it: the roll stops there and the run fails, saying so (its stream was too short).
"""

from __future__ import annotations

import signal

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.launchers.kafka_dist import kafka_version
from kafka_share_eos.proving_ground.verify.outages.broker_kills import StopNode
from kafka_share_eos.proving_ground.verify.outages.gaps import held_batch
from kafka_share_eos.proving_ground.verify.outages.registry import Scene, register

UPGRADE_FROM = "4.3.1"
"""The release each run's cluster starts on, the one before the launcher's."""
APPLIED = "records applied since"
"""Ends the report of each step: the stream applied records after it."""


@register
class RollingUpgrade(StopNode):
    name = "rolling-upgrade"
    description = (f"upgrade the three nodes from Apache Kafka {UPGRADE_FROM} to the launcher's "
                   "release one at a time: SIGTERM the leader of a partition a batch holds, "
                   "mid-batch, start it on the new release and wait until the stream applied "
                   "records, then the next node; then raise the cluster's features "
                   "(metadata.version, share.version) with kafka-features.sh")
    signum = signal.SIGTERM
    heal_after_seconds = 0.0
    kafka_version = UPGRADE_FROM

    def heal(self, scene: Scene) -> None:
        if self._node is None:
            return
        release = kafka_version()
        cluster = scene.cluster
        steps = []
        for node in [self._node, *(n.node_id for n in cluster.nodes if n.node_id != self._node)]:
            if node != self._node:
                cluster.kill_node(node, self.signum)
            cluster.restart_node(node, release)
            steps.append(_once_applied(scene, f"node {node} on {release}"))
        before = cluster.features()
        after = cluster.finalize_upgrade()
        raised = ", ".join(f"{name} {before.get(name)} -> {level}"
                           for name, level in after.items() if before.get(name) != level)
        steps.append(_once_applied(scene, f"finalised: {raised or 'no feature raised'}"))
        self.healed = "; ".join(steps)


def _once_applied(scene: Scene, step: str) -> str:
    """``step``'s report once a batch started after it applied records.

    Raises:
        ConfigurationError: the run ended first.
    """
    last = held_batch(scene.progress())
    while not scene.applied_after(last):
        if scene.over.wait(0.2):
            raise ConfigurationError(
                f"the pipeline drained the group before the rolling upgrade ended (at {step}): "
                "give the run a longer stream (more --records, --per-trigger 1, --partitions 1)"
            )
    return f"{step}, {APPLIED}"
