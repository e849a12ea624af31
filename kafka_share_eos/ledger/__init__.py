"""The identity ledger behind the checkpoint-dedup store: which records a sink already applied,
in a Delta table or in an Iceberg one (:class:`IcebergLedger`).

Importing this package loads no optional library; a ledger or sink loads deltalake (the
``delta`` extra) or pyiceberg (the ``iceberg`` extra) when it is built.
"""

from __future__ import annotations

from kafka_share_eos.ledger.compaction import CompactResult, compact
from kafka_share_eos.ledger.iceberg_ledger import IcebergLedger
from kafka_share_eos.ledger.identity_ledger import IdentityLedger
from kafka_share_eos.ledger.retention import PruneResult, RetentionPolicy, prune
from kafka_share_eos.ledger.rows import RECORD_IDENTITY
from kafka_share_eos.ledger.stats import LedgerStats, ledger_stats

__all__ = [
    "RECORD_IDENTITY",
    "CompactResult",
    "IcebergLedger",
    "IdentityLedger",
    "LedgerStats",
    "PruneResult",
    "RetentionPolicy",
    "compact",
    "ledger_stats",
    "prune",
]
