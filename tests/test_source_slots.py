"""Executor-side slots and their planning, against a real embedded broker, without Spark.

A slot's task polls, journals first-writer-wins and ACCEPTs, poll after poll until its share is
filled; a task that finds its slot complete reads it, one that finds it unfinished carries it
on; one that loses the race RELEASEs what it fetched; a consumer no slot used for the session
timeout leaves the group. The planner plans without a consumer and ends a drain only
on a batch whose every slot found nothing and for which every consumer still in the group polled.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import broker_holding, consume, count_at_least, share_consumer
from helpers.batches import source_record_batch
from typer.testing import CliRunner

from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.cli.main import app
from kafka_share_eos.source.journal import Journal
from kafka_share_eos.source.leases import EXECUTOR, LEASES_DIR
from kafka_share_eos.source.metrics import BatchMetrics
from kafka_share_eos.source.options import AckPolicy, SourceOptionError, SourceOptions
from kafka_share_eos.source.slot_planner import SlotPlanner
from kafka_share_eos.source.slots import (
    SlotConsumer,
    SlotPartition,
    close_consumers,
    read_slot,
)
from kafka_share_eos.source.status import journal_status

pytestmark = pytest.mark.timeout(120)

TOPIC = "jobs"
GROUP = "jobs-eos"


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    with broker_holding(TOPIC, 40) as broker:
        yield broker
        # The slot consumers this process cached leave before their broker goes.
        close_consumers()


def options(bootstrap: str, journal: Path, **extra: str) -> SourceOptions:
    return SourceOptions.parse({
        "kafka.bootstrap.servers": bootstrap, "kafka.share.group.id": GROUP,
        "subscribe": TOPIC, "journalPath": str(journal), "consumers": "2",
        "pollTimeoutMs": "3000", **extra,
    })


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
        options("localhost:1", tmp_path, journalPath="s3://bucket/journal")


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


def test_the_planner_needs_no_consumer_and_ends_a_drain_on_an_empty_batch(
    tmp_path: Path,
) -> None:
    opts = options("localhost:1", tmp_path / "journal")
    journal = Journal(opts.journal_path)
    planner = SlotPlanner(opts, journal)
    planner.drain()
    assert planner.latest(0) == 1
    write_report(tmp_path / "journal", 1, 0, records=3)
    write_report(tmp_path / "journal", 1, 1, records=0)
    assert planner.latest(1) == 2  # records came: the drain goes on
    write_report(tmp_path / "journal", 2, 0, records=0)
    assert planner.latest(2) == 3  # slot 1 did not report: it may have found records
    write_report(tmp_path / "journal", 3, 0, records=0)
    write_report(tmp_path / "journal", 3, 1, records=0)
    # Every slot found nothing in a quick poll: the next batch's slots wait the idle time.
    assert planner.latest(3) == 4
    idle = {p.seq: p.idle_ms for p in planner.partitions(0, 4) if isinstance(p, SlotPartition)}
    assert idle == {1: 0, 2: 0, 3: 0, 4: opts.available_now_idle_ms}
    write_report(tmp_path / "journal", 4, 0, records=0)
    write_report(tmp_path / "journal", 4, 1, records=0)
    assert planner.latest(4) == 4  # every slot waited and found nothing: the drain ends
    status = journal_status(str(tmp_path / "journal"))
    assert [m.seq for m in status.batches] == [1, 2, 3, 4]
    assert status.consumers == [{"slot": 0, "records": 3}, {"slot": 1, "records": 0}]
    env = {"COLUMNS": "200", "NO_COLOR": "1"}
    shown = CliRunner().invoke(app, ["status", "--journal", opts.journal_path, "--json"], env=env)
    assert json.loads(shown.stdout)["consumers"] == status.consumers
    table = CliRunner().invoke(app, ["status", "--journal", opts.journal_path], env=env)
    assert "records per consumer" in table.output


def write_report(
    journal: Path, seq: int, slot: int, records: int, member: str = "m"
) -> None:
    directory = journal / "_metrics" / "slots"
    directory.mkdir(parents=True, exist_ok=True)
    report = BatchMetrics(
        seq=seq, first_seq=seq, records=records, redelivered=0, acknowledged=records,
        ack_failures=0, ack_failed_partitions=0, lock_held_ms=5.0, lock_budget_used=0.0,
        ack_policy="afterJournal", planned_at="2026-01-01T00:00:00+00:00",
        settled_at="2026-01-01T00:00:01+00:00",
        consumers=[{"slot": slot, "records": records, "member": member}],
    )
    (directory / f"{seq:020d}-{slot:04d}.json").write_text(report.to_json())


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


def test_a_drain_ends_once_every_consumer_in_the_group_found_nothing(tmp_path: Path) -> None:
    opts = options("localhost:1", tmp_path / "journal")
    planner = SlotPlanner(opts, Journal(opts.journal_path))
    planner.drain()
    assert planner.latest(0) == 1
    # Three live members (this process) take turns at two slots.
    for member in ("a", "b", "c"):
        (tmp_path / "journal" / LEASES_DIR / f"{member}.json").write_text(json.dumps(
            {"run": planner.run, "until": time.time() + 60, "kind": EXECUTOR,
             "host": socket.gethostname(), "pid": os.getpid()}
        ))
    write_report(tmp_path / "journal", 1, 0, records=5, member="a")
    write_report(tmp_path / "journal", 1, 1, records=5, member="c")
    assert planner.latest(1) == 2
    write_report(tmp_path / "journal", 2, 0, records=0, member="a")
    write_report(tmp_path / "journal", 2, 1, records=0, member="b")
    assert planner.latest(2) == 3  # the next batch listens
    write_report(tmp_path / "journal", 3, 0, records=0, member="a")
    write_report(tmp_path / "journal", 3, 1, records=0, member="b")
    # Every slot found nothing, but "c" found records last time and may hold more partitions.
    assert planner.latest(3) == 4
    write_report(tmp_path / "journal", 4, 0, records=0, member="c")
    write_report(tmp_path / "journal", 4, 1, records=0, member="b")
    assert planner.latest(4) == 4
