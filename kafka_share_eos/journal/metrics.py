"""Per-batch metrics of the source: what a batch polled, how it was acknowledged, its lock use.

One :class:`BatchMetrics` is one small JSON object kept beside the journal
(:mod:`kafka_share_eos.journal.metrics_store`); the source counts it while the batch runs
(:class:`~kafka_share_eos.source.tally.BatchTally`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from kafka_share_eos import formats


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
        partitions: ``{"topic": t, "partition": p, "records": n, "last_offset": o}`` per
            partition the batch polled from, ``o`` the highest offset among its ``n`` records;
            empty in a file an earlier release wrote.
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
    partitions: list[dict[str, Any]] = field(default_factory=list)

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


def merged_partitions(*parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``partitions`` of several polls or slots of one batch as one list: records summed
    and the highest offset kept per partition, ordered by topic and partition."""
    merged: dict[tuple[str, int], dict[str, Any]] = {}
    for entries in parts:
        for entry in entries:
            key = (str(entry["topic"]), int(entry["partition"]))
            seen = merged.setdefault(key, {"topic": key[0], "partition": key[1], "records": 0,
                                           "last_offset": -1})
            seen["records"] += int(entry["records"])
            seen["last_offset"] = max(seen["last_offset"], int(entry["last_offset"]))
    return [merged[key] for key in sorted(merged)]
