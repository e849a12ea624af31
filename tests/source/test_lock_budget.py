"""The lock budget of the source runner, on a real embedded broker.

The planner is driven directly, as Spark's source runner would: each ``latest(start)`` call
ACCEPTs the batch planned by the previous call. ``lockDurationMs`` is what the budget measures
against; the broker's own lock is kept long, so no record is taken back unless a test says so.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from helpers.planned_payments import RECORDS, TOPIC, metrics, planner_for
from helpers.planning import broker_fixture

from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.source.options import AckPolicy

pytestmark = pytest.mark.timeout(120)

LOCK_MS = 300
# Longer than the warn fraction (0.8) of LOCK_MS: the batch is over budget whatever else happens.
OVER_BUDGET_S = 0.5


broker = broker_fixture(TOPIC, RECORDS)


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
    assert "kafka.max.poll.records" in warning and "acknowledge=afterJournal" in warning
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
