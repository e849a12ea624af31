"""``kafka_share_eos.register``: the one call that makes the ``kafka-share`` format available."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register(spark: SparkSession) -> None:
    """Make ``spark.readStream.format("kafka-share")`` available in ``spark``.

    It runs one row through Spark's Python workers first, so that workers on an interpreter
    without the toolkit are named here rather than by the first micro-batch.

    Raises:
        MissingExtraError: pyspark is not installed (``pip install 'kafka-share-eos[spark]'``).
        ConfigurationError: Spark's Python workers cannot import the toolkit; the message
            names their interpreter and ``PYSPARK_PYTHON`` / ``spark.pyspark.python``.
    """
    # The source package imports pyspark: load it only when a pipeline registers it.
    from kafka_share_eos.source import register as register_source

    register_source(spark)
