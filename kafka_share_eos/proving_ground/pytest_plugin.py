"""pytest fixtures backed by real components.

- ``embedded_broker``: one embedded share-group broker per test session.
- ``share_topic``: a fresh topic (and a share group name nobody used) per test.
- ``private_share_topic``: the same on a broker of its own, for tests whose share sessions must
  survive other tests' clients (the embedded broker drops every share session when any client
  disconnects).
- ``spark``: one local Spark session per test session.
- ``spark_connect_server``: one Spark Connect server (PySpark's own, on a free port) per test
  session; ``connect_spark``: a client session of its own on it per test, its queries stopped
  and this process's environment restored after the test.
- ``postgres_server``: a throwaway PostgreSQL server per test session (``KSE_TEST_POSTGRES_URL``
  points the fixtures at an existing server instead); ``postgres_url``: a fresh database per test.
- ``delta_path``: a fresh location for a Delta table.
- ``kafka_cluster``: one single-node Apache Kafka per test session (fetched once with Maven,
  see :mod:`~kafka_share_eos.proving_ground.launchers.kafka_cluster`); ``kafka_topic``: a fresh
  topic on it with a share group configured to start at the earliest offset and read committed
  records only (``@pytest.mark.record_lock_ms(n)``, ``@pytest.mark.delivery_limit(n)`` and
  ``@pytest.mark.session_timeout_ms(n)`` set the group's own lock, delivery limit and session
  timeout).
- ``--kafka-versions=all`` (or ``KSE_KAFKA_VERSIONS``, or releases by number, comma-separated):
  every test on ``kafka_cluster`` runs once per release, on a cluster of that release; the copies
  on releases other than the launcher's count as ``full``, and a test marked
  ``kafka_since("4.3")`` (or using ``delivery_limit(n)``, a group config of 4.3) gets none on
  older releases.
- ``s3_server``: one S3-compatible server (SeaweedFS, built once with Go) per test session;
  ``azurite_server``: one Azure Blob emulator (Azurite, fetched once with npm) per test session;
  ``gcs_server``: one Google Cloud Storage emulator (fake-gcs-server, built once with Go) per
  test session. Tests isolate themselves by key prefix.
- ``iceberg_rest_catalog``: Apache Iceberg's reference REST catalog server (fetched once with
  Maven) per test session, its warehouse on local disk; ``iceberg_rest_catalog_s3``: another
  with its warehouse on ``s3_server``; ``iceberg_rest_catalog_postgres``: another keeping its
  catalog in a database of ``postgres_server`` (JDBC). Each gives the configuration of a
  pyiceberg catalog on it (the S3 one with the FileIO properties that reach the store); tests
  isolate themselves by namespace.
- ``toxiproxy``: one Toxiproxy server (built once with Go) per test session, whose
  ``proxy(upstream)`` puts a TCP fault proxy in front of any server; tests delete their proxies.
- ``prometheus``: starts Prometheus (Debian's package, fetched once) scraping the endpoints a
  test gives it, with the rule files it gives, and stops it after the test.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kafka_share_eos.proving_ground.broker import EmbeddedBroker
from kafka_share_eos.proving_ground.launchers.kafka_dist import (
    KAFKA_VERSIONS,
    kafka_version,
    kafka_versions,
    release_key,
)
from kafka_share_eos.proving_ground.launchers.postgres import PostgresDatabases, postgres_for_tests

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_share_eos.proving_ground.launchers.azurite import AzuriteServer
    from kafka_share_eos.proving_ground.launchers.gcs_server import GcsServer
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster
    from kafka_share_eos.proving_ground.launchers.prometheus import PrometheusServer
    from kafka_share_eos.proving_ground.launchers.s3_server import S3Server
    from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer
    from kafka_share_eos.proving_ground.launchers.toxiproxy import Toxiproxy

_topic_counter = itertools.count()


@dataclass(frozen=True)
class ShareTopic:
    """A topic created for one test, with a share group name unique to that test."""

    bootstrap_servers: str
    topic: str
    partitions: int
    group_id: str


@pytest.fixture(scope="session")
def embedded_broker() -> Iterator[EmbeddedBroker]:
    """An embedded broker shared by the session; tests isolate themselves by topic and group."""
    with EmbeddedBroker() as broker:
        yield broker


@pytest.fixture
def share_topic(embedded_broker: EmbeddedBroker, request: pytest.FixtureRequest) -> ShareTopic:
    """A fresh topic (4 partitions, or ``@pytest.mark.partitions(n)``) and share group name."""
    return _new_topic(embedded_broker, _partitions(request))


def _partitions(request: pytest.FixtureRequest) -> int:
    marker = request.node.get_closest_marker("partitions")
    return int(marker.args[0]) if marker else 4


def _new_topic(broker: EmbeddedBroker | KafkaCluster, partitions: int) -> ShareTopic:
    name = f"t{next(_topic_counter)}-{uuid.uuid4().hex[:8]}"
    broker.create_topic(name, partitions)
    return ShareTopic(broker.bootstrap_servers, name, partitions, f"g-{name}")


@pytest.fixture
def private_share_topic(request: pytest.FixtureRequest) -> Iterator[ShareTopic]:
    """A fresh topic and share group name on a broker no other test talks to; its record lock
    lasts the mock's default, or ``@pytest.mark.record_lock_ms(n)``."""
    marker = request.node.get_closest_marker("record_lock_ms")
    with EmbeddedBroker(record_lock_duration_ms=int(marker.args[0]) if marker else None) as broker:
        yield _new_topic(broker, _partitions(request))


