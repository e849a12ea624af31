"""The lock budget and per-batch metrics of the source runner, on a real embedded broker.

The planner is driven directly, as Spark's source runner would: each ``latest(start)`` call
ACCEPTs the batch planned by the previous call. ``lockDurationMs`` is what the budget measures
against; the broker's own lock is kept long, so no record is taken back unless a test says so.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pyarrow.compute as pc
import pytest
from helpers.planning import broker_fixture, planner_options

from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.source.batch_planner import BatchPlanner
from kafka_share_eos.source.journal import Journal
from kafka_share_eos.source.metrics import BatchMetrics
from kafka_share_eos.source.metrics_store import MetricsStore
from kafka_share_eos.source.options import AckPolicy

pytestmark = pytest.mark.timeout(120)

TOPIC = "payments"
GROUP = "payments-eos"
RECORDS = 60
LOCK_MS = 300
# Longer than the warn fraction (0.8) of LOCK_MS: the batch is over budget whatever else happens.
OVER_BUDGET_S = 0.5


broker = broker_fixture(TOPIC, RECORDS)


def planner_for(broker: EmbeddedBroker, journal: Path, **extra: str) -> BatchPlanner:
    options = planner_options(
        broker, TOPIC, GROUP, journal, **{"maxRecordsPerTrigger": "20", **extra}
    )
    return BatchPlanner(options, Journal(options.journal_path))


def metrics(journal: Path) -> dict[int, BatchMetrics]:
    return {m.seq: m for m in MetricsStore(str(journal)).read_all()}


def budget_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records
        if r.levelno == logging.WARNING and "record lock (lockDurationMs)" in r.getMessage()
    ]


def test_a_batch_over_budget_is_named_in_a_warning(
    broker: EmbeddedBroker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kafka_share_eos.source")
    planner = planner_for(broker, tmp_path, lockDurationMs=str(LOCK_MS))
    assert planner.latest(0, None) == 1
    time.sleep(OVER_BUDGET_S)  # the batch runs in foreachBatch, holding its records' locks
    assert planner.latest(1, None) == 2
    planner.close()

    (warning,) = [w for w in budget_warnings(caplog) if w.startswith("kafka-share batch 1 ")]
    assert f"of the {LOCK_MS} ms record lock" in warning
    assert "group.share.record.lock.duration.ms" in warning
    assert "maxRecordsPerTrigger" in warning and "acknowledge=afterJournal" in warning
    first = metrics(tmp_path)[1]
    assert first.ack_policy == "afterCommit"
    assert first.records == first.acknowledged == 20
    assert first.lock_held_ms >= OVER_BUDGET_S * 1000
    assert first.lock_budget_used == pytest.approx(first.lock_held_ms / LOCK_MS, rel=1e-3)
    assert first.lock_budget_used > 0.8
    # With the default action the policy stays as configured.
    assert planner.policy is AckPolicy.AFTER_COMMIT


def test_switch_to_after_journal_accepts_the_next_batch_at_its_journal_write(
    broker: EmbeddedBroker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kafka_share_eos.source")
    planner = planner_for(
        broker, tmp_path, lockDurationMs=str(LOCK_MS), lockBudgetAction="switchToAfterJournal"
    )
    assert planner.latest(0, 20) == 1
    assert planner.stats is not None and planner.stats.accepted == 0
    time.sleep(OVER_BUDGET_S)
    second = planner.latest(1, 20)
    assert planner.policy is AckPolicy.AFTER_JOURNAL
    # Batch 2 is ACCEPTed before Spark even runs it (and the pump may be polling batch 3
    # already), and its metrics exist already.
    assert planner.stats.accepted >= 20 + metrics(tmp_path)[second].records
    time.sleep(OVER_BUDGET_S)
    third = planner.latest(second, 20)
    planner.close()

    entries = metrics(tmp_path)
    assert [entries[s].ack_policy for s in sorted(entries)] == [
        "afterCommit", "afterJournal", "afterJournal"
    ]
    assert sorted(entries) == [1, second, third]
    # Under afterJournal a poll's records are held only while they are journaled.
    assert all(entries[s].lock_held_ms > 0 for s in (second, third))
    assert all(entries[s].acknowledged == entries[s].records for s in entries)
    switches = [r.getMessage() for r in caplog.records if "switches to" in r.getMessage()]
    assert len(switches) == 1
    assert "after batch 1 " in switches[0]


def test_metrics_count_polled_and_redelivered_records(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    # A first query stops before Spark commits its batch: its records are RELEASEd.
    stopped = planner_for(broker, tmp_path / "stopped", maxRecordsPerTrigger="15")
    assert stopped.latest(0, None) == 1
    released = Journal(str(tmp_path / "stopped")).read(1).num_rows
    stopped.close()
    assert MetricsStore(str(tmp_path / "stopped")).read_all() == []  # never settled

    journal = Journal(str(tmp_path / "journal"))
    planner = planner_for(broker, tmp_path / "journal", pollTimeoutMs="2000")
    expected: dict[int, tuple[int, int]] = {}
    start = 0
    while (end := planner.latest(start, None)) != start:
        # Read the batch before the next planning settles and purges it.
        table = journal.read(end)
        again = pc.sum(pc.greater(table.column("deliveryCount"), 1)).as_py() or 0
        expected[end] = (table.num_rows, again)
        start = end
    planner.close()

    entries = metrics(tmp_path / "journal")
    assert {seq: (m.records, m.redelivered) for seq, m in entries.items()} == expected
    assert sum(m.records for m in entries.values()) == RECORDS
    assert sum(m.redelivered for m in entries.values()) == released == 15
    assert sum(m.acknowledged for m in entries.values()) == RECORDS
    assert sum(m.ack_failures + m.ack_failed_partitions for m in entries.values()) == 0
    for m in entries.values():
        assert m.first_seq == m.seq and m.ack_policy == "afterCommit"
        assert m.lock_budget_used == pytest.approx(m.lock_held_ms / 30_000, rel=1e-3)
        assert m.planned_at <= m.settled_at
    # Every batch was settled and purged; the metrics stay.
    assert journal.sequences() == []
