"""Bookkeeping of acknowledgements: what was sent, what the broker refused.

A refused acknowledgement (lock expired, share session lost, member fenced) is never fatal: the
broker redelivers such records with a higher delivery count and the strategies deduplicate them.
It is counted and logged so operators can see locks that are too short for their batches.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("kafka_share_eos.source")


@dataclass
class AckStats:
    """Counters of one consumer session."""

    accepted: int = 0
    released: int = 0
    rejected: int = 0
    """Records REJECTed because a strategy refused them (the broker's dead-letter queue)."""
    refused_locally: int = 0
    failed_records: int = 0
    failed_partitions: int = 0

    def on_commit_result(self, result: Mapping[Any, Any]) -> None:
        """Count the per-partition failures in a ``commit_sync`` result."""
        for partition, error in result.items():
            if error is not None:
                self.failed_partitions += 1
                log.warning(
                    "acknowledgements for %s[%s] were not committed: %s",
                    getattr(partition, "topic", partition),
                    getattr(partition, "partition", "?"),
                    error,
                )

    def on_commit_callback(self, offsets: Mapping[Any, Any], error: Any) -> None:
        """``set_acknowledgement_commit_callback`` target: count records the broker refused."""
        if error is None:
            return
        refused = sum(len(batch) for batch in offsets.values())
        self.failed_records += refused
        log.warning("the broker refused %d acknowledgements: %s", refused, error)

    def on_refused_locally(self, topic: str, partition: int, offset: int, error: Exception) -> None:
        """Count a record the client would not acknowledge (no longer in flight)."""
        self.refused_locally += 1
        log.warning("could not acknowledge %s[%d]@%d: %s", topic, partition, offset, error)
