"""Executor-side slots, against a real embedded broker, without Spark.

A slot's task polls, journals first-writer-wins and ACCEPTs, poll after poll until its share is
filled; a task that finds its slot complete reads it, one that finds it unfinished carries it
on; one that loses the race RELEASEs what it fetched; a consumer no slot used for the session
timeout leaves the group. Their planner is tested in ``tests/source/test_slot_planner.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import broker_holding, consume, count_at_least, share_consumer
from helpers.batches import source_record_batch
from helpers.slots import GROUP, TOPIC, options

from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.leases import LEASES_DIR
from kafka_share_eos.source.options import AckPolicy, SourceOptionError
from kafka_share_eos.source.slots import (
    SlotConsumer,
    SlotPartition,
    close_consumers,
    read_slot,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    with broker_holding(TOPIC, 40) as broker:
        yield broker
        # The slot consumers this process cached leave before their broker goes.
        close_consumers()


def offsets(table: pa.Table) -> list[tuple[int, int]]:
    return sorted(zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True))


def test_consumers_choose_after_journal_and_split_the_batch_limit(tmp_path: Path) -> None:
    parsed = options("localhost:1", tmp_path, maxRecordsPerTrigger="100", consumers="3")
    assert (parsed.consumers, parsed.ack_policy) == (3, AckPolicy.AFTER_JOURNAL)
    assert parsed.max_poll_records == 34
    assert options("localhost:1", tmp_path).max_poll_records == 2000
    with pytest.raises(SourceOptionError, match=r"'consumers' .*'acknowledge'"):
        options("localhost:1", tmp_path, acknowledge="afterCommit")
    with pytest.raises(SourceOptionError, match=r"'consumers' .*'journalPath'"):
        options("localhost:1", tmp_path, journalPath="hdfs://namenode/journal")


def journal_rows(offsets_: list[int]) -> pa.RecordBatch:
    return source_record_batch(
        key=None, value=b"x", topic=TOPIC, partition=0, offset=offsets_, timestamp=0,
        timestampType=0, headers=[[]] * len(offsets_), deliveryCount=1,
    )


def test_the_first_writer_of_a_slot_wins(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path))
    first = journal_rows([])
    assert journal.write_slot(1, 0, first)
    assert not journal.write_slot(1, 0, first)
    assert journal.read_slot(1, 1) is None
    assert journal.entries() == [(1, 0)]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp")] == []


def test_a_slot_is_a_chain_of_parts_complete_once_its_last_part_exists(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path))
    assert journal.write_slot(1, 0, journal_rows([0, 1]), part=0, last=False)
    assert journal.read_slot(1, 0) is None  # unfinished: a reader must not take it as whole
    parts, complete = journal.slot_parts(1, 0)
    assert (len(parts), complete) == (1, False)
    assert not journal.write_slot(1, 0, journal_rows([7]), part=0, last=True)
    assert journal.write_slot(1, 0, journal_rows([2]), part=1, last=True)
    assert journal.read_slot(1, 0)["offset"].to_pylist() == [0, 1, 2]
    assert journal.read(1, 0).num_rows == 3
    assert journal.entries() == [(1, 0)]
    assert journal.write_slot(2, 1, journal_rows([]), part=0, last=False)
    assert journal.purge(1) == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{2:020d}-0001.arrow"]


def test_a_slot_polls_until_its_share_is_filled(broker: EmbeddedBroker, tmp_path: Path) -> None:
    opts = options(broker.bootstrap_servers, tmp_path / "journal", maxRecordsPerTrigger="40",
                   **{"kafka.max.poll.records": "5"})
    journal = Journal(opts.journal_path)
    part = SlotPartition(1, 0, "run", idle_ms=5000)
    polled = read_slot(opts, journal, part)
    assert polled.num_rows == 20  # the slot's share of 40 over two consumers, 5 per poll
    written = sorted(p.name for p in (tmp_path / "journal").glob("*.arrow"))
    assert f"{1:020d}-0000.arrow" in written and len(written) >= 4
    assert offsets(read_slot(opts, journal, part)) == offsets(polled)
    close_consumers()  # the embedded broker never gives two members one partition
    with share_consumer(broker.bootstrap_servers, GROUP, [TOPIC]) as other:
        rest = consume(other, until=count_at_least(20), timeout=30)
    assert {(d.partition, d.offset) for d in rest}.isdisjoint(offsets(polled))
    assert len({(d.partition, d.offset) for d in rest}) == 20


def test_a_task_carries_on_a_slot_its_dead_writer_left_unfinished(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    opts = options(broker.bootstrap_servers, tmp_path / "journal", maxRecordsPerTrigger="20")
    journal = Journal(opts.journal_path)
    # Part 0 of a writer that died before the slot's next part (its records ACCEPTed).
    assert journal.write_slot(1, 0, journal_rows([1000, 1001]), part=0, last=False)
    slot = read_slot(opts, journal, SlotPartition(1, 0, "run", idle_ms=5000))
    assert slot["offset"].to_pylist()[:2] == [1000, 1001]
    assert 2 < slot.num_rows <= 12
    assert journal.read_slot(1, 0) is not None
    assert offsets(journal.read(1, 0)) == offsets(slot)


def test_a_slot_polls_journals_and_accepts_then_reads_its_segment(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    opts = options(broker.bootstrap_servers, tmp_path / "journal", maxRecordsPerTrigger="20")
    journal = Journal(opts.journal_path)
    part = SlotPartition(1, 0, "run", idle_ms=5000)
    polled = read_slot(opts, journal, part)
    assert 0 < polled.num_rows <= 10
    # A second action, a retried or a speculative attempt reads the same records.
    assert offsets(read_slot(opts, journal, part)) == offsets(polled)
    # ACCEPTed: another member never sees them again (once the slot's consumer left: the
    # embedded broker never gives two members one partition).
    close_consumers()
    with share_consumer(broker.bootstrap_servers, GROUP, [TOPIC]) as other:
        rest = consume(other, until=count_at_least(40 - polled.num_rows), timeout=30)
    assert not {(d.partition, d.offset) for d in rest} & set(offsets(polled))
    assert len({(d.partition, d.offset) for d in rest}) == 40 - polled.num_rows
    report = json.loads(
        (tmp_path / "journal" / "_metrics" / "slots" / f"{1:020d}-0000.json").read_text()
    )
    assert (report["records"], report["acknowledged"]) == (polled.num_rows, polled.num_rows)
    by_partition: dict[int, list[int]] = {}
    for partition, offset in offsets(polled):
        by_partition.setdefault(partition, []).append(offset)
    assert {(e["topic"], e["partition"], e["records"], e["last_offset"])
            for e in report["partitions"]} == {
        (TOPIC, p, len(found), max(found)) for p, found in by_partition.items()}


def test_an_attempt_that_loses_the_race_releases_its_records(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    opts = options(broker.bootstrap_servers, tmp_path / "journal", maxRecordsPerTrigger="20")
    journal = Journal(opts.journal_path)
    empty = journal_rows([])
    assert journal.write_slot(1, 0, empty)  # the winner, which found nothing
    loser = SlotConsumer(opts)
    try:
        # Called past the segment check, as an attempt racing the winner would be.
        got = loser.fill(journal, SlotPartition(1, 0, "run", idle_ms=5000), [])
        assert got.num_rows == 0
        assert loser.session.stats.released > 0
    finally:
        loser.close()
    with share_consumer(broker.bootstrap_servers, GROUP, [TOPIC]) as other:
        again = consume(other, until=count_at_least(40), timeout=30)
    assert len({(d.partition, d.offset) for d in again}) == 40


def test_a_consumer_no_slot_used_for_the_session_timeout_leaves_the_group(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    opts = options(broker.bootstrap_servers, tmp_path / "journal", maxRecordsPerTrigger="20",
                   sessionTimeoutMs="1000")
    polled = read_slot(opts, Journal(opts.journal_path), SlotPartition(1, 0, "run", idle_ms=5000))
    assert polled.num_rows > 0
    leases = tmp_path / "journal" / LEASES_DIR
    assert len(list(leases.glob("*.json"))) == 1
    # Left the group: its lease goes with it, and the partitions it held are another's.
    deadline = time.monotonic() + 30
    while list(leases.glob("*.json")):
        assert time.monotonic() < deadline, "the idle consumer did not leave the group"
        time.sleep(0.05)
    with share_consumer(broker.bootstrap_servers, GROUP, [TOPIC]) as other:
        rest = consume(other, until=count_at_least(40 - polled.num_rows), timeout=30)
    assert len({(d.partition, d.offset) for d in rest}) == 40 - polled.num_rows
