"""``maxRecordsPerTrigger`` as a hard cap with executor consumers, against a real embedded
broker: a poll beyond a slot's share (as Apache Kafka returns whole producer batches) is
journaled into the same slot of the next batches and ACCEPTed with its poll, so no batch holds
more than the cap and no record is released to come back with a higher delivery count.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import broker_holding
from helpers.slots import TOPIC, options

from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.metrics import BatchMetrics
from kafka_share_eos.journal.schema import JOURNAL_SCHEMA
from kafka_share_eos.source.session import ShareSession
from kafka_share_eos.source.slot_planner import SlotPlanner
from kafka_share_eos.source.slots import CARRIED, SlotPartition, close_consumers, read_slot

pytestmark = pytest.mark.timeout(120)

RECORDS = 40


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    with broker_holding(TOPIC, RECORDS) as broker:
        yield broker
        close_consumers()


def test_the_shares_of_the_slots_add_up_to_the_cap_exactly(tmp_path: Path) -> None:
    parsed = options("localhost:1", tmp_path, maxRecordsPerTrigger="100", consumers="3")
    assert [parsed.slot_records(slot) for slot in range(4)] == [34, 33, 33, 0]
    assert options("localhost:1", tmp_path).slot_records(1) == 2000


def test_a_poll_beyond_the_share_is_carried_into_the_next_batches(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    opts = options(broker.bootstrap_servers, tmp_path / "journal", maxRecordsPerTrigger="20",
                   pollTimeoutMs="500")
    # The embedded broker honours max.poll.records; Apache Kafka's fetches do not.
    opts = dataclasses.replace(
        opts, consumer_config={**opts.consumer_config, "max.poll.records": "35"}
    )
    journal = Journal(opts.journal_path)
    first = read_slot(opts, journal, SlotPartition(1, 0, "run", idle_ms=5000))
    assert first.num_rows == 10  # slot 0's share of 20 over two consumers
    carried = [seq for seq, slot in journal.entries() if seq > 1 and slot == 0]
    assert carried, "the first poll brought more than the share: the rest waits in later slots"
    batches = [first]
    for seq in range(2, 12):
        batches.append(read_slot(opts, journal, SlotPartition(seq, 0, "run", idle_ms=0)))
        if sum(table.num_rows for table in batches) == RECORDS:
            break
    assert max(table.num_rows for table in batches) <= 10
    records = pa.concat_tables(batches)
    seen = list(zip(records["partition"].to_pylist(), records["offset"].to_pylist(),
                    strict=True))
    assert len(seen) == len(set(seen)) == RECORDS
    assert set(records["deliveryCount"].to_pylist()) == {1}  # nothing released, nothing again
    # A carried batch is read from the journal as written: a replay sees the same records.
    assert journal.read_slot(carried[0], 0) == batches[carried[0] - 1]
    reports = sorted((tmp_path / "journal" / "_metrics" / "slots").glob("*.json"))
    entries = [BatchMetrics.from_json(path.read_text(), str(path)).consumers[0]
               for path in reports]
    assert any(entry.get(CARRIED) for entry in entries)


def test_the_planner_plans_carried_batches_one_by_one(tmp_path: Path) -> None:
    opts = options("localhost:1", tmp_path / "journal", maxRecordsPerTrigger="20")
    journal = Journal(opts.journal_path)
    planner = SlotPlanner(opts, journal)
    # Carried by a run with four consumers into slot 3 of batches 2 and 3.
    for seq in (2, 3):
        assert journal.write_slot(seq, 3, pa.RecordBatch.from_pylist([], schema=JOURNAL_SCHEMA))
    assert planner.latest(0) == 1
    assert planner.latest(1) == 2  # not 3: each carried batch is a micro-batch of its own
    planned = [(p.seq, p.slot) for p in planner.partitions(1, 2) if isinstance(p, SlotPartition)]
    assert planned == [(2, 0), (2, 1), (2, 2), (2, 3)]
    # A slot beyond this run's consumers takes nothing more than what was carried there.
    assert opts.slot_records(3) == 0


def test_a_session_accepts_what_was_journaled_and_releases_the_rest(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    opts = options(broker.bootstrap_servers, tmp_path / "journal")
    session = ShareSession(opts.consumer_config, opts.topics)
    try:
        held: list[object] = []
        for _ in range(30):
            held = session.poll(1000)
            if len(held) >= 4:
                break
            session.settle_journaled(len(held))
        assert len(held) >= 4
        before = dataclasses.replace(session.stats)
        session.settle_journaled(3)
        assert session.stats.accepted - before.accepted == 3
        assert session.stats.released - before.released == len(held) - 3
        assert session.held == []
    finally:
        session.close()
