"""The afterJournal pump: polling ahead and handing batches over (no broker, no Spark)."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

from helpers.messages import FakeMessage

from kafka_share_eos.source.acks import AckStats
from kafka_share_eos.source.conversion import to_record_batch
from kafka_share_eos.source.pump import JournalPump
from kafka_share_eos.source.tally import BatchTally


def test_a_cancelled_take_hands_out_nothing_and_the_next_take_gets_it() -> None:
    # The pump's hand-over alone: one record is journaled, then the next poll is still under
    # way, so the batch is not complete and a take waits for it to fill.
    polls = [[FakeMessage(7, key=b"k", value=b"v")]]
    settled, released = threading.Event(), threading.Event()

    def poll(timeout_ms: int) -> list[Any]:
        if polls:
            return polls.pop()
        released.wait(timeout_ms / 1000)
        return []

    def journal(tally: BatchTally, records: list[Any]) -> None:
        tally.polled(1, to_record_batch(records))

    pump = JournalPump(poll, journal, lambda: settled.set() or 0.0, AckStats(), 10, 10_000)
    try:
        assert settled.wait(10)
        assert pump.take(None, 10_000, 10_000, cancelled=lambda: True) is None
        taken = pump.take(None, 10_000, 200)
        assert taken is not None
        assert (taken[0].first_seq, taken[0].seq, taken[0].records) == (1, 1, 1)
    finally:
        released.set()
        pump.stop()


def test_polls_larger_than_a_batch_are_split_at_its_boundaries() -> None:
    """librdkafka's max.poll.records is soft: a poll crossing a batch's end is journaled as
    segments of two batches or more, and each batch counts the ACCEPTs of its own records."""
    polls = [[FakeMessage(n) for n in range(size)] for size in (7, 9, 2)]
    stats, segments = AckStats(), []
    last: list[int] = []

    def poll(timeout_ms: int) -> list[Any]:
        if polls:
            records = polls.pop(0)
            last[:] = [len(records)]
            return records
        time.sleep(timeout_ms / 1000)
        return []

    def journal(tally: BatchTally, records: list[Any]) -> None:
        segments.append(len(records))
        tally.polled(len(segments), to_record_batch(records))

    def settle() -> float:
        stats.accepted += last[0]
        return 1.0

    pump = JournalPump(poll, journal, settle, stats, 4, 100, max_rows=5)
    try:
        batches = []
        while sum(b[0] for b in batches) < 18:
            taken = pump.take(5, 10_000, 10_000)
            assert taken is not None
            tally, at_end = taken
            acknowledged = tally.finish(at_end, 0.0).acknowledged
            batches.append((tally.records, acknowledged, tally.first_seq, tally.seq))
    finally:
        pump.stop()
    assert [(records, acked) for records, acked, _, _ in batches] == [
        (5, 5), (5, 5), (5, 5), (3, 3)
    ]
    # Consecutive segments, one batch after the other.
    ends = [(first, last_seq) for _, _, first, last_seq in batches]
    assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(ends))
    assert segments == [5, 2, 3, 5, 1, 2]


def test_stopping_the_pump_does_not_wait_out_a_quiet_poll() -> None:
    """A stopped query's runner leaves the group at once, not after its poll timeout."""
    polling = threading.Event()

    def quiet(timeout_ms: int) -> list[Any]:
        polling.set()
        time.sleep(timeout_ms / 1000)
        return []

    def unexpected(*_: Any) -> None:
        raise AssertionError("nothing was polled")

    pump = JournalPump(quiet, unexpected, unexpected, AckStats(), 10, poll_timeout_ms=3_600_000)
    assert polling.wait(10)
    stopped = threading.Event()
    threading.Thread(target=lambda: (pump.stop(), stopped.set()), daemon=True).start()
    assert stopped.wait(30), "stop() waited for the hour-long poll"
