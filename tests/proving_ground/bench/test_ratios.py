"""The benchmark rows and their targets, reduced from a benchmark's numbers (no benchmark runs)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from kafka_share_eos.cli.bench import markdown
from kafka_share_eos.proving_ground.bench.peer_ratios import consumers_ratios, peers_ratios
from kafka_share_eos.proving_ground.bench.peers import SPARK_KAFKA_ROW
from kafka_share_eos.proving_ground.bench.ratios import Ratio, two_phase_ratios
from kafka_share_eos.proving_ground.bench.spark_kafka import Workload, run_in_tier
from kafka_share_eos.proving_ground.bench.suite import BENCHMARKS, QUICK, SuiteResult, run_suite


def _by_name(rows: list[Ratio]) -> dict[str, Ratio]:
    return {row.name: row for row in rows}


def test_two_phase_per_record_effect_is_held_to_its_statements_at_least_once() -> None:
    result = {
        "rows_per_batch": 20_000, "batches": 5,
        "rows_per_second": {"upsert": 300_000, "2pc_set_effect": 270_000,
                            "2pc_row_effect": 60_000, "2pc_postgres_delta": 220_000,
                            "row_statements_at_least_once": 70_000},
        "ratio_to_upsert": {"2pc_set_effect": 0.9, "2pc_row_effect": 0.2,
                            "2pc_postgres_delta": 0.733},
        "row_effect_vs_at_least_once": 0.857,
    }
    rows = _by_name(two_phase_ratios(result))

    against_statements = rows[
        "two-phase, Postgres per-record SQL effect vs the same statements at least once"]
    assert against_statements.value == 0.857
    assert str(against_statements.target) == "≥ 0.8" and against_statements.meets
    assert "60,000 vs 70,000 rows/s" in against_statements.detail
    # The old comparison stays for reference, without a target.
    against_upsert = rows["two-phase, Postgres per-record SQL effect vs upsert sink"]
    assert against_upsert.target is None and against_upsert.meets is None
    assert str(rows["two-phase, Postgres set-based effect vs upsert sink"].target) == "≥ 0.8"


def test_a_saved_run_without_the_at_least_once_contender_still_reduces() -> None:
    result = {
        "rows_per_batch": 1_000, "batches": 2,
        "rows_per_second": {"upsert": 10, "2pc_set_effect": 9},
        "ratio_to_upsert": {"2pc_set_effect": 0.9},
    }
    assert [row.name for row in two_phase_ratios(result)] == [
        "two-phase, Postgres set-based effect vs upsert sink"]


def _consumers(raw: bool) -> dict[str, Any]:
    entry = {"records_per_second": 10_000.0, "rate_vs_one": 1.0, "driver_cpu_us_per_record": 2.0,
             "driver_cpu_ms_per_batch": 40.0, "driver_cpu_per_batch_vs_one": 1.0,
             "slots": [{"slot": 0, "records": 100}], "members": 1}
    four = {**entry, "rate_vs_one": 1.2, "driver_cpu_ms_per_batch": 48.0,
            "driver_cpu_per_batch_vs_one": 1.2, "members": 4,
            "slots": [{"slot": s, "records": 25 if s else 0} for s in range(4)]}
    if raw:
        four |= {"raw_records_per_second": 15_000.0, "rate_vs_raw": 0.8}
    return {"records": 100, "per_trigger": 50, "partitions": 8, "1": entry, "4": four}


def test_consumers_rows_hold_driver_cpu_per_micro_batch_flat_and_compare_raw_processes() -> None:
    rows = _by_name(consumers_ratios(_consumers(raw=True)))

    cpu = rows["consumers=4 vs 1, driver CPU per micro-batch"]
    assert str(cpu.target) == "≤ 1.1" and cpu.meets is False
    assert "48.0 vs 40.0 ms per micro-batch" in cpu.detail
    raw = rows["consumers=4 vs 4 raw ShareConsumer processes, records per second"]
    assert str(raw.target) == "≥ 0.8" and raw.meets
    assert str(rows["consumers=4 vs 1, records per second"].target) == "≥ 1"
    slots = rows["consumers=4, slots that took records"]
    assert slots.value == 3.0 and slots.meets is False
    assert "consumers=4 vs 4 raw ShareConsumer processes, records per second" not in {
        row.name for row in consumers_ratios(_consumers(raw=False))}


def _peers(spark_kafka: dict[str, Any]) -> dict[str, Any]:
    return {"records": 4_000, "rounds": [{}], "raw_records_per_second": 1_000.0,
            "source_records_per_second": 950.0, "source_vs_raw": 0.95,
            "share_loop_records_per_second": 500.0, "consumer_loop_records_per_second": 1_000.0,
            "share_vs_consumer_group": 0.5, "consumers": _consumers(raw=True),
            "join_raw_s": 5.0, "join_query_s": 5.2, "join_query_planning_s": 4.9,
            "join_ratio": 1.04, "spark_kafka": spark_kafka}


def test_peers_rows_on_apache_kafka_with_and_without_spark_kafka() -> None:
    contest = {"ratio": 0.75, "running_ratio": 0.9, "rounds": [{
        "exactly_once": {"records_per_second": 750.0, "start_s": 5.0},
        "spark_kafka": {"records_per_second": 1_000.0, "start_s": 0.2}}]}
    measured = {"spark": "4.2.0", "records": 2_000, "long_records": 1_000_000,
                "per_trigger": 1_000, "strategies": {"dedup": contest},
                "long": {"dedup": {**contest, "ratio": 1.05}}, "topic_sink": contest}
    rows = _by_name(peers_ratios(_peers(measured)))

    assert rows["kafka-share source, afterJournal, stream rate vs raw ShareConsumer loop, "
                "Apache Kafka"].meets
    assert rows["raw share-group loop vs raw consumer-group loop, Apache Kafka"].target is None
    assert rows["consumers=4 vs 4 raw ShareConsumer processes, records per second, "
                "Apache Kafka"].meets
    # Only the comparison with raw processes: the other consumers rows are the embedded ones'.
    assert not any("driver CPU" in name for name in rows)
    pipeline = rows["end-to-end dedup: kafka-share exactly once vs Spark's Kafka source at least "
                    "once"]
    assert str(pipeline.target) == "≥ 0.8" and pipeline.meets is False
    assert "Spark 4.2.0" in pipeline.detail
    assert "from the first records on 0.90x (start-up 5.0 s against 0.2 s)" in pipeline.detail
    long = rows["end-to-end dedup: kafka-share exactly once vs Spark's Kafka source at least "
                "once, 1M records"]
    assert str(long.target) == "≥ 1" and long.meets and "1M records" in long.detail
    sink = rows["Kafka topic sink exactly once vs Spark's Kafka sink at least once, kafka-share "
                "source"]
    assert str(sink.target) == "≥ 0.9" and sink.meets is False
    join = rows["start() to first record: kafka-share query vs raw ShareConsumer subscribe to "
                "first record, Apache Kafka"]
    assert str(join.target) == "≤ 1.1" and join.meets and "5.20 vs 5.00 s" in join.detail

    without = peers_ratios(_peers({"not_run": "no tier"}))
    assert not any("Spark's Kafka source" in row.name for row in without)


_MACHINE = dict.fromkeys(("cpus", "cpu model", "memory", "os", "python", "spark", "librdkafka",
                          "deltalake", "postgres"), "x")


def test_a_row_not_run_is_shown_with_its_reason() -> None:
    result = SuiteResult(QUICK, _MACHINE,
                         not_run={"kafka peers": {SPARK_KAFKA_ROW: "no tier here"}})

    assert f"| kafka peers | {SPARK_KAFKA_ROW} | not run |  |  | no tier here |" in (
        markdown(result))


def test_a_failed_benchmark_with_a_multi_line_error_keeps_the_table_to_one_row_each() -> None:
    error = ("RuntimeError: the child failed; its output:\n"
             "Traceback (most recent call last):\n  a | b")
    result = SuiteResult(QUICK, _MACHINE, failures={"delta-spark": error})

    table = markdown(result).split("| --- | --- | --- | --- | --- | --- |\n")[1].split("\n\n")[0]
    assert table.splitlines() == [
        "| delta-spark | failed |  |  | **no** | RuntimeError: the child failed; its output: "
        "Traceback (most recent call last): a \\| b |"
    ]


def test_spark_kafka_peer_without_the_pyspark_4_2_tier_is_not_run_with_the_reason(
    tmp_path: Path,
) -> None:
    result = run_in_tier(Workload("127.0.0.1:9", "t", 10, 10, 1, "postgresql://x", "long", 20, 1),
                         python=tmp_path / "missing" / "python")

    assert set(result) == {"not_run"}
    assert "pyspark 4.2" in result["not_run"] and "./dev" in result["not_run"]


def test_a_benchmark_the_workload_leaves_out_is_shown_as_not_run_and_runs_nothing() -> None:
    result = run_suite(replace(QUICK, left_out=tuple(BENCHMARKS)))

    assert result.results == {} and result.ratios == [] and result.failures == {}
    assert set(result.not_run) == set(BENCHMARKS)
    assert "--only" in result.not_run["kafka peers"]["every row"]
    assert set(QUICK.left_out) == {"kafka-topic", "kafka peers", "delta-spark", "object-store",
                                   "metrics", "connect", "iceberg", "slow effect"}
