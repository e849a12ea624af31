"""Consumers on the executors (``consumers=N``): each input partition of a batch is a *slot*
whose task polls, journals and acknowledges its own records.

A share group accepts an acknowledgement only from the member that acquired the record, and a
Spark task is not guaranteed to land on the same Python worker twice, so a slot's task does it
all in one ``read(partition)``, poll after poll until it has the slot's share of
``maxRecordsPerTrigger``, a poll comes back empty or ``pollTimeoutMs`` has passed: poll, write
the poll's part of the slot's journal segment first-writer-wins (marked last or not), ACCEPT,
commit. One fetch of a broker rarely fills a share, and a part per poll keeps every record's
lock held only from its poll to its part's write. A task that finds its slot complete (a replay
after a crash, a retried or speculative attempt, a second Spark action over the same batch)
reads it and never polls; one that finds it unfinished (its writer died) carries it on; one that
loses the race for a part RELEASEs what it fetched and takes the winner's. An empty poll is
journaled too, so every reader of a batch sees the same records. A poll beyond the slot's share
(a Kafka fetch takes whole producer batches) is cut at the share and the rest journaled into
the same slot of the next batches, so ``maxRecordsPerTrigger`` caps every batch and no record
is RELEASEd to come back with a higher delivery count.

The consumer lives in a module-level cache of the Python worker: Spark reuses workers across
tasks (``spark.python.worker.reuse``, the default), so one member with its share session serves
many batches. It is created in the task, after the worker was forked, and keyed by process id.
A consumer no slot used for ``sessionTimeoutMs`` leaves the group, as the group would drop a
member that stopped heartbeating: a Python worker that gets no more slots (more workers than
consumers, or its query stopped) must not keep its partitions from the members that poll.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import os
import threading
import time
from typing import Any

import pyarrow as pa

from kafka_share_eos import faults
from kafka_share_eos._extras import SPARK
from kafka_share_eos.errors import JournalError
from kafka_share_eos.journal import EXECUTOR, BatchMetrics, Journal
from kafka_share_eos.source.conversion import to_record_batch
from kafka_share_eos.source.options import AckPolicy, SourceOptions
from kafka_share_eos.source.session import RELEASE, ShareSession
from kafka_share_eos.source.tally import BatchTally
from kafka_share_eos.storage import STORE_ERRORS

with SPARK.needed_by("the kafka-share Spark source"):
    from pyspark.sql.datasource import InputPartition

log = logging.getLogger("kafka_share_eos.source")

IDLE_CHECK_S = 0.5
CARRIED = "carried"
"""Marks a slot report's consumer entry whose records an earlier batch's poll fetched."""
# A poll after the first that carries on a slot only takes what the fetches in flight bring.
FOLLOW_UP_POLL_MS = 200


class SlotPartition(InputPartition):
    """Slot ``slot`` of batch ``seq``, planned by run ``run``; ``idle_ms`` above 0 makes an
    empty slot keep polling that long (an ``availableNow`` drain), counted from when a consumer
    created ``join_ms`` earlier has had its first partitions."""

    def __init__(self, seq: int, slot: int, run: str, idle_ms: int, join_ms: int = 0) -> None:
        super().__init__((seq, slot))
        self.seq = seq
        self.slot = slot
        self.run = run
        self.idle_ms = idle_ms
        self.join_ms = join_ms

    def rows(self, options: SourceOptions, journal: Journal) -> pa.Table:
        """The slot's records: from its segment when complete, else polled into it."""
        return read_slot(options, journal, self)


