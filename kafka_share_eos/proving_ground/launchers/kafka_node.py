"""One KRaft node of the launcher's Apache Kafka cluster (broker and controller in one JVM), and
the settings every node of a test cluster runs with."""

from __future__ import annotations

import contextlib
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from kafka_share_eos.proving_ground.launchers.ports import free_ports
from kafka_share_eos.proving_ground.launchers.toxiproxy import Proxy, Toxiproxy

LOG4J2_PROPERTIES = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kse.kafka.log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.state.name = state.change.logger
logger.state.level = WARN
"""


def cluster_defaults(brokers: int) -> dict[str, str]:
    """Kafka's defaults where they suit tests; replicated internal topics with room for one node
    down, and share-group lower bounds low enough for short locks and sessions."""
    replicas, in_sync = str(min(3, brokers)), str(min(2, brokers))
    return {
        "offsets.topic.replication.factor": replicas,
        "offsets.topic.num.partitions": "5",
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": in_sync,
        "transaction.state.log.num.partitions": "5",
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": in_sync,
        "share.coordinator.state.topic.num.partitions": "5",
        "default.replication.factor": replicas,
        "min.insync.replicas": in_sync,
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
        "group.share.min.record.lock.duration.ms": "1000",
        "group.share.min.session.timeout.ms": "1000",
        "group.share.min.heartbeat.interval.ms": "500",
        "num.partitions": "1",
    }


@dataclass
class KafkaNode:
    """One KRaft node of the cluster: broker and controller in one JVM."""

    node_id: int
    broker_port: int
    controller_port: int
    directory: Path
    version: str
    """The Apache Kafka release the node runs (another one after an upgrade)."""
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    proxy: Proxy | None = field(default=None, repr=False)
    """With ``proxy=True``: the Toxiproxy proxy in front of the node's second listener."""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    @property
    def log_file(self) -> Path:
        return self.directory / "server.log"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def listeners(node: KafkaNode, listener: str, proxies: Toxiproxy | None) -> dict[str, str]:
    """The node's listener properties: its own, the controller's and, given ``proxies``, a
    second one advertised at the address of a proxy made there for it (kept as
    ``node.proxy``): a client that bootstraps from the proxy is told of the proxies only."""
    own = [f"{listener}://{node.address}", f"CONTROLLER://127.0.0.1:{node.controller_port}"]
    advertised = [f"{listener}://{node.address}"]
    protocols = [f"{listener}:{listener}", "CONTROLLER:PLAINTEXT"]
    if proxies is not None:
        (port,) = free_ports(1)
        node.proxy = proxies.proxy(f"127.0.0.1:{port}", name=f"kafka-node-{node.node_id}")
        own.append(f"PROXIED://127.0.0.1:{port}")
        advertised.append(f"PROXIED://{node.proxy.address}")
        protocols.append(f"PROXIED:{listener}")
    return {"listeners": ",".join(own), "advertised.listeners": ",".join(advertised),
            "listener.security.protocol.map": ",".join(protocols)}


def listens(node: KafkaNode) -> bool:
    try:
        socket.create_connection(("127.0.0.1", node.broker_port), timeout=1.0).close()
    except OSError:
        return False
    return True


def port_taken(node: KafkaNode) -> bool:
    with contextlib.suppress(OSError):
        return "Address already in use" in node.log_file.read_text(errors="replace")
    return False
