"""Every target the verifier knows, by name, and those verified by default."""

from __future__ import annotations

from kafka_share_eos.verify.kafka_targets import DedupKafkaTopic, KafkaTopic
from kafka_share_eos.verify.targets import (
    DedupDelta,
    DeltaUpsert,
    PostgresUpsert,
    SqliteUpsert,
    Target,
    TwoPhase,
    UnsafeIncrement,
)

TARGETS: dict[str, type[Target]] = {
    t.name: t for t in (PostgresUpsert, SqliteUpsert, DeltaUpsert, TwoPhase, DedupDelta,
                        KafkaTopic, DedupKafkaTopic, UnsafeIncrement)
}
SAFE_TARGETS = tuple(
    name for name, target in TARGETS.items() if target.safe and not target.needs_transactions
)
"""The targets verified by default: the Kafka-topic ones need ``--broker kafka`` and are named."""