class SlotConsumer:
    """One share-group member in an executor's Python worker, with its lease."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.session = ShareSession(
            options.consumer_config, options.topics, during_ack=faults.SLOT_DURING_ACK
        )
        self.journal = Journal(options.journal)
        self.lease = self.journal.leases.lease(EXECUTOR)
        self.session.on_close = self.lease.release
        self.busy = False
        self.created = self.last_used = time.monotonic()

    @property
    def idle(self) -> bool:
        """Whether no slot used the consumer for the group's session timeout."""
        idle_s = time.monotonic() - self.last_used
        return not self.busy and idle_s * 1000 >= self.options.session_timeout_ms

    def fill(self, journal: Journal, part: SlotPartition, done: list[pa.Table]) -> pa.Table:
        """Poll the slot's records after the parts ``done`` already journaled, each poll's
        into the next part first-writer-wins, ACCEPT them; return the whole slot (with other
        attempts' parts where they wrote first). A poll beyond the slot's share is carried
        into the same slot of the next batches (:meth:`_carry`)."""
        session = self.session
        if session.held:
            # Left by an attempt that failed before journaling them in this worker.
            session.settle(RELEASE)
        tally = BatchTally(AckPolicy.AFTER_JOURNAL, session.stats)
        parts = list(done)
        for table in parts:
            tally.polled(part.seq, table)
        share = self.options.slot_records(part.slot)
        taken = sum(table.num_rows for table in parts)
        until = time.monotonic() + self.options.poll_timeout_ms / 1000.0
        while True:
            # No room (a slot beyond a restart's fewer consumers): it ends with what it holds.
            records = self._poll(part, first=len(parts) == len(done)) if taken < share else []
            faults.maybe_crash(faults.SLOT_AFTER_POLL)
            polled = to_record_batch(records)
            batch, beyond = self._within_share(polled, share - taken)
            last = (not records or taken + batch.num_rows >= share
                    or time.monotonic() >= until)
            won = self._journal_part(journal, part, len(parts), batch, last)
            if won:
                faults.maybe_crash(faults.SLOT_AFTER_SEGMENT)
                tally.polled(part.seq, batch)
                carried = self._carry(journal, part, beyond)
                acquired_at = session.acquired_at
                session.settle_journaled(batch.num_rows + carried)
                if batch.num_rows:
                    tally.settled((time.monotonic() - acquired_at) * 1000)
                table = pa.Table.from_batches([batch])
            else:
                session.settle(RELEASE)
                faults.maybe_crash(faults.SLOT_READING_OTHER)
                table, last = self._others_part(journal, part, len(parts))
                tally.polled(part.seq, table)
            parts.append(table)
            taken += table.num_rows
            if last:
                break
        if won:
            # The writer of the last part reports for the slot.
            self._report(part.seq, part.slot, tally.finish(session.stats, lock_budget_used=0.0))
        return pa.concat_tables(parts)

    def _within_share(
        self, polled: pa.RecordBatch, room: int
    ) -> tuple[pa.RecordBatch, pa.RecordBatch | None]:
        """The poll's records that fit the slot, and those beyond (None when all fit, or
        when no ``maxRecordsPerTrigger`` caps the batch)."""
        if self.options.max_records_per_trigger is None or polled.num_rows <= room:
            return polled, None
        return polled.slice(0, room), polled.slice(room)

    def _carry(self, journal: Journal, part: SlotPartition, beyond: pa.RecordBatch | None) -> int:
        """Journal the records a poll brought beyond the slot's share into the same slot of
        the batches after it, a share each, and return how many were journaled.

        A Kafka fetch acquires whole producer batches, so a poll can exceed the share; the
        records are journaled now and ACCEPTed with the poll (a RELEASE would bring them back
        with a higher delivery count), and the next batches' tasks of this slot find them
        there: complete, they read them and never poll; the last, short of a share, is left
        unfinished for its task to fill. Nothing of this slot lies beyond the batch (its
        task found room), so each carried part is the first of its slot, written
        first-writer-wins: one lost (a later batch's task ran first, possible only beside a
        speculative attempt) ends the carry and the rest is RELEASEd.
        """
        if beyond is None:
            return 0
        share = self.options.slot_records(part.slot)
        seq, carried = part.seq, 0
        while carried < beyond.num_rows:
            seq += 1
            chunk = beyond.slice(carried, share)
            full = chunk.num_rows >= share
            if not journal.write_slot(seq, part.slot, chunk, part=0, last=full):
                log.warning("slot %d of batch %d was journaled by another task first: %d "
                            "records polled for it are RELEASEd", part.slot, seq,
                            beyond.num_rows - carried)
                break
            # A slot segment durable, nothing of its poll acknowledged: the same state.
            faults.maybe_crash(faults.SLOT_AFTER_SEGMENT)
            if full:
                self._report_carried(seq, part.slot, chunk)
            carried += chunk.num_rows
        return carried

    def _report_carried(self, seq: int, slot: int, chunk: pa.RecordBatch) -> None:
        # Acknowledged (and counted) with the poll that fetched it; its own batch counts
        # its records. Not a poll of the member's either: the drain must not read it as one.
        tally = BatchTally(AckPolicy.AFTER_JOURNAL, self.session.stats)
        tally.polled(seq, chunk)
        self._report(seq, slot, tally.finish(self.session.stats, lock_budget_used=0.0),
                     carried=True)

    def _journal_part(
        self, journal: Journal, part: SlotPartition, index: int, batch: pa.RecordBatch, last: bool
    ) -> bool:
        try:
            return journal.write_slot(part.seq, part.slot, batch, part=index, last=last)
        except BaseException:
            self.session.settle(RELEASE)
            raise

    @staticmethod
    def _others_part(journal: Journal, part: SlotPartition, index: int) -> tuple[pa.Table, bool]:
        found = journal.slot_part(part.seq, part.slot, index)
        if found is None:
            raise JournalError(
                f"part {index} of slot {part.slot} of journal segment {part.seq} vanished after "
                f"another task wrote it: the journal at {journal.location!r} was changed "
                "outside this query"
            )
        return found

    def _poll(self, part: SlotPartition, first: bool) -> list[object]:
        timeout_ms = self.options.poll_timeout_ms
        idle_until = time.monotonic()
        if first and part.idle_ms:
            assigned_by = self.created + part.join_ms / 1000.0
            idle_until = max(idle_until, assigned_by) + part.idle_ms / 1000.0
        else:
            timeout_ms = min(FOLLOW_UP_POLL_MS, timeout_ms)
        while True:
            self.lease.renew(part.run, timeout_ms / 1000.0)
            records = self.session.poll(timeout_ms)
            if records or time.monotonic() >= idle_until:
                return records

    def _report(self, seq: int, slot: int, metrics: BatchMetrics, carried: bool = False) -> None:
        # The planner measures the batch against the lock budget once every slot reported.
        entry: dict[str, Any] = {"slot": slot, "records": metrics.records,
                                 "member": self.lease.member}
        if carried:
            entry[CARRIED] = True
        report = dataclasses.replace(metrics, consumers=[entry])
        try:
            self.journal.metrics().write_slot_report(slot, report)
        except STORE_ERRORS:
            # Metrics are not data: the batch's entry then lacks this slot.
            log.warning("could not write the metrics of slot %d of batch %d", slot, seq)

    def close(self) -> None:
        """RELEASE what is held, leave the group, drop the lease."""
        self.session.close()


