"""One task per key partition of a batch: every delivery of a key reaches the same task, each
task reports one row of the result schema, and a partition no row reached is reported as
None (a local Spark session; the per-partition wrapper also without Spark)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from kafka_share_eos.spark_partitions import _ReportingTask, map_key_partitions

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.timeout(300)

REPORT = pa.schema([("rows", pa.int64()), ("keys", pa.string())])


def keys_seen(table: pa.Table | None) -> Mapping[str, Any]:
    """A partition's rows and its distinct keys; -1 rows when no batch reached it."""
    if table is None:
        return {"rows": -1, "keys": ""}
    pairs = sorted({f"{t}/{i}" for t, i in zip(table.column("tenant").to_pylist(),
                                                 table.column("id").to_pylist(), strict=True)})
    return {"rows": table.num_rows, "keys": ",".join(pairs), "ignored": [1, 2]}


def test_a_partition_reports_one_row_of_the_result_schema() -> None:
    task = _ReportingTask(keys_seen, REPORT)
    batches = pa.table({"tenant": ["a", "b", "a"], "id": [1, 2, 1]}).to_batches(max_chunksize=2)
    [report] = list(task(iter(batches)))
    assert report.schema == REPORT
    assert report.to_pylist() == [{"rows": 3, "keys": "a/1,b/2"}]


def test_a_partition_no_row_reached_is_reported_as_none() -> None:
    [report] = list(_ReportingTask(keys_seen, REPORT)(iter([])))
    assert report.to_pylist() == [{"rows": -1, "keys": ""}]


@pytest.mark.spark
def test_every_delivery_of_a_key_reaches_the_same_task(spark: SparkSession) -> None:
    deliveries = [(tenant, key % 7, key) for tenant in ("a", "b", "c") for key in range(60)]
    batch = spark.createDataFrame(deliveries, "tenant string, id long, offset long")
    reports = map_key_partitions(batch, ["tenant", "id"], keys_seen, REPORT)

    assert sorted(reports[0].asDict()) == ["keys", "rows"]
    reached = [r for r in reports if r["rows"] >= 0]
    assert sum(r["rows"] for r in reached) == len(deliveries)
    per_task = [set(r["keys"].split(",")) for r in reached if r["rows"]]
    every_key = {f"{tenant}/{key}" for tenant in ("a", "b", "c") for key in range(7)}
    assert set().union(*per_task) == every_key
    # A key in two tasks would be counted twice here.
    assert sum(len(keys) for keys in per_task) == len(every_key)


def _tasks_with_rows(batch: Any) -> list[int]:
    reports = map_key_partitions(batch, ["tenant", "id"], keys_seen, REPORT, every_slot=True)
    return sorted(int(report["rows"]) for report in reports if report["rows"] > 0)


SMALL_BATCH = [("t", key, key) for key in range(200)]


@pytest.mark.spark
def test_a_small_batch_is_written_by_every_task_slot(spark: SparkSession) -> None:
    # 200 rows are far under the 1 MiB adaptive execution merges into one partition.
    batch = spark.createDataFrame(SMALL_BATCH, "tenant string, id long, offset long")
    tasks = _tasks_with_rows(batch)
    assert len(tasks) == spark.sparkContext.defaultParallelism == 2
    assert sum(tasks) == len(SMALL_BATCH) and min(tasks) > 0


@pytest.mark.connect
def test_a_small_batch_is_written_by_every_task_slot_of_a_connect_server(
    connect_spark: Any,
) -> None:
    batch = connect_spark.createDataFrame(SMALL_BATCH, "tenant string, id long, offset long")
    tasks = _tasks_with_rows(batch)
    assert len(tasks) == 2 and sum(tasks) == len(SMALL_BATCH)
