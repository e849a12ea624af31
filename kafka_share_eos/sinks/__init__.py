"""Idempotent writers behind the strategies: SQL (PostgreSQL, SQLite) and Delta.

Importing this package loads neither SQLAlchemy nor deltalake; import
:mod:`kafka_share_eos.sinks.sql` or :mod:`kafka_share_eos.sinks.delta_upsert` for the writers.
"""

from __future__ import annotations

from kafka_share_eos.errors import (
    CommitConflictError,
    MissingColumnsError,
    SinkConfigurationError,
    TargetTableError,
)
from kafka_share_eos.sinks.dedup import contained, keep_latest
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

__all__ = [
    "ChecksRows",
    "ChecksRowsInTurn",
    "CommitConflictError",
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
    "keep_latest",
]
