"""Per-batch metrics of the source runner, on a real embedded broker.

The planner is driven directly, as Spark's source runner would: each ``latest(start)`` call
ACCEPTs the batch planned by the previous call.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest
from helpers.planned_payments import RECORDS, TOPIC, metrics, planner_for
from helpers.planning import broker_fixture

from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.metrics_store import MetricsStore

pytestmark = pytest.mark.timeout(120)


broker = broker_fixture(TOPIC, RECORDS)


def test_metrics_count_polled_and_redelivered_records(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    # A first query stops before Spark commits its batch: its records are RELEASEd.
    stopped = planner_for(broker, tmp_path / "stopped", **{"kafka.max.poll.records": "15"})
    assert stopped.latest(0, None) == 1
    released = Journal(str(tmp_path / "stopped")).read(1).num_rows
    stopped.close()
    assert MetricsStore(str(tmp_path / "stopped")).read_all() == []  # never settled

    journal = Journal(str(tmp_path / "journal"))
    planner = planner_for(broker, tmp_path / "journal", pollTimeoutMs="2000")
    expected: dict[int, tuple[int, int]] = {}
    last_offsets: dict[int, dict[int, tuple[int, int]]] = {}
    start = 0
    while (end := planner.latest(start, None)) != start:
        # Read the batch before the next planning settles and purges it.
        table = journal.read(end)
        again = pc.sum(pc.greater(table.column("deliveryCount"), 1)).as_py() or 0
        expected[end] = (table.num_rows, again)
        last_offsets[end] = {
            p: (len(offsets), max(offsets)) for p in set(table["partition"].to_pylist())
            if (offsets := [o for o, q in zip(table["offset"].to_pylist(),
                                              table["partition"].to_pylist(), strict=True)
                            if q == p])}
        start = end
    planner.close()

    entries = metrics(tmp_path / "journal")
    assert {seq: (m.records, m.redelivered) for seq, m in entries.items()} == expected
    assert sum(m.records for m in entries.values()) == RECORDS
    # Per partition: the records polled from it and the highest offset among them.
    assert {seq: {e["partition"]: (e["records"], e["last_offset"]) for e in m.partitions}
            for seq, m in entries.items()} == last_offsets
    assert {e["topic"] for m in entries.values() for e in m.partitions} == {TOPIC}
    assert sum(m.redelivered for m in entries.values()) == released == 15
    assert sum(m.acknowledged for m in entries.values()) == RECORDS
    assert sum(m.ack_failures + m.ack_failed_partitions for m in entries.values()) == 0
    for m in entries.values():
        assert m.first_seq == m.seq and m.ack_policy == "afterCommit"
        assert m.lock_budget_used == pytest.approx(m.lock_held_ms / 30_000, rel=1e-3)
        assert m.planned_at <= m.settled_at
    # Every batch was settled and purged; the metrics stay.
    assert journal.sequences() == []
