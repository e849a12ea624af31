"""The source runner's planning against a real embedded broker, without Spark.

Each test runs its own broker: share-group settings (lock duration) are per broker, and a client
disconnecting drops every share session on the broker, which would disturb a neighbour.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import KafkaException
from helpers import produce
from helpers.planned_orders import (
    GROUP,
    RECORDS,
    TOPIC,
    assert_only_unjournaled_come_back,
    identities,
    redelivered,
)
from helpers.planning import broker_fixture, planner_options

from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.schema import JOURNAL_SCHEMA
from kafka_share_eos.source.batch_planner import BatchPlanner
from kafka_share_eos.source.options import SourceOptions
from kafka_share_eos.source.session import ShareSession

pytestmark = pytest.mark.timeout(90)


broker = broker_fixture(TOPIC, RECORDS)


def options(broker: EmbeddedBroker, journal: Path, **extra: str) -> SourceOptions:
    return planner_options(broker, TOPIC, GROUP, journal, **extra)


def after_journal_planner(
    broker: EmbeddedBroker, journal: Journal, per_trigger: int
) -> BatchPlanner:
    """An afterJournal planner polling 10 records at a time."""
    opts = options(broker, Path(journal.location), acknowledge="afterJournal",
                   maxRecordsPerTrigger=str(per_trigger), **{"kafka.max.poll.records": "10"})
    return BatchPlanner(opts, journal)


def test_after_commit_accepts_only_when_the_next_planning_starts(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    journal = Journal(str(tmp_path))
    planner = BatchPlanner(options(broker, tmp_path, **{"kafka.max.poll.records": "1000"}), journal)
    end = planner.latest(0, None)
    assert end == 1
    assert len(identities(journal, [1])) > 0
    assert planner.stats is not None and planner.stats.accepted == 0
    # Spark did not commit batch 1; the runner stops: the records go back to the group.
    planner.close()
    again = redelivered(broker, 10)
    held = {(p, o) for _, p, o in identities(journal, [1])}
    assert {(p, o) for p, o, _ in again} >= held
    assert all(count == 2 for p, o, count in again if (p, o) in held)


def test_after_commit_settles_the_committed_batch_and_purges_it(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    journal = Journal(str(tmp_path))
    planner = BatchPlanner(options(broker, tmp_path, **{"kafka.max.poll.records": "1000"}), journal)
    seen: list[tuple[str, int, int]] = []
    start = 0
    while (end := planner.latest(start, None)) != start:
        seen += identities(journal, list(range(start + 1, end + 1)))
        start = end
    assert len(seen) == RECORDS == len(set(seen))
    assert planner.stats is not None and planner.stats.accepted == RECORDS
    assert journal.sequences() == []
    planner.close()
    assert redelivered(broker, 2) == []


def test_draining_waits_out_empty_polls_while_the_member_joins(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    journal = Journal(str(tmp_path))
    planner = BatchPlanner(options(broker, tmp_path, pollTimeoutMs="1"), journal)
    planner.drain()
    # A 1 ms poll is empty until the member has joined; an empty planning would end the drain.
    assert planner.latest(0, None) == 1
    planner.close()


def test_after_journal_accepts_right_after_journaling(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    journal = Journal(str(tmp_path))
    planner = after_journal_planner(broker, journal, 40)
    end = planner.latest(0, 40)
    batch = identities(journal, list(range(1, end + 1)))
    assert 0 < len(batch) <= 40
    planner.close()
    # The pump went on polling ahead of Spark: everything ACCEPTed is in the journal.
    journaled = identities(journal, journal.sequences())
    assert set(batch) <= set(journaled)
    assert planner.stats is not None and planner.stats.accepted == len(journaled)
    # The journal is the only copy of those records now.
    assert_only_unjournaled_come_back(broker, {(p, o) for _, p, o in journaled})


def test_after_journal_polls_one_batch_ahead_while_spark_runs(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    journal = Journal(str(tmp_path))
    planner = after_journal_planner(broker, journal, 20)
    first = planner.latest(0, 20)
    # While "Spark runs" batch 1, the pump journals the next batch, and stops there.
    deadline = time.monotonic() + 20
    while len(identities(journal, [s for s in journal.sequences() if s > first])) < 20:
        assert time.monotonic() < deadline, "the pump did not poll ahead"
        time.sleep(0.05)
    time.sleep(1.0)
    ahead = [s for s in journal.sequences() if s > first]
    assert len(identities(journal, ahead)) == 20
    # The next planning hands out exactly what was polled ahead.
    assert planner.latest(first, 20) == ahead[-1]
    planner.close()

def test_segments_of_a_dead_runner_are_planned_first(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    journal = Journal(str(tmp_path))
    opts = options(broker, tmp_path, acknowledge="afterJournal", maxRecordsPerTrigger="20")
    first = BatchPlanner(opts, journal)
    first.latest(0, 20)
    # Died before Spark logged the offset: every segment, handed out or polled ahead, is orphaned.
    first.close()
    orphan_end = journal.sequences()[-1]
    orphans = identities(journal, journal.sequences())
    second = BatchPlanner(opts, journal)
    assert second.latest(0, 20) == orphan_end
    assert second.stats is not None and second.stats.accepted == 0
    following = second.latest(orphan_end, 20)
    assert following > orphan_end
    assert journal.sequences() == list(range(orphan_end + 1, following + 1))
    assert set(identities(journal, journal.sequences())).isdisjoint(orphans)
    second.close()


def test_expired_locks_are_counted_not_fatal_and_records_return(tmp_path: Path) -> None:
    with EmbeddedBroker(topics=[TOPIC], record_lock_duration_ms=1000) as broker:
        produce(broker.bootstrap_servers, TOPIC, (b"%d" % i for i in range(RECORDS)))
        journal = Journal(str(tmp_path))
        planner = BatchPlanner(
            options(broker, tmp_path, **{"kafka.max.poll.records": "1000"}), journal
        )
        assert planner.latest(0, None) == 1
        first = identities(journal, [1])
        time.sleep(2.5)  # the batch outlives its locks
        start, redeliveries = 1, []
        deadline = time.monotonic() + 30
        while len(redeliveries) < len(first) and time.monotonic() < deadline:
            end = planner.latest(start, None)
            for seq in range(start + 1, end + 1):
                redeliveries += journal.read(seq).to_pylist()
            start = end
        stats = planner.stats
        assert stats is not None
        assert stats.failed_partitions + stats.failed_records + stats.refused_locally > 0
        assert {(r["topic"], r["partition"], r["offset"]) for r in redeliveries} >= set(first)
        assert min(r["deliveryCount"] for r in redeliveries) >= 2
        planner.close()


def test_a_close_whose_release_fails_still_leaves_the_group(
    broker: EmbeddedBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planner = BatchPlanner(options(broker, tmp_path, **{"kafka.max.poll.records": "1000"}),
                           Journal(str(tmp_path)))
    assert planner.latest(0, None) == 1

    def broker_unreachable(self: ShareSession, *_: Any) -> None:
        raise KafkaException("commit timed out")

    monkeypatch.setattr(ShareSession, "_acknowledge_held", broker_unreachable)
    with pytest.raises(KafkaException, match="commit timed out"):
        planner.close()
    # The locks last 60 s: the batch is back within 10 s only because the consumer left.
    assert len(redelivered(broker, 10)) == RECORDS


class _FailingJournal(Journal):
    """Writes its first segment, then fails like a full disk."""

    def write(self, seq: int, batch: Any) -> None:
        if self.sequences():
            raise OSError(28, "No space left on device")
        super().write(seq, batch)


def test_a_journal_failure_in_the_pump_fails_the_planning_and_loses_nothing(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    journal = _FailingJournal(str(tmp_path))
    planner = after_journal_planner(broker, journal, 20)
    first = planner.latest(0, 20)
    assert journal.sequences() == [1] and first == 1
    journaled = {(p, o) for _, p, o in identities(journal, [1])}
    with pytest.raises(OSError, match="No space left"):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            planner.latest(first, 20)
    planner.close()
    # The poll that could not be journaled was never ACCEPTed: it comes back, with the rest.
    assert_only_unjournaled_come_back(broker, journaled)


def test_batches_journaled_as_slots_are_refused_by_a_runner_consumer(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    journal = Journal(str(tmp_path))
    # Records a run with consumers=2 carried into slot 1 of batches 3 and 4.
    rows = pa.RecordBatch.from_pylist([], schema=JOURNAL_SCHEMA)
    assert journal.write_slot(3, 1, rows) and journal.write_slot(4, 1, rows)
    planner = BatchPlanner(options(broker, tmp_path), journal)
    try:
        with pytest.raises(ConfigurationError, match=r"batches 3 to 4 as slots.*'consumers'"):
            planner.latest(2)
    finally:
        planner.close()
    replay = BatchPlanner(options(broker, tmp_path), journal)
    with pytest.raises(ConfigurationError, match="batches 3 to 4"):
        replay.partitions(2, 3)
    assert [p.seq for p in BatchPlanner(options(broker, tmp_path), journal).partitions(4, 5)] == [5]
