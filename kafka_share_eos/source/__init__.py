"""The ``kafka-share`` Spark streaming source.

``register(spark)`` makes ``spark.readStream.format("kafka-share")`` available. Every micro-batch
is written to a durable journal before Spark sees its offset, so replays return the same records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_share_eos.source.datasource import FORMAT, KafkaShareDataSource
from kafka_share_eos.source.options import (
    AckPolicy,
    LockBudgetAction,
    SourceOptionError,
    SourceOptions,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "FORMAT",
    "AckPolicy",
    "KafkaShareDataSource",
    "LockBudgetAction",
    "SourceOptionError",
    "SourceOptions",
    "register",
]


def register(spark: SparkSession) -> None:
    """Register the ``kafka-share`` format with ``spark``."""
    spark.dataSource.register(KafkaShareDataSource)
