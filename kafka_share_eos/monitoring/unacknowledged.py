"""Records counted as soon as they are journaled, before their batch is acknowledged.

The source writes a batch's metrics file when the batch's acknowledgements are committed: under
``acknowledge=afterCommit`` when Spark asks for the next micro-batch, one batch after the
records were polled. The journal's segments appear as soon as the records are polled, and the
journal holds only the one or two micro-batches not yet acknowledged, so a scrape reads the few
segments it has not read before (each once) and counts their records then. When the batch's
metrics file arrives, what was counted from its segments is taken off the file's figures, so
no record is counted twice.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos.journal import Journal, JournalError
from kafka_share_eos.journal.schema import JOURNAL_SCHEMA

log = logging.getLogger("kafka_share_eos.monitoring")
EMPTY = JOURNAL_SCHEMA.empty_table()

Partition = tuple[str, int]


@dataclass
class Counted:
    """Records per partition, the records delivered before among them, and the highest offset
    per partition, of one or more segments."""

    records: Counter[Partition] = field(default_factory=Counter)
    redelivered: int = 0
    last_offsets: dict[Partition, int] = field(default_factory=dict)

    def add(self, other: Counted) -> None:
        """Add ``other``'s counts to these."""
        self.records.update(other.records)
        self.redelivered += other.redelivered
        for partition, offset in other.last_offsets.items():
            self.last_offsets[partition] = max(offset, self.last_offsets.get(partition, -1))


def counted(table: pa.Table) -> Counted:
    """The counts of one segment's rows."""
    found = Counted()
    grouped = table.group_by(["topic", "partition"]).aggregate(
        [("offset", "count"), ("offset", "max")])
    for row in grouped.to_pylist():
        partition = (str(row["topic"]), int(row["partition"]))
        found.records[partition] = int(row["offset_count"])
        found.last_offsets[partition] = int(row["offset_max"])
    found.redelivered = int(pc.sum(pc.greater(table.column("deliveryCount"), 1)).as_py() or 0)
    return found


class UnacknowledgedSegments:
    """The segments of ``journal`` counted before their batch's metrics file was read."""

    def __init__(self, journal: Journal) -> None:
        self._journal = journal
        self._counted: dict[tuple[int, int | None], Counted] = {}

    def count_new(self, entries: list[tuple[int, int | None]],
                  settled: Callable[[int], bool]) -> Counted:
        """Read the segments among ``entries`` neither counted yet nor ``settled``, and return
        their counts (a consumer's segment still being written is left for a later call)."""
        new = Counted()
        for seq, slot in entries:
            if (seq, slot) in self._counted or settled(seq):
                continue
            try:
                table = self._journal.read_present(seq, slot)
            except JournalError:
                # A damaged file stops the query, which says so; the figures go on without it.
                log.warning("could not count the records of journal segment %s", seq,
                            exc_info=True)
                table = EMPTY
            if table is None:
                continue
            self._counted[(seq, slot)] = found = counted(table)
            new.add(found)
        return new

    def settle(self, first_seq: int, last_seq: int) -> Counted:
        """Forget the segments of the batch ``first_seq..last_seq``, whose metrics file is
        read now, and return what was counted from them."""
        taken = Counted()
        for key in [key for key in self._counted if first_seq <= key[0] <= last_seq]:
            taken.add(self._counted.pop(key))
        return taken
