"""IdempotentUpsertSink.delta(engine="spark"): one delta-spark MERGE per batch, replays skipped by
Delta's application transactions, the batch-id guards of the delta-rs path, and applications
merging into one table at once kept to one row per key by Delta's conflict detection."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from helpers.batches import source_rows

from kafka_share_eos import AppIdConflictError, BatchIdReusedError, IdempotentUpsertSink

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.delta_spark, pytest.mark.spark, pytest.mark.timeout(300)]


def batch(spark: SparkSession, offsets: list[int], version: int = 1) -> DataFrame:
    return spark.createDataFrame(source_rows(
        topic="t", partition=0, offset=offsets, v=pa.array([version] * len(offsets), pa.int64())
    ))


def offsets(path: str) -> list[int]:
    return sorted(DeltaTable(path).to_pyarrow_table(columns=["offset"])["offset"].to_pylist())


def test_batches_merge_once_and_replays_are_skipped(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    sink = IdempotentUpsertSink.delta(path, engine="spark", app_id="app")
    first = sink.apply_dataframe(batch(spark, [0, 1, 2, 2]), 0)
    assert (first.rows_in, first.duplicates_in_batch, first.rows_written) == (4, 1, 3)
    assert first.write_path == "merge"
    replay = sink.apply_dataframe(batch(spark, [0, 1, 2]), 0)
    assert (replay.rows_written, replay.already_applied, replay.write_path) == (
        0, 3, "skipped-batch")
    second = sink.apply_dataframe(batch(spark, [2, 3]), 1)
    assert (second.rows_written, second.already_applied) == (1, 1)
    assert offsets(path) == [0, 1, 2, 3]
    assert DeltaTable(path).transaction_version("app") == 1


def test_lower_and_reused_batch_ids_are_refused(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    sink = IdempotentUpsertSink.delta(path, engine="spark", app_id="app")
    sink.apply_dataframe(batch(spark, [0, 1]), 3)
    with pytest.raises(AppIdConflictError):
        sink.apply_dataframe(batch(spark, [5]), 2)
    with pytest.raises(BatchIdReusedError):
        sink.apply_dataframe(batch(spark, [0, 7]), 3)
    assert offsets(path) == [0, 1]


def test_a_newer_version_replaces_the_stored_row(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    sink = IdempotentUpsertSink.delta(path, engine="spark", app_id="app",
                                      key_columns=["offset"], version_column="v")
    sink.apply_dataframe(batch(spark, [0, 1], version=2), 0)
    report = sink.apply_dataframe(batch(spark, [0], version=1).union(
        batch(spark, [1], version=3)), 1)
    assert (report.rows_written, report.already_applied) == (1, 1)
    stored = DeltaTable(path).to_pyarrow_table().sort_by("offset")
    assert stored["v"].to_pylist() == [2, 3]


def test_applications_merging_at_once_insert_each_key_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    IdempotentUpsertSink.delta(path, engine="spark", app_id="seed").apply_dataframe(
        batch(spark, [-1]), 0)
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def application(name: str) -> None:
        # Each application its own session (settings), as two drivers would have.
        session = spark.newSession()
        sink = IdempotentUpsertSink.delta(path, engine="spark", app_id=name)
        try:
            start.wait(timeout=120)
            for batch_id in range(3):
                rows = batch(session, list(range(batch_id * 5, batch_id * 5 + 10)))
                sink.apply_dataframe(rows, batch_id)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=application, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=280)
    assert not errors
    assert offsets(path) == list(range(-1, 20))


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
