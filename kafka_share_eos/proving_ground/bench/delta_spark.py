"""The two Delta engines side by side: delta-spark's MERGE on the executors, delta-rs in the driver.

For each batch size, three tables start from one batch of that size (so every contender writes
into a table as a running stream finds it), then take one timed batch of new keys each:

- ``spark_append``: delta-spark's plain append of the batch (``format("delta")``, no lookup);
- ``spark_upsert``: ``IdempotentUpsertSink.delta(engine="spark")``, one MERGE;
- ``delta_rs_upsert``: ``IdempotentUpsertSink.delta()`` through Spark's ``foreachBatch`` path:
  the batch collected to the driver as Arrow, written with delta-rs.

The batch is a cached DataFrame shaped like the kafka-share source's rows, so its making is not
timed. The benchmark runs in the delta-spark environment (.venv-delta-spark, whose pyspark
delta-spark accepts) as a child process:
``python -m kafka_share_eos.proving_ground.bench.delta_spark ROWS...`` prints the JSON that
:func:`run` returns; :func:`run_in_tier` starts it from another environment.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafka_share_eos.proving_ground.bench.ratios import Ratio, Target, count
from kafka_share_eos.proving_ground.bench.tier import TIER_PYTHON, run_module

SIZES = (20_000, 1_000_000)
"""The batch sizes measured: a small stream's batch and a large one."""
TIMEOUT_S = 1800.0


def run(sizes: Sequence[int]) -> dict[str, Any]:
    """Rows per second of the three contenders at each batch size."""
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session

    spark = local_spark_session("kafka-share-eos-bench-delta-spark", delta_spark=True)
    try:
        return {"sizes": {str(n): _measure(spark, n) for n in sizes}}
    finally:
        spark.stop()


def _measure(spark: Any, rows: int) -> dict[str, float]:
    from kafka_share_eos.strategies import IdempotentUpsertSink

    def batch(first: int) -> Any:
        frame = spark.range(first, first + rows).selectExpr(
            "'orders' AS topic", "CAST(id % 8 AS INT) AS partition",
            "CAST(id DIV 8 AS BIGINT) AS offset", "unhex(repeat('00', 100)) AS value",
        ).persist()
        frame.count()
        return frame

    seeded, timed = batch(0), batch(rows)
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="kse-bench-delta-spark-") as directory:
        append_path = f"{directory}/append"
        seeded.write.format("delta").save(append_path)
        started = time.perf_counter()
        timed.write.format("delta").mode("append").save(append_path)
        seconds["spark_append"] = time.perf_counter() - started
        for name, engine in (("spark_upsert", "spark"), ("delta_rs_upsert", "delta-rs")):
            sink = IdempotentUpsertSink.delta(f"{directory}/{name}", app_id="bench",
                                              engine=engine)  # type: ignore[arg-type]
            sink.apply_dataframe(seeded, 0)
            started = time.perf_counter()
            report = sink.apply_dataframe(timed, 1)
            seconds[name] = time.perf_counter() - started
            assert report.rows_written == rows, report
    seeded.unpersist()
    timed.unpersist()
    result = {f"{name}_rows_per_s": rows / s for name, s in seconds.items()}
    result["spark_upsert_vs_spark_append"] = seconds["spark_append"] / seconds["spark_upsert"]
    result["delta_rs_upsert_vs_spark_upsert"] = (
        seconds["spark_upsert"] / seconds["delta_rs_upsert"]
    )
    return result


def run_in_tier(sizes: Sequence[int], python: Path = TIER_PYTHON) -> dict[str, Any]:
    """:func:`run` in the delta-spark environment's Python, as a child process; without that
    environment (``./dev test`` builds it) every row is reported as not run.

    Raises:
        RuntimeError: the child failed; the message ends with its output.
    """
    if not python.exists():
        return {"sizes": {}, "not_run": {
            "delta-spark": f"{python} is missing: delta-spark needs pyspark 4.2, in the "
                           "environment ./dev test builds"}}
    return run_module(python, "kafka_share_eos.proving_ground.bench.delta_spark",
                      [str(n) for n in sizes], TIMEOUT_S, "the delta-spark benchmark")


def delta_spark_ratios(result: Mapping[str, Any]) -> list[Ratio]:
    """Per batch size: delta-spark's upsert against its append, and delta-rs against it."""
    rows = []
    for size, measured in result["sizes"].items():
        n = count(int(size))
        rates = (f"{measured['spark_upsert_rows_per_s']:,.0f} vs "
                 f"{measured['spark_append_rows_per_s']:,.0f} rows/s")
        rows.append(Ratio(
            "delta-spark", f"delta-spark upsert (MERGE) vs delta-spark append, {n} rows",
            measured["spark_upsert_vs_spark_append"], target=Target(">=", 0.5),
            detail=f"{rates}, one batch of new keys into {n} rows",
        ))
        rows.append(Ratio(
            "delta-spark", f"delta-rs upsert (driver) vs delta-spark upsert, {n} rows",
            measured["delta_rs_upsert_vs_spark_upsert"],
            detail=f"{measured['delta_rs_upsert_rows_per_s']:,.0f} vs "
            f"{measured['spark_upsert_rows_per_s']:,.0f} rows/s; above 1: delta-rs is faster",
        ))
    return rows


if __name__ == "__main__":
    print(json.dumps(run([int(n) for n in sys.argv[1:]])))
