"""The ``kafka-share`` Spark streaming source.

``register(spark)`` makes ``spark.readStream.format("kafka-share")`` available. Every micro-batch
is written to a durable journal before Spark sees its offset, so replays return the same records.
Only the data source itself needs pyspark (the ``spark`` extra): options, the journal and its
status import without it, so ``kafka-share-eos status`` works on any machine that can read the
journal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_share_eos.errors import SourceOptionError
from kafka_share_eos.source.options import FORMAT, AckPolicy, LockBudgetAction, SourceOptions

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_share_eos.source.datasource import KafkaShareDataSource as KafkaShareDataSource

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
    """Register the ``kafka-share`` format with ``spark``, once its Python workers proved they
    import the toolkit (:mod:`~kafka_share_eos.source.worker_python`), with the settings that
    count its task slots (:mod:`~kafka_share_eos.spark_slots`)."""
    from kafka_share_eos.source.datasource import with_session_settings
    from kafka_share_eos.source.worker_python import require_toolkit_on_workers
    from kafka_share_eos.spark_slots import session_settings

    require_toolkit_on_workers(spark)
    spark.dataSource.register(with_session_settings(session_settings(spark)))


def __getattr__(name: str) -> Any:
    if name == "KafkaShareDataSource":
        from kafka_share_eos.source.datasource import KafkaShareDataSource

        return KafkaShareDataSource
    raise AttributeError(f"module 'kafka_share_eos.source' has no attribute {name!r}")