_consumers: dict[tuple[object, ...], SlotConsumer] = {}
_consumers_lock = threading.Lock()
_watching_pid: int | None = None


def _close(consumers: list[SlotConsumer]) -> None:
    for consumer in consumers:
        try:
            consumer.close()
        except Exception:
            log.warning("closing a kafka-share consumer failed", exc_info=True)


def close_consumers() -> None:
    """Leave the group with every consumer of this process (at its exit, when Python gets to
    run it: a member that just vanishes keeps its partitions until the session timeout)."""
    with _consumers_lock:
        leaving = list(_consumers.values())
        _consumers.clear()
    _close(leaving)


atexit.register(close_consumers)


def _leave_when_idle() -> None:
    while True:
        time.sleep(IDLE_CHECK_S)
        with _consumers_lock:
            # Only this process's own: a copy inherited through a fork is not to be touched.
            idle = [key for key, consumer in _consumers.items()
                    if key[0] == os.getpid() and consumer.idle]
            leaving = [_consumers.pop(key) for key in idle]
        _close(leaving)


def _watch_idle_consumers() -> None:
    """Start this process's watcher of idle consumers (threads do not cross a fork)."""
    global _watching_pid
    if _watching_pid != os.getpid():
        _watching_pid = os.getpid()
        threading.Thread(target=_leave_when_idle, name="kafka-share-idle-consumers",
                         daemon=True).start()


def read_slot(options: SourceOptions, journal: Journal, part: SlotPartition) -> pa.Table:
    """The records of one slot: from its segment when complete, else polled into it."""
    done, complete = journal.slot_parts(part.seq, part.slot)
    if complete:
        faults.maybe_crash(faults.SLOT_READING_OTHER)
        return pa.concat_tables(done)
    # The process id is part of the key: a consumer must never cross a fork.
    key = (os.getpid(), options.journal_path, options.topics,
           tuple(sorted(options.consumer_config.items())))
    with _consumers_lock:
        consumer = _consumers.get(key)
        if consumer is None or consumer.session.closed:
            consumer = _consumers[key] = SlotConsumer(options)
        consumer.busy = True
        _watch_idle_consumers()
    try:
        return consumer.fill(journal, part, done)
    except BaseException:
        # A consumer that failed mid-way may hold records or a broken session: start afresh
        # (closing RELEASEs what it holds, so the broker hands it out again at once).
        with _consumers_lock:
            _consumers.pop(key, None)
        _close([consumer])
        raise
    finally:
        consumer.last_used = time.monotonic()
        consumer.busy = False
