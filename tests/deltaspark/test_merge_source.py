"""The source of a delta-spark MERGE: key ranges added to the MERGE's condition match what they
matched before (nulls included), a batch of new, higher keys reads none of the older files, and
only a batch that may hold a key twice goes through the deduplication's shuffle."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from helpers.delta_spark_batches import batch, offsets

from kafka_share_eos import IdempotentUpsertSink
from kafka_share_eos.deltaspark.merge import DeltaSparkMergeWriter
from kafka_share_eos.deltaspark.merge_source import merge_source

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


def test_keys_with_quotes_backslashes_and_braces_bound_their_own_range(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The ranges travel as SQL text: a key that would end or escape a quoted literal, in a
    table whose path holds braces, still bounds exactly the rows it matches."""
    path = str(tmp_path / "{t}`s")
    sink = IdempotentUpsertSink.delta(path, engine="spark", app_id="app",
                                      key_columns=["topic", "offset"], version_column="v")
    odd = ["it's", "back\\slash", "{0}", "\\'; DROP", "é ü"]
    sink.apply_dataframe(keyed(spark, [(topic, 0, 1) for topic in odd]), 0)
    again = sink.apply_dataframe(keyed(spark, [(topic, 0, 2) for topic in odd]), 1)
    assert (again.rows_written, again.already_applied) == (len(odd), 0)
    stored = DeltaTable(path).to_pyarrow_table().to_pylist()
    assert sorted((r["topic"], r["v"]) for r in stored) == sorted((t, 2) for t in odd)


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


def plan(frame: DataFrame) -> str:
    """The plan of ``frame``, the plan its cached rows were made by included."""
    return str(frame._jdf.queryExecution().optimizedPlan().toString())


def test_only_a_batch_that_may_repeat_a_key_is_deduplicated(spark: SparkSession) -> None:
    keys = ["topic", "partition", "offset"]
    with merge_source(batch(spark, [0, 1, 2]), keys, "v") as distinct:
        assert (distinct.rows_in, distinct.distinct, distinct.deduplicated) == (3, 3, False)
        assert "Window" not in plan(distinct.rows)
    repeated = batch(spark, [0, 1], version=1).union(batch(spark, [1], version=3))
    with merge_source(repeated, keys, "v") as deduplicated:
        assert (deduplicated.rows_in, deduplicated.distinct) == (3, 2)
        assert deduplicated.deduplicated and "Window" in plan(deduplicated.rows)
        rows = sorted((r["offset"], r["v"]) for r in deduplicated.rows.collect())
        assert rows == [(0, 1), (1, 3)]
    # A batch the caller cached is used as it is, and left cached.
    cached = batch(spark, [0, 1]).persist()
    with merge_source(cached, keys, "v") as source:
        assert source.rows is cached and not source.deduplicated
    assert cached.storageLevel.useMemory


def test_repeated_keys_keep_their_highest_version_through_either_path(
    spark: SparkSession, tmp_path: Path
) -> None:
    keys = ["topic", "offset"]
    # A null key repeated: Spark groups the nulls, so the batch is deduplicated.
    rows = [(None, 2, 1), (None, 2, 5), ("a", 0, 3), ("a", 0, 4), ("a", 0, 2), ("b", 1, 1)]
    sink = IdempotentUpsertSink.delta(str(tmp_path / "frame"), engine="spark", app_id="app",
                                      key_columns=keys, version_column="v")
    report = sink.apply_dataframe(keyed(spark, rows), 0)
    assert (report.rows_in, report.duplicates_in_batch, report.rows_written) == (6, 3, 3)
    # The Arrow path (a batch screened in the driver) checks its keys in Arrow.
    writer = DeltaSparkMergeWriter(tmp_path / "arrow", key_columns=keys, version_column="v",
                                   app_id="app")
    table = keyed(spark, rows).toArrow()
    assert writer.upsert(table, 0).written == 3
    for path in ("frame", "arrow"):
        stored = DeltaTable(str(tmp_path / path)).to_pyarrow_table().sort_by("offset").to_pylist()
        assert [(r["topic"], r["offset"], r["v"]) for r in stored] == [
            ("a", 0, 4), ("b", 1, 1), (None, 2, 5)]
