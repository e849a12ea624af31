"""What a source's journal says, read incrementally at scrape time.

The source writes one metrics file per acknowledged batch under ``<journalPath>/_metrics``,
from the source runner or, with ``consumers`` above 1, with the executors' figures inside; the
driver reads them here, so one endpoint covers every executor. Each scrape lists the
directory once and reads only the files it has not seen; the journal's segment listing gives
the segments still waiting for their acknowledgement, whose records are counted at once
(:mod:`~kafka_share_eos.monitoring.unacknowledged`).
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

from kafka_share_eos.errors import KafkaShareEosError, LocationNotFoundError
from kafka_share_eos.journal import (
    DEFAULT_KEPT,
    RUNNER_MEMBER,
    BatchMetrics,
    Journal,
    MetricsStore,
)
from kafka_share_eos.monitoring.histogram import Histogram
from kafka_share_eos.monitoring.unacknowledged import Counted, Partition, UnacknowledgedSegments
from kafka_share_eos.storage import STORE_ERRORS, Location

log = logging.getLogger("kafka_share_eos.monitoring")
# A journal out of reach for a moment, or one the toolkit refuses to read, leaves the figures.
_UNREADABLE: tuple[type[Exception], ...] = (*STORE_ERRORS, KafkaShareEosError)


@dataclass
class SourceTotals:
    """Sums over the batches read so far, and figures of the latest one.

    ``records``, ``redelivered`` and ``last_offsets`` count a record once its segment is
    journaled (:mod:`unacknowledged`); the other figures once its batch is acknowledged.
    """

    batches: int = 0
    records: dict[Partition, int] = field(default_factory=dict)
    redelivered: int = 0
    last_offsets: dict[Partition, int] = field(default_factory=dict)
    acknowledged: int = 0
    ack_failures: int = 0
    lock_held: Histogram = field(default_factory=Histogram)
    lock_budget_margin: float | None = None
    slot_records: dict[str, int] = field(default_factory=dict)
    members: int = 0
    slots: int = 0
    pending_segments: int = 0

    def count(self, found: Counted) -> None:
        """Add the counts of records journaled."""
        for partition, records in found.records.items():
            self.records[partition] = self.records.get(partition, 0) + records
        self.redelivered += found.redelivered
        for partition, offset in found.last_offsets.items():
            self.last_offsets[partition] = max(offset, self.last_offsets.get(partition, -1))


UNKNOWN_PARTITION: Partition = ("", -1)
"""Where the records of a metrics file that names no partition (an earlier release's) go."""


class JournalFigures:
    """The figures of the journal at ``journal``, brought up to date by :meth:`refresh`.

    Args:
        journal: the stream's journal location, with its store settings.
    """

    def __init__(self, journal: Location) -> None:
        self._journal = Journal(journal)
        self._store: MetricsStore | None = None
        self._last_seq = -1
        # Sequence ranges of the batches seen, to tell settled segments from pending ones; the
        # store keeps as many files, and older segments are purged long before.
        self._settled: deque[tuple[int, int]] = deque(maxlen=DEFAULT_KEPT)
        self._early = UnacknowledgedSegments(self._journal)
        self.totals = SourceTotals()

    def refresh(self) -> None:
        """Read the metrics files written since the last refresh, count the records of the
        segments journaled since, and count pending segments.

        A journal not created yet, or one that cannot be listed right now, leaves the figures
        as they were: metrics are not data, and the next scrape tries again.
        """
        try:
            store, journal = self._opened()
            for seq in store.sequences():
                if seq > self._last_seq:
                    self._add(store.read(seq))
            entries = journal.entries()
            self.totals.count(self._early.count_new(entries, self._is_settled))
        except (LocationNotFoundError, FileNotFoundError):
            return
        except _UNREADABLE:
            log.warning("could not read the journal at %s", self._journal.location, exc_info=True)
            return
        segments = {seq for seq, _ in entries}
        self.totals.pending_segments = sum(1 for seq in segments if not self._is_settled(seq))

    def _opened(self) -> tuple[MetricsStore, Journal]:
        if self._store is None:
            # Never create the journal: the exporter may start before the query does.
            self._journal.where.open_existing()
            self._store = self._journal.metrics(create=False)
        return self._store, self._journal

    def _add(self, batch: BatchMetrics) -> None:
        totals = self.totals
        self._last_seq = batch.seq
        self._settled.append((batch.first_seq, batch.seq))
        totals.batches += 1
        totals.count(_not_counted_yet(batch, self._early.settle(batch.first_seq, batch.seq)))
        totals.acknowledged += batch.acknowledged
        totals.ack_failures += batch.ack_failures
        totals.lock_held.observe(batch.lock_held_ms / 1000)
        totals.lock_budget_margin = 1.0 - batch.lock_budget_used
        slots = batch.consumers or [{"slot": 0, "records": batch.records,
                                     "member": RUNNER_MEMBER}]
        for entry in slots:
            slot = str(entry["slot"])
            totals.slot_records[slot] = totals.slot_records.get(slot, 0) + int(entry["records"])
        totals.slots = len(slots)
        totals.members = len({str(entry.get("member", RUNNER_MEMBER)) for entry in slots})

    def _is_settled(self, seq: int) -> bool:
        return any(first <= seq <= last for first, last in self._settled)


def _not_counted_yet(batch: BatchMetrics, early: Counted) -> Counted:
    """The figures of ``batch`` less what was counted from its segments before."""
    rest = Counted(redelivered=max(0, batch.redelivered - early.redelivered))
    parts = batch.partitions or [{"topic": UNKNOWN_PARTITION[0],
                                  "partition": UNKNOWN_PARTITION[1],
                                  "records": batch.records - sum(early.records.values()),
                                  "last_offset": -1}]
    for entry in parts:
        partition = (str(entry["topic"]), int(entry["partition"]))
        rest.records[partition] = max(0, int(entry["records"]) - early.records[partition])
        if partition != UNKNOWN_PARTITION:
            rest.last_offsets[partition] = int(entry["last_offset"])
    return rest
