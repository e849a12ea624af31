"""The JVMs of the launcher's Kafka nodes: their storage formatted, each one started, and the
wait until every broker registered."""

from __future__ import annotations

import base64
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient

from kafka_share_eos.proving_ground.errors import KafkaLauncherError
from kafka_share_eos.proving_ground.launchers.kafka_admin import registered_brokers
from kafka_share_eos.proving_ground.launchers.kafka_dist import kafka_jars
from kafka_share_eos.proving_ground.launchers.kafka_node import KafkaNode, listens, port_taken
from kafka_share_eos.proving_ground.launchers.process_tree import launch
from kafka_share_eos.proving_ground.signals import deferred_signals

START_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class NodeJvm:
    """How every node's JVM runs: the ``java`` binary, its heap and its log4j configuration."""

    java: Path
    heap_mb: int
    log4j: Path

    def options(self, node: KafkaNode) -> list[str]:
        return [
            f"-Xmx{self.heap_mb}m", "-Xms128m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={self.log4j}",
            f"-Dkse.kafka.log={node.log_file}",
        ]

    def format_storage(self, nodes: Sequence[KafkaNode], jars: Path,
                       arguments: Sequence[str] = ()) -> None:
        """Format every node's storage for one new cluster id (``arguments`` added to each
        ``StorageTool format``), in parallel.

        Raises:
            KafkaLauncherError: a node's formatting failed (the message gives its last line).
        """
        cluster_id = new_cluster_id()
        formats = {
            node.node_id: launch(
                [str(self.java), *self.options(node), "-cp", f"{jars}/*",
                 "kafka.tools.StorageTool", "format", "--ignore-formatted",
                 # One argument: an id starting with "-" (1 in 64) would read as an option.
                 f"--cluster-id={cluster_id}",
                 "--config", str(node.directory / "server.properties"), *arguments],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            )
            for node in nodes
        }
        for node_id, process in formats.items():
            output, _ = process.communicate()
            if process.returncode != 0:
                last = output.strip().splitlines()[-1:] or ["no output"]
                raise KafkaLauncherError(
                    f"formatting the storage of Kafka node {node_id} failed: {last[0]}"
                )

    def start(self, node: KafkaNode) -> None:
        """Start ``node``'s JVM on its release's jars, its output appended to its directory's
        ``stdout.log``."""
        jars = kafka_jars(node.version)
        with deferred_signals(), open(node.directory / "stdout.log", "ab") as out:
            node.process = launch(
                [str(self.java), *self.options(node), "-cp", f"{jars}/*", "kafka.Kafka",
                 str(node.directory / "server.properties")],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            )


def wait_until_registered(nodes: Sequence[KafkaNode], admin: Callable[[], AdminClient]) -> bool:
    """Whether every running node registered; False when one exited because another process
    took its port.

    Raises:
        KafkaLauncherError: a node exited for another reason, or the brokers did not all
            register within :data:`START_TIMEOUT_S`.
    """
    wanted = {node.node_id for node in nodes if node.running}
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        for node in nodes:
            if node.process is not None and not node.running:
                if port_taken(node):
                    return False
                raise KafkaLauncherError(
                    f"Kafka node {node.node_id} exited with code {node.process.returncode} "
                    f"while starting: see {node.log_file}"
                )
        # A client started before the brokers listen logs every refused connection.
        listening = all(listens(node) for node in nodes if node.running)
        if listening and wanted <= registered_brokers(admin(), timeout_s=2.0):
            return True
        if time.monotonic() > deadline:
            raise KafkaLauncherError(
                f"Kafka brokers {sorted(wanted)} did not all register within "
                f"{START_TIMEOUT_S:.0f} s: see {nodes[0].log_file}"
            )
        time.sleep(0.1)


def new_cluster_id() -> str:
    """A random KRaft cluster id: 16 random bytes in URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
