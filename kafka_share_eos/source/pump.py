"""Polling ahead under afterJournal: the runner journals and ACCEPTs while Spark runs a batch.

Under afterJournal a record is acknowledged as soon as its poll is durable in the journal, so
nothing ties the next poll to Spark's progress. A background thread of the source runner keeps
polling (poll, journal the poll as one segment, ACCEPT, ``commit_sync``) while Spark executes
the previous micro-batch, and ``latestOffset`` hands Spark the segments journaled meanwhile. The
journal is the buffer, bounded to one micro-batch ahead: the pump stops polling once a whole
batch of ``maxRecordsPerTrigger`` records (or, without that option, :data:`POLLS_AHEAD` polls'
worth) waits. ``max.poll.records`` is a soft limit (a share fetch acquires whole record batches
of the log, and librdkafka hands out what a fetch brought), so a poll that crosses a batch's end
is journaled as two segments or more, split at the batch boundaries, and settled once: every
batch holds exactly the limit but the last.

The explicit-acknowledgement rule holds: the pump settles every poll before it polls again, and
it is the only caller of the consumer while it runs.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from kafka_share_eos.errors import SessionClosed
from kafka_share_eos.source.acks import AckStats
from kafka_share_eos.source.options import AckPolicy
from kafka_share_eos.source.tally import BatchTally

log = logging.getLogger("kafka_share_eos.source")

POLLS_AHEAD = 4
"""Polls the pump buffers ahead of Spark when ``maxRecordsPerTrigger`` is not set."""
CANCEL_CHECK_S = 0.1
"""How often a waiting :meth:`JournalPump.take` asks whether it is cancelled: a SIGTERM handler
cannot wake the wait (it runs on the waiting thread), so the wait polls the flag. A quiet poll
is made of polls this long too, so that :meth:`JournalPump.stop` (a stopped query) does not
wait out a whole poll timeout before the consumer can leave the group."""

Poll = Callable[[int], list[Any]]
"""Poll once for up to the given milliseconds; the records returned are held until
:data:`Settle` acknowledges them."""
Journal = Callable[[BatchTally, list[Any]], None]
"""Journal one poll's records as a segment of the tally's batch."""
Settle = Callable[[], float]
"""ACCEPT the held records and commit; return how long they were held (ms)."""


@dataclasses.dataclass(frozen=True)
class _Segment:
    """The part of one poll that falls into one batch."""

    tally: BatchTally
    records: int
    """How many of the poll's records it holds."""