@pytest.fixture(scope="session")
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[KafkaCluster]:
    """A single-node Apache Kafka shared by the session; tests isolate themselves by topic and
    share group. Its proxied listener lets a test cut its own clients off (and heals at its
    end). It runs the launcher's release, or the matrix's (``--kafka-versions``)."""
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

    with KafkaCluster(proxy=True, version=getattr(request, "param", None)) as cluster:
        yield cluster


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kafka-versions", default=None, metavar="RELEASES",
        help="run every test on the kafka_cluster fixture on each of these Apache Kafka "
             "releases (comma-separated, or 'all' for the supported matrix; default: "
             "KSE_KAFKA_VERSIONS, else the launcher's release only); copies on releases other "
             "than the launcher's are marked `full`",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    versions = kafka_versions(metafunc.config.getoption("kafka_versions"))
    if "kafka_cluster" in metafunc.fixturenames and len(versions) > 1:
        # Session-scoped, so pytest orders the tests by release and starts each cluster once.
        metafunc.parametrize("kafka_cluster", versions, indirect=True, scope="session",
                             ids=[f"kafka-{version}" for version in versions])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Before `-m` selects: the other releases' copies are `full`, so CI keeps the launcher's.
    unsupported: set[pytest.Item] = set()
    for item in items:
        callspec = getattr(item, "callspec", None)
        version = callspec.params.get("kafka_cluster") if callspec is not None else None
        if version is None:
            continue
        if version != kafka_version():
            item.add_marker(pytest.mark.full)
        if release_key(version) < release_key(_kafka_since(item)):
            unsupported.add(item)
    if unsupported:
        config.hook.pytest_deselected(items=list(unsupported))
        items[:] = [item for item in items if item not in unsupported]


def _kafka_since(item: pytest.Item) -> str:
    """The oldest release with what the test needs of Kafka."""
    marker = item.get_closest_marker("kafka_since")
    if marker is not None:
        return str(marker.args[0])
    # The kafka_topic fixture sets the group's own delivery limit, a group config since 4.3.
    return "4.3" if item.get_closest_marker("delivery_limit") is not None else KAFKA_VERSIONS[0]


