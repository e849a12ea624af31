"""delta-spark's MERGE on the executors against its append, the user's own MERGE and delta-rs.

For each batch size, four tables start from one batch of that size (so every contender writes
into a table as a running stream finds it), then take one timed batch of new keys each:

- ``spark_append``: delta-spark's plain append of the batch (``format("delta")``, no lookup);
- ``spark_upsert``: ``IdempotentUpsertSink.delta(engine="spark")``, one MERGE;
- ``delta_rs_upsert``: ``IdempotentUpsertSink.delta()`` through Spark's ``foreachBatch`` path:
  the batch collected to the driver as Arrow, written with delta-rs;
- ``user_merge``: the ``foreachBatch`` function Delta's documentation shows for idempotent
  writes, what a Delta user writes instead of the sink: the session's
  ``spark.databricks.delta.write.txnAppId``/``txnVersion`` set to the application and the batch
  id, then ``DeltaTable.forPath(...).merge(batch, "t.key = s.key")``, updating matched rows and
  inserting the others (its table starts from a plain write of the first batch).

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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kafka_share_eos.proving_ground.bench.ratios import Ratio, Target, count
from kafka_share_eos.proving_ground.bench.tier import TIER_PYTHON, run_module

SIZES = (20_000, 1_000_000)
"""The batch sizes measured: a small stream's batch and a large one."""
TIMEOUT_S = 1800.0


def run(sizes: Sequence[int]) -> dict[str, Any]:
    """Rows per second of the four contenders at each batch size."""
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session

    # The timed batch stays cached while delta-spark's MERGE keeps a copy of its source and the
    # delta-rs contender collects it: at 1M rows Spark's default 1 GiB driver evicts the large
    # task results it keeps in its block manager ("TaskResultLost").
    spark = local_spark_session("kafka-share-eos-bench-delta-spark", delta_spark=True,
                                config={"spark.driver.memory": "2g"})
    try:
        return {"sizes": {str(n): _measure(spark, n) for n in sizes}}
    finally:
        spark.stop()


def _measure(spark: Any, rows: int) -> dict[str, float]:
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
        contenders = _contenders(spark, directory, rows)
        # Every table is seeded before any batch is timed, so that no contender's timed batch
        # is the first of the JVM to run a MERGE's code.
        for seed, _ in contenders.values():
            seed(seeded)
        seeded.unpersist(blocking=True)
        for name, (_, apply) in contenders.items():
            started = time.perf_counter()
            apply(timed)
            seconds[name] = time.perf_counter() - started
        # The documented MERGE wrote the batch (its application transaction did not skip it).
        assert spark.read.format("delta").load(f"{directory}/user_merge").count() == 2 * rows
    timed.unpersist()
    result = {f"{name}_rows_per_s": rows / s for name, s in seconds.items()}
    result["spark_upsert_vs_spark_append"] = seconds["spark_append"] / seconds["spark_upsert"]
    result["spark_upsert_vs_user_merge"] = seconds["user_merge"] / seconds["spark_upsert"]
    result["delta_rs_upsert_vs_spark_upsert"] = (
        seconds["spark_upsert"] / seconds["delta_rs_upsert"]
    )
    return result


Contender = tuple[Callable[[Any], None], Callable[[Any], None]]
"""How a contender writes its table's first batch, and the timed one."""


def _contenders(spark: Any, directory: str, rows: int) -> dict[str, Contender]:
    from kafka_share_eos.strategies import IdempotentUpsertSink

    append_path, user_path = f"{directory}/spark_append", f"{directory}/user_merge"
    users = user_merge(spark, user_path, "bench")

    def user_seed(batch: Any) -> None:
        batch.limit(0).write.format("delta").save(user_path)
        users(batch, 0)

    contenders: dict[str, Contender] = {
        "spark_append": (lambda batch: batch.write.format("delta").save(append_path),
                         lambda batch: batch.write.format("delta").mode("append")
                         .save(append_path)),
        "user_merge": (user_seed, lambda batch: users(batch, 1)),
    }
    for name, engine in (("spark_upsert", "spark"), ("delta_rs_upsert", "delta-rs")):
        sink = IdempotentUpsertSink.delta(f"{directory}/{name}", app_id="bench",
                                          engine=engine)  # type: ignore[arg-type]
        contenders[name] = _sink_contender(sink, rows)
    return contenders


def _sink_contender(sink: Any, rows: int) -> Contender:
    def seed(batch: Any) -> None:
        sink.apply_dataframe(batch, 0)

    def apply(batch: Any) -> None:
        report = sink.apply_dataframe(batch, 1)
        assert report.rows_written == rows, report

    return seed, apply


def user_merge(spark: Any, path: str, app_id: str) -> Callable[[Any, int], None]:
    """The ``foreachBatch`` function of Delta's documentation for idempotent MERGEs into the
    table at ``path``, keyed on the source's record identity."""
    from delta.tables import DeltaTable

    keys = " AND ".join(f"t.`{k}` = s.`{k}`" for k in ("topic", "partition", "offset"))

    def upsert(batch: Any, batch_id: int) -> None:
        spark.conf.set("spark.databricks.delta.write.txnAppId", app_id)
        spark.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
        try:
            (DeltaTable.forPath(spark, path).alias("t").merge(batch.alias("s"), keys)
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        finally:
            # As the documentation warns: left set, they would apply to the session's next
            # writes of any table, which Delta would skip as already applied.
            spark.conf.unset("spark.databricks.delta.write.txnAppId")
            spark.conf.unset("spark.databricks.delta.write.txnVersion")

    return upsert


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
    """Per batch size: delta-spark's upsert against its append and against the user's own
    MERGE, and delta-rs against it."""
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
            "delta-spark", f"delta-spark upsert vs Delta's documented idempotent foreachBatch "
            f"MERGE, {n} rows",
            measured["spark_upsert_vs_user_merge"], target=Target(">=", 0.9),
            detail=f"{measured['spark_upsert_rows_per_s']:,.0f} vs "
            f"{measured['user_merge_rows_per_s']:,.0f} rows/s, the MERGE with "
            "txnAppId/txnVersion set per batch, into the same table",
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
