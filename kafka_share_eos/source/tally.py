"""Counting one micro-batch while the source plans, journals and settles it.

A :class:`BatchTally` follows one batch from its first poll to its settlement and hands back
its :class:`~kafka_share_eos.journal.metrics.BatchMetrics`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos.journal.metrics import BatchMetrics, merged_partitions
from kafka_share_eos.source.acks import AckStats
from kafka_share_eos.source.options import AckPolicy


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


class BatchTally:
    """Counts of one batch while it is planned, journaled and settled.

    Args:
        policy: the acknowledgement policy the batch is planned with.
        stats: the session's acknowledgement counters; the batch's share is their change
            between now and :meth:`finish`.
    """

    def __init__(self, policy: AckPolicy, stats: AckStats) -> None:
        self.policy = policy
        self._before = dataclasses.replace(stats)
        self.first_seq: int | None = None
        self.seq = 0
        self.records = 0
        self.redelivered = 0
        self.held_ms = 0.0
        self.planned_at = ""
        self.partitions: list[dict[str, object]] = []

    def polled(self, seq: int, batch: pa.RecordBatch | pa.Table) -> None:
        """Count journal segment ``seq`` (or a part of it) holding ``batch``."""
        if self.first_seq is None:
            self.first_seq = seq
            self.planned_at = _now()
        self.seq = seq
        self.records += batch.num_rows
        again = pc.sum(pc.greater(batch.column("deliveryCount"), 1)).as_py()
        self.redelivered += int(again or 0)
        if batch.num_rows:
            self.partitions = merged_partitions(self.partitions, _per_partition(batch))

    def count_from(self, stats: AckStats) -> None:
        """Count the acknowledgements from ``stats`` on (a batch that begins inside a poll, whose
        earlier records belong to the batch before)."""
        self._before = dataclasses.replace(stats)

    def settled(self, held_ms: float) -> None:
        """Note that a poll's records were acknowledged ``held_ms`` after the poll returned."""
        self.held_ms = max(self.held_ms, held_ms)

    def finish(self, stats: AckStats, lock_budget_used: float) -> BatchMetrics:
        """The batch's metrics, once all its records are settled."""
        before = self._before
        return BatchMetrics(
            seq=self.seq,
            first_seq=self.seq if self.first_seq is None else self.first_seq,
            records=self.records,
            redelivered=self.redelivered,
            acknowledged=stats.accepted - before.accepted,
            ack_failures=stats.refused_locally - before.refused_locally
            + stats.failed_records - before.failed_records,
            ack_failed_partitions=stats.failed_partitions - before.failed_partitions,
            lock_held_ms=round(self.held_ms, 3),
            lock_budget_used=lock_budget_used,
            ack_policy=self.policy.value,
            planned_at=self.planned_at,
            settled_at=_now(),
            partitions=self.partitions,
        )


def _per_partition(batch: pa.RecordBatch | pa.Table) -> list[dict[str, object]]:
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    grouped = table.group_by(["topic", "partition"]).aggregate(
        [("offset", "count"), ("offset", "max")]).to_pylist()
    return [{"topic": row["topic"], "partition": row["partition"],
             "records": row["offset_count"], "last_offset": row["offset_max"]}
            for row in grouped]