@pytest.fixture
def kafka_topic(kafka_cluster: KafkaCluster, request: pytest.FixtureRequest) -> ShareTopic:
    """A fresh topic (4 partitions, or ``@pytest.mark.partitions(n)``) on Apache Kafka and a
    share group name, configured to start at the earliest offset and read committed only."""
    from kafka_share_eos.sharegroup.group_config import (
        AUTO_OFFSET_RESET,
        DELIVERY_COUNT_LIMIT,
        HEARTBEAT_INTERVAL,
        ISOLATION_LEVEL,
        LOCK_DURATION,
        SESSION_TIMEOUT,
    )

    topic = _new_topic(kafka_cluster, _partitions(request))
    configs: dict[str, str | int] = {AUTO_OFFSET_RESET: "earliest",
                                     ISOLATION_LEVEL: "read_committed"}
    for marker, key in (("record_lock_ms", LOCK_DURATION),
                        ("delivery_limit", DELIVERY_COUNT_LIMIT),
                        ("session_timeout_ms", SESSION_TIMEOUT)):
        found = request.node.get_closest_marker(marker)
        if found is not None:
            configs[key] = int(found.args[0])
    if SESSION_TIMEOUT in configs:
        configs[HEARTBEAT_INTERVAL] = max(500, int(configs[SESSION_TIMEOUT]) // 3)
    kafka_cluster.set_group_config(topic.group_id, configs)
    return topic


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """An S3-compatible server with one bucket, shared by the session; tests isolate themselves
    by key prefix."""
    from kafka_share_eos.proving_ground.launchers.s3_server import S3Server

    with S3Server() as server:
        yield server


@pytest.fixture(scope="session")
def toxiproxy() -> Iterator[Toxiproxy]:
    """A Toxiproxy server shared by the session: ``toxiproxy.proxy("127.0.0.1:<port>")`` puts
    a fault proxy in front of a server; a test deletes its proxies."""
    from kafka_share_eos.proving_ground.launchers.toxiproxy import Toxiproxy

    with Toxiproxy() as server:
        yield server


@pytest.fixture(scope="session")
def azurite_server() -> Iterator[AzuriteServer]:
    """Azurite with one container, shared by the session; tests isolate themselves by key
    prefix."""
    from kafka_share_eos.proving_ground.launchers.azurite import AzuriteServer

    with AzuriteServer() as server:
        yield server


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[GcsServer]:
    """fake-gcs-server with one bucket, shared by the session; tests isolate themselves by key
    prefix."""
    from kafka_share_eos.proving_ground.launchers.gcs_server import GcsServer

    with GcsServer() as server:
        yield server


@pytest.fixture(scope="session")
def iceberg_rest_catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The configuration of a pyiceberg REST catalog on Iceberg's reference server, shared by
    the session, with its warehouse in a local directory."""
    from kafka_share_eos.proving_ground.launchers.iceberg_rest import IcebergRestCatalog

    with IcebergRestCatalog(tmp_path_factory.mktemp("iceberg-rest-warehouse")) as server:
        yield server.catalog_config()


@pytest.fixture(scope="session")
def iceberg_rest_catalog_s3(s3_server: S3Server) -> Iterator[dict[str, str]]:
    """The configuration of a pyiceberg REST catalog on Iceberg's reference server, shared by
    the session, with its warehouse on the session's S3 server: the keys reach the server
    through its environment and the client through this configuration, never a file."""
    from kafka_share_eos.proving_ground.launchers.iceberg_rest import (
        IcebergRestCatalog,
        s3_file_io,
    )

    environment = s3_server.environment()
    warehouse = s3_server.url(f"iceberg-rest-{uuid.uuid4().hex[:8]}")
    with IcebergRestCatalog(warehouse, s3_environment=environment) as server:
        yield server.catalog_config() | s3_file_io(environment)


@pytest.fixture(scope="session")
def iceberg_rest_catalog_postgres(
    postgres_server: PostgresDatabases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """The configuration of a pyiceberg REST catalog on Iceberg's reference server, shared by
    the session, keeping its catalog in a database of the session's PostgreSQL through JDBC and
    its warehouse in a local directory."""
    from kafka_share_eos.proving_ground.launchers.iceberg_rest import IcebergRestCatalog

    name = f"kse_rest_{uuid.uuid4().hex[:12]}"
    with IcebergRestCatalog(tmp_path_factory.mktemp("iceberg-rest-postgres-warehouse"),
                            database=postgres_server.create_database(name)) as server:
        yield server.catalog_config()
    postgres_server.drop_database(name)


@pytest.fixture
def prometheus() -> Iterator[Callable[..., PrometheusServer]]:
    """``prometheus(targets, rule_files=())`` starts a Prometheus scraping ``targets``
    (``host:port`` each) every second; every server started is stopped after the test."""
    from kafka_share_eos.proving_ground.launchers.prometheus import PrometheusServer

    started: list[PrometheusServer] = []

    def start(targets: Sequence[str], rule_files: Sequence[Path] = ()) -> PrometheusServer:
        server = PrometheusServer(targets, rule_files)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """A local Spark session for the whole test session."""
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session

    session = local_spark_session()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_connect_server() -> Iterator[SparkConnectServer]:
    """A Spark Connect server for the whole test session."""
    from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer

    with SparkConnectServer() as server:
        yield server


@pytest.fixture
def connect_spark(
    spark_connect_server: SparkConnectServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[SparkSession]:
    """A client session of its own on the session's Spark Connect server (a module may
    override ``spark_connect_server`` with a server set up for its tests)."""
    # The client marks this process as Connect's in its environment, which would turn a
    # classic session's functions into Connect's for the tests that follow: monkeypatch puts
    # the environment back after the test.
    for name in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE"):
        # Set first, so that monkeypatch records an absent variable and deletes it again.
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    session = spark_connect_server.session()
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresDatabases]:
    """A PostgreSQL server for the session (``KSE_TEST_POSTGRES_URL`` to use an existing one)."""
    with postgres_for_tests() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresDatabases) -> Iterator[str]:
    """SQLAlchemy URL of a fresh database, dropped after the test."""
    name = f"kse_{uuid.uuid4().hex[:16]}"
    yield postgres_server.create_database(name)
    postgres_server.drop_database(name)


@pytest.fixture
def delta_path(tmp_path: Path) -> str:
    """A path where a test may create a Delta table."""
    return str(tmp_path / "delta-table")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "partitions(n): partition count of the share_topic fixture")
    config.addinivalue_line(
        "markers", "record_lock_ms(n): record lock duration of the private_share_topic's "
        "broker, or of the kafka_topic's share group"
    )
    config.addinivalue_line(
        "markers", "delivery_limit(n): share.delivery.count.limit of the kafka_topic's group"
    )
    config.addinivalue_line(
        "markers", "session_timeout_ms(n): share.session.timeout.ms of the kafka_topic's group"
    )
    config.addinivalue_line("markers", "kafka: starts Apache Kafka (the kafka_cluster fixture)")
    config.addinivalue_line(
        "markers", "kafka_since(release): needs Apache Kafka `release` or newer; the version "
        "matrix (--kafka-versions) runs it on those releases only"
    )
