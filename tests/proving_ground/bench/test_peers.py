"""The Apache Kafka peers at tiny sizes: every comparison runs on one broker and reads every record,
Spark's Kafka source and sink in the pyspark 4.2 tier when that tier exists (the Kafka topic
sink's output holding each record once), and the rows are well formed.

Timings are not asserted. Marked full: a broker, four Spark applications and the tier's.
"""

from __future__ import annotations

import math

import pytest

from kafka_share_eos.proving_ground.bench import spark_kafka
from kafka_share_eos.proving_ground.bench.peer_ratios import peers_ratios
from kafka_share_eos.proving_ground.bench.peers import SPARK_KAFKA_ROW, run

pytestmark = [pytest.mark.full, pytest.mark.spark, pytest.mark.kafka, pytest.mark.postgres,
              pytest.mark.timeout(1200)]


def test_every_peer_reads_every_record_and_rows_are_well_formed() -> None:
    result = run(records=4_000, poll_records=1_000, consumers_records=4_000,
                 consumers_per_trigger=1_000, pipeline_records=2_000, pipeline_per_trigger=1_000,
                 rounds=1, long_records=3_000)

    rows = {row.name: row for row in peers_ratios(result)}
    for row in rows.values():
        assert math.isfinite(row.value) and row.value > 0, row
    assert str(rows["kafka-share source, afterJournal, stream rate vs raw ShareConsumer loop, "
                    "Apache Kafka"].target) == "≥ 0.9"
    assert rows["raw share-group loop vs raw consumer-group loop, Apache Kafka"].target is None
    join = rows["start() to first record: kafka-share query vs raw ShareConsumer subscribe to "
                "first record, Apache Kafka"]
    assert str(join.target) == "≤ 1.1" and result["join_raw_s"] > 0
    for n in (2, 4):
        name = f"consumers={n} vs {n} raw ShareConsumer processes, records per second, Apache Kafka"
        assert str(rows[name].target) == "≥ 0.8"
    peer = result["spark_kafka"]
    if not spark_kafka.TIER_PYTHON.exists():
        assert result["not_run"] == {SPARK_KAFKA_ROW: peer["not_run"]}
        return
    assert peer["spark"].startswith("4.2")
    for strategy in ("upsert, Postgres", "upsert, Delta", "dedup", "two-phase"):
        row = rows[f"end-to-end {strategy}: kafka-share exactly once vs Spark's Kafka source "
                   "at least once"]
        assert str(row.target) == "≥ 0.8"
        long = rows[f"end-to-end {strategy}: kafka-share exactly once vs Spark's Kafka source "
                    "at least once, 3k records"]
        assert str(long.target) == "≥ 1"
        assert peer["long"][strategy]["rounds"][0]["exactly_once"]["records"] == 3_000
    sink = rows["Kafka topic sink exactly once vs Spark's Kafka sink at least once, kafka-share "
                "source"]
    assert str(sink.target) == "≥ 0.9"
    for sides in peer["topic_sink"]["rounds"]:
        assert sides["exactly_once"]["committed_output"] == 2_000
        assert sides["spark_kafka"]["committed_output"] >= 2_000
