"""A network partition between the pipeline and every broker, longer than the record lock.

The run's pipeline reaches the brokers only through the cluster's Toxiproxy proxies
(``KafkaCluster(proxy=True)``, see :mod:`~kafka_share_eos.proving_ground.launchers.toxiproxy`);
the verifier's own clients (producer, admin) and the brokers among themselves stay direct. The cut
is a blackhole: connections stay open, nothing passes either way, what was sent is held until the
heal, as when a switch drops every packet and TCP retransmits afterwards. It lasts longer than
the run's record lock, so the broker takes the held batch's records back while the pipeline
still applies them: its acknowledgements arrive late and are refused, the records come again,
and the strategy must find them applied.
"""

from __future__ import annotations

from kafka_share_eos.proving_ground.verify.broker_choice import RECORD_LOCK_MS, SESSION_TIMEOUT_MS
from kafka_share_eos.proving_ground.verify.outages.registry import Outage, Scene, register

CUT_SECONDS = 10.0
"""How long the path stays cut: well past the record lock (4 s) and the session timeout (3 s)
of every Kafka run, so the broker fences the member and releases its records before the heal."""


@register
class Partition(Outage):
    name = "partition"
    description = ("blackhole every connection of the pipeline to the brokers mid-batch, for "
                   f"{CUT_SECONDS:.0f} s (longer than the record lock), then let it through again")
    proxied = True
    heal_after_seconds = CUT_SECONDS

    def strike(self, scene: Scene) -> str:
        scene.cluster.cut("blackhole")
        return (f"blackholed the pipeline's connections to all {len(scene.cluster.nodes)} nodes "
                f"for {CUT_SECONDS:.0f} s (record lock {RECORD_LOCK_MS / 1000:.0f} s, session "
                f"timeout {SESSION_TIMEOUT_MS / 1000:.0f} s)")

    def heal(self, scene: Scene) -> None:
        scene.cluster.heal()
