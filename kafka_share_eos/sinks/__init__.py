"""Idempotent writers behind the strategies: SQL (PostgreSQL, SQLite), Delta and Kafka topics.

Importing this package loads neither SQLAlchemy nor deltalake (:class:`DeltaAppendSink` loads
deltalake when it is built); import :mod:`kafka_share_eos.sinks.sql` or
:mod:`kafka_share_eos.sinks.delta_upsert` for the upsert writers.
"""

from __future__ import annotations

from kafka_share_eos.errors import (
    CommitConflictError,
    MissingColumnsError,
    SinkConfigurationError,
    TargetTableError,
)
from kafka_share_eos.sinks.dedup import contained, keep_latest
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.sinks.outcome import (
    ChecksRows,
    ChecksRowsInTurn,
    FollowsStreamingQuery,
    KnowsApplied,
    RowChecker,
    SqlTarget,
    UpsertOutcome,
    UpsertWriter,
)
from kafka_share_eos.sinks.sql_engine import create_sql_engine, database_errors
from kafka_share_eos.sinks.sql_refusals import database_unavailable, error_chain, refused_row

__all__ = [
    "ChecksRows",
    "ChecksRowsInTurn",
    "CommitConflictError",
    "DeltaAppendSink",
    "FollowsStreamingQuery",
    "KnowsApplied",
    "MissingColumnsError",
    "RowChecker",
    "SinkConfigurationError",
    "SqlTarget",
    "TargetTableError",
    "UpsertOutcome",
    "UpsertWriter",
    "contained",
    "create_sql_engine",
    "database_errors",
    "database_unavailable",
    "error_chain",
    "keep_latest",
    "refused_row",
]
