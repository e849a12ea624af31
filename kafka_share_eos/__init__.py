"""kafka-share-eos: exactly-once effects for PySpark pipelines on Kafka share groups.

The data flow is share group -> source/journal -> strategy -> sink. Everything a pipeline
touches is importable from here:

- :func:`register`, which makes ``spark.readStream.format("kafka-share")`` available, and
  :func:`journal_status`, what a source's journal holds;
- the ``foreachBatch`` strategies :class:`IdempotentUpsertSink`, :class:`CheckpointDedupStore`
  and :class:`TwoPhaseCommitCoordinator`, with :class:`RecordIdentity`, :class:`BatchReport`
  and :class:`DeadLetterPolicy`;
- two-phase commit's :class:`Participant` protocol (with the :class:`Transaction` it prepares
  and the :class:`Token` it hands back), the :class:`PostgresParticipant`,
  :class:`DeltaParticipant` and :class:`OutboxParticipant`, the decision logs
  (:class:`FileDecisionLog`, :class:`PostgresDecisionLog`) and the engine underneath the
  strategy, :class:`TransactionCoordinator`, with its :class:`CommitResult` and
  :class:`RecoveryReport`;
- :class:`DeltaAppendSink`, a sink for the checkpoint-dedup store, and :class:`RetentionPolicy`,
  which bounds its ledger;
- the dead-letter sinks (:class:`SqlDeadLetters`, :class:`DeltaDeadLetters`,
  :class:`KafkaDeadLetters`, the :class:`DeadLetterSink` protocol) and
  :func:`open_dead_letters`;
- :class:`KafkaShareEosError`, the base of every error the toolkit raises, and the errors a
  pipeline meets (docs/errors.md);
- :func:`postgres_array`, a batch's column as one PostgreSQL array parameter, for set-based
  two-phase effects;
- :class:`EmbeddedBroker`, a share-group-capable Kafka broker in this process.

Importing the package loads none of the optional dependencies (pyspark, deltalake, SQLAlchemy,
psycopg): the names below load their module on first access, and each backend loads its
library when it is first used. The modules they come from keep exporting them too.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from kafka_share_eos.errors import (
    AppIdConflictError,
    ClaimConflictError,
    CommitConflictError,
    ConfigurationError,
    DecisionOverruledError,
    DeliveryLimitReached,
    EmbeddedBrokerError,
    GroupConfigError,
    JournalError,
    KafkaLauncherError,
    KafkaShareEosError,
    LibrdkafkaNotFoundError,
    LocationNotFoundError,
    MissingColumnsError,
    MissingExtraError,
    NullIdentityError,
    PreparedTransactionsDisabledError,
    ShareGroupNotReadCommittedError,
    SinkConfigurationError,
    SourceOptionError,
    TargetTableError,
    TransformShapeError,
    TwoPhaseCommitError,
)
from kafka_share_eos.sharegroup import EmbeddedBroker, TopicSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_share_eos.deadletter import DEAD_LETTER_SCHEMA as DEAD_LETTER_SCHEMA
    from kafka_share_eos.deadletter import DeadLetterSink as DeadLetterSink
    from kafka_share_eos.deadletter import DeltaDeadLetters as DeltaDeadLetters
    from kafka_share_eos.deadletter import KafkaDeadLetters as KafkaDeadLetters
    from kafka_share_eos.deadletter import SqlDeadLetters as SqlDeadLetters
    from kafka_share_eos.deadletter import open_dead_letters as open_dead_letters
    from kafka_share_eos.ledger import DeltaAppendSink as DeltaAppendSink
    from kafka_share_eos.ledger import RetentionPolicy as RetentionPolicy
    from kafka_share_eos.sinks.sql_values import postgres_array as postgres_array
    from kafka_share_eos.source.status import journal_status as journal_status
    from kafka_share_eos.strategies import BatchReport as BatchReport
    from kafka_share_eos.strategies import CheckpointDedupStore as CheckpointDedupStore
    from kafka_share_eos.strategies import DeadLetterPolicy as DeadLetterPolicy
    from kafka_share_eos.strategies import IdempotentUpsertSink as IdempotentUpsertSink
    from kafka_share_eos.strategies import RecordIdentity as RecordIdentity
    from kafka_share_eos.strategies import TwoPhaseCommitCoordinator as TwoPhaseCommitCoordinator
    from kafka_share_eos.twophase import CommitResult as CommitResult
    from kafka_share_eos.twophase import DecisionLog as DecisionLog
    from kafka_share_eos.twophase import FileDecisionLog as FileDecisionLog
    from kafka_share_eos.twophase import Participant as Participant
    from kafka_share_eos.twophase import RecoveryReport as RecoveryReport
    from kafka_share_eos.twophase import Token as Token
    from kafka_share_eos.twophase import Transaction as Transaction
    from kafka_share_eos.twophase import TransactionCoordinator as TransactionCoordinator
    from kafka_share_eos.twophase.delta import DeltaParticipant as DeltaParticipant
    from kafka_share_eos.twophase.outbox import OutboxParticipant as OutboxParticipant
    from kafka_share_eos.twophase.postgres import PostgresParticipant as PostgresParticipant
    from kafka_share_eos.twophase.postgres_log import PostgresDecisionLog as PostgresDecisionLog

__version__ = "0.1.0"

# Loaded on first access, from the module that defines each name: the strategies cost
# pyarrow.compute and more, which a process that only runs the broker or the source does not
# need, and none of these modules loads an optional library before it is used.
_LAZY = {
    "BatchReport": "kafka_share_eos.strategies",
    "CheckpointDedupStore": "kafka_share_eos.strategies",
    "CommitResult": "kafka_share_eos.twophase",
    "DEAD_LETTER_SCHEMA": "kafka_share_eos.deadletter",
    "DeadLetterPolicy": "kafka_share_eos.strategies",
    "DeadLetterSink": "kafka_share_eos.deadletter",
    "DecisionLog": "kafka_share_eos.twophase",
    "DeltaAppendSink": "kafka_share_eos.ledger",
    "DeltaDeadLetters": "kafka_share_eos.deadletter",
    "DeltaParticipant": "kafka_share_eos.twophase.delta",
    "FileDecisionLog": "kafka_share_eos.twophase",
    "IdempotentUpsertSink": "kafka_share_eos.strategies",
    "KafkaDeadLetters": "kafka_share_eos.deadletter",
    "OutboxParticipant": "kafka_share_eos.twophase.outbox",
    "Participant": "kafka_share_eos.twophase",
    "PostgresDecisionLog": "kafka_share_eos.twophase.postgres_log",
    "PostgresParticipant": "kafka_share_eos.twophase.postgres",
    "RecordIdentity": "kafka_share_eos.strategies",
    "RecoveryReport": "kafka_share_eos.twophase",
    "RetentionPolicy": "kafka_share_eos.ledger",
    "SqlDeadLetters": "kafka_share_eos.deadletter",
    "Token": "kafka_share_eos.twophase",
    "TransactionCoordinator": "kafka_share_eos.twophase",
    "Transaction": "kafka_share_eos.twophase",
    "TwoPhaseCommitCoordinator": "kafka_share_eos.strategies",
    "journal_status": "kafka_share_eos.source.status",
    "open_dead_letters": "kafka_share_eos.deadletter",
    "postgres_array": "kafka_share_eos.sinks.sql_values",
}

__all__ = [
    "DEAD_LETTER_SCHEMA",
    "AppIdConflictError",
    "BatchReport",
    "CheckpointDedupStore",
    "ClaimConflictError",
    "CommitConflictError",
    "CommitResult",
    "ConfigurationError",
    "DeadLetterPolicy",
    "DeadLetterSink",
    "DecisionLog",
    "DecisionOverruledError",
    "DeliveryLimitReached",
    "DeltaAppendSink",
    "DeltaDeadLetters",
    "DeltaParticipant",
    "EmbeddedBroker",
    "EmbeddedBrokerError",
    "FileDecisionLog",
    "GroupConfigError",
    "IdempotentUpsertSink",
    "JournalError",
    "KafkaDeadLetters",
    "KafkaLauncherError",
    "KafkaShareEosError",
    "LibrdkafkaNotFoundError",
    "LocationNotFoundError",
    "MissingColumnsError",
    "MissingExtraError",
    "NullIdentityError",
    "OutboxParticipant",
    "Participant",
    "PostgresDecisionLog",
    "PostgresParticipant",
    "PreparedTransactionsDisabledError",
    "RecordIdentity",
    "RecoveryReport",
    "RetentionPolicy",
    "ShareGroupNotReadCommittedError",
    "SinkConfigurationError",
    "SourceOptionError",
    "SqlDeadLetters",
    "TargetTableError",
    "Token",
    "TopicSpec",
    "Transaction",
    "TransactionCoordinator",
    "TransformShapeError",
    "TwoPhaseCommitCoordinator",
    "TwoPhaseCommitError",
    "__version__",
    "journal_status",
    "open_dead_letters",
    "postgres_array",
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
