"""Apache Iceberg's reference REST catalog server on a free port, for tests.

Iceberg's own ``RESTCatalogServer`` (the server of its REST compatibility kit and of its
``iceberg-rest-fixture`` image) serves a JDBC catalog over the REST protocol. Maven Central has it
only in ``iceberg-open-api``'s ``test-fixtures`` jar, whose POM declares no dependencies: the
launcher names the classpath Iceberg's build gives it (iceberg-core and its ``tests`` jar, Jetty,
sqlite-jdbc, Hadoop's client, iceberg-aws with the AWS SDK's S3 client, slf4j), at the versions of
that Iceberg release's build, and Maven copies it once into
``$XDG_CACHE_HOME/kafka-share-eos/iceberg-rest-<version>/libs``
(:mod:`~kafka_share_eos.proving_ground.launchers.cache`).

The server keeps its catalog in a SQLite file of a temporary directory removed at stop, or, given
a PostgreSQL database, in that database through PostgreSQL's JDBC driver (fetched with Maven into
a cache of its own, ``postgresql-jdbc-<version>``), and its tables under the warehouse it is
given: a local directory, or ``s3://`` through Iceberg's ``S3FileIO``. It is configured through
``CATALOG_*`` environment variables, which it logs; the S3 keys therefore reach it as ``AWS_*``
variables, which the AWS SDK reads and nothing logs, so no credential lands in its log or in any
file, and a database is one it reaches without a password. It listens on every interface (the
reference server takes no host); clients reach it on 127.0.0.1.

Version pinned: :data:`ICEBERG_VERSION` (1.11's server is built on Jetty 12.1; 1.10's on Jetty 11
and another servlet package, so another release needs its own classpath).
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from kafka_share_eos.proving_ground.errors import KafkaLauncherError, ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers import local_server
from kafka_share_eos.proving_ground.launchers.cache import CachedProgram
from kafka_share_eos.proving_ground.launchers.kafka_dist import java_binary
from kafka_share_eos.proving_ground.launchers.local_server import LocalServer
from kafka_share_eos.proving_ground.launchers.maven import copy_dependencies

ICEBERG_VERSION = "1.11.0"
"""The Apache Iceberg release whose REST catalog server the launcher runs."""

ICEBERG_VERSION_ENV = "KSE_ICEBERG_REST_VERSION"
"""Environment variable that picks another 1.11 release of the server."""

# The versions Iceberg 1.11.0's build (gradle/libs.versions.toml) gives the server.
_JETTY = "12.1.8"
_SQLITE_JDBC = "3.53.0.0"
_AWS_SDK = "2.44.4"
# S3FileIO reaches S3 through the SDK's Apache HTTP client, and loads KMS's and STS's types with it.
_AWS_MODULES = ("s3", "kms", "sts", "apache-client")
_HADOOP = "3.4.3"
_SLF4J = "2.0.17"
_MAIN = "org.apache.iceberg.rest.RESTCatalogServer"
START_TIMEOUT_S = 120.0

_REST = CachedProgram("iceberg-rest", ICEBERG_VERSION, ICEBERG_VERSION_ENV)

POSTGRES_JDBC_VERSION = "42.7.8"
"""The PostgreSQL JDBC driver the server reaches a PostgreSQL catalog database with."""

_POSTGRES_JDBC = CachedProgram("postgresql-jdbc", POSTGRES_JDBC_VERSION,
                               "KSE_POSTGRES_JDBC_VERSION")


def rest_catalog_jars(version: str | None = None) -> Path:
    """The directory of every jar the REST catalog server of ``version`` needs, fetched if
    missing.

    Raises:
        ObjectStoreServerError: Maven is missing or the fetch failed (the message says why).
    """
    return _REST.fetched(version, _fetch) / "libs"


def postgres_jdbc_jars(version: str | None = None) -> Path:
    """The directory of PostgreSQL's JDBC driver of ``version``, fetched if missing.

    Raises:
        ObjectStoreServerError: Maven is missing or the fetch failed (the message says why).
    """
    return _POSTGRES_JDBC.fetched(version, _fetch_postgres_jdbc) / "libs"


def _fetch_postgres_jdbc(version: str, target: Path) -> None:
    copy_dependencies([f"org.postgresql:postgresql:{version}"], target / "libs",
                      what=f"PostgreSQL's JDBC driver {version}", error=ObjectStoreServerError)


def jdbc_catalog(database: str) -> dict[str, str]:
    """The server's ``CATALOG_*`` settings for a catalog in the PostgreSQL ``database``
    (``postgresql://user@host:port/name``, SQLAlchemy's ``postgresql+psycopg://`` too).

    Raises:
        ObjectStoreServerError: the URL is not PostgreSQL's, or holds a password, which the
            server would write to its log with every catalog setting.
    """
    url = urlsplit(database)
    if url.scheme.partition("+")[0] not in {"postgresql", "postgres"} or not url.hostname:
        raise ObjectStoreServerError(
            f"the REST catalog server's database must be a postgresql:// URL with a host, got "
            f"scheme {url.scheme!r}"
        )
    if url.password is not None:
        raise ObjectStoreServerError(
            "the REST catalog server logs every catalog setting, a password included: give it "
            "a database it reaches without one (trust or peer authentication)"
        )
    port = f":{url.port}" if url.port else ""
    settings = {"CATALOG_URI": f"jdbc:postgresql://{url.hostname}{port}{url.path}"}
    if url.username:
        settings["CATALOG_JDBC_USER"] = url.username
    return settings


def _fetch(version: str, target: Path) -> None:
    iceberg = "org.apache.iceberg"
    copy_dependencies(
        [f"{iceberg}:iceberg-open-api:{version}:test-fixtures",
         f"{iceberg}:iceberg-core:{version}", f"{iceberg}:iceberg-core:{version}:tests",
         f"{iceberg}:iceberg-aws:{version}",
         *(f"software.amazon.awssdk:{module}:{_AWS_SDK}" for module in _AWS_MODULES),
         f"org.eclipse.jetty:jetty-server:{_JETTY}",
         f"org.eclipse.jetty.ee10:jetty-ee10-servlet:{_JETTY}",
         f"org.eclipse.jetty.compression:jetty-compression-server:{_JETTY}",
         f"org.eclipse.jetty.compression:jetty-compression-gzip:{_JETTY}",
         f"org.xerial:sqlite-jdbc:{_SQLITE_JDBC}",
         f"org.apache.hadoop:hadoop-client-api:{_HADOOP}",
         f"org.apache.hadoop:hadoop-client-runtime:{_HADOOP}",
         f"org.slf4j:slf4j-simple:{_SLF4J}"],
        target / "libs", what=f"Apache Iceberg's REST catalog server {version}",
        error=ObjectStoreServerError,
    )


def s3_file_io(environment: Mapping[str, str]) -> dict[str, str]:
    """pyiceberg FileIO properties that reach the S3 store ``environment`` names
    (:meth:`S3Server.environment
    <kafka_share_eos.proving_ground.launchers.s3_server.S3Server.environment>`): its endpoint,
    keys and region, for pyarrow's S3 client (path-style requests, pyiceberg's default)."""
    return {"s3.endpoint": environment["AWS_ENDPOINT_URL"],
            "s3.access-key-id": environment["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": environment["AWS_SECRET_ACCESS_KEY"],
            "s3.region": environment.get("AWS_REGION", "us-east-1")}


def azure_file_io(storage_options: Mapping[str, str]) -> dict[str, str]:
    """pyiceberg FileIO properties that reach the Azure Blob account ``storage_options`` name
    (:meth:`AzuriteServer.storage_options
    <kafka_share_eos.proving_ground.launchers.azurite.AzuriteServer.storage_options>`), through
    pyarrow's Azure client. pyiceberg would pick its fsspec FileIO (adlfs) for ``abfs://``
    first, so the pyarrow one is named; it takes locations as ``abfs://<container>/<path>``."""
    endpoint = urlsplit(storage_options["azure_storage_endpoint"])
    return {"py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO",
            "adls.account-name": storage_options["azure_storage_account_name"],
            "adls.account-key": storage_options["azure_storage_account_key"],
            "adls.blob-storage-authority": endpoint.netloc,
            "adls.dfs-storage-authority": endpoint.netloc,
            "adls.blob-storage-scheme": endpoint.scheme,
            "adls.dfs-storage-scheme": endpoint.scheme}


