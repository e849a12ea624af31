"""The source benchmark's rounds: each round reads every record in groups of its own, and the
reported numbers are the medians over the rounds (ratios taken within each round).

Timings are not asserted: only that every contender read everything, and the arithmetic.
"""

from __future__ import annotations

import statistics

import pytest

from kafka_share_eos.proving_ground.bench.source import run


def test_rounds_read_every_record_and_report_medians() -> None:
    result = run(records=3_000, partitions=3, poll_records=500, spark=False, rounds=2)

    rounds = result["rounds"]
    assert len(rounds) == 2
    for measured in rounds:
        assert measured["raw"]["records"] == 3_000
        assert measured["planner"]["records"] == 3_000
    for key in ("seconds", "records_per_second", "throughput_ratio_vs_raw"):
        assert result["planner"][key] == statistics.median(r["planner"][key] for r in rounds)
    assert result["runner_cpu_us_per_record"] == result["planner"]["cpu_us_per_record"]


def test_rounds_must_be_positive() -> None:
    with pytest.raises(ValueError, match="rounds"):
        run(records=10, spark=False, rounds=0)
