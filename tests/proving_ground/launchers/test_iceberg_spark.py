"""The Spark settings of the catalogs the toolkit's Iceberg writers take, and the runtime's
coordinates for the installed pyspark. The runtime reading real tables is tested in the
iceberg-spark tier (tests/end_to_end/test_iceberg_spark_reads.py)."""

from __future__ import annotations

import pyspark
import pytest

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.launchers.iceberg_spark import (
    JDBC_CATALOG,
    SPARK_CATALOG,
    runtime_artifact,
    spark_catalog_settings,
)


def test_a_rest_catalog_keeps_its_properties_under_its_spark_name() -> None:
    config = {"name": "lake", "type": "rest", "uri": "http://127.0.0.1:8181",
              "warehouse": "s3://bucket/wh"}

    assert spark_catalog_settings(config) == {
        "spark.sql.catalog.lake": SPARK_CATALOG,
        "spark.sql.catalog.lake.type": "rest",
        "spark.sql.catalog.lake.uri": "http://127.0.0.1:8181",
        "spark.sql.catalog.lake.warehouse": "s3://bucket/wh",
    }
    assert "spark.sql.catalog.other.uri" in spark_catalog_settings(config, "other")


def test_a_sqlite_sql_catalog_is_the_jdbc_catalog_on_the_same_file_and_name() -> None:
    config = {"name": "c1", "type": "sql", "uri": "sqlite:////tmp/x/catalog.db",
              "warehouse": "file:///tmp/x/warehouse"}

    assert spark_catalog_settings(config, "ignored") == {
        "spark.sql.catalog.c1": SPARK_CATALOG,
        "spark.sql.catalog.c1.catalog-impl": JDBC_CATALOG,
        "spark.sql.catalog.c1.uri": "jdbc:sqlite:/tmp/x/catalog.db",
        "spark.sql.catalog.c1.warehouse": "file:///tmp/x/warehouse",
    }


@pytest.mark.parametrize("config", [
    {"name": "c", "type": "sql", "uri": "postgresql+psycopg://u@h/db"},
    {"type": "sql", "uri": "sqlite:////tmp/catalog.db"},
    {"name": "c", "type": "glue"},
])
def test_catalogs_spark_cannot_share_are_refused(config: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError, match=r"SQLite|type 'glue'"):
        spark_catalog_settings(config)


def test_the_runtime_is_named_for_the_installed_spark_line() -> None:
    line = ".".join(pyspark.__version__.split(".")[:2])

    assert runtime_artifact("1.12.0") == (
        f"org.apache.iceberg:iceberg-spark-runtime-{line}_2.13:1.12.0")
