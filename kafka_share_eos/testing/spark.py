"""A local Spark session suitable for tests: quiet, small, and using this interpreter."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def local_spark_session(app_name: str = "kafka-share-eos-tests", cores: int = 2) -> SparkSession:
    """Start (or reuse) a local-mode SparkSession whose Python workers run this interpreter.

    Workers must import the same environment as the driver, otherwise the ``kafka-share`` data
    source cannot be unpickled on executors.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.default.parallelism", str(cores))
        .config("spark.sql.streaming.metricsEnabled", "false")
        .config("spark.driver.extraJavaOptions", "-Dlog4j.rootLogger=ERROR,console")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark
