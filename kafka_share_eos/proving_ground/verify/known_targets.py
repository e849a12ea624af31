"""Every target the verifier knows, by name, and those verified by default."""

from __future__ import annotations

from kafka_share_eos.proving_ground.verify.iceberg_targets import (
    DedupIceberg,
    IcebergUpsert,
    TwoPhaseIceberg,
)
from kafka_share_eos.proving_ground.verify.kafka_targets import DedupKafkaTopic, KafkaTopic
from kafka_share_eos.proving_ground.verify.table_targets import (
    DedupDelta,
    DeltaSparkUpsert,
    DeltaUpsert,
    PostgresUpsert,
    SqliteUpsert,
    TwoPhase,
    UnsafeIncrement,
)
from kafka_share_eos.proving_ground.verify.targets import Target

TARGETS: dict[str, type[Target]] = {
    t.name: t for t in (PostgresUpsert, SqliteUpsert, DeltaUpsert, DeltaSparkUpsert, TwoPhase,
                        DedupDelta, IcebergUpsert, DedupIceberg, TwoPhaseIceberg, KafkaTopic,
                        DedupKafkaTopic, UnsafeIncrement)
}
SAFE_TARGETS = tuple(
    name for name, target in TARGETS.items()
    if target.safe and not target.needs_transactions and not target.delta_spark
    and target.extra is None
)
"""The targets verified by default: the Kafka-topic ones need ``--broker kafka``, the
delta-spark one the delta-spark extra (docs/delta-spark.md) and the Iceberg ones the iceberg
extra (docs/iceberg.md), and are named."""
