"""kafka-share-eos: exactly-once effects for PySpark pipelines on Kafka share groups.

The data flow is share group -> source/journal -> strategy -> sink. What a pipeline touches is
importable from here:

- :func:`register`, which makes ``spark.readStream.format("kafka-share")`` available;
- the ``foreachBatch`` strategies :class:`IdempotentUpsertSink`, :class:`CheckpointDedupStore`
  and :class:`TwoPhaseCommitCoordinator`, with :class:`RecordIdentity` and
  :class:`DeadLetterPolicy`;
- :class:`KafkaShareEosError`, the base of every error the toolkit raises, and
  :class:`MissingExtraError`, raised when a feature's optional dependency is not installed;
- :class:`EmbeddedBroker`, a share-group-capable Kafka broker in this process.

Importing the package loads none of the optional dependencies (pyspark, deltalake, SQLAlchemy,
psycopg): the strategies load on first access, and each backend loads its library when it is
first used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from kafka_share_eos.errors import KafkaShareEosError, MissingExtraError
from kafka_share_eos.sharegroup import EmbeddedBroker, TopicSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_share_eos.strategies import (
        CheckpointDedupStore as CheckpointDedupStore,
    )
    from kafka_share_eos.strategies import (
        DeadLetterPolicy as DeadLetterPolicy,
    )
    from kafka_share_eos.strategies import (
        IdempotentUpsertSink as IdempotentUpsertSink,
    )
    from kafka_share_eos.strategies import (
        RecordIdentity as RecordIdentity,
    )
    from kafka_share_eos.strategies import (
        TwoPhaseCommitCoordinator as TwoPhaseCommitCoordinator,
    )

__version__ = "0.1.0"

# Loaded on first access: importing the strategies costs pyarrow.compute and more, which a
# process that only runs the broker or the source does not need.
_LAZY = {
    "CheckpointDedupStore": "kafka_share_eos.strategies",
    "DeadLetterPolicy": "kafka_share_eos.strategies",
    "IdempotentUpsertSink": "kafka_share_eos.strategies",
    "RecordIdentity": "kafka_share_eos.strategies",
    "TwoPhaseCommitCoordinator": "kafka_share_eos.strategies",
}

__all__ = [
    "CheckpointDedupStore",
    "DeadLetterPolicy",
    "EmbeddedBroker",
    "IdempotentUpsertSink",
    "KafkaShareEosError",
    "MissingExtraError",
    "RecordIdentity",
    "TopicSpec",
    "TwoPhaseCommitCoordinator",
    "__version__",
    "register",
]


def register(spark: SparkSession) -> None:
    """Make ``spark.readStream.format("kafka-share")`` available in ``spark``.

    Raises:
        MissingExtraError: pyspark is not installed (``pip install 'kafka-share-eos[spark]'``).
    """
    # The source package imports pyspark: load it only when a pipeline registers it.
    from kafka_share_eos.source import register as register_source

    register_source(spark)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kafka_share_eos' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later accesses skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
