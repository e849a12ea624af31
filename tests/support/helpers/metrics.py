"""Per-batch metrics entries as the source writes them."""

from __future__ import annotations

from kafka_share_eos.journal.metrics import BatchMetrics


def batch_metrics(seq: int) -> BatchMetrics:
    return BatchMetrics(
        seq=seq, first_seq=seq, records=10, redelivered=2, acknowledged=10, ack_failures=0,
        ack_failed_partitions=0, lock_held_ms=12.5, lock_budget_used=12.5 / 30_000,
        ack_policy="afterCommit", planned_at="2025-01-01T00:00:00+00:00",
        settled_at="2025-01-01T00:00:01+00:00",
    )