class JournalPump:
    """A thread that polls into the journal ahead of Spark; :meth:`take` hands out batches.

    Args:
        poll, journal, settle: one step each of a poll's way into the journal.
        stats: the session's acknowledgement counters (a batch's share is read at hand-over).
        poll_records: records one poll returns at most.
        poll_timeout_ms: how long a poll waits for records before it counts as empty.
        max_rows: records per batch (``maxRecordsPerTrigger``), until :meth:`take` says
            otherwise.
    """

    def __init__(
        self, poll: Poll, journal: Journal, settle: Settle, stats: AckStats, poll_records: int,
        poll_timeout_ms: int, max_rows: int | None = None,
    ) -> None:
        self._poll = poll
        self._poll_timeout_s = poll_timeout_ms / 1000.0
        self._journal = journal
        self._settle = settle
        self._stats = stats
        self._poll_records = poll_records
        self._limit = self._batch_limit(max_rows)
        self._changed = threading.Condition()
        self._tally = self._open_tally()
        # Whole batches journaled and settled, each with the counters at its end.
        self._ready: deque[tuple[BatchTally, AckStats]] = deque()
        self._error: BaseException | None = None
        self._caught_up = False
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="kafka-share-pump", daemon=True)
        self._thread.start()

    def _batch_limit(self, max_rows: int | None) -> int:
        return max_rows if max_rows is not None else POLLS_AHEAD * self._poll_records

    def _open_tally(self) -> BatchTally:
        return BatchTally(AckPolicy.AFTER_JOURNAL, self._stats)

    def _has_room(self) -> bool:
        return not self._ready and self._tally.records < self._limit

    def _run(self) -> None:
        try:
            while True:
                with self._changed:
                    self._changed.wait_for(lambda: self._stopping or self._has_room())
                    if self._stopping:
                        return
                records = self._poll_until_stopped()
                with self._changed:
                    # An empty poll: the group has nothing more for now, the batch is complete.
                    self._caught_up = not records
                    if not records:
                        self._changed.notify_all()
                        continue
                    if self._stopping:
                        # Not journaled: closing the session RELEASEs them.
                        return
                    # Journaled and settled under the lock, so a batch handed to Spark holds
                    # its segments' acknowledgements too.
                    self._journal_and_settle(records)
                    self._changed.notify_all()
        except SessionClosed as closed:
            with self._changed:
                if not self._stopping:
                    # Closed under it (a SIGTERM whose handler did not end the process): the
                    # planning must fail, not report an empty group forever.
                    self._error = closed
                    self._changed.notify_all()
        except BaseException as error:
            log.error("the kafka-share source stopped polling: %s", error, exc_info=error)
            with self._changed:
                self._error = error
                self._changed.notify_all()

    def _journal_and_settle(self, records: list[Any]) -> None:
        """Journal one poll, a segment per batch it falls into, then ACCEPT it all at once."""
        segments = self._journal_segments(records)
        held_ms = self._settle()
        settled = dataclasses.replace(self._stats)
        # The poll's records are ACCEPTed in order, so the counters where a segment ends count
        # its records and those before it, none after: each batch counts its own ACCEPTs.
        at = dataclasses.replace(settled, accepted=settled.accepted - len(records))
        for segment in segments:
            if segment.tally is not self._tally:
                segment.tally.count_from(at)  # a batch that begins inside the poll
            at = dataclasses.replace(at, accepted=at.accepted + segment.records)
            if segment.records:
                segment.tally.settled(held_ms)
            if segment.tally.records >= self._limit:
                self._ready.append((segment.tally, at))
        last = segments[-1].tally
        self._tally = last if last.records < self._limit else self._open_tally()

    def _journal_segments(self, records: list[Any]) -> list[_Segment]:
        """Journal one poll cut at the batch boundaries, beginning with the open batch."""
        segments = []
        tally, rest = self._tally, records
        while rest:
            # No room (none when :meth:`take` lowered the limit during the poll): the open
            # batch is complete as it stands, the poll goes to the next.
            room = max(0, self._limit - tally.records)
            piece, rest = rest[:room], rest[room:]
            if piece:
                self._journal(tally, piece)
            segments.append(_Segment(tally, len(piece)))
            if rest:
                tally = self._open_tally()
        return segments

    def _poll_until_stopped(self) -> list[Any]:
        """One poll of up to ``poll_timeout_ms``, in slices that end early once stopping."""
        deadline = time.monotonic() + self._poll_timeout_s
        while True:
            remaining = deadline - time.monotonic()
            records = self._poll(max(0, round(min(remaining, CANCEL_CHECK_S) * 1000)))
            if records or self._stopping or remaining <= CANCEL_CHECK_S:
                return records

    def _complete(self) -> bool:
        return bool(self._ready) or (self._tally.records > 0 and self._caught_up)

    def take(
        self,
        max_rows: int | None,
        wait_ms: int,
        fill_ms: int,
        stop_if_empty: bool = False,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> tuple[BatchTally, AckStats] | None:
        """The next batch journaled since the last call (``max_rows`` records, or fewer), with
        the acknowledgement counters as they stood at its end; None if none arrived within
        ``wait_ms`` (and then, with ``stop_if_empty``, the pump polls no more). Once the first
        segment is there, waits up to ``fill_ms`` from then (or from the call, if it was there
        already) for the batch to fill (to ``max_rows``, or until a poll finds nothing): fewer,
        larger micro-batches leave more of the machine to polling. Returns None as soon as
        ``cancelled()`` turns true, handing nothing out (what was journaled stays for the next
        call, or for the next run's planning). Re-raises what stopped the pump once the
        segments journaled before it are handed out."""
        first_deadline = time.monotonic() + wait_ms / 1000.0
        fill_deadline: float | None = None
        with self._changed:
            self._limit = self._batch_limit(max_rows)
            self._changed.notify_all()
            while self._error is None and not self._complete():
                if cancelled():
                    return None
                if fill_deadline is None and self._tally.records:
                    # From the first records: a slow start (a share group's join takes one
                    # heartbeat interval) does not cut the first batch short.
                    fill_deadline = time.monotonic() + fill_ms / 1000.0
                deadline = first_deadline if fill_deadline is None else fill_deadline
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._changed.wait(min(remaining, CANCEL_CHECK_S))
            if self._ready:
                full, at_end = self._ready.popleft()
                self._changed.notify_all()
                return full, at_end
            if self._tally.records == 0:
                if self._error is not None:
                    raise self._error
                # Under the lock: no poll is journaled between this answer and the stop.
                self._stopping = self._stopping or stop_if_empty
                self._changed.notify_all()
                return None
            batch, self._tally = self._tally, self._open_tally()
            self._changed.notify_all()
            return batch, dataclasses.replace(self._stats)

    def stop(self) -> None:
        """Stop polling and wait for the poll in progress to end (its records, if any, stay
        held for the session's close to RELEASE)."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join()
