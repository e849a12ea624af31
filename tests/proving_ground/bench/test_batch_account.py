"""The per-batch account: steps and gaps from Spark's progress, CPU per process, the table; and
once end to end on Apache Kafka in the pyspark 4.2 tier (marked full)."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import psutil
import pytest

from kafka_share_eos.proving_ground.bench.batch_account import (
    SKIPPED_BATCHES,
    STEPS,
    account,
    cpu_spent,
    process_kind,
    run,
    table,
)
from kafka_share_eos.proving_ground.bench.tier import TIER_PYTHON

START = dt.datetime(2026, 12, 7, 12, tzinfo=dt.UTC)


def _progress(index: int, trigger_ms: int) -> dict[str, object]:
    at = START + dt.timedelta(seconds=index)
    steps = {"latestOffset": 5, "queryPlanning": 10, "walCommit": 20, "addBatch": 100 + index,
             "commitOffsets": 30}
    return {"timestamp": at.isoformat().replace("+00:00", "Z"),
            "durationMs": {**steps, "triggerExecution": trigger_ms}}


def test_the_steady_batches_give_each_step_its_median_and_the_rest() -> None:
    progress = [_progress(i, 900 if i < 2 else 400) for i in range(7)]

    result = account(progress, [500.0, 500.0, 80.0, 90.0, 100.0, 70.0, 60.0],
                     {"jvm": 3.5, "source runner": 0.7}, len(progress))

    # The first two batches are left out: addBatch of batches 2..6 is 102..106.
    assert result["steps_ms"]["addBatch"] == 104
    assert result["steps_ms"]["other in triggerExecution"] == 400 - (5 + 10 + 20 + 104 + 30)
    assert result["read_in_addBatch_ms"] == 80.0
    # One batch a second, each 400 ms long.
    assert result["gap_between_batches_ms"] == pytest.approx(600.0)
    assert result["cpu_ms_per_batch"] == {"jvm": 500.0, "source runner": 100.0}


def test_cpu_is_counted_per_kind_and_a_process_seen_only_after_counts_whole() -> None:
    before = {1: ("jvm", 10.0), 2: ("source runner", 1.0)}
    after = {1: ("jvm", 12.5), 2: ("source runner", 1.0), 3: ("source runner", 0.75)}

    assert cpu_spent(before, after) == {"jvm": 2.5, "source runner": 0.75}


def test_this_test_process_is_a_driver_python() -> None:
    assert process_kind(psutil.Process(os.getpid())) == "driver python"


def test_the_table_has_a_row_per_step_and_a_column_per_side_and_round() -> None:
    progress = [_progress(i, 400) for i in range(5)]
    each = account(progress, [50.0] * 5, {"jvm": 1.0}, 5)
    text = table({"sides": {"kafka-share": [each], "spark kafka": [each, each]}})

    lines = text.splitlines()
    assert lines[0].count("|") == 5  # the steps' column and three sides' rounds
    for step in STEPS:
        assert any(line.startswith(f"| {step} |") for line in lines), step
    assert "| CPU: jvm | 200.0 | 200.0 | 200.0 |" in lines


def test_without_the_tier_the_account_says_it_was_not_run() -> None:
    result = run(python=Path("/nonexistent/python"))

    assert "pyspark 4.2 tier" in result["not_run"]
    assert table(result).startswith("not run:")


@pytest.mark.full
@pytest.mark.spark
@pytest.mark.kafka
@pytest.mark.timeout(1200)
def test_both_sides_are_accounted_on_apache_kafka() -> None:
    if not TIER_PYTHON.exists():
        pytest.fail(f"{TIER_PYTHON} is missing: ./dev makes the pyspark 4.2 tier")
    result = run(records=30_000, per_trigger=5_000, rounds=1)

    for side in ("kafka-share", "spark kafka"):
        (each,) = result["sides"][side]
        # Every record was read (else the run raises), in at least two steady batches.
        assert each["batches"] >= SKIPPED_BATCHES + 2, (side, each)
        assert each["trigger_ms"] > 0 and each["read_in_addBatch_ms"] > 0
        assert each["cpu_ms_per_batch"]["jvm"] > 0
    assert result["sides"]["kafka-share"][0]["cpu_ms_per_batch"]["source runner"] > 0
