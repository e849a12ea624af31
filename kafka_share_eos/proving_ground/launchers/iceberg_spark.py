"""Iceberg's Spark runtime for the iceberg-spark tier: the jar with which Spark reads the
toolkit's Iceberg tables through the catalog pyiceberg wrote them to.

Maven Central publishes ``iceberg-spark-runtime-<spark line>_2.13`` (one shaded jar of 46 MB)
for Spark lines up to 4.1, so the tier runs pyspark 4.1 (the ``iceberg-spark`` extra). The
launcher names the line of the installed pyspark, and Maven copies the jar, with sqlite-jdbc for
Iceberg's JDBC catalog on the SQLite file of pyiceberg's SQL catalog, once into
``$XDG_CACHE_HOME/kafka-share-eos/iceberg-spark-<line>-<version>/libs``
(:mod:`~kafka_share_eos.proving_ground.launchers.cache`).

:func:`spark_catalog_settings` turns the configuration dict the toolkit's Iceberg writers take
(``catalog=``) into the Spark settings of the same catalog: a REST catalog as it is, pyiceberg's
SQL catalog on SQLite as Iceberg's ``JdbcCatalog`` on the same file, whose tables
(``iceberg_tables``, ``iceberg_namespace_properties``) pyiceberg lays out as Java's catalog does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers.cache import CachedProgram
from kafka_share_eos.proving_ground.launchers.maven import copy_dependencies
from kafka_share_eos.proving_ground.launchers.spark import jars_on_classpath

ICEBERG_SPARK_VERSION = "1.12.0"
"""The Apache Iceberg release whose Spark runtime the tier loads."""

ICEBERG_SPARK_VERSION_ENV = "KSE_ICEBERG_SPARK_VERSION"
"""Environment variable that picks another Iceberg release of the runtime."""

SCALA_VERSION = "2.13"
EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
"""Iceberg's SQL extensions (``MERGE INTO`` row-level plans, procedures)."""

SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
JDBC_CATALOG = "org.apache.iceberg.jdbc.JdbcCatalog"
# The version Iceberg's REST catalog server runs on (launchers/iceberg_rest.py).
_SQLITE_JDBC = "3.53.0.0"


def pyspark_line() -> str:
    """The Spark line of the installed pyspark (``"4.1"``), which names the runtime's artifact."""
    import pyspark

    return ".".join(pyspark.__version__.split(".")[:2])


def runtime_artifact(version: str | None = None) -> str:
    """The runtime's Maven coordinates for the installed pyspark (``group:artifact:version``)."""
    version = version or _program().version()
    return f"org.apache.iceberg:iceberg-spark-runtime-{pyspark_line()}_{SCALA_VERSION}:{version}"


def iceberg_spark_jars(version: str | None = None) -> list[Path]:
    """The runtime's jar and sqlite-jdbc's, fetched if missing.

    Raises:
        ObjectStoreServerError: Maven is missing, or the fetch failed: Maven Central has no
            runtime for the installed pyspark's Spark line (the message says why).
    """
    return sorted((_program().fetched(version, _fetch) / "libs").glob("*.jar"))


def _program() -> CachedProgram:
    return CachedProgram(f"iceberg-spark-{pyspark_line()}", ICEBERG_SPARK_VERSION,
                         ICEBERG_SPARK_VERSION_ENV)


def _fetch(version: str, target: Path) -> None:
    copy_dependencies([runtime_artifact(version), f"org.xerial:sqlite-jdbc:{_SQLITE_JDBC}"],
                      target / "libs", what=f"Iceberg's Spark runtime {runtime_artifact(version)}",
                      error=ObjectStoreServerError)


def iceberg_spark_config(version: str | None = None) -> dict[str, str]:
    """Settings of a session started with the runtime: its jars and Iceberg's SQL extensions.

    Raises:
        ObjectStoreServerError: the jars cannot be fetched.
    """
    return {**jars_on_classpath(iceberg_spark_jars(version)), "spark.sql.extensions": EXTENSIONS}


def spark_catalog_settings(config: Mapping[str, Any], name: str | None = None) -> dict[str, str]:
    """The Spark settings of the catalog whose pyiceberg configuration is ``config``, named
    ``name`` in Spark (default: its ``"name"``); a running session takes them with
    ``spark.conf.set`` before it first names the catalog.

    A JDBC catalog finds its tables by the catalog's name, so a SQL catalog keeps pyiceberg's.
    Every other property passes as it is: keys of a FileIO in ``config`` would land among
    Spark's settings, which its UI and event log show, so a reader takes them from its
    environment instead.

    Raises:
        ConfigurationError: a catalog type other than ``rest`` and ``sql``, or a SQL catalog on
            another database than SQLite.
    """
    properties = {key: str(value) for key, value in config.items() if key != "name"}
    kind = properties.pop("type", "rest")
    name = name or str(config.get("name", "rest" if kind == "rest" else "default"))
    if kind == "sql":
        match = re.fullmatch(r"sqlite:///(.+)", properties.get("uri", ""))
        if match is None or "name" not in config:
            raise ConfigurationError(
                "a SQL catalog reads in Spark on a SQLite file, and by its name: "
                f"{properties.get('uri')!r}")
        name = str(config["name"])
        properties |= {"catalog-impl": JDBC_CATALOG, "uri": f"jdbc:sqlite:{match[1]}"}
    elif kind == "rest":
        properties["type"] = "rest"
    else:
        raise ConfigurationError(f"no Spark settings for an Iceberg catalog of type {kind!r}")
    prefix = f"spark.sql.catalog.{name}"
    return {prefix: SPARK_CATALOG, **{f"{prefix}.{key}": value
                                      for key, value in properties.items()}}


def main() -> None:
    """``python -m kafka_share_eos.proving_ground.launchers.iceberg_spark``: fetch the jars now;
    silent when they are there."""
    from kafka_share_eos.proving_ground.launchers.local_server import prefetch

    prefetch(iceberg_spark_jars)


if __name__ == "__main__":
    main()
