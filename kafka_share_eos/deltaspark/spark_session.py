"""A Spark session builder set up for delta-spark, with the jars of the installed delta-spark.

delta-spark's Python package holds no jars: Spark fetches them from Maven Central through its
package resolution (``spark.jars.packages``, cached under ``~/.ivy2.5.2``) when the session's
JVM starts. The coordinates must match the installed Python package, as delta's own
``configure_spark_with_delta_pip`` makes them; the SQL extension and the catalog make
``format("delta")`` tables and ``DeltaTable`` work.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata

from kafka_share_eos._extras import DELTA_SPARK
from kafka_share_eos._libs import pyspark, spark_sql
from kafka_share_eos._names import names

SCALA_VERSION = "2.13"
EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
_PACKAGES = "spark.jars.packages"


def delta_spark_package() -> str:
    """The Maven coordinates of the delta-spark jar for the installed delta-spark and pyspark.

    From Delta 4.1 on, the artifact names the Spark line it was built for
    (``io.delta:delta-spark_4.2_2.13:4.4.0``); earlier ones only Scala's.

    Raises:
        MissingExtraError: delta-spark or pyspark is not installed.
    """
    DELTA_SPARK.require("with_delta_spark")
    delta = metadata.version("delta-spark")
    major, minor = (int(part) for part in delta.split(".")[:2])
    if (major, minor) < (4, 1):
        return f"io.delta:delta-spark_{SCALA_VERSION}:{delta}"
    spark_line = ".".join(pyspark.__version__.split(".")[:2])
    return f"io.delta:delta-spark_{spark_line}_{SCALA_VERSION}:{delta}"


def delta_spark_settings() -> dict[str, str]:
    """The settings that make a Spark run delta-spark: its jars, the Delta SQL extension and the
    Delta catalog; for a Spark Connect server's command line, say, where no builder is.

    Raises:
        MissingExtraError: delta-spark or pyspark is not installed (extra ``delta-spark``).
    """
    return {_PACKAGES: delta_spark_package(), "spark.sql.extensions": EXTENSION,
            "spark.sql.catalog.spark_catalog": CATALOG}


def with_delta_spark(
    builder: spark_sql.SparkSession.Builder, extra_packages: str | Sequence[str] = ()
) -> spark_sql.SparkSession.Builder:
    """``builder`` set up for delta-spark: its jars (with ``extra_packages`` and any packages
    the builder already names), the Delta SQL extension and the Delta catalog.

    Call it before ``getOrCreate()``: the jars load when the session's JVM starts, so a session
    already running in the process is not changed.

    Raises:
        MissingExtraError: delta-spark or pyspark is not installed (extra ``delta-spark``).
    """
    # The builder keeps its options in a private dict; packages and extensions set earlier are
    # kept, where delta's own helper would replace them.
    options: dict[str, str] = getattr(builder, "_options", {})

    def joined(key: str, *added: str) -> str:
        given = [item.strip() for item in options.get(key, "").split(",") if item.strip()]
        return ",".join(dict.fromkeys([*given, *added]))

    return (
        builder.config(_PACKAGES, joined(_PACKAGES, delta_spark_settings()[_PACKAGES],
                                         *names(extra_packages)))
        .config("spark.sql.extensions", joined("spark.sql.extensions", EXTENSION))
        .config("spark.sql.catalog.spark_catalog", CATALOG)
    )
