"""The source of a delta-spark MERGE: key ranges added to the MERGE's condition match what they
matched before (nulls included), and a batch of new, higher keys reads none of the older files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from helpers.delta_spark_batches import batch, offsets

from kafka_share_eos import IdempotentUpsertSink

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.delta_spark, pytest.mark.spark, pytest.mark.timeout(300)]


def keyed(spark: SparkSession, rows: list[tuple[str | None, int, int]]) -> DataFrame:
    topics, offsets_, versions = zip(*rows, strict=True)
    return spark.createDataFrame(pa.table({
        "topic": pa.array(topics, pa.string()),
        "offset": pa.array(offsets_, pa.int64()),
        "v": pa.array(versions, pa.int64()),
    }))


def test_null_keys_and_keys_outside_the_batch_ranges_match_as_before(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    sink = IdempotentUpsertSink.delta(path, engine="spark", app_id="app",
                                      key_columns=["topic", "offset"], version_column="v")
    sink.apply_dataframe(keyed(spark, [("a", 0, 1), ("b", 1, 1), (None, 2, 1)]), 0)
    # Ranges topic b..c and offset 1..5: ("b", 1) is updated, ("c", 5) inserted.
    second = sink.apply_dataframe(keyed(spark, [("b", 1, 2), ("c", 5, 2), ("c", 5, 1)]), 1)
    assert (second.rows_in, second.duplicates_in_batch, second.rows_written) == (3, 1, 2)
    # A null topic gets no range: the null key still matches its stored row.
    third = sink.apply_dataframe(keyed(spark, [(None, 2, 3), ("a", 0, 0)]), 2)
    assert (third.rows_written, third.already_applied) == (1, 1)
    stored = DeltaTable(path).to_pyarrow_table().sort_by("offset").to_pylist()
    assert [(r["topic"], r["offset"], r["v"]) for r in stored] == [
        ("a", 0, 1), ("b", 1, 2), (None, 2, 3), ("c", 5, 2)]


def test_a_batch_of_new_higher_keys_reads_none_of_the_older_files(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    sink = IdempotentUpsertSink.delta(str(path), engine="spark", app_id="app")
    sink.apply_dataframe(batch(spark, list(range(100))), 0)
    # The older files are moved away: a MERGE that read them would fail.
    older = {file: tmp_path / f"away-{file.name}" for file in path.glob("*.parquet")}
    for file, away in older.items():
        file.rename(away)
    report = sink.apply_dataframe(batch(spark, list(range(100, 200))), 1)
    assert report.rows_written == 100
    for file, away in older.items():
        away.rename(file)
    assert offsets(str(path)) == list(range(200))
