"""Per-batch metrics of the source: what a batch polled, how it was acknowledged, its lock use.

A :class:`BatchTally` follows one batch from its first poll to its settlement; the finished
:class:`BatchMetrics` is one small JSON object (see :mod:`kafka_share_eos.source.metrics_store`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos import formats
from kafka_share_eos.source.acks import AckStats
from kafka_share_eos.source.options import AckPolicy


@dataclass(frozen=True)
class BatchMetrics:
    """One settled micro-batch.

    Attributes:
        seq: the batch's last journal sequence, which is Spark's end offset of the batch.
        first_seq: its first journal sequence (afterJournal batches span several segments).
        records: records polled into the batch.
        redelivered: records among them with ``deliveryCount > 1``.
        acknowledged: records the source sent ACCEPT for.
        ack_failures: acknowledgements refused, locally or by the broker (the records come back).
        ack_failed_partitions: partitions whose acknowledgement commit failed.
        lock_held_ms: longest time a record of the batch stayed acquired before its ACCEPT was
            committed (afterCommit: the whole batch; afterJournal: one poll's journal write).
        lock_budget_used: ``lock_held_ms / lockDurationMs``.
        ack_policy: the policy the batch was planned with.
        planned_at: when its first poll was journaled (ISO 8601, UTC).
        settled_at: when its acknowledgements were committed (ISO 8601, UTC).
        consumers: with ``consumers=N``, ``{"slot": s, "records": n, "member": m}`` per slot
            that reported, ``m`` naming the consumer that polled it; empty for a batch of the
            runner's single consumer.
    """

    seq: int
    first_seq: int
    records: int
    redelivered: int
    acknowledged: int
    ack_failures: int
    ack_failed_partitions: int
    lock_held_ms: float
    lock_budget_used: float
    ack_policy: str
    planned_at: str
    settled_at: str
    consumers: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> str:
        """One JSON object, with its format version."""
        return json.dumps({formats.FIELD: formats.BATCH_METRICS, **dataclasses.asdict(self)},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes, where: str) -> BatchMetrics:
        """Parse what :meth:`to_json` wrote (at ``where``); fields added later are ignored.

        Raises:
            UnsupportedFormatError: a later release wrote it, in a format this one cannot read.
        """
        raw: dict[str, Any] = json.loads(text)
        formats.check_format("batch metrics", raw.get(formats.FIELD), formats.BATCH_METRICS,
                             where)
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in names})


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

    def polled(self, seq: int, batch: pa.RecordBatch | pa.Table) -> None:
        """Count journal segment ``seq`` (or a part of it) holding ``batch``."""
        if self.first_seq is None:
            self.first_seq = seq
            self.planned_at = _now()
        self.seq = seq
        self.records += batch.num_rows
        again = pc.sum(pc.greater(batch.column("deliveryCount"), 1)).as_py()
        self.redelivered += int(again or 0)

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
        )
