"""The upsert sink under Spark: ``foreachBatch`` calls on static and streaming DataFrames on the
driver path (the per-partition executor path is in ``tests/strategies/test_executors.py``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from helpers.delta import read_delta
from helpers.streaming import run_available_now
from helpers.upsert_rows import records, sql_identities

from kafka_share_eos.sinks.delta_upsert import DEFAULT_APP_ID_PREFIX
from kafka_share_eos.strategies import IdempotentUpsertSink

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.older_pyspark, pytest.mark.timeout(300)]

# The source columns the strategies read; the streamed parquet files hold only these.
SCHEMA_DDL = "topic string, partition int, offset long, value binary, deliveryCount int"


def drop_file(path: Path, table: pa.Table, order: int) -> None:
    """Write a parquet file the file source will pick up as the ``order``-th (by mtime)."""
    pq.write_table(table, path)
    os.utime(path, (1_700_000_000 + order, 1_700_000_000 + order))


def test_static_dataframe_on_the_driver(spark: SparkSession, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'spark.db'}"
    sink = IdempotentUpsertSink.sql(url, "events", create_table=True)
    batch = records([(0, o) for o in range(6)] + [(0, 1), (1, 0)], delivery=2)
    df = spark.createDataFrame(batch)

    first = sink(df, 0)
    assert (first.rows_in, first.duplicates_in_batch, first.rows_written) == (8, 1, 7)
    again = sink(df, 0)
    assert (again.already_applied, again.rows_written, again.write_path) == (7, 0, "rows")
    expected = sorted(
        {("t", p, o, f"{p}:{o}".encode()) for p, o in [(0, o) for o in range(6)] + [(1, 0)]}
    )
    assert sql_identities(url) == expected
    sink.close()


def test_streaming_query_into_delta(spark: SparkSession, tmp_path: Path) -> None:
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    # Three files = three micro-batches; the second and third redeliver records of the first.
    drop_file(incoming / "a.parquet", records([(0, o) for o in range(5)]), 1)
    drop_file(incoming / "b.parquet", records([(0, 3), (0, 4), (0, 5), (0, 5)], delivery=2), 2)
    drop_file(incoming / "c.parquet", records([(1, 0), (0, 0)], delivery=3), 3)
    stream = spark.readStream.schema(SCHEMA_DDL).option("maxFilesPerTrigger", 1)
    table_path = str(tmp_path / "delta")
    checkpoint = str(tmp_path / "checkpoint")
    sink = IdempotentUpsertSink.delta(table_path)

    query = run_available_now(stream.parquet(str(incoming)), checkpoint, sink, timeout=240)

    assert [(r.batch_id, r.rows_in, r.duplicates, r.rows_written) for r in sink.reports] == [
        (0, 5, 0, 5),
        (1, 4, 3, 1),
        (2, 2, 1, 1),
    ]
    # Batch ids are recorded under the query's id, which a restart from the checkpoint keeps.
    assert DeltaTable(table_path).transaction_version(f"{DEFAULT_APP_ID_PREFIX}:{query.id}") == 2

    drop_file(incoming / "d.parquet", records([(0, 5), (1, 1)], delivery=4), 4)
    restarted = IdempotentUpsertSink.delta(table_path)
    run_available_now(stream.parquet(str(incoming)), checkpoint, restarted, timeout=240)
    assert [(r.batch_id, r.already_applied, r.rows_written) for r in restarted.reports] == [
        (3, 1, 1)
    ]

    rows = read_delta(table_path)
    got = sorted((r["partition"], r["offset"], r["deliveryCount"]) for r in rows.to_pylist())
    assert got == [(0, o, 1) for o in range(5)] + [(0, 5, 2), (1, 0, 3), (1, 1, 4)]