class IcebergRestCatalog(LocalServer):
    """Iceberg's reference REST catalog server on a free port: a context manager (``with
    IcebergRestCatalog(warehouse) as rest:``) whose :meth:`catalog_config` is what pyiceberg's
    ``load_catalog`` takes.

    Args:
        warehouse: where the server puts tables: a local directory, or an ``s3://`` URL.
        s3_environment: for an ``s3://`` warehouse, the S3 store's environment
            (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
            ``AWS_REGION``, as :meth:`S3Server.environment
            <kafka_share_eos.proving_ground.launchers.s3_server.S3Server.environment>` gives it).
        database: a PostgreSQL database for the catalog's tables (see :func:`jdbc_catalog`);
            a SQLite file of the server's temporary directory by default.
        version: the Iceberg release (default :data:`ICEBERG_VERSION` or
            ``KSE_ICEBERG_REST_VERSION``).
    """

    def __init__(self, warehouse: str | Path, *, s3_environment: Mapping[str, str] | None = None,
                 database: str | None = None, version: str | None = None) -> None:
        super().__init__("Iceberg-REST", _REST, version, ports=1, client_port=0,
                         port_taken=("Address already in use",),
                         start_timeout_s=START_TIMEOUT_S, awaited="answer /v1/config")
        self.warehouse = warehouse.as_uri() if isinstance(warehouse, Path) else warehouse
        self._s3 = dict(s3_environment or {})
        self._database = None if database is None else jdbc_catalog(database)

    @property
    def uri(self) -> str:
        """The server's base URI, ``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._running_port()}"

    def catalog_config(self, name: str = "rest") -> dict[str, str]:
        """The configuration of a pyiceberg REST catalog on this server (``"name"`` included,
        as ``IdempotentUpsertSink.iceberg``'s ``catalog=`` takes it). The client reaches an
        ``s3://`` warehouse with FileIO properties of its own: add them (``s3.endpoint`` and
        the keys) to the dict, or give them to the client's environment."""
        return {"name": name, "type": "rest", "uri": self.uri}

    # -- internals ----------------------------------------------------------------------------

    def _program(self) -> list[str]:
        try:
            java = java_binary()
        except KafkaLauncherError as error:
            raise ObjectStoreServerError(str(error).replace("Apache Kafka", "Iceberg")) from None
        classpath = f"{rest_catalog_jars(self.version)}/*"
        if self._database is not None:
            classpath += f"{os.pathsep}{postgres_jdbc_jars()}/*"
        return [str(java), "-cp", classpath, _MAIN]

    def _command(self, program: list[str], work: Path, ports: list[int]
                 ) -> tuple[list[str], dict[str, str]]:
        environment = {name: value for name, value in os.environ.items()
                       if not name.startswith(("CATALOG_", "AWS_"))}
        environment |= {
            "CATALOG_REST_PORT": str(ports[0]),
            "CATALOG_URI": f"jdbc:sqlite:{work / 'catalog.db'}",
            "CATALOG_WAREHOUSE": self.warehouse,
            # S3FileIO for s3:// locations, Hadoop's local file system for the others.
            "CATALOG_IO__IMPL": "org.apache.iceberg.io.ResolvingFileIO",
        }
        environment |= self._database or {}
        if self._s3:
            environment |= {
                "CATALOG_S3_ENDPOINT": self._s3["AWS_ENDPOINT_URL"],
                "CATALOG_S3_PATH__STYLE__ACCESS": "true",
                "CATALOG_CLIENT_REGION": self._s3.get("AWS_REGION", "us-east-1"),
                # Read by the AWS SDK's default credentials chain, never by the server's log.
                "AWS_ACCESS_KEY_ID": self._s3["AWS_ACCESS_KEY_ID"],
                "AWS_SECRET_ACCESS_KEY": self._s3["AWS_SECRET_ACCESS_KEY"],
            }
        return [program[0], f"-Djava.io.tmpdir={work}", *program[1:]], environment

    def _ready(self, port: int) -> bool:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/config", timeout=2).close()
        except (urllib.error.URLError, OSError):
            return False
        return True


def main() -> None:
    """``python -m kafka_share_eos.proving_ground.launchers.iceberg_rest``: fetch the server's
    jars and PostgreSQL's JDBC driver now; silent when they are there."""
    local_server.prefetch(rest_catalog_jars)
    local_server.prefetch(postgres_jdbc_jars)


if __name__ == "__main__":
    main()
