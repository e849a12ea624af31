"""with_delta_spark: the jars of the installed delta-spark, its SQL extension and catalog, and
the packages and extensions a builder already names kept."""

from __future__ import annotations

from importlib import metadata

import pytest

from kafka_share_eos import with_delta_spark

pytestmark = pytest.mark.delta_spark


def test_coordinates_match_delta_spark_s_own_helper() -> None:
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    ours = with_delta_spark(SparkSession.Builder())._options  # type: ignore[attr-defined]
    theirs = configure_spark_with_delta_pip(SparkSession.Builder())._options
    assert ours["spark.jars.packages"] == theirs["spark.jars.packages"]
    assert metadata.version("delta-spark") in ours["spark.jars.packages"]
    assert ours["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert ours["spark.sql.catalog.spark_catalog"] == (
        "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    )


def test_packages_and_extensions_given_before_are_kept() -> None:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.Builder()
        .config("spark.jars.packages", "org.example:thing_2.13:1.0")
        .config("spark.sql.extensions", "org.example.Extension")
    )
    options = with_delta_spark(builder, ["org.example:other_2.13:2.0"])._options
    packages = options["spark.jars.packages"].split(",")
    assert packages[0] == "org.example:thing_2.13:1.0"
    assert packages[-1] == "org.example:other_2.13:2.0"
    assert len(packages) == 3
    assert options["spark.sql.extensions"] == (
        "org.example.Extension,io.delta.sql.DeltaSparkSessionExtension"
    )
