"""The slow-effect benchmark: every contender writes every record of its one-partition topic,
the exactly-once ones each once, and its rows say "slow effect", the records per second held
to 0.95x and the latency given for reference.

Timings are not asserted. The run is marked full: a broker and the pyspark 4.2 tier's Spark
with four contenders.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from kafka_share_eos.proving_ground.bench.slow_effect import (
    LATENCY_ROW,
    ROW,
    SIDES,
    run,
    slow_effect_ratios,
    topics,
)
from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster


def _side(rate: float, p99: float) -> dict[str, Any]:
    return {"records_per_second": rate, "latency_p50_s": p99 / 2, "latency_p99_s": p99,
            "start_s": 6.0}


def test_the_rows_hold_records_per_second_to_095_and_give_the_latency() -> None:
    result = {"spark": "4.2.0", "records": 12_000, "paced_records": 2_000, "paced_rate": 500,
              "per_trigger": 2_000, "ratio": 0.97, "latency_ratio": 1.2,
              "rounds": [{"share_eos": _side(1_746, 1.2), "kafka_alo": _side(1_800, 1.0),
                          "share_alo": _side(1_760, 1.1), "kafka_eos": _side(1_790, 1.0),
                          "ratio": 0.97}]}

    rate, latency = slow_effect_ratios(result)

    assert "slow effect" in rate.name and "slow effect" in latency.name
    assert (rate.benchmark, rate.value, rate.target_text, rate.meets) == (
        "slow effect", 0.97, "≥ 0.95x", True)
    assert "1,746 vs 1,800 records/s" in rate.detail and "12k records" in rate.detail
    assert (latency.value, latency.target) == (1.2, None)
    assert "1,200 vs 1,000 ms" in latency.detail
    assert slow_effect_ratios({"not_run": {ROW: "no tier"}}) == []


def test_every_run_reads_a_topic_of_its_own() -> None:
    names = topics(2)
    assert len(names) == len(set(names)) == 3 * len(SIDES)
    assert all(name.startswith("bench-slow-effect-") and "_" not in name for name in names)


@pytest.mark.full
@pytest.mark.spark
@pytest.mark.kafka
@pytest.mark.postgres
@pytest.mark.timeout(1200)
def test_every_contender_writes_every_record(kafka_cluster: KafkaCluster,
                                             postgres_url: str) -> None:
    result = run(records=600, paced_records=100, paced_rate=200, per_trigger=300, rounds=1,
                 kafka=kafka_cluster, postgres_url=postgres_url)

    (measured,) = result["rounds"]
    for side in SIDES:
        entry = measured[side]
        assert entry["distinct_offsets"] == entry["records"] == 700, (side, entry)
        assert entry["last_offset"] == 699
        # Spark counts a batch's input rows per action, so the table, not the progress, counts.
        assert entry["batches"], side
    for side in ("share_eos", "kafka_eos"):
        assert measured[side]["rows"] == 700
    rows = {row.name: row for row in slow_effect_ratios(result)}
    assert set(rows) == {ROW, LATENCY_ROW}
    assert all(math.isfinite(row.value) and row.value > 0 for row in rows.values())
