"""A real Apache Kafka cluster on loopback, started and stopped by the toolkit itself.

:class:`KafkaCluster` runs 1 or 3 (or any number of) KRaft nodes, each a JVM that is both broker
and controller, from the jars :mod:`~kafka_share_eos.proving_ground.launchers.kafka_dist` fetches.
Every node listens on free ports of 127.0.0.1 and keeps its log directory in a temporary directory
removed at stop. Replicated internal topics (offsets, transactions, share-group state) use
``min(3, brokers)`` replicas and ``min(2, brokers)`` in-sync replicas, like a production
cluster scaled down.

The cluster is Kafka's own defaults except where tests need room: the lower bounds of a share
group's record lock (``group.share.min.record.lock.duration.ms``), session timeout and heartbeat
are lowered to one second, so that a test can set a group's lock to a few seconds; the
defaults a group gets without its own configs stay Kafka's (30 s lock, 45 s session, 5
deliveries).

A stopped node can be started again on another release's jars, on its storage and ports, and
:meth:`KafkaCluster.finalize_upgrade` then raises the cluster's features: Kafka's rolling upgrade.

The JVMs die with the process that started them (Linux ``PR_SET_PDEATHSIG``, through
:mod:`~kafka_share_eos.proving_ground.launchers.process_tree`), even when it is killed with SIGKILL
and when a node was restarted from a thread that has ended since: a test run never leaves a broker
behind. ``stop()`` also runs at interpreter exit.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.broker.embedded import TopicSpec
from kafka_share_eos.proving_ground.errors import KafkaLauncherError
from kafka_share_eos.proving_ground.launchers.kafka_admin import (
    add_scram_user,
    allow_acl,
    create_topic,
)
from kafka_share_eos.proving_ground.launchers.kafka_dist import (
    feature_command,
    finalized_features,
    java_binary,
    kafka_jars,
    kafka_version,
    release_features,
)
from kafka_share_eos.proving_ground.launchers.kafka_jvm import (
    START_TIMEOUT_S,
    NodeJvm,
    wait_until_registered,
)
from kafka_share_eos.proving_ground.launchers.kafka_node import (
    LOG4J2_PROPERTIES,
    KafkaNode,
    cluster_defaults,
    listeners,
)
from kafka_share_eos.proving_ground.launchers.kafka_security import ADMIN, SaslSsl
from kafka_share_eos.proving_ground.launchers.lifecycle import Launcher
from kafka_share_eos.proving_ground.launchers.ports import free_ports
from kafka_share_eos.proving_ground.launchers.process_tree import STOP_GRACE_S, terminate
from kafka_share_eos.proving_ground.launchers.toxiproxy import CutMode, Proxy, Toxiproxy
from kafka_share_eos.proving_ground.signals import deferred_signals
from kafka_share_eos.sharegroup.group_config import ShareGroupSettings, alter_share_group

__all__ = ["START_TIMEOUT_S", "STOP_GRACE_S", "KafkaCluster"]


class KafkaCluster(Launcher):
    """Apache Kafka brokers on loopback for tests, benchmarks and the ``broker --kafka`` command.

    Use it as a context manager::

        with KafkaCluster(brokers=3, topics=["jobs:4"]) as kafka:
            kafka.set_group_config("jobs-eos", {"share.auto.offset.reset": "earliest"})
            consumer = ShareConsumer({"bootstrap.servers": kafka.bootstrap_servers, ...})

    Args:
        brokers: how many KRaft nodes (each a broker and a controller).
        topics: topics to create at start, as ``TopicSpec`` or ``"name[:partitions]"``.
        broker_config: broker properties that override the launcher's.
        version: the Apache Kafka release every node starts on (default :func:`kafka_version`);
            :meth:`restart_node` can start a node on another one, and :meth:`finalize_upgrade`
            makes it the cluster's.
        heap_mb: maximum heap of each broker JVM.
        security: a ``SASL_SSL`` listener with ACLs instead of a plaintext one
            (:class:`~kafka_share_eos.proving_ground.launchers.kafka_security.SaslSsl`);
            :meth:`client_config` then signs in as its admin, and :meth:`add_user` and :meth:`allow`
            make principals.
        proxy: give every node a second listener, reached and advertised through a proxy of
            its own on a :class:`~kafka_share_eos.proving_ground.launchers.toxiproxy.Toxiproxy`
            server the cluster starts (:attr:`toxiproxy`): clients that bootstrap from
            :attr:`proxied_bootstrap_servers` reach every broker only through the proxies,
            which :meth:`cut` and :meth:`heal` cut off and bring back, and which take any of
            Toxiproxy's toxics (``node(1).proxy``); the brokers' and controllers' own traffic
            stays direct. Plaintext clusters only.

    Raises:
        ConfigurationError: ``brokers`` is not a positive integer, a bad topic spec, or
            ``proxy`` with ``security``.
    """

    _label = "the Kafka cluster"
    _error = KafkaLauncherError

    def __init__(
        self,
        brokers: int = 1,
        *,
        topics: Iterable[TopicSpec | str] = (),
        broker_config: Mapping[str, str] | None = None,
        version: str | None = None,
        heap_mb: int = 512,
        security: SaslSsl | None = None,
        proxy: bool = False,
    ) -> None:
        if isinstance(brokers, bool) or not isinstance(brokers, int) or brokers < 1:
            raise ConfigurationError(f"brokers must be a positive integer, got {brokers!r}")
        self.brokers = brokers
        self.version = version or kafka_version()
        self._topics = [t if isinstance(t, TopicSpec) else TopicSpec.parse(t) for t in topics]
        self._config = {**cluster_defaults(brokers), **(broker_config or {})}
        self._heap_mb = heap_mb
        self.security = security
        if proxy and security is not None:
            raise ConfigurationError("proxy=True takes a plaintext cluster: pass no security=")
        self.proxy = proxy
        self.toxiproxy: Toxiproxy | None = None
        """With ``proxy=True``, the Toxiproxy server of the nodes' proxies while running."""
        self._work: Path | None = None
        self._admin: AdminClient | None = None
        self.nodes: list[KafkaNode] = []

    # -- life cycle ---------------------------------------------------------------------------

    def _start(self) -> None:
        """Fetch the jars if needed, format every node's storage, start the nodes, wait until
        every broker has registered, and create the initial topics.

        Raises:
            KafkaLauncherError: Java or Maven missing, a failed fetch, or a node that did not
                come up within :data:`START_TIMEOUT_S` (the message names its log).
        """
        # Java first: without it the jars' fetch fails with a message that does not name it.
        java = java_binary()
        jars = kafka_jars(self.version)
        self._until_ports_hold(lambda: self._launch(java, jars), "the Kafka nodes")
        for topic in self._topics:
            self.create_topic(topic.name, topic.partitions)

    def _launch(self, java: Path, jars: Path) -> bool:
        """Lay the nodes out on free ports and start them; whether every broker registered
        (False: a port was taken)."""
        if self.proxy:
            self.toxiproxy = Toxiproxy().start()
        with deferred_signals():
            self._work = Path(tempfile.mkdtemp(prefix="kse-kafka-"))
            self._layout()
        jvm = self._jvm(java)
        jvm.format_storage(self.nodes, jars,
                           self.security.format_arguments() if self.security else ())
        for node in self.nodes:
            jvm.start(node)
        return wait_until_registered(self.nodes, self.admin)

    def _stop(self) -> None:
        """Stop every node (SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`) and delete the
        cluster's directory."""
        # Dropped while the brokers still answer: a client whose brokers are gone logs every
        # failed reconnection until it is destroyed.
        self._admin = None
        nodes, self.nodes = self.nodes, []
        toxiproxy, self.toxiproxy = self.toxiproxy, None
        if toxiproxy is not None:
            toxiproxy.stop()
        terminate(node.process for node in nodes if node.process is not None)
        if self._work is not None:
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None

    # -- what clients need --------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """``host:port,...`` of every broker."""
        if not self.nodes:
            raise self._not_running()
        return ",".join(node.address for node in self.nodes)

    @property
    def proxied_bootstrap_servers(self) -> str:
        """``host:port,...`` of every node's proxy (``proxy=True``): a client bootstrapping
        here talks to the brokers only through the proxies."""
        return ",".join(self._proxy(node).address for node in self.nodes)

    def client_config(self, **overrides: Any) -> dict[str, Any]:
        """A confluent-kafka configuration dict pointing at this cluster (signed in as the
        admin on a secured cluster)."""
        signed_in = ({} if self.security is None
                     else self.user_config(ADMIN, self.security.admin_password))
        return {"bootstrap.servers": self.bootstrap_servers, **signed_in, **overrides}

    def user_config(self, user: str, password: str) -> dict[str, Any]:
        """A configuration signing in as ``user`` on a secured cluster."""
        if self.security is None or self._work is None:
            raise KafkaLauncherError("the cluster has no secured listener: pass security=")
        return {"bootstrap.servers": self.bootstrap_servers,
                **self.security.client_config(self._work, user, password)}

    def add_user(self, user: str, password: str) -> None:
        """Create a SCRAM-SHA-512 user on the secured cluster."""
        add_scram_user(self.admin(), user, password)

    def allow(self, user: str, resource: str, name: str, *operations: str) -> None:
        """Let ``user`` do ``operations`` (``"READ"``, ``"WRITE"``, ...) on the ``resource``
        (``"TOPIC"``, ``"GROUP"``, ...) named ``name``, by an ACL."""
        allow_acl(self.admin(), user, resource, name, operations)

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        *,
        replication_factor: int | None = None,
        config: Mapping[str, str] | None = None,
    ) -> None:
        """Create a topic and wait until every partition has a leader.

        Raises:
            ConfigurationError: a bad name or partition count.
            KafkaLauncherError: the brokers refused the topic.
        """
        spec = TopicSpec(name, partitions)
        create_topic(
            self.admin(), spec.name, spec.partitions,
            replication_factor or min(3, self.brokers), dict(config or {}),
        )

    def set_group_config(
        self, group: str, configs: Mapping[str, str | int]
    ) -> ShareGroupSettings:
        """Set share-group configs of ``group`` through the admin API and wait until the brokers
        apply them (see :func:`~kafka_share_eos.sharegroup.group_config.alter_share_group`)."""
        return alter_share_group(self.client_config(), group, configs, admin=self.admin())

    def admin(self) -> AdminClient:
        """The cluster's admin client (one per cluster, dropped at stop)."""
        if self._admin is None:
            self._admin = AdminClient(self.client_config())
        return self._admin

    # -- faults -------------------------------------------------------------------------------

    def node(self, node_id: int) -> KafkaNode:
        """The node with this id (1-based)."""
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise ConfigurationError(
            f"no Kafka node {node_id}: the nodes are {[node.node_id for node in self.nodes]}"
        )

    def kill_node(self, node_id: int, signum: int = signal.SIGKILL) -> None:
        """Send ``signum`` to a node's JVM and wait for it to exit."""
        node = self.node(node_id)
        if node.process is not None and node.running:
            node.process.send_signal(signum)
            node.process.wait()

    def restart_node(self, node_id: int, version: str | None = None) -> None:
        """Start a stopped node again on its ports and storage, and wait until it is back;
        with ``version``, on that release's jars (a step of a rolling upgrade: the cluster's
        features stay at their levels until :meth:`finalize_upgrade`)."""
        node = self.node(node_id)
        if node.running:
            return
        node.version = version or node.version
        self._jvm(java_binary()).start(node)
        if not wait_until_registered(self.nodes, self.admin):
            raise KafkaLauncherError(f"Kafka node {node_id}'s port was taken while it was down")

    def features(self) -> dict[str, str]:
        """The cluster's finalised feature levels (``metadata.version`` as ``4.3-IV0``)."""
        return finalized_features(self.nodes[0].version, self.bootstrap_servers)

    def finalize_upgrade(self) -> dict[str, str]:
        """End a rolling upgrade once every node runs the new release: raise the cluster's
        features (``metadata.version``, ``share.version``, ...) to the levels that release
        gives a new cluster, with its ``kafka-features.sh upgrade``, and return them.

        ``kraft.version`` stays where it is: raising it turns the static quorum of
        ``controller.quorum.voters`` into a dynamic one (KAFKA-21426), which is why this names
        each feature rather than passing ``--release-version``.

        Raises:
            KafkaLauncherError: the nodes run different releases, or the brokers refused.
        """
        versions = {node.version for node in self.nodes}
        if len(versions) != 1:
            raise KafkaLauncherError(
                f"the Kafka nodes run {sorted(versions)}: upgrade every one before finalising"
            )
        (version,) = versions
        levels = release_features(version, self.bootstrap_servers)
        levels.pop("kraft.version", None)
        feature_command(version, self.bootstrap_servers, "upgrade",
                        *(f"--feature={name}={level}" for name, level in levels.items()))
        self.version = version
        return self.features()

    def cut(self, mode: CutMode = "blackhole", node_ids: Iterable[int] | None = None) -> None:
        """Cut the proxied clients off from the nodes ``node_ids`` (default: every node), as
        :meth:`Proxy.cut <kafka_share_eos.proving_ground.launchers.toxiproxy.Proxy.cut>`
        does."""
        for node_id in node_ids if node_ids is not None else [n.node_id for n in self.nodes]:
            self._proxy(self.node(node_id)).cut(mode)

    def heal(self) -> None:
        """Let the proxied clients reach every node again."""
        for node in self.nodes:
            self._proxy(node).heal()

    def _proxy(self, node: KafkaNode) -> Proxy:
        if node.proxy is None:
            raise KafkaLauncherError("the cluster has no proxies: pass proxy=True")
        return node.proxy

    # -- internals ----------------------------------------------------------------------------

    def _layout(self) -> None:
        assert self._work is not None
        ports = free_ports(2 * self.brokers)
        self.nodes = [
            KafkaNode(i + 1, ports[2 * i], ports[2 * i + 1], self._work / f"node-{i + 1}",
                      self.version)
            for i in range(self.brokers)
        ]
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
        (self._work / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        listener = "PLAINTEXT" if self.security is None else "SASL_SSL"
        secured: dict[str, str] = {}
        if self.security is not None:
            self.security.write_certificates(self._work)
            secured = self.security.broker_properties(self._work)
        for node in self.nodes:
            node.directory.mkdir()
            properties = {
                **listeners(node, listener, self.toxiproxy),
                "process.roles": "broker,controller",
                "node.id": str(node.node_id),
                "controller.quorum.voters": voters,
                "controller.listener.names": "CONTROLLER",
                "inter.broker.listener.name": listener,
                "log.dirs": str(node.directory / "data"),
                **secured,
                **self._config,
            }
            (node.directory / "server.properties").write_text(
                "".join(f"{key}={value}\n" for key, value in properties.items())
            )

    def _jvm(self, java: Path) -> NodeJvm:
        assert self._work is not None
        return NodeJvm(java, self._heap_mb, self._work / "log4j2.properties")
