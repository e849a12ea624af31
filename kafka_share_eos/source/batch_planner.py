"""Planning micro-batches in Spark's source runner: settle, purge, recover, poll, journal.

``latestOffset(start=end_N)`` is called only after batch N was written to Spark's commit log, so
it is where the records of batch N are ACCEPTed (afterCommit) and where batch N's segments can be
deleted. Under afterJournal a :class:`~kafka_share_eos.source.pump.JournalPump` polls into the
journal while Spark runs batch N, and the planning hands out what it journaled. Nothing is
acknowledged before it is in the journal. Every settled batch is measured
against the record lock (:mod:`~kafka_share_eos.source.lock_budget`) and leaves a metrics entry
next to the journal (:mod:`~kafka_share_eos.journal.metrics_store`).
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafka_share_eos import faults
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.journal import RUNNER, Journal, RecordRejections
from kafka_share_eos.source.acks import AckStats
from kafka_share_eos.source.conversion import to_record_batch
from kafka_share_eos.source.lock_budget import LockBudget
from kafka_share_eos.source.options import AckPolicy, SourceOptions
from kafka_share_eos.source.planning import SegmentPartition
from kafka_share_eos.source.pump import JournalPump
from kafka_share_eos.source.session import ACCEPT, RELEASE, ShareSession
from kafka_share_eos.source.shutdown import SigtermHook
from kafka_share_eos.source.tally import BatchTally

log = logging.getLogger("kafka_share_eos.source")

SessionFactory = Callable[[Mapping[str, str], Sequence[str]], ShareSession]


class BatchPlanner:
    """Decides the end offset (a journal sequence number) of each micro-batch.

    Args:
        options: the stream's options.
        journal: where batches are made durable; batch metrics go to its ``_metrics`` directory.
        session_factory: opens the share-consumer session on first use (tests may substitute).
    """

    def __init__(
        self,
        options: SourceOptions,
        journal: Journal,
        session_factory: SessionFactory = ShareSession,
    ) -> None:
        self._options = options
        self._journal = journal
        self._session_factory = session_factory
        self._session: ShareSession | None = None
        self._budget = LockBudget(options)
        self._metrics = journal.metrics()
        # Records a strategy refused into the broker's dead-letter queue: REJECTed, not
        # ACCEPTed (None: the pipeline does not route refusals there).
        self._rejections: RecordRejections | None = None
        # Unknown until the journal was inspected once: it may hold a dead runner's segments.
        self._next_seq: int | None = None
        # The journaled batch whose records await ACCEPT (afterCommit only).
        self._held: BatchTally | None = None
        self._pump: JournalPump | None = None
        self._pump_hook: SigtermHook | None = None
        self._purged_through = -1
        self._slots_checked = False
        self._draining = False
        self._run = uuid.uuid4().hex[:12]
        self._lease = journal.leases.lease(RUNNER)
        # Wall-clock time before which records a crashed earlier run held may still be locked.
        self._unlocked_at = 0.0
        # Wall-clock time before which the consumer may still wait for its first partitions.
        self._assigned_by = 0.0

    def drain(self) -> None:
        """Switch to ``availableNow`` draining: an empty planning ends the query for good, so
        only report one after the group delivered nothing for ``availableNowIdleMs``, counted
        from when the records an earlier run's dead consumer held are unlocked
        (:mod:`~kafka_share_eos.journal.leases`)."""
        self._draining = True
        self._unlocked_at = self._journal.leases.drain_waits_until(
            self._run, self._options.dead_member_holds_ms
        )

    def _idle_ms(self) -> int:
        """How long a drain's planning waits for a first record before the drain ends: the
        idle time, counted from when nothing can be locked elsewhere or unassigned here."""
        waiting_ms = max(0.0, max(self._unlocked_at, self._assigned_by) - time.time()) * 1000
        return int(waiting_ms) + self._options.available_now_idle_ms

    def _poll(self, session: ShareSession, timeout_ms: int | None = None) -> list[Any]:
        timeout_ms = self._options.poll_timeout_ms if timeout_ms is None else timeout_ms
        self._lease.renew(self._run, timeout_ms / 1000.0)
        return session.poll(timeout_ms)

    @property
    def stats(self) -> AckStats | None:
        """Acknowledgement counters of the current session, if one is open."""
        return None if self._session is None else self._session.stats

    @property
    def policy(self) -> AckPolicy:
        """The policy the next batch is planned with: the ``acknowledge`` option, or
        afterJournal once ``lockBudgetAction=switchToAfterJournal`` switched it."""
        return self._budget.policy

    def _open(self) -> ShareSession:
        if self._session is None:
            self._session = self._session_factory(
                self._options.consumer_config, self._options.topics
            )
            # Left the group (also on SIGTERM): the next run need not wait for its records.
            self._session.on_close = self._lease.release
            rejections = self._journal.rejections
            self._rejections = rejections if rejections.routed() else None
            self._assigned_by = time.time() + self._options.join_ms / 1000.0
        return self._session

    def latest(self, start: int, max_rows: int | None = None) -> int:
        """Plan the batch after ``start``; return its end, or ``start`` when nothing arrived."""
        session = self._open()
        if self._held is not None:
            if self._held.seq > start:
                # Spark has not committed the held batch yet, so it cannot move past it.
                return self._held.seq
            self._settle(session, self._held)
            self._finish(self._held, session.stats)
            self._held = None
        self._purge(start)
        if self._next_seq is None:
            self._refuse_slots_after(start)
            present = self._journal.sequences()
            self._next_seq = max([start, *present]) + 1
            orphans = [seq for seq in present if seq > start]
            if orphans:
                # Journaled by a runner that died before Spark logged the offset: the records
                # may already be ACCEPTed, so the journal is their only copy.
                log.info("planning %d journal segments left by a previous run", len(orphans))
                return orphans[-1]
        if self._pump is None:
            # Only while no pump claims sequence numbers concurrently (it never needs this).
            self._next_seq = max(self._next_seq, start + 1)
        if self._budget.policy is AckPolicy.AFTER_COMMIT:
            return self._plan_one_poll(session, start)
        return self._plan_journaled(session, start, max_rows)

    def _first_poll(self, session: ShareSession) -> list[Any]:
        # A poll can come back empty while the member joins or a large fetch is under way;
        # under a processing-time trigger the next trigger simply polls again.
        idle_until = time.monotonic() + self._idle_ms() / 1000.0
        while True:
            records = self._poll(session)
            if records or not self._draining or time.monotonic() >= idle_until:
                return records

    def _plan_one_poll(self, session: ShareSession, start: int) -> int:
        records = self._first_poll(session)
        if not records:
            return start
        tally = BatchTally(AckPolicy.AFTER_COMMIT, session.stats)
        self._journal_poll(tally, records)
        self._held = tally
        return tally.seq

    def _plan_journaled(self, session: ShareSession, start: int, max_rows: int | None) -> int:
        if self._pump_hook is None:
            # Installed before the pump starts, so a SIGTERM always stops the pump before the
            # session closes (the session's own hook is chained after this one).
            self._pump_hook = SigtermHook(self.close)
            self._pump_hook.install()
        wait_ms = self._idle_ms() if self._draining else self._options.poll_timeout_ms
        # A SIGTERM meanwhile waits: stopping the pump from the handler while this thread
        # holds the pump's lock would deadlock, and a pump started but not yet assigned
        # would be left polling. The wait for records ends at once for it instead (a drain
        # may wait availableNowIdleMs), so the runner of a stopped query leaves promptly.
        hook = self._pump_hook
        with hook.busy():
            if self._pump is None:
                self._pump = JournalPump(
                    poll=lambda timeout_ms: self._poll(session, timeout_ms),
                    journal=self._journal_poll,
                    settle=lambda: self._accept(session),
                    stats=session.stats,
                    poll_records=self._options.max_poll_records,
                    poll_timeout_ms=self._options.poll_timeout_ms,
                    max_rows=max_rows,
                )
            taken = self._pump.take(
                max_rows, wait_ms, self._options.poll_timeout_ms,
                stop_if_empty=self._draining, cancelled=lambda: hook.terminating,
            )
            if taken is None:
                if self._draining:
                    # The drain ends: polling on would ACCEPT records no batch of this query runs.
                    self._stop_pump(session)
                return start
        tally, stats = taken
        self._finish(tally, stats)
        return tally.seq

    def _stop_pump(self, session: ShareSession) -> None:
        if self._pump is None:
            return
        self._pump.stop()
        self._pump = None
        if session.held and not session.closed:
            # Polled as the pump stopped, never journaled: the broker may hand them out again.
            session.settle(RELEASE)

    def _journal_poll(self, tally: BatchTally, records: list[Any]) -> None:
        faults.maybe_crash(faults.AFTER_POLL)
        seq = self._claim_seq()
        batch = to_record_batch(records)
        self._journal.write(seq, batch)
        faults.maybe_crash(faults.AFTER_JOURNAL)
        tally.polled(seq, batch)

    def _settle(self, session: ShareSession, tally: BatchTally) -> None:
        # Read after the batch committed: its strategy's refusals are there by now.
        refused = frozenset() if self._rejections is None else self._rejections.refused()
        tally.settled(self._accept(session, refused))

    @staticmethod
    def _accept(session: ShareSession, refused: frozenset[tuple[str, int, int]] = frozenset()
                ) -> float:
        """ACCEPT the held records (REJECT the ``refused`` ones) and commit; how long they were
        held (ms)."""
        faults.maybe_crash(faults.BEFORE_ACK)
        acquired_at = session.acquired_at
        session.settle(ACCEPT, refused)
        return (time.monotonic() - acquired_at) * 1000

    def _finish(self, tally: BatchTally, stats: AckStats) -> None:
        used = self._budget.observe(tally.seq, tally.held_ms, tally.policy)
        self._metrics.write(tally.finish(stats, used))

    def _claim_seq(self) -> int:
        assert self._next_seq is not None
        seq = self._next_seq
        self._next_seq = seq + 1
        return seq

    def _purge(self, committed: int) -> None:
        if committed > self._purged_through:
            self._journal.purge(committed)
            self._metrics.prune()
            self._purged_through = committed

    def _refuse_slots_after(self, start: int) -> None:
        """Raise when batches after ``start`` are journaled as executor consumers' slots (a run
        with ``consumers`` above 1 planned them, or carried a poll's records into them): a
        runner consumer reads whole segments only. Looked at once a run: later batches are
        this run's.

        Raises:
            ConfigurationError: naming the batches and the option to restart with.
        """
        if self._slots_checked:
            return
        self._slots_checked = True
        slotted = sorted({seq for seq, slot in self._journal.entries()
                          if slot is not None and seq > start})
        if slotted:
            raise ConfigurationError(
                f"the journal at {self._journal.location!r} holds batches {slotted[0]} to "
                f"{slotted[-1]} as slots of executor consumers (planned, or given records "
                "carried from an earlier poll, by a run with 'consumers' above 1), which one "
                "consumer in the source runner cannot read: restart with that 'consumers' "
                "until they are read"
            )

    def partitions(self, start: int, end: int) -> list[SegmentPartition]:
        """One partition per journal segment of the batches in ``(start, end]``.

        Raises:
            ConfigurationError: some of them are executor consumers' slots.
        """
        self._refuse_slots_after(start)
        return [SegmentPartition(seq) for seq in range(start + 1, end + 1)]

    def close(self) -> None:
        """Stop polling ahead, RELEASE what awaits acknowledgement and leave the share group."""
        hook = self._pump_hook
        # A SIGTERM during a close called by Spark waits for it rather than re-entering it.
        with hook.busy() if hook is not None else contextlib.nullcontext():
            if self._session is not None:
                self._stop_pump(self._session)
            if hook is not None:
                hook.uninstall()
                self._pump_hook = None
            if self._session is not None:
                self._session.close()
                self._held = None
