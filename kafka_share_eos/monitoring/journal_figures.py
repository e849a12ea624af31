"""What a source's journal says, read incrementally at scrape time.

The source writes one metrics file per settled batch under ``<journalPath>/_metrics``, from
the source runner or, with ``consumers`` above 1, with the executors' slot figures inside; the
driver reads them here, so one endpoint covers every executor. Each scrape lists the
directory once and reads only the files it has not seen; the journal's segment listing gives
the segments still waiting for their acknowledgement.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

from kafka_share_eos.errors import LocationNotFoundError
from kafka_share_eos.journal import (
    DEFAULT_KEPT,
    RUNNER_MEMBER,
    BatchMetrics,
    Journal,
    MetricsStore,
)
from kafka_share_eos.monitoring.histogram import Histogram
from kafka_share_eos.storage import Location

log = logging.getLogger("kafka_share_eos.monitoring")


@dataclass
class SourceTotals:
    """Sums over the settled batches read so far, and figures of the latest one."""

    batches: int = 0
    records: int = 0
    redelivered: int = 0
    acknowledged: int = 0
    ack_failures: int = 0
    lock_held: Histogram = field(default_factory=Histogram)
    lock_budget_margin: float | None = None
    slot_records: dict[str, int] = field(default_factory=dict)
    members: int = 0
    slots: int = 0
    pending_segments: int = 0


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
        self.totals = SourceTotals()

    def refresh(self) -> None:
        """Read the metrics files written since the last refresh and count pending segments.

        A journal not created yet, or one that cannot be listed right now, leaves the figures
        as they were: metrics are not data, and the next scrape tries again.
        """
        try:
            store, journal = self._opened()
            for seq in store.sequences():
                if seq > self._last_seq:
                    self._add(store.read(seq))
            segments = {seq for seq, _ in journal.entries()}
        except (LocationNotFoundError, FileNotFoundError):
            return
        except OSError:
            log.warning("could not read the journal at %s", self._journal.location, exc_info=True)
            return
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
        totals.records += batch.records
        totals.redelivered += batch.redelivered
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
