"""Writing a large micro-batch from the Spark executors, one transaction per partition, going
back to the driver for small batches, and a pickled copy of the strategy doing the same."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from helpers.pickled import copied
from helpers.upsert_rows import records, sql_identities

from kafka_share_eos.strategies import IdempotentUpsertSink

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.older_pyspark, pytest.mark.timeout(300)]


@pytest.mark.older_pyspark(full=True)
@pytest.mark.postgres
def test_large_batches_go_through_the_executors(spark: SparkSession, postgres_url: str) -> None:
    sink = IdempotentUpsertSink.sql(
        postgres_url, "events", create_table=True, executor_threshold=50, bulk_threshold=20
    )
    pairs = [(p, o) for p in range(3) for o in range(40)]
    # 120 records, 30 of them delivered twice in the same batch.
    df = spark.createDataFrame(records(pairs + pairs[::4], delivery=1)).repartition(4)

    report = sink(df, 0)
    assert report.write_path == "executors"
    assert (report.rows_in, report.duplicates_in_batch, report.rows_written) == (150, 30, 120)
    small = spark.createDataFrame(records([*pairs[:10], (5, 0)]))
    report = sink(small, 1)
    assert (report.write_path, report.already_applied, report.rows_written) == ("rows", 10, 1)
    # After a small batch the next one is not counted (a Spark job): the driver writes it.
    report = sink(df, 0)
    assert (report.write_path, report.already_applied, report.rows_written) == ("copy", 120, 0)
    # After a large one it is, and a large batch goes through the executors again.
    report = sink(df, 2)
    assert (report.write_path, report.already_applied, report.rows_written) == ("executors", 120, 0)
    expected = sorted({("t", p, o, f"{p}:{o}".encode()) for p, o in [*pairs, (5, 0)]})
    assert sql_identities(postgres_url) == expected
    sink.close()


@pytest.mark.older_pyspark(full=True)
@pytest.mark.postgres
def test_a_pickled_copy_writes_through_the_executors_too(
    spark: SparkSession, postgres_url: str
) -> None:
    """A Spark Connect server runs the copy its client pickled; the copy's writer is pickled
    again into the tasks, each connecting by itself."""
    sink = IdempotentUpsertSink.sql(postgres_url, "events", create_table=True,
                                    write_path="executors")
    pairs = [(p, o) for p in range(2) for o in range(20)]
    df = spark.createDataFrame(records(pairs + pairs[:5])).repartition(3)

    first = copied(sink)(df, 0)
    replayed = copied(sink)(df, 0)

    assert (first.write_path, first.duplicates_in_batch, first.rows_written) == ("executors", 5, 40)
    assert (replayed.already_applied, replayed.rows_written) == (40, 0)
    assert sql_identities(postgres_url) == sorted(("t", p, o, f"{p}:{o}".encode())
                                                  for p, o in pairs)
    sink.close()
