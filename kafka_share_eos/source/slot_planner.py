"""Planning micro-batches whose consumers run on the executors (``consumers=N``).

Nothing is polled in the source runner: a batch is one journal sequence number and N slots
(:mod:`~kafka_share_eos.source.slots`), and the records exist only once the slots' tasks ran.
``latestOffset(start=end_N)`` therefore plans the next batch unconditionally, except in an
``availableNow`` drain. There a batch's slots poll as usual, for ``pollTimeoutMs`` at most, until
a batch comes back empty; the next one *listens*: its slots wait up to ``availableNowIdleMs``
for records. The drain ends once every slot of a listening batch found nothing, every executor
consumer still in the group found nothing in its last poll (with more Python workers than slots
the workers take turns, and one that got no slot keeps its partitions from the others until it
polls again or leaves), and no consumer of a previous run may still hold records locked
(:mod:`~kafka_share_eos.journal.leases`). An idle query runs an empty micro-batch per
``pollTimeoutMs``, the time its slots wait for records.

Batch N's metrics are gathered from its slots' reports when the next batch is planned (Spark has
committed N by then), measured against the lock budget and written like a runner batch's, with
the records each slot took under ``consumers``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import defaultdict

from kafka_share_eos.journal import BatchMetrics, Journal
from kafka_share_eos.journal.leases import log_wait
from kafka_share_eos.journal.metrics import merged_partitions
from kafka_share_eos.source.lock_budget import LockBudget
from kafka_share_eos.source.options import AckPolicy, SourceOptions
from kafka_share_eos.source.planning import SegmentPartition
from kafka_share_eos.source.slots import CARRIED, SlotPartition

log = logging.getLogger("kafka_share_eos.source")


class SlotPlanner:
    """Decides the end offset of each micro-batch of a query whose consumers run in tasks.

    Args:
        options: the stream's options (``consumers`` above 1).
        journal: where the slots journal their records.
    """

    def __init__(self, options: SourceOptions, journal: Journal) -> None:
        self._options = options
        self._journal = journal
        self.run = uuid.uuid4().hex[:12]
        self._budget = LockBudget(options)
        self._metrics = journal.metrics()
        self._draining = False
        self._unlocked_at = 0.0
        # Batches planned in this run, with when (a drain ends only on an empty batch planned
        # after an earlier run's locks expired).
        self._planned: dict[int, float] = {}
        # Batches of this run every slot of which reported an empty poll: only such a batch
        # can end a drain (a slot that did not report may have found records).
        self._empty: set[int] = set()
        # Batches of a drain whose slots wait availableNowIdleMs for records.
        self._listening: set[int] = set()
        self._purged_through = -1
        # What each executor consumer found in its latest poll reported: records or nothing.
        self._last_found: dict[str, int] = {}
        self._warned_members = False

    def drain(self) -> None:
        """Switch to ``availableNow`` draining (see the module docstring)."""
        self._draining = True
        self._unlocked_at = self._journal.leases.drain_waits_until(
            self.run, self._options.dead_member_holds_ms
        )

    def latest(self, start: int, max_rows: int | None = None) -> int:
        """Plan the batch after ``start``; ``start`` once a drain is over. ``max_rows`` is for
        the slots to split: each polls its share of ``maxRecordsPerTrigger`` itself."""
        self._settle(start)
        if start > self._purged_through:
            self._journal.purge(start)
            self._metrics.prune()
            self._purged_through = start
        whole = sorted(seq for seq, slot in self._journal.entries() if slot is None)
        if whole and whole[-1] > start:
            # Journaled in a run that died before Spark logged the offset (a runner's segment
            # from a run with one consumer): the journal is the records' only copy. Slots of
            # later batches hold records carried there by a poll beyond its slot's share: their
            # batches come one by one.
            return whole[-1]
        if self._draining and start in self._empty and start in self._listening:
            unknown = [member for member in self._journal.leases.members_in_group()
                       if self._last_found.get(member) != 0]
            if unknown:
                self._log_unknown_members(len(unknown))
            elif self._planned[start] >= self._unlocked_at:
                return start
            else:
                log_wait(self._unlocked_at)
        self._planned[start + 1] = time.time()
        if self._draining and start in self._empty:
            # Slots that found records did not wait: only now may each wait the idle time.
            self._listening.add(start + 1)
        return start + 1

    def _log_unknown_members(self, members: int) -> None:
        if not self._warned_members:
            self._warned_members = True
            log.warning(
                "kafka-share source: %d share consumer(s) of this query in the group have not "
                "found their partitions empty yet (more Python workers than 'consumers' %d take "
                "turns at the slots); the drain goes on until each polled empty or left the "
                "group, sessionTimeoutMs after its last slot. Set 'consumers' to the task slots "
                "the query gets", members, self._options.consumers,
            )

    def partitions(self, start: int, end: int) -> list[SlotPartition | SegmentPartition]:
        """The slots of each batch in ``(start, end]``; a sequence journaled whole (by a
        runner consumer of an earlier run) stays one partition."""
        entries = self._journal.entries()
        whole = {seq for seq, slot in entries if slot is None}
        planned: list[SlotPartition | SegmentPartition] = []
        for seq in range(start + 1, end + 1):
            if seq in whole:
                planned.append(SegmentPartition(seq))
            else:
                idle_ms = self._options.available_now_idle_ms if seq in self._listening else 0
                # A slot beyond 'consumers' holds records a run with more consumers carried.
                slots = max([self._options.consumers - 1,
                             *(slot for s, slot in entries if s == seq and slot is not None)])
                planned.extend(
                    SlotPartition(seq, slot, self.run, idle_ms, self._options.join_ms)
                    for slot in range(slots + 1)
                )
        return planned

    def _settle(self, committed: int) -> None:
        """Write the metrics of every batch up to ``committed`` from its slots' reports."""
        reports = self._metrics.slot_reports(committed)
        for seq, slots in sorted(reports.items()):
            batch = self._combine([report for _, report in slots])
            found: dict[str, int] = defaultdict(int)
            for entry in batch.consumers:
                # A carried slot's records came from an earlier poll, not the member's last.
                if "member" in entry and not entry.get(CARRIED):
                    found[entry["member"]] += entry["records"]
            self._last_found.update(found)
            self._metrics.write(batch)
            empty = [entry for entry in batch.consumers if entry["records"] == 0]
            everyone = len(empty) == len(batch.consumers) >= self._options.consumers
            if seq in self._planned and everyone:
                self._empty.add(seq)
            for path, _ in slots:
                self._metrics.delete_slot_report(path)
        self._planned = {seq: at for seq, at in self._planned.items() if seq >= committed}
        self._empty = {seq for seq in self._empty if seq >= committed}
        self._listening = {seq for seq in self._listening if seq >= committed}

    def _combine(self, slots: list[BatchMetrics]) -> BatchMetrics:
        """One batch's metrics from its slots' reports, measured against the lock budget."""
        seq = slots[0].seq
        held_ms = max(r.lock_held_ms for r in slots)
        return BatchMetrics(
            seq=seq,
            first_seq=seq,
            records=sum(r.records for r in slots),
            redelivered=sum(r.redelivered for r in slots),
            acknowledged=sum(r.acknowledged for r in slots),
            ack_failures=sum(r.ack_failures for r in slots),
            ack_failed_partitions=sum(r.ack_failed_partitions for r in slots),
            lock_held_ms=held_ms,
            lock_budget_used=self._budget.observe(seq, held_ms, AckPolicy.AFTER_JOURNAL),
            ack_policy=AckPolicy.AFTER_JOURNAL.value,
            planned_at=min(r.planned_at for r in slots),
            settled_at=max(r.settled_at for r in slots),
            consumers=sorted(
                (entry for r in slots for entry in r.consumers), key=lambda e: e["slot"]
            ),
            partitions=merged_partitions(*(r.partitions for r in slots)),
        )

    def close(self) -> None:
        """Nothing to release: the consumers live in the executors' Python workers."""

