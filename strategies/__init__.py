"""``foreachBatch`` strategies that turn redeliveries into exactly-once effects.

Every strategy is a callable ``strategy(batch_df, batch_id)`` with a Spark-free
``strategy.apply(arrow_table, batch_id)``, deduplicates on a :class:`RecordIdentity` and returns
a :class:`BatchReport` per batch.
"""

from __future__ import annotations

from kafka_share_eos.deadletter import DeadLetterPolicy
from kafka_share_eos.errors import (
    CommitConflictError,
    MissingColumnsError,
    SinkConfigurationError,
    TargetTableError,
)
from kafka_share_eos.strategies.base import BatchStrategy, StrategyOptions, as_arrow
from kafka_share_eos.strategies.checkpoint_dedup import CheckpointDedupStore
from kafka_share_eos.strategies.idempotent_upsert import IdempotentUpsertSink
from kafka_share_eos.strategies.identity import SOURCE_IDENTITY, RecordIdentity
from kafka_share_eos.strategies.kafka_topic import KafkaTopicSink
from kafka_share_eos.strategies.report import BatchReport, ReportTotals
from kafka_share_eos.strategies.two_phase_commit import TwoPhaseCommitCoordinator

__all__ = [
    "SOURCE_IDENTITY",
    "BatchReport",
    "BatchStrategy",
    "CheckpointDedupStore",
    "CommitConflictError",
    "DeadLetterPolicy",
    "IdempotentUpsertSink",
    "KafkaTopicSink",
    "MissingColumnsError",
    "RecordIdentity",
    "ReportTotals",
    "SinkConfigurationError",
    "StrategyOptions",
    "TargetTableError",
    "TwoPhaseCommitCoordinator",
    "as_arrow",
]
