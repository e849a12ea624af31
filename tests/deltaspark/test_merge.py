"""IdempotentUpsertSink.delta(engine="spark"): one delta-spark MERGE per batch, replays skipped by
Delta's application transactions (also by a pickled copy), the batch-id guards of the delta-rs
path, and applications merging into one table at once kept to one row per key by Delta's
conflict detection."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from deltalake import DeltaTable
from helpers.delta_spark_batches import batch, offsets
from helpers.pickled import copied

from kafka_share_eos import (
    AppIdConflictError,
    BatchIdReusedError,
    IdempotentUpsertSink,
    TargetTableError,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.delta_spark, pytest.mark.spark, pytest.mark.timeout(300)]


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


def test_a_path_holding_other_files_is_refused_when_the_sink_is_built(tmp_path: Path) -> None:
    exported = tmp_path / "exported"
    exported.mkdir()
    (exported / "part-0.parquet").write_bytes(b"PAR1")
    with pytest.raises(TargetTableError, match=r"'.*exported' is not a Delta table \(no "
                       r"_delta_log\) but holds other files"):
        IdempotentUpsertSink.delta(str(exported), engine="spark")
    assert [p.name for p in exported.iterdir()] == ["part-0.parquet"]


def test_a_pickled_copy_merges_on_and_skips_the_replay(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A Spark Connect server runs the copy its client pickled: it reads the table's recorded
    batch itself."""
    path = str(tmp_path / "t")
    sink = IdempotentUpsertSink.delta(path, engine="spark", app_id="app")
    sink.apply_dataframe(batch(spark, [0, 1]), 0)

    copy = copied(sink)
    replay = copy.apply_dataframe(batch(spark, [0, 1]), 0)
    second = copy.apply_dataframe(batch(spark, [1, 2]), 1)

    assert replay.write_path == "skipped-batch"
    assert (second.rows_written, second.already_applied) == (1, 1)
    assert offsets(path) == [0, 1, 2]


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
