"""What the stream reader asks of a planner, whichever plans its batches: the runner's own
consumer (:mod:`~kafka_share_eos.source.batch_planner`) or the slots of executor consumers
(:mod:`~kafka_share_eos.source.slot_planner`); and the input partition of a whole journal
segment, which both can plan."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import pyarrow as pa

from kafka_share_eos._extras import SPARK
from kafka_share_eos.journal import Journal
from kafka_share_eos.source.options import SourceOptions

with SPARK.needed_by("the kafka-share Spark source"):
    from pyspark.sql.datasource import InputPartition


class JournalPartition(Protocol):
    """An input partition whose rows come from the journal (written there first, if needed)."""

    def rows(self, options: SourceOptions, journal: Journal) -> pa.Table:
        """The partition's records, the same on every read."""
        ...


class SegmentPartition(InputPartition):
    """One journal segment, read by one Spark task."""

    def __init__(self, seq: int) -> None:
        super().__init__(seq)
        self.seq = seq

    def rows(self, options: SourceOptions, journal: Journal) -> pa.Table:
        """The segment as journaled."""
        return journal.read(self.seq)


class Planner(Protocol):
    """Plans the micro-batches of one query run, in Spark's source runner."""

    def latest(self, start: int, max_rows: int | None = None) -> int:
        """Plan the batch after ``start``; return its end, or ``start`` when there is none."""
        ...

    def partitions(self, start: int, end: int) -> Sequence[InputPartition]:
        """The input partitions of the batches in ``(start, end]``."""
        ...

    def drain(self) -> None:
        """Switch to ``availableNow`` draining."""
        ...

    def close(self) -> None:
        """Release what the run holds (RELEASE held records, leave the group)."""
        ...
